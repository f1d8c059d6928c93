"""The agent's five tools over one knowledge base: actions in, observations out.

`Toolbox(kb).run(action)` implements `mcts.search.protocols.Tools`. Observation texts follow
docs/method.md#the-agent-and-its-tools. Every failure the agent can cause (a bad query, a timeout, an
unreachable endpoint, an empty name) comes back as `Observation.error(...)`; only
programming errors raise.

All store access goes through `KnowledgeBase.query` with generic SPARQL 1.1 (full
IRIs, no engine extensions) and `KnowledgeBase.search_names`, so the same action gives
the same observation on the embedded store and on a remote endpoint holding the same
data. Vocabulary questions go to the `Flavour` (Freebase or Wikidata; Wikidata's
property labels for ranking and class labels come from `kb.wikidata`). This module
knows nothing of search, models other than the relation ranker, or the UI.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from kb.actions import Action, ActionParseError
from kb.base import KBError, KnowledgeBase, QueryResult, Term
from kb.flavour import FREEBASE, Flavour, iri_ref
from kb.observation import GraphPattern, Observation, Value
from kb.relation_ranker import Ranker

log = logging.getLogger(__name__)

MAX_HITS = 10  # SearchNodes items (docs/method.md, the tools table)
MAX_PATTERNS = 10  # SearchGraphPatterns relations shown (same table)
MAX_ENTITIES = 50  # ?e bindings explored by SearchGraphPatterns
MAX_TYPES = 10
DESCRIPTION_CHARS = 100  # SearchNodes description prefix (same table)
OUTPUT_CHARS = 2000  # ExecuteSPARQL text budget (same table)
NAMED_VALUES = 1000  # ExecuteSPARQL: distinct entities whose names are looked up
NAME_CACHE_SIZE = 200_000  # IRI -> name entries kept per toolbox
MAX_ARGUMENT_CHARS = 20_000  # one call's arguments; a query is at most kb.sparql.MAX_QUERY_CHARS
_XSD = "http://www.w3.org/2001/XMLSchema#"
_SELECT_E = re.compile(
    r"^\s*(?:PREFIX\s+[\w-]*:\s*<[^>]*>\s*)*SELECT\s+(?:DISTINCT\s+)?\?e\s+WHERE\b", re.IGNORECASE
)
_PATTERNS_USAGE = (
    'SearchGraphPatterns needs a query that starts with "SELECT ?e WHERE" and binds ?e, '
    'e.g. SELECT ?e WHERE {{ ?e {name} "Barack Obama"@en }}'
)
# Per KB: (type ids, the text SearchTypes matches words against: the id, or a label).
_TYPES_CACHE: weakref.WeakKeyDictionary[Any, tuple[tuple[str, ...], tuple[str, ...]]] = (
    weakref.WeakKeyDictionary()
)
_BARE_ID = re.compile(r"[A-Za-z][\w-]*:[^\s\"<>]+")
_TYPES_LOCK = threading.Lock()


def quoted(text: str) -> str:
    """A name as the agent sees it: double-quoted, inner quotes escaped."""
    return json.dumps(text, ensure_ascii=False)


def render_value(value: Value) -> str:
    """`"Name"` for an entity or string, `"1961-08-04"^^xsd:date` for a typed literal,
    `ns:m.0abc` / `wds:Q76-...` for a node that has no name (its name is its short id)."""
    if value.id is not None and (
        value.name.startswith("ns:")
        or (_BARE_ID.fullmatch(value.name) is not None and value.name.endswith(value.id.split(":")[-1]))
    ):
        return value.name
    if value.datatype:
        dt = value.datatype if "://" not in value.datatype else f"<{value.datatype}>"
        return f"{quoted(value.name)}^^{dt if dt.startswith('<') else 'xsd:' + dt}"
    return quoted(value.name)


class Toolbox:
    """The five tools over `kb`. Thread-safe for concurrent `run` calls."""

    def __init__(
        self,
        kb: KnowledgeBase,
        *,
        flavour: Flavour | None = None,
        ranker: Ranker | None = None,
        timeout_s: float = 10.0,
        max_rows: int = 10_000,
    ) -> None:
        self.kb = kb
        self.flavour = flavour or getattr(kb, "flavour", FREEBASE)
        self._ranker = ranker
        self.timeout_s = timeout_s
        self.max_rows = max_rows
        self._names: dict[str, str | None] = {}  # IRI -> name (None: has no name)
        self._relation_labels: dict[str, str] = {}  # relation id -> ranking text part (Wikidata)
        self._lock = threading.Lock()

    @property
    def ranker(self) -> Ranker:
        """The relation ranker; the process-wide embedding ranker unless one was given."""
        if self._ranker is None:
            from kb.relation_ranker import default_ranker

            self._ranker = default_ranker()
        return self._ranker

    # ----- entry point --------------------------------------------------------------
    def run(self, action: Action) -> Observation:
        started = time.perf_counter()
        handlers: dict[str, Callable[[Action], Observation]] = {
            "SearchNodes": self.search_nodes,
            "SearchGraphPatterns": self.search_graph_patterns,
            "ExecuteSPARQL": self.execute_sparql,
            "SearchTypes": self.search_types,
            "Done": lambda _a: Observation("Done"),
        }
        try:
            if len(action.argument) + len(action.semantic) > MAX_ARGUMENT_CHARS:
                raise ValueError(
                    f"{action.tool}: arguments too long (at most {MAX_ARGUMENT_CHARS:,} characters)"
                )
            obs = handlers[action.tool](action)
        except (KBError, ActionParseError, ValueError) as exc:
            # KBError covers QueryRejected, QueryTimeout, EndpointUnavailable.
            obs = Observation.error(str(exc) or type(exc).__name__)
        return replace(obs, elapsed_s=time.perf_counter() - started)

    def _rank(self, semantic: str, texts: list[str]) -> list[float]:
        try:
            return self.ranker.rank(semantic, texts)
        except (ImportError, OSError) as exc:
            # The embedding model could not load (missing package or files): rank
            # lexically rather than fail every SearchGraphPatterns call; say so once.
            from kb.relation_ranker import LexicalRanker

            log.warning("relation ranker unavailable (%s); ranking relations lexically", exc)
            self._ranker = LexicalRanker()
            return self._ranker.rank(semantic, texts)

    def warm_up(self) -> None:
        """Load the ranker's model, the type list and the vectors of every predicate of
        the KB, so the first tool calls of a session are as fast as the rest (seconds)."""
        res = self.kb.query(
            "SELECT DISTINCT ?p WHERE { ?s ?p ?o }", timeout_s=max(self.timeout_s, 30.0), max_rows=100_000
        )
        predicates = [
            self.flavour.relation_id(r[0].value)
            for r in res.rows
            if r[0] is not None and not self.flavour.is_hidden_predicate(r[0].value)
        ]
        if self.flavour.relation_label_links:  # Wikidata ranks property labels, not ids
            deadline = time.perf_counter() + max(self.timeout_s, 30.0)
            predicates = self._relation_texts([(p,) for p in predicates], deadline)
        self._rank("warm up", predicates)
        self.all_types()

    # ----- SearchNodes --------------------------------------------------------------
    def search_nodes(self, action: Action) -> Observation:
        name = action.argument.strip()
        if not name:
            return Observation.error('SearchNodes needs an entity name, e.g. SearchNodes("Barack Obama")')
        hits = self.kb.search_names(name, MAX_HITS)[:MAX_HITS]
        if not hits:
            return Observation(
                f"No entity found for {quoted(name)}; try another spelling or a shorter name.", "empty"
            )
        counts: dict[str, int] = {}
        for h in hits:
            counts[h.name.casefold()] = counts.get(h.name.casefold(), 0) + 1
        lines = []
        for h in hits:
            parts = [quoted(h.name)]
            if counts[h.name.casefold()] > 1:  # homonyms: the id tells them apart
                parts.append(self.flavour.short(self.flavour.entity_iri(h.id)))
            desc = " ".join(h.description.split())
            if desc:
                parts.append(
                    "Description: "
                    + (desc[:DESCRIPTION_CHARS] + "..." if len(desc) > DESCRIPTION_CHARS else desc)
                )
            else:
                parts.append("No description.")
            lines.append(" | ".join(parts))
        return Observation("\n".join(lines), entities=tuple(hits))

    # ----- helpers over kb.query ----------------------------------------------------
    def _query(self, sparql: str, deadline: float, max_rows: int | None = None) -> QueryResult:
        remaining = deadline - time.perf_counter()
        if remaining <= 0:
            from kb.base import QueryTimeout

            raise QueryTimeout(f"the tool ran past its {self.timeout_s:g} s time limit")
        return self.kb.query(sparql, timeout_s=remaining, max_rows=max_rows or self.max_rows)

    def _lookup_names(self, iris: Sequence[str], deadline: float) -> dict[str, str | None]:
        """Names of entity IRIs (batched VALUES queries, cached per toolbox)."""
        with self._lock:
            if len(self._names) > NAME_CACHE_SIZE:  # a long-lived app on a big KB: start over
                self._names.clear()
            missing = [i for i in dict.fromkeys(iris) if i not in self._names]
        pref = self.flavour.name_lang
        for start in range(0, len(missing), 200):
            batch = missing[start : start + 200]
            values = " ".join(iri_ref(i) for i in batch)
            res = self._query(
                f"SELECT ?x ?n WHERE {{ VALUES ?x {{ {values} }} ?x {iri_ref(self.flavour.name_predicate)} ?n }}",
                deadline,
            )
            found = _pick_names(res.rows, pref)
            with self._lock:
                for i in batch:
                    self._names[i] = found.get(i)
        with self._lock:
            return {i: self._names.get(i) for i in iris}

    def _value(self, term: Term, names: dict[str, str | None]) -> Value:
        fl = self.flavour
        if term.kind == "iri":
            name = names.get(term.value)
            ident = fl.entity_id(term.value)
            return Value(name if name is not None else fl.short(term.value), ident)
        if term.kind == "bnode":
            return Value(f"_:{term.value}")
        dt = term.datatype
        if dt and dt.startswith(_XSD):
            dt = dt[len(_XSD) :]
        return Value(term.value, None, dt)

    # ----- SearchGraphPatterns ------------------------------------------------------
    def search_graph_patterns(self, action: Action) -> Observation:
        from kb.sparql import guard_and_normalise

        usage = _PATTERNS_USAGE.format(name=self.flavour.name_ref)
        if not _SELECT_E.match(action.argument):
            return Observation.error(usage)
        deadline = time.perf_counter() + self.timeout_s
        prepared = guard_and_normalise(action.argument, self.flavour.prefixes, max_rows=MAX_ENTITIES)
        res = self._query(prepared.sparql, deadline, MAX_ENTITIES)
        if "e" not in res.variables:
            return Observation.error(usage)
        col = res.variables.index("e")
        entities = list(
            dict.fromkeys(r[col].value for r in res.rows if r[col] is not None and r[col].kind == "iri")
        )
        if not entities:
            return Observation(
                "No entity matches ?e, so there are no patterns; check the name or id with SearchNodes.",
                "empty",
                sparql=prepared.sparql,
            )
        found = self._patterns(entities, deadline)
        if not found:
            return Observation("?e has no relations to explore.", "empty", sparql=prepared.sparql)
        semantic = action.semantic.strip()
        texts = [" -> ".join(preds) for _d, preds, _s in found]
        labels = [""] * len(found)
        if self.flavour.relation_label_links:  # Wikidata: property labels read, ids do not
            labels = texts = self._relation_texts([preds for _d, preds, _s in found], deadline)
        if semantic:
            ranking_started = time.perf_counter()
            scores = self._rank(semantic, texts)
            # The time limit is for the KB; loading the model on first use must not eat it.
            deadline += time.perf_counter() - ranking_started
            order = sorted(range(len(found)), key=lambda i: (-round(scores[i], 6), i))
        else:
            scores = [0.0] * len(found)
            order = list(range(len(found)))
        shown = order[:MAX_PATTERNS]
        names = self._lookup_names([found[i][2].value for i in shown if found[i][2].kind == "iri"], deadline)
        patterns = tuple(
            GraphPattern(
                found[i][0], found[i][1], self._value(found[i][2], names), round(scores[i], 4), labels[i]
            )
            for i in shown
        )
        lines = []
        for p in patterns:
            sample = render_value(p.sample)
            rel = p.relation_text()
            lines.append(f"(?e, {rel}, {sample})" if p.direction == "out" else f"({sample}, {rel}, ?e)")
        if res.truncated:
            lines.append(
                f"(?e has more than {MAX_ENTITIES} bindings; these are the patterns of the first {MAX_ENTITIES})"
            )
        if len(found) > len(shown) and not semantic:
            lines.append(f'... {len(found) - len(shown)} more relations; add semantic="..." to rank them')
        return Observation("\n".join(lines), patterns=patterns, sparql=prepared.sparql)

    def relations_around(self, entity_id: str) -> list[GraphPattern]:
        """Every relation SearchGraphPatterns could show around one entity, unranked, each
        sample by its id (for studies of the whole choice; the tool shows the top few)."""
        iri = self.flavour.entity_iri(entity_id)
        found = self._patterns([iri], time.perf_counter() + self.timeout_s)
        return [GraphPattern(d, preds, self._value(sample, {})) for d, preds, sample in found]

    def _patterns(self, entities: list[str], deadline: float) -> list[tuple[Any, tuple[str, ...], Term]]:
        """(direction, predicate ids, sample term) around the entities; hidden ones dropped.

        Four aggregate queries: direct out/in edges to named nodes or literals, and out/in
        pairs through an unnamed (CVT) node. MIN picks the sample so it is the same on
        every engine holding the same data. Stable order: out before in, then by text.
        """
        fl = self.flavour
        values = "VALUES ?e { " + " ".join(iri_ref(e) for e in entities) + " }"
        name = iri_ref(fl.name_predicate)
        queries = {
            "out": f"SELECT ?p (MIN(?o) AS ?s) WHERE {{ {values} ?e ?p ?o . "
            f"FILTER(isLiteral(?o) || EXISTS {{ ?o {name} ?n }}) }} GROUP BY ?p",
            "in": f"SELECT ?p (MIN(?h) AS ?s) WHERE {{ {values} ?h ?p ?e . FILTER(EXISTS {{ ?h {name} ?n }}) }} GROUP BY ?p",
            "out2": f"SELECT ?p ?q (MIN(?t) AS ?s) WHERE {{ {values} ?e ?p ?c . "
            f"FILTER(!isLiteral(?c) && NOT EXISTS {{ ?c {name} ?n }}) ?c ?q ?t . FILTER(?t != ?e) }} GROUP BY ?p ?q",
            "in2": f"SELECT ?p ?q (MIN(?h) AS ?s) WHERE {{ {values} ?c ?q ?e . "
            f"FILTER(!isLiteral(?c) && NOT EXISTS {{ ?c {name} ?n }}) ?h ?p ?c . FILTER(?h != ?e) }} GROUP BY ?p ?q",
        }
        found: list[tuple[Any, tuple[str, ...], Term]] = []
        for kind, sparql in queries.items():
            res = self._query(sparql, deadline)
            for row in res.rows:
                *preds, sample = row
                if sample is None or any(
                    p is None or p.kind != "iri" or fl.is_hidden_predicate(p.value) for p in preds
                ):
                    continue
                ids = tuple(fl.relation_id(p.value) for p in preds if p is not None)
                found.append(("out" if kind.startswith("out") else "in", ids, sample))
        found.sort(key=lambda f: (f[0] != "out", " -> ".join(f[1])))
        return found

    def _relation_texts(self, paths: list[tuple[str, ...]], deadline: float) -> list[str]:
        """`position held: start time` for `p:P39 -> pq:P580`, from the KB's property labels."""
        from kb.wikidata import relation_label_query, relation_text

        with self._lock:
            missing = sorted({r for path in paths for r in path} - set(self._relation_labels))
        fl = self.flavour
        for start in range(0, len(missing), 200):
            batch = missing[start : start + 200]
            res = self._query(relation_label_query(fl, [fl.relation_iri(r) for r in batch]), deadline)
            found = _pick_names(res.rows, fl.name_lang)
            with self._lock:
                for r in batch:  # no label (an endpoint without property entities): the id
                    self._relation_labels[r] = found.get(fl.relation_iri(r), r)
        with self._lock:
            return [relation_text([self._relation_labels[r] for r in path]) for path in paths]

    # ----- ExecuteSPARQL ------------------------------------------------------------
    def execute_sparql(self, action: Action) -> Observation:
        from kb.sparql import guard_and_normalise

        if not action.argument.strip():
            return Observation.error("ExecuteSPARQL needs a SELECT or ASK query")
        deadline = time.perf_counter() + self.timeout_s
        prepared = guard_and_normalise(action.argument, self.flavour.prefixes, max_rows=self.max_rows)
        res = self._query(prepared.sparql, deadline)
        if res.boolean is not None or prepared.form == "ask":
            answer = "True" if res.boolean else "False"
            return Observation(answer, values=(Value(answer),), sparql=prepared.sparql)
        rows = [r for r in res.rows if any(t is not None for t in r)]
        if not rows:
            return Observation(
                "No results: the query ran but matched nothing.", "empty", sparql=prepared.sparql
            )
        iris = [t.value for r in rows for t in r if t is not None and t.kind == "iri"]
        names = self._lookup_names(list(dict.fromkeys(iris))[:NAMED_VALUES], deadline)
        single = len(res.variables) == 1
        items: list[str] = []
        values: list[Value] = []
        for r in rows:
            cells = [self._value(t, names) if t is not None else None for t in r]
            if cells[0] is not None:
                values.append(cells[0])
            items.append(
                render_value(cells[0])
                if single and cells[0]
                else "(" + ", ".join(render_value(c) if c else "-" for c in cells) + ")"
            )
        items = list(dict.fromkeys(items))
        values = list(dict.fromkeys(values))
        text, shown = _join_within(items, OUTPUT_CHARS)
        if shown < len(items) or res.truncated:
            more = "+" if res.truncated else ""
            text += f" ({len(items)}{more} distinct results; first {shown} shown)"
        return Observation(text, values=tuple(values), sparql=prepared.sparql)

    # ----- SearchTypes --------------------------------------------------------------
    def all_types(self) -> tuple[str, ...]:
        """Distinct type ids of the KB, gathered once per KB object and cached."""
        return self._types()[0]

    def _types(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(type ids, their words): Freebase type ids carry their words (`film.actor`);
        Wikidata classes (objects of P31 or P279) are matched by their labels."""
        with _TYPES_LOCK:
            cached = _TYPES_CACHE.get(self.kb)
        if cached is not None:
            return cached
        fl = self.flavour
        where = f"?x {iri_ref(fl.type_predicate)} ?t"
        if fl.subclass_predicate:
            where = f"{{ {where} }} UNION {{ ?x {iri_ref(fl.subclass_predicate)} ?t }}"
        limit_s = max(self.timeout_s, 30.0)
        res = self.kb.query(f"SELECT DISTINCT ?t WHERE {{ {where} }}", timeout_s=limit_s, max_rows=100_000)
        iris = {
            fl.relation_id(r[0].value): r[0].value
            for r in res.rows
            if r[0] is not None and r[0].kind == "iri"
        }
        types = tuple(sorted(iris))
        texts = types
        if fl.relation_label_links:  # Wikidata: class ids say nothing; their labels do
            names = self._lookup_names([iris[t] for t in types], time.perf_counter() + limit_s)
            texts = tuple(names.get(iris[t]) or t for t in types)
        with _TYPES_LOCK:
            _TYPES_CACHE[self.kb] = (types, texts)
        return types, texts

    def search_types(self, action: Action) -> Observation:
        query = action.argument.strip()
        if not query:
            return Observation.error('SearchTypes needs a few words, e.g. SearchTypes("film actor")')
        types, texts = self._types()
        words = _stems(query)
        if not words:
            return Observation.error("SearchTypes needs at least one word")
        stems = _type_stems(texts)
        # Rank: share of query words the type has, then share of the type's words that
        # the query has (film.actor before film.film_art_director), then rapidfuzz.
        overlap = [len(words & s) / len(words) for s in stems]
        candidates = [i for i, o in enumerate(overlap) if o > 0]
        if not candidates:
            return Observation(f"No type matches {quoted(query)}.", "empty")
        from kb.relation_ranker import LexicalRanker

        sims = LexicalRanker().rank(query, [texts[i] for i in candidates])
        key = {
            i: (-overlap[i], -len(words & stems[i]) / len(stems[i]), -sim, types[i])
            for i, sim in zip(candidates, sims, strict=True)
        }
        ranked = sorted(candidates, key=key.__getitem__)
        chosen = ranked[:MAX_TYPES]
        lines = [types[i] if texts is types else f"{quoted(texts[i])} | {types[i]}" for i in chosen]
        return Observation("\n".join(lines), types=tuple(types[i] for i in chosen))


def _pick_names(rows: Iterable[tuple[Term | None, ...]], lang: str | None) -> dict[str, str]:
    """One name per IRI: a name in `lang` (or untagged) first, then the smallest string."""
    best: dict[str, tuple[int, str]] = {}
    for x, n in rows:
        if x is None or n is None:
            continue
        key = (0 if n.lang in (lang, None, "") else 1, n.value)
        if x.value not in best or key < best[x.value]:
            best[x.value] = key
    return {k: v[1] for k, v in best.items()}


def _join_within(items: list[str], budget: int) -> tuple[str, int]:
    """`[a, b, ...]` holding as many items as fit in `budget` characters (at least one)."""
    out: list[str] = []
    used = 2
    for item in items:
        if out and used + len(item) + 2 > budget:
            return "[" + ", ".join(out) + ", ...]", len(out)
        if not out and len(item) > budget:
            return "[" + item[:budget] + "...]", 1
        out.append(item)
        used += len(item) + 2
    return "[" + ", ".join(out) + "]", len(out)


@functools.lru_cache(maxsize=8)
def _type_stems(types: tuple[str, ...]) -> list[frozenset[str]]:
    """Content words of every type id, computed once per type list."""
    return [frozenset(_stems(t)) for t in types]


def _stems(text: str) -> set[str]:
    """Content words of `text` (dots and underscores split words), crude plural folding."""
    from kb.name_index import STOPWORDS, normalise

    words = normalise(text.replace(".", " ")).split()
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in words
        if w not in STOPWORDS
    }
