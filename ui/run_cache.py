"""Instant examples: finished runs of example questions, kept as traces and replayed.

A run of an example question (`ui.gold`) whose question, KB, settings, models,
cleaning rules, IG prompt and agent code (`agent_code_fingerprint`) match an earlier
run replays that run's trace round by round instead of searching again; "Fresh run"
always searches. Lookups also read the shipped traces (examples/traces/) while their
manifest's fingerprint is the current code's, so a new Space shows a tree at once.

The folder ($MCTS_KBQA_RUN_CACHE, else runs/ in $MCTS_KBQA_CACHE or ~/.cache/mcts-kbqa,
beside the converted model) holds at most
`MAX_ENTRIES` traces, least recently used dropped first, and is safe to delete at
any time: a missing or broken file is a miss. Knows nothing of Gradio.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from functools import lru_cache
from pathlib import Path

from mcts.search.settings import SearchSettings
from mcts.search.trace import Trace, TraceError, load_trace, save_trace
from ui.config import TRACES_DIR
from ui.gold import gold_answers

log = logging.getLogger(__name__)
MAX_ENTRIES = 64  # ~50-300 kB a trace: a few MB at most


def cache_dir() -> Path:
    if os.environ.get("MCTS_KBQA_RUN_CACHE"):
        return Path(os.environ["MCTS_KBQA_RUN_CACHE"])
    return Path(os.environ.get("MCTS_KBQA_CACHE") or Path.home() / ".cache" / "mcts-kbqa") / "runs"


@lru_cache(maxsize=1)
def code_version() -> str:
    from mcts.agents.fingerprint import agent_code_fingerprint

    return agent_code_fingerprint()


def run_key(
    question: str,
    kb_spec: str,
    settings: SearchSettings,
    *,
    policy_kind: str,
    policy_model: str,
    scorer_model: str,
    rules: tuple[str, ...] | list[str],
    ig_prompt: str,
    policy_adapter: str = "",
    code: str | None = None,
) -> str:
    """A digest of everything a recorded run depends on (models as resolved names)."""
    parts = {
        "question": " ".join(question.split()).casefold(),
        "kb": (kb_spec or "demo").strip(),
        "settings": settings.to_dict(),
        "models": [policy_kind, policy_model, scorer_model, policy_adapter],
        "rules": sorted(rules),
        "ig_prompt": ig_prompt.strip(),
        "code": code or code_version(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:24]


def trace_key(trace: Trace, code: str | None = None) -> str:
    meta = trace.meta
    return run_key(
        trace.question,
        meta.kb_spec,
        trace.settings,
        policy_kind=meta.policy_kind,
        policy_model=meta.policy_model,
        scorer_model=meta.scorer_model,
        rules=trace.cleaning_rules,
        ig_prompt=trace.ig_prompt,
        policy_adapter=meta.policy_adapter,
        code=code,
    )


def cacheable(question: str, kb_spec: str) -> bool:
    """Only example questions on their demo KB are kept: a bounded, known set."""
    return gold_answers(question, kb_spec) is not None


def lookup(key: str, folder: Path | None = None) -> tuple[Trace, Path] | None:
    """A recorded run under `key` (cache first, then the shipped traces); None on a miss."""
    path = (folder or cache_dir()) / f"{key}.json"
    if path.is_file():
        try:
            trace = load_trace(path)
            os.utime(path)  # recently used: evicted last
            return trace, path
        except (TraceError, ValueError, OSError):
            log.warning("dropping a broken cached trace %s", path)
            path.unlink(missing_ok=True)
    return _shipped().get(key)


def store(trace: Trace, key: str, folder: Path | None = None, max_entries: int = MAX_ENTRIES) -> Path | None:
    """Keep a finished run; drop the least recently used beyond `max_entries`. Never raises."""
    folder = folder or cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = save_trace(trace, folder / f"{key}.json")
        entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[max_entries:]:
            old.unlink(missing_ok=True)
        return path
    except OSError:
        log.exception("could not cache the run")
        return None


@lru_cache(maxsize=1)
def _shipped() -> dict[str, tuple[Trace, Path]]:
    """The shipped traces by key, only while their manifest's fingerprint is the code's."""
    try:
        manifest = json.loads((TRACES_DIR / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if manifest.get("fingerprint") != code_version():
        return {}  # recorded with other agent code: a replay would not be what Run gives
    out: dict[str, tuple[Trace, Path]] = {}
    for item in manifest.get("traces", []):
        path = TRACES_DIR / str(item.get("file", ""))
        try:
            trace = load_trace(path)
        except (TraceError, ValueError, OSError):
            continue
        out[trace_key(trace)] = (trace, path)
    return out
