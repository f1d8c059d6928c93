"""`python -m kb tool --kb SPEC 'ACTION'`: run one agent tool and print its observation.

Exit codes: 0 when the tool ran (tool errors are observations and print as
`Error: ...`), 2 for a bad KB spec or an action that does not parse. Imports of the
store and models happen after argument parsing, so `--help` is fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m kb", description="Knowledge-base tools of the MCTS-KBQA agent."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    tool = sub.add_parser(
        "tool",
        help="run one tool call and print the observation",
        description="Run one tool call, e.g. 'SearchNodes(\"Barack Obama\")', and print what the agent would see.",
    )
    tool.add_argument("action", help="the tool call, e.g. 'SearchNodes(\"Barack Obama\")' or 'Done()'")
    tool.add_argument(
        "--kb",
        default=None,
        help='"demo" (default, or env KB), "demo-wikidata", an RDF file/folder, or an http(s):// '
        "endpoint (wikidata+https://... names a Wikidata endpoint)",
    )
    tool.add_argument(
        "--flavour",
        choices=("freebase", "wikidata"),
        default=None,
        help="the KB's vocabulary (default: env KB_FLAVOUR, else read from the data; endpoints: freebase)",
    )
    tool.add_argument("--json", action="store_true", help="print the whole observation as JSON")
    tool.add_argument("--timeout", type=float, default=10.0, help="seconds per tool call (default 10)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    from kb.action_parser import parse_action
    from kb.actions import ActionParseError
    from kb.spec import KBSpecError, open_kb
    from kb.tools import Toolbox

    try:
        action = parse_action(args.action)
    except ActionParseError as exc:
        print(f"python -m kb: cannot parse the action: {exc}", file=sys.stderr)
        return 2
    try:
        kb = open_kb(args.kb, flavour=args.flavour)
    except KBSpecError as exc:
        print(f"python -m kb: bad KB spec: {exc}", file=sys.stderr)
        return 2
    obs = Toolbox(kb, timeout_s=args.timeout).run(action)
    if args.json:
        print(json.dumps(asdict(obs), ensure_ascii=False, indent=2))
    else:
        print(obs.text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
