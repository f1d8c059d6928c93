"""`python -m mcts study vs-greedy`: whether a search tree holds the greedy path's answer, on
hand-built trees (the study reads nothing else of a run)."""

from __future__ import annotations

from kb.actions import Action
from kb.observation import Observation, Value
from mcts.cli.main import main
from mcts.evaluation.metrics import GoldAnswer
from mcts.evaluation.studies.vs_greedy import losses, markdown
from mcts.evaluation.study import StoredRun
from mcts.search.settings import SearchSettings
from mcts.search.steps import Step
from mcts.search.tree import ROOT_ID, Tree

STEP = Step(thought="", action=Action("Done"), observation=Observation(text="Done."))
RIGHT = (Value("Alpha", "m.a"),)
WRONG = (Value("Beta", "m.b"),)
GOLD = (GoldAnswer(name="Alpha", ids=("m.a",)),)


def _chain(answer, steps: int) -> Tree:
    tree = Tree("q")
    parent = ROOT_ID
    for _ in range(steps - 1):
        parent = tree.add_child(parent, STEP).id
    tree.add_child(parent, STEP, terminal=True, answer=answer, answer_sparql="q")
    return tree


def _run(method: str, question: str, tree: Tree, f1: float) -> StoredRun:
    return StoredRun(f"dev/{method}", question, GOLD, tree, SearchSettings(), f1)


def test_a_loss_is_told_apart_by_whether_the_tree_holds_the_greedy_answer():
    missing = _chain(WRONG, 2)  # stops after two steps with another answer
    held = _chain(WRONG, 2)
    held.add_child(ROOT_ID, STEP, terminal=True, answer=RIGHT, answer_sparql="q2")
    runs = [
        _run("single", "q1", _chain(RIGHT, 4), 1.0),
        _run("fast", "q1", missing, 0.0),
        _run("single", "q2", _chain(RIGHT, 3), 1.0),
        _run("fast", "q2", held, 0.0),
        _run("single", "q3", _chain(WRONG, 2), 0.0),
        _run("fast", "q3", _chain(RIGHT, 2), 1.0),
        _run("single", "q4", _chain((), 2), 0.0),  # the greedy path answers nothing
        _run("fast", "q4", _chain(WRONG, 2), 0.0),
    ]
    lost, tally = losses(runs, "fast")
    assert (tally.won, tally.total) == (1, 4)
    assert [(x.question_id, x.greedy_depth, x.deepest_answer, x.greedy_answer_in_tree) for x in lost] == [
        ("q1", 4, 2, False),
        ("q2", 3, 2, True),
    ]
    # Over every question: the greedy path answers q1-q3; only q2's search tree holds that answer.
    assert (tally.greedy_answered, tally.held) == (3, 1)
    assert markdown(lost, tally, "fast").endswith("| 4 | 1 | 2 | 1 | 3 | 1 |")


def test_a_run_without_the_greedy_path_is_a_clear_error(tmp_path, capsys):
    assert main(["study", "vs-greedy", str(tmp_path)]) == 2
    assert "no question finished by both" in capsys.readouterr().err
