"""What a knowledge base's vocabulary looks like: IRIs of names, descriptions, types, ids.

The tools (`kb.tools`) ask a `Flavour` every vocabulary question (how is an entity
named, which predicates are bookkeeping, how is an id written), so they work unchanged
on both flavours:

- `FREEBASE`: one namespace `ns:` for entities and relations; relation ids are bare
  (`film.actor.film`), entity ids `m.0abc`; unnamed nodes are CVTs.
- `WIKIDATA`: Wikidata RDF as the Wikidata Query Service serves it. Items `wd:Q76`
  (entity id `Q76`), relations written with their prefix (`wdt:P19`, `p:P39`,
  `ps:P39`, `pq:P580`) because one property has several predicate forms; statement
  nodes (`wds:...`, no label) play the part of CVTs; property labels for ranking
  come from the KB (`wikibase:directClaim`/`claim`/`statementProperty`/`qualifier`
  link `wd:Pn` to each form; see `kb.wikidata`).

IRIs are split on the longest matching namespace (`p:` is a prefix of the `ps:`,
`pq:` and `wdt:` namespaces). This module knows nothing of stores, queries being
run, or the agent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from kb.observation import EntityHit

_RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
_RDFS = "http://www.w3.org/2000/01/rdf-schema#"
_XSD = "http://www.w3.org/2001/XMLSchema#"
_OWL = "http://www.w3.org/2002/07/owl#"
# A prefixed name's local part we write without escapes (Wikidata ids, statement ids).
_PLAIN_LOCAL = re.compile(r"[A-Za-z0-9_][\w\-]*")


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
    # Prefixes (keys of `prefixes`) written as `prefix:local` in observations; empty =
    # only the entity namespace `base` (Freebase: `ns:`; other IRIs stay `<iri>`).
    short_prefixes: tuple[str, ...] = ()
    # Relation ids keep their prefix (`wdt:P19`) instead of being bare local names of `base`.
    prefixed_relation_ids: bool = False
    subclass_predicate: str = ""  # classes are also the objects of this (Wikidata: wdt:P279)
    # Predicates linking a property entity to the predicates it stands for (Wikidata:
    # wikibase:directClaim ...); when given, relations are ranked by the property's label.
    relation_label_links: tuple[str, ...] = ()
    # The name index holds only IRIs matching `entity_id_pattern` (Wikidata: items, not
    # the labelled property entities).
    index_entities_only: bool = False

    # ----- ids and IRIs -------------------------------------------------------------
    @cached_property
    def base_prefix(self) -> str:
        """The prefix of the entity namespace (`ns`, `wd`)."""
        return next((p for p, ns in self.prefixes.items() if ns == self.base), "ns")

    @cached_property
    def _short_namespaces(self) -> tuple[tuple[str, str], ...]:
        """(prefix, namespace) written as prefixed names, longest namespace first."""
        names = self.short_prefixes or (self.base_prefix,)
        pairs = [(p, self.prefixes.get(p, self.base)) for p in names]
        return tuple(sorted(pairs, key=lambda pn: -len(pn[1])))

    def split(self, iri: str) -> tuple[str, str] | None:
        """(prefix, local) on the longest matching short namespace, or None."""
        for prefix, namespace in self._short_namespaces:
            if iri.startswith(namespace):
                local = iri[len(namespace) :]
                # Freebase locals are written as they are (dots are fine in `ns:` ids we
                # write); elsewhere only plain locals, so `prefix:local` always parses.
                if not self.short_prefixes or _PLAIN_LOCAL.fullmatch(local):
                    return prefix, local
                return None
        return None

    def entity_id(self, iri: str) -> str:
        """`http://rdf.freebase.com/ns/m.0abc` -> `m.0abc`, `.../entity/Q76` -> `Q76`;
        another short namespace gives `prefix:local` (`wds:...`); a foreign IRI is returned whole."""
        parts = self.split(iri)
        if parts is None:
            return iri
        prefix, local = parts
        return local if prefix == self.base_prefix else f"{prefix}:{local}"

    def entity_iri(self, entity_id: str) -> str:
        if entity_id.startswith(("http://", "https://")):
            return entity_id
        prefix, colon, local = entity_id.partition(":")
        if (
            colon
            and prefix in self.prefixes
            and (prefix in self.short_prefixes or prefix == self.base_prefix)
        ):
            return self.prefixes[prefix] + local
        return self.base + entity_id

    def relation_id(self, iri: str) -> str:
        """`film.actor.film` (Freebase, bare) or `wdt:P19` (Wikidata, prefixed)."""
        if not self.prefixed_relation_ids:
            return self.entity_id(iri)
        parts = self.split(iri)
        return f"{parts[0]}:{parts[1]}" if parts else iri

    def relation_iri(self, relation_id: str) -> str:
        return self.entity_iri(relation_id)

    def relation_ref(self, relation_id: str) -> str:
        """How a relation id is written in SPARQL we build (`ns:film.actor.film`, `wdt:P19`)."""
        if self.prefixed_relation_ids:
            return relation_id if ":" in relation_id and "://" not in relation_id else iri_ref(relation_id)
        return f"{self.base_prefix}:{relation_id}"

    def is_entity_iri(self, iri: str) -> bool:
        """An IRI in this flavour's entity namespace whose id looks like an entity id."""
        parts = self.split(iri)
        return (
            parts is not None
            and parts[0] == self.base_prefix
            and re.fullmatch(self.entity_id_pattern, parts[1]) is not None
        )

    def short(self, iri: str) -> str:
        """`ns:m.0abc`, `wd:Q76`, `wds:Q76-...` for an IRI in a short namespace, else `<iri>`
        (how the agent writes it)."""
        parts = self.split(iri)
        return f"{parts[0]}:{parts[1]}" if parts else iri_ref(iri)

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
            return f"SELECT ?e WHERE {{ VALUES ?e {{ {self.short(self.entity_iri(hit.id))} }} }}"
        return f"SELECT ?e WHERE {{ ?e {self.name_ref} {self.name_literal(hit.name)} }}"

    @cached_property
    def name_ref(self) -> str:
        """The name predicate as the agent writes it (`ns:type.object.name`, `rdfs:label`)."""
        for prefix, namespace in sorted(self.prefixes.items(), key=lambda pn: -len(pn[1])):
            if self.name_predicate.startswith(namespace):
                return f"{prefix}:{self.name_predicate[len(namespace) :]}"
        return iri_ref(self.name_predicate)

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


# ----- Wikidata (RDF as the Wikidata Query Service serves it) ---------------------------
_WD = "http://www.wikidata.org/entity/"
_WIKIBASE = "http://wikiba.se/ontology#"
_SCHEMA = "http://schema.org/"
_SKOS = "http://www.w3.org/2004/02/skos/core#"
_WIKIDATA_PREFIXES = {
    "wd": _WD,
    "wdt": "http://www.wikidata.org/prop/direct/",
    "p": "http://www.wikidata.org/prop/",
    "ps": "http://www.wikidata.org/prop/statement/",
    "pq": "http://www.wikidata.org/prop/qualifier/",
    "wds": _WD + "statement/",
    "wikibase": _WIKIBASE,
    "rdfs": _RDFS,
    "rdf": _RDF,
    "schema": _SCHEMA,
    "skos": _SKOS,
    "xsd": _XSD,
    # Value nodes, references and normalised forms on the real WDQS: named here so that
    # their IRIs split on their own namespace (not as `p:statement/value/...`) and hide.
    "psv": "http://www.wikidata.org/prop/statement/value/",
    "psn": "http://www.wikidata.org/prop/statement/value-normalized/",
    "pqv": "http://www.wikidata.org/prop/qualifier/value/",
    "pqn": "http://www.wikidata.org/prop/qualifier/value-normalized/",
    "pr": "http://www.wikidata.org/prop/reference/",
    "prv": "http://www.wikidata.org/prop/reference/value/",
    "prn": "http://www.wikidata.org/prop/reference/value-normalized/",
    "wdtn": "http://www.wikidata.org/prop/direct-normalized/",
    "wdno": "http://www.wikidata.org/prop/novalue/",
    "wdref": "http://www.wikidata.org/reference/",
    "wdv": "http://www.wikidata.org/value/",
    "prov": "http://www.w3.org/ns/prov#",
}

WIKIDATA = Flavour(
    name="wikidata",
    base=_WD,
    prefixes=_WIKIDATA_PREFIXES,
    name_predicate=_RDFS + "label",
    description_predicate=_SCHEMA + "description",
    alias_predicate=_SKOS + "altLabel",
    type_predicate=_WIKIDATA_PREFIXES["wdt"] + "P31",
    name_lang="en",
    hidden_iris=frozenset({_RDFS + "label", _SCHEMA + "description", _SKOS + "altLabel", _RDF + "type"}),
    hidden_namespaces=(
        _WIKIBASE,
        _RDF,
        _RDFS,
        _OWL,
        _SCHEMA,
        _SKOS,
        *(_WIKIDATA_PREFIXES[p] for p in ("psv", "pqv", "pr", "wdtn", "wdno", "prov")),
    ),
    entity_id_pattern=r"Q[1-9][0-9]*|Qdemo_[a-z0-9_]+",
    short_prefixes=tuple(_WIKIDATA_PREFIXES),
    prefixed_relation_ids=True,
    subclass_predicate=_WIKIDATA_PREFIXES["wdt"] + "P279",
    relation_label_links=tuple(
        _WIKIBASE + link for link in ("directClaim", "claim", "statementProperty", "qualifier")
    ),
    index_entities_only=True,
)

FLAVOURS: dict[str, Flavour] = {f.name: f for f in (FREEBASE, WIKIDATA)}


def flavour_named(name: str) -> Flavour:
    """`"freebase"` / `"wikidata"` (any case) -> the flavour; ValueError names the choices."""
    found = FLAVOURS.get(name.strip().lower())
    if found is None:
        raise ValueError(f"unknown KB flavour {name!r}; choose one of: {', '.join(FLAVOURS)}")
    return found
