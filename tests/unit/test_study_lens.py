"""The IG lens study (`python -m mcts study lens`): records measured from stored trees, and
the tables' arithmetic (the split of x, Spearman, the random expectation, the rankers)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from mcts.evaluation.runner import EvalRow
from mcts.evaluation.studies import lens
from mcts.evaluation.studies import lens_tables as lt
from mcts.search.steps import IGDetail, IGScore
from mcts.search.trace import load_trace

TRACES = Path("examples/traces")
GOLD = {
    "fast-inception.json": ("demo:002", "Christopher Nolan", "m.demo_christopher_nolan"),
    "fast-obama.json": ("demo:001", "Honolulu", "m.demo_honolulu"),
}


class LengthScorer:
    """A test double with the IG scorer's `score`: NLLs from the text's length and words."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def score(self, question: str, texts: list[str], *, alpha: float, beta: float) -> list[IGScore]:
        self.texts += texts
        out = []
        for t in texts:
            a, q = 1.0 + len(t) / 500, 2.0 - 0.1 * t.count("_")
            n, m = max(len(t) // 4, 1), 5
            hq = (n * a + m * q) / (n + m)
            detail = IGDetail(n, (q,) * m, ("w",) * m, (2.5,) * m)
            out.append(
                IGScore(math.exp(a), math.exp(hq), alpha / (1 + math.exp(-beta * (a - hq))), detail=detail)
            )
        return out


def _run_dir(tmp_path: Path) -> Path:
    """An eval folder holding the shipped Fast MCTS traces, as `mcts eval --out` writes it."""
    run = tmp_path / "demo-run"
    (run / "traces").mkdir(parents=True)
    rows = []
    for name, (qid, answer, mid) in GOLD.items():
        shutil.copy(TRACES / name, run / "traces" / name)
        question = load_trace(TRACES / name).question
        rows.append(
            EvalRow(qid, "fast", question, "demo", 1, 0, [], "", [{"name": answer, "ids": [mid]}], 1, 1, 1,
                    True, True, 1, 1, "", "", 1, 1, {}, trace=f"traces/{name}").to_json()
        )  # fmt: skip
    (run / "results.jsonl").write_text("\n".join(rows) + "\n")
    return run


def test_records_cover_every_sibling_group_under_each_configuration(tmp_path: Path) -> None:
    runs = lens.load_with_hops([_run_dir(tmp_path)], ["fast"])
    assert len(runs) == 2 and all(x.hops == 1 for x in runs)
    scorer = LengthScorer()
    records = lens.measure_runs(runs, scorer, tmp_path / "lens.jsonl", every_group=True)
    for x in runs:
        tree = x.run.tree
        expected = {(p.id, c) for p in tree.nodes if len(p.children) >= 2 for c in p.children}
        got = {(r.parent, r.node) for r in records if r.question_id == x.run.question_id}
        assert got == expected
    assert all(set(r.terms) == {"paper", "mask", "paper_opaque"} for r in records)
    # The demo ids spell names: masking and opaque ids both leave fewer restated words.
    assert sum(r.restated["mask"] for r in records) < sum(r.restated["paper"] for r in records)
    assert sum(r.restated["paper_opaque"] for r in records) < sum(r.restated["paper"] for r in records)
    assert not any("m.demo_" in t for t in scorer.texts if "m.0" in t)
    # The records file resumes: nothing is scored twice, and it reads back equal.
    again = LengthScorer()
    assert lens.measure_runs(runs, again, tmp_path / "lens.jsonl") == records and again.texts == []


def test_only_judged_groups_get_the_extra_configurations_and_stored_terms_save_passes(tmp_path: Path) -> None:
    runs = lens.load_with_hops([_run_dir(tmp_path)], ["fast"])
    x = next(x for x in runs if x.run.question_id == "demo:002")
    tree = x.run.tree
    scorer = LengthScorer()
    records = lens.measure_tree(x.run, 1, scorer, stored=True)
    judged = {g[0].parent for g in lt.judged_groups(records)}
    assert judged  # the shipped tree answers Nolan on one branch and the cast on another
    for r in records:
        assert ("mask" in r.terms) == (r.parent in judged)
        stored = lens.stored_terms(tree[r.node], x.run.settings.alpha, x.run.settings.beta)
        assert stored is not None and r.terms["paper"] == stored  # no pass for what the search stored
    assert not set(scorer.texts) & {n.cleaned_history for n in tree.nodes}


def test_opaque_ids_are_stable_and_nameless() -> None:
    text = "ns:m.demo_inception ns:film.film.directed_by ?x . <http://rdf.freebase.com/ns/m.demo_inception>"
    out = lens.opaque_text(text)
    assert "demo" not in out and "inception" not in out
    assert out.count(lens.opaque_id("m.demo_inception")) == 2 and "film.film.directed_by" in out
    assert lens.opaque_id("m.demo_inception") != lens.opaque_id("m.demo_interstellar")


def _record(node: int, a: float, q: float, n: int, value: float | None, *, qid: str = "q1", parent: int = 0,
            hops: int | None = 1, prior: float = 0.0, restated: int = 0) -> lens.NodeRecord:  # fmt: skip
    m = 4
    w = m / (n + m)
    r = 2 / (1 + math.exp(-10 * w * (a - q)))
    terms = lens.Terms(a, q, 2.0, n, m, r, 2 / (1 + math.exp(-10 * (2.0 - q))))
    return lens.NodeRecord("run/fast", qid, hops, parent, node, value, prior, {"paper": restated, "mask": 0},
                           {"paper": terms, "mask": terms})  # fmt: skip


def test_the_split_of_x_is_exact() -> None:
    group = [_record(1, 3.0, 2.0, 10, 1.0), _record(2, 2.0, 2.5, 30, 0.0), _record(3, 4.0, 1.0, 20, 0.5)]
    for r, terms in zip(group, lt.split_terms(group, "paper"), strict=True):
        others = [o.terms["paper"] for o in group if o is not r]
        w = sum(o.weight for o in others) / 2
        ref = w * (sum(o.a for o in others) / 2 - sum(o.q for o in others) / 2)
        assert sum(terms) == pytest.approx(r.terms["paper"].x - ref)


def test_spearman_matches_its_definition_with_ties() -> None:
    assert lt.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert lt.spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    assert lt.spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(0.9486832980505138)  # scipy's value
    assert lt.spearman([1, 1, 1], [1, 2, 3]) is None


def test_random_expectation_and_a_perfect_ranker() -> None:
    group = [_record(i, 1.0, 1.0, 10, v) for i, v in enumerate([1.0, 0.0, 0.0, 0.0, 0.0], 1)]
    rand = lt.judge(group, None)
    assert rand.top1 == pytest.approx(1 / 5) and rand.top3 == pytest.approx(3 / 5) and rand.tau == 0.0
    perfect = lt.judge(group, lambda r: r.true_value or 0.0)
    assert (perfect.top1, perfect.top3) == (1.0, 1.0) and perfect.tau is not None and perfect.tau > 0.6


def test_tables_count_only_groups_whose_true_values_differ_and_break_down_by_hops() -> None:
    records = [
        _record(1, 3.0, 2.0, 10, 1.0, prior=-1.0, restated=2),
        _record(2, 2.0, 2.5, 30, 0.0, prior=-0.5, restated=0),
        _record(3, 3.0, 2.0, 10, 0.5, qid="q2", hops=2, restated=1),
        _record(4, 2.0, 2.0, 10, 0.5, qid="q2", hops=2),  # same true values: not judged
        _record(5, 2.0, 2.0, 10, None, qid="q3", parent=7),  # alone with a value: not judged
        _record(6, 2.0, 2.0, 10, 1.0, qid="q3", parent=7),
    ]
    assert [len(g) for g in lt.judged_groups(records)] == [2]
    table = lt.ranking_markdown(records)
    assert "| ranker (1 groups, 1 questions) | top-1 |" in table and "tau 1-hop (groups)" in table
    assert "| IG paper, 4 rules | 100% | 100% | 1.000 [1.000, 1.000] | 1.00 (1) | - (0) |" in table
    assert "| policy prior | 0% | 100% | -1.000 [-1.000, -1.000] | -1.00 (1) | - (0) |" in table
    assert lt.ranking_markdown(records[2:4]) == "No sibling group whose true values differ."
    spread = lt.spread_markdown(records)
    assert "| paper | 2-hop | 1 | 2 |" in spread
    text = lt.study_markdown(records)
    assert "(d)" not in text and "mask vs the paper's rules" in text


def test_verdict_says_whether_the_interval_holds_zero() -> None:
    assert "it matters, better" in lt.verdict("x", (0.2, 0.1, 0.3))
    assert "no measurable difference" in lt.verdict("x", (0.05, -0.1, 0.2))
    assert "no judged sibling group" in lt.verdict("x", None)


def test_the_cli_refuses_bad_folders_and_prints_stored_records(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from mcts.cli.main import build_parser

    def run(*argv: str) -> int:
        args = build_parser().parse_args(["study", "lens", *argv])
        return args.func(args)

    assert run(str(tmp_path / "missing")) == 2
    assert run(str(tmp_path), "--parts", "xz") == 2
    folder = _run_dir(tmp_path)
    assert run(str(folder), "--from-records") == 2
    runs = lens.load_with_hops([folder], ["fast"])
    records = lens.measure_runs(runs, LengthScorer(), tmp_path / "r.jsonl", every_group=True)
    assert run(str(folder), "--from-records", "--records", str(tmp_path / "r.jsonl")) == 0
    out = capsys.readouterr().out
    assert f"nodes: {len(records)}" in out and "(d) The same trees with opaque ids" in out
    assert run(str(folder), "--from-records", "--records", str(tmp_path / "r.jsonl"), "--parts", "c") == 0
    out = capsys.readouterr().out
    assert "(c) Sibling ranking" in out and "(a)" not in out and "(d)" not in out
    assert json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])["run"] == "demo-run/fast"


@pytest.mark.slow
def test_the_real_scorer_reproduces_the_shipped_rewards(tmp_path: Path) -> None:
    """With the bundled model, the paper configuration's r is the reward the trace recorded."""
    from mcts.agents.models import load_model
    from mcts.agents.scorer import IGScorer

    runs = lens.load_with_hops([_run_dir(tmp_path)], ["fast"])
    run = next(x.run for x in runs if x.run.question_id == "demo:002")
    records = lens.measure_tree(run, 1, IGScorer(load_model()), opaque=False, every_group=True)
    assert records and set(records[0].terms) == {"paper", "mask"}
    for r in records:
        stored = run.tree[r.node].reward
        assert stored is not None and r.terms["paper"].r_paper == pytest.approx(stored, abs=1e-3)
