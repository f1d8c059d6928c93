"""The agent's prompt in the KB's vocabulary, and demonstrations that are real tool output.

The Wikidata demonstrations are checked against the bundled Wikidata demo KB: every
action parses, and every observation line shown is one the tool really returns for that
action (the demos shorten observations, they do not invent them).
"""

from __future__ import annotations

import re

import pytest

from kb.action_parser import parse_action
from mcts.agents.policy_guided import GuidedPolicy
from mcts.agents.prompts import (
    FEWSHOT_NAMES,
    TOOL_DESCRIPTION,
    TOOL_DESCRIPTIONS,
    PromptConfig,
    load_demos,
    system_text,
)
from mcts.search.protocols import Usage

_TURN = re.compile(r"^Action: (?P<action>[^\n]*)\nObservation: (?P<obs>.*?)(?=\nThought: |\Z)", re.M | re.S)


def turns(demo: str) -> list[tuple[str, str]]:
    return [(m["action"], m["obs"]) for m in _TURN.finditer(demo)]


@pytest.mark.parametrize("name", [n for n in FEWSHOT_NAMES if n != "none"])
def test_every_demonstration_action_parses(name):
    demos = load_demos(name)
    assert len(demos) >= 2
    for demo in demos:
        assert demo.startswith("Q: ")
        steps = turns(demo)
        assert steps and steps[-1] == ("Done()", "Done")
        for action, _ in steps:
            parse_action(action)  # raises on a malformed demonstration


def test_wikidata_prompt_speaks_wikidata_and_freebase_prompt_is_unchanged():
    wikidata = system_text(PromptConfig.for_flavour("wikidata", max_demos=1))
    assert wikidata.startswith(TOOL_DESCRIPTIONS["wikidata"])
    assert "wd:Qn" in wikidata and "pq:Pn" in wikidata and "ns:m." not in wikidata
    assert "Q: Who was Marie Curie married to?" in wikidata and "Example 2" not in wikidata
    freebase = system_text(PromptConfig.for_flavour("freebase"))
    assert freebase == system_text(PromptConfig()) and freebase.startswith(TOOL_DESCRIPTION)
    assert "wd:" not in TOOL_DESCRIPTION


def test_wikidata_demonstrations_show_what_the_tools_return():
    from kb.spec import open_kb
    from kb.tools import Toolbox

    tools = Toolbox(open_kb("demo-wikidata"))
    for demo in load_demos("wikidata"):
        for action_text, shown in turns(demo):
            real = tools.run(parse_action(action_text)).text.splitlines()
            missing = [line for line in shown.splitlines() if line not in real]
            assert not missing, f"{action_text}: not in the real observation: {missing}"


class _NoModelScorer:
    usage = Usage()


def test_guided_policy_takes_the_prompt_of_its_kb_flavour():
    from kb.spec import open_kb
    from kb.tools import Toolbox

    policy = GuidedPolicy(None, Toolbox(open_kb("demo-wikidata")), scorer=_NoModelScorer())
    assert policy.prompt == PromptConfig.for_flavour("wikidata", max_demos=1)
    policy = GuidedPolicy(None, Toolbox(open_kb("demo")), scorer=_NoModelScorer())
    assert policy.prompt == PromptConfig(fewshot="freebase", max_demos=1)
