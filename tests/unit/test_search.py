"""The search loop on the toy world (tests/toy_world.py): every method, stopping,
cost accounting, events, seeding and bad input. The real world runs in
tests/unit/test_search_real.py."""

from __future__ import annotations

import pytest

from mcts.search.events import (
    AnswerReady,
    CandidatesProposed,
    NodeAdded,
    NodeScored,
    NodeSelected,
    RoundFinished,
    SearchStopped,
    SimulationStep,
)
from mcts.search.loop import Search, run_search
from mcts.search.serialize import tree_to_list
from mcts.search.settings import Method, SearchSettings
from tests.toy_world import (
    BAD,
    GOOD,
    QUESTION,
    GarbagePolicy,
    RaisingPolicy,
    RaisingScorer,
    RaisingTools,
    ToyPolicy,
    ToyScorer,
    ToyTools,
    toy_world,
)


def _run(
    method: Method | str = Method.FAST, *, policy=None, scorer=None, tools=None, question=QUESTION, **changes
):
    p, s, t = toy_world()
    return run_search(
        question,
        SearchSettings(method=Method(method), **changes),
        policy=policy or p,
        scorer=scorer or s,
        tools=tools or t,
    )


def test_fast_mcts_finds_the_branch_the_reward_prefers():
    search, result = _run(Method.FAST, early_stop_terminals=3)
    assert result.answer_names == ("Christopher Nolan",)
    assert result.sparql == GOOD
    assert result.stop_reason == "enough_terminals"
    # The GOOD branch gets most visits under the root.
    root_children = search.tree.root.children
    most_visited = max(root_children, key=lambda c: search.tree[c].visits)
    assert search.tree[most_visited].step.action.argument == GOOD


def test_first_round_expands_the_root_into_k_distinct_children_scored_in_one_batch():
    p, s, t = toy_world()
    search, _ = run_search(QUESTION, SearchSettings(rounds=1, k=5), policy=p, scorer=s, tools=t)
    children = search.tree.root.children
    assert len(children) == 4  # the toy menu has 4 distinct actions: duplicates merged
    assert len(s.batches) == 1 and len(s.batches[0]) == 4
    rewards = sorted(search.tree[c].reward for c in children)
    assert rewards == [0.3, 0.6, 1.0, 1.8]
    assert search.tree.root.visits == 4
    assert search.tree.root.value_sum == pytest.approx(3.7)


def test_single_path_is_greedy_and_makes_no_scorer_calls():
    search, result = _run(Method.SINGLE)
    assert result.answer_names == ("Someone Else",)  # the greedy first choice is BAD
    assert result.sparql == BAD
    assert result.cost.ig_forward_passes == 0 and result.cost.score_batches == 0
    assert result.cost.policy_calls == 2  # ExecuteSPARQL, then Done
    assert [search.tree[i].depth for i in range(len(search.tree))] == [0, 1, 2]
    assert result.stop_reason == "budget"


def test_vote_runs_independent_sampled_paths_and_votes():
    search, result = _run(Method.VOTE)
    assert result.rounds == 5
    assert len(search.tree.root.children) == 5  # one branch per path, even for equal actions
    assert sum(r.count for r in result.votes) == 5
    assert result.cost.ig_forward_passes == 0
    assert result.votes[0].count >= result.votes[-1].count


def test_vote_runs_all_its_paths_even_when_early_stop_is_lower():
    p, s, t = toy_world()
    settings = SearchSettings(method=Method.VOTE, vote_samples=5, early_stop_terminals=2)
    search, result = run_search(QUESTION, settings, policy=p, scorer=s, tools=t)
    assert result.rounds == 5 and len(search.tree.root.children) == 5
    assert sum(r.count for r in result.votes) == 5
    assert result.stop_reason == "budget"


def test_vote_can_score_paths_for_display_when_asked():
    p, s, t = toy_world()
    search, result = run_search(
        QUESTION, SearchSettings(method=Method.VOTE), policy=p, scorer=s, tools=t, score_baselines=True
    )
    assert result.cost.ig_forward_passes == len(search.tree) - 1
    assert all(n.reward is not None for n in search.tree.nodes[1:])


def test_beam_keeps_top_b_non_terminal_children_per_level():
    search, result = _run(Method.BEAM, beam_width=2, rounds=2, early_stop_terminals=99)
    tree = search.tree
    level1 = tree.root.children
    expanded = [c for c in level1 if tree[c].children]
    best_two = sorted(level1, key=lambda c: -tree[c].reward)[:2]
    assert sorted(expanded) == sorted(best_two)
    assert result.rounds == 2
    assert result.cost.score_batches == 2  # one batch per level


def test_classic_simulates_each_new_non_terminal_child_and_scores_the_end_state():
    search, result = _run(Method.CLASSIC, rounds=2)
    tree = search.tree
    for node in tree.nodes[1:]:
        if node.terminal:
            assert node.simulation == ()
        else:
            assert node.simulation, f"node {node.id} was not simulated"
            last = node.simulation[-1]
            assert last.is_done or node.depth + len(node.simulation) == search.settings.max_depth
    sim_events = [e for e in search.events_log if isinstance(e, SimulationStep)]
    assert len(sim_events) == sum(len(n.simulation) for n in tree.nodes)
    # Every policy call is followed by an event: proposals plus simulation steps.
    proposals = [e for e in search.events_log if isinstance(e, CandidatesProposed)]
    assert result.cost.policy_calls == len(proposals) + len(sim_events)


def test_classic_makes_at_least_twice_the_policy_calls_of_fast():
    _, fast = _run(Method.FAST, rounds=4, early_stop_terminals=99)
    _, classic = _run(Method.CLASSIC, rounds=4, early_stop_terminals=99)
    assert classic.cost.policy_calls >= 2 * fast.cost.policy_calls


def test_constant_reward_ignores_the_scorer_value():
    search, result = _run(Method.CONSTANT, constant_reward=1.0, rounds=3)
    assert {n.reward for n in search.tree.nodes[1:]} == {1.0}
    assert result.nodes > 1


def test_depth_limit_makes_terminals_and_exhausts_the_tree():
    search, result = _run(Method.FAST, max_depth=1, early_stop_terminals=99)
    assert all(search.tree[c].terminal for c in search.tree.root.children)
    assert result.stop_reason == "exhausted"
    assert result.rounds == 1


def test_early_stop_after_enough_answering_terminals():
    search, result = _run(Method.FAST, early_stop_terminals=1)
    assert result.stop_reason == "enough_terminals"
    assert sum(1 for n in search.tree.nodes if n.terminal and n.answer) >= 1


def test_budget_stop_after_the_given_rounds():
    _, result = _run(Method.FAST, rounds=2, early_stop_terminals=99)
    assert (result.stop_reason, result.rounds) == ("budget", 2)


@pytest.mark.parametrize("method", list(Method))
def test_same_seed_gives_the_same_tree(method):
    a, ra = _run(method, seed=7, rounds=4)
    b, rb = _run(method, seed=7, rounds=4)
    assert tree_to_list(a.tree) == tree_to_list(b.tree)
    assert ra.answer == rb.answer


def test_different_seeds_can_give_different_trees():
    trees = {str(tree_to_list(_run(Method.VOTE, seed=s)[0].tree)) for s in range(4)}
    assert len(trees) > 1


def test_nodes_carry_history_validity_and_answers():
    search, _ = _run(Method.FAST, rounds=3)
    for node in search.tree.nodes[1:]:
        assert node.raw_history.startswith("Thought: ")
        assert "Thought:" not in node.cleaned_history  # default cleaning drops thoughts
        assert node.ppl_history == 20.0 and node.ppl_with_question is not None
        if node.step.action.tool == "ExecuteSPARQL" and not node.step.observation.values:
            assert node.validity == "empty_result"
        if node.terminal and node.answer:
            assert node.answer_sparql in (GOOD, BAD)


def test_events_cover_every_model_call_and_end_with_answer_and_stop():
    search, result = _run(Method.FAST, rounds=3)
    log = search.events_log
    assert isinstance(log[-1], SearchStopped) and isinstance(log[-2], AnswerReady)
    assert sum(isinstance(e, CandidatesProposed) for e in log) == result.cost.policy_calls
    assert sum(isinstance(e, NodeScored) for e in log) == len(search.tree) - 1
    assert sum(isinstance(e, NodeAdded) for e in log) == len(search.tree) - 1
    rounds = [e for e in log if isinstance(e, RoundFinished)]
    assert [e.round for e in rounds] == [1, 2, 3]
    assert rounds[-1].nodes == len(search.tree)


def test_cancel_lands_within_one_model_call():
    p, s, t = toy_world()
    search = Search(QUESTION, SearchSettings(), policy=p, scorer=s, tools=t)
    events = []
    for event in search.run():
        events.append(event)
        if isinstance(event, CandidatesProposed):
            search.cancel()
    assert p.usage.calls == 1
    assert search.result.stop_reason == "cancelled"
    assert isinstance(events[-1], SearchStopped) and events[-1].reason == "cancelled"


def test_closing_the_generator_still_leaves_a_result():
    p, s, t = toy_world()
    search = Search(QUESTION, SearchSettings(), policy=p, scorer=s, tools=t)
    gen = search.run()
    next(gen)
    gen.close()
    assert search.result is not None and search.result.stop_reason == "cancelled"


def test_run_can_only_be_called_once():
    p, s, t = toy_world()
    search = Search(QUESTION, SearchSettings(rounds=1), policy=p, scorer=s, tools=t)
    list(search.run())
    with pytest.raises(RuntimeError):
        list(search.run())


@pytest.mark.parametrize(
    ("question", "fragment"),
    [("", "empty"), ("   \n ", "empty"), ("x" * 5_000, "5,000 characters")],
)
def test_unusable_question_stops_at_once_with_a_clear_reason(question, fragment):
    p, s, t = toy_world()
    search, result = run_search(question, SearchSettings(), policy=p, scorer=s, tools=t)
    assert result.stop_reason == "invalid_question"
    assert fragment in result.detail and "\n" not in result.detail
    assert p.usage.calls == 0 and t.calls == []
    assert result.answer == () and len(search.tree) == 1


def test_garbage_policy_ends_with_parse_error_nodes_and_no_answer():
    search, result = _run(Method.FAST, policy=GarbagePolicy(), max_depth=3, rounds=5)
    assert result.stop_reason in ("budget", "exhausted")
    assert result.answer == ()
    assert {n.validity for n in search.tree.nodes[1:]} == {"parse_error"}
    assert all(n.step.observation.is_error for n in search.tree.nodes[1:])


def test_policy_that_raises_ends_the_run_with_an_error_reason_not_a_traceback():
    search, result = _run(Method.FAST, policy=RaisingPolicy())
    assert result.stop_reason == "error"
    assert result.detail.startswith("policy failed at node 0: CUDA out of memory while generating")
    assert isinstance(search.events_log[-1], SearchStopped)


def test_scorer_that_raises_ends_the_run_with_an_error_reason():
    _, result = _run(Method.FAST, scorer=RaisingScorer())
    assert (result.stop_reason, result.detail) == ("error", "scorer failed: scorer exploded")


@pytest.mark.parametrize("tools", [ToyTools(timeout=True), RaisingTools()])
def test_tool_failures_become_error_observations(tools):
    search, result = _run(Method.FAST, tools=tools, rounds=2)
    sparql_nodes = [n for n in search.tree.nodes[1:] if n.step.action.tool == "ExecuteSPARQL"]
    assert sparql_nodes and all(n.validity == "tool_error" for n in sparql_nodes)
    assert all(n.step.observation.text.startswith("Error: ") for n in sparql_nodes)
    assert result.stop_reason == "budget"


def test_cost_counts_tool_calls_by_name_and_model_deltas():
    policy, scorer, tools = ToyPolicy(), ToyScorer(), ToyTools()
    policy.usage.calls = 100  # a shared model's earlier calls must not count
    search, result = run_search(QUESTION, SearchSettings(rounds=2), policy=policy, scorer=scorer, tools=tools)
    cost = result.cost
    assert cost.policy_calls == 2 and cost.propose_calls == 2
    assert cost.ig_forward_passes == 2 == cost.score_batches
    assert sum(cost.tool_calls.values()) == len(tools.calls) == len(search.tree) - 1
    assert cost.tokens > 0 and cost.wall_s > 0 and cost.model_s == pytest.approx(0.002)
    assert search.cost() == cost  # a finished run's snapshot no longer moves


class _SilentPolicy(ToyPolicy):
    """Nothing to propose: what the guided policy does when no entity of the question is in the KB."""

    def propose(self, question, history, k, *, rng, greedy=False):
        return []


@pytest.mark.parametrize("method", list(Method))
def test_a_policy_with_nothing_to_propose_ends_the_run_as_exhausted(method):
    search, result = _run(method, policy=_SilentPolicy())
    assert result.answer == () and len(search.tree) == 1
    assert (result.stop_reason, result.detail) == ("exhausted", "the policy proposed no step at the root")


@pytest.mark.parametrize("seed", range(6))
def test_greedy_first_keeps_the_policys_top_candidate_among_the_k(seed):
    search, _ = _run(Method.FAST, rounds=1, k=2, seed=seed, greedy_first=True)
    root_actions = [search.tree[c].step.action.argument for c in search.tree.root.children]
    assert BAD in root_actions  # the toy policy's top-weighted root action (0.4)
    assert len(root_actions) == 2
    assert search.cost().policy_calls == 2  # the sampled k and one greedy call


def _greedy_actions(search: Search) -> list[str]:
    return [search.tree[i].step.action.render() for i in search.tree.path(len(search.tree) - 1)[1:]]


@pytest.mark.parametrize("method", [Method.FAST, Method.CONSTANT, Method.CLASSIC])
@pytest.mark.parametrize("seed", range(4))
def test_greedy_descent_puts_the_greedy_path_in_the_tree_before_any_early_stop(method, seed):
    single, single_result = _run(Method.SINGLE)
    greedy_actions = _greedy_actions(single)
    search, result = _run(method, seed=seed, k=2, early_stop_terminals=1, greedy_descent=True)
    # The greedy path's node chain: root's first child, its first child, ... to a terminal.
    node, actions = 0, []
    while search.tree[node].children:
        node = search.tree[node].children[0]
        actions.append(search.tree[node].step.action.render())
    assert actions == greedy_actions
    assert search.tree[node].terminal and search.tree[node].answer == single.tree[len(single.tree) - 1].answer
    assert result.stop_reason == "enough_terminals"
    assert single_result.answer_names == ("Someone Else",)


def test_without_greedy_descent_an_early_stop_can_leave_the_greedy_answer_out():
    # The control for the test above: the same budget finds a tree without the greedy answer.
    lacking = []
    for seed in range(8):
        search, _ = _run(Method.FAST, seed=seed, k=2, early_stop_terminals=1)
        if not any(n.terminal and n.answer and n.answer[0].name == "Someone Else" for n in search.tree.nodes):
            lacking.append(seed)
    assert lacking


def test_greedy_descent_rounds_expand_the_greedy_nodes_in_turn_then_select_as_usual():
    search, _ = _run(Method.FAST, seed=0, k=2, rounds=4, early_stop_terminals=9, greedy_descent=True)
    selected = [e.node_id for e in search.events_log if isinstance(e, NodeSelected)]
    root_first = search.tree.root.children[0]
    assert selected[:2] == [0, root_first]  # root, then the greedy child (ExecuteSPARQL BAD)
    assert search.tree[search.tree[root_first].children[0]].step.action.tool == "Done"
    assert len(selected) == 4  # the descent ended at Done; later rounds chose by UCT
    assert search.cost().policy_calls == 4 + 2  # one greedy call per descent round


def test_the_result_names_its_answer_rule_and_tie_break():
    _, result = _run(Method.FAST, rounds=6, vote_mode="likelihood")
    assert result.vote_mode == "likelihood" and isinstance(result.tie_break, str)
    assert result.answer  # the toy world's likeliest answering branch
