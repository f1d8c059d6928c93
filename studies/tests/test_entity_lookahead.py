"""studies/entity_lookahead.py: the first entity choice with and without a look at what each
candidate's relations could answer, on the real Freebase subset (no language model run)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb.relation_ranker import default_ranker
from kb.tools import Toolbox
from mcts.agents.policy_guided import mention_finder
from mcts.training.option_states import StateRow
from studies.entity_lookahead import first_step_spans, relation_fits, top1, with_feature
from studies.entity_lookahead import main as entity_lookahead

RELIGION_IN_AFGHANISTAN = "What religion practiced in Afghanistan has a sacred site in Jesusalem?"
TRAIN_IDS = (  # train part, two families
    "cwq:WebQTrn-1077_7bd6b37d01a372aa5af2a8d5ef53d827",
    "cwq:WebQTrn-1077_09020cbb000c86fda5910ec084690246",
    "cwq:WebQTest-538_92e606ef9c0429ad6820797ad2950730",
    "cwq:WebQTest-538_62c571c0f7c5f645e7179596b4a308d2",
)
CHOOSE_ID = "cwq:WebQTest-538_3d3daf126fc550099e1207641fc4affc"  # Taylor Swift and Garry Marshall


@pytest.fixture(scope="module")
def tools(fbqa_kb) -> Toolbox:
    return Toolbox(fbqa_kb, timeout_s=60)


def spans_and_fits(question: str, tools: Toolbox) -> tuple[list[str], list[float]]:
    mentions = mention_finder(tools.kb).find_mentions(question, 10)
    spans = first_step_spans(question, mentions, tools.flavour)
    return spans, relation_fits(question, spans, mentions, tools, default_ranker())


def run(fbqa_dir: Path, states: Path) -> int:
    return entity_lookahead(
        [
            "--kb",
            str(fbqa_dir / "kb.nt.gz"),
            "--questions",
            str(fbqa_dir / "dev.jsonl"),
            "--states",
            str(states),
        ]
    )


def test_the_entity_whose_relations_fit_the_question_scores_highest(tools: Toolbox) -> None:
    # "religion practiced in": a country's relations answer it, Jerusalem's and the class
    # "religion"'s do not (the misspelt "Jesusalem" is found as Jerusalem).
    spans, fits = spans_and_fits(RELIGION_IN_AFGHANISTAN, tools)
    assert "Afghanistan" in spans and len(spans) == len(fits) >= 2
    assert max(fits) == fits[spans.index("Afghanistan")] > 0
    assert all(0 <= f <= 1 for f in fits)


def test_the_feature_is_added_to_each_option_and_a_tie_is_no_pick() -> None:
    row = StateRow("q", 0, (-1.0, -2.0), ("search_nodes", "search_nodes"), ({"hit_rank": 1.0}, {}), 1)
    added = with_feature(row, [0.25, 0.0])
    assert added.features == ({"hit_rank": 1.0, "relation_fit": 0.25}, {})
    assert added.lm == row.lm and added.gold == 1
    assert top1([0.1, 0.3], 1) and not top1([0.3, 0.3], 1) and not top1([0.3, 0.1], 1)


def test_the_table_compares_the_ranker_with_and_without_the_feature(
    fbqa_dir: Path, tools: Toolbox, tmp_path: Path, capsys
) -> None:
    # States as `train-policy --mode options` writes them, for a few questions; the LM scores
    # are stand-ins (the gold span gets the best one on half of them), the options are real.
    records = {r["id"]: r for r in map(json.loads, (fbqa_dir / "dev.jsonl").read_text().splitlines())}
    lines = []
    for n, qid in enumerate((*TRAIN_IDS, CHOOSE_ID)):
        spans, _ = spans_and_fits(records[qid]["question"], tools)
        lm = tuple(-1.0 - i for i in range(len(spans)))
        row = StateRow(qid, 0, lm if n % 2 else lm[::-1], ("search_nodes",) * len(spans),
                       tuple({} for _ in spans), 0)  # fmt: skip
        lines.append(json.dumps({"id": qid, "missing": 0, "rows": [row.to_json()]}))
    states = tmp_path / "states.jsonl"
    states.write_text("\n".join(lines) + "\n")
    code = run(fbqa_dir, states)
    out = capsys.readouterr().out
    assert code == 0
    assert "| ranker | ranker + relation_fit |" in out
    rows = {line.split(" | ")[0].strip("| "): line for line in out.splitlines() if line.startswith("| ")}
    assert rows["train"].split(" | ")[1] == "4" and rows["choose"].split(" | ")[1] == "1"
    assert rows["train"].split(" | ")[2] == "100.0"  # the gold span is listed first in each


def test_states_without_choose_questions_are_refused(fbqa_dir: Path, tmp_path: Path, capsys) -> None:
    states = tmp_path / "states.jsonl"
    states.write_text("")
    code = run(fbqa_dir, states)
    assert code == 2 and "no train or no choose states" in capsys.readouterr().err
