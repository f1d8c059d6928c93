"""Loss curves as PNG (matplotlib, headless)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


def save_curve(
    path: str | Path,
    series: dict[str, Sequence[float]],
    *,
    title: str,
    xlabel: str = "epoch",
    secondary: dict[str, Sequence[float]] | None = None,
) -> Path:
    """One line per series (left axis); `secondary` series on a right axis (e.g. accuracy)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=100)
    for name, ys in series.items():
        ax.plot(range(1, len(ys) + 1), list(ys), label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("loss")
    ax.set_title(title)
    handles, labels = ax.get_legend_handles_labels()
    if secondary:
        ax2 = ax.twinx()
        for name, ys in secondary.items():
            ax2.plot(range(1, len(ys) + 1), list(ys), linestyle="--", label=name)
        ax2.set_ylabel("share")
        h2, l2 = ax2.get_legend_handles_labels()
        handles, labels = handles + h2, labels + l2
    ax.legend(handles, labels, loc="best", fontsize=8)
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return Path(path)
