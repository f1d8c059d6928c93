"""A real Virtuoso for tests: Debian's `virtuoso-opensource` 7.2 on 127.0.0.1.

Use the context manager anywhere:

    with virtuoso_server(DATA / "kb.nt.gz") as server:
        RemoteKB(server.url).query("ASK { ?s ?p ?o }")

or the session-scoped pytest fixture, bound to a name in the test module (as with
`tests.oxigraph_server`: pytest finds fixtures by module attribute):

    from tests import virtuoso_server as virtuoso

    fbqa_virtuoso = virtuoso.fbqa_virtuoso

    def test_something(fbqa_virtuoso):  # a VirtuosoServer holding ../shared/data/fbqa/kb.nt.gz
        kb = RemoteKB(fbqa_virtuoso.url)

How, as the Virtuoso bulk-loading guide does it: a throw-away folder with its own
`virtuoso.ini` (database files there, free SQL and HTTP ports, `DirsAllowed` naming the
folder of the data file, a server-side `MaxQueryExecutionTime`), `virtuoso-t +foreground`,
then over `isql-vt`: a free-text rule for the name and alias predicates (what
`bif:contains` searches), `ld_dir(folder, file, 'http://freebase.com')`,
`rdf_loader_run()`, `checkpoint`. Readiness = an `ASK {}` answered on /sparql. The
process is stopped (terminate, then kill) and the folder removed on exit, also when the
test fails. The fixture skips with a clear message when the package (`virtuoso-t`,
`isql-vt`) or the data is absent; `make test` installs the package where it can.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.oxigraph_server import DATA, _ready, _stop, free_port

FBQA_KB = DATA / "kb.nt.gz"
GRAPH = "http://freebase.com"  # the graph KBQA setups load Freebase into
# Literals `bif:contains` can search: names and aliases (a rule per predicate keeps the
# text index to what name search needs; Freebase's descriptions would double it).
TEXT_INDEXED = (
    "http://rdf.freebase.com/ns/type.object.name",
    "http://rdf.freebase.com/ns/common.topic.alias",
)
INSTALL_HINT = "apt-get install virtuoso-opensource (make test does this as root)"


@dataclass(frozen=True)
class VirtuosoServer:
    url: str  # the SPARQL endpoint, e.g. http://127.0.0.1:40123/sparql
    http_port: int
    sql_port: int
    graph: str
    log: Path  # the server's log file
    load_s: float  # seconds spent in ld_dir + rdf_loader_run + checkpoint


def binaries() -> tuple[str, str] | None:
    """(`virtuoso-t`, `isql-vt`) from PATH, or None when the package is not installed."""
    server, isql = shutil.which("virtuoso-t"), shutil.which("isql-vt")
    return (server, isql) if server and isql else None


def _ini(workdir: Path, sql_port: int, http_port: int, allowed: list[Path], query_timeout_s: int) -> str:
    db = workdir / "db"
    dirs = ", ".join(["."] + [str(p) for p in allowed])
    return f"""\
[Database]
DatabaseFile = {db}/virtuoso.db
ErrorLogFile = {db}/virtuoso.log
LockFile = {db}/virtuoso.lck
TransactionFile = {db}/virtuoso.trx
xa_persistent_file = {db}/virtuoso.pxa
ErrorLogLevel = 7
FileExtend = 200
Striping = 0
TempStorage = TempDatabase

[TempDatabase]
DatabaseFile = {db}/virtuoso-temp.db
TransactionFile = {db}/virtuoso-temp.trx
Striping = 0

[Parameters]
ServerPort = 127.0.0.1:{sql_port}
DisableUnixSocket = 1
CheckpointInterval = 0
DirsAllowed = {dirs}
NumberOfBuffers = 20000
MaxDirtyBuffers = 15000
ThreadsPerQuery = 2
MaxQueryMem = 500M
CaseMode = 2

[HTTPServer]
ServerPort = 127.0.0.1:{http_port}
ServerRoot = {workdir}/vsp
ServerThreads = 4
MaxClientConnections = 4
Charset = UTF-8
EnabledGzipContent = 0

[SPARQL]
ResultSetMaxRows = 1000000
MaxQueryCostEstimationTime = 0
MaxQueryExecutionTime = {query_timeout_s}
"""


def isql(isql_binary: str, sql_port: int, script: str, timeout_s: float = 300) -> str:
    """Run SQL statements through `isql-vt` as dba; raises RuntimeError on an error line."""
    done = subprocess.run(
        [isql_binary, f"127.0.0.1:{sql_port}", "dba", "dba"],
        input=script,
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    out = done.stdout + done.stderr
    if done.returncode != 0 or "*** Error" in out:
        raise RuntimeError(f"isql failed: {out[-800:]}")
    return out


def _load_script(data: Path, graph: str) -> str:
    rules = "".join(
        f"DB.DBA.RDF_OBJ_FT_RULE_ADD(null, '{p}', 'names{i}');\n" for i, p in enumerate(TEXT_INDEXED)
    )
    return (
        rules + f"ld_dir('{data.parent}', '{data.name}', '{graph}');\n"
        "rdf_loader_run();\n"
        "DB.DBA.VT_INC_INDEX_DB_DBA_RDF_OBJ();\n"
        "checkpoint;\n"
        "SELECT ll_state, ll_error FROM DB.DBA.load_list;\n"
    )


@contextmanager
def virtuoso_server(
    data: Path | None = None, *, graph: str = GRAPH, query_timeout_s: int = 10, startup_s: float = 60.0
) -> Iterator[VirtuosoServer]:
    """Run Virtuoso holding `data` (an RDF file Virtuoso's loader reads, .gz allowed) in
    `graph`; None = an empty store."""
    found = binaries()
    if found is None:
        raise FileNotFoundError(f"Virtuoso is not installed ({INSTALL_HINT})")
    server_binary, isql_binary = found
    workdir = Path(tempfile.mkdtemp(prefix="virtuoso-test-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        (workdir / "db").mkdir()
        (workdir / "vsp").mkdir()
        ini = workdir / "virtuoso.ini"
        log = workdir / "db" / "virtuoso.log"
        allowed = [data.parent.resolve()] if data is not None else []
        for _attempt in range(3):  # another process may take a free port first
            sql_port, http_port = free_port(), free_port()
            ini.write_text(_ini(workdir, sql_port, http_port, allowed, query_timeout_s), encoding="utf-8")
            url = f"http://127.0.0.1:{http_port}/sparql"
            process = subprocess.Popen(
                [server_binary, "+foreground", "+configfile", str(ini)],
                cwd=workdir,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            deadline = time.monotonic() + startup_s
            while process.poll() is None and time.monotonic() < deadline and not _ready(url):
                time.sleep(0.1)
            if process.poll() is None and _ready(url):
                break
            _stop(process)
            for leftover in (workdir / "db").iterdir():
                if leftover.name != "virtuoso.log":
                    leftover.unlink()
        else:
            tail = log.read_text(errors="replace")[-800:] if log.exists() else ""
            raise RuntimeError(f"virtuoso-t did not start: {tail}")
        started = time.monotonic()
        if data is not None:
            out = isql(isql_binary, sql_port, _load_script(data.resolve(), graph))
            if "NULL" not in out.split("ll_error")[-1]:
                raise RuntimeError(f"Virtuoso's loader reported an error: {out[-800:]}")
        yield VirtuosoServer(url, http_port, sql_port, graph, log, time.monotonic() - started)
    finally:
        if process is not None:
            _stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


def serving(data: Path, **options) -> Iterator[VirtuosoServer]:
    """A fixture's body: serve `data`, skipping with a clear message when the file or the
    Virtuoso package is absent."""
    if not data.exists():
        pytest.skip(f"data absent: {data}")
    if binaries() is None:
        pytest.skip(f"Virtuoso is not installed: {INSTALL_HINT}")
    with virtuoso_server(data, **options) as server:
        yield server


@pytest.fixture(scope="session")
def fbqa_virtuoso() -> Iterator[VirtuosoServer]:
    """Virtuoso holding the real Freebase subset ../shared/data/fbqa/kb.nt.gz in graph
    http://freebase.com (loaded once per test session, a few seconds)."""
    yield from serving(FBQA_KB)
