"""A `NameIndex` read from any store by SPARQL: names, aliases, descriptions, degrees.

`name_index_from(select, flavour)` runs four generic SPARQL queries through `select`
(a function from a query to its rows) and builds the index the embedded store searches
with. The embedded store (`kb.embedded`) and a small SPARQL endpoint (`kb.remote`) call
it with the same queries, so on the same data they hold the same index and SearchNodes
gives the same hits in the same order on both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kb.base import Term
from kb.flavour import Flavour, iri_ref
from kb.name_index import NameIndex

Rows = Sequence[tuple[Term | None, ...]]


def label_query(predicate: str) -> str:
    """(entity, literal) pairs of one label predicate."""
    return f"SELECT ?e ?v WHERE {{ ?e {iri_ref(predicate)} ?v . FILTER(isIRI(?e) && isLiteral(?v)) }}"


def degree_query(flavour: Flavour) -> str:
    """Edges per named entity as a subject (counted once per name: the embedded index's
    rough popularity, kept as it was)."""
    name = iri_ref(flavour.name_predicate)
    return f"SELECT ?e (COUNT(*) AS ?n) WHERE {{ ?e {name} ?x . ?e ?p ?o }} GROUP BY ?e"


def name_index_from(select: Callable[[str], Rows], flavour: Flavour) -> NameIndex:
    """The name index of the store `select` queries (see the module docstring)."""
    fl = flavour

    def pairs(predicate: str) -> list[tuple[str, str, str | None]]:
        return [(e.value, v.value, v.lang) for e, v in select(label_query(predicate)) if e and v]

    def preferred(rows: list[tuple[str, str, str | None]]) -> list[tuple[str, str]]:
        # Names in the flavour's language first, so an entity's display name is that one.
        rows.sort(key=lambda r: (r[2] not in (fl.name_lang, None, ""), r[0]))
        if fl.index_entities_only:  # Wikidata: items only, not the labelled properties
            rows = [r for r in rows if fl.is_entity_iri(r[0])]
        return [(fl.entity_id(e), v) for e, v, _ in rows]

    names = preferred(pairs(fl.name_predicate))
    aliases = preferred(pairs(fl.alias_predicate)) if fl.alias_predicate else []
    descriptions: dict[str, str] = {}
    if fl.description_predicate:
        for e, v in preferred(pairs(fl.description_predicate)):
            descriptions.setdefault(e, v)
    degrees = {fl.entity_id(e.value): int(n.value) for e, n in select(degree_query(fl)) if e and n}
    return NameIndex(names, aliases, descriptions, degrees)
