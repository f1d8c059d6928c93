"""IG ranking analysis: does the IG reward order siblings the way their true values do?

Offline and gold-based, not part of inference (docs/method.md#the-ig-ranking-analysis; the paper's CWQ
figures: top-1 best-branch 75.73 %, best branch in IG top-3 100 %, Kendall tau 0.37).

1. A search tree (classic MCTS in the paper) has terminal states whose SPARQL was
   executed: terminal nodes (`node.answer`) and, in classic MCTS, each node's rollout
   (`node.simulated_answer`). Each gets its answer F1 against the gold answers.
2. "True value" of a node = mean F1 of the terminal states in its subtree (itself
   and its rollout included). Nodes with no terminal below have no true value and are left out.
3. For every parent with >= 2 children that have both a ranker score and a true
   value, compare the ranker's order with the true-value order:
   - top-1: the ranker's top child is a true-best child (ties in the true value:
     any of the tied best counts; ties in the ranker's score: the lower node id wins,
     which is the order children were created in);
   - top-3: some true-best child is among the ranker's first three (trivially true
     for parents with <= 3 children, which is why the paper's 100 % is not surprising);
   - Kendall tau-b between ranker scores and true values (ties handled; undefined,
     and left out of the mean, when either side is all ties).

Rankers are plain `{node_id: score}` maps: the IG scorer re-scoring each sibling
group from its cleaned histories, a chain-of-thought rating scorer, the tree's own
stored rewards, and a seeded random order. The core functions know nothing of files,
CLIs or how the tree was searched, except `run_ranking_analysis`, which runs a search
per question and appends the per-parent rows to a CSV as it goes.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcts.evaluation.metrics import GoldAnswer, f1_score
from mcts.search.protocols import DEFAULT_IG_PROMPT, Scorer
from mcts.search.tree import Tree

TOP_K = 3  # paper: "best branch kept in IG top-3"
# The paper's CWQ figures for the IG ranking (docs/method.md#the-ig-ranking-analysis).
PAPER_CWQ = {"top1": 0.7573, "top3": 1.0, "tau": 0.37}


@dataclass(frozen=True)
class ParentComparison:
    ranker: str
    question_id: str
    parent_id: int
    depth: int
    children: tuple[int, ...]
    scores: tuple[float, ...]
    true_values: tuple[float, ...]
    top1: bool
    top3: bool
    tau: float | None  # None when undefined (all ties on one side)


@dataclass(frozen=True)
class RankingSummary:
    ranker: str
    parents: int
    top1: float
    top3: float
    mean_tau: float | None  # over parents with a defined tau
    tau_parents: int
    # Parents whose children do not all share one true value: there top-1 is not free.
    informative_parents: int = 0
    top1_informative: float | None = None


def terminal_outcomes(
    tree: Tree, gold: Sequence[GoldAnswer], *, simulations: bool = True
) -> list[tuple[int, float]]:
    """(node id, F1) of every terminal state in the tree: an empty answer scores 0.

    Terminal tree nodes give their executed answer. Classic MCTS keeps its rollouts on
    the node they started from (`node.simulation`, `node.simulated_answer`), not as tree
    nodes; with `simulations` each rollout is a terminal state below that node.
    """
    out = [(n.id, f1_score(n.answer, gold)) for n in tree.nodes if n.terminal]
    if simulations:
        out += [
            (n.id, f1_score(n.simulated_answer, gold)) for n in tree.nodes if n.simulation and not n.terminal
        ]
    return out


def true_values(tree: Tree, outcomes: Sequence[tuple[int, float]]) -> dict[int, float]:
    """Mean terminal F1 in each node's subtree; nodes with no terminal below are absent."""
    sums: dict[int, float] = {}
    counts: dict[int, int] = {}
    for node_id, f1 in outcomes:
        for ancestor in tree.path(node_id):
            sums[ancestor] = sums.get(ancestor, 0.0) + f1
            counts[ancestor] = counts.get(ancestor, 0) + 1
    return {i: sums[i] / counts[i] for i in sums}


def kendall_tau_b(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Kendall's tau-b: (C - D) / sqrt((n0 - n1)(n0 - n2)); None when undefined.

    n0 = number of pairs, n1 = pairs tied in x, n2 = pairs tied in y; a pair tied in
    both counts in n1 and n2 and is neither concordant nor discordant.
    """
    if len(xs) != len(ys):
        raise ValueError(f"kendall_tau_b needs equal lengths, got {len(xs)} and {len(ys)}")
    n = len(xs)
    concordant = discordant = tied_x = tied_y = 0
    for i in range(n):
        for j in range(i + 1, n):
            dx = xs[i] - xs[j]
            dy = ys[i] - ys[j]
            if dx == 0:
                tied_x += 1
            if dy == 0:
                tied_y += 1
            if dx == 0 or dy == 0:
                continue
            if (dx > 0) == (dy > 0):
                concordant += 1
            else:
                discordant += 1
    pairs = n * (n - 1) // 2
    denominator = math.sqrt((pairs - tied_x) * (pairs - tied_y))
    if denominator == 0:
        return None
    return (concordant - discordant) / denominator


def compare_parent(
    children: Sequence[int], scores: Sequence[float], values: Sequence[float], *, top_k: int = TOP_K
) -> tuple[bool, bool, float | None]:
    """(top-1 hit, best-in-top-k hit, tau-b) for one sibling group."""
    if len(children) < 2:
        raise ValueError("a comparison needs at least two children")
    # Highest score first; equal scores keep creation order (lower node id first).
    order = sorted(range(len(children)), key=lambda i: (-scores[i], children[i]))
    best = max(values)
    top1 = values[order[0]] == best
    topk = any(values[i] == best for i in order[:top_k])
    return top1, topk, kendall_tau_b(scores, values)


def compare_tree(
    tree: Tree,
    scores: Mapping[int, float],
    values: Mapping[int, float],
    *,
    ranker: str,
    question_id: str = "",
) -> list[ParentComparison]:
    """Every parent with >= 2 children that have a score and a true value."""
    out: list[ParentComparison] = []
    for parent in tree.nodes:
        kids = [c for c in parent.children if c in scores and c in values]
        if len(kids) < 2:
            continue
        s = [float(scores[c]) for c in kids]
        v = [float(values[c]) for c in kids]
        top1, topk, tau = compare_parent(kids, s, v)
        out.append(
            ParentComparison(
                ranker, question_id, parent.id, parent.depth, tuple(kids), tuple(s), tuple(v), top1, topk, tau
            )
        )
    return out


def summarise_rankings(comparisons: Sequence[ParentComparison], ranker: str) -> RankingSummary:
    rows = [c for c in comparisons if c.ranker == ranker]
    taus = [c.tau for c in rows if c.tau is not None]
    n = len(rows)
    informative = [c for c in rows if len(set(c.true_values)) > 1]
    return RankingSummary(
        ranker=ranker,
        parents=n,
        top1=sum(c.top1 for c in rows) / n if n else 0.0,
        top3=sum(c.top3 for c in rows) / n if n else 0.0,
        mean_tau=sum(taus) / len(taus) if taus else None,
        tau_parents=len(taus),
        informative_parents=len(informative),
        top1_informative=sum(c.top1 for c in informative) / len(informative) if informative else None,
    )


def _groups(tree: Tree, eligible: Callable[[int], bool]) -> list[list[int]]:
    groups = []
    for parent in tree.nodes:
        kids = [c for c in parent.children if eligible(c)]
        if len(kids) >= 2:
            groups.append(kids)
    return groups


def history_text(tree: Tree, node_id: int, *, cleaned: bool, rules: Collection[Any] | None = None) -> str:
    """The node's own history root..node, cleaned (what IG reads) or raw.

    Rebuilt from the steps rather than read from `node.cleaned_history`: in classic MCTS
    that field holds the *rollout's* end state, and the ranking compares the children
    themselves.
    """
    from mcts.search.cleaning import DEFAULT_RULES, clean_history, raw_history

    steps = tree.steps(node_id)
    if not cleaned:
        return raw_history(steps)
    return clean_history(steps, DEFAULT_RULES if rules is None else rules, question=tree.question).text


def scorer_scores(
    tree: Tree,
    scorer: Scorer,
    eligible: Callable[[int], bool],
    *,
    alpha: float = 2.0,
    beta: float = 10.0,
    prompt: str = DEFAULT_IG_PROMPT,
    cleaned: bool = True,
    rules: Collection[Any] | None = None,
    variant: str = "paper",
) -> dict[int, float]:
    """Re-score every sibling group (>= 2 eligible children) with `scorer`, one batch per group.

    The policy and the tools are not re-run: the scorer reads the histories already
    in the tree.
    """
    out: dict[int, float] = {}
    for kids in _groups(tree, eligible):
        texts = [history_text(tree, c, cleaned=cleaned, rules=rules) for c in kids]
        results = scorer.score(tree.question, texts, alpha=alpha, beta=beta, prompt=prompt, variant=variant)
        out.update({c: r.reward for c, r in zip(kids, results, strict=True)})
    return out


def stored_rewards(tree: Tree, eligible: Callable[[int], bool]) -> dict[int, float]:
    """The rewards the search itself wrote (classic MCTS: the simulated end-state IG)."""
    return {n.id: float(n.reward) for n in tree.nodes if n.reward is not None and eligible(n.id)}


def random_scores(tree: Tree, eligible: Callable[[int], bool], rng: random.Random) -> dict[int, float]:
    return {n.id: rng.random() for n in tree.nodes if eligible(n.id)}


# ---- the analysis over questions ----------------------------------------------------

RANKERS = ("ig", "cot", "random", "tree_reward")
RANKER_LABELS = {
    "ig": "IG reward (re-scored per sibling group)",
    "cot": "CoT 1-10 rating (same cleaned histories)",
    "random": "random order (seeded)",
    "tree_reward": "classic MCTS stored reward (simulated end state)",
}
CSV_FIELDS = (
    "ranker",
    "question_id",
    "parent_id",
    "depth",
    "n_children",
    "top1",
    "top3",
    "tau",
    "children",
    "scores",
    "true_values",
)


def analyse_tree(
    tree: Tree,
    gold: Sequence[GoldAnswer],
    rankers: Mapping[str, Callable[[Tree, Callable[[int], bool]], Mapping[int, float]]],
    *,
    question_id: str = "",
) -> list[ParentComparison]:
    """Score the terminals, back up true values, and compare every ranker's sibling order."""
    values = true_values(tree, terminal_outcomes(tree, gold))

    def eligible(node_id: int) -> bool:
        return node_id in values

    out: list[ParentComparison] = []
    for name, ranker in rankers.items():
        out += compare_tree(tree, ranker(tree, eligible), values, ranker=name, question_id=question_id)
    return out


def csv_row(c: ParentComparison) -> dict[str, object]:
    return {
        "ranker": c.ranker,
        "question_id": c.question_id,
        "parent_id": c.parent_id,
        "depth": c.depth,
        "n_children": len(c.children),
        "top1": int(c.top1),
        "top3": int(c.top3),
        "tau": "" if c.tau is None else f"{c.tau:.4f}",
        "children": " ".join(map(str, c.children)),
        "scores": " ".join(f"{s:.4f}" for s in c.scores),
        "true_values": " ".join(f"{v:.4f}" for v in c.true_values),
    }


def ranking_markdown(comparisons: Sequence[ParentComparison], rankers: Sequence[str] = RANKERS) -> str:
    lines = [
        "| ranker | parents | top-1 best branch | best in top-3 | mean Kendall tau (parents) "
        "| top-1 where true values differ (parents) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name in rankers:
        s = summarise_rankings(comparisons, name)
        if not s.parents:
            continue
        tau = f"{s.mean_tau:.3f} ({s.tau_parents})" if s.mean_tau is not None else f"- ({s.tau_parents})"
        inf = s.top1_informative
        informative = f"{100 * inf:.2f}% ({s.informative_parents})" if inf is not None else "- (0)"
        lines.append(
            f"| {RANKER_LABELS.get(name, name)} | {s.parents} | {100 * s.top1:.2f}% | {100 * s.top3:.2f}% | {tau} "
            f"| {informative} |"
        )
    p = PAPER_CWQ
    lines.append(
        f"| paper, CWQ, IG (Llama-3.1-8B) | - | {100 * p['top1']:.2f}% | {100 * p['top3']:.0f}% | {p['tau']:.2f} | - |"
    )
    return "\n".join(lines)


def run_ranking_analysis(
    questions: Sequence[Any],
    world: Any,
    settings: Any,
    out_dir: str | Path,
    *,
    cot_scorer: Scorer | None = None,
    ig_prompt: str = DEFAULT_IG_PROMPT,
    seed: int = 0,
    resume: bool = False,
    progress: bool = True,
    save_traces: bool = True,
) -> list[ParentComparison]:
    """Search each question (settings.method; classic MCTS in the paper), rank, append CSV rows.

    `questions` are `mcts.evaluation.runner.EvalQuestion`s; `world` has policy, scorer (the IG
    scorer), tools and meta. Rows go to `<out>/ranking.csv` as each question finishes;
    finished question ids go to `<out>/ranking_done.txt`, which `resume` skips.
    """
    import csv

    from mcts.search.loop import run_search

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    csv_path, done_path = out / "ranking.csv", out / "ranking_done.txt"
    if not resume and (csv_path.exists() or done_path.exists()):
        raise ValueError(f"{out} already has ranking results; pass --resume or choose another --out")
    done = set(done_path.read_text().split()) if resume and done_path.exists() else set()
    todo = [q for q in questions if q.id not in done]
    if progress:
        from tqdm import tqdm

        todo = tqdm(todo, unit="question", dynamic_ncols=True)
    new: list[ParentComparison] = []
    rng = random.Random(seed)
    for q in todo:
        search, _ = run_search(
            q.question, settings, policy=world.policy, scorer=world.scorer, tools=world.tools, meta=world.meta
        )
        tree = search.tree
        rankers: dict[str, Callable[[Tree, Callable[[int], bool]], Mapping[int, float]]] = {
            "ig": lambda t, ok: scorer_scores(
                t,
                world.scorer,
                ok,
                alpha=settings.alpha,
                beta=settings.beta,
                prompt=ig_prompt,
                variant=settings.ig_variant,
            ),
            "random": lambda t, ok: random_scores(t, ok, rng),
            "tree_reward": stored_rewards,
        }
        if cot_scorer is not None:
            rankers["cot"] = lambda t, ok: scorer_scores(t, cot_scorer, ok)
        rows = analyse_tree(tree, q.gold, rankers, question_id=q.id)
        new += rows
        if save_traces:
            from mcts.evaluation.runner import safe_filename
            from mcts.search.trace import save_trace, trace_from_search

            save_trace(trace_from_search(search), out / "traces" / f"{safe_filename(q.id)}__ranking.json")
        write_header = not csv_path.exists()
        with csv_path.open("a", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
            if write_header:
                writer.writeheader()
            writer.writerows(csv_row(c) for c in rows)
        with done_path.open("a", encoding="utf-8") as fh:
            fh.write(q.id + "\n")
    return new


def read_ranking_csv(path: str | Path) -> list[ParentComparison]:
    """Read back the per-parent CSV (for reports over several runs or after --resume)."""
    import csv

    out: list[ParentComparison] = []
    with Path(path).open(newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            out.append(
                ParentComparison(
                    ranker=r["ranker"],
                    question_id=r["question_id"],
                    parent_id=int(r["parent_id"]),
                    depth=int(r["depth"]),
                    children=tuple(int(x) for x in r["children"].split()),
                    scores=tuple(float(x) for x in r["scores"].split()),
                    true_values=tuple(float(x) for x in r["true_values"].split()),
                    top1=r["top1"] == "1",
                    top3=r["top3"] == "1",
                    tau=float(r["tau"]) if r["tau"] else None,
                )
            )
    return out
