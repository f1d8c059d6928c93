"""A real SPARQL endpoint process for tests: `oxigraph serve` on 127.0.0.1.

Use the context manager anywhere:

    with oxigraph_server(DATA / "kb.nt.gz") as server:
        RemoteKB(server.url).query("ASK { ?s ?p ?o }")

or the module-scoped pytest fixture, bound to a name in the test module (pytest finds
fixtures by module attribute; an assignment keeps ruff's F811 quiet, unlike an import):

    from tests import oxigraph_server as servers

    fbqa_server = servers.fbqa_server

    def test_something(fbqa_server):  # an OxigraphServer serving ../shared/data/fbqa/kb.nt.gz
        kb = RemoteKB(fbqa_server.url)

(`demo_server` serves the bundled examples/demo_kb.ttl the same way.)

How: `oxigraph load --location <tmp>/db --file <data>` (gzip is read directly, ~1.6 s
for the 237k-triple subset), then `oxigraph serve-read-only --location <tmp>/db` on a
free port with a server-side query time limit; readiness = an `ASK {}` answered. The
process is stopped (terminate, then kill) and the temporary folder removed on exit,
also when the test fails. The fixture skips with a clear message when the `oxigraph`
CLI or the data folder is absent.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "fbqa"
FBQA_KB = DATA / "kb.nt.gz"
DEMO_KB = Path(__file__).resolve().parents[1] / "examples" / "demo_kb.ttl"


@dataclass(frozen=True)
class OxigraphServer:
    url: str  # the SPARQL query endpoint, e.g. http://127.0.0.1:40123/query
    port: int
    data: Path | None
    log: Path  # the server's stdout+stderr


def oxigraph_binary() -> Path | None:
    """The `oxigraph` CLI next to this interpreter (the venv), else on PATH."""
    here = Path(sys.executable).parent / "oxigraph"
    if here.exists():
        return here
    found = shutil.which("oxigraph")
    return Path(found) if found else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def closed_port_url() -> str:
    """An endpoint URL on 127.0.0.1 where nothing listens (connection refused)."""
    return f"http://127.0.0.1:{free_port()}/query"


def _ready(url: str) -> bool:
    query = urllib.parse.urlencode({"query": "ASK {}"})
    request = urllib.request.Request(f"{url}?{query}", headers={"Accept": "application/sparql-results+json"})
    try:
        with urllib.request.urlopen(request, timeout=1) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)


@contextmanager
def oxigraph_server(
    data: Path | None = None, *, query_timeout_s: float = 10.0, startup_s: float = 30.0
) -> Iterator[OxigraphServer]:
    """Serve `data` (an RDF file oxigraph can load, .gz allowed; None = empty store)."""
    binary = oxigraph_binary()
    if binary is None:
        raise FileNotFoundError("the `oxigraph` CLI is not installed (pip install oxigraph)")
    workdir = Path(tempfile.mkdtemp(prefix="oxigraph-test-"))
    process: subprocess.Popen[bytes] | None = None
    try:
        db = workdir / "db"
        log = workdir / "server.log"
        if data is not None:
            subprocess.run(
                [str(binary), "load", "--location", str(db), "--file", str(data)],
                check=True,
                capture_output=True,
                timeout=300,
            )
            mode = "serve-read-only"
        else:
            mode = "serve"
        for _attempt in range(3):  # another process may grab the free port first
            port = free_port()
            url = f"http://127.0.0.1:{port}/query"
            with log.open("wb") as log_file:
                process = subprocess.Popen(
                    [
                        str(binary),
                        mode,
                        "--location",
                        str(db),
                        "--bind",
                        f"127.0.0.1:{port}",
                        "--timeout-s",
                        f"{query_timeout_s:g}",
                    ],
                    stdout=log_file,
                    stderr=subprocess.STDOUT,
                )
            deadline = time.monotonic() + startup_s
            while process.poll() is None and time.monotonic() < deadline and not _ready(url):
                time.sleep(0.05)
            if process.poll() is None and _ready(url):
                yield OxigraphServer(url=url, port=port, data=data, log=log)
                return
            _stop(process)
        raise RuntimeError(f"oxigraph serve did not start: {log.read_text(errors='replace')[-500:]}")
    finally:
        if process is not None:
            _stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


def serving(data: Path) -> Iterator[OxigraphServer]:
    """A fixture's body: serve `data`, skipping with a clear message when the file or the
    `oxigraph` CLI is absent."""
    if not data.exists():
        pytest.skip(f"data absent: {data}")
    if oxigraph_binary() is None:
        pytest.skip("the `oxigraph` CLI is not installed")
    with oxigraph_server(data) as server:
        yield server


@pytest.fixture(scope="module")
def fbqa_server() -> Iterator[OxigraphServer]:
    """`oxigraph serve` with the real Freebase subset ../shared/data/fbqa/kb.nt.gz."""
    yield from serving(FBQA_KB)


@pytest.fixture(scope="module")
def demo_server() -> Iterator[OxigraphServer]:
    """`oxigraph serve` with the bundled demo KB examples/demo_kb.ttl."""
    yield from serving(DEMO_KB)
