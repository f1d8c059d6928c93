"""The teacher's screen through the app's handlers, without a server: a new run's first
update clears every view, the lab compares each re-score with the run's own rewards and
names rules in words, truth rings only where siblings differ, every example question in
the picker by kind, the constant reward's colour bar, the glossary in the app and the docs.

Live runs search the slowed toy world (`tests.doubles.slow_toy_world`); the shipped
Obama trace stands for a finished run; re-scoring uses a scorer double whose reward
follows the cleaned history's length, so switching a rule moves rewards.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest

from kb.actions import Action
from kb.observation import Observation, Value
from mcts.evaluation.metrics import GoldAnswer
from mcts.search.cleaning import DEFAULT_RULES, RULE_INFO, CleaningRule
from mcts.search.settings import Method
from mcts.search.steps import Step
from mcts.search.trace import load_trace
from mcts.search.tree import Tree
from tests.doubles import slow_toy_world
from tests.toy_world import ToyScorer, ig_from_reward
from ui import handlers, rescoring, traces
from ui.config import EXAMPLES_FILE, TRACES_DIR, WIKIDATA_EXAMPLES_FILE, example_records
from ui.example_groups import KINDS, example_groups, example_kind
from ui.forms import RunInputs
from ui.glossary import GLOSSARY, glossary_lines
from ui.render import EMPTY_DETAIL, MAIN_OUTPUTS, figure, truth_marks
from ui.run_start import LAB_OUTPUTS, LAB_READY, LOADING, REPLAYING, SEARCHING
from ui.session import Session, TwinRun
from ui.truth import overlay, summary_markdown
from viz import build_figure
from viz.figure import EVEN_LABEL, NOWHERE_LABEL

gr = pytest.importorskip("gradio")
ROOT = Path(__file__).resolve().parents[2]
SPOUSE = "Who is the spouse of Barack Obama?"  # not an example: a live (toy) search
OBAMA = "Where was Barack Obama born?"  # an example with a shipped trace
PROMPT = "Based on this interaction history, the original question is:"


def _form(question: str = SPOUSE, **overrides: Any) -> RunInputs:
    values: dict[str, Any] = {f.name: "" for f in dataclasses.fields(RunInputs)}
    values.update(
        question=question, kb_spec="demo", method="fast", rounds=3, k=2, c=1.0, alpha=2.0, beta=10.0,
        expected_depth=7, max_depth=4, early_stop=5, seed=0, policy_kind="guided",
        rules=sorted(r.value for r in DEFAULT_RULES), ig_prompt=PROMPT,
    )  # fmt: skip
    values.update(overrides)
    return RunInputs(**values)


def _obama_on_screen(session: Session) -> None:
    """The shipped Obama run on screen, node 3 inspected and a twin beside it (every view full)."""
    trace = load_trace(TRACES_DIR / "fast-obama.json")
    traces.open_trace(session, trace, None)
    session.inspected = 3
    assert session.tree is not None
    session.twin = TwinRun(session.tree, session.tree, session.settings, session.result, cached=True)


def _annotations(fig: Any) -> list[str]:
    return [a.text for a in fig.layout.annotations] if fig is not None else []


@pytest.fixture()
def toy_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    world, _ = slow_toy_world(call_s=0.01)
    monkeypatch.setattr(handlers, "get_world", world)
    monkeypatch.setattr(handlers, "is_warm", lambda form, method: False)  # "Loading models…" first
    monkeypatch.setattr(handlers, "REPLAY_ROUND_S", 0.0)
    monkeypatch.setattr(traces, "TRACE_DIR", tmp_path / "traces")
    monkeypatch.setenv("MCTS_KBQA_RUN_CACHE", str(tmp_path / "run-cache"))


def _expect_cleared(update: dict[str, Any], message: str) -> None:
    assert set(update) >= (set(MAIN_OUTPUTS) | set(LAB_OUTPUTS)), "the first update sets every panel"
    assert _annotations(update["plot"]) == [message]
    assert update["detail"] == EMPTY_DETAIL and update["history"] == ""
    assert update["node_dd"]["choices"] == [] and update["node_dd"]["value"] is None
    assert update["table"].empty and update["votes"].empty
    assert update["truth"] == "" and update["twin_diff"] == "" and update["twin_status"] == ""
    assert update["twin_plot_a"]["visible"] is False and update["twin_plot_b"]["visible"] is False
    assert update["lab_status"] == LAB_READY and update["rank_changes"] == ""
    assert update["reward_table"].empty and update["lab_plot"] is None
    assert "Searching" in update["answer"] and update["cost"] == "" and update["trace_file"] is None


def test_a_new_run_clears_every_view_in_its_first_update_before_the_models_load(toy_runs) -> None:
    session = Session()
    _obama_on_screen(session)
    updates = handlers.run(session, _form(), None, fresh=True)
    first = next(updates)
    assert first["status"].startswith("**Loading**")
    _expect_cleared(first, LOADING)
    # The session forgot the old run at once: a click on the old tree inspects nothing.
    assert session.tree is None and session.inspected is None and session.twin is None
    rest = list(updates)
    plots = [u["plot"] for u in rest if "plot" in u]
    assert _annotations(plots[0]) == [SEARCHING], (
        "the models are loaded: Searching… until the first expansion"
    )
    assert len(session.tree) > 1 and not _annotations(plots[-1]), "the run's tree replaces the note"


def test_a_cached_example_clears_every_view_before_its_replay(toy_runs, tmp_path) -> None:
    from tests.browser_support import seed_run_cache

    cache = tmp_path / "run-cache"
    seed_run_cache(cache)
    trace = load_trace(TRACES_DIR / "fast-obama.json")
    session = Session()
    _obama_on_screen(session)
    first = next(handlers.run(session, _form(**traces.form_of(trace)), None))
    assert first["status"].startswith("**Replaying"), first["status"]
    _expect_cleared(first, REPLAYING)


class LengthScorer(ToyScorer):
    """Re-scoring without a model: a reward from the cleaned history's length, so rules move it."""

    def score(self, question, cleaned_histories, *, alpha, beta, prompt="", variant="paper"):
        self.usage.calls += 1
        return [ig_from_reward(0.2 + (len(h) * 7919 % 160) / 100, alpha, beta) for h in cleaned_histories]


def _column(frame: Any, name: str) -> dict[int, float]:
    return dict(zip(frame["id"], frame[name], strict=True))


def test_every_rescore_compares_with_the_runs_own_rewards_and_names_rules_in_words(monkeypatch) -> None:
    monkeypatch.setattr(rescoring, "get_scorer", lambda name: (LengthScorer(), "toy-length"))
    session = Session()
    _obama_on_screen(session)
    recorded = {n.id: round(n.reward, 4) for n in session.tree.nodes[1:] if n.reward is not None}
    everything = sorted(r.value for r in DEFAULT_RULES)
    no_thoughts = [r for r in everything if r != CleaningRule.DROP_THOUGHTS.value]
    no_mask = [r for r in everything if r != CleaningRule.MASK_SEARCH_NODES.value]

    first = rescoring.rescore(session, no_thoughts, PROMPT, "")
    after_first = _column(first["reward_table"], "r re-scored")
    assert _column(first["reward_table"], "r in the run") == recorded
    second = rescoring.rescore(session, no_mask, PROMPT, "")
    before_second = _column(second["reward_table"], "r in the run")
    assert before_second == recorded, "the second re-score compares with the run, not with the first"
    assert before_second != after_first, "the double moves rewards: the two columns can tell"

    status = second["lab_status"]
    assert status.startswith("**Re-scored**") and "Against the run's own rewards" in status
    off = RULE_INFO[CleaningRule.MASK_SEARCH_NODES].label
    assert f"off: {off}" in status
    for rule, info in RULE_INFO.items():
        assert info.label in status, f"{rule} not named in words"
        assert rule.value not in status, f"{rule.value}: a code name on screen"


def _step(tool: str, argument: str = "") -> Step:
    return Step("", Action(tool, argument), Observation(text="rows"))


def _answered(tree: Tree, parent: int, answer: str, reward: float) -> int:
    node = tree.add_child(parent, _step("Done"), reward=reward, terminal=True)
    node.answer = (Value(name=answer, id=f"m.{answer.lower()}"),)
    return node.id


def _tree_with_three_kinds_of_group() -> tuple[Tree, dict[str, int]]:
    """Root -> A, B, C. A's two answers are both right (every branch as good), B's both
    wrong (no branch reaches the answer), C's differ and r puts the wrong one first."""
    tree = Tree("Who directed Inception?")
    ids = {}
    for name, r in (("A", 1.5), ("B", 0.5), ("C", 0.9)):
        ids[name] = tree.add_child(0, _step("ExecuteSPARQL", name), reward=r).id
    ids["A1"] = _answered(tree, ids["A"], "Nolan", 1.2)
    _answered(tree, ids["A"], "Nolan", 0.8)
    ids["B1"] = _answered(tree, ids["B"], "Else", 1.0)
    _answered(tree, ids["B"], "Else", 0.7)
    ids["C1"] = _answered(tree, ids["C"], "Else", 1.1)
    _answered(tree, ids["C"], "Nolan", 0.5)
    return tree, ids


def test_truth_rings_only_where_the_true_values_differ_and_neutral_words_elsewhere() -> None:
    tree, ids = _tree_with_three_kinds_of_group()
    truth = overlay(tree, (GoldAnswer("Nolan", ("m.nolan",)),))
    assert truth.right == {ids["A"]}, "the root's children differ: r's top (A) is truly best"
    assert truth.wrong == {ids["C1"]}, "under C the wrong answer has the higher r"
    assert truth.nowhere == {ids["B1"]} and truth.even_groups == {ids["A1"]}
    text = summary_markdown(truth)
    assert "no branch here reaches the answer" in text and "every branch here is as good" in text
    assert "picked the best in **1 of 2**" in text
    drawn = {
        t.name: [x for x in t.x if x is not None] for t in build_figure(tree, truth=truth_marks(truth)).data
    }
    assert len(drawn["IG's top child is truly best (gold)"]) == 1
    assert len(drawn["IG's top child is not truly best (gold)"]) == 1
    assert len(drawn[NOWHERE_LABEL]) == 1 and len(drawn[EVEN_LABEL]) == 1


def test_a_group_where_every_answer_is_wrong_gets_no_green_ring() -> None:
    tree, _ = _tree_with_three_kinds_of_group()
    truth = overlay(tree, (GoldAnswer("Chicago", ("m.chicago",)),))  # nothing in the tree is right
    assert not truth.right and not truth.wrong
    assert truth.nowhere and not truth.even_groups
    text = summary_markdown(truth)
    assert "no branch here reaches the answer" in text and "shows nothing about the ranking" in text


@pytest.mark.parametrize("path,total", [(EXAMPLES_FILE, 40), (WIKIDATA_EXAMPLES_FILE, 27)])
def test_the_picker_holds_every_example_question_once_grouped_by_kind(path: Path, total: int) -> None:
    records = example_records(path)
    assert len(records) == total
    groups = example_groups(path)
    shown = [q for g in groups for q in g.questions]
    assert sorted(shown) == sorted(r["question"] for r in records), "every question, each once"
    kinds = [g.kind for g in groups]
    assert kinds == [k for k in KINDS if k in kinds], "groups in the picker's order"
    assert {"One hop", "Multi-hop", "Counting"} <= set(kinds)
    multi = next(g for g in groups if g.kind == "Multi-hop")
    assert all(r["hops"] >= 2 for r in records if r["question"] in multi.questions)
    assert example_kind({"hops": 1, "meta": {"compositionality_type": "count"}}) == "Counting"


def test_a_constant_reward_figure_says_so_on_its_colour_bar() -> None:
    trace = load_trace(TRACES_DIR / "constant-inception.json")
    session = Session()
    traces.open_trace(session, trace, None)
    assert session.settings.method == Method.CONSTANT
    title = figure(session).layout.coloraxis.colorbar.title.text
    assert "constant reward" in title and "every node r = 1" in title and "less likely" not in title
    traces.open_trace(session, load_trace(TRACES_DIR / "fast-inception.json"), None)
    assert "IG reward r" in figure(session).layout.coloraxis.colorbar.title.text


def _docs_glossary() -> list[str]:
    text = (ROOT / "docs" / "app.md").read_text(encoding="utf-8")
    section = text.split("\n## Glossary\n", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("- **")]


def test_docs_app_md_has_the_apps_glossary_word_for_word() -> None:
    assert _docs_glossary() == glossary_lines()
    for term in ("CVT", "prior term (PUCT)", "likeliest branch", "c_puct", "k", "fingerprint"):
        assert GLOSSARY[term], term
    assert all("\n" not in gloss for gloss in GLOSSARY.values()), "one line each"


def test_the_glossary_is_on_the_search_and_about_tabs() -> None:
    import app

    demo = app.build_app()
    markdown = [
        b.value
        for b in demo.blocks.values()
        if isinstance(b, gr.Markdown) and isinstance(b.value, str) and "**CVT**" in b.value
    ]
    assert len(markdown) == 2 and all(line in markdown[0] for line in glossary_lines())
    assert re.search(r"c_puct", markdown[0])
