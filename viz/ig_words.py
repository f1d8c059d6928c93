"""The IG lens's word views: the question lit by the history, and where the history restates it.

- `question_words`: the question's tokens merged into words (a token that starts with
  whitespace starts a word; an empty piece, part of a character split over tokens, joins
  the next), each with how much the history lowered its NLL against the no-history
  baseline: gain = sum over its tokens of NLL(t | prompt) - NLL(t | H' + prompt), in nats
  (a word's NLL is the sum of its tokens').
- `heat_markdown`: those words as HTML spans shaded by gain (green: the history made the
  word easier to predict, red: harder), text escaped by `viz.escape.md`.
- `restatements` (from `mcts.search.restatement`, where the test is described): every word
  or id fragment of the cleaned history that restates a content word of the question;
  `restatement_lines` shows them in their history lines.

Pure functions of stored text and numbers; no model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# The restatement test lives with the cleaning rule that masks what it finds; re-exported here.
from mcts.search.restatement import Restatement, content_stems, fold, restatements, stem
from viz.escape import md

__all__ = [
    "Restatement",
    "Word",
    "content_stems",
    "fold",
    "heat_markdown",
    "question_words",
    "restatement_lines",
    "restatements",
    "stem",
]


@dataclass(frozen=True)
class Word:
    text: str  # as the question spells it (pieces joined, outer whitespace stripped)
    gain: float  # nats: NLL without the history minus NLL with it (> 0: the history helped)
    tokens: int


def question_words(pieces: Sequence[str], nlls: Sequence[float], base: Sequence[float]) -> list[Word]:
    """Tokens merged into whitespace-separated words, each with its summed NLL gain."""
    if not len(pieces) == len(nlls) == len(base):
        raise ValueError("one piece, one NLL and one baseline NLL per question token")
    groups: list[list[int]] = []
    pending: list[int] = []  # empty pieces wait for the token that completes their character
    last = ""  # the previous non-empty piece
    for i, piece in enumerate(pieces):
        if piece == "":
            pending.append(i)
            continue
        if not groups or piece[:1].isspace() or last[-1:].isspace():
            groups.append([])
        groups[-1] += [*pending, i]
        pending, last = [], piece
    if pending:  # cannot happen with the scorer's pieces (the last token completes the text)
        groups.append(pending)
    words = []
    for group in groups:
        text = "".join(pieces[i] for i in group).strip()
        if text:
            words.append(Word(text, sum(base[i] - nlls[i] for i in group), len(group)))
    return words


def _shade(gain: float, scale: float) -> str:
    strength = min(abs(gain) / scale, 1.0) if scale > 0 else 0.0
    rgb = "22,163,74" if gain >= 0 else "220,38,38"  # green: easier with the history; red: harder
    return f"rgba({rgb},{0.08 + 0.5 * strength:.2f})"


def heat_markdown(words: Sequence[Word]) -> str:
    """The question, each word shaded by its gain; the hover title gives the number."""
    scale = max((abs(w.gain) for w in words), default=0.0)
    return " ".join(
        f"<span style='background:{_shade(w.gain, scale)};padding:1px 3px;border-radius:3px' "
        f"title='{w.gain:+.2f} nats'>{md(w.text)}</span>"
        for w in words
    )


def _md_spaced(text: str) -> str:
    """`md(text)`, keeping one space where `text` starts or ends with whitespace (md trims)."""
    if not text:
        return ""
    if not text.strip():
        return " "
    return (" " if text[0].isspace() else "") + md(text) + (" " if text[-1].isspace() else "")


def restatement_lines(
    history: str, found: Sequence[Restatement], *, limit: int = 8, span: int = 60
) -> list[str]:
    """Markdown lines: each history line holding a restatement, the matches marked, cut to
    `span` characters around them; at most `limit` lines."""
    out: list[str] = []
    offset = 0
    for line in history.split("\n"):
        hits = [r for r in found if offset <= r.start and r.end <= offset + len(line)]
        if hits and len(out) < limit:
            lo = max(hits[0].start - offset - span, 0)
            hi = min(hits[-1].end - offset + span, len(line))
            parts, pos = ["…" if lo else ""], lo
            for r in hits:
                a, b = r.start - offset, r.end - offset
                if a < lo or b > hi:
                    continue
                parts += [_md_spaced(line[pos:a]), f"<mark>{md(line[a:b])}</mark>"]
                pos = b
            parts += [_md_spaced(line[pos:hi]), "…" if hi < len(line) else ""]
            out.append("".join(parts))
        offset += len(line) + 1
    return out
