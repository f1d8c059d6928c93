"""Where a search loses to the greedy path: does its tree hold the greedy path's answer at all?

For each question the greedy path (`single`) answers better than the search method, from the
stored trees of one eval run (no model run): whether any answering branch of the search tree
returns the greedy answer (then an answer rule could have picked it), how deep the greedy
path's answer lies and how deep the tree's answering branches go, and the tree's size. The
counts after the table, the last two over every question: how many the greedy path answers
(a non-empty result) and in how many of those the search tree holds that answer.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcts.evaluation.study import StoredRun
from mcts.search.rules import answering_terminals
from mcts.search.voting import answer_key, decide

GREEDY = "single"


@dataclass(frozen=True)
class Loss:
    question_id: str
    greedy_f1: float
    search_f1: float
    greedy_depth: int  # steps from the root to the greedy path's answering node
    deepest_answer: int  # steps to the search tree's deepest answering branch (0: none)
    greedy_answer_in_tree: bool  # some answering branch of the search tree returns it
    nodes: int  # the search tree's size


@dataclass(frozen=True)
class Tally:
    won: int  # questions the search answers better
    total: int  # questions both finished
    greedy_answered: int  # questions the greedy path answers (a non-empty result)
    held: int  # of those, the search trees holding the greedy answer


def compare(greedy: StoredRun, search: StoredRun) -> Loss:
    """What the search tree holds of the greedy path's answer."""
    values, _, voters, _ = decide(greedy.tree, greedy.settings.vote_mode, greedy.settings.temperature)
    wanted = answer_key(values)
    branches = answering_terminals(search.tree)
    return Loss(
        question_id=search.question_id,
        greedy_f1=greedy.f1,
        search_f1=search.f1,
        greedy_depth=greedy.tree[voters[0]].depth if voters else 0,
        deepest_answer=max((n.depth for n in branches), default=0),
        greedy_answer_in_tree=bool(wanted) and any(answer_key(n.answer) == wanted for n in branches),
        nodes=len(search.tree),
    )


def losses(runs: Sequence[StoredRun], method: str) -> tuple[list[Loss], Tally]:
    """The questions the greedy path wins, and the counts over every question both finished."""
    by_method: dict[str, dict[str, StoredRun]] = {}
    for run in runs:
        by_method.setdefault(run.label.rsplit("/", 1)[-1], {})[run.question_id] = run
    greedy, search = by_method.get(GREEDY, {}), by_method.get(method, {})
    common = sorted(greedy.keys() & search.keys())
    every = {q: compare(greedy[q], search[q]) for q in common}
    lost = [every[q] for q in common if greedy[q].f1 > search[q].f1 + 1e-9]
    answered = [x for x in every.values() if x.greedy_depth > 0]
    return lost, Tally(
        won=sum(search[q].f1 > greedy[q].f1 + 1e-9 for q in common),
        total=len(common),
        greedy_answered=len(answered),
        held=sum(x.greedy_answer_in_tree for x in answered),
    )


def markdown(lost: Sequence[Loss], tally: Tally, method: str) -> str:
    """Per question the greedy path wins (left out when there is none), then the counts."""
    lines: list[str] = []
    if lost:
        lines += [
            f"| question | single F1 | {method} F1 | greedy answer at depth | deepest {method} answer "
            "| greedy answer in the tree | tree nodes |",
            "|---|---:|---:|---:|---:|---|---:|",
        ]
        lines += [
            f"| {x.question_id} | {x.greedy_f1:.2f} | {x.search_f1:.2f} | {x.greedy_depth} "
            f"| {x.deepest_answer} | {'yes' if x.greedy_answer_in_tree else 'no'} | {x.nodes} |"
            for x in lost
        ]
        lines.append("")
    held = sum(x.greedy_answer_in_tree for x in lost)
    lines += [
        f"| questions (both finished) | {method} better | single better | of those, greedy answer in the "
        f"{method} tree | greedy path answers | greedy answer in the {method} tree |",
        "|---:|---:|---:|---:|---:|---:|",
        f"| {tally.total} | {tally.won} | {len(lost)} | {held} | {tally.greedy_answered} | {tally.held} |",
    ]
    return "\n".join(lines)
