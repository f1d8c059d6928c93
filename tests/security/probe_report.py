"""What a probe round found, one `Outcome` per probe: the table a person reads, the JSON
file the pytest wrapper (tests/security/test_probes.py) reads, and the closing line

    RESULT tried=<n> handled=<n> weaknesses=<n> vulnerabilities=<n>

A probe not handled is a weakness (a generic error, a slow answer) unless it is marked a
vulnerability: what an attacker gains when it fails (others locked out, markup on the
page, a crash of the app, a file or a secret read).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

VULNERABILITY, WEAKNESS = "vulnerability", "weakness"


@dataclass(frozen=True)
class Outcome:
    group: str
    name: str
    severity: str  # VULNERABILITY or WEAKNESS: what a failure of this probe would be
    handled: bool
    detail: str = ""  # why it was not handled, when an exception says so
    seconds: float = 0.0  # the probe's wall time, so a round stays cheap

    def line(self) -> str:
        why = f" ({self.detail})" if self.detail else ""
        return f"NOT HANDLED ({self.severity}) {self.group}: {self.name}{why}"


@dataclass(frozen=True)
class Counts:
    tried: int
    handled: int
    weaknesses: int
    vulnerabilities: int


def counts(outcomes: Sequence[Outcome]) -> Counts:
    failed = [o for o in outcomes if not o.handled]
    vulnerable = sum(o.severity == VULNERABILITY for o in failed)
    return Counts(len(outcomes), len(outcomes) - len(failed), len(failed) - vulnerable, vulnerable)


def report(outcomes: Sequence[Outcome], title: str = "probe group") -> str:
    groups: dict[str, list[Outcome]] = {}
    for outcome in outcomes:
        groups.setdefault(outcome.group, []).append(outcome)
    lines = [f"{title:<28} {'tried':>5} {'handled':>7} {'seconds':>7}"]
    lines += [
        f"{g:<28} {len(os):>5} {sum(o.handled for o in os):>7} {sum(o.seconds for o in os):>7.1f}"
        for g, os in groups.items()
    ]
    lines += [o.line() for o in outcomes if not o.handled]
    n = counts(outcomes)
    lines.append(
        f"RESULT tried={n.tried} handled={n.handled} weaknesses={n.weaknesses} vulnerabilities={n.vulnerabilities}"
    )
    return "\n".join(lines)


def write_outcomes(path: Path, outcomes: Sequence[Outcome]) -> None:
    path.write_text(json.dumps([asdict(o) for o in outcomes], indent=1), encoding="utf-8")


def read_outcomes(path: Path) -> list[Outcome]:
    return [Outcome(**row) for row in json.loads(path.read_text(encoding="utf-8"))]


def arguments(description: str) -> argparse.Namespace:
    """The command line both probe rounds share: a filter on names and a JSON file."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("only", nargs="?", default="", help="run the probes whose 'group: name' holds this")
    parser.add_argument("--json", type=Path, help="also write every probe's outcome here")
    return parser.parse_args()


def finish(outcomes: Sequence[Outcome], args: argparse.Namespace, title: str) -> int:
    """Print the table, write the JSON file if asked; exit status 1 when a probe failed."""
    print(report(outcomes, title))
    if args.json:
        write_outcomes(args.json, outcomes)
    return int(not all(o.handled for o in outcomes))
