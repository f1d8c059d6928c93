"""The documentation stays runnable and speaks of the project only.

Every script, benchmark, module and `python -m mcts` subcommand that README.md, CHANGELOG.md,
docs/*.md or studies/README.md cites exists; every relative link resolves, and its `#anchor`
names a heading of the file it points to; each script under scripts/ answers `--help`; no
file in the repository (docs, code, comments) cites a path that does not exist or the design
note the project was first built from (the repository's own docs/design.md and
docs/method.md say what it said); and no file narrates how the work went (figures belong to
commands, history to CHANGELOG.md and git).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from mcts.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
CHANGELOG = ROOT / "CHANGELOG.md"
DOCS = [
    ROOT / "README.md",
    CHANGELOG,
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "studies" / "README.md",
]
TEXT = {p: p.read_text(encoding="utf-8") for p in DOCS if p.exists()}

FILE_REF = re.compile(
    r"(?<![\w./-])((?:scripts|bench|tests|mcts|kb|ui|viz|examples|models|studies|docs)/[\w./*<>-]*[\w*>])"
)
MODULE_REF = re.compile(r"python -m ([\w.]+)")
MCTS_COMMAND = re.compile(r"python -m mcts ([a-z][\w-]*)")
# A Markdown link: (path, anchor); either may be empty ("[x](#here)", "[x](docs/a.md)").
LINK = re.compile(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)")
# The outside design note this project started from; the repository's docs replace it.
OUTSIDE_NOTE = re.compile(r"\bDESIGN\.md\b")
# A work session told as history: "the ninth session", "runs/s9/" (anywhere), "last
# session's ranker" (in the docs; the code's "this session" is a browser session).
NARRATION = re.compile(
    r"\b(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(?:st|nd|rd|th))"
    r"[- ]sessions?\b|runs/s\d+/",
    re.IGNORECASE,
)
DOC_NARRATION = re.compile(r"\b(?:this|last|previous|next|earlier|later) session\b", re.IGNORECASE)


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _cited(pattern: re.Pattern[str], docs: dict[Path, str] = TEXT) -> set[tuple[str, str]]:
    return {(_name(p), m.group(1)) for p, text in docs.items() for m in pattern.finditer(text)}


def _missing(ref: str) -> bool:
    path = ROOT / ref.rstrip(".")
    # A glob or a placeholder stands for files that exist; check its folder.
    if any(ch in ref for ch in "*<"):
        path = path.parent
    return not (path.exists() or path.with_suffix(".py").exists())


# CHANGELOG.md is history: an entry names the paths of its date, and some have moved since
# (scripts/ to studies/, bench/ probes to tests/security/). Rewriting them would falsify the
# record, so it is left out of the path and module checks; the narration checks hold it.
CURRENT_DOCS = {p: t for p, t in TEXT.items() if p != CHANGELOG}


@pytest.mark.parametrize(("doc", "ref"), sorted(_cited(FILE_REF, CURRENT_DOCS)))
def test_every_cited_path_exists(doc: str, ref: str) -> None:
    assert not _missing(ref), f"{doc} cites {ref}, which does not exist"


@pytest.mark.parametrize(("doc", "module"), sorted(_cited(MODULE_REF, CURRENT_DOCS)))
def test_every_cited_module_exists(doc: str, module: str) -> None:
    package, _, last = module.rpartition(".")
    if package and last.isupper():  # a placeholder ("bench.NAME") stands for the package's modules
        module = package
    assert importlib.util.find_spec(module) is not None, (
        f"{doc} runs python -m {module}, which is not importable"
    )


def test_every_cited_mcts_command_exists() -> None:
    parser = build_parser()
    commands = set(next(a for a in parser._actions if a.dest == "command").choices)  # noqa: SLF001
    missing = {(doc, c) for doc, c in _cited(MCTS_COMMAND) if c not in commands}
    assert not missing, f"cited but not a subcommand: {sorted(missing)}"


def _links() -> list[tuple[str, str, str]]:
    return sorted(
        {(_name(p), m.group(1), m.group(2) or "") for p, text in TEXT.items() for m in LINK.finditer(text)}
    )


def _is_url(target: str) -> bool:
    return bool(re.match(r"[a-z][a-z+]*:", target))


@pytest.mark.parametrize(("doc", "target"), sorted({(d, t) for d, t, _ in _links() if t and not _is_url(t)}))
def test_every_relative_link_resolves(doc: str, target: str) -> None:
    assert ((ROOT / doc).parent / target).exists(), f"{doc} links to {target}, which does not exist"


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, spaces to '-', punctuation but '-' and '_' gone."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link keeps its words
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every heading anchor of a Markdown file (fenced code skipped; repeats get -1, -2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        m = None if fenced else re.match(r"#{1,6}\s+(.+?)\s*#*\s*$", line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
    return frozenset(found)


def test_slug_follows_github() -> None:
    assert slug("Is IG right here? The truth overlay and the twin") == (
        "is-ig-right-here-the-truth-overlay-and-the-twin"
    )
    assert slug("Tried, not shipped") == "tried-not-shipped"
    assert slug("Training the policy (train part only)") == "training-the-policy-train-part-only"
    assert slug("The IG scorer: weak at 135M") == "the-ig-scorer-weak-at-135m"
    assert slug("`python -m mcts` and snake_case") == "python--m-mcts-and-snake_case"


@pytest.mark.parametrize(
    ("doc", "target", "anchor"), [(d, t, a) for d, t, a in _links() if a and not _is_url(t)]
)
def test_every_link_anchor_names_a_heading(doc: str, target: str, anchor: str) -> None:
    path = (ROOT / doc).parent / target if target else ROOT / doc
    if path.suffix != ".md" or not path.exists():
        return  # not Markdown, or a missing file (the test above says so)
    assert anchor in anchors(path), f"{doc} links to {target or doc}#{anchor}, which names no heading there"


@pytest.mark.parametrize("script", sorted(p.name for p in (ROOT / "scripts").glob("*.py")))
def test_each_script_answers_help(script: str) -> None:
    # A script run by path finds the package through `make setup`'s editable install only.
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


def _lines(suffixes: set[str]) -> list[tuple[Path, int, str]]:
    return [
        (path, lineno, line)
        for path in _project_text_files()
        if path.suffix in suffixes and path != Path(__file__).resolve()
        for lineno, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
    ]


PROSE_AND_CODE = {".py", ".md", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml"}


def test_no_file_cites_the_outside_design_note() -> None:
    hits = [
        f"{_name(p)}:{n}: {line.strip()[:120]}"
        for p, n, line in _lines(PROSE_AND_CODE)
        if OUTSIDE_NOTE.search(line)
    ]
    assert not hits, "point into docs/design.md or docs/method.md instead:\n" + "\n".join(hits[:30])


def test_no_file_cites_a_missing_path() -> None:
    hits = [
        f"{_name(p)}:{n}: {m.group(1)}"
        for p, n, line in _lines(PROSE_AND_CODE)
        if p != CHANGELOG  # history (see CURRENT_DOCS)
        for m in FILE_REF.finditer(line)
        if _missing(m.group(1))
    ]
    assert not hits, "\n".join(hits[:40])


def test_no_file_narrates_work_sessions() -> None:
    hits = [
        f"{_name(p)}:{n}: {line.strip()[:120]}"
        for p, n, line in _lines(
            {".py", ".md", ".json", ".jsonl", ".toml", ".txt", ".cfg", ".ini", ".yml", ".yaml"}
        )
        if NARRATION.search(line)
    ]
    assert not hits, "\n".join(hits[:20])


@pytest.mark.parametrize("doc", [_name(p) for p in TEXT])
def test_the_docs_name_no_work_session(doc: str) -> None:
    text = TEXT[ROOT / doc]
    found = [m.group(0) for m in (*NARRATION.finditer(text), *DOC_NARRATION.finditer(text))]
    assert not found, f"{doc}: {found[:5]}"


def test_readme_stays_short() -> None:
    assert len(TEXT[ROOT / "README.md"].splitlines()) <= 320


def test_the_results_page_stays_readable() -> None:
    assert len(TEXT[ROOT / "docs" / "results.md"].splitlines()) <= 300
