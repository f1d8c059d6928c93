"""One spec string chooses a knowledge base everywhere (CLI, app, env `KB`).

- `None` -> the env variable `KB`, else `"demo"`;
- `"demo"` -> the bundled Freebase-shaped `examples/demo_kb.ttl` (embedded);
- `"demo-wikidata"` -> the bundled Wikidata-shaped `examples/demo_wikidata.ttl`;
- a path to an `.nt`/`.ttl`/`.nq`/`.trig` file (optionally `.gz`) or a folder of them
  -> `kb.embedded.EmbeddedKB`;
- an `http://` or `https://` SPARQL endpoint URL -> `kb.remote.RemoteKB`; written
  `wikidata+https://...` (or `freebase+http://...`) it also names the flavour.

The flavour (`kb.flavour`: Freebase or Wikidata vocabulary): the `flavour` argument,
else a `wikidata+`/`freebase+` scheme prefix, the bundled demo's own flavour, else the env
variable `KB_FLAVOUR` (`freebase` | `wikidata`), else, for files, a cheap look at the data
(`kb.wikidata.detect_flavour`: Wikidata's entity namespace in the first 64 KB), and
for endpoints Freebase: a remote Wikidata endpoint must be named as such.

`public=True` (the app's public mode) opens endpoints as `RemoteKB(public=True)`: no
loopback, private or link-local addresses, no reply text in errors.

Opened KBs are cached per spec, flavour and public flag in this process (loading the real subset
takes ~1.5 s; the app and the tests reuse one). A bad spec raises `KBSpecError` with
one clear line. This module knows nothing of tools or search.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from kb.base import KnowledgeBase
from kb.flavour import Flavour, flavour_named

DEMO_KB = Path(__file__).resolve().parents[1] / "examples" / "demo_kb.ttl"
DEMO_WIKIDATA_KB = DEMO_KB.with_name("demo_wikidata.ttl")
DEMOS = {"demo": DEMO_KB, "demo-wikidata": DEMO_WIKIDATA_KB}
DEMO_FLAVOURS = {"demo": "freebase", "demo-wikidata": "wikidata"}
ENV_VAR = "KB"
FLAVOUR_ENV_VAR = "KB_FLAVOUR"

_CACHE: dict[tuple[str, str, bool], KnowledgeBase] = {}
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


def resolve_flavour(spec: str, flavour: Flavour | str | None = None) -> tuple[str, Flavour | None]:
    """(spec without a `flavour+` scheme prefix, the flavour named by argument, prefix,
    bundled demo or env `KB_FLAVOUR`; None = not named, look at the data). Raises KBSpecError."""
    named: Flavour | str | None = flavour
    head, plus, rest = spec.partition("+")
    if plus and "://" in rest and "/" not in head:
        if named is None:
            named = head
        spec = rest
    if named is None and spec in DEMOS:
        named = DEMO_FLAVOURS[spec]  # each bundled demo has its own vocabulary
    if named is None:
        named = os.environ.get(FLAVOUR_ENV_VAR, "").strip() or None
    if named is None or isinstance(named, Flavour):
        return spec, named
    try:
        return spec, flavour_named(named)
    except ValueError as exc:
        raise KBSpecError(str(exc)) from None


def open_kb(
    spec: str | None = None, *, flavour: Flavour | str | None = None, public: bool = False
) -> KnowledgeBase:
    """Open (or reuse) the knowledge base a spec names, in `flavour` (a Flavour or its
    name; None: see the module docstring). Raises KBSpecError."""
    chosen, named = resolve_flavour(resolve_spec(spec), flavour)
    remote = chosen.startswith(("http://", "https://"))
    key = (_cache_key(chosen), named.name if named else "", public and remote)
    with _LOCK:  # one load per spec even when two threads ask at once
        kb = _CACHE.get(key)
        if kb is None:
            kb = _open(chosen, named, public)
            _CACHE[key] = kb
        return kb


def _cache_key(spec: str) -> str:
    # Two spellings of one path ("kb.nt.gz", "./kb.nt.gz") share one loaded store.
    if spec in DEMOS or "://" in spec:
        return spec
    return str(Path(spec).expanduser().resolve())


def _open(spec: str, flavour: Flavour | None, public: bool = False) -> KnowledgeBase:
    if spec.startswith(("http://", "https://")):
        from kb.remote import RemoteKB

        try:
            return RemoteKB(spec, flavour=flavour, public=public)
        except ValueError as exc:
            raise KBSpecError(f"bad endpoint URL {spec!r}: {exc}") from exc
    if "://" in spec:
        raise KBSpecError(f"unsupported KB spec {spec!r}: only http(s):// endpoint URLs are supported")
    path = DEMOS.get(spec) or Path(spec).expanduser()
    if spec in DEMOS and not path.exists():
        raise KBSpecError(f"the bundled demo KB is missing ({path})")
    if not path.exists():
        raise KBSpecError(
            f'no such file or folder: {spec} (expected "demo", "demo-wikidata", an RDF file or folder, '
            "or an http(s) URL)"
        )
    from kb.embedded import EmbeddedKB
    from kb.wikidata import detect_flavour

    try:
        return EmbeddedKB(path, spec=spec, flavour=flavour or detect_flavour(path))
    except (OSError, ValueError) as exc:
        raise KBSpecError(" ".join(str(exc).split())) from exc


def forget(spec: str | None = None) -> None:
    """Drop one cached KB (or all with None; every flavour of it) and close it; the next
    `open_kb` reloads."""
    with _LOCK:
        if spec is None:
            keys = list(_CACHE)
        else:
            path = _cache_key(resolve_flavour(resolve_spec(spec))[0])
            keys = [k for k in _CACHE if k[0] == path]
        for key in keys:
            kb = _CACHE.pop(key, None)
            if kb is not None:
                kb.close()
