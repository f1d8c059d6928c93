"""One spec string chooses a knowledge base everywhere (CLI, app, env `KB`).

- `None` -> the env variable `KB`, else `"demo"`;
- `"demo"` -> the bundled `examples/demo_kb.ttl` (embedded);
- a path to an `.nt`/`.ttl`/`.nq`/`.trig` file (optionally `.gz`) or a folder of them
  -> `kb.embedded.EmbeddedKB`;
- an `http://` or `https://` SPARQL endpoint URL -> `kb.remote.RemoteKB`.

Opened KBs are cached per spec in this process (loading the real subset takes ~1.5 s;
the app and the tests reuse one). A bad spec raises `KBSpecError` with one clear line.
This module knows nothing of tools or search.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from kb.base import KnowledgeBase

DEMO_KB = Path(__file__).resolve().parents[1] / "examples" / "demo_kb.ttl"
ENV_VAR = "KB"

_CACHE: dict[str, KnowledgeBase] = {}
_LOCK = threading.Lock()


class KBSpecError(ValueError):
    """A spec that names no loadable knowledge base; the message is one clear line."""


def resolve_spec(spec: str | None = None) -> str:
    """The spec actually meant: `spec`, else env `KB`, else "demo" (whitespace trimmed)."""
    chosen = spec if spec is not None else os.environ.get(ENV_VAR) or "demo"
    chosen = chosen.strip()
    if not chosen:
        raise KBSpecError(
            'empty KB spec; use "demo", a .nt/.ttl file or folder, or an http(s):// SPARQL endpoint'
        )
    return chosen


def open_kb(spec: str | None = None) -> KnowledgeBase:
    """Open (or reuse) the knowledge base a spec names. Raises KBSpecError."""
    chosen = resolve_spec(spec)
    key = _cache_key(chosen)
    with _LOCK:  # one load per spec even when two threads ask at once
        kb = _CACHE.get(key)
        if kb is None:
            kb = _open(chosen)
            _CACHE[key] = kb
        return kb


def _cache_key(spec: str) -> str:
    # Two spellings of one path ("kb.nt.gz", "./kb.nt.gz") share one loaded store.
    if spec == "demo" or "://" in spec:
        return spec
    return str(Path(spec).expanduser().resolve())


def _open(spec: str) -> KnowledgeBase:
    if spec.startswith(("http://", "https://")):
        from kb.remote import RemoteKB

        try:
            return RemoteKB(spec)
        except ValueError as exc:
            raise KBSpecError(f"bad endpoint URL {spec!r}: {exc}") from exc
    if "://" in spec:
        raise KBSpecError(f"unsupported KB spec {spec!r}: only http(s):// endpoint URLs are supported")
    path = DEMO_KB if spec == "demo" else Path(spec).expanduser()
    if spec == "demo" and not path.exists():
        raise KBSpecError(f"the bundled demo KB is missing ({path})")
    if not path.exists():
        raise KBSpecError(
            f'no such file or folder: {spec} (expected "demo", an RDF file or folder, or an http(s) URL)'
        )
    from kb.embedded import EmbeddedKB

    try:
        return EmbeddedKB(path, spec=spec)
    except (OSError, ValueError) as exc:
        raise KBSpecError(" ".join(str(exc).split())) from exc


def forget(spec: str | None = None) -> None:
    """Drop one cached KB (or all with None) and close it; the next `open_kb` reloads."""
    with _LOCK:
        keys = list(_CACHE) if spec is None else [_cache_key(resolve_spec(spec))]
        for key in keys:
            kb = _CACHE.pop(key, None)
            if kb is not None:
                kb.close()
