"""Text panels: node table, dropdown, inspector, history diff, answer, votes, cost."""

from __future__ import annotations

import math
from dataclasses import replace

from kb.actions import Action
from kb.observation import Observation, Value
from mcts.search.cleaning import DEFAULT_RULES, CleaningRule
from mcts.search.cost import CostSummary
from mcts.search.steps import Step
from mcts.search.tree import Tree
from mcts.search.voting import SearchResult, VoteRow
from viz.panels import (
    NODE_TABLE_HEADERS,
    answer_markdown,
    cost_markdown,
    history_html,
    node_choices,
    node_detail_markdown,
    node_table,
    uct_rank,
    vote_rows,
)


def _tree() -> Tree:
    tree = Tree("Who wrote Dune?")
    tree.root.visits, tree.root.value_sum = 3, 4.0
    a = tree.add_child(
        0,
        Step("The question asks who wrote Dune", Action("SearchNodes", "Dune"), Observation('"Dune" | Description: novel')),
        reward=1.6, ppl_history=20.0, ppl_with_question=16.0, visits=2, value_sum=3.0,
    )  # fmt: skip
    tree.add_child(
        0,
        Step("other", Action("SearchTypes", "book"), Observation("book.book")),
        reward=0.4,
        visits=1,
        value_sum=0.4,
    )
    tree.add_child(
        a.id,
        Step("run it", Action("ExecuteSPARQL", "SELECT ?x WHERE { ns:m.01 ns:book.written_work.author ?x }"), Observation("Frank Herbert")),
        terminal=True, answer=(Value("Frank Herbert", "m.02"),), answer_sparql="SELECT ?x ...", reward=1.9, visits=1, value_sum=1.9,
    )  # fmt: skip
    return tree


def test_node_table_has_one_row_per_node_and_json_safe_cells() -> None:
    tree = _tree()
    tree.add_child(0, Step("x", Action("Done"), Observation("Done.")))  # unvisited: UCT inf -> None
    rows = node_table(tree, c=1.0)
    assert len(rows) == len(tree) and all(len(r) == len(NODE_TABLE_HEADERS) for r in rows)
    assert rows[1][4] == 'Nodes "Dune"' and rows[1][5] == 'SearchNodes("Dune")' and rows[1][9] == 1.6
    assert rows[-1][-1] is None
    assert [v for _, v in node_choices(tree)] == list(range(len(tree)))


def test_uct_rank_orders_siblings_like_selection() -> None:
    tree = _tree()
    # node 1: 1.5 + sqrt(ln3/2) = 2.24; node 2: 0.4 + sqrt(ln3/1) = 1.45
    assert uct_rank(tree, 1, c=1.0) == (1, 2)
    assert uct_rank(tree, 2, c=1.0) == (2, 2)
    assert uct_rank(tree, 2, c=5.0) == (1, 2)  # more exploration favours the less visited


def test_node_detail_shows_step_ppls_ratio_reward_and_rank() -> None:
    text = node_detail_markdown(_tree(), 1, c=1.0)
    for part in (
        "The question asks who wrote Dune",
        'SearchNodes("Dune")',
        "Description: novel",
        "20.00",
        "16.00",
        "1.250",
        "1.600",
        "1 of 2",
    ):
        assert part in text, part
    assert "more* likely" in text
    assert "Frank Herbert" in node_detail_markdown(_tree(), 3, c=1.0)


def test_history_html_marks_what_each_rule_removed() -> None:
    tree = _tree()
    on = history_html(tree, 3, DEFAULT_RULES)
    assert "removed by: Drop thoughts" in on and "removed by: Mask SearchNodes arguments" in on
    assert "removed by: Last observation only" in on
    off = history_html(tree, 3, DEFAULT_RULES - {CleaningRule.MASK_SEARCH_NODES})
    assert "Mask SearchNodes arguments" not in off
    assert "&quot;Dune&quot;" in off.split("Cleaned history")[1]  # the name is kept now


def test_answer_votes_and_cost_render_a_result() -> None:
    cost = CostSummary(
        policy_calls=4,
        ig_forward_passes=3,
        tokens=1234,
        tool_calls={"ExecuteSPARQL": 2, "SearchNodes": 1},
        wall_s=2.5,
    )
    result = SearchResult(
        question="Who wrote Dune?", answer=(Value("Frank Herbert", "m.02"),), sparql="SELECT ?x WHERE {}",
        answer_node_ids=(3,), votes=(VoteRow(("Frank Herbert",), 1, 1.0, (3,)),), best_by_value=3, best_by_ig=3,
        stop_reason="budget", detail="", rounds=2, nodes=4, cost=cost, terminals=1,
    )  # fmt: skip
    text = answer_markdown(result, _tree())
    assert "Answer: Frank Herbert" in text and "SELECT ?x" in text and "node 3" in text and "budget" in text
    assert vote_rows(result) == [["Frank Herbert", 1, 1.0, "3"]]
    table = cost_markdown(cost)
    assert "| policy generation calls | 4 |" in table and "| IG forward passes | 3 |" in table
    assert "| tokens | 1,234 |" in table and "3 (ExecuteSPARQL 2, SearchNodes 1)" in table
    assert answer_markdown(None) == "*No answer yet.*"
    assert "raise Rounds" not in text  # a branch finished
    starved = replace(result, answer=(), sparql="", answer_node_ids=(), votes=(), terminals=0)
    starved_text = answer_markdown(starved, _tree())
    assert "(no branch produced an answer)" in starved_text and "raise Rounds" in starved_text


def test_the_answer_panel_says_how_a_vote_tie_was_broken() -> None:
    result = SearchResult(
        question="q", answer=(Value("A", "m.a"),), sparql="", answer_node_ids=(3,),
        votes=(VoteRow(("A",), 1, 1.0, (3,)), VoteRow(("B",), 1, 1.0, (2,))), best_by_value=3, best_by_ig=3,
        stop_reason="budget", detail="", rounds=2, nodes=4, cost=CostSummary(), terminals=2,
        tie_break="2 answer sets tied on votes; broken by the higher W/N",
    )  # fmt: skip
    assert "**Tie:** 2 answer sets tied on votes; broken by the higher W/N." in answer_markdown(
        result, _tree()
    )
    assert "Tie:" not in answer_markdown(replace(result, tie_break=""), _tree())


def test_the_inspector_shows_the_puct_prior_and_its_term_when_present() -> None:
    tree = _tree()
    assert "prior P" not in node_detail_markdown(tree, 1, c=1.0)
    tree[1].prior, tree[2].prior = 0.75, 0.25
    text = node_detail_markdown(tree, 1, c=1.0, c_puct=1.0)
    assert "prior P | **0.750**" in text
    assert f"prior term (c_puct 1) | **{tree.prior_term(1, 1.0):.3f}**" in text


def test_the_inspector_adds_the_ig_lens_when_given_the_run_settings() -> None:
    from mcts.search.settings import SearchSettings
    from mcts.search.steps import IGDetail
    from viz.ig_lens import NO_DETAIL

    tree = _tree()
    assert "IG lens" not in node_detail_markdown(tree, 1, c=1.0)
    text = node_detail_markdown(tree, 1, c=1.0, settings=SearchSettings())
    assert NO_DETAIL in text  # no IG detail stored: one line, not the sections
    # log PPL(H') = log 20 and log PPL(H', Q) = log 16 with n = 8, m = 2: q = (10 log 16 - 8 log 20) / 2.
    q = (10 * math.log(16.0) - 8 * math.log(20.0)) / 2
    tree[1].ig_detail = IGDetail(8, (q, q), ("Who", " wrote Dune?"), (2.0, 2.0))
    text = node_detail_markdown(tree, 1, c=1.0, settings=SearchSettings())
    assert "Reward anatomy" in text and "Selection among its siblings" in text and NO_DETAIL not in text
    assert f"| x paper | {math.log(20 / 16):.4f}" in text
