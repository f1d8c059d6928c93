"""The "Show truth (gold)" toggle: redraw the Search tab with or without the truth overlay.

Cheap and model-free: the overlay is computed from the tree on screen (`ui.truth`); the
tree itself is only read. Off by default, so a class sees the search before the verdict.
"""

from __future__ import annotations

from typing import Any

from ui.render import MAIN_OUTPUTS, main_view
from ui.session import Session

TOGGLE_OUTPUTS = tuple(name for name in MAIN_OUTPUTS if name != "status")


def toggle_truth(session: Session, show: bool) -> dict[str, Any]:
    """Switch the overlay on or off and redraw every panel that shows it."""
    session.show_truth = bool(show)
    view = main_view(session, "")
    view.pop("status")
    return view
