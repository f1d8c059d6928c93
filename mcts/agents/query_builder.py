"""The SPARQL the guided policy writes, and reading it back.

The guided policy builds its ExecuteSPARQL candidates from graph patterns the tools
returned: a one-hop query from an entity, the current query extended by one more
pattern, a constraint joining a second entity (conjunction), a superlative
(ORDER BY ... LIMIT 1) and a COUNT. All of them are written in one canonical form:

    SELECT DISTINCT ?x WHERE { ns:m.a ns:film.actor.film ?c1 . ?c1 ns:film.performance.film ?x . FILTER(?x != ns:m.a) }

so that `parse_query` can read a query of the history back into a `Query` and extend
it further. Only that form is read; any other SPARQL (e.g. written by a ReAct model)
gives None, and the guided policy then simply does not extend it.

Entities are written as `ns:<id>` and relations as `ns:<relation id>`; the tool layer
expands these to full IRIs before execution. This module knows nothing of models,
stores or the search; it only knows the shape of `kb.observation.GraphPattern`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from kb.observation import GraphPattern

ANSWER = "?x"
Order = Literal["ASC", "DESC"]

# A prefixed name of any flavour: `ns:m.0abc`, `ns:film.actor.film`, `wd:Q76`, `pq:P580`.
_PNAME = r"[A-Za-z][\w-]*:[^\s{}()]+"
_TERM = rf"(?:\?[A-Za-z_]\w*|{_PNAME})"
_TRIPLE = re.compile(rf"^({_TERM})\s+({_PNAME})\s+({_TERM})$")
_FILTER = re.compile(
    rf"^FILTER\s*\(\s*(YEAR\(\?[A-Za-z_]\w*\)|\?[A-Za-z_]\w*)\s*(!=|<=|>=|<|>|=)\s*({_TERM}|-?\d+(?:\.\d+)?)\s*\)$",
    re.IGNORECASE,
)
Op = Literal["!=", "<", ">", "=", "<=", ">="]
_QUERY = re.compile(
    r"^\s*SELECT\s+(?P<head>DISTINCT\s+\?x|\?x|\(\s*COUNT\s*\(\s*DISTINCT\s+\?x\s*\)\s+AS\s+\?count\s*\))"
    r"\s+WHERE\s*\{(?P<body>.*)\}"
    r"(?:\s*ORDER\s+BY\s+(?P<order>ASC|DESC)\s*\(\s*(?P<key>\?[A-Za-z_]\w*)\s*\)\s+LIMIT\s+1)?\s*$",
    re.DOTALL | re.IGNORECASE,
)


@dataclass(frozen=True)
class Triple:
    s: str  # "?var" or "ns:<id>"
    p: str  # "ns:<relation id>"
    o: str

    def render(self) -> str:
        return f"{self.s} {self.p} {self.o}"


@dataclass(frozen=True)
class Filter:
    left: str  # "?var" or "YEAR(?var)"
    op: Op
    right: str  # a term or a number

    def render(self) -> str:
        return f"FILTER({self.left} {self.op} {self.right})"

    def variables(self) -> set[str]:
        return set(re.findall(r"\?[A-Za-z_]\w*", f"{self.left} {self.right}"))

    def renamed(self, old: str, new: str) -> Filter:
        def ren(text: str) -> str:
            return re.sub(re.escape(old) + r"\b", new, text)

        return Filter(ren(self.left), self.op, ren(self.right))


def differs(var: str, term: str) -> Filter:
    return Filter(var, "!=", term)


@dataclass(frozen=True)
class Query:
    """A conjunctive query with answer variable ?x, optionally a superlative or a count."""

    triples: tuple[Triple, ...]
    filters: tuple[Filter, ...] = ()
    order: Order | None = None  # superlative: ORDER BY order(order_key) LIMIT 1
    order_key: str = ""
    count: bool = False

    def render(self) -> str:
        parts = [t.render() + " ." for t in self.triples]
        parts += [f.render() for f in self.filters]
        body = " ".join(parts)
        if self.count:
            return f"SELECT (COUNT(DISTINCT ?x) AS ?count) WHERE {{ {body} }}"
        if self.order is not None:
            return f"SELECT ?x WHERE {{ {body} }} ORDER BY {self.order}({self.order_key}) LIMIT 1"
        return f"SELECT DISTINCT ?x WHERE {{ {body} }}"

    def variables(self) -> set[str]:
        found = {term for t in self.triples for term in (t.s, t.o) if term.startswith("?")}
        return found.union(*(f.variables() for f in self.filters))

    def entities(self) -> set[str]:
        """Entity ids (without their prefix: `m.0abc`, `Q76`) the query mentions as constants."""
        return {term.split(":", 1)[1] for term in self.entity_terms()}

    def entity_terms(self) -> set[str]:
        """The constants as written (`ns:m.0abc`, `wd:Q76`)."""
        return {term for t in self.triples for term in (t.s, t.o) if not term.startswith("?")}

    def relations(self) -> tuple[str, ...]:
        """Relation ids as the tools give them: bare for Freebase, prefixed otherwise (`wdt:P19`)."""
        return tuple(t.p.removeprefix("ns:") for t in self.triples)

    @property
    def is_plain(self) -> bool:
        """Neither a count nor a superlative: may be extended further."""
        return not self.count and self.order is None


def parse_query(text: str) -> Query | None:
    """Read back a query written by `Query.render`; None for any other SPARQL."""
    text = re.sub(r"^\s*(PREFIX\s+\S+\s*<[^>]*>\s*)+", "", text or "", flags=re.IGNORECASE)
    m = _QUERY.match(text)
    if not m:
        return None
    triples: list[Triple] = []
    filters: list[Filter] = []
    # Statements are separated by " ." (ids contain dots but never " .").
    for raw in re.split(r"\s\.(?:\s|$)", m.group("body").strip() + " "):
        stmt = raw.strip()
        if not stmt:
            continue
        tm = _TRIPLE.match(stmt)
        if tm:
            triples.append(Triple(*tm.groups()))
            continue
        # A FILTER may follow the last triple without its own " ." separator.
        fm = _FILTER.match(stmt)
        if fm:
            filters.append(Filter(fm.group(1), fm.group(2), fm.group(3)))  # type: ignore[arg-type]
            continue
        pieces = re.split(r"\s+(?=FILTER\s*\()", stmt)
        if len(pieces) > 1 and all(_FILTER.match(p.strip()) for p in pieces):
            filters += [Filter(*_FILTER.match(p.strip()).groups()) for p in pieces]  # type: ignore[union-attr,arg-type]
            continue
        return None
    if not triples:
        return None
    head = m.group("head").upper()
    order = m.group("order")
    query = Query(
        triples=tuple(triples),
        filters=tuple(filters),
        order=order.upper() if order else None,  # type: ignore[arg-type]
        order_key=m.group("key") or "",
        count=head.startswith("("),
    )
    return query if ANSWER in query.variables() else None


def _fresh(query: Query | None, stem: str) -> str:
    used = query.variables() if query is not None else set()
    n = 1
    while f"?{stem}{n}" in used:
        n += 1
    return f"?{stem}{n}"


def pattern_triples(anchor: str, pattern: GraphPattern, target: str, cvt_var: str) -> tuple[Triple, ...]:
    """Triples linking `anchor` (the pattern's ?e) to `target` along one returned pattern.

    out (p,):      anchor p target
    out (p1, p2):  anchor p1 ?c . ?c p2 target
    in (p,):       target p anchor
    in (p1, p2):   target p1 ?c . ?c p2 anchor   (predicates read in edge order, head first)
    """
    preds = [relation_term(p) for p in pattern.predicates]
    if len(preds) == 1:
        if pattern.direction == "out":
            return (Triple(anchor, preds[0], target),)
        return (Triple(target, preds[0], anchor),)
    if pattern.direction == "out":
        return (Triple(anchor, preds[0], cvt_var), Triple(cvt_var, preds[1], target))
    return (Triple(target, preds[0], cvt_var), Triple(cvt_var, preds[1], anchor))


Edge = tuple[str, str]  # (direction from the previous node, relation id as the tools give it)


def pattern_edges(direction: str, predicates: tuple[str, ...]) -> tuple[Edge, ...]:
    """The edges a pattern walks from its anchor, in order (see `pattern_triples`): an
    incoming CVT pattern lists its predicates head first, so it walks them backwards."""
    if direction == "out":
        return tuple(("out", p) for p in predicates)
    return tuple(("in", p) for p in reversed(predicates))


def edge_path(query: Query) -> tuple[str, tuple[Edge, ...]] | None:
    """A plain chain query as (its one entity, the edges from it to ?x); None for any other
    shape (a constraint's second entity, a superlative's key, a count).

    `one_hop` then `extend` write such chains; the case memory compares them with the
    gold paths of training questions (`mcts.agents.case_memory`)."""
    terms = query.entity_terms()
    if not query.is_plain or len(terms) != 1:
        return None
    (start,) = terms
    node, left, edges = start, list(query.triples), []
    while left:
        step = [t for t in left if node in (t.s, t.o)]
        if len(step) != 1:
            return None
        t = step[0]
        left.remove(t)
        outgoing = t.s == node
        edges.append(("out" if outgoing else "in", t.p.removeprefix("ns:")))
        node = t.o if outgoing else t.s
    if node != ANSWER:
        return None
    return start.split(":", 1)[1], tuple(edges)


def entity_term(entity: str) -> str:
    """`m.0abc` -> `ns:m.0abc` (Freebase ids are bare); a prefixed name (`wd:Q76`) as it is."""
    return entity if ":" in entity else f"ns:{entity}"


def relation_term(relation: str) -> str:
    """`film.actor.film` -> `ns:film.actor.film`; a prefixed relation id (`wdt:P19`) as it is."""
    return relation if ":" in relation else f"ns:{relation}"


def one_hop(entity_id: str, pattern: GraphPattern) -> Query:
    """`?x` = what the entity reaches along the pattern (the entity itself filtered out).
    `entity_id`: a Freebase id or a prefixed name (`wd:Q76`, see `entity_term`)."""
    anchor = entity_term(entity_id)
    triples = pattern_triples(anchor, pattern, ANSWER, "?c1")
    # A CVT pair can lead back to the entity itself (siblings, spouses): drop it.
    filters = (differs(ANSWER, anchor),) if len(triples) > 1 else ()
    return Query(triples=triples, filters=filters)


def _renamed(query: Query, old: str, new: str) -> Query:
    def ren(term: str) -> str:
        return new if term == old else term

    return replace(
        query,
        triples=tuple(Triple(ren(t.s), t.p, ren(t.o)) for t in query.triples),
        filters=tuple(f.renamed(old, new) for f in query.filters),
        order_key=ren(query.order_key) if query.order_key else "",
    )


def extend(query: Query, pattern: GraphPattern) -> Query:
    """Follow one more pattern from the current answer: the old ?x becomes ?yN."""
    middle = _fresh(query, "y")
    base = _renamed(query, ANSWER, middle)
    cvt = _fresh(base, "c")
    triples = pattern_triples(middle, pattern, ANSWER, cvt)
    entities = sorted(query.entity_terms())
    # Never answer with the entities the query starts from or the previous answers.
    filters = tuple(differs(ANSWER, e) for e in entities) + (differs(ANSWER, middle),)
    return replace(base, triples=base.triples + triples, filters=base.filters + filters)


def constrain(query: Query, entity_id: str, pattern: GraphPattern) -> Query:
    """Conjunction: keep only answers linked to a second entity along its pattern.

    `pattern` was found around the second entity (its ?e), so the answer ?x takes the
    place of the pattern's far end.
    """
    cvt = _fresh(query, "c")
    triples = pattern_triples(entity_term(entity_id), pattern, ANSWER, cvt)
    return replace(query, triples=query.triples + triples)


def superlative(query: Query, pattern: GraphPattern, order: Order) -> Query:
    """The answer whose value along `pattern` (a number or date) is largest/smallest."""
    key = _fresh(query, "v")
    cvt = _fresh(query, "c")
    triples = pattern_triples(ANSWER, pattern, key, cvt)
    return replace(query, triples=query.triples + triples, order=order, order_key=key)


def compared(query: Query, pattern: GraphPattern, op: Op, number: str, *, year: bool) -> Query:
    """Comparative: keep the answers whose value along `pattern` compares with `number`
    (the year of a date when `year`), e.g. born before 1942 -> FILTER(YEAR(?v1) < 1942)."""
    key = _fresh(query, "v")
    cvt = _fresh(query, "c")
    triples = pattern_triples(ANSWER, pattern, key, cvt)
    left = f"YEAR({key})" if year else key
    return replace(
        query, triples=query.triples + triples, filters=query.filters + (Filter(left, op, number),)
    )


def counted(query: Query) -> Query:
    return replace(query, count=True, order=None, order_key="")


def answer_pattern_query(query: Query) -> str:
    """The `SELECT ?e WHERE {...}` that asks SearchGraphPatterns about the current answers."""
    base = _renamed(replace(query, order=None, order_key="", count=False), ANSWER, "?e")
    body = " ".join([t.render() + " ." for t in base.triples] + [f.render() for f in base.filters])
    return f"SELECT ?e WHERE {{ {body} }}"
