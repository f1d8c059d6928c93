"""Test doubles for the search loop: a toy policy, scorer and tools whose best branch is known.

The toy question is "who directed Inception?". Three queries exist:
GOOD (answers Christopher Nolan), BAD (answers Someone Else) and EMPTY (no rows).
The policy's greedy first choice is BAD (so a single greedy path answers wrongly);
the toy scorer rewards a history by the query it ran last: GOOD 1.8, BAD 0.6,
EMPTY 0.3, no query yet 1.0 - so a search steered by rewards finds Nolan.
Every number is deterministic given the `random.Random` handed to `propose`.
Used only next to tests that also run the real parts (tests/unit/test_search_real.py).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from kb.actions import Action
from kb.observation import Observation, Value
from mcts.search.protocols import DEFAULT_IG_PROMPT, Usage
from mcts.search.steps import Candidate, IGScore, Step

QUESTION = "Who directed Inception?"
GOOD = "SELECT ?x WHERE { ns:m.inception ns:film.film.directed_by ?x }"
BAD = "SELECT ?x WHERE { ns:m.inception ns:film.film.produced_by ?x }"
EMPTY = "SELECT ?x WHERE { ns:m.inception ns:film.film.sequel ?x }"
NOLAN = Value(name="Christopher Nolan", id="m.nolan")
OTHER = Value(name="Someone Else", id="m.other")

ROOT_MENU: tuple[tuple[Action, float], ...] = (
    (Action("ExecuteSPARQL", BAD), 0.4),
    (Action("ExecuteSPARQL", GOOD), 0.3),
    (Action("SearchNodes", "Inception"), 0.2),
    (Action("ExecuteSPARQL", EMPTY), 0.1),
)
AFTER_ANSWER_MENU: tuple[tuple[Action, float], ...] = (
    (Action("Done"), 0.9),
    (Action("SearchNodes", "Inception"), 0.1),
)


def _weighted_sample(menu: Sequence[tuple[Action, float]], k: int, rng: random.Random) -> list[Action]:
    pool = list(menu)
    out = []
    while pool and len(out) < k:
        pick = rng.random() * sum(w for _, w in pool)
        for i, (action, weight) in enumerate(pool):
            pick -= weight
            if pick <= 0 or i == len(pool) - 1:
                out.append(action)
                pool.pop(i)
                break
    return out


class ToyPolicy:
    name = "toy"

    def __init__(self) -> None:
        self.usage = Usage()
        self.histories: list[int] = []  # history length at each call

    def menu(self, history: Sequence[Step]) -> Sequence[tuple[Action, float]]:
        last = history[-1] if history else None
        if (
            last is not None
            and last.action is not None
            and last.action.tool == "ExecuteSPARQL"
            and last.observation.values
        ):
            return AFTER_ANSWER_MENU
        return ROOT_MENU

    def propose(self, question, history, k, *, rng, greedy=False):
        self.usage.calls += 1
        self.usage.tokens += 10 * k
        self.usage.seconds += 0.001
        self.histories.append(len(history))
        menu = self.menu(history)
        weights = dict((a.render(), w) for a, w in menu)
        actions = [a for a, _ in menu][:k] if greedy else _weighted_sample(menu, k, rng)
        return [
            Candidate(
                thought=f"step {len(history) + 1}",
                action=a,
                raw_text=f"Action: {a.render()}",
                policy_score=math.log(weights[a.render()]),
            )
            for a in actions
        ]


class GarbagePolicy:
    """A model that never writes a tool call."""

    name = "garbage"

    def __init__(self) -> None:
        self.usage = Usage()

    def propose(self, question, history, k, *, rng, greedy=False):
        self.usage.calls += 1
        return [
            Candidate(
                thought="", action=None, raw_text=f"lorem ipsum {i}", parse_error="no Action: line found"
            )
            for i in range(k)
        ]


class RaisingPolicy:
    name = "raising"

    def __init__(self) -> None:
        self.usage = Usage()

    def propose(self, question, history, k, *, rng, greedy=False):
        raise RuntimeError("CUDA out of memory\nwhile generating")


def reward_for(history: str) -> float:
    """The query executed last decides: GOOD 1.8, BAD 0.6, EMPTY 0.3, none 1.0."""
    positions = {query: history.rfind(query) for query in (GOOD, BAD, EMPTY)}
    last = max(positions, key=lambda q: positions[q])
    if positions[last] < 0:
        return 1.0
    return {GOOD: 1.8, BAD: 0.6, EMPTY: 0.3}[last]


def ig_from_reward(reward: float, alpha: float, beta: float) -> IGScore:
    """PPLs consistent with the reward: r = alpha * sigmoid(beta * log(ppl_h / ppl_hq))."""
    p = min(max(reward / alpha, 1e-6), 1 - 1e-6)
    log_ratio = math.log(p / (1 - p)) / beta
    return IGScore(ppl_history=20.0, ppl_with_question=20.0 / math.exp(log_ratio), reward=reward, tokens=50)


class ToyScorer:
    name = "toy-ig"

    def __init__(self) -> None:
        self.usage = Usage()
        self.batches: list[list[str]] = []

    def score(self, question, cleaned_histories, *, alpha, beta, prompt=DEFAULT_IG_PROMPT, variant="paper"):
        self.usage.calls += 1  # one batched forward pass per call
        self.usage.tokens += 50 * len(cleaned_histories)
        self.batches.append(list(cleaned_histories))
        return [ig_from_reward(reward_for(h), alpha, beta) for h in cleaned_histories]


class RaisingScorer(ToyScorer):
    def score(self, question, cleaned_histories, *, alpha, beta, prompt=DEFAULT_IG_PROMPT, variant="paper"):
        raise ValueError("scorer exploded")


class ToyTools:
    def __init__(self, *, timeout: bool = False) -> None:
        self.calls: list[Action] = []
        self.timeout = timeout

    def run(self, action: Action) -> Observation:
        self.calls.append(action)
        if action.tool == "Done":
            return Observation(text="Done.")
        if action.tool == "SearchNodes":
            return Observation(text='"Inception" | Description: a 2010 film')
        if self.timeout:
            return Observation.error("the query ran past its 10 s time limit")
        if action.argument == GOOD:
            return Observation(text="Christopher Nolan", values=(NOLAN,), sparql=GOOD)
        if action.argument == BAD:
            return Observation(text="Someone Else", values=(OTHER,), sparql=BAD)
        if action.argument == EMPTY:
            return Observation(text="No results.", status="empty", sparql=EMPTY)
        return Observation.error(f"unknown query {action.argument!r}")


class RaisingTools(ToyTools):
    def run(self, action: Action) -> Observation:
        raise OSError("connection reset")


def toy_world() -> tuple[ToyPolicy, ToyScorer, ToyTools]:
    return ToyPolicy(), ToyScorer(), ToyTools()
