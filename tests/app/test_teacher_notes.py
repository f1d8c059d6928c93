"""The words beside the numbers, without a browser: why the answer is not the
best branch's, what the vote weight is, what a trace load changed in the form, and how
a run's method and preset are named."""

from __future__ import annotations

from kb.actions import Action
from mcts.search.cleaning import DEFAULT_RULES
from mcts.search.loop import Search
from mcts.search.presets import preset_settings
from mcts.search.protocols import DEFAULT_IG_PROMPT
from mcts.search.settings import SearchSettings, VoteMode
from tests.toy_world import BAD, EMPTY, GOOD, ROOT_MENU, ToyPolicy, toy_world
from ui.form_notice import FormDefaults, differences, notice_handler, refresh_handler, restore_handler
from ui.forms import RunInputs, form_values
from ui.labels import run_label
from ui.session import Session
from viz.answer_rule import weight_gloss, why_not_best

LIKELY_WRONG = (
    (Action("ExecuteSPARQL", BAD), 0.85),
    (Action("ExecuteSPARQL", GOOD), 0.1),
    (Action("ExecuteSPARQL", EMPTY), 0.05),
)


class LikelyWrongPolicy(ToyPolicy):
    def menu(self, history):
        menu = super().menu(history)
        return LIKELY_WRONG if menu is ROOT_MENU else menu


def finished(settings: SearchSettings, policy=None) -> Search:
    default_policy, scorer, tools = toy_world()
    search = Search(
        "Who directed Inception?", settings, policy=policy or default_policy, scorer=scorer, tools=tools
    )
    for _ in search.run():
        pass
    return search


def test_the_likeliest_branch_rule_says_why_its_answer_is_not_the_best_branch() -> None:
    search = finished(preset_settings("small"), LikelyWrongPolicy())
    res = search.result
    assert [v.name for v in res.answer] == ["Someone Else"]
    assert res.best_by_value not in res.answer_node_ids
    note = why_not_best(res, search.tree, VoteMode.LIKELIHOOD, 0.7)
    assert note.startswith("**Why not the best branch?**")
    assert "Christopher Nolan" in note and "likeliest branch" in note
    assert f"node {res.best_by_value}" in note and "nearer 0 is likelier" in note


def test_no_note_when_the_answer_is_the_best_branchs() -> None:
    # Without the greedy descent the toy tree's likeliest answering branch is its best one (with
    # it, the toy policy's greedy and wrong branch is in the tree and likelier).
    search = finished(preset_settings("small").with_(greedy_descent=False))
    assert search.result.best_by_value in search.result.answer_node_ids
    assert why_not_best(search.result, search.tree, VoteMode.LIKELIHOOD, 0.7) == ""
    assert why_not_best(None, search.tree, VoteMode.LIKELIHOOD, 0.7) == ""


def test_the_vote_weight_gloss_says_why_a_likelihood_weight_is_negative() -> None:
    assert "negative" in weight_gloss(VoteMode.LIKELIHOOD) and "≤ 0" in weight_gloss("likelihood")
    assert "number of terminal branches" in weight_gloss(VoteMode.PLURALITY)
    assert "Answer rule:* plurality vote" in weight_gloss(VoteMode.PLURALITY)


def test_run_label_names_method_and_preset() -> None:
    assert run_label(preset_settings("small", "constant")) == "Constant reward (ablation) · small preset"
    assert run_label(preset_settings("small").with_(rounds=4)).endswith("small preset, edited")
    assert run_label(SearchSettings(vote_mode=VoteMode.VISITS)).endswith("custom settings")


DEFAULTS = FormDefaults(
    settings=preset_settings("small"), preset="small", rules=tuple(sorted(r.value for r in DEFAULT_RULES)),
    ig_prompt=DEFAULT_IG_PROMPT, policy_kind="guided",
)  # fmt: skip


def form_of(settings: SearchSettings, **over) -> RunInputs:
    values = {
        "question": "Who is the spouse of Barack Obama?", "kb_spec": "demo", "policy_kind": "guided",
        "policy_model": "", "scorer_model": "", "policy_endpoint": "", "rules": list(DEFAULTS.rules),
        "ig_prompt": DEFAULT_IG_PROMPT, **form_values(settings),
    }  # fmt: skip
    values.update(over)
    return RunInputs(**values)


def test_a_trace_that_switched_the_method_is_named_and_the_defaults_come_back() -> None:
    form = form_of(preset_settings("small", "constant").with_(rounds=6))
    changed = differences(form, DEFAULTS)
    assert changed[0].startswith("method **Constant reward (ablation)** (default Fast MCTS")
    assert "rounds 6 (default 12)" in changed
    shown = notice_handler(DEFAULTS)(Session(), form)
    assert "Loading the trace changed this form" in shown["form_note"]
    assert shown["form_note_box"]["visible"] is True
    restored = restore_handler(DEFAULTS)(Session())
    assert (restored["method"], restored["rounds"], restored["preset"]) == ("fast", 12, "small")
    assert restored["form_note_box"]["visible"] is False and "question" not in restored


def test_a_trace_with_the_default_settings_shows_no_notice() -> None:
    form = form_of(preset_settings("small"))
    assert differences(form, DEFAULTS) == []
    assert notice_handler(DEFAULTS)(Session(), form)["form_note_box"]["visible"] is False
    assert differences(form_of(preset_settings("small"), rules=[]), DEFAULTS) == [
        "cleaning rules (lab tab) none"
    ]


def test_editing_the_form_back_by_hand_hides_the_notice_and_never_shows_a_hidden_one() -> None:
    refresh = refresh_handler(DEFAULTS)
    back = refresh(Session(), form_of(preset_settings("small")))
    assert back["form_note_box"]["visible"] is False
    edited = refresh(Session(), form_of(preset_settings("small", "beam")))
    assert "Beam search by IG" in edited["form_note"] and "form_note_box" not in edited


def test_the_settings_line_says_when_the_greedy_path_comes_first() -> None:
    from ui.render import settings_line

    assert settings_line(preset_settings("small", "fast")).endswith(" · greedy path first")
    assert settings_line(preset_settings("small", "constant")).endswith(" · greedy path first")
    # Not where it does nothing (single path, vote, beam) or where it is off.
    assert "greedy path first" not in settings_line(preset_settings("small", "single"))
    assert "greedy path first" not in settings_line(preset_settings("small", "beam"))
    assert "greedy path first" not in settings_line(preset_settings("paper", "fast"))


def test_the_about_text_says_what_the_small_presets_rounds_do() -> None:
    from ui.theme import ABOUT_MD

    assert "walk the greedy path" in ABOUT_MD and "PUCT" in ABOUT_MD
