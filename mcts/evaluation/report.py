"""Evaluation report: merge results files, one table per method, F1 by kind of question, plots.

Reads the JSONL lines `mcts.evaluation.runner` writes (any number of run directories or
shard files; for a (question, method) pair seen twice the last readable line wins,
and a line with an error loses to one without). Methods are compared on the
questions that *every* listed method finished, so "time vs vote" and F1 compare
like with like; the table says how many questions that is.

Columns: F1 (mean per-question F1 of the voted answer), Hits@1, acc (F1 = 1),
best-branch F1 (mean of the best terminal-branch F1: the answer the search found
but the vote may not have picked), gen calls/q (policy generation calls),
forward passes/q (IG scorer forward passes + guided-policy candidate passes),
s/q (wall seconds), time vs vote (s/q over the vote method's s/q), F1 of means,
no terminal (questions where the budget ran out before any branch finished: the
method answers nothing, which at small --rounds is often why a tree search loses).

Plots (PNG via matplotlib's Agg backend, HTML via plotly with plotly.min.js written
once beside them so the pages open offline): F1 vs seconds per question, one point
per method; F1 per hop count per method. Knows nothing of search or models.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mcts.evaluation.facets import load_split_info
from mcts.evaluation.runner import EvalInputError, EvalRow, read_manifest, read_rows, result_files


@dataclass(frozen=True)
class MethodStats:
    method: str
    n: int
    f1: float
    hits1: float
    accuracy: float
    best_branch_f1: float
    gen_calls: float  # per question
    forward_passes: float  # per question
    seconds: float  # wall seconds per question
    time_vs_vote: float | None
    precision: float
    recall: float
    f1_of_means: float
    errors: int  # pairs that failed outside the search or stopped with "error"
    no_terminal: int = 0  # finished pairs whose search reached no terminal (empty answer)


class ReportInputError(EvalInputError):
    """Results that must not be pooled into one table; one clear line, nothing written."""


def source_files(sources: Iterable[str | Path]) -> list[Path]:
    paths: list[Path] = []
    for src in sources:
        p = Path(src)
        paths.extend(result_files(p) if p.is_dir() else [p])
    return paths


def check_finished(paths: Sequence[Path]) -> None:
    """Refuse a results file whose manifest names pairs it does not hold yet (a shard still
    running, or one that stopped half-way): its table would count the questions done so far."""
    for path in paths:
        manifest = read_manifest(path)
        if manifest is None:
            continue
        ids, methods = manifest
        # A pair that failed has its line too (the table counts it under "errors").
        done = {(r.question_id, r.method) for r in read_rows([path])}
        missing = [(q, m) for q in ids for m in methods if (q, m) not in done]
        if missing:
            raise ReportInputError(
                f"{path} is unfinished: {len(ids) * len(methods) - len(missing)} of "
                f"{len(ids) * len(methods)} (question, method) pairs done; continue it with "
                "`python -m mcts eval ... --resume`, or report it with --partial"
            )


def check_poolable(rows: Sequence[EvalRow]) -> None:
    """Refuse rows from different parts of the split, or a method run with two policies or
    seeds: one table must answer one question."""
    parts = sorted({r.part for r in rows if r.part})
    if len(parts) > 1:
        raise ReportInputError(
            f"the results mix parts of the split ({', '.join(parts)}); report each part on its own"
        )
    for method in dict.fromkeys(r.method for r in rows):
        mine = [r for r in rows if r.method == method]
        for what, value in (("seed", lambda r: r.seed), ("policy adapter", _adapter)):
            seen = sorted({str(value(r)) for r in mine})
            if len(seen) > 1:
                raise ReportInputError(
                    f"method {method} was run with more than one {what} ({', '.join(seen)}); "
                    "report each run on its own"
                )


def _adapter(row: EvalRow) -> str:
    return str(row.meta.get("policy_adapter") or "none")


def with_split_facets(row: EvalRow) -> EvalRow:
    """The row with the facets the split files decide (family, part, held out, what was chosen
    on it) read again: a choice made on a question after its run still counts. Gold-path
    faithfulness needs the question record, so stays as written."""
    facets = load_split_info().facets(row.question_id, {"path_matches_gold_relations": row.faithful})
    return replace(
        row,
        family=facets.family,
        family_in_train=facets.family_in_train,
        part=facets.part,
        held_out=facets.held_out,
        chosen_here=facets.chosen_here,
    )


def collect_rows(sources: Iterable[str | Path]) -> list[EvalRow]:
    """Rows from run directories and/or results files, one per (question, method)."""
    paths = source_files(sources)
    best: dict[tuple[str, str], EvalRow] = {}
    for row in read_rows(paths):
        key = (row.question_id, row.method)
        if key not in best or not row.error or best[key].error:
            best[key] = row
    return [with_split_facets(r) for r in best.values()]


def _methods_in(rows: Sequence[EvalRow], order: Sequence[str] | None) -> list[str]:
    seen = list(dict.fromkeys(r.method for r in rows))
    if order:
        return [m for m in order if m in seen]
    from mcts.evaluation.runner import ALL_METHODS

    canonical = [m.value for m in ALL_METHODS]
    return sorted(seen, key=lambda m: (canonical.index(m) if m in canonical else len(canonical), m))


def common_questions(rows: Sequence[EvalRow], methods: Sequence[str]) -> set[str]:
    by_method: dict[str, set[str]] = defaultdict(set)
    for r in rows:
        by_method[r.method].add(r.question_id)
    sets = [by_method[m] for m in methods]
    return set.intersection(*sets) if sets else set()


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def _failed(row: EvalRow) -> bool:
    """The pair failed outside the search, or the search itself stopped with an error."""
    return bool(row.error) or row.stop_reason == "error"


def method_stats(rows: Sequence[EvalRow], methods: Sequence[str] | None = None) -> list[MethodStats]:
    names = _methods_in(rows, methods)
    common = common_questions(rows, names)
    stats: list[MethodStats] = []
    for m in names:
        mine = [r for r in rows if r.method == m and r.question_id in common]
        p, rec = _mean([r.precision for r in mine]), _mean([r.recall for r in mine])
        stats.append(
            MethodStats(
                method=m,
                n=len(mine),
                f1=_mean([r.f1 for r in mine]),
                hits1=_mean([float(r.hits1) for r in mine]),
                accuracy=_mean([float(r.exact) for r in mine]),
                best_branch_f1=_mean([r.best_branch_f1 for r in mine]),
                gen_calls=_mean([float(r.cost.get("policy_calls", 0)) for r in mine]),
                forward_passes=_mean(
                    [
                        float(r.cost.get("ig_forward_passes", 0)) + float(r.cost.get("candidate_passes", 0))
                        for r in mine
                    ]
                ),
                seconds=_mean([float(r.cost.get("wall_s", 0.0)) for r in mine]),
                time_vs_vote=None,
                precision=p,
                recall=rec,
                f1_of_means=2 * p * rec / (p + rec) if p + rec else 0.0,
                errors=sum(1 for r in mine if _failed(r)),
                no_terminal=sum(1 for r in mine if r.terminals == 0 and not _failed(r)),
            )
        )
    vote = next((s for s in stats if s.method == "vote"), None)
    if vote is not None and vote.seconds > 0:
        stats = [replace(s, time_vs_vote=s.seconds / vote.seconds) for s in stats]
    return stats


def markdown_table(stats: Sequence[MethodStats]) -> str:
    head = (
        "| method | F1 | Hits@1 | acc | best-branch F1 | gen calls/q | forward passes/q | s/q | time vs vote "
        "| F1 of means | n | errors | no terminal |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [head]
    for s in stats:
        ratio = f"{s.time_vs_vote:.2f}x" if s.time_vs_vote is not None else "-"
        lines.append(
            f"| {s.method} | {100 * s.f1:.2f} | {100 * s.hits1:.2f} | {100 * s.accuracy:.2f} "
            f"| {100 * s.best_branch_f1:.2f} | {s.gen_calls:.1f} | {s.forward_passes:.1f} | {s.seconds:.1f} "
            f"| {ratio} | {100 * s.f1_of_means:.2f} | {s.n} | {s.errors} | {s.no_terminal} |"
        )
    return "\n".join(lines)


def hop_f1(
    rows: Sequence[EvalRow], methods: Sequence[str] | None = None
) -> dict[str, dict[int, tuple[int, float]]]:
    """method -> hops -> (questions, mean F1), on the common questions; unknown hops are -1."""
    names = _methods_in(rows, methods)
    common = common_questions(rows, names)
    out: dict[str, dict[int, tuple[int, float]]] = {}
    for m in names:
        groups: dict[int, list[float]] = defaultdict(list)
        for r in rows:
            if r.method == m and r.question_id in common:
                groups[r.hops if r.hops is not None else -1].append(r.f1)
        out[m] = {h: (len(v), _mean(v)) for h, v in sorted(groups.items())}
    return out


@dataclass(frozen=True)
class Group:
    """One column of the breakdown table: the questions a predicate keeps."""

    label: str
    keep: Callable[[EvalRow], bool]


BREAKDOWN: tuple[Group, ...] = (
    Group("all", lambda r: True),
    Group("faithful", lambda r: r.faithful is True),
    Group("not faithful", lambda r: r.faithful is False),
    Group("one-hop", lambda r: r.hops == 1),
    Group("two-hop", lambda r: r.hops == 2),
    Group("faithful one-hop", lambda r: r.faithful is True and r.hops == 1),
    Group("family seen", lambda r: r.family_in_train is True),
    Group("family unseen", lambda r: r.family_in_train is False),
    Group(
        "faithful one-hop, family unseen",
        lambda r: r.faithful is True and r.hops == 1 and r.family_in_train is False,
    ),
    Group("used for a choice", lambda r: r.held_out is False),
    Group("held out", lambda r: r.held_out is True),
)


def informative_groups(
    items: Sequence[Any], groups: Sequence[Group] = BREAKDOWN
) -> list[tuple[Group, list[Any]]]:
    """(group, the items it keeps) for each group that says something new: one holding no
    item, or past the first every item under another name ("held out" on the test split),
    is left out. `items` are anything the groups' predicates read (rows, question kinds)."""
    kept = [(g, [x for x in items if g.keep(x)]) for g in groups]
    return [(g, mine) for i, (g, mine) in enumerate(kept) if mine and (i == 0 or len(mine) < len(items))]


def _choice_groups(rows: Sequence[EvalRow]) -> list[Group]:
    """One column per choice made on some of these questions (the demo's slices)."""
    whats = dict.fromkeys(r.chosen_here for r in rows if r.chosen_here)
    return [Group(f"used to choose {what}", lambda r, w=what: r.chosen_here == w) for what in whats]


def breakdown(
    rows: Sequence[EvalRow], methods: Sequence[str] | None = None, groups: Sequence[Group] = BREAKDOWN
) -> tuple[list[tuple[str, int]], dict[str, list[float]]]:
    """Columns (label, questions) that hold any common question, and per method its mean F1
    in each; every method is measured on the same questions of a column."""
    names = _methods_in(rows, methods)
    common = common_questions(rows, names)
    by_method = {m: [r for r in rows if r.method == m and r.question_id in common] for m in names}
    first = by_method[names[0]] if names else []
    columns = [(g, len(mine)) for g, mine in informative_groups(first, [*groups, *_choice_groups(first)])]
    table = {
        m: [_mean([r.f1 for r in mine if g.keep(r)]) for g, _ in columns] for m, mine in by_method.items()
    }
    return [(g.label, n) for g, n in columns], table


def breakdown_markdown(columns: Sequence[tuple[str, int]], table: dict[str, list[float]]) -> str:
    head = "| method | " + " | ".join(f"{label} (n={n})" for label, n in columns) + " |"
    lines = [head, "|---|" + "---:|" * len(columns)]
    for m, cells in table.items():
        lines.append(f"| {m} | " + " | ".join(f"{100 * c:.2f}" for c in cells) + " |")
    return "\n".join(lines)


def write_plots(
    stats: Sequence[MethodStats], hops: dict[str, dict[int, tuple[int, float]]], out_dir: Path
) -> list[Path]:
    """F1-vs-time and per-hop F1, as PNG and HTML; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import plotly.graph_objects as go

    out_dir.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    fig, ax = plt.subplots(figsize=(6, 4))
    for s in stats:
        ax.scatter(s.seconds, 100 * s.f1)
        ax.annotate(s.method, (s.seconds, 100 * s.f1), textcoords="offset points", xytext=(4, 4))
    ax.set_xlabel("seconds per question")
    ax.set_ylabel("F1 (%)")
    ax.set_title("F1 vs time per method")
    fig.tight_layout()
    fig.savefig(out_dir / "f1_vs_time.png", dpi=120)
    plt.close(fig)
    written.append(out_dir / "f1_vs_time.png")

    hop_keys = sorted({h for per in hops.values() for h in per})
    fig, ax = plt.subplots(figsize=(7, 4))
    width = 0.8 / max(1, len(hops))
    for i, (m, per) in enumerate(hops.items()):
        xs = [j + i * width for j in range(len(hop_keys))]
        ax.bar(xs, [100 * per.get(h, (0, 0.0))[1] for h in hop_keys], width=width, label=m)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(hop_keys))])
    ax.set_xticklabels([f"{h}-hop" if h >= 0 else "unknown" for h in hop_keys])
    ax.set_ylabel("F1 (%)")
    ax.set_title("F1 per hop count")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out_dir / "f1_per_hop.png", dpi=120)
    plt.close(fig)
    written.append(out_dir / "f1_per_hop.png")

    scatter = go.Figure(
        go.Scatter(
            x=[s.seconds for s in stats],
            y=[100 * s.f1 for s in stats],
            mode="markers+text",
            text=[s.method for s in stats],
            textposition="top center",
        )
    )
    scatter.update_layout(
        title="F1 vs time per method", xaxis_title="seconds per question", yaxis_title="F1 (%)"
    )
    scatter.write_html(out_dir / "f1_vs_time.html", include_plotlyjs="directory")
    bars = go.Figure(
        [
            go.Bar(
                name=m, x=[f"{h}-hop" for h in hop_keys], y=[100 * per.get(h, (0, 0.0))[1] for h in hop_keys]
            )
            for m, per in hops.items()
        ]
    )
    bars.update_layout(title="F1 per hop count", barmode="group", yaxis_title="F1 (%)")
    bars.write_html(out_dir / "f1_per_hop.html", include_plotlyjs="directory")
    written += [out_dir / "f1_vs_time.html", out_dir / "f1_per_hop.html"]
    return written


def report_markdown(rows: Sequence[EvalRow], methods: Sequence[str] | None = None) -> str:
    """The report's tables: every method on the common questions, then F1 by facet."""
    stats = method_stats(rows, methods)
    columns, table = breakdown(rows, methods)
    n_common = stats[0].n if stats else 0
    return (
        f"Questions finished by every method: {n_common}\n\n"
        + markdown_table(stats)
        + "\n\nF1 by kind of question (faithful: the gold query follows the relations the question "
        "names; family seen: a question built from the same WebQuestionsSP seed is in the "
        "train part):\n\n" + breakdown_markdown(columns, table) + "\n"
    )


def write_report(
    rows: Sequence[EvalRow], out_dir: str | Path, *, methods: Sequence[str] | None = None, plots: bool = True
) -> str:
    """Write `results.md` (+ plots) into out_dir and return the Markdown. Rows that must not be
    pooled raise `ReportInputError` before anything is written."""
    check_poolable(rows)
    out = Path(out_dir)
    text = report_markdown(rows, methods)
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / "results.md.tmp"
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(out / "results.md")  # atomic: a reader never sees half a report
    if plots and rows:
        write_plots(method_stats(rows, methods), hop_f1(rows, methods), out)
    return text
