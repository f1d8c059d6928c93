"""Synthetic search trees for the visualiser's tests and benchmarks (tests/, bench/viz.py).

Builds a real `mcts.search.tree.Tree` from real `Step`s, grown the way a search grows
one (expand a frontier node into up to k children, back values up the path), with
seeded random rewards, perplexities and validities. No model, no KB: the numbers
are made up, the structure and every field the figure reads are real.
"""

from __future__ import annotations

import math
import random

from kb.actions import Action
from kb.observation import Observation, Value
from mcts.search.steps import Step
from mcts.search.tree import Tree

_TOOLS = ("SearchNodes", "SearchGraphPatterns", "ExecuteSPARQL", "SearchTypes")


def _step(rng: random.Random, depth: int, done: bool) -> tuple[Step, str]:
    if done:
        return Step("I have the answer.", Action("Done"), Observation("Done.")), "ok"
    roll = rng.random()
    if roll < 0.04:
        raw = "Action: SearchNodes(unclosed"
        return Step("hmm", None, Observation.error("could not parse the action"), raw_text=raw), "parse_error"
    tool = rng.choice(_TOOLS)
    arg = {
        "SearchNodes": f"entity {rng.randrange(1000)}",
        "SearchGraphPatterns": f'SELECT ?e WHERE {{ ?e ns:type.object.name "x{depth}" }}',
        "ExecuteSPARQL": f"SELECT ?x WHERE {{ ns:m.0{rng.randrange(99)} ns:people.person.place_of_birth ?x }}",
        "SearchTypes": "city town",
    }[tool]
    if roll < 0.10:
        return Step(
            "try a query", Action(tool, arg), Observation.error("SPARQL syntax error at line 1")
        ), "tool_error"
    if roll < 0.16:
        return Step(
            "look it up", Action(tool, arg), Observation("No results.", status="empty")
        ), "empty_result"
    obs = Observation(f'"Value {rng.randrange(500)}" | Description: a thing found at depth {depth}')
    return Step(f"Next I look at {tool} for step {depth}.", Action(tool, arg), obs), "ok"


def synthetic_tree(n_nodes: int, *, seed: int = 0, k: int = 5, max_depth: int = 10) -> Tree:
    """A tree with exactly `n_nodes` nodes (root included), grown like an MCTS run."""
    rng = random.Random(seed)
    tree = Tree(question="Where was the author of the book born?")
    frontier = [0]  # expandable nodes; each is expanded once, as in MCTS
    round_no = 0
    while len(tree) < n_nodes:
        round_no += 1
        if not frontier:  # everything terminal: reopen the shallowest non-terminal node
            frontier = [
                min(
                    (n for n in tree.nodes if not n.terminal and len(n.children) < k), key=lambda n: n.depth
                ).id
            ]
        # Prefer deeper nodes, as UCT does once values accumulate.
        weights = [1 + tree[i].depth for i in frontier]
        parent = rng.choices(frontier, weights=weights)[0]
        frontier.remove(parent)
        room = k - len(tree[parent].children)
        for _ in range(rng.randint(min(2, room), room)):
            if len(tree) >= n_nodes:
                break
            depth = tree[parent].depth + 1
            done = depth >= 2 and rng.random() < 0.12
            step, validity = _step(rng, depth, done)
            ppl_h = rng.uniform(8, 40)
            ppl_q = ppl_h * math.exp(rng.gauss(0, 0.08))
            reward = 2.0 / (1 + math.exp(-10 * math.log(ppl_h / ppl_q)))
            terminal = done or depth >= max_depth
            answer = (Value(f"Answer {rng.randrange(4)}", id=f"m.0a{rng.randrange(9)}"),) if done else ()
            node = tree.add_child(
                parent,
                step,
                round=round_no,
                reward=reward,
                ppl_history=ppl_h,
                ppl_with_question=ppl_q,
                terminal=terminal,
                answer=answer,
                validity=validity,
                raw_history="\n".join(s.render() for s in tree.steps(parent)) + "\n" + step.render(),
                cleaned_history=step.action.render() if step.action else "",
            )
            for i in tree.path(node.id):  # back up one visit with the child's reward
                tree[i].visits += 1
                tree[i].value_sum += reward
            if not terminal and validity != "parse_error":
                frontier.append(node.id)
    return tree
