"""Named search configurations, one click in the app and `--preset` on the CLI.

- "paper": the paper's configuration: UCT, plurality vote, the paper's IG formula and
  constants (12 rounds, k = 5, alpha 2, beta 10, decay after depth 7, max depth 10,
  early stop at 5 answered terminals). What `SearchSettings()` is.
- "small": the configuration measured best for the bundled SmolLM2-135M on a CPU
  (README, "Search that beats the greedy path"): PUCT with the policy's prior, the
  answer of the branch the policy finds likeliest, a smaller CPU budget, the paper's IG
  formula (the only variant whose sibling order beat random there). Chosen on the first
  16 demo questions (Fast MCTS F1 38.5 with the paper's UCT and vote -> 66.0; greedy path
  61.9; greedy-first measured 65.0, so it stays off), reported on dev questions it was not
  tuned on. Its rounds start by descending the greedy path (`greedy_descent`), so the tree
  always holds the greedy path's answer: chosen on the 40 choose questions (the same F1 on
  every question) and the 40 demo questions (Fast MCTS 55.9 -> 61.8, the constant reward 56.8 ->
  61.8, each now answering every demo question as the greedy path does).

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
