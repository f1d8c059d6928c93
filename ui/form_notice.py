"""Say when loading a trace changed the Search form, and put the defaults back in one click.

Loading a trace fills the Search form with the method and settings it ran with (so Run
repeats it). A class that then asks its own question would run, say, the constant-reward
ablation without anything on screen saying so. After a load, `notice` compares the form
with the defaults the page opened with and lists what differs next to the form; `restore`
puts the defaults back (the question stays). Knows nothing of components but their names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gradio as gr

from mcts.search.settings import SearchSettings
from ui.forms import SETTINGS_FIELDS, RunInputs, form_values
from ui.labels import method_label
from ui.public import escape
from ui.session import Session

# What `restore` fills (ui.events lists these as its outputs).
RESTORE_OUTPUTS = ("method", *SETTINGS_FIELDS, "preset", "rules", "ig_prompt", "policy_kind", "form_note_box")
NOTICE_OUTPUTS = ("form_note", "form_note_box")


@dataclass(frozen=True)
class FormDefaults:
    """The Search form as the page opened: what "back to the defaults" restores."""

    settings: SearchSettings
    preset: str
    rules: tuple[str, ...]
    ig_prompt: str
    policy_kind: str

    def label(self) -> str:
        preset = f", {self.preset} preset" if self.preset else ""
        return f"{method_label(self.settings.method)}{preset}"


def differences(form: RunInputs, defaults: FormDefaults) -> list[str]:
    """What the form holds that the defaults do not, one short phrase each (method first)."""
    out = []
    if form.method != defaults.settings.method.value:
        out.append(
            f"method **{method_label(form.method)}** (default {method_label(defaults.settings.method)})"
        )
    if (form.preset or "") != defaults.preset:
        out.append(
            f"preset **{escape(form.preset or 'none (paper knobs)')}** (default {defaults.preset or 'none'})"
        )
    shown = form_values(defaults.settings, with_preset=False)
    for name in SETTINGS_FIELDS:
        value = getattr(form, name)
        try:
            same = float(value) == float(shown[name])
        except (TypeError, ValueError, OverflowError):
            same = False
        if not same:
            out.append(f"{name.replace('_', ' ')} {_num(value)} (default {_num(shown[name])})")
    if sorted(form.rules or []) != sorted(defaults.rules):
        out.append("cleaning rules (lab tab) " + (escape(", ".join(sorted(form.rules or []))) or "none"))
    if (form.ig_prompt or "").strip() != defaults.ig_prompt.strip():
        out.append("the IG prompt (lab tab)")
    if form.policy_kind != defaults.policy_kind:
        out.append(f"policy {escape(form.policy_kind)} (default {defaults.policy_kind})")
    return out


def _num(value: Any) -> str:
    try:
        return f"{float(value):g}"
    except (TypeError, ValueError, OverflowError):
        return escape(str(value))


def notice_handler(defaults: FormDefaults) -> Callable[[Session, RunInputs], dict[str, Any]]:
    """After a trace load: list what it changed in the form, or hide the notice."""

    def notice(session: Session, form: RunInputs) -> dict[str, Any]:
        changed = differences(form, defaults)
        if not changed:
            return {"form_note": "", "form_note_box": gr.update(visible=False)}
        text = (
            "**Loading the trace changed this form:** " + " · ".join(changed) + ". Run now uses these; "
            f"**Back to the defaults** restores {defaults.label()} and keeps the question."
        )
        return {"form_note": text, "form_note_box": gr.update(visible=True)}

    return notice


def refresh_handler(defaults: FormDefaults) -> Callable[[Session, RunInputs], dict[str, Any]]:
    """The form was edited by hand: a shown notice lists what now differs and goes once
    nothing does; a hidden one stays hidden (the edit is the user's own)."""
    show = notice_handler(defaults)

    def refresh(session: Session, form: RunInputs) -> dict[str, Any]:
        update = show(session, form)
        if update["form_note"]:
            return {"form_note": update["form_note"]}
        return update

    return refresh


def restore_handler(defaults: FormDefaults) -> Callable[[Session], dict[str, Any]]:
    """The notice's button: the defaults back in the form (not the question or the KB)."""

    def restore(session: Session) -> dict[str, Any]:
        return {
            **form_values(defaults.settings, with_preset=False),
            "preset": defaults.preset,
            "rules": list(defaults.rules),
            "ig_prompt": defaults.ig_prompt,
            "policy_kind": defaults.policy_kind,
            "form_note_box": gr.update(visible=False),
        }

    return restore


def hide(session: Session) -> dict[str, Any]:
    """A preset button set the form on purpose: the trace's notice no longer applies."""
    return {"form_note_box": gr.update(visible=False)}
