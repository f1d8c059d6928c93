"""The app's trace files on disk: one folder per visitor, a quota per visitor, an age limit,
and a cap on all of them that takes from the fullest folder first.

Every run, cached replay and re-score writes the trace on screen so the page can offer it
for download. The files of one visitor (`ui.visitor`: the address the operator's proxies
saw; a browser session stands in without one) live in a folder of their own, named by a
hash of that key. Writing one:

- removes files past `max_age_s` in every folder (a visitor's downloads live that long);
- keeps at most `per_owner` files in the writer's folder, its oldest removed first, so one
  visitor's flood of re-scores only ever evicts that visitor's own files;
- keeps at most `total` files in all, taken from the folder that holds the most (the
  flooder's, not a neighbour's).

Knows nothing of Gradio.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class StorePolicy:
    per_owner: int  # files one visitor keeps
    total: int  # files all visitors keep together
    max_age_s: float | None = None  # a file older than this goes (None: no age limit)


def owner_folder(root: Path, owner: str) -> Path:
    """The visitor's folder (a hash: the address itself never reaches the disk)."""
    return root / hashlib.sha256(owner.encode()).hexdigest()[:16]


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile by another writer's tidy
        return 0.0


def _remove(path: Path, root: Path) -> bool:
    try:
        path.unlink()
    except OSError:
        return False
    try:
        if path.parent != root and not any(path.parent.iterdir()):
            path.parent.rmdir()
    except OSError:
        pass  # another writer's file arrived meanwhile
    return True


def tidy(root: Path, folder: Path, policy: StorePolicy, now: float | None = None) -> int:
    """Apply `policy` after a write into `folder` (under `root`); how many files went."""
    now = time.time() if now is None else now
    removed = 0
    folders: dict[Path, list[Path]] = {}
    for path in root.glob("*/*.json"):
        if policy.max_age_s is not None and now - _mtime(path) > policy.max_age_s:
            removed += _remove(path, root)
        else:
            folders.setdefault(path.parent, []).append(path)
    for files in folders.values():
        files.sort(key=_mtime)  # oldest first
    mine = folders.get(folder, [])
    while len(mine) > policy.per_owner:
        removed += _remove(mine.pop(0), root)
    count = sum(len(files) for files in folders.values())
    while count > policy.total:
        fullest = max(folders.values(), key=len)
        removed += _remove(fullest.pop(0), root)
        count -= 1
    return removed
