"""What only the Wikidata flavour needs: property labels for ranking, and telling the
flavour of a data file.

- `relation_label_query`: the SPARQL that finds the label of the property behind each
  predicate form (`wdt:P39`, `p:P39`, `ps:P39`, `pq:P39` all lead to `wd:P39` "position
  held" through `wikibase:directClaim` / `claim` / `statementProperty` / `qualifier`).
- `relation_text`: the text a relation path is ranked by (`p:P39 -> pq:P580` ->
  `position held: start time`).
- `detect_flavour`: a cheap look at the first bytes of an RDF file (or of the first file
  of a folder): Wikidata's entity namespace present -> `WIKIDATA`, else `FREEBASE`.

It writes query text and reads files; it runs no query and knows nothing of tools.
"""

from __future__ import annotations

import gzip
from collections.abc import Sequence
from pathlib import Path

from kb.flavour import FREEBASE, WIKIDATA, Flavour, iri_ref

SNIFF_BYTES = 64 * 1024  # enough for the prefix block and the first statements of a file


def relation_label_query(flavour: Flavour, predicate_iris: Sequence[str]) -> str:
    """`SELECT ?f ?n`: each predicate IRI `?f` with the name `?n` of the property entity
    that links to it through one of the flavour's `relation_label_links`."""
    forms = " ".join(iri_ref(i) for i in predicate_iris)
    links = " ".join(iri_ref(i) for i in flavour.relation_label_links)
    return (
        f"SELECT ?f ?n WHERE {{ VALUES ?f {{ {forms} }} VALUES ?link {{ {links} }} "
        f"?prop ?link ?f . ?prop {iri_ref(flavour.name_predicate)} ?n }}"
    )


def relation_text(labels: Sequence[str]) -> str:
    """Labels of a path's hops joined by `: `, a repeated label once
    (`p:P39 -> ps:P39` is "position held", `p:P39 -> pq:P580` "position held: start time")."""
    parts: list[str] = []
    for label in labels:
        if not parts or parts[-1] != label:
            parts.append(label)
    return ": ".join(parts)


def detect_flavour(path: Path) -> Flavour:
    """`WIKIDATA` when the file (or the first RDF file of a folder) mentions Wikidata's
    entity namespace in its first `SNIFF_BYTES`, else `FREEBASE`. Unreadable -> FREEBASE
    (loading the file reports the real problem)."""
    from kb.embedded import rdf_files

    try:
        first = rdf_files(path)[0]
        opener = gzip.open if first.suffix == ".gz" else open
        with opener(first, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except (OSError, ValueError, EOFError):
        return FREEBASE
    return WIKIDATA if WIKIDATA.base.encode() in head else FREEBASE
