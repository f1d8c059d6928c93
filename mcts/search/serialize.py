"""Plain-JSON forms of the search's data: values, observations, steps and tree nodes.

Every `*_to_dict` has a `*_from_dict` that gives back an equal object (floats
round-trip exactly through Python's JSON; tuples come back as tuples). Used by
traces and results. Knows nothing of files, search or models.
"""

from __future__ import annotations

from typing import Any

from kb.actions import Action
from kb.observation import EntityHit, GraphPattern, Observation, Value
from mcts.search.steps import IGDetail, Step
from mcts.search.tree import Node, Tree


def value_to_dict(value: Value) -> dict[str, Any]:
    return {"name": value.name, "id": value.id, "datatype": value.datatype}


def value_from_dict(data: dict[str, Any]) -> Value:
    return Value(name=str(data["name"]), id=data.get("id"), datatype=data.get("datatype"))


def values_to_list(values: tuple[Value, ...]) -> list[dict[str, Any]]:
    return [value_to_dict(v) for v in values]


def values_from_list(data: list[dict[str, Any]]) -> tuple[Value, ...]:
    return tuple(value_from_dict(v) for v in data)


def observation_to_dict(obs: Observation) -> dict[str, Any]:
    return {
        "text": obs.text,
        "status": obs.status,
        "values": values_to_list(obs.values),
        "entities": [
            {"id": e.id, "name": e.name, "description": e.description, "score": e.score} for e in obs.entities
        ],
        "patterns": [
            {
                "direction": p.direction,
                "predicates": list(p.predicates),
                "sample": value_to_dict(p.sample),
                "score": p.score,
                "label": p.label,
            }
            for p in obs.patterns
        ],
        "types": list(obs.types),
        "sparql": obs.sparql,
        "elapsed_s": obs.elapsed_s,
        "meta": dict(obs.meta),
    }


def observation_from_dict(data: dict[str, Any]) -> Observation:
    return Observation(
        text=str(data["text"]),
        status=data.get("status", "ok"),
        values=values_from_list(data.get("values", [])),
        entities=tuple(EntityHit(**e) for e in data.get("entities", [])),
        patterns=tuple(
            GraphPattern(
                direction=p["direction"],
                predicates=tuple(p["predicates"]),
                sample=value_from_dict(p["sample"]),
                score=p.get("score", 0.0),
                label=p.get("label", ""),  # absent in traces written before Wikidata labels
            )
            for p in data.get("patterns", [])
        ),
        types=tuple(data.get("types", [])),
        sparql=data.get("sparql", ""),
        elapsed_s=data.get("elapsed_s", 0.0),
        meta={str(k): str(v) for k, v in dict(data.get("meta", {})).items()},
    )


def action_to_dict(action: Action | None) -> dict[str, Any] | None:
    if action is None:
        return None
    return {"tool": action.tool, "argument": action.argument, "semantic": action.semantic}


def action_from_dict(data: dict[str, Any] | None) -> Action | None:
    if data is None:
        return None
    return Action(tool=data["tool"], argument=data.get("argument", ""), semantic=data.get("semantic", ""))


def step_to_dict(step: Step) -> dict[str, Any]:
    return {
        "thought": step.thought,
        "action": action_to_dict(step.action),
        "observation": observation_to_dict(step.observation),
        "raw_text": step.raw_text,
    }


def step_from_dict(data: dict[str, Any]) -> Step:
    return Step(
        thought=str(data.get("thought", "")),
        action=action_from_dict(data.get("action")),
        observation=observation_from_dict(data["observation"]),
        raw_text=str(data.get("raw_text", "")),
    )


def ig_detail_to_dict(detail: IGDetail | None) -> dict[str, Any] | None:
    if detail is None:
        return None
    return {
        "history_tokens": detail.history_tokens,
        "question_nlls": list(detail.question_nlls),
        "question_pieces": list(detail.question_pieces),
        "base_question_nlls": list(detail.base_question_nlls),
    }


def ig_detail_from_dict(data: dict[str, Any] | None) -> IGDetail | None:
    if data is None:
        return None
    return IGDetail(
        history_tokens=int(data["history_tokens"]),
        question_nlls=tuple(float(x) for x in data["question_nlls"]),
        question_pieces=tuple(str(x) for x in data["question_pieces"]),
        base_question_nlls=tuple(float(x) for x in data["base_question_nlls"]),
    )


def node_to_dict(node: Node) -> dict[str, Any]:
    return {
        "id": node.id,
        "parent": node.parent,
        "depth": node.depth,
        "step": step_to_dict(node.step) if node.step is not None else None,
        "round": node.round,
        "children": list(node.children),
        "visits": node.visits,
        "value_sum": node.value_sum,
        "reward": node.reward,
        "ppl_history": node.ppl_history,
        "ppl_with_question": node.ppl_with_question,
        "decay": node.decay,
        "terminal": node.terminal,
        "answer": values_to_list(node.answer),
        "answer_sparql": node.answer_sparql,
        "validity": node.validity,
        "policy_score": node.policy_score,
        "prior": node.prior,
        "raw_history": node.raw_history,
        "cleaned_history": node.cleaned_history,
        "truncated": node.truncated,
        "simulation": [step_to_dict(s) for s in node.simulation],
        "simulated_answer": values_to_list(node.simulated_answer),
        "exhausted": node.exhausted,
        "ig_detail": ig_detail_to_dict(node.ig_detail),
    }


def node_from_dict(data: dict[str, Any]) -> Node:
    step = data.get("step")
    return Node(
        id=int(data["id"]),
        parent=int(data["parent"]),
        depth=int(data["depth"]),
        step=step_from_dict(step) if step is not None else None,
        round=int(data.get("round", 0)),
        children=[int(c) for c in data.get("children", [])],
        visits=int(data.get("visits", 0)),
        value_sum=float(data.get("value_sum", 0.0)),
        reward=data.get("reward"),
        ppl_history=data.get("ppl_history"),
        ppl_with_question=data.get("ppl_with_question"),
        decay=float(data.get("decay", 1.0)),
        terminal=bool(data.get("terminal", False)),
        answer=values_from_list(data.get("answer", [])),
        answer_sparql=str(data.get("answer_sparql", "")),
        validity=data.get("validity", "ok"),
        policy_score=data.get("policy_score"),
        prior=data.get("prior"),
        raw_history=str(data.get("raw_history", "")),
        cleaned_history=str(data.get("cleaned_history", "")),
        truncated=bool(data.get("truncated", False)),
        simulation=tuple(step_from_dict(s) for s in data.get("simulation", [])),
        simulated_answer=values_from_list(data.get("simulated_answer", [])),
        exhausted=bool(data.get("exhausted", False)),
        ig_detail=ig_detail_from_dict(data.get("ig_detail")),  # absent before trace version 3
    )


def tree_to_list(tree: Tree) -> list[dict[str, Any]]:
    return [node_to_dict(n) for n in tree.nodes]


def tree_from_list(question: str, nodes: list[dict[str, Any]]) -> Tree:
    """Rebuild a tree; checks that ids are 0..n-1 and that parent/child links agree."""
    built = [node_from_dict(d) for d in nodes]
    if not built:
        raise ValueError("a tree needs at least the root node")
    for index, node in enumerate(built):
        if node.id != index:
            raise ValueError(f"node at position {index} has id {node.id}")
        if index > 0 and not (0 <= node.parent < len(built) and index in built[node.parent].children):
            raise ValueError(f"node {index} is not listed among the children of its parent {node.parent}")
    return Tree(question=question, nodes=built)
