"""Per-method drivers: which nodes each round expands, scores and backs up.

Each driver is a generator over a `Search` (which owns the tree and the shared phases
expand / simulate / score / back up) that yields events and returns `(stop reason,
detail)`. The six methods differ only where the paper says they do (docs/method.md#one-search-round):

- fast, constant: one round = select a leaf from the root by the paper's UCT (unvisited
  child first) or by PUCT (`settings.selection`), expand k, score all new children in
  one IG batch, back up each child's decayed reward. Constant: the reward is
  `settings.constant_reward`.

How the k candidates of an expansion are drawn: the policy lists its options at the
node, scores each (guided policy: the LM's mean token log-likelihood plus documented
priors; ReAct: the completion's mean token log-prob), and samples k distinct ones
without replacement from softmax(score / temperature) (greedy: the top k). Each
child's prior P = softmax of the siblings' scores at the same temperature
(`rules.set_priors`), which PUCT reads. With `greedy_first` the search asks the policy
once more, greedily, for its top candidate and puts it first among the k (one more
policy call per expansion). With `greedy_descent` the first rounds expand the greedy path's
nodes in turn (root, then the top candidate's child, until it is terminal), each with its
top candidate kept, instead of selecting a leaf: the tree holds the greedy path's answer
whatever the early stop does; the later rounds select as usual.
- classic: as fast, but every non-terminal new child is first simulated (k=1,
  sampled) to Done or max depth; the simulation's end state is what gets scored.
  Simulated steps are stored on the node, not added to the tree. Only tree terminals
  vote; the simulation's executed answer is recorded as `node.simulated_answer`.
- beam: one round = one level: expand every kept node, score the children in one
  batch, keep the top `beam_width` non-terminal children by reward (ties: lowest id).
- vote: one round = one independent sampled path from the root (k=1, its own
  `random.Random` derived from the seed); paths are separate branches of one tree.
- single: one greedy path.

Single and vote make no scorer calls unless the search was asked to score baselines
(the evaluation compares costs). Knows nothing of models or tools.
"""

from __future__ import annotations

import random
from collections.abc import Generator, Sequence
from typing import Protocol

from mcts.search.branch import branch_answer
from mcts.search.cleaning import CleaningRule, clean_history
from mcts.search.events import (
    Event,
    NodeSelected,
    RoundFinished,
    RoundStarted,
    SimulationStep,
    StopReason,
    ValuesBackedUp,
)
from mcts.search.settings import Method, SearchSettings, Selection
from mcts.search.steps import Candidate, Step
from mcts.search.tree import ROOT_ID, Tree

Driver = Generator[Event, None, tuple[StopReason, str]]


class SearchPhases(Protocol):
    """The shared phases a driver calls; `mcts.search.loop.Search` provides them.

    Passed in (as mctx passes its functions into the search) so the drivers never import
    the loop that runs them.
    """

    settings: SearchSettings
    tree: Tree
    rng: random.Random
    rounds_done: int
    cleaning_rules: frozenset[CleaningRule]

    @property
    def scores_rewards(self) -> bool: ...

    def propose(
        self, node_id: int, history: Sequence[Step], k: int, rng: random.Random, greedy: bool
    ) -> list[Candidate]: ...

    def execute(self, cand: Candidate) -> Step: ...

    def expand(
        self, node_id: int, k: int, rng: random.Random, greedy: bool = False, keep_top: bool = False
    ) -> Generator[Event, None, list[int]]: ...

    def score(self, node_ids: Sequence[int]) -> Generator[Event, None, None]: ...

    def backup(self, node_id: int) -> ValuesBackedUp: ...

    def round_finished(self) -> RoundFinished: ...

    def early_stop(self) -> tuple[StopReason, str] | None: ...


def strategy_for(search: SearchPhases) -> Driver:
    method = search.settings.method
    if method in (Method.FAST, Method.CLASSIC, Method.CONSTANT):
        return mcts_rounds(search)
    if method == Method.BEAM:
        return beam_rounds(search)
    return path_rounds(search)


def select_leaf(tree: Tree, c: float, *, selection: Selection = Selection.UCT, c_puct: float = 1.0) -> int:
    """Descend from the root among open (not closed) children by the paper's UCT (unvisited
    first) or by PUCT (unvisited in order of the prior P); ties: lowest id."""
    node_id = ROOT_ID
    while tree[node_id].children:
        open_children = [ch for ch in tree[node_id].children if not tree.is_closed(ch)]
        if not open_children:
            break  # cannot happen while closed-ness is kept up to date; stay here
        if selection == Selection.PUCT:
            node_id = max(open_children, key=lambda ch: (tree.puct(ch, c_puct), -ch))
        else:
            node_id = max(open_children, key=lambda ch: (tree.uct(ch, c), -ch))
    return node_id


def _exhausted(search: SearchPhases) -> tuple[StopReason, str]:
    if not search.tree.root.children:
        return "exhausted", "the policy proposed no step at the root"
    return "exhausted", f"no open branch left after {search.rounds_done} rounds"


def mcts_rounds(search: SearchPhases) -> Driver:
    s = search.settings
    # With greedy_descent the rounds start at the root and follow the greedy child down
    # until it is terminal: the greedy path's answer is in the tree before any early stop.
    descent: int | None = ROOT_ID if s.greedy_descent else None
    for _ in range(s.rounds):
        if search.tree.is_closed(ROOT_ID):
            return _exhausted(search)
        round_no = search.rounds_done + 1
        yield RoundStarted(round=round_no, max_rounds=s.rounds)
        if descent is not None:
            leaf = descent
        else:
            leaf = select_leaf(search.tree, s.c, selection=s.selection, c_puct=s.c_puct)
        yield NodeSelected(round=round_no, node_id=leaf, path=tuple(search.tree.path(leaf)))
        children = yield from search.expand(leaf, s.k, search.rng, keep_top=descent is not None)
        if descent is not None:
            # The top candidate's child comes first; the descent ends where it is terminal.
            descent = children[0] if children and not search.tree[children[0]].terminal else None
        if s.method == Method.CLASSIC:
            for child in children:
                if not search.tree[child].terminal:
                    yield from simulate(search, child)
        yield from search.score(children)
        for child in children:
            yield search.backup(child)
        yield search.round_finished()
        stop = search.early_stop()
        if stop is not None:
            return stop
    if search.tree.is_closed(ROOT_ID):
        return _exhausted(search)
    return "budget", f"all {s.rounds} rounds used"


def simulate(search: SearchPhases, node_id: int) -> Generator[Event, None, None]:
    """Classic MCTS rollout: the policy continues one sampled path to Done or max depth."""
    node = search.tree[node_id]
    history = search.tree.steps(node_id)
    simulated = []
    depth = node.depth
    while depth < search.settings.max_depth and not (simulated and simulated[-1].is_done):
        candidates = search.propose(node_id, [*history, *simulated], 1, search.rng, greedy=False)
        if not candidates:
            break
        step = search.execute(candidates[0])
        simulated.append(step)
        depth += 1
        action = step.action.render() if step.action is not None else step.raw_text.strip()
        yield SimulationStep(
            node_id=node_id, index=len(simulated) - 1, action=action, observation=step.observation.text
        )
    end_state = [*history, *simulated]
    node.simulation = tuple(simulated)
    node.simulated_answer = branch_answer(end_state)[0]
    # The node's cleaned history is what the scorer reads: here, the simulation's end state.
    node.cleaned_history = clean_history(end_state, search.cleaning_rules, question=search.tree.question).text


def beam_rounds(search: SearchPhases) -> Driver:
    s = search.settings
    kept = [ROOT_ID]
    for _ in range(s.rounds):
        if not kept:
            return _exhausted(search)
        round_no = search.rounds_done + 1
        yield RoundStarted(round=round_no, max_rounds=s.rounds)
        new: list[int] = []
        for node_id in kept:
            yield NodeSelected(round=round_no, node_id=node_id, path=tuple(search.tree.path(node_id)))
            new += yield from search.expand(node_id, s.k, search.rng)
        yield from search.score(new)
        for child in new:
            yield search.backup(child)
        open_children = [c for c in new if not search.tree[c].terminal]
        ranked = sorted(open_children, key=lambda c: (-(search.tree[c].reward or 0.0), c))
        kept = ranked[: s.beam_width]
        yield search.round_finished()
        stop = search.early_stop()
        if stop is not None:
            return stop
    if not kept:
        return _exhausted(search)
    return "budget", f"all {s.rounds} levels used"


def path_rounds(search: SearchPhases) -> Driver:
    s = search.settings
    single = s.method == Method.SINGLE
    paths = 1 if single else min(s.vote_samples, s.rounds)
    for index in range(paths):
        # Each vote path has its own generator derived from the seed, so path i is the
        # same whatever the other paths did; str seeds are hashed stably by `random`.
        rng = search.rng if single else random.Random(f"{s.seed}:path:{index}")
        round_no = search.rounds_done + 1
        yield RoundStarted(round=round_no, max_rounds=paths)
        node_id = ROOT_ID
        yield NodeSelected(round=round_no, node_id=node_id, path=(ROOT_ID,))
        while not search.tree[node_id].terminal:
            children = yield from search.expand(node_id, 1, rng, greedy=single)
            if not children:
                break
            node_id = children[0]
            if search.scores_rewards:
                yield from search.score([node_id])
            yield search.backup(node_id)
        yield search.round_finished()
        # No early stop here: an N-sample vote is N independent runs (the paper's baseline), so
        # --early-stop-terminals below --vote-samples must not quietly shrink it.
    if not search.tree.root.children:
        return _exhausted(search)
    label = "greedy path" if single else f"{paths} sampled paths"
    return "budget", f"{label} done"
