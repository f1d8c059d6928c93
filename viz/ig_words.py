"""The IG lens's word views: the question lit by the history, and where the history restates it.

- `question_words`: the question's tokens merged into words (a token that starts with
  whitespace starts a word; an empty piece, part of a character split over tokens, joins
  the next), each with how much the history lowered its NLL against the no-history
  baseline: gain = sum over its tokens of NLL(t | prompt) - NLL(t | H' + prompt), in nats
  (a word's NLL is the sum of its tokens').
- `heat_markdown`: those words as HTML spans shaded by gain (green: the history made the
  word easier to predict, red: harder), text escaped by `viz.escape.md`.
- `restatements`: every word or id fragment of the cleaned history that restates a content
  word of the question: case- and accent-insensitive, simple suffix stems, ids split on
  any non-alphanumeric (`ns:m.demo_inception` -> ns, m, demo, inception), stop words and
  fragments under 3 characters ignored.

Pure functions of stored text and numbers; no model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kb.name_index import normalise
from viz.escape import md

_FRAGMENT = re.compile(r"[^\W_]+")  # letters and digits: `_`, `.`, `:` and spaces split ids
_STOP_WORDS = (  # English function words: never evidence of a restatement
    "a an the of in on at to for by with from and or but is was were are be been being "
    "who what where when which how why whom whose did do does done that this these those "
    "it its as into about than then there has have had not no yes me my you your he she "
    "his her they them their we our us can could would should will shall may might"
)
_STOP = frozenset(_STOP_WORDS.split())
_SUFFIXES = ("ings", "ions", "ing", "ion", "ers", "ors", "ies", "ed", "er", "or", "es", "s")
_MIN_LEN = 3


@dataclass(frozen=True)
class Word:
    text: str  # as the question spells it (pieces joined, outer whitespace stripped)
    gain: float  # nats: NLL without the history minus NLL with it (> 0: the history helped)
    tokens: int


@dataclass(frozen=True)
class Restatement:
    start: int  # character span in the cleaned history
    end: int
    text: str
    stem: str  # the question's stem it restates


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


def fold(text: str) -> str:
    """Lower case without accents: `Ünïcödé` -> `unicode`; the name index's own folding
    (`kb.name_index.normalise`), so a restatement is matched the way SearchNodes matches."""
    return normalise(text)


def stem(word: str) -> str:
    """A simple suffix stem of a folded word: directed, director, direction -> direct;
    place, places -> plac. Good enough to spot a restated word; not a linguistic stemmer."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _MIN_LEN:
            word = word[: -len(suffix)]
            break
    return word[:-1] if word.endswith("e") and len(word) > _MIN_LEN else word


def content_stems(question: str) -> frozenset[str]:
    """Stems of the question's content words (no stop words, none under 3 characters)."""
    words = (fold(m.group()) for m in _FRAGMENT.finditer(question))
    return frozenset(stem(w) for w in words if len(w) >= _MIN_LEN and w not in _STOP)


def restatements(question: str, history: str) -> list[Restatement]:
    """Every fragment of `history` whose stem is a content stem of `question`, in order."""
    wanted = content_stems(question)
    found = []
    for m in _FRAGMENT.finditer(history):
        word = fold(m.group())
        if len(word) < _MIN_LEN or word in _STOP:
            continue
        s = stem(word)
        if s in wanted:
            found.append(Restatement(m.start(), m.end(), m.group(), s))
    return found


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
