"""The search: one loop for the six methods, run as a generator of typed events.

`Search(question, settings, policy=..., scorer=..., tools=...)` owns one `Tree` and
runs one method (`settings.method`) over it. `run()` yields an event after every model
call and every batch of tool calls, so a consumer (CLI, app) can draw the live tree
between events and `cancel()` lands within one model call. When the run ends - budget,
early stop, exhaustion, cancel, bad input or an unexpected error - `result` holds a
`SearchResult` and the last events are `AnswerReady` and `SearchStopped`. Nothing
raised inside the loop reaches the consumer: it becomes `stop_reason="error"` with a
one-line detail (and is logged with its traceback).

The phases every method shares (expand, simulate, score, back up) are methods here;
the per-method drivers (which nodes to expand, when a round ends) live in
`mcts.search.drivers`. Stopping rules (docs/method.md#one-search-round): at most `rounds` rounds,
early stop once `early_stop_terminals` terminal branches have a non-empty executed
result (tree and beam search; the N-sample vote always runs its N paths); a branch is
terminal at Done or at `max_depth`.

This module knows nothing of which model, prompt or store is behind the protocols.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Collection, Generator, Iterator, Sequence
from typing import Any

from kb.observation import Observation
from mcts.search.branch import branch_answer, validity_of
from mcts.search.cleaning import DEFAULT_RULES, CleaningRule, clean_history, raw_history
from mcts.search.cost import CostMeter, CostSummary
from mcts.search.drivers import strategy_for
from mcts.search.events import (
    AnswerReady,
    CandidatesProposed,
    Event,
    NodeAdded,
    NodeScored,
    RoundFinished,
    SearchStopped,
    StopReason,
    TerminalFound,
    ValuesBackedUp,
)
from mcts.search.protocols import DEFAULT_IG_PROMPT, Policy, Scorer, Tools
from mcts.search.rules import (
    back_up,
    best_branch,
    best_terminal_by_ig,
    best_terminal_by_value,
    node_reward,
    set_priors,
)
from mcts.search.run_meta import RunMeta
from mcts.search.settings import Method, SearchSettings
from mcts.search.steps import Candidate, Step
from mcts.search.tree import NO_PARENT, Node, Tree
from mcts.search.voting import SearchResult, decide, tie_break

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2_000
EventGen = Generator[Event, None, None]


class SearchFailure(RuntimeError):
    """A policy or scorer failed; the message is one clear line naming which."""


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def check_question(question: str) -> str | None:
    """None if the question is usable, else one line saying why not."""
    if not question or not question.strip():
        return "the question is empty"
    if len(question) > MAX_QUESTION_CHARS:
        return f"the question has {len(question):,} characters; at most {MAX_QUESTION_CHARS:,} are allowed"
    return None


class Search:
    def __init__(
        self,
        question: str,
        settings: SearchSettings,
        *,
        policy: Policy,
        scorer: Scorer,
        tools: Tools,
        cleaning_rules: Collection[CleaningRule] = DEFAULT_RULES,
        ig_prompt: str = DEFAULT_IG_PROMPT,
        meta: RunMeta | None = None,
        score_baselines: bool = False,
    ) -> None:
        self.question = question
        self.settings = settings
        self.policy, self.scorer, self.tools = policy, scorer, tools
        self.cleaning_rules = frozenset(CleaningRule(r) for r in cleaning_rules)
        self.ig_prompt = ig_prompt
        self.meta = meta or RunMeta()
        # Single path and vote need no rewards; scoring them anyway (for display) costs IG passes.
        self.score_baselines = score_baselines
        self.tree = Tree(question=question)
        self.events_log: list[Event] = []
        self.result: SearchResult | None = None
        self.rounds_done = 0
        self.rng = random.Random(settings.seed)  # the only randomness of the run
        self._meter = CostMeter(getattr(policy, "usage", None), getattr(scorer, "usage", None))
        self._cancel = threading.Event()
        self._started = False

    # ---- consumer API -------------------------------------------------------------
    def cancel(self) -> None:
        """Thread-safe; the run stops at its next event with reason "cancelled"."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def cost(self) -> CostSummary:
        return self._meter.summary()

    def run(self) -> Iterator[Event]:
        if self._started:
            raise RuntimeError("Search.run() can be called once per Search")
        self._started = True
        self._meter.start()
        reason: StopReason = "error"
        detail = ""
        try:
            problem = check_question(self.question)
            if problem is not None:
                reason, detail = "invalid_question", problem
            elif self.cancelled:
                reason, detail = "cancelled", "cancelled before the run started"
            else:
                reason, detail = yield from self._drive()
        except GeneratorExit:
            # The consumer closed the generator: keep a result anyway, then let it close.
            self.result = self._finish("cancelled", "the consumer stopped reading events")
            raise
        except Exception as exc:  # never propagate to the UI: report it as the stop reason
            log.exception("search failed")
            reason, detail = "error", one_line(exc)
        self.result = self._finish(reason, detail)
        yield from self._final_events()

    def _drive(self) -> Generator[Event, None, tuple[StopReason, str]]:
        if hasattr(self.policy, "temperature"):
            # The policy protocol has no temperature argument; a policy that samples
            # with one gets the run's setting (one search uses a policy at a time).
            self.policy.temperature = self.settings.temperature
        inner = strategy_for(self)
        while True:
            try:
                event = next(inner)
            except StopIteration as stop:
                return stop.value
            self._record(event)
            yield event
            if self.cancelled:
                inner.close()
                return "cancelled", "stopped by the user"

    def _record(self, event: Event) -> None:
        self.events_log.append(event)

    def _finish(self, reason: StopReason, detail: str) -> SearchResult:
        self._meter.stop()
        s = self.settings
        answer, sparql, node_ids, votes = decide(self.tree, s.vote_mode, s.temperature)
        return SearchResult(
            question=self.question,
            answer=answer,
            sparql=sparql,
            answer_node_ids=node_ids,
            votes=votes,
            best_by_value=best_terminal_by_value(self.tree),
            best_by_ig=best_terminal_by_ig(self.tree),
            stop_reason=reason,
            detail=detail,
            rounds=self.rounds_done,
            nodes=len(self.tree),
            cost=self._meter.summary(),
            terminals=len(self.tree.terminals()),
            vote_mode=s.vote_mode.value,
            tie_break=tie_break(self.tree, s.vote_mode, s.temperature),
        )

    def _final_events(self) -> list[Event]:
        res = self.result
        assert res is not None  # set by run() before this is called
        events: list[Event] = [
            AnswerReady(answer=res.answer_names, sparql=res.sparql, node_ids=res.answer_node_ids),
            SearchStopped(reason=res.stop_reason, detail=res.detail, rounds=res.rounds, nodes=res.nodes),
        ]
        self.events_log.extend(events)
        return events

    # ---- stopping -----------------------------------------------------------------
    def answered(self) -> int:
        return sum(1 for n in self.tree.nodes if n.terminal and n.answer)

    def early_stop(self) -> tuple[StopReason, str] | None:
        if self.answered() >= self.settings.early_stop_terminals:
            return "enough_terminals", f"{self.answered()} terminal branches returned a non-empty result"
        return None

    @property
    def scores_rewards(self) -> bool:
        return self.settings.method not in (Method.VOTE, Method.SINGLE) or self.score_baselines

    # ---- shared phases ------------------------------------------------------------
    def propose(self, node_id: int, history: Sequence[Step], k: int, rng: random.Random, greedy: bool):
        """Policy.propose with cost counting; identical actions merged again (defensive)."""
        self._meter.propose_call()
        try:
            candidates = self.policy.propose(self.question, list(history), k, rng=rng, greedy=greedy)
        except Exception as exc:
            raise SearchFailure(f"policy failed at node {node_id}: {one_line(exc)}") from exc
        merged: dict[str, Candidate] = {}
        for cand in candidates:
            merged.setdefault(cand.key(), cand)
        return list(merged.values())[:k]

    def execute(self, cand: Candidate) -> Step:
        """Run the candidate's tool; an unparsable candidate becomes an error observation."""
        if cand.action is None:
            reason = cand.parse_error or "the completion is not one well-formed tool call"
            obs = Observation.error(f"could not parse the action: {reason}")
            return Step(thought=cand.thought, action=None, observation=obs, raw_text=cand.raw_text)
        t0 = time.perf_counter()
        try:
            obs = self.tools.run(cand.action)
        except Exception as exc:  # tools must not raise; if one does, the agent sees it
            log.exception("tool raised")
            obs = Observation.error(f"{cand.action.tool} failed: {one_line(exc)}")
        self._meter.tool_call(cand.action.tool, time.perf_counter() - t0)
        return Step(thought=cand.thought, action=cand.action, observation=obs, raw_text=cand.raw_text)

    def is_terminal(self, step: Step, depth: int) -> bool:
        return step.is_done or depth >= self.settings.max_depth

    def expand(
        self, node_id: int, k: int, rng: random.Random, *, greedy: bool = False, keep_top: bool = False
    ) -> Generator[Event, None, list[int]]:
        """Propose up to k steps at `node_id`, run their tools, add the children.

        With `keep_top` (or the `greedy_first` setting) the policy's top candidate is among
        the k and its child comes first."""
        t0 = time.perf_counter()
        history = self.tree.steps(node_id)
        greedy = greedy or (keep_top and k == 1)
        candidates = self.propose(node_id, history, k, rng, greedy)
        if (keep_top or self.settings.greedy_first) and not greedy and k > 1 and candidates:
            # One more call: the sampled k may miss the policy's top candidate.
            top = self.propose(node_id, history, 1, rng, True)
            if top:
                others = [c for c in candidates if c.key() != top[0].key()]
                candidates = [top[0], *others[: k - 1]]
        yield CandidatesProposed(node_id=node_id, count=len(candidates), seconds=time.perf_counter() - t0)
        new: list[Node] = []
        for cand in candidates:
            step = self.execute(cand)
            depth = self.tree[node_id].depth + 1
            branch = [*history, step]
            answer, sparql = branch_answer(branch)
            terminal = self.is_terminal(step, depth)
            child = self.tree.add_child(
                node_id,
                step,
                round=self.rounds_done + 1,
                terminal=terminal,
                answer=answer if terminal else (),
                answer_sparql=sparql if terminal else "",
                validity=validity_of(step),
                policy_score=cand.policy_score,
                raw_history=raw_history(branch),
                cleaned_history=clean_history(branch, self.cleaning_rules, question=self.question).text,
            )
            new.append(child)
        for child in new:
            assert child.step is not None
            action = child.step.action.render() if child.step.action else child.step.raw_text.strip()
            yield NodeAdded(
                node_id=child.id,
                parent_id=node_id,
                action=action,
                observation=child.step.observation.text,
                validity=child.validity,
            )
            if child.terminal:
                yield TerminalFound(
                    node_id=child.id, answer=tuple(v.name for v in child.answer), non_empty=bool(child.answer)
                )
        set_priors(self.tree, node_id, self.settings.temperature)
        if not new:
            self.tree[node_id].exhausted = True
        self.refresh_closed(node_id)
        return [c.id for c in new]

    def score(self, node_ids: Sequence[int]) -> EventGen:
        """Score the nodes' `cleaned_history` in ONE scorer batch; write r and both PPLs."""
        if not node_ids:
            return
        texts = [self.tree[i].cleaned_history for i in node_ids]
        self._meter.score_batch()
        s = self.settings
        try:
            scores = self.scorer.score(
                self.question, texts, alpha=s.alpha, beta=s.beta, prompt=self.ig_prompt, variant=s.ig_variant
            )
        except Exception as exc:
            raise SearchFailure(f"scorer failed: {one_line(exc)}") from exc
        if len(scores) != len(texts):
            raise SearchFailure(f"scorer returned {len(scores)} scores for {len(texts)} histories")
        for node_id, ig in zip(node_ids, scores, strict=True):
            node = self.tree[node_id]
            node.reward = node_reward(s, ig.reward)
            node.ppl_history, node.ppl_with_question = ig.ppl_history, ig.ppl_with_question
            node.truncated = ig.truncated
            node.ig_detail = ig.detail
            yield NodeScored(
                node_id=node_id,
                ppl_history=ig.ppl_history,
                ppl_with_question=ig.ppl_with_question,
                reward=node.reward,
            )

    def backup(self, node_id: int) -> ValuesBackedUp:
        """The decayed backup (`rules.back_up`); an unscored node (single path / vote)
        backs up visits only (r' = 0)."""
        path, decayed = back_up(self.tree, node_id, self.settings)
        reward = self.tree[node_id].reward
        return ValuesBackedUp(
            node_id=node_id,
            path=tuple(path),
            reward=reward if reward is not None else 0.0,
            decayed_reward=decayed,
        )

    def refresh_closed(self, node_id: int) -> None:
        """Recompute `exhausted` on `node_id` and its ancestors: a node with children is
        exhausted while all of them are closed (terminal or exhausted). A node whose
        expansion gave nothing stays exhausted. Re-evaluated, not latched: a vote path can
        add a fresh child under a node that was closed before."""
        while node_id != NO_PARENT:
            node = self.tree[node_id]
            if node.children:
                node.exhausted = all(self.tree.is_closed(c) for c in node.children)
            node_id = node.parent

    def round_finished(self) -> RoundFinished:
        self.rounds_done += 1
        best = best_branch(self.tree)
        return RoundFinished(
            round=self.rounds_done,
            nodes=len(self.tree),
            terminals=len(self.tree.terminals()),
            answered=self.answered(),
            best_node_id=best,
            best_reward=self.tree[best].reward,
        )


def run_search(question: str, settings: SearchSettings, **options: Any) -> tuple[Search, SearchResult]:
    """Run a search to the end, discarding the events (they stay in `search.events_log`).

    `options` are `Search`'s keyword arguments (policy, scorer, tools, ...), passed through
    unchanged so the two signatures cannot drift apart.
    """
    search = Search(question, settings, **options)
    for _ in search.run():
        pass
    assert search.result is not None  # run() always sets it
    return search, search.result
