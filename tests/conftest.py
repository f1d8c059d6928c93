"""Shared fixtures: the real Freebase subset, a tiny hand-written KB, the demo KB, and
headless Chromium for the browser tests (`tests.browser_support`).

The real data is read from ../shared/data/fbqa (never copied into the project); tests
that need it skip with a clear message when that folder is absent.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# Nothing in the tests may reach for the Hugging Face hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
# `make test` runs pytest-xdist workers on the two cores: one OpenMP thread each, or the
# workers' torch thread pools oversubscribe the cores and spin against each other.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ.setdefault("OMP_NUM_THREADS", "1")

REPO = Path(__file__).resolve().parents[1]

# `make test` hands whole files to two xdist workers in collection order
# (`--dist loadfile --no-loadscope-reorder`). The files that take longest go first, the
# other files with a real model, Chromium or the probe rounds next, and the many short
# files fill the end, so both workers finish together; by default xdist orders files by
# their number of tests, which started the long files with few tests (the Ray parity,
# the browser pages) last, one worker running them while the other sat idle. Longest
# first, by worker seconds measured file by file (the probe rounds third: their timed
# probes then start after most of the Ray test's three busy processes are done); a file
# missing here only runs later.
LONGEST_FIRST = (
    "tests/unit/test_eval_ray.py",
    "tests/kb_servers/test_virtuoso.py",
    "tests/security/test_probes.py",
    "tests/unit/test_scorer.py",
    "tests/unit/test_search_real.py",
    "tests/kb_servers/test_remote.py",
    "tests/app/test_browser_teacher.py",
    "tests/app/test_app.py",
    "tests/unit/test_policy_react.py",
    "tests/kb_servers/test_guided_remote.py",
    "tests/app/test_browser.py",
    "tests/unit/test_option_ranker.py",
)
HEAVY_MARKERS = ("slow", "browser", "probes")

FBQA = Path(__file__).resolve().parents[2] / "shared" / "data" / "fbqa"
FBQA_KB = FBQA / "kb.nt.gz"

# A KB small enough to read at a glance, with every shape the tools must render:
# a CVT (marriage) with a date, a typed literal, homonyms ("London"), an alias, an
# entity without description, an incoming edge, and bookkeeping predicates to hide.
TINY_TTL = """\
@prefix ns: <http://rdf.freebase.com/ns/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .

ns:m.t_ada ns:type.object.name "Ada Lovelace"@en ;
    ns:common.topic.description "English mathematician and writer, chiefly known for her work on Charles Babbage's proposed mechanical general-purpose computer"@en ;
    ns:common.topic.alias "Augusta Ada King"@en ;
    ns:type.object.type ns:people.person ;
    ns:people.person.date_of_birth "1815-12-10"^^xsd:date ;
    ns:people.person.place_of_birth ns:m.t_london ;
    ns:people.person.spouse_s ns:m.t_cvt1 .
ns:m.t_cvt1 ns:type.object.type ns:people.marriage ;
    ns:people.marriage.spouse ns:m.t_william ;
    ns:people.marriage.from "1835-07-08"^^xsd:date .
ns:m.t_william ns:type.object.name "William King-Noel"@en ;
    ns:common.topic.description "1st Earl of Lovelace"@en ;
    ns:type.object.type ns:people.person .
ns:m.t_london ns:type.object.name "London"@en ;
    ns:common.topic.description "capital city of England and the United Kingdom"@en ;
    ns:type.object.type ns:location.citytown .
ns:m.t_london_on ns:type.object.name "London"@en ;
    ns:common.topic.description "city in Ontario, Canada"@en ;
    ns:type.object.type ns:location.citytown .
ns:m.t_babbage ns:type.object.name "Charles Babbage"@en ;
    ns:common.topic.alias "Father of the computer"@en ;
    ns:type.object.type ns:people.person ;
    ns:people.person.place_of_birth ns:m.t_london ;
    ns:base.science.colleague ns:m.t_ada .
ns:m.t_engine ns:type.object.name "Analytical Engine"@en ;
    ns:type.object.type ns:computer.computer ;
    ns:computer.computer.designer ns:m.t_babbage .
"""


@pytest.fixture(scope="session")
def fbqa_dir() -> Path:
    if not FBQA_KB.exists():
        pytest.skip(f"real data absent: {FBQA} (expected ../shared/data/fbqa next to the repo)")
    return FBQA


@pytest.fixture(scope="session")
def fbqa_kb(fbqa_dir: Path):
    """The real Freebase subset, embedded (loaded once per test session, ~1.5 s)."""
    from kb.spec import open_kb

    return open_kb(str(fbqa_dir / "kb.nt.gz"))


@pytest.fixture(scope="session")
def tiny_ttl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("tiny") / "tiny.ttl"
    path.write_text(TINY_TTL, encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny_kb(tiny_ttl: Path):
    from kb.embedded import EmbeddedKB

    return EmbeddedKB(tiny_ttl)


@pytest.fixture(scope="session")
def demo_kb():
    from kb.spec import DEMO_KB, open_kb

    if not DEMO_KB.exists():
        pytest.skip(f"bundled demo KB not written yet: {DEMO_KB}")
    return open_kb("demo")


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for one test module; skips with a message when it is absent."""
    from tests.browser_support import chromium, require_chromium

    require_chromium()
    with chromium() as b:
        yield b


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files in LONGEST_FIRST order, then the other files with a heavy marker, then the
    rest; a stable sort, so each file's tests keep their order and stay together."""
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    heavy = {
        item.nodeid.split("::")[0]
        for item in items
        if any(item.get_closest_marker(name) for name in HEAVY_MARKERS)
    }

    def order(item: pytest.Item) -> int:
        path = item.nodeid.split("::")[0]
        return rank.get(path, len(rank) + (path not in heavy))

    items.sort(key=order)
