"""The IG lens: why a node got its reward, read from what the tree stores (no model).

With n target tokens of history+prompt at mean NLL a = log PPL(H') and m question tokens
at mean NLL q after them (`steps.IGDetail`), the paper's reward is r = alpha * sigmoid(beta * x),
x = log PPL(H') - log PPL(H', Q) = m / (n + m) * (a - q): it rises when the history's own
text is hard to predict (a) as well as when the question becomes easy (q). The question
variants read x = q0 - q (q0: the question's mean NLL after the prompt alone), per token
clipped to +-1 nat for question_clipped (`mcts.search.ig_formula`).

Four views of one node:
- `anatomy`: a, q, q0, the weight m/(n+m), x and r of every variant, and, beside its
  siblings, which term separated it from them (`separation`);
- the question lit by the history and the restatements found (`viz.ig_words`);
- `selection_rows`: per sibling, W/N and the exploration term of the selection rule
  (`Tree.uct`, `Tree.prior_term`, `Tree.puct`), as the search would compare them now.
`lens_markdown` puts them together for the inspector. A node without an IG detail (an
older trace, the constant reward) gets one line saying so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mcts.search.ig_formula import NodeNLL, ig_input, reward_from_input
from mcts.search.selection_replay import SiblingScore, rule_choice, sibling_scores
from mcts.search.settings import IGVariant, SearchSettings
from mcts.search.steps import IGDetail
from mcts.search.tree import Node, Tree
from viz.escape import md, num
from viz.ig_words import heat_markdown, question_words, restatement_lines, restatements
from viz.selection_terms import rule_formula

NO_DETAIL = (
    "*IG lens: this node's trace does not record what its reward was computed from "
    "(a trace written before version 3, the constant reward, or another scorer).*"
)


@dataclass(frozen=True)
class Anatomy:
    """The terms of one node's IG reward (nats; docs/method.md#reading-a-reward)."""

    n: int  # target tokens of history + prompt
    m: int  # question tokens
    a: float  # mean NLL of history + prompt = log PPL(H')
    q: float  # mean NLL of the question after H' + prompt
    q0: float  # mean NLL of the question after the prompt alone
    rewards: tuple[tuple[IGVariant, float, float], ...]  # (variant, x, r) for every variant

    @property
    def weight(self) -> float:
        """m / (n + m): the question's share of the scored tokens."""
        return self.m / (self.n + self.m)

    def x(self, variant: IGVariant = IGVariant.PAPER) -> float:
        return next(x for v, x, _ in self.rewards if v == variant)

    def r(self, variant: IGVariant = IGVariant.PAPER) -> float:
        return next(r for v, _, r in self.rewards if v == variant)


def anatomy(node: Node, alpha: float, beta: float) -> Anatomy | None:
    """The reward's terms from the node's stored detail and PPLs; None without them."""
    return anatomy_of(node.ig_detail, node.ppl_history, node.ppl_with_question, alpha, beta)


def anatomy_of(
    d: IGDetail | None, ppl_h: float | None, ppl_hq: float | None, alpha: float, beta: float
) -> Anatomy | None:
    """The reward's terms from an IG detail and its two perplexities (a node's, or a
    what-if edit's fresh score); None without them."""
    if d is None or ppl_h is None or ppl_hq is None or not (ppl_h > 0 and ppl_hq > 0):
        return None
    if not (math.isfinite(ppl_h) and math.isfinite(ppl_hq)):
        return None
    nll = NodeNLL(math.log(ppl_h), math.log(ppl_hq), d.question_nlls)
    rewards = []
    for v in IGVariant:
        x = ig_input(v, nll, d.base_question_nlls)  # the scorer's own formula, not a copy
        rewards.append((v, x, reward_from_input(x, alpha, beta)))
    m = d.question_tokens
    return Anatomy(
        n=d.history_tokens,
        m=m,
        a=nll.log_ppl_history,
        q=sum(d.question_nlls) / m,
        q0=sum(d.base_question_nlls) / m,
        rewards=tuple(rewards),
    )


_TERM_GLOSS = {  # (term, sign) -> why x moves that way
    ("a", 1): "its history text is harder to predict (a)",
    ("a", -1): "its history text is easier to predict (a)",
    ("q", 1): "the question became easier after its history (q)",
    ("q", -1): "the question became harder after its history (q)",
    ("w", 1): "its history is shorter, so the question weighs more (m/(n+m))",
    ("w", -1): "its history is longer, so the question weighs less (m/(n+m))",
}


def separation(own: Anatomy, others: list[Anatomy]) -> str:
    """One line: which term made this node's paper x differ from its siblings'.

    Against the siblings' means (w, a, q with bars), exactly:
    w(a - q) - w̄(ā - q̄) = w̄·Δa - w̄·Δq + Δw·(a - q).
    """
    if not others:
        return "No scored sibling to compare with."
    k = len(others)
    w_bar = sum(o.weight for o in others) / k
    a_bar = sum(o.a for o in others) / k
    q_bar = sum(o.q for o in others) / k
    terms = {
        "a": w_bar * (own.a - a_bar),
        "q": -w_bar * (own.q - q_bar),
        "w": (own.weight - w_bar) * (own.a - own.q),
    }
    delta = sum(terms.values())
    ref = w_bar * (a_bar - q_bar)
    if abs(delta) < 1e-9:
        return f"x = {own.x():+.4f}: the same as its siblings' (w̄(ā − q̄) = {ref:+.4f})."
    sign = 1 if delta > 0 else -1
    main = max(terms, key=lambda t: sign * terms[t])
    line = (
        f"x = {own.x():+.4f} is {'higher' if sign > 0 else 'lower'} than its siblings' "
        f"(w̄(ā − q̄) = {ref:+.4f}) mainly because {_TERM_GLOSS[(main, sign)]}"
    )
    other = {"a": "q", "q": "a"}.get(main)
    if other is not None and sign * terms[other] < 0.25 * abs(delta):
        line += f", not because {_TERM_GLOSS[(other, sign)]}"
    shares = ", ".join(f"{t} {terms[t] + 0.0:+.4f}" for t in ("a", "q", "w"))  # + 0.0: no "-0.0000"
    return f"{line}. Terms: {shares} (w̄·Δa, −w̄·Δq, Δw·(a − q))."


SelectionRow = SiblingScore  # one sibling as the run's rule scores it (`mcts.search.selection_replay`)


def selection_rows(tree: Tree, node_id: int, settings: SearchSettings) -> list[SelectionRow]:
    """The node and its siblings as the selection rule scores them with the tree's current
    statistics (`Tree.uct` or `Tree.prior_term` / `Tree.puct`)."""
    node = tree[node_id]
    return [] if node.is_root else list(sibling_scores(tree, node.parent, settings))


def next_choice(rows: list[SelectionRow]) -> int | None:
    """The sibling selection takes next: the highest score among open ones, ties lowest id."""
    return rule_choice(rows)


def _f(x: float, digits: int = 3) -> str:
    return num(x, f".{digits}f") if math.isfinite(x) else ("∞" if x > 0 else "–")


def _anatomy_lines(tree: Tree, node: Node, own: Anatomy, s: SearchSettings) -> list[str]:
    used = IGVariant(s.ig_variant)
    lines = [
        "**Reward anatomy** (nats per token)",
        "",
        "| term | value | what it says |",
        "|---|---|---|",
        f"| a | {_f(own.a)} | mean NLL of the history + prompt ({own.n} tokens) = log PPL(H') |",
        f"| q | {_f(own.q)} | mean NLL of the question ({own.m} tokens) after the history |",
        f"| q0 | {_f(own.q0)} | mean NLL of the question after the prompt alone (no history) |",
        f"| m/(n+m) | {_f(own.weight)} | the question's share of the scored tokens |",
        f"| x paper | {_f(own.x(), 4)} | m/(n+m)·(a − q): r = {s.alpha:g}·σ({s.beta:g}·x) = {_f(own.r())} |",
        f"| x question | {_f(own.x(IGVariant.QUESTION), 4)} | q0 − q: r = {_f(own.r(IGVariant.QUESTION))} |",
        f"| x clipped | {_f(own.x(IGVariant.QUESTION_CLIPPED), 4)} "
        f"| per-token q0 − q clipped to ±1: r = {_f(own.r(IGVariant.QUESTION_CLIPPED))} |",
        "",
        f"This run's variant: **{md(used.value)}**.",
    ]
    siblings = [tree[c] for c in tree[node.parent].children if c != node.id]
    others = [(c.id, an) for c in siblings if (an := anatomy(c, s.alpha, s.beta)) is not None]
    if others:
        lines += ["", "| node | a | q | m/(n+m) | x paper | r paper |", "|---|---|---|---|---|---|"]
        for i, an in [(node.id, own), *others]:
            mark = f"**{num(i)}**" if i == node.id else num(i)
            lines.append(
                f"| {mark} | {_f(an.a)} | {_f(an.q)} | {_f(an.weight)} | {_f(an.x(), 4)} | {_f(an.r())} |"
            )
    lines += ["", separation(own, [an for _, an in others])]
    return lines


def _words_lines(tree: Tree, node: Node) -> list[str]:
    d = node.ig_detail
    assert d is not None  # callers check
    words = question_words(d.question_pieces, d.question_nlls, d.base_question_nlls)
    found = restatements(tree.question, node.cleaned_history)
    lines = [
        "**The question lit by the history** (green: the history made the word easier to "
        "predict, red: harder; hover for nats)",
        "",
        heat_markdown(words),
        "",
        f"**Restatements found:** {len(found)} word{'s' if len(found) != 1 else ''} or id "
        "fragment(s) of the cleaned history restate the question",
    ]
    if found:
        lines += ["", *(f"- {line}" for line in restatement_lines(node.cleaned_history, found))]
    return lines


def _selection_lines(tree: Tree, node: Node, s: SearchSettings) -> list[str]:
    rows = selection_rows(tree, node.id, s)
    if len(rows) < 2:
        return []
    rule = rule_formula(s)
    nxt = next_choice(rows)
    lines = [
        f"**Selection among its siblings** ({md(rule)}; the tree's current statistics)",
        "",
        "| node | N | W/N | exploration | score | |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        state = "closed" if r.closed else ("next" if r.node_id == nxt else "")
        mark = f"**{num(r.node_id)}**" if r.node_id == node.id else num(r.node_id)
        lines.append(
            f"| {mark} | {num(r.visits)} | {_f(r.mean_value)} | {_f(r.explore)} | {_f(r.score)} | {state} |"
        )
    return lines


def lens_markdown(tree: Tree, node_id: int, settings: SearchSettings) -> str:
    """The IG lens of one node, as Markdown with inline HTML spans (all text escaped)."""
    node = tree[node_id]
    if node.is_root:
        return ""
    own = anatomy(node, settings.alpha, settings.beta)
    lines = ["#### IG lens: why this reward", ""]
    if node.reward is None:
        lines.append("*IG lens: this node has not been scored.*")
    elif own is None:
        lines.append(NO_DETAIL)
    else:
        lines += [*_anatomy_lines(tree, node, own, settings), "", *_words_lines(tree, node)]
    selection = _selection_lines(tree, node, settings)
    if selection:
        lines += ["", *selection]
    return "\n".join(lines)
