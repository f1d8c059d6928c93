"""The documentation stays runnable and speaks of the project only.

Every script, benchmark, module and `python -m mcts` subcommand that README.md, CHANGELOG.md
or docs/*.md cites exists; every relative link resolves; each script under scripts/ answers
`--help`; and no file narrates how the work went (figures belong to commands, history to
CHANGELOG.md and git).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mcts.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
TEXT = {p: p.read_text(encoding="utf-8") for p in DOCS}

FILE_REF = re.compile(
    r"(?<![\w./-])((?:scripts|bench|tests|mcts|kb|ui|viz|examples|models)/[\w./*<>-]*[\w*>])"
)
MODULE_REF = re.compile(r"python -m ([\w.]+)")
MCTS_COMMAND = re.compile(r"python -m mcts ([a-z][\w-]*)")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
# A work session told as history: "the ninth session", "runs/s9/" (anywhere), "last
# session's ranker" (in the docs; the code's "this session" is a browser session).
NARRATION = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))"
    r"[- ]sessions?\b|runs/s\d+/",
    re.IGNORECASE,
)
DOC_NARRATION = re.compile(r"\b(?:this|last|previous|next|earlier|later) session\b", re.IGNORECASE)


def _cited(pattern: re.Pattern[str]) -> set[tuple[str, str]]:
    return {(p.name, m.group(1)) for p, text in TEXT.items() for m in pattern.finditer(text)}


@pytest.mark.parametrize(("doc", "ref"), sorted(_cited(FILE_REF)))
def test_every_cited_path_exists(doc: str, ref: str) -> None:
    path = ROOT / ref.rstrip(".")
    # A glob or a placeholder stands for files that exist; check its folder.
    if any(ch in ref for ch in "*<"):
        path = path.parent
    assert path.exists() or path.with_suffix(".py").exists(), f"{doc} cites {ref}, which does not exist"


@pytest.mark.parametrize(("doc", "module"), sorted(_cited(MODULE_REF)))
def test_every_cited_module_exists(doc: str, module: str) -> None:
    assert importlib.util.find_spec(module) is not None, (
        f"{doc} runs python -m {module}, which is not importable"
    )


def test_every_cited_mcts_command_exists() -> None:
    parser = build_parser()
    commands = set(next(a for a in parser._actions if a.dest == "command").choices)  # noqa: SLF001
    missing = {(doc, c) for doc, c in _cited(MCTS_COMMAND) if c not in commands}
    assert not missing, f"cited but not a subcommand: {sorted(missing)}"


@pytest.mark.parametrize(("doc", "target"), sorted(_cited(LINK)))
def test_every_relative_link_resolves(doc: str, target: str) -> None:
    if re.match(r"[a-z]+://", target):
        return
    base = (ROOT / "docs") if doc != "README.md" and doc != "CHANGELOG.md" else ROOT
    assert (base / target).exists(), f"{doc} links to {target}, which does not exist"


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "scripts").glob("*.py")))
def test_each_script_answers_help(script: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / script), "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0 and "usage" in done.stdout.lower(), done.stderr[-2000:]


def _project_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    ).stdout.split()
    suffixes = {".py", ".md", ".json", ".jsonl", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml"}
    return [ROOT / f for f in listed if Path(f).suffix in suffixes and (ROOT / f).is_file()]


def test_no_file_narrates_work_sessions() -> None:
    hits = []
    for path in _project_text_files():
        if path == ROOT / "CHANGELOG.md":
            continue  # history by date is what it is for (and it too names no session)
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if NARRATION.search(line) and path.name != "test_docs.py":
                hits.append(f"{path.relative_to(ROOT)}:{lineno}: {line.strip()[:120]}")
    assert not hits, "\n".join(hits[:20])


@pytest.mark.parametrize("doc", [p.name for p in DOCS])
def test_the_docs_name_no_work_session(doc: str) -> None:
    text = next(t for p, t in TEXT.items() if p.name == doc)
    found = [m.group(0) for m in (*NARRATION.finditer(text), *DOC_NARRATION.finditer(text))]
    assert not found, f"{doc}: {found[:5]}"


def test_readme_stays_short() -> None:
    assert len(TEXT[ROOT / "README.md"].splitlines()) <= 320
