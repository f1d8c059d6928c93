"""Named search configurations, one click in the app and `--preset` on the CLI.

- "paper": the paper's configuration: UCT, plurality vote, the paper's IG formula and
  constants (12 rounds, k = 5, alpha 2, beta 10, decay after depth 7, max depth 10,
  early stop at 5 answered terminals). What `SearchSettings()` is.
- "small": the configuration for the bundled SmolLM2-135M on a CPU: the greedy path first
  (`greedy_descent`: the first rounds walk it, so the tree always holds its answer), then
  PUCT with the policy's prior, the answer of the likeliest branch, the paper's IG formula,
  and a smaller budget (12 rounds, k = 3, max depth 5, early stop at 3 answers). How it was
  chosen, on which questions, and what it scores: docs/results.md.

A preset fixes every search knob but the method, which stays the caller's choice.
Knows nothing of models, the CLI or the UI.
"""

from __future__ import annotations

from dataclasses import dataclass

from mcts.search.settings import IGVariant, Method, SearchSettings, Selection, VoteMode


@dataclass(frozen=True)
class Preset:
    name: str
    label: str  # what a button says: what the preset is, in a few words
    settings: SearchSettings
    description: str


PRESETS: dict[str, Preset] = {
    "paper": Preset(
        name="paper",
        label="Paper: UCT, plurality vote, paper IG",
        settings=SearchSettings(),
        description="The paper's configuration: UCT (c = 1), plurality vote, IG over history+prompt "
        "(alpha 2, beta 10), 12 rounds, k = 5, max depth 10, early stop at 5 answers.",
    ),
    "small": Preset(
        name="small",
        label="Small model on CPU: greedy path first, PUCT, likeliest branch",
        settings=SearchSettings(
            rounds=12,
            k=3,
            max_depth=5,
            early_stop_terminals=3,
            selection=Selection.PUCT,
            c_puct=1.0,
            vote_mode=VoteMode.LIKELIHOOD,
            ig_variant=IGVariant.PAPER,
            greedy_descent=True,
        ),
        description="Measured default for SmolLM2-135M on a CPU: the greedy path first, then PUCT with "
        "the policy prior (c_puct 1); the answer of the likeliest branch, 12 rounds, k = 3, max depth 5, "
        "early stop at 3 answers.",
    ),
}


def preset_settings(name: str, method: Method | str = Method.FAST) -> SearchSettings:
    """The preset's settings for `method`; a clear ValueError for an unknown name."""
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[name].settings.with_(method=Method(method))
