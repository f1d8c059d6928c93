"""The attack probes as tests: every probe of both rounds is handled, group by group.

Each round runs once per session in its own process, as a person runs it
(`python -m tests.security.probes`, `python -m tests.security.api_probes`): the probes set
public mode before the app is imported, patch the app's world and run queue, and measure
the process's memory, none of which may leak into the other tests. A test per group
checks that group's count (a probe that silently went missing fails it) and names every
probe not handled. `-m probes` selects them, `-m "not probes"` leaves them out.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.security.probe_report import Outcome, counts, read_outcomes

pytestmark = pytest.mark.probes

REPO = Path(__file__).resolve().parents[2]
ROUND_S = 600  # a whole round on a loaded two-core machine takes a minute or two

# Probes per group, as the rounds define them today.
PARTS = {
    "4 queries that do not stop": 8,
    "5 deep nesting": 6,
    "5 quadratic scans": 4,
    "7 resources": 6,
    "held: forms refused": 13,
    "held: LIMIT enforced": 1,
    "held: local paths": 4,
    "2 endpoint": 6,
    "2 SSRF (public mode)": 13,
    "1 credentials": 1,
    "3 public mode": 7,
    "6 traces": 16,
    "8 one client locks out all": 6,
    "9 malformed traces": 12,
    "10 markup on the page": 5,
}
LIVE_API = {
    "queue": 8,
    "run fields": 8,
    "uploaded traces": 13,
    "markup": 1,
    "inspect": 7,
    "replay": 7,
    "form events": 3,
    "example traces": 4,
    "file routes": 5,
    "floods": 2,
    "public limits": 16,
}
ROUNDS = {"tests.security.probes": PARTS, "tests.security.api_probes": LIVE_API}


def _run_round(module: str, folder: Path) -> list[Outcome] | str:
    """The round's outcomes, or why it gave none."""
    out, log = folder / "outcomes.json", folder / "output.log"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with log.open("w") as sink:
        # Exit status 1 means a probe failed: the group tests say which.
        subprocess.run([sys.executable, "-m", module, "--json", str(out)], cwd=REPO, env=env,
                       stdout=sink, stderr=subprocess.STDOUT, timeout=ROUND_S, check=False)  # fmt: skip
    if not out.exists():  # the round itself broke: its output says where
        return f"{module} wrote no outcomes:\n{log.read_text(errors='replace')[-4000:]}"
    return read_outcomes(out)


@pytest.fixture(scope="module")
def outcomes_of(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], list[Outcome]]:
    """A round's outcomes, the round run on first use (`-k` on one round runs that one only)."""
    done: dict[str, list[Outcome] | str] = {}

    def outcomes(module: str) -> list[Outcome]:
        if module not in done:  # a broken round is remembered too: it is not run again per group
            done[module] = _run_round(module, tmp_path_factory.mktemp(module.rsplit(".", 1)[1]))
        found = done[module]
        if isinstance(found, str):
            pytest.fail(found)
        return found

    return outcomes


def _short(module: str) -> str:
    return module.rsplit(".", 1)[1]


@pytest.mark.parametrize(
    ("module", "group"),
    [(module, group) for module, groups in ROUNDS.items() for group in groups],
    ids=[f"{_short(module)}:{group}" for module, groups in ROUNDS.items() for group in groups],
)
def test_every_probe_of_the_group_is_handled(
    outcomes_of: Callable[[str], list[Outcome]], module: str, group: str
) -> None:
    outcomes = [o for o in outcomes_of(module) if o.group == group]
    assert len(outcomes) == ROUNDS[module][group], [o.name for o in outcomes]
    failed = [o.line() for o in outcomes if not o.handled]
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize("module", list(ROUNDS), ids=[_short(m) for m in ROUNDS])
def test_the_round_has_only_the_listed_groups_and_no_failure(
    outcomes_of: Callable[[str], list[Outcome]], module: str
) -> None:
    outcomes = outcomes_of(module)
    assert {o.group for o in outcomes} == set(ROUNDS[module])
    tried = sum(ROUNDS[module].values())
    n = counts(outcomes)
    assert (n.tried, n.handled, n.weaknesses, n.vulnerabilities) == (tried, tried, 0, 0)
