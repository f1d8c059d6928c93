"""Command line: `python -m mcts run ...` answers one question; `python -m mcts replay TRACE`
prints a saved run's tree. `eval` / `analyze-ranking` come from `mcts.cli.eval_commands`,
`trajectories` / `train-policy` / `split` from `mcts.cli.train_commands`, and `study ...`
(analyses of finished eval runs, no new search) from `mcts.cli.study_commands`.

`run` prints the model defaults, one line per round (nodes, terminals, the principal
branch and its reward), then the answer, its SPARQL, the vote table and the cost; with
`--json` it prints one JSON object instead. Every `SearchSettings` field is a flag
(`--rounds`, `--k`, `--c`, ...). Exit status: 0 done (any stop reason but "error"),
1 the search stopped with an error, 2 bad arguments, KB spec, model or question.

Only argparse and cheap modules are imported at start, so `--help` is instant; the
search, models and KB are imported when a command runs.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from mcts.cli.flags import add_settings_flags, add_world_flags, settings_from_args
from mcts.search.cleaning import DEFAULT_RULES, CleaningRule


def _rules(text: str | None) -> frozenset[CleaningRule]:
    if text is None:
        return DEFAULT_RULES
    names = [t.strip() for t in text.split(",") if t.strip()]
    known = {r.value: r for r in CleaningRule}
    bad = [n for n in names if n not in known]
    if bad:
        raise argparse.ArgumentTypeError(
            f"unknown cleaning rule(s) {', '.join(bad)}; known: {', '.join(known)}"
        )
    return frozenset(known[n] for n in names)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m mcts", description="Fast MCTS with IG rewards for KBQA")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="answer one question with a search method")
    run.add_argument("--question", "-q", required=True)
    add_settings_flags(run, skip=())
    add_world_flags(run)
    run.add_argument(
        "--rules",
        default=None,
        help=f"cleaning rules switched on, comma separated (default, the paper's: "
        f"{','.join(sorted(r.value for r in DEFAULT_RULES))}; also: "
        f"{','.join(sorted(r.value for r in set(CleaningRule) - DEFAULT_RULES))})",
    )
    run.add_argument(
        "--score-baselines", action="store_true", help="single/vote: score nodes by IG for display"
    )
    run.add_argument("--trace", default=None, help="save the run as a trace JSON file")
    run.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    run.set_defaults(func=cmd_run)

    replay = sub.add_parser("replay", help="print a saved trace's tree as text")
    replay.add_argument("trace")
    replay.set_defaults(func=cmd_replay)

    from mcts.cli import eval_commands

    eval_commands.register(sub)
    from mcts.cli import train_commands

    train_commands.register(sub)
    from mcts.cli import study_commands

    study_commands.register(sub)
    return parser


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if math.isinf(x):
        return "inf"
    return f"{x:.{digits}f}"


def _err(message: str) -> int:
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    return 2


def cmd_run(args: argparse.Namespace) -> int:
    try:
        settings = settings_from_args(args)
        rules = _rules(args.rules)
    except (ValueError, argparse.ArgumentTypeError) as exc:
        return _err(str(exc))
    from mcts.agents.models import describe_defaults

    say = (lambda *_a, **_k: None) if args.json else print
    say(describe_defaults(args.policy_model, args.scorer_model))
    from mcts.search.loop import Search, check_question

    problem = check_question(args.question)
    if problem is not None:
        return _err(f"invalid question: {problem}")
    try:
        from mcts.agents.world import build_world

        world = build_world(
            args.kb,
            policy_kind=args.policy,
            policy_model=args.policy_model,
            scorer_model=args.scorer_model,
            policy_endpoint=args.policy_endpoint,
            policy_adapter=args.policy_adapter,
            method=settings.method,
            constant_reward=settings.constant_reward,
        )
    except (ValueError, RuntimeError, OSError) as exc:  # KBSpecError, ModelLoadError, ...
        return _err(str(exc))
    say(f"kb: {world.meta.kb_spec}; policy: {world.meta.policy_kind}; method: {settings.method.value}")
    search = Search(
        args.question,
        settings,
        policy=world.policy,
        scorer=world.scorer,
        tools=world.tools,
        cleaning_rules=rules,
        meta=world.meta,
        score_baselines=args.score_baselines,
    )
    _drain(search, say)
    result = search.result
    assert result is not None  # run() always sets it
    trace_path = None
    if args.trace:
        from mcts.search.trace import save_trace, trace_from_search

        trace_path = str(save_trace(trace_from_search(search), args.trace))
    if args.json:
        print(json.dumps(result_json(search, trace_path), ensure_ascii=False))
    else:
        print_result(search, trace_path)
    return 1 if result.stop_reason == "error" else 0


def _drain(search: Any, say: Any) -> None:
    from mcts.search.events import RoundFinished

    events = search.run()
    try:
        for event in events:
            if isinstance(event, RoundFinished):
                say(
                    f"round {event.round}: {event.nodes} nodes, {event.terminals} terminals "
                    f"({event.answered} answered), best branch #{event.best_node_id} r={_fmt(event.best_reward)}",
                    flush=True,
                )
    except KeyboardInterrupt:
        events.close()  # the search records the run as cancelled


def result_json(search: Any, trace_path: str | None) -> dict[str, Any]:
    res = search.result
    return {
        "question": res.question,
        "method": search.settings.method.value,
        "answer": list(res.answer_names),
        "answer_values": [{"name": v.name, "id": v.id} for v in res.answer],
        "sparql": res.sparql,
        "nodes": res.nodes,
        "rounds": res.rounds,
        "stop_reason": res.stop_reason,
        "detail": res.detail,
        "terminals": res.terminals,
        "answer_node_ids": list(res.answer_node_ids),
        "votes": [row.to_dict() for row in res.votes],
        "best_by_value": res.best_by_value,
        "best_by_ig": res.best_by_ig,
        "cost": res.cost.to_dict(),
        "meta": search.meta.to_dict(),
        "trace": trace_path,
    }


def print_result(search: Any, trace_path: str | None) -> None:
    res = search.result
    print(f"stopped: {res.stop_reason} ({res.detail}) after {res.rounds} rounds, {res.nodes} nodes")
    print(f"answer: {', '.join(res.answer_names) if res.answer else '(none)'}")
    print(f"sparql: {res.sparql or '-'}")
    if res.votes:
        print("votes:")
        for row in res.votes:
            ids = ",".join(f"#{i}" for i in row.node_ids)
            print(f"  {row.count:>2}  weight {row.weight:.3f}  {', '.join(row.answer)[:80]}  [{ids}]")
    print(f"best terminal by W/N: {_node_ref(res.best_by_value)}; by IG reward: {_node_ref(res.best_by_ig)}")
    c = res.cost
    tools = ", ".join(f"{k} {v}" for k, v in c.tool_calls.items()) or "none"
    print(
        f"cost: {c.policy_calls} policy calls, {c.candidate_passes} candidate passes, "
        f"{c.ig_forward_passes} IG forward passes, {c.tokens} tokens; tools: {tools}; "
        f"model {c.model_s:.1f} s (policy {c.policy_s:.1f}, scorer {c.scorer_s:.1f}), "
        f"KB {c.kb_s:.2f} s, wall {c.wall_s:.1f} s"
    )
    if trace_path:
        print(f"trace: {trace_path}")


def _node_ref(node_id: int | None) -> str:
    return "-" if node_id is None else f"#{node_id}"


def cmd_replay(args: argparse.Namespace) -> int:
    from mcts.search.trace import TraceError, load_trace

    try:
        trace = load_trace(args.trace)
    except TraceError as exc:
        return _err(str(exc))
    print(replay_text(trace))
    return 0


def replay_text(trace: Any) -> str:
    """The trace's tree as indented text: one line per node (N, W/N, r, PPLs, UCT, action)."""
    tree = trace.to_tree()
    s = trace.settings
    lines = [
        f"question: {trace.question}",
        f"method: {s.method.value}; rounds {s.rounds}; k {s.k}; c {s.c}; seed {s.seed}",
        f"kb: {trace.meta.kb_spec or '-'}; policy: {trace.meta.policy_kind or '-'} "
        f"({trace.meta.policy_model or '-'}); scorer: {trace.meta.scorer_model or '-'}",
    ]
    if trace.result is not None:
        res = trace.result
        lines.append(
            f"stopped: {res.stop_reason} ({res.detail}); answer: {', '.join(res.answer_names) or '(none)'}"
        )
    for node_id in _preorder(tree):
        node = tree[node_id]
        if node.is_root:
            lines.append(f"#0 root  N={node.visits} W/N={_fmt(node.mean_value)}")
            continue
        step = node.step
        action = step.action.render() if step.action is not None else step.raw_text.strip()
        flags = [node.validity] if node.validity != "ok" else []
        if node.terminal:
            flags.append("terminal: " + (", ".join(v.name for v in node.answer)[:60] or "no answer"))
        if node.exhausted:
            flags.append("exhausted")
        if node.simulation:
            flags.append(f"simulated {len(node.simulation)} steps")
        lines.append(
            f"{'  ' * node.depth}#{node.id} N={node.visits} W/N={_fmt(node.mean_value)} r={_fmt(node.reward)} "
            f"PPL(H')={_fmt(node.ppl_history, 2)} PPL(H',Q)={_fmt(node.ppl_with_question, 2)} "
            f"UCT={_fmt(tree.uct(node.id, s.c))}  {action[:120]}"
            + (f"  [{'; '.join(flags)}]" if flags else "")
        )
    return "\n".join(lines)


def _preorder(tree: Any) -> list[int]:
    out, stack = [], [0]
    while stack:
        node_id = stack.pop()
        out.append(node_id)
        stack.extend(reversed(tree[node_id].children))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return int(args.func(args) or 0)
