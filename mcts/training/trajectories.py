"""Trajectories a good agent would take, built from each question's gold query on the real tools.

For a question with a gold relation `path` (and `kb_sparql`), the trajectory is

    SearchNodes(<topic name>)                       -> the topic entity among the hits
    SearchGraphPatterns(<its query>, semantic=...)  -> the path's first relation among the patterns
    ExecuteSPARQL(<one hop along it>)
    [SearchGraphPatterns(<the answers>, semantic=...) -> the second relation
     ExecuteSPARQL(<the query extended by it>)]     (two-hop paths)
    Done()

Every action is run by the real `kb.tools.Toolbox`, so every observation is what an agent
would see; the queries are written by `mcts.agents.query_builder` exactly as the guided
policy writes them, and the thoughts follow the guided policy's templates. A trajectory
is kept only if each needed entity and relation is in what the tools showed (an agent
cannot pick what it was not shown) and the final query returns the gold query's answers.

Besides the steps, each record keeps the relation choices met on the way (the ranking
phrase, every relation text the tool ranked, and the gold one): the training data of
the relation retriever (`mcts.training.retriever`), kept even when the trajectory fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kb.actions import Action
from kb.observation import GraphPattern, Value
from mcts.agents.guided_options import relation_phrase, words
from mcts.agents.prompts import PromptConfig, messages
from mcts.agents.query_builder import Query, answer_pattern_query, extend, one_hop
from mcts.search.steps import Step


@dataclass(frozen=True)
class RelationChoice:
    """One relation choice: the phrase the tool ranked with, all relation texts around the
    anchor (as the ranker saw them) and the gold one."""

    semantic: str
    candidates: tuple[str, ...]
    gold: str


@dataclass
class Trajectory:
    id: str
    question: str
    hops: int
    steps: list[Step] = field(default_factory=list)
    choices: list[RelationChoice] = field(default_factory=list)
    valid: bool = False
    reason: str = ""  # why it was not kept ("" when valid)

    def to_record(self, prompt: PromptConfig) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "hops": self.hops,
            "valid": self.valid,
            "reason": self.reason,
            "steps": [_step_record(s) for s in self.steps],
            "choices": [asdict(c) for c in self.choices],
            # The ReAct text the policy prompt uses: chat messages, and the same as plain text.
            "messages": messages(self.question, self.steps, prompt) if self.valid else [],
            "text": react_text(self.question, self.steps) if self.valid else "",
        }


def react_text(question: str, steps: Sequence[Step]) -> str:
    return "\n".join([f"Q: {question}", *(s.render() for s in steps)]) + "\n"


def _step_record(step: Step) -> dict[str, Any]:
    action = step.action
    return {
        "thought": step.thought,
        "action": {"tool": action.tool, "argument": action.argument, "semantic": action.semantic}
        if action is not None
        else None,
        "observation": step.observation.text,
    }


def path_patterns(path: Sequence[str]) -> list[tuple[str, tuple[str, ...]]]:
    """`dev.jsonl` path hops as (direction, predicates) of a `GraphPattern` from the anchor.

    `r` -> out (r,); `^r` -> in (r,); `p1 -> p2` -> out (p1, p2); `^p2 -> ^p1` -> in (p1, p2)
    (an incoming CVT pattern lists its predicates in edge order, head first).
    """
    out: list[tuple[str, tuple[str, ...]]] = []
    for hop in path:
        parts = [p.strip() for p in hop.split("->")]
        if all(p.startswith("^") for p in parts):
            out.append(("in", tuple(p[1:] for p in reversed(parts))))
        elif any(p.startswith("^") for p in parts):
            raise ValueError(f"mixed directions in one hop: {hop!r}")
        else:
            out.append(("out", tuple(parts)))
    return out


class RecordingRanker:
    """Delegates to a ranker and remembers the last texts it ranked (all candidates)."""

    def __init__(self, base: Any) -> None:
        self.base = base
        self.last: tuple[str, ...] = ()

    def rank(self, semantic: str, relation_texts: Sequence[str]) -> list[float]:
        self.last = tuple(relation_texts)
        return self.base.rank(semantic, relation_texts)


def _names(values: Sequence[Value], limit: int = 3) -> str:
    shown = ", ".join(v.name for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")


def build_trajectory(record: dict[str, Any], tools: Any, recorder: RecordingRanker) -> Trajectory:
    """The trajectory of one question (see the module docstring); `tools` ranks with `recorder`."""
    question = str(record["question"])
    path = list(record.get("path") or [])
    traj = Trajectory(id=str(record["id"]), question=question, hops=len(path))
    topics = record.get("topic_entities") or []
    if not path or not topics or not record.get("kb_sparql"):
        traj.reason = "no gold query"
        return traj
    try:
        wanted = path_patterns(path)
    except ValueError as exc:
        traj.reason = str(exc)
        return traj
    if len(wanted) > 2:
        traj.reason = "more than two hops"
        return traj
    flavour = tools.flavour
    topic_id, topic_name = str(topics[0]["mid"]), str(topics[0]["name"])
    semantic = relation_phrase(question, [str(t["name"]) for t in topics])

    def run(thought: str, action: Action) -> Step:
        step = Step(thought=thought, action=action, observation=tools.run(action))
        traj.steps.append(step)
        return step

    found = run(f'Find the entity "{topic_name}" in the knowledge base.', Action("SearchNodes", topic_name))
    hits = {h.id: h for h in found.observation.entities}
    if topic_id not in hits:
        traj.reason = "topic entity not among the SearchNodes hits"
        return traj
    hit = hits[topic_id]
    about = f" ({hit.description[:60]})" if hit.description else ""
    entity_query = flavour.entity_queries(list(found.observation.entities))[topic_id]
    anchor_text = hit.name
    query: Query | None = None
    for hop, (direction, predicates) in enumerate(wanted):
        if hop == 0:
            explore = Action("SearchGraphPatterns", entity_query, semantic=semantic)
            thought = f"Look at the relations of {hit.name}{about} that fit the question."
        else:
            assert query is not None
            explore = Action("SearchGraphPatterns", answer_pattern_query(query), semantic=semantic)
            thought = f"Look at the relations of {anchor_text} to go one step further."
        seen = run(thought, explore)
        gold_text = " -> ".join(predicates)
        traj.choices.append(RelationChoice(semantic, recorder.last, gold_text))
        pattern = _find(seen.observation.patterns, direction, predicates)
        if pattern is None:
            traj.reason = f"hop {hop + 1} relation not among the patterns shown"
            return traj
        ref = flavour.short(flavour.entity_iri(topic_id))
        query = one_hop(ref, pattern) if query is None else extend(query, pattern)
        executed = run(
            f"Follow {words(pattern)} from {anchor_text}.", Action("ExecuteSPARQL", query.render())
        )
        if not executed.observation.values:
            traj.reason = f"hop {hop + 1} query returned nothing"
            return traj
        anchor_text = _names(executed.observation.values)
    final = traj.steps[-1].observation.values
    run(f"The answer is {_names(final, 5)}.", Action("Done"))
    gold = _gold_ids(record, tools)
    got = {v.id for v in final if v.id}
    if got != gold:
        traj.reason = "final query does not return the gold query's answers"
        return traj
    traj.valid = True
    return traj


def _find(
    patterns: Iterable[GraphPattern], direction: str, predicates: tuple[str, ...]
) -> GraphPattern | None:
    for p in patterns:
        if p.direction == direction and tuple(p.predicates) == predicates:
            return p
    return None


def _gold_ids(record: dict[str, Any], tools: Any) -> set[str]:
    """The answers of the gold query on this KB (`kb_sparql`, run by the tool)."""
    obs = tools.run(Action("ExecuteSPARQL", str(record["kb_sparql"])))
    return {v.id for v in obs.values if v.id}


@dataclass(frozen=True)
class BuildReport:
    total: int
    valid: int
    reasons: dict[str, int]

    def lines(self) -> str:
        rows = [f"{self.valid} of {self.total} questions yield a valid trajectory"]
        rows += [f"  {n:4d}  {why}" for why, n in sorted(self.reasons.items(), key=lambda kv: -kv[1])]
        return "\n".join(rows)


def build_all(
    records: Sequence[dict[str, Any]],
    kb: Any,
    out: str | Path,
    *,
    ranker: Any = None,
    progress: Callable[[Iterable[Any]], Iterable[Any]] = lambda it: it,
) -> BuildReport:
    """Build, write one JSONL line per question (valid or not, with its reason), report counts."""
    from kb.relation_ranker import default_ranker
    from kb.tools import Toolbox

    recorder = RecordingRanker(ranker or default_ranker())
    tools = Toolbox(kb, ranker=recorder)
    prompt = PromptConfig.for_flavour(tools.flavour.name, max_demos=0)
    reasons: dict[str, int] = {}
    valid = 0
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    with Path(out).open("w", encoding="utf-8") as fh:
        for record in progress(records):
            traj = build_trajectory(record, tools, recorder)
            valid += traj.valid
            if not traj.valid:
                reasons[traj.reason] = reasons.get(traj.reason, 0) + 1
            fh.write(json.dumps(traj.to_record(prompt), ensure_ascii=False) + "\n")
    return BuildReport(total=len(records), valid=valid, reasons=reasons)


def read_trajectories(path: str | Path, *, valid_only: bool = True) -> list[dict[str, Any]]:
    with Path(path).open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return [r for r in rows if r["valid"] or not valid_only]
