"""Where a text restates a question: the words and id fragments it copies from it.

A history that copies the question's content words makes the question easy to predict
whatever it has found, which is what history cleaning exists to stop. The test here:
a fragment restates the question when its simple stem is the stem of one of the
question's content words, with

- folding by the name index's own rule (`kb.name_index.normalise`: case and accents),
  so a restatement is matched the way SearchNodes matches a name;
- ids split on any non-alphanumeric (`ns:m.demo_inception` -> ns, m, demo, inception);
- simple suffix stems (directed, director, direction -> direct);
- English stop words and fragments under 3 characters ignored.

The IG lens highlights what this finds (`viz.ig_words`); the MASK_RESTATEMENTS cleaning
rule masks it inside action arguments (`mcts.search.cleaning`). Pure functions of text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kb.name_index import normalise

FRAGMENT = re.compile(r"[^\W_]+")  # letters and digits: `_`, `.`, `:` and spaces split ids
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
class Restatement:
    start: int  # character span in the text searched
    end: int
    text: str
    stem: str  # the question's stem it restates


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
    words = (fold(m.group()) for m in FRAGMENT.finditer(question))
    return frozenset(stem(w) for w in words if len(w) >= _MIN_LEN and w not in _STOP)


def find_restatements(stems: frozenset[str], text: str) -> list[Restatement]:
    """Every fragment of `text` whose stem is in `stems` (from `content_stems`), in order."""
    found = []
    for m in FRAGMENT.finditer(text):
        word = fold(m.group())
        if len(word) < _MIN_LEN or word in _STOP:
            continue
        s = stem(word)
        if s in stems:
            found.append(Restatement(m.start(), m.end(), m.group(), s))
    return found


def restatements(question: str, history: str) -> list[Restatement]:
    """Every fragment of `history` whose stem is a content stem of `question`, in order."""
    return find_restatements(content_stems(question), history)
