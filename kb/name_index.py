"""Entity name search over one embedded KB: SQLite FTS5 word + trigram indexes, rapidfuzz for typos.

Built once at load time from (id, label) pairs (names and aliases) and descriptions;
lives in memory (stdlib `sqlite3`). Two questions it answers:

- `search(text)`: entities whose name or alias matches `text`, best first. Tiers, each
  strictly above the next: exact normalised label; all query words present (word
  index); then, only when those found nothing, any word / shared trigrams re-ranked by
  rapidfuzz (typos); then a rapidfuzz scan of every label for very short queries.
  Ties go to the entity with more edges (a rough popularity).
- `find_mentions(question)`: KB labels occurring as word spans of a question, longest
  spans first (used by the guided policy to pick topic entities).

It knows nothing of SPARQL or of the store: `kb.embedded` feeds it.
"""

from __future__ import annotations

import re
import sqlite3
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from kb.observation import EntityHit

_NON_WORD = re.compile(r"[^\w]+|_")
# Function words and question words: a span made only of these is never a mention.
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "of",
        "in",
        "on",
        "at",
        "to",
        "for",
        "from",
        "by",
        "with",
        "and",
        "or",
        "not",
        "no",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "what",
        "which",
        "who",
        "whom",
        "whose",
        "where",
        "when",
        "why",
        "how",
        "that",
        "this",
        "these",
        "those",
        "it",
        "its",
        "as",
        "into",
        "than",
        "then",
        "there",
        "their",
        "they",
        "them",
        "he",
        "she",
        "his",
        "her",
        "him",
        "i",
        "you",
        "your",
        "we",
        "our",
        "us",
        "me",
        "my",
        "mine",
        "can",
        "could",
        "will",
        "would",
        "shall",
        "should",
        "may",
        "might",
        "must",
        "about",
        "after",
        "before",
        "during",
        "over",
        "under",
        "up",
        "down",
        "out",
        "off",
        "s",
        "t",
        "name",
        "named",
        "called",
        "many",
        "much",
        "one",
        "ones",
        "all",
        "any",
        "some",
        "also",
        "most",
        "more",
    ]
)
_MAX_SPAN = 8  # longest label in words that find_mentions tries
_PARTIAL_PER_SPAN = 3  # entities offered for a shortened name
# Endings that make a place's adjective ("Chilean", "Canadian", "Japanese", "Israeli"), longest first.
_ADJECTIVE_ENDINGS = ("ians", "ian", "ans", "an", "ese", "ish", "ns", "i", "n")


def normalise(text: str) -> str:
    """Casefolded, accents stripped, punctuation to spaces, whitespace collapsed."""
    decomposed = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text).casefold())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(_NON_WORD.sub(" ", bare).split())


@dataclass(frozen=True)
class _Entity:
    id: str
    name: str
    description: str
    degree: int


class NameIndex:
    """In-memory name index; thread-safe (one lock around the SQLite connection)."""

    def __init__(
        self,
        names: Iterable[tuple[str, str]],
        aliases: Iterable[tuple[str, str]] = (),
        descriptions: dict[str, str] | None = None,
        degrees: dict[str, int] | None = None,
    ) -> None:
        descriptions = descriptions or {}
        degrees = degrees or {}
        self._entities: list[_Entity] = []
        self._row_of: dict[str, int] = {}
        self._by_label: dict[str, list[int]] = {}  # normalised label -> entity rows
        labels: list[tuple[int, str, int]] = []  # (entity row, normalised label, is_alias)
        for entity_id, name in names:
            if entity_id in self._row_of:
                continue  # a second name for the same entity: keep the first, index the rest as aliases
            self._row_of[entity_id] = len(self._entities)
            self._entities.append(
                _Entity(entity_id, name, descriptions.get(entity_id, ""), degrees.get(entity_id, 0))
            )
            labels.append((self._row_of[entity_id], normalise(name), 0))
        for entity_id, alias in aliases:
            row = self._row_of.get(entity_id)
            if row is not None:  # aliases of unnamed nodes are not searchable entities
                labels.append((row, normalise(alias), 1))
        labels = [lab for lab in dict.fromkeys(labels) if lab[1]]
        for row, norm, _ in labels:
            rows = self._by_label.setdefault(norm, [])
            if row not in rows:
                rows.append(row)
        self._labels = labels
        self._lock = threading.Lock()
        self._db = self._build(labels)

    @staticmethod
    def _build(labels: list[tuple[int, str, int]]) -> sqlite3.Connection:
        # rapidfuzz is imported with the index (a tenth of a second) rather than by the
        # first SearchNodes call, whose time the agent's tool budget counts.
        import rapidfuzz.distance  # noqa: F401
        import rapidfuzz.fuzz  # noqa: F401
        import rapidfuzz.process  # noqa: F401

        db = sqlite3.connect(":memory:", check_same_thread=False)
        db.execute("CREATE TABLE lab(rowid INTEGER PRIMARY KEY, ent INTEGER, norm TEXT, alias INTEGER)")
        db.executemany(
            "INSERT INTO lab VALUES (?, ?, ?, ?)", ((i, e, n, a) for i, (e, n, a) in enumerate(labels))
        )
        db.execute(
            "CREATE VIRTUAL TABLE words USING fts5(norm, content='lab', content_rowid='rowid', "
            "tokenize='unicode61 remove_diacritics 2')"
        )
        db.execute(
            "CREATE VIRTUAL TABLE tri USING fts5(norm, content='lab', content_rowid='rowid', tokenize='trigram')"
        )
        db.execute("INSERT INTO words(rowid, norm) SELECT rowid, norm FROM lab")
        db.execute("INSERT INTO tri(rowid, norm) SELECT rowid, norm FROM lab")
        db.commit()
        return db

    def __len__(self) -> int:
        return len(self._entities)

    def name_of(self, entity_id: str) -> str | None:
        row = self._row_of.get(entity_id)
        return None if row is None else self._entities[row].name

    def description_of(self, entity_id: str) -> str:
        row = self._row_of.get(entity_id)
        return "" if row is None else self._entities[row].description

    def degree_of(self, entity_id: str) -> int:
        """How many edges the entity has as a subject (0 if unknown): a rough popularity."""
        row = self._row_of.get(entity_id)
        return 0 if row is None else self._entities[row].degree

    # ----- search ---------------------------------------------------------------------
    def search(self, text: str, limit: int = 10) -> list[EntityHit]:
        """Entities matching `text`, best first (see the module docstring for the tiers)."""
        from rapidfuzz import fuzz

        query = normalise(text)
        if not query or limit <= 0:
            return []
        best: dict[int, float] = {}

        def offer(row: int, score: float) -> None:
            if score > best.get(row, -1.0):
                best[row] = score

        for row in self._by_label.get(query, ()):
            offer(row, 3.0)
        tokens = query.split()
        # All words present; the last one may be a prefix (a name still being typed).
        match = (
            " ".join(f'"{t}"' for t in tokens[:-1])
            + f' "{tokens[-1]}"'
            + ("*" if len(tokens[-1]) >= 3 else "")
        )
        for row, norm in self._fts("words", match.strip(), 200):
            offer(row, 1.0 + fuzz.ratio(query, norm) / 100.0)
        if not best:
            content = [t for t in tokens if t not in STOPWORDS] or tokens
            grams = {query[i : i + 3] for i in range(len(query) - 2)}
            candidates = self._fts("words", " OR ".join(f'"{t}"' for t in content), 200)
            if grams:
                candidates += self._fts("tri", " OR ".join(f'"{g}"' for g in sorted(grams)), 300)
            for row, norm in candidates:
                score = fuzz.WRatio(query, norm)
                if score >= 75:
                    offer(row, score / 100.0)
        if not best:
            from rapidfuzz import process

            norms = [lab[1] for lab in self._labels]
            for _, score, idx in process.extract(
                query, norms, scorer=fuzz.ratio, limit=limit, score_cutoff=70
            ):
                offer(self._labels[idx][0], score / 100.0)
        ranked = sorted(
            best.items(), key=lambda kv: (-kv[1], -self._entities[kv[0]].degree, self._entities[kv[0]].id)
        )
        return [self._hit(row, score) for row, score in ranked[:limit]]

    def _fts(self, table: str, match: str, limit: int) -> list[tuple[int, str]]:
        sql = f"SELECT lab.ent, lab.norm FROM {table} JOIN lab ON lab.rowid = {table}.rowid WHERE {table} MATCH ? ORDER BY rank LIMIT ?"
        with self._lock:
            try:
                return list(self._db.execute(sql, (match, limit)))
            except sqlite3.OperationalError:
                return []  # a query FTS5 cannot read (e.g. only punctuation): no hits, not a crash

    def _hit(self, row: int, score: float) -> EntityHit:
        e = self._entities[row]
        return EntityHit(id=e.id, name=e.name, description=e.description, score=round(score, 4))

    # ----- mentions -------------------------------------------------------------------
    def find_mentions(
        self, question: str, limit: int = 10, *, near_spellings: bool = True
    ) -> list[EntityHit]:
        """KB entities whose name or alias occurs as a word span of `question`.

        Longest spans first (a span inside an already matched span is skipped); every
        entity sharing a matched label is returned (homonyms side by side), the more
        connected first. `score` is the span length in words. Then shortened names, and
        (`near_spellings`) places named by their adjective and misspelt names.
        """
        tokens = normalise(question).split()
        # A two-letter word is a mention only when written as an acronym ("US", "UK"):
        # in lower case it is mostly a function word ("us", "me", "at").
        acronyms = {w.casefold() for w in re.findall(r"\b[A-Z]{2}\b", question)}
        taken = [False] * len(tokens)
        hits: list[EntityHit] = []
        seen: set[int] = set()
        for n in range(min(_MAX_SPAN, len(tokens)), 0, -1):
            for start in range(len(tokens) - n + 1):
                if any(taken[start : start + n]):
                    continue
                span = tokens[start : start + n]
                acronym = n == 1 and span[0] in acronyms
                if not acronym and (
                    all(t in STOPWORDS or t.isdigit() for t in span) or (n == 1 and len(span[0]) < 3)
                ):
                    continue
                rows = self._by_label.get(" ".join(span))
                if not rows:
                    continue
                taken[start : start + n] = [True] * n
                for row in sorted(rows, key=lambda r: -self._entities[r].degree):
                    if row not in seen:
                        seen.add(row)
                        hits.append(self._hit(row, float(n)))
        found = self._partial_mentions(question, tokens, taken)
        if near_spellings:
            found += self._near_mentions(question, tokens, taken)
        for n, row in found:
            if row not in seen:
                seen.add(row)
                hits.append(self._hit(row, float(n)))
        return hits[:limit]

    def _partial_mentions(self, question: str, tokens: list[str], taken: list[bool]) -> list[tuple[int, int]]:
        """(span length in words, entity row) for the spans no label matched whole but a longer name ends
        with ("Whitman" -> Walt Whitman, "scott fitzgerald" -> F. Scott Fitzgerald) or names in
        the plural ("Jonas brother" -> Jonas Brothers): questions often shorten a name.

        The `_PARTIAL_PER_SPAN` most connected such entities per span (the shortened name is
        ambiguous: "Whitman" is Walt and Mae Whitman), and only for a span that reads as a
        name: its first word written with a capital (not the question's first word), or two or
        more words in a question written all in lower case. A lone common word would otherwise
        match every longer name ending with it ("live" -> a live album)."""
        words = question.split()
        capitalised = {t for w in words[1:] if w[:1].isupper() for t in normalise(w).split()}
        lower_case = not any(w[:1].isupper() for w in words[1:])
        found: list[tuple[int, int]] = []
        for n in range(min(3, len(tokens)), 0, -1):
            for start in range(len(tokens) - n + 1):
                span = tokens[start : start + n]
                if any(taken[start : start + n]) or any(
                    t in STOPWORDS or t.isdigit() or len(t) < 3 for t in span
                ):
                    continue
                if not (span[0] in capitalised or (lower_case and n >= 2)):
                    continue
                rows = self._longer_names(span)
                if rows:
                    taken[start : start + n] = [True] * n
                    rows = sorted(set(rows), key=lambda r: (-self._entities[r].degree, r))
                    found += [(n, row) for row in rows[:_PARTIAL_PER_SPAN]]
        return found

    def _near_mentions(self, question: str, tokens: list[str], taken: list[bool]) -> list[tuple[int, int]]:
        """(1, entity row) for single capitalised words that no label matched, nor a longer name:
        the adjective of a place ("Chilean" -> Chile, "Canadian" -> Canada) or a name one letter
        off ("Portugese" -> Portuguese). Users write both; neither is a label of the KB.

        The `_PARTIAL_PER_SPAN` most connected entities per word. The word must be written with
        a capital (not only as the question's first word) and have five letters or more: a
        lower-case word one letter off a name is mostly another word ("border" -> Bordeaux)."""
        words = question.split()
        capitalised = {t for w in words[1:] if w[:1].isupper() for t in normalise(w).split()}
        found: list[tuple[int, int]] = []
        for i, token in enumerate(tokens):
            if taken[i] or token not in capitalised or token in STOPWORDS or len(token) < 5:
                continue
            # A misspelling is mended only in a word that stands alone: beside another
            # capitalised word it is part of a name the KB lacks ("Reggie Bush" -> Reggae).
            alone = not any(0 <= j < len(tokens) and tokens[j] in capitalised for j in (i - 1, i + 1))
            rows = (self._one_letter_off(token) if alone else []) + self._places_of_adjective(token)
            if rows:
                taken[i] = True
                rows = sorted(set(rows), key=lambda r: (-self._entities[r].degree, r))
                found += [(1, row) for row in rows[:_PARTIAL_PER_SPAN]]
        return found

    def _places_of_adjective(self, word: str) -> list[int]:
        """Entities with a one-word label the adjective `word` is made from: the word without
        an adjective ending, plus at most two letters ("chile|an", "canad|ian" + "a")."""
        for ending in _ADJECTIVE_ENDINGS:
            stem = word.removesuffix(ending)
            if stem == word or len(stem) < 3:
                continue
            rows = [
                row
                for row, norm in self._fts("words", f'"{stem}"*', 200)
                if " " not in norm and norm.startswith(stem) and len(norm) - len(stem) <= 2 and norm != word
            ]
            if rows:
                return rows
        return []

    def _one_letter_off(self, word: str) -> list[int]:
        """Entities with a one-word label one edit from `word` (a letter dropped, added,
        changed or two swapped), for words of six letters or more."""
        from rapidfuzz.distance import OSA

        if len(word) < 6:
            return []
        grams = sorted({word[i : i + 3] for i in range(len(word) - 2)})
        candidates = self._fts("tri", " OR ".join(f'"{g}"' for g in grams), 400)
        return [
            row
            for row, norm in candidates
            if " " not in norm and OSA.distance(word, norm, score_cutoff=1) <= 1
        ]

    def _longer_names(self, span: list[str]) -> list[int]:
        """Entities with a label that ends with `span` after more words, or is `span` with its
        last word in the plural."""
        match = " ".join(f'"{t}"' for t in span[:-1]) + f' "{span[-1]}"*'
        rows = []
        for row, norm in self._fts("words", match.strip(), 200):
            label = norm.split()
            ends_with = len(label) > len(span) and label[-len(span) :] == span
            plural = label[:-1] == span[:-1] and label[-1] in (span[-1] + "s", span[-1] + "es")
            if ends_with or plural:
                rows.append(row)
        return rows
