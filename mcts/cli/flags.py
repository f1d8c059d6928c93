"""Command-line flags shared by `run`, `eval` and `analyze-ranking`: one help text per setting.

Every `SearchSettings` field becomes a flag (`rounds` -> `--rounds`); enums become choices.
"""

from __future__ import annotations

import argparse
from dataclasses import fields
from enum import Enum

from mcts.search.settings import SearchSettings

_HELP = {
    "method": "search method",
    "rounds": "at most this many rounds (paper: 12)",
    "k": "candidates per expansion (paper: 5)",
    "c": "UCT exploration constant (ours: 1.0)",
    "alpha": "IG reward scale (paper: 2)",
    "beta": "IG reward sharpness (paper: 10)",
    "expected_depth": "depth decay starts after this depth (paper: 7)",
    "decay_rate": "decay per level beyond the expected depth (paper: 0.1)",
    "max_depth": "a branch is terminal here (paper: 10)",
    "early_stop_terminals": "stop once this many terminals have a non-empty result (paper: 5; not the vote)",
    "beam_width": "beam: nodes kept per level (3)",
    "vote_samples": "vote: sampled paths (5)",
    "temperature": "policy sampling temperature",
    "constant_reward": "constant-reward ablation: the reward",
    "vote_mode": "how the final answer is chosen",
    "seed": "random seed (same seed, same tree)",
    "selection": "tree policy: the paper's UCT, or PUCT with the policy's prior P",
    "c_puct": "PUCT exploration constant (ours: 1.0)",
    "ig_variant": "IG reward: paper (history+prompt vs all), question (question tokens only), question_clipped",
    "greedy_first": "expansion: always keep the policy's top candidate among the k (one more policy call)",
    "greedy_descent": "fast/classic/constant: the first rounds expand along the greedy path, so the tree "
    "holds its answer (one more policy call per step)",
}


GIVEN = "_settings_given"  # the namespace attribute naming the settings flags written out


def _mark_given(namespace: argparse.Namespace, dest: str) -> None:
    setattr(namespace, GIVEN, {*getattr(namespace, GIVEN, ()), dest})


class _StoreGiven(argparse.Action):
    """`store`, remembering that the flag was written (a preset yields to it even when the
    value is the paper's: `--preset small --selection uct` means UCT)."""

    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        setattr(namespace, self.dest, values)
        _mark_given(namespace, self.dest)


class _BoolGiven(argparse.BooleanOptionalAction):
    def __call__(self, parser, namespace, values, option_string=None):  # type: ignore[no-untyped-def]
        super().__call__(parser, namespace, values, option_string)
        _mark_given(namespace, self.dest)


def add_settings_flags(parser: argparse.ArgumentParser, *, skip: tuple[str, ...] = ("method",)) -> None:
    """One flag per `SearchSettings` field except those in `skip`, defaulting to the paper's
    value, and `--preset` (mcts.search.presets)."""
    from mcts.search.presets import PRESETS

    parser.add_argument(
        "--preset",
        choices=list(PRESETS),
        default=None,
        help="start from a named configuration: "
        + "; ".join(f"{p.name}: {p.description}" for p in PRESETS.values())
        + ". Flags written out override it",
    )
    defaults = SearchSettings()
    for f in fields(SearchSettings):
        if f.name in skip:
            continue
        value = getattr(defaults, f.name)
        flag = "--" + f.name.replace("_", "-")
        help_text = f"{_HELP.get(f.name, f.name)} (default: {getattr(value, 'value', value)})"
        if isinstance(value, Enum):
            choices = [m.value for m in type(value)]
            parser.add_argument(
                flag, dest=f.name, choices=choices, default=value.value, help=help_text, action=_StoreGiven
            )
        elif isinstance(value, bool):
            parser.add_argument(flag, dest=f.name, action=_BoolGiven, default=value, help=help_text)
        else:
            parser.add_argument(
                flag, dest=f.name, type=type(value), default=value, help=help_text, action=_StoreGiven
            )


def settings_from_args(args: argparse.Namespace, method: str | None = None) -> SearchSettings:
    """The settings the flags ask for: the `--preset`'s (if any), then every flag written out
    on top (on a namespace not parsed here, every value other than the paper's). `method`
    overrides the flag."""
    paper = SearchSettings()
    given = {f.name: getattr(args, f.name) for f in fields(SearchSettings) if hasattr(args, f.name)}
    if method is not None:
        given["method"] = method
    preset = getattr(args, "preset", None)
    if not preset:
        return SearchSettings.from_dict(given)
    from mcts.search.presets import preset_settings

    base = preset_settings(preset).to_dict()
    paper_values = paper.to_dict()
    written = getattr(args, GIVEN, None)
    changed = {
        k: v
        for k, v in given.items()
        if k == "method" or (k in written if written is not None else v != paper_values[k])
    }
    return SearchSettings.from_dict({**base, **changed})


def add_world_flags(parser: argparse.ArgumentParser) -> None:
    """What a run is made with: KB, policy kind, models, endpoint, adapter (`build_world`'s arguments)."""
    parser.add_argument(
        "--kb", default=None, help='KB spec: "demo", "fbqa", an RDF file/folder or a SPARQL URL (env KB)'
    )
    parser.add_argument("--policy", choices=["guided", "react"], default="guided", help="policy kind")
    parser.add_argument("--policy-model", default=None, help="policy model id or folder (env POLICY_MODEL)")
    parser.add_argument(
        "--scorer-model", default=None, help="IG scorer model id or folder (env SCORER_MODEL)"
    )
    parser.add_argument(
        "--policy-endpoint", default=None, help="OpenAI-compatible URL serving the policy (react)"
    )
    parser.add_argument(
        "--policy-adapter",
        default=None,
        help="trained policy adapter folder; default: the shipped one with the bundled model on real "
        'Freebase KBs, none on the bundled demo KBs; "none": base policy',
    )
