"""The IG lens study on stored trees (no new search): what the paper's IG reward is made of,
how it goes with restatement, and whether masking restated words ranks siblings better.

Every child of every sibling group (a parent with >= 2 children) of a stored tree is
re-scored from its branch's steps, once per cleaning configuration:

- `paper`: the paper's four rules (`DEFAULT_RULES`);
- `mask`: the four rules + MASK_RESTATEMENTS;
- `paper_opaque` (trees whose steps hold demo ids): the paper's rules with every
  name-bearing demo id (`m.demo_inception`) replaced in the steps by a stable opaque one
  (`m.0` + 5 hex digits of its hash), as Freebase's ids are.

One scorer pass per (node, configuration) gives every term (`Terms`): a, q, q0, n, m and
the paper and question variants' rewards (`mcts.search.ig_formula`). A node's record also
holds its true value (mean F1 of the answers found below it, from gold: `ranking.py`), its
policy prior and its restatement counts. Records go to a JSONL file as each tree is done,
so a long study resumes where it stopped; `lens_tables.py` turns them into the tables.

Knows nothing of argparse; the model comes in as a scorer with `score` (`IGScorer`).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from mcts.evaluation.ranking import terminal_outcomes, true_values
from mcts.evaluation.runner import read_rows, result_files
from mcts.evaluation.study import StoredRun, load_runs
from mcts.search.cleaning import DEFAULT_RULES, CleaningRule, clean_history
from mcts.search.ig_formula import NodeNLL, ig_input, reward_from_input
from mcts.search.restatement import restatements
from mcts.search.rules import path_log_prior
from mcts.search.settings import IGVariant
from mcts.search.steps import IGScore, Step
from mcts.search.tree import Node, Tree

MASKING = DEFAULT_RULES | {CleaningRule.MASK_RESTATEMENTS}
CONFIGS: dict[str, frozenset[CleaningRule]] = {"paper": DEFAULT_RULES, "mask": MASKING}
# The demo KB's ids spell the entity's name (`m.demo_barack_obama`); Freebase's do not.
DEMO_ID = re.compile(r"\bm\.demo_[A-Za-z0-9_]+")


@dataclass(frozen=True)
class Terms:
    """One node's IG terms under one cleaning configuration (nats; see `viz.ig_lens`)."""

    a: float  # mean NLL of history + prompt = log PPL(H')
    q: float  # mean NLL of the question after them
    q0: float  # mean NLL of the question after the prompt alone
    n: int  # target tokens of history + prompt
    m: int  # question tokens
    r_paper: float
    r_question: float

    @property
    def weight(self) -> float:
        return self.m / (self.n + self.m)

    @property
    def x(self) -> float:
        """The paper's x = m / (n + m) * (a - q)."""
        return self.weight * (self.a - self.q)


@dataclass(frozen=True)
class NodeRecord:
    run: str  # "<eval folder>/<method>"
    question_id: str
    hops: int | None
    parent: int
    node: int
    true_value: float | None  # None: no answer found below it
    prior: float  # log P of the branch under the policy
    restated: dict[str, int]  # configuration -> restatements left in its cleaned history
    terms: dict[str, Terms] = field(default_factory=dict)  # configuration -> terms


def opaque_id(demo_id: str) -> str:
    """`m.demo_inception` -> `m.0` + 5 hex digits: stable, and as nameless as `m.0abc12`."""
    return "m.0" + hashlib.sha1(demo_id.encode()).hexdigest()[:5]


def opaque_text(text: str) -> str:
    return DEMO_ID.sub(lambda mt: opaque_id(mt.group()), text)


def opaque_steps(steps: Sequence[Step]) -> list[Step]:
    """The steps with every demo id replaced, wherever cleaning may keep it."""
    out = []
    for step in steps:
        action = step.action
        if action is not None:
            action = replace(
                action, argument=opaque_text(action.argument), semantic=opaque_text(action.semantic)
            )
        obs = replace(step.observation, text=opaque_text(step.observation.text))
        out.append(
            replace(
                step,
                thought=opaque_text(step.thought),
                action=action,
                observation=obs,
                raw_text=opaque_text(step.raw_text),
            )
        )
    return out


def terms_of(score: IGScore, alpha: float, beta: float) -> Terms:
    d = score.detail
    if d is None:
        raise ValueError("the lens study needs a scorer that records its IG detail (IGScorer)")
    nll = NodeNLL(math.log(score.ppl_history), math.log(score.ppl_with_question), d.question_nlls)
    m = d.question_tokens
    return Terms(
        a=nll.log_ppl_history,
        q=sum(d.question_nlls) / m,
        q0=sum(d.base_question_nlls) / m,
        n=d.history_tokens,
        m=m,
        r_paper=reward_from_input(ig_input(IGVariant.PAPER, nll), alpha, beta),
        r_question=reward_from_input(ig_input(IGVariant.QUESTION, nll, d.base_question_nlls), alpha, beta),
    )


def _configs(run: StoredRun, opaque: bool | None) -> dict[str, tuple[frozenset[CleaningRule], bool]]:
    """Configuration name -> (rules, opaque ids); the opaque ones where the steps hold demo ids."""
    out = {name: (rules, False) for name, rules in CONFIGS.items()}
    if opaque is None:
        opaque = any(DEMO_ID.search(n.raw_history or "") for n in run.tree.nodes)
    if opaque:
        out["paper_opaque"] = (DEFAULT_RULES, True)  # the mask would blank the names anyway
    return out


def stored_terms(node: Node, alpha: float, beta: float) -> Terms | None:
    """The terms of the reward the search itself stored (a trace of version 3 or later)."""
    d, ppl_h, ppl_hq = node.ig_detail, node.ppl_history, node.ppl_with_question
    if d is None or ppl_h is None or ppl_hq is None or not (ppl_h > 0 and ppl_hq > 0):
        return None
    return terms_of(IGScore(ppl_h, ppl_hq, 0.0, detail=d), alpha, beta)


Cache = dict[tuple[str, float, float, str], Terms]


def _texts(tree: Tree, kids: Sequence[int], rules: frozenset[CleaningRule], opaque_ids: bool) -> list[str]:
    out = []
    for c in kids:
        steps = opaque_steps(tree.steps(c)) if opaque_ids else list(tree.steps(c))
        out.append(clean_history(steps, rules, question=tree.question).text)
    return out


def measure_tree(
    run: StoredRun,
    hops: int | None,
    scorer: Any,
    *,
    opaque: bool | None = None,
    stored: bool = False,
    every_group: bool = False,
    cache: Cache | None = None,
) -> list[NodeRecord]:
    """Every child of every sibling group with its `paper` terms; the other configurations
    are scored for judged groups only (true values that differ: `ranking.py`) unless
    `every_group`. `stored`: take the paper terms the search stored where the node's stored
    cleaned history is the one re-cleaned (the study's scorer is the run's); `cache`
    (question, alpha, beta, text) -> terms, shared by the trees of one question."""
    tree, s = run.tree, run.settings
    values = true_values(tree, terminal_outcomes(tree, run.gold))
    configs = _configs(run, opaque)
    cache = {} if cache is None else cache
    out: list[NodeRecord] = []
    for parent in tree.nodes:
        kids = parent.children
        if len(kids) < 2:
            continue
        judged = {values[c] for c in kids if c in values}
        wanted = configs if every_group or len(judged) > 1 else {"paper": configs["paper"]}
        texts = {name: _texts(tree, kids, *configs[name]) for name in configs}
        for i, c in enumerate(kids):
            key = (tree.question, s.alpha, s.beta, texts["paper"][i])
            if stored and key not in cache and tree[c].cleaned_history == key[3]:
                found = stored_terms(tree[c], s.alpha, s.beta)
                if found is not None:
                    cache[key] = found
        todo = sorted(
            {t for n in wanted for t in texts[n] if (tree.question, s.alpha, s.beta, t) not in cache}
        )
        if todo:
            scores = scorer.score(tree.question, todo, alpha=s.alpha, beta=s.beta)
            for t, sc in zip(todo, scores, strict=True):
                cache[(tree.question, s.alpha, s.beta, t)] = terms_of(sc, s.alpha, s.beta)
        for i, c in enumerate(kids):
            out.append(
                NodeRecord(
                    run=run.label,
                    question_id=run.question_id,
                    hops=hops,
                    parent=parent.id,
                    node=c,
                    true_value=values.get(c),
                    prior=path_log_prior(tree, c, s.temperature),
                    restated={n: len(restatements(tree.question, texts[n][i])) for n in configs},
                    terms={n: cache[(tree.question, s.alpha, s.beta, texts[n][i])] for n in wanted},
                )
            )
    return out


# ---- runs and the records file ------------------------------------------------------------


@dataclass(frozen=True)
class LensRun:
    run: StoredRun
    hops: int | None
    scorer_model: str  # the model that scored the stored rewards ("" when unknown)


def load_with_hops(dirs: Iterable[str | Path], methods: Sequence[str] | None) -> list[LensRun]:
    """The stored runs with their question's hop count and scorer (from the results rows)."""
    dirs = [Path(d) for d in dirs]
    rows = {(d.name, r.question_id, r.method): r for d in dirs for r in read_rows(result_files(d))}
    out = []
    for run in load_runs(dirs, methods):
        folder, method = run.label.rsplit("/", 1)
        row = rows.get((folder, run.question_id, method))
        hops = row.hops if row is not None else None
        out.append(
            LensRun(run, hops, str((row.meta or {}).get("scorer_model", "")) if row is not None else "")
        )
    return out


def record_json(record: NodeRecord) -> str:
    return json.dumps(asdict(record), sort_keys=True)


def record_from_json(line: str) -> NodeRecord:
    d = json.loads(line)
    d["terms"] = {k: Terms(**v) for k, v in d["terms"].items()}
    return NodeRecord(**d)


def read_records(path: Path) -> list[NodeRecord]:
    if not path.is_file():
        return []
    return [record_from_json(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def measure_runs(
    runs: Sequence[LensRun],
    scorer: Any,
    records: Path | None = None,
    *,
    scorer_model: str = "",
    every_group: bool = False,
    progress: Callable[[str], None] | None = None,
) -> list[NodeRecord]:
    """Measure every tree not yet in `records` (appending each tree's records as it is
    done) and return all records of these runs. A run scored by `scorer_model` lends
    its stored paper terms instead of a pass of the model."""
    have = read_records(records) if records is not None else []
    done = {(r.run, r.question_id) for r in have}
    wanted = {(x.run.label, x.run.question_id) for x in runs}
    out = [r for r in have if (r.run, r.question_id) in wanted]
    cache: Cache = {}
    for i, x in enumerate(sorted(runs, key=lambda x: x.run.question_id)):  # a question's trees share texts
        if (x.run.label, x.run.question_id) in done:
            continue
        stored = bool(scorer_model) and x.scorer_model == scorer_model
        new = measure_tree(x.run, x.hops, scorer, stored=stored, every_group=every_group, cache=cache)
        out += new
        if records is not None:
            with records.open("a", encoding="utf-8") as fh:
                fh.writelines(record_json(r) + "\n" for r in new)
        if progress is not None:
            progress(f"{i + 1}/{len(runs)} {x.run.label} {x.run.question_id}: {len(new)} nodes")
    return out
