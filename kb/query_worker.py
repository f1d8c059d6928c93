"""pyoxigraph queries in a child process that is killed at the deadline.

pyoxigraph (0.5.13) has no cancellation API: a query abandoned by a waiting thread keeps
running inside one Rust call (an ORDER BY over a cartesian product grew the app from
4.3 to 18.4 GB after its "time-out"), and its parser recurses (3,000 nested `{` crash
the process with SIGSEGV). So every query runs in a `QueryWorker`: a small Python child
(`python -m kb.query_worker`) that loads the RDF files itself and answers requests over a
socket pair. The parent waits for the reply until the deadline; past it, the child is
killed (SIGKILL: CPU is free at once) and a fresh one is started in the background. The
child runs under an address-space ceiling (RLIMIT_AS), so a query that would eat the
machine aborts the child instead; a crash is one `KBError`, never the app's.

Cost: one round trip over a local socket plus pickling the rows (bench/kb_worker.py
measures it against an in-process query). The child holds the store; the parent holds
none. Requests to one worker are serialised; `WorkerPool` holds several.

This module knows nothing of SPARQL guarding (`kb.sparql`) or of name indexes.
"""

from __future__ import annotations

import atexit
import gzip
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
import weakref
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from kb.base import KBError, QueryRejected, QueryResult, QueryTimeout, Term

# Suffix (after an optional .gz) -> pyoxigraph RdfFormat attribute name.
FORMATS = {".nt": "N_TRIPLES", ".ttl": "TURTLE", ".nq": "N_QUADS", ".trig": "TRIG"}
_XSD_STRING = "http://www.w3.org/2001/XMLSchema#string"
_LANG_STRING = "http://www.w3.org/1999/02/22-rdf-syntax-ns#langString"
# Memory a query may use (MB): the child's address-space ceiling (RLIMIT_AS) is its
# virtual size once the store is loaded plus this much (env KB_QUERY_MEMORY_MB).
DEFAULT_MEMORY_MB = int(os.environ.get("KB_QUERY_MEMORY_MB", "1024"))
# A spare child per worker, loaded in the background, takes over at once after a kill
# (env KB_QUERY_SPARE=0: none, half the memory, seconds of "still loading" instead).
DEFAULT_SPARE = os.environ.get("KB_QUERY_SPARE", "1").strip() not in ("0", "false", "no", "off")
LOAD_TIMEOUT_S = 300.0  # loading a large file set; queries have their own deadlines
RESTART_WAIT_S = 60.0  # a request waits this long for a restarting child to load
_LIVE: weakref.WeakSet[QueryWorker] = weakref.WeakSet()


def format_name(path: Path) -> str | None:
    suffixes = path.suffixes
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return FORMATS.get(suffixes[-1]) if suffixes else None


# ----- the child ----------------------------------------------------------------------
def _term(node: Any) -> tuple[str, str, str | None, str | None] | None:
    """A pyoxigraph term as `Term` fields (plain tuples pickle several times faster)."""
    import pyoxigraph as ox

    if node is None:
        return None
    if isinstance(node, ox.NamedNode):
        return ("iri", node.value, None, None)
    if isinstance(node, ox.Literal):
        dt = node.datatype.value
        return ("literal", node.value, None if dt in (_XSD_STRING, _LANG_STRING) else dt, node.language)
    if isinstance(node, ox.BlankNode):
        return ("bnode", node.value, None, None)
    return ("literal", str(node), None, None)  # RDF-star quoted triple: shown as text


def _load(store: Any, files: list[str]) -> None:
    import pyoxigraph as ox

    for name in files:
        f = Path(name)
        fmt = getattr(ox.RdfFormat, format_name(f) or "")
        try:
            if f.suffix == ".gz":
                with gzip.open(f, "rb") as fh:
                    store.bulk_load(fh, format=fmt)
            else:
                store.bulk_load(path=str(f), format=fmt)
        except (SyntaxError, OSError, EOFError) as exc:
            raise ValueError(f"{f.name}: cannot load: {' '.join(str(exc).split())}") from exc


def _answer(store: Any, op: str, sparql: str, max_rows: int) -> tuple[Any, ...]:
    import pyoxigraph as ox

    try:
        result = store.query(sparql, use_default_graph_as_union=True)
        if op == "parse":
            return ("ok", None)
        if isinstance(result, ox.QueryBoolean):
            return ("ask", bool(result))
        if not isinstance(result, ox.QuerySolutions):
            return ("rejected", "only SELECT and ASK queries are answered (CONSTRUCT/DESCRIBE are not)")
        variables = tuple(v.value for v in result.variables)
        rows = []
        truncated = False
        for solution in result:
            if len(rows) >= max_rows:
                truncated = True
                break
            rows.append(tuple(_term(solution[i]) for i in range(len(variables))))
        return ("select", variables, rows, truncated)
    except SyntaxError as exc:
        return ("rejected", f"SPARQL does not parse: {' '.join(str(exc).split())}")
    except (OSError, ValueError, TypeError, RuntimeError) as exc:
        return ("error", f"query failed: {' '.join(str(exc).split())}")
    except MemoryError:
        return ("error", "query ran out of memory")


def _die_with_parent() -> None:
    """Exit when the parent process dies, even mid-query (EOF on the socket covers the
    idle case). Not PR_SET_PDEATHSIG: it fires when the parent *thread* that spawned the
    child exits, and the app spawns workers from short-lived request threads, so healthy
    workers were killed under the next visitor's query."""
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(0.5)
            if os.getppid() != parent:  # re-parented: the parent process is gone
                os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def _virtual_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def child_main(argv: list[str]) -> None:
    """`python -m kb.query_worker FD MEMORY_MB [FILE...]`: load, then answer until EOF."""
    import resource

    fd, memory_mb, files = int(argv[0]), int(argv[1]), argv[2:]
    _die_with_parent()
    conn = Connection(fd)
    try:
        import pyoxigraph as ox

        store = ox.Store()
        _load(store, files)
    except (ValueError, MemoryError) as exc:
        conn.send(("load-error", str(exc) or "out of memory while loading"))
        return
    # The ceiling is set once the store is loaded: what a query may add on top of it,
    # so a large KB loads whatever its size and every query gets the same headroom.
    ceiling = _virtual_bytes() + memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
    conn.send(("ready", len(store)))
    while True:
        try:
            op, sparql, max_rows = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(_answer(store, op, sparql, max_rows))


# ----- the parent ---------------------------------------------------------------------
def _result(reply: tuple[Any, ...]) -> QueryResult | None:
    kind = reply[0]
    if kind == "ok":
        return None
    if kind == "ask":
        return QueryResult(boolean=reply[1])
    if kind == "select":
        _, variables, rows, truncated = reply
        terms = tuple(tuple(Term(*t) if t is not None else None for t in row) for row in rows)
        return QueryResult(variables=variables, rows=terms, truncated=truncated)
    if kind == "rejected":
        raise QueryRejected(reply[1])
    raise KBError(reply[1])


class QueryWorker:
    """One child process holding one store (empty when `files` is empty), and with
    `spare=True` a second one loaded in the background that takes over at once when
    the first is killed (reloading the real subset takes seconds; queries in between
    would time out). The spare doubles the store's memory."""

    def __init__(
        self, files: tuple[Path, ...] = (), *, memory_mb: int = DEFAULT_MEMORY_MB, spare: bool = DEFAULT_SPARE
    ) -> None:
        self.files = tuple(str(f) for f in files)
        self.memory_mb = memory_mb
        self.keep_spare = spare
        self.size = 0  # triples in the store, known once ready
        self._proc: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._spare: tuple[subprocess.Popen[bytes], Connection] | None = None
        self._ready = False
        self.restarts = 0
        self._start()
        _LIVE.add(self)

    def _start(self) -> None:
        if self._spare is not None:  # already loading (or loaded) in the background
            (self._proc, self._conn), self._spare = self._spare, None
        else:
            self._proc, self._conn = self._spawn()
        self._ready = False

    def _spawn(self) -> tuple[subprocess.Popen[bytes], Connection]:
        parent, child = socket.socketpair()
        # RUST_BACKTRACE off: an allocation failure then prints one line, not a page.
        env = {**os.environ, "MALLOC_ARENA_MAX": "2", "OMP_NUM_THREADS": "1", "RUST_BACKTRACE": "0"}
        proc = subprocess.Popen(
            [sys.executable, "-m", "kb.query_worker", str(child.fileno()), str(self.memory_mb), *self.files],
            pass_fds=(child.fileno(),),
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=str(Path(__file__).resolve().parents[1]),
        )
        child.close()
        return proc, Connection(parent.detach())

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        if self._proc is not None:
            self._proc.wait()
        if self._conn is not None:
            self._conn.close()
        self._proc = self._conn = None

    def _restart(self) -> None:
        self._kill()
        self.restarts += 1
        self._start()

    def _crash_message(self) -> str:
        code = self._proc.wait() if self._proc is not None else None
        if code in (-signal.SIGABRT, -signal.SIGKILL):  # Rust aborts when an allocation fails
            return f"the query was stopped: it needed more than its {self.memory_mb} MB memory ceiling"
        if code in (-signal.SIGSEGV, -signal.SIGBUS):
            return "the query crashed the query engine (too deeply nested?) and was stopped"
        return f"the query engine stopped unexpectedly (exit {code})"

    def wait_ready(self, timeout_s: float = LOAD_TIMEOUT_S) -> None:
        """Wait for the child to finish loading. Raises ValueError (the load failed),
        QueryTimeout (still loading at the deadline) or KBError (it died)."""
        if self._ready:
            return
        assert self._conn is not None
        if not self._conn.poll(max(timeout_s, 0.0)):
            raise QueryTimeout("the knowledge base is still loading (restarted after a stopped query)")
        try:
            reply = self._conn.recv()
        except (EOFError, OSError):
            message = self._crash_message()
            self._restart()
            raise KBError(f"the knowledge base failed to load: {message}") from None
        if reply[0] == "load-error":
            self._kill()
            raise ValueError(reply[1])
        self.size = reply[1]
        self._ready = True
        if self.keep_spare and self._spare is None:  # loads while this one answers
            self._spare = self._spawn()

    def request(
        self, op: str, sparql: str, *, timeout_s: float, max_rows: int = 10_000, limit_s: float | None = None
    ) -> QueryResult | None:
        """Run `op` ("query" or "parse") within `timeout_s` seconds of query time.
        Past the deadline the child is killed and restarted; raises QueryTimeout naming
        `limit_s` (the caller's whole limit; default `timeout_s`).

        A child still loading (a restart after a stopped query, when no spare was ready)
        is waited for up to `RESTART_WAIT_S` before the query's own deadline starts: on a
        loaded machine even the parse checker's empty child takes seconds to start, which
        is not the next query's time."""
        if self._conn is None:
            self._start()
        self.wait_ready(max(timeout_s, RESTART_WAIT_S))
        deadline = time.monotonic() + timeout_s
        assert self._conn is not None
        try:
            self._conn.send((op, sparql, max_rows))
            if not self._conn.poll(max(deadline - time.monotonic(), 0.0)):
                self._restart()
                what = "parse check" if op == "parse" else "query"
                limit = limit_s if limit_s is not None else timeout_s
                raise QueryTimeout(f"{what} ran past its {limit:.3g} s time limit and was stopped")
            reply = self._conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            message = self._crash_message()
            self._restart()
            raise KBError(message) from None
        return _result(reply)

    def close(self) -> None:
        self._kill()
        if self._spare is not None:
            proc, conn = self._spare
            self._spare = None
            proc.kill()
            proc.wait()
            conn.close()

    def __del__(self) -> None:
        # Not contextlib.suppress: at interpreter shutdown module globals may already be None.
        try:  # noqa: SIM105
            self.close()
        except Exception:
            pass  # nothing left to report to


class WorkerPool:
    """`size` workers over the same files; a request takes an idle one (waiting for one
    counts against its deadline), so concurrent sessions do not queue behind one query."""

    def __init__(
        self,
        files: tuple[Path, ...] = (),
        *,
        size: int = 1,
        memory_mb: int = DEFAULT_MEMORY_MB,
        spare: bool = DEFAULT_SPARE,
        wait: bool = True,
    ):
        """`wait=False`: return while the children still load (the first request waits
        for its worker, `QueryWorker.request`); `size` is then 0."""
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.workers = [QueryWorker(files, memory_mb=memory_mb, spare=spare) for _ in range(size)]
        self._idle: queue.SimpleQueue[QueryWorker] = queue.SimpleQueue()
        for w in self.workers:
            if wait:
                w.wait_ready()
            self._idle.put(w)
        self.size = self.workers[0].size

    def request(
        self, op: str, sparql: str, *, timeout_s: float, max_rows: int = 10_000
    ) -> QueryResult | None:
        started = time.monotonic()
        try:
            worker = self._idle.get(timeout=max(timeout_s, 0.001))
        except queue.Empty:
            raise QueryTimeout(
                f"the knowledge base was busy for the whole {timeout_s:g} s time limit"
            ) from None
        try:
            remaining = timeout_s - (time.monotonic() - started)
            return worker.request(op, sparql, timeout_s=remaining, max_rows=max_rows, limit_s=timeout_s)
        finally:
            self._idle.put(worker)

    @property
    def restarts(self) -> int:
        return sum(w.restarts for w in self.workers)

    def close(self) -> None:
        for w in self.workers:
            w.close()


_PARSER: WorkerPool | None = None
_PARSER_LOCK = threading.Lock()


def parser_pool() -> WorkerPool:
    """The process-wide worker (empty store) that runs `kb.sparql`'s parse check. Started
    without waiting for it: `kb.embedded` starts it beside a store's own worker, so it
    has loaded by the first query instead of costing that query a process start."""
    global _PARSER
    with _PARSER_LOCK:
        if _PARSER is None:
            # No spare: an empty store restarts in a fraction of a second.
            _PARSER = WorkerPool((), size=1, memory_mb=min(DEFAULT_MEMORY_MB, 512), spare=False, wait=False)
        return _PARSER


@atexit.register
def _close_all() -> None:
    for w in list(_LIVE):
        w.close()


if __name__ == "__main__":
    child_main(sys.argv[1:])
