"""What a knowledge base's vocabulary looks like: IRIs of names, descriptions, types, ids.

The tools (`kb.tools`) ask a `Flavour` every vocabulary question (how is an entity
named, which predicates are bookkeeping, how is an id written), so a Wikidata flavour
can be added later without touching them. `FREEBASE` is the only flavour today.

This module knows nothing of stores, queries being run, or the agent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from kb.observation import EntityHit

_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_XSD = "http://www.w3.org/2001/XMLSchema#"
_OWL = "http://www.w3.org/2002/07/owl#"


def sparql_string(text: str) -> str:
    """A SPARQL string literal body with quotes, backslashes and newlines escaped."""
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r")
    return f'"{escaped}"'


def iri_ref(iri: str) -> str:
    """`<iri>`: full IRIs everywhere we write SPARQL ourselves, because pyoxigraph (and so
    `oxigraph serve`) rejects prefixed names with two dots such as `ns:type.object.name`."""
    return f"<{iri}>"


@dataclass(frozen=True)
class Flavour:
    """The vocabulary of one family of knowledge bases (frozen; compare by `name`)."""

    name: str
    base: str  # namespace of entities and relations, e.g. "http://rdf.freebase.com/ns/"
    prefixes: dict[str, str] = field(compare=False, hash=False)
    name_predicate: str = ""
    description_predicate: str = ""
    alias_predicate: str = ""
    type_predicate: str = ""
    name_lang: str | None = "en"  # language tag of names; None = plain literals
    # Relation ids (namespace stripped) hidden from SearchGraphPatterns: bookkeeping
    # and schema, never an answer path the agent should follow.
    hidden_relation_prefixes: tuple[str, ...] = ()
    hidden_iris: frozenset[str] = frozenset()
    hidden_namespaces: tuple[str, ...] = ()  # whole IRIs namespaces (rdf:, rdfs:, owl:)
    entity_id_pattern: str = r".+"  # what an entity id looks like (after the namespace)

    # ----- ids and IRIs -------------------------------------------------------------
    def entity_id(self, iri: str) -> str:
        """`http://rdf.freebase.com/ns/m.0abc` -> `m.0abc`; a foreign IRI is returned whole."""
        return iri[len(self.base) :] if iri.startswith(self.base) else iri

    def entity_iri(self, entity_id: str) -> str:
        if entity_id.startswith(("http://", "https://")):
            return entity_id
        return self.base + entity_id.removeprefix("ns:")

    relation_id = entity_id
    relation_iri = entity_iri

    def is_entity_iri(self, iri: str) -> bool:
        """An IRI in this flavour's namespace whose id looks like an entity id."""
        return (
            iri.startswith(self.base)
            and re.fullmatch(self.entity_id_pattern, self.entity_id(iri)) is not None
        )

    def short(self, iri: str) -> str:
        """`ns:m.0abc` for an entity in the namespace, else `<iri>` (how the agent writes it)."""
        return f"ns:{self.entity_id(iri)}" if iri.startswith(self.base) else iri_ref(iri)

    def is_hidden_predicate(self, iri: str) -> bool:
        """Names, descriptions, aliases, types and other bookkeeping: never shown as patterns."""
        if iri in self.hidden_iris or iri.startswith(self.hidden_namespaces):
            return True
        if not iri.startswith(self.base):
            return False
        return self.relation_id(iri).startswith(self.hidden_relation_prefixes)

    # ----- queries the tools and policies write -----------------------------------
    def name_literal(self, name: str) -> str:
        lang = f"@{self.name_lang}" if self.name_lang else ""
        return sparql_string(name) + lang

    def entity_query(self, hit: EntityHit, *, homonym: bool = False) -> str:
        """The `SELECT ?e WHERE {...}` a SearchGraphPatterns call uses for one entity.

        By name when the name is unique (the agent copies names, and the IG scorer reads
        names better than ids); by id when another entity shares the name.
        """
        if homonym or not hit.name:
            return f"SELECT ?e WHERE {{ VALUES ?e {{ ns:{hit.id} }} }}"
        return f"SELECT ?e WHERE {{ ?e ns:{self.relation_id(self.name_predicate)} {self.name_literal(hit.name)} }}"

    def entity_queries(self, hits: list[EntityHit]) -> dict[str, str]:
        """`entity_query` for each hit, by id for names that occur more than once in `hits`."""
        counts: dict[str, int] = {}
        for hit in hits:
            counts[hit.name.casefold()] = counts.get(hit.name.casefold(), 0) + 1
        return {h.id: self.entity_query(h, homonym=counts[h.name.casefold()] > 1) for h in hits}


_FB = "http://rdf.freebase.com/ns/"

FREEBASE = Flavour(
    name="freebase",
    base=_FB,
    prefixes={"ns": _FB, "xsd": _XSD, "rdf": _RDF, "rdfs": _RDFS},
    name_predicate=_FB + "type.object.name",
    description_predicate=_FB + "common.topic.description",
    alias_predicate=_FB + "common.topic.alias",
    type_predicate=_FB + "type.object.type",
    name_lang="en",
    hidden_relation_prefixes=(
        "type.object.",
        "type.type.",
        "type.property.",
        "common.",
        "freebase.",
        "kg.",
        "dataworld.",
    ),
    hidden_iris=frozenset({_RDF + "type", _RDFS + "label", _RDFS + "comment"}),
    hidden_namespaces=(_RDF, _RDFS, _OWL),
    entity_id_pattern=r"[mg]\.[0-9A-Za-z_]+",
)
