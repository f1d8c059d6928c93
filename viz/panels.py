"""Text panels around the tree: status line, node table, node inspector, answer, votes, cost.

Pure functions from the tree and the search's plain records (`SearchResult`,
`CostSummary`, `RankChange`, `mcts.search.cleaning` segments) to Markdown, HTML or table
rows that any front end can show. Nothing here imports Gradio or model code; the
records are read by attribute, so a trace loaded from disk renders the same as a
live run. Every string of a record is made safe by `viz.escape` for the place it goes
(Markdown, HTML, table cell), field by field, whatever the record's type says.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from mcts.search.cleaning import RULE_INFO, CleaningRule, clean_history
from mcts.search.settings import SearchSettings, Selection
from mcts.search.tree import ROOT_ID, Node, Tree
from viz.escape import cell, fence, html_text, md, num
from viz.ig_lens import lens_markdown
from viz.labels import step_labels
from viz.selection_terms import score_cells, score_line

NODE_TABLE_HEADERS = [
    "id",
    "parent",
    "depth",
    "round",
    "step",
    "action",
    "status",
    "N",
    "W/N",
    "r",
    "PPL(H')",
    "PPL(H',Q)",
    "UCT",
]
VOTE_TABLE_HEADERS = ["answer", "votes", "weight", "branches"]
# One highlight colour per cleaning rule (light fills; the text stays readable).
RULE_COLOURS: dict[CleaningRule, str] = {
    CleaningRule.DROP_THOUGHTS: "#fde2e1",
    CleaningRule.MASK_SEARCH_NODES: "#fff1c2",
    CleaningRule.KEEP_STRUCTURED_ARGUMENTS: "#dbeafe",
    CleaningRule.LAST_OBSERVATION_ONLY: "#e5e7eb",
    CleaningRule.MASK_RESTATEMENTS: "#ede9fe",
}


def _f(value: float | None, digits: int = 3) -> str:
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return md(value)  # not a number after all: shown as text, never as markup
    if math.isinf(value):
        return "∞"
    if math.isnan(value):
        return "–"
    return f"{value:.{digits}f}"


def _round(value: float | None, digits: int = 3) -> float | None:
    # Table cells: None stays empty; inf (an unvisited node's UCT) is not JSON.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None if value is None else cell(value)  # type: ignore[return-value]
    if math.isnan(value) or math.isinf(value):
        return None
    return round(value, digits)


def action_text(node: Node, limit: int | None = None) -> str:
    if node.step is None:
        return "(question)"
    step = node.step
    text = step.action.render() if step.action is not None else f"(unparsable) {step.raw_text.strip()}"
    text = " ".join(text.split())
    if limit is not None and len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def node_status(node: Node) -> str:
    if node.id == ROOT_ID:
        return "root"
    if node.terminal:
        return "terminal, answer" if node.answer else "terminal, no answer"
    if node.reward is None and node.validity == "ok":
        return "not scored"
    return str(node.validity).replace("_", " ")


# ---------------------------------------------------------------- status and table


def status_line(
    *,
    phase: str,
    round_no: int,
    rounds: int,
    nodes: int,
    elapsed_s: float,
    model_s: float = 0.0,
    kb_s: float = 0.0,
) -> str:
    """One line: what is happening, round i of n, nodes, model/tool time, elapsed."""
    return (
        f"**{phase}** · round {round_no} of {rounds} · {nodes} nodes · "
        f"model {model_s:.1f} s · tools {kb_s:.2f} s · elapsed {elapsed_s:.1f} s"
    )


TRUE_VALUE_HEADER = "true value (gold)"  # inserted after r while the truth overlay is on


# Each column's width by its header, so a column keeps its width wherever the truth overlay's
# column shifts it (positional widths would cut "true value (gold)" and the columns after it).
# Pixels, about 1,150 in all: the table fits at 1280 px and scrolls sideways below, where
# percentages squeezed the numbers to a character per line.
NODE_TABLE_WIDTHS: dict[str, str] = {
    "id": "44px",
    "parent": "72px",
    "depth": "58px",
    "round": "62px",
    "step": "190px",
    "action": "290px",
    "status": "90px",
    "N": "48px",
    "W/N": "64px",
    "r": "64px",
    TRUE_VALUE_HEADER: "164px",
    "PPL(H')": "80px",
    "PPL(H',Q)": "98px",
    "UCT": "64px",
}


def node_table_widths(headers: list[str]) -> list[str]:
    return [NODE_TABLE_WIDTHS[h] for h in headers]


def node_table_headers(with_truth: bool = False) -> list[str]:
    if not with_truth:
        return list(NODE_TABLE_HEADERS)
    at = NODE_TABLE_HEADERS.index("r") + 1
    return [*NODE_TABLE_HEADERS[:at], TRUE_VALUE_HEADER, *NODE_TABLE_HEADERS[at:]]


def node_table(tree: Tree, c: float, true_values: Mapping[int, float] | None = None) -> list[list[Any]]:
    """One row per node (NODE_TABLE_HEADERS), in id order; with `true_values` (the truth
    overlay) a true-value column after r, empty where no terminal is below the node."""
    rows = []
    at = NODE_TABLE_HEADERS.index("r") + 1
    names = step_labels(tree)  # "SPARQL place_of_birth": what sets a node apart from its siblings
    for node in tree.nodes:
        if node.id not in names:  # added by the live search after the labels were taken: next redraw
            continue
        row = [
            node.id,
            node.parent if node.parent >= 0 else None,
            node.depth,
            node.round,
            cell(names[node.id].text),
            cell(action_text(node)),
            cell(node_status(node)),
            node.visits,
            _round(node.mean_value),
            _round(node.reward),
            _round(node.ppl_history, 2),
            _round(node.ppl_with_question, 2),
            _round(tree.uct(node.id, c)) if node.id != ROOT_ID else None,
        ]
        if true_values is not None:
            row.insert(at, _round(true_values.get(node.id)))
        rows.append(row)
    return rows


def node_choices(tree: Tree) -> list[tuple[str, int]]:
    """Dropdown entries (label, node id): every node reachable by keyboard, named by its
    tool and what sets it apart from its siblings (`viz.labels`)."""
    out = []
    names = step_labels(tree)
    for node in tree.nodes:
        if node.id not in names:  # added by the live search after the labels were taken: next redraw
            continue
        reward = f" · r={node.reward:.2f}" if node.reward is not None else ""
        name = names[node.id].text if node.id != ROOT_ID else "(question)"
        out.append((f"{node.id} · d{node.depth} · {name}{reward}", node.id))
    return out


# ---------------------------------------------------------------- node inspector


def uct_rank(tree: Tree, node_id: int, c: float) -> tuple[int, int]:
    """(rank of this node by UCT among its siblings, 1 = selected next; sibling count)."""
    node = tree[node_id]
    if node.parent < 0:
        return 1, 1
    siblings = tree[node.parent].children
    # Unvisited first (UCT inf), then by UCT, ties by lower id: the selection order.
    order = sorted(siblings, key=lambda i: (-tree.uct(i, c), i))
    return order.index(node_id) + 1, len(siblings)


def node_detail_markdown(
    tree: Tree,
    node_id: int,
    *,
    c: float,
    alpha: float = 2.0,
    beta: float = 10.0,
    c_puct: float | None = None,
    truth: Sequence[tuple[str, str]] = (),
    settings: SearchSettings | None = None,
) -> str:
    """The full step and every number of one node, as Markdown; `truth`: the truth
    overlay's (name, value) cells, shown beside r and W/N; with the run's `settings`, the
    IG lens (`viz.ig_lens`: why the node got its reward) below the numbers."""
    node = tree[node_id]
    if node.step is None:
        return (
            f"### Node 0 · the question\n\n> {md(tree.question)}\n\n"
            f"N = {num(node.visits)} · W/N = {_f(node.mean_value)} · {len(node.children)} children"
            + "".join(f" · {name} = {value}" for name, value in truth)
        )
    step = node.step
    lines = [
        f"### Node {num(node.id)} · depth {num(node.depth)} · round {num(node.round)} · {md(node_status(node))}",
        "",
    ]
    lines += [
        "**Thought**",
        "",
        fence(step.thought or "(none)"),
        "**Action**",
        "",
        fence(action_text(node)),
    ]
    if step.action is None and step.raw_text:
        lines += ["**Raw completion**", "", fence(step.raw_text)]
    lines += ["**Observation**", "", fence(step.observation.text or "(empty)")]
    if node.terminal:
        names = ", ".join(v.name for v in node.answer) or "(no answer)"
        lines += [f"**Branch answer:** {md(names)}", ""]
        if node.answer_sparql:
            lines += [fence(node.answer_sparql, "sparql")]
    ratio = (
        node.ppl_history / node.ppl_with_question
        if node.ppl_history is not None and node.ppl_with_question
        else None
    )
    # The score the run selected by (UCT or PUCT) with its rank; without the run's settings, UCT.
    rank, n_sib = uct_rank(tree, node_id, c)
    rule_cells = (
        score_cells(tree, node_id, settings)
        if settings is not None
        else [("UCT", _f(tree.uct(node_id, c))), ("UCT rank", f"{rank} of {n_sib}")]
    )
    cells = [
        ("PPL(H')", _f(node.ppl_history, 2)),
        ("PPL(H', Q)", _f(node.ppl_with_question, 2)),
        ("ratio", _f(ratio)),
        ("r", _f(node.reward)),
        ("decay", _f(node.decay, 2)),
        ("N", num(node.visits)),
        ("W/N", _f(node.mean_value)),
        *rule_cells,
        *truth,
    ]
    prior = getattr(node, "prior", None)
    if prior is not None:  # PUCT: the policy's prior and the exploration term it gives
        cells.append(("prior P", _f(prior)))
        # The prior term only where the run added it: a UCT run stores P but never reads it.
        puct_run = settings is None or settings.selection == Selection.PUCT
        if c_puct is not None and puct_run and hasattr(tree, "prior_term"):
            cells.append((f"prior term (c_puct {c_puct:g})", _f(tree.prior_term(node_id, c_puct))))
    lines += [_pairs_table(cells), ""]
    if settings is not None:
        lines += [score_line(tree, node_id, settings), ""]
    if ratio is not None and node.reward is not None:
        lines.append(
            f"r = α·σ(β·log ratio) = {alpha:g}·σ({beta:g}·log {ratio:.3f}) = {node.reward:.3f}; "
            + (
                "the history made the question *more* likely."
                if ratio > 1
                else "the history made the question *less* likely."
            )
        )
    if node.truncated:
        lines.append("\n*The cleaned history was cut from the left to fit the scorer's context.*")
    if node.simulation:
        sim = "\n".join(f"{i + 1}. {md(action_text_of(s))}" for i, s in enumerate(node.simulation))
        lines += ["", "**Simulated continuation (classic MCTS)**", "", sim]
    if settings is not None:
        lines += ["", lens_markdown(tree, node_id, settings)]
    return "\n".join(lines)


def _pairs_table(cells: Sequence[tuple[str, str]], per_row: int = 3) -> str:
    """Name/value pairs, three to a row: six narrow columns stay readable down to ~360 px,
    where one row of nine numbers wrapped a character per line."""
    head = "| " + " | ".join(["quantity", "value"] * per_row) + " |"
    rows = [head, "|" + "---|---|" * per_row]
    for i in range(0, len(cells), per_row):
        chunk = list(cells[i : i + per_row]) + [("", "")] * (per_row - len(cells[i : i + per_row]))
        rows.append("| " + " | ".join(f"{k} | **{v}**" if k else " | " for k, v in chunk) + " |")
    return "\n".join(rows)


def action_text_of(step: Any) -> str:
    action = step.action.render() if step.action is not None else step.raw_text.strip()
    return " ".join(action.split()).replace("`", "'")


def history_html(tree: Tree, node_id: int, rules: Collection[CleaningRule]) -> str:
    """Raw and cleaned history side by side; each removed piece coloured by its rule."""
    # A classic-MCTS node was scored at the end of its simulation: show that state.
    steps = [*tree.steps(node_id), *tree[node_id].simulation]
    if not steps:
        return "<div class='hist-empty'>The root has no history yet: pick a node below it.</div>"
    cleaned = clean_history(steps, rules, question=tree.question)
    raw_parts = []
    for seg in cleaned.segments:
        text = html_text(seg.text)
        if seg.removed_by is None:
            raw_parts.append(text)
        else:
            colour = RULE_COLOURS.get(seg.removed_by, "#eee")
            label = html_text(RULE_INFO[seg.removed_by].label)
            done = f"masked as {seg.replacement!r} by" if seg.replacement else "removed by"
            raw_parts.append(
                f"<span class='removed' style='background:{colour};text-decoration:line-through;"
                f"text-decoration-color:#888' title='{html_text(done)}: {label}'>{text}</span>"
            )
    used = sorted(
        {s.removed_by for s in cleaned.segments if s.removed_by is not None}, key=list(CleaningRule).index
    )
    legend = (
        " ".join(
            f"<span style='background:{RULE_COLOURS[r]};padding:1px 6px;border-radius:4px;margin-right:6px'>"
            f"{html_text(RULE_INFO[r].label)}</span>"
            for r in used
        )
        or "<span>no rule removed anything</span>"
    )
    stored = tree[node_id].cleaned_history
    note = ""
    if stored and stored != cleaned.text:
        note = (
            "<div style='font-size:12px;color:#6b7280;margin-top:4px'>The run scored a different cleaned "
            "history (other rules, or cut to fit the context); this view re-applies the current rules.</div>"
        )
    pre = (
        "white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,monospace;font-size:12px;"
        "background:#fafafa;border:1px solid #e5e7eb;border-radius:6px;padding:8px;margin:0;max-height:360px;overflow:auto"
    )
    return (
        "<div style='display:grid;grid-template-columns:1fr 1fr;gap:10px'>"
        f"<div><div style='font-weight:600;margin-bottom:4px'>Raw history H (what the agent saw)</div>"
        f"<pre style='{pre}'>{''.join(raw_parts)}</pre></div>"
        f"<div><div style='font-weight:600;margin-bottom:4px'>Cleaned history H' (what the IG scorer read)</div>"
        f"<pre style='{pre}'>{html_text(cleaned.text)}</pre></div>"
        "</div>"
        f"<div style='font-size:12px;margin-top:6px'>Removed by: {legend}</div>{note}"
    )


# ---------------------------------------------------------------- answer, votes, cost


def answer_markdown(result: Any | None, tree: Tree | None = None) -> str:
    """Final answer, its SPARQL, why the run stopped, best branches by value and by IG."""
    if result is None:
        return "*No answer yet.*"
    names = ", ".join(v.name for v in result.answer)
    lines = [f"### Answer: {md(names) if names else '(no branch produced an answer)'}", ""]
    if result.sparql:
        lines += [fence(result.sparql, "sparql")]
    stop = md(str(result.stop_reason).replace("_", " "))
    detail = f" ({md(result.detail)})" if result.detail else ""
    lines.append(
        f"Stopped: **{stop}**{detail} after {num(result.rounds)} rounds, {num(result.nodes)} nodes, "
        f"{num(getattr(result, 'terminals', 0))} terminal branches."
    )
    tie = getattr(result, "tie_break", "")
    if tie:  # a silent 1-1-1 vote read as a confident answer before this line
        lines += ["", f"**Tie:** {md(tie)}."]
    if result.stop_reason == "budget" and not getattr(result, "terminals", 0):
        # The commonest empty answer on small budgets: no branch reached Done in time.
        lines += [
            "",
            "*No branch reached Done or max depth within the rounds: raise Rounds to let one finish.*",
        ]
    for label, node_id in (("by value W/N", result.best_by_value), ("by IG reward r", result.best_by_ig)):
        if node_id is None:
            lines.append(f"- Best branch {label}: –")
            continue
        text = f"- Best branch {label}: node {num(node_id)}"
        if tree is not None and isinstance(node_id, int) and 0 <= node_id < len(tree):
            node = tree[node_id]
            ans = ", ".join(v.name for v in node.answer) or "(no answer)"
            text += f" → {md(ans)} (W/N {_f(node.mean_value)}, r {_f(node.reward)})"
        lines.append(text)
    return "\n".join(lines)


def vote_rows(result: Any | None) -> list[list[Any]]:
    if result is None:
        return []
    return [
        [
            cell(", ".join(map(str, row.answer))),
            row.count,
            round(float(row.weight), 3),
            cell(", ".join(str(i) for i in row.node_ids)),
        ]
        for row in result.votes
    ]


def cost_markdown(cost: Any | None) -> str:
    """Generation calls, forward passes, tokens, tool calls and times of one run (a narrow table)."""
    if cost is None:
        return "*No cost yet.*"
    calls = sorted(cost.tool_calls.items(), key=lambda kv: str(kv[0]))
    tools = ", ".join(f"{md(name)} {num(count)}" for name, count in calls) or "none"
    total = sum(c for _, c in calls if isinstance(c, int | float) and not isinstance(c, bool))
    rows = [
        ("policy generation calls", num(cost.policy_calls)),
        ("candidate-scoring passes", num(cost.candidate_passes)),
        ("IG forward passes", num(cost.ig_forward_passes)),
        ("tokens", num(cost.tokens, ",")),
        ("tool calls", f"{num(total)} ({tools})"),
        (
            "time in models / KB / wall",
            f"{num(cost.model_s, '.1f')} s / {num(cost.kb_s, '.2f')} s / {num(cost.wall_s, '.1f')} s",
        ),
    ]
    return "\n".join(["| cost | |", "|---|---|", *(f"| {k} | {v} |" for k, v in rows)])


def rank_changes_markdown(changes: Iterable[Any], tree: Tree | None = None) -> str:
    """Sibling groups whose order by reward flipped after a re-score."""
    changes = list(changes)
    if not changes:
        return "No sibling group changed its order by reward."
    lines = [f"**{len(changes)} sibling group(s) changed order by reward** (best first):", ""]
    for ch in changes:
        before = " > ".join(num(i) for i in ch.before)
        after = " > ".join(num(i) for i in ch.after)
        lines.append(f"- children of node {num(ch.parent_id)}: {before} → **{after}**")
    return "\n".join(lines)


def reward_changes(before: Tree, after: Tree) -> list[tuple[int, float | None, float | None]]:
    """(node id, old r, new r) for every node whose reward moved by more than 1e-6."""
    out = []
    for old, new in zip(before.nodes, after.nodes, strict=False):
        a, b = old.reward, new.reward
        if (a is None) != (b is None) or (a is not None and b is not None and abs(a - b) > 1e-6):
            out.append((old.id, a, b))
    return out
