"""Test doubles shared by several test modules (and the security probes), in one place.

- `FakeModel`, `KeywordScorer`: a language model that is never run and a scorer whose
  likelihoods are a deterministic function of the text (the guided policy's tests);
- `MemoScorer`: a real scorer remembered per (prompt, candidates), for two runs that
  reach the same states on two stores;
- `greedy_path`: one greedy path of a policy through its tools;
- `slow_toy_world`: the app's world factory on the toy world of tests/toy_world.py, each
  policy call slowed and the calls at once counted (runs overlap, no model loads);
- `serve_on_toy_world`: the app served with the shipped traces as cached runs and a
  slowed toy world (with `TEACHING_MENU`) for a live run.

Test modules import these from here, never from one another.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from kb.actions import Action
from kb.observation import Value
from mcts.agents.lm_scoring import ContinuationScore
from mcts.search.protocols import Usage
from mcts.search.steps import Step
from tests.toy_world import BAD, EMPTY, GOOD, ROOT_MENU, ToyPolicy, ToyScorer, ToyTools


# ----- the guided policy's model and scorer --------------------------------------------------
class KeywordScorer:
    """Scorer double: mean log-prob = -0.01 x length, +1 per keyword found in the text."""

    def __init__(self, keywords: Sequence[str] = ()) -> None:
        self.keywords = tuple(keywords)
        self.usage = Usage()
        self.prompts: list[str] = []

    def score(self, prompt: str | Sequence[str], continuations: Sequence[str]) -> list[ContinuationScore]:
        self.usage.candidate_passes += 1
        self.prompts.append("".join(prompt) if not isinstance(prompt, str) else prompt)
        return [
            ContinuationScore(-0.01 * len(c) + sum(k in c for k in self.keywords), len(c))
            for c in continuations
        ]


class FakeTokenizer:
    chat_template = None


class FakeModel:
    """Stands in for a loaded model where the scorer is a double: only its tokenizer's
    (absent) chat template is read."""

    tokenizer = FakeTokenizer()


class MemoScorer:
    """A real LM scorer, remembered per (prompt, candidates): where a second run reaches
    the very state a first run reached, its scores are not computed twice (a deterministic
    function remembered; a diverging path is scored afresh)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.usage = inner, inner.usage
        self.memo: dict[tuple[tuple[str, ...], tuple[str, ...]], Any] = {}

    def score(self, prompt: str | Sequence[str], continuations: Sequence[str]) -> Any:
        key = (tuple(prompt) if not isinstance(prompt, str) else (prompt,), tuple(continuations))
        if key not in self.memo:
            self.memo[key] = self.inner.score(prompt, continuations)
        return self.memo[key]


def greedy_path(
    policy: Any, tools: Any, question: str, max_depth: int = 10
) -> tuple[tuple[Value, ...], list[Step]]:
    """Single greedy path: propose(k=1) -> run the tool -> append, until Done or max depth.
    The answer is the values of the last non-empty ExecuteSPARQL."""
    history: list[Step] = []
    answer: tuple[Value, ...] = ()
    for _ in range(max_depth):
        cands = policy.propose(question, history, 1, rng=random.Random(0), greedy=True)
        if not cands:
            break
        step = Step(cands[0].thought, cands[0].action, tools.run(cands[0].action), cands[0].raw_text)
        history.append(step)
        if step.action.tool == "ExecuteSPARQL" and step.observation.values:
            answer = step.observation.values
        if step.is_done:
            break
    return answer, history


# ----- the app on the toy world -------------------------------------------------------------
def slow_toy_world(
    call_s: float = 0.3, hold: threading.Event | None = None
) -> tuple[Callable[..., Any], list[int]]:
    """(the app's `get_world` on the toy world, [policy calls running now, the most at
    once]): each policy call sleeps `call_s`, so runs last long enough to overlap; with
    `hold`, each call also waits (at most 120 s) until the test sets it, so a run lasts
    until the test lets it go, however slow the machine."""
    from mcts.search.run_meta import RunMeta
    from tests import toy_world

    running = [0, 0]

    class World:
        def __init__(self) -> None:
            self.policy, self.scorer, self.tools = toy_world.toy_world()
            self.meta = RunMeta(kb_spec="demo", policy_model="toy", scorer_model="toy")
            propose = self.policy.propose

            def slow(*args: Any, **kwargs: Any) -> Any:
                running[0] += 1
                running[1] = max(running)
                try:
                    time.sleep(call_s)
                    if hold is not None:
                        hold.wait(timeout=120)
                    return propose(*args, **kwargs)
                finally:
                    running[0] -= 1

            self.policy.propose = slow  # type: ignore[method-assign]

    return (lambda form, method: World()), running


# The policy finds the wrong query far likelier; the toy scorer rewards the right one:
# the likeliest-branch answer (small preset) and the best branch by W/N disagree.
TEACHING_MENU = (
    (Action("ExecuteSPARQL", BAD), 0.85),
    (Action("ExecuteSPARQL", GOOD), 0.1),
    (Action("ExecuteSPARQL", EMPTY), 0.05),
)


class SlowToyPolicy(ToyPolicy):
    """The toy policy with the teaching menu and a pause per call, so a run lasts seconds."""

    def menu(self, history: Sequence[Step]) -> Any:
        menu = super().menu(history)
        return TEACHING_MENU if menu is ROOT_MENU else menu

    def propose(
        self, question: str, history: Sequence[Step], k: int, *, rng: random.Random, greedy: bool = False
    ) -> Any:
        time.sleep(0.4)
        return super().propose(question, history, k, rng=rng, greedy=greedy)


def teaching_world(form: Any, method: Any) -> Any:
    """The app's `get_world` for a live run: the slowed toy policy with the teaching menu."""
    from mcts.agents.world import World
    from mcts.search.run_meta import RunMeta

    meta = RunMeta(
        kb_spec=form.kb_spec or "demo", policy_model="toy", scorer_model="toy-ig", policy_kind="toy"
    )
    return World(kb=None, tools=ToyTools(), policy=SlowToyPolicy(), scorer=ToyScorer(), meta=meta)


def serve_on_toy_world(mp: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The app with the shipped traces as cached runs and the slow toy world for a live run
    (patched on `mp`), served: a context manager giving its address."""
    from tests.browser_support import private_run_cache, served
    from ui import handlers

    private_run_cache(mp, tmp_path_factory, seeded=True)
    mp.setattr(handlers, "get_world", teaching_world)
    mp.setattr(handlers, "is_warm", lambda form, method: True)
    return served()  # the machine's defaults: the small preset on a CPU, as the traces ran
