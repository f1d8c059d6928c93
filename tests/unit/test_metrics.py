"""Answer-set metrics on hand-made cases (values computed by hand in the comments)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kb.observation import Value
from mcts.evaluation.metrics import (
    AnswerScore,
    GoldAnswer,
    canonical_id,
    gold_from_record,
    normalise_answer,
    score_answers,
    summarise,
)

FBQA = Path(__file__).resolve().parents[3] / "shared" / "data" / "fbqa"

LORAX = GoldAnswer("The Lorax", ("m.087wc7n",))
VALENTINE = Value("Valentine's Day", "m.06_wqk4")


def test_partial_overlap_gives_hand_computed_precision_recall_f1():
    gold = [LORAX, GoldAnswer("Hannah Montana", ("m.0bx",))]
    pred = [VALENTINE, Value("The Lorax", "m.087wc7n"), Value("Other", "m.1")]
    s = score_answers(pred, gold)
    # 1 of 3 predictions correct, 1 of 2 gold found: P=1/3, R=1/2, F1=2*(1/6)/(5/6)=0.4
    assert s.precision == pytest.approx(1 / 3)
    assert s.recall == pytest.approx(0.5)
    assert s.f1 == pytest.approx(0.4)
    assert not s.hits1 and not s.exact
    assert (s.n_predicted, s.n_gold, s.n_correct) == (3, 2, 1)


def test_hits1_looks_only_at_the_first_prediction():
    assert score_answers([Value("The Lorax", "m.087wc7n"), VALENTINE], [LORAX]).hits1
    assert not score_answers([VALENTINE, Value("The Lorax", "m.087wc7n")], [LORAX]).hits1


def test_empty_prediction_scores_zero_and_empty_gold_conventions():
    assert score_answers([], [LORAX]) == AnswerScore(0.0, 0.0, 0.0, False, False, 0, 1, 0)
    assert score_answers([VALENTINE], []).f1 == 0.0
    both = score_answers([], [])
    assert both.f1 == 1.0 and both.exact


def test_duplicates_count_once():
    pred = [Value("The Lorax", "m.087wc7n"), Value("The Lorax", "m.087wc7n"), Value("the lorax", "m.087wc7n")]
    s = score_answers(pred, [LORAX, LORAX])
    assert (s.precision, s.recall, s.f1, s.exact) == (1.0, 1.0, 1.0, True)
    assert s.n_predicted == 1 and s.n_gold == 1
    # duplicate names without ids collapse too
    s2 = score_answers([Value("Paris"), Value(" paris ")], [GoldAnswer("Paris")])
    assert s2.n_predicted == 1 and s2.f1 == 1.0


def test_ids_win_over_names_when_both_sides_have_ids():
    # Same name, different entity (homonym): no match.
    assert score_answers([Value("The Lorax", "m.999")], [LORAX]).f1 == 0.0
    # Different surface name, same id: match.
    assert score_answers([Value("Lorax (film)", "ns:m.087wc7n")], [LORAX]).f1 == 1.0


def test_names_are_compared_when_one_side_has_no_id():
    assert score_answers([Value("lorax")], [LORAX]).f1 == 1.0  # prediction without id
    gold_no_id = GoldAnswer("Washington, D.C.")
    assert score_answers([Value("Washington DC", "m.0rh6k")], [gold_no_id]).f1 == 1.0
    assert score_answers([Value("Washington State", "m.081yw")], [gold_no_id]).f1 == 0.0


def test_dates_and_numbers_are_canonical():
    assert normalise_answer("1961-08-04") == "1961-08-04"
    assert normalise_answer("4 August 1961") == "1961-08-04"
    assert normalise_answer("August 4, 1961") == "1961-08-04"
    assert normalise_answer("1961-08-04T00:00:00") == "1961-08-04"
    assert normalise_answer("1961-08-04T00:00:00Z") == "1961-08-04"
    assert normalise_answer("Aug. 4th 1961") == "1961-08-04"
    assert normalise_answer("1,000") == normalise_answer("1000") == normalise_answer("1000.0") == "1000"
    assert normalise_answer("1e3") == "1000"
    assert normalise_answer("3.50") == "3.5"
    assert normalise_answer("0.0") == "0"
    gold = [GoldAnswer("1961-08-04"), GoldAnswer("1000")]
    s = score_answers([Value("4 August 1961", datatype="date"), Value("1,000.00", datatype="decimal")], gold)
    assert s.f1 == 1.0
    assert score_answers([Value("1961-08-05")], [GoldAnswer("1961-08-04")]).f1 == 0.0


def test_text_normalisation_drops_case_punctuation_articles_whitespace():
    assert normalise_answer("  The   United States of America. ") == "united states of america"
    assert normalise_answer("Valentine's Day") == normalise_answer("valentines day")
    assert normalise_answer("The") == "the"  # an answer that is only an article is kept
    assert normalise_answer("A Beautiful Mind") == normalise_answer("beautiful mind")
    assert normalise_answer("Ａｂｃ") == "abc"  # NFKC folds full-width letters


def test_canonical_id_accepts_every_freebase_spelling():
    for raw in ("m.0abc", "ns:m.0abc", "<http://rdf.freebase.com/ns/m.0abc>", "/m/0abc"):
        assert canonical_id(raw) == "m.0abc"
    assert canonical_id(None) is None
    assert canonical_id("Q42") == "Q42"


def test_gold_from_record_reads_mid_name_and_literal_gold():
    record = {
        "gold_answers": [
            {"mid": "m.087wc7n", "name": "The Lorax", "in_kb": True},
            {"mid": "m.0x", "name": None, "in_kb": False},
            {"name": "Rhode Island", "kb_mids": ["m.06btq"]},
            {"literal": "1961-08-04", "name": None},
        ]
    }
    assert gold_from_record(record) == (
        GoldAnswer("The Lorax", ("m.087wc7n",)),
        GoldAnswer(None, ("m.0x",)),
        GoldAnswer("Rhode Island", ("m.06btq",)),
        GoldAnswer("1961-08-04", ()),
    )
    # A gold entity with no name can only be matched by id.
    assert score_answers([Value("Anything")], [GoldAnswer(None, ("m.0x",))]).f1 == 0.0
    with pytest.raises(ValueError, match="not an object"):
        gold_from_record({"gold_answers": ["Paris"]})


def test_run_summary_means_and_f1_of_means():
    a = score_answers([Value("x", "m.1")], [GoldAnswer("x", ("m.1",))])  # P=R=F1=1
    b = score_answers([Value("x", "m.1"), Value("y", "m.2")], [GoldAnswer("x", ("m.1",))])  # P=.5 R=1 F1=2/3
    c = score_answers([], [GoldAnswer("x", ("m.1",))])  # 0
    run = summarise([a, b, c])
    assert run.n == 3
    assert run.precision == pytest.approx(0.5)
    assert run.recall == pytest.approx(2 / 3)
    assert run.f1 == pytest.approx((1 + 2 / 3) / 3)
    assert run.f1_of_means == pytest.approx(2 * 0.5 * (2 / 3) / (0.5 + 2 / 3))
    assert run.hits1 == pytest.approx(2 / 3)
    assert run.accuracy == pytest.approx(1 / 3)
    assert summarise([]).n == 0


def test_kb_answers_of_real_questions_reproduce_the_recorded_f1():
    """The dataset records F1(kb_answers vs gold); our metric must agree on real lines."""
    path = FBQA / "dev.jsonl"
    if not path.exists():
        pytest.skip(f"real data not found at {path}")
    checked = 0
    with path.open() as fh:
        for line in fh:
            rec = json.loads(line)
            if len({json.dumps(g, sort_keys=True) for g in rec["gold_answers"]}) < len(rec["gold_answers"]):
                continue  # the dataset counts repeated gold entries; we count them once
            pred = [Value(a["name"] or "", a["mid"]) for a in rec["kb_answers"]]
            s = score_answers(pred, gold_from_record(rec))
            assert s.f1 == pytest.approx(rec["f1_kb_vs_gold"], abs=1e-3), rec["id"]
            checked += 1
    assert checked > 100
