"""Settings presets as buttons, and the settings the app opens with on this machine.

On a machine without a GPU the paper's budget (12 rounds, k = 5) takes minutes per
question with the bundled model, so the form opens with the small preset and says so;
the paper's settings stay one click away, each button showing its expected time on
this kind of machine. The presets themselves are `mcts.search.presets`; the times
below are measured (commands in README, "The app").
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcts.search.presets import PRESETS, preset_settings
from mcts.search.settings import SearchSettings
from ui.forms import form_values
from ui.run_cache import cache_dir
from ui.session import Session

# Reference wall time of one demo question by preset and machine, shown until this
# machine has timed its own runs (`record_time`, median of the last 5). CPU: measured with
# `python -m mcts run --preset small|paper -q ...` on 2 cores shared with other jobs (load
# average 4-10, so upper bounds): small 173.5 s (Obama) and 258.0 s (Inception), paper
# 331.0 s (Obama; 139 s of CPU time). On quiet cores the small preset's search took 9.3 s
# and 10.7 s (traces recorded before its greedy descent), which is what a warm app shows;
# with the descent, Fast MCTS averages 11.3 s per demo question with two evaluations
# sharing the cores. Paper was not re-timed quietly, so its loaded figure stays as an
# upper bound.
# GPU: not measured here, rough guesses.
EXPECTED_S: dict[tuple[str, str], float] = {
    ("paper", "cpu"): 331.0,
    ("small", "cpu"): 11.0,
    ("paper", "gpu"): 30.0,
    ("small", "gpu"): 10.0,
}


def presets() -> dict[str, SearchSettings]:
    """name -> settings of `mcts.search.presets` (the one home of presets), small first."""
    return {name: PRESETS[name].settings for name in ("small", "paper")}


def has_gpu() -> bool:
    """A CUDA device now, or a ZeroGPU Space (the GPU is attached per call there)."""
    try:
        import spaces  # type: ignore[import-not-found]  # noqa: F401

        return True
    except ImportError:
        pass
    try:
        from mcts.agents.models import default_device

        return default_device() == "cuda"
    except Exception:  # no torch build for this machine: a CPU
        return False


KEEP_TIMES = 5


def _times_path() -> Path:
    return cache_dir() / "preset-times.json"


def _read_times() -> dict[str, list[float]]:
    try:
        data = json.loads(_times_path().read_text(encoding="utf-8"))
        return {k: [float(x) for x in v] for k, v in data.items() if isinstance(v, list)}
    except (OSError, ValueError, TypeError, AttributeError):
        return {}  # no file yet, or a broken one: the reference figures stand


def matching_preset(settings: SearchSettings) -> str | None:
    """The preset `settings` is exactly (any method), else None: only those runs are timed."""
    for name in PRESETS:
        if preset_settings(name, settings.method) == settings:
            return name
    return None


def record_time(settings: SearchSettings, wall_s: float, gpu: bool | None = None) -> None:
    """Remember how long a finished run of an unchanged preset took on this machine."""
    name = matching_preset(settings)
    if name is None or wall_s <= 0:
        return
    key = f"{name}/{'gpu' if (has_gpu() if gpu is None else gpu) else 'cpu'}"
    times = _read_times()
    times[key] = [*times.get(key, []), round(wall_s, 1)][-KEEP_TIMES:]
    try:
        _times_path().parent.mkdir(parents=True, exist_ok=True)
        _times_path().write_text(json.dumps(times), encoding="utf-8")
    except OSError:
        pass  # a read-only disk costs only the measured figure


def expected_s(name: str, kind: str) -> tuple[float, bool]:
    """(seconds, measured on this machine?) for one question with preset `name`."""
    times = _read_times().get(f"{name}/{kind}")
    if times:
        return statistics.median(times), True
    return EXPECTED_S.get((name, kind), 0.0), False


def _expected(name: str, kind: str) -> str:
    seconds, measured = expected_s(name, kind)
    return _duration(seconds) + (" (timed here)" if measured else "")


def _duration(seconds: float) -> str:
    return f"about {seconds:.0f} s" if seconds < 90 else f"about {seconds / 60:.0f} min"


@dataclass(frozen=True)
class MachineDefaults:
    settings: SearchSettings  # what the form opens with
    preset: str  # its preset's name
    note: str  # one line under the Run button: which preset and why
    buttons: dict[str, str]  # preset name -> button label with its expected time


def machine_defaults(gpu: bool | None = None) -> MachineDefaults:
    gpu = has_gpu() if gpu is None else gpu
    kind = "gpu" if gpu else "cpu"
    table = presets()
    buttons = {name: f"{PRESETS[name].label} · {_expected(name, kind)}" for name in table}
    if gpu:
        note = "GPU found: the form holds the **paper's settings** (12 rounds, k = 5)."
        return MachineDefaults(table["paper"], "paper", note, buttons)
    small = table["small"]
    note = (
        f"**No GPU here:** the form holds the **small** preset ({PRESETS['small'].label}; "
        f"{small.rounds} rounds, k = {small.k}), {_expected('small', 'cpu')} a question on "
        f"this CPU. The paper's settings take {_expected('paper', 'cpu')}."
    )
    return MachineDefaults(small, "small", note, buttons)


def preset_handler(name: str) -> Callable[[Session], dict[str, Any]]:
    """A button's handler: fill the settings form with preset `name`."""

    def apply(session: Session) -> dict[str, Any]:
        preset = PRESETS[name]
        note = f"Settings: **{preset.label}**. {preset.description}"
        return {**form_values(preset.settings), "preset": name, "machine_note": note}

    apply.__name__ = f"preset_{name}"
    return apply
