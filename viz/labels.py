"""Node names that tell siblings apart: the tool plus what distinguishes the step.

Three SPARQL children of one node used to read alike wherever the action was cut to a
prefix. Here a node is named by its tool and the part that differs from its siblings:
the relation(s) a query follows (last path segment, `people.person.parents` -> "parents";
two segments where the last only repeats the domain, `film.director.film` ->
"director.film"; "←" where the query walks a relation backwards from a known entity),
COUNT / ORDER BY / a comparing FILTER, the entity (its name from the tree's own
observations), the searched name of SearchNodes, Done's answer. Each sibling group is
compared as a group: a node gets the shortest description that no sibling with another
action shares, so the names stay short where they can.

Pure functions of `mcts.search.tree.Tree`; the tree figure, the node table and the node
list all read `step_labels`. Knows nothing of Plotly or Gradio.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mcts.search.tree import ROOT_ID, Node, Tree

TOOL_ABBR = {
    "SearchNodes": "Nodes",
    "SearchGraphPatterns": "Patterns",
    "ExecuteSPARQL": "SPARQL",
    "SearchTypes": "Types",
    "Done": "Done",
}
DETAIL_CHARS = 48  # the longest detail a label carries (the full action is on hover)

# A prefixed name of any flavour (`ns:m.0abc`, `ns:film.actor.film`, `wd:Q76`, `pq:P580`),
# a full IRI, a variable, or a quoted literal.
_TERM = r'(?:\?[A-Za-z_]\w*|<[^<>\s]+>|[A-Za-z][\w-]*:[^\s{}()<>,"]+|"(?:[^"\\]|\\.)*"(?:@[\w-]+|\^\^\S+)?)'
_TRIPLE = re.compile(rf"({_TERM})\s+({_TERM})\s+({_TERM})")
_FILTER = re.compile(r"FILTER\s*\((.*?)\)\s*(?:\.|\}|FILTER|$)", re.IGNORECASE | re.DOTALL)
_ORDER = re.compile(r"ORDER\s+BY\s+(ASC|DESC)?", re.IGNORECASE)
_NAME_PREDICATES = {"type.object.name", "rdfs:label", "schema:name", "skos:prefLabel"}
_ENTITY = re.compile(r"^(?:[mg]\.[\w]+|Q[\w]+|wd:Q[\w]+)$")
_FREEBASE_IRI = "http://rdf.freebase.com/ns/"


@dataclass(frozen=True)
class Facets:
    """What can tell one step from another, coarsest first."""

    tool: str  # short tool name ("SPARQL"), "?" for a step that did not parse, "Q" for the root
    relations: tuple[tuple[str, bool], ...] = ()  # (relation id, walked backwards)
    entities: tuple[str, ...] = ()  # names of the constants the step starts from
    markers: tuple[str, ...] = ()  # COUNT, ORDER BY ↓, FILTER < 1942: they change the answer
    minor: tuple[str, ...] = ()  # FILTER ≠ (the start entity excluded), semantic="..."
    text: str = ""  # the argument of SearchNodes / SearchTypes, Done's answer
    full: str = ""  # the whole action text: two steps with the same text are the same step


def entity_names(tree: Tree) -> dict[str, str]:
    """Entity id -> name, from every SearchNodes hit, pattern sample and result value the
    tree's observations hold (the ids a query mentions were found by an earlier step)."""
    names: dict[str, str] = {}
    for node in tree.nodes:
        if node.step is None:
            continue
        obs = node.step.observation
        for hit in obs.entities:
            names.setdefault(hit.id, hit.name)
        for value in (*obs.values, *(p.sample for p in obs.patterns)):
            if value.id and value.name:
                names.setdefault(value.id, value.name)
    return names


def relation_labels(tree: Tree) -> dict[str, str]:
    """Relation id -> readable label where the KB gives one (Wikidata property labels)."""
    labels: dict[str, str] = {}
    for node in tree.nodes:
        if node.step is None:
            continue
        for pattern in node.step.observation.patterns:
            if pattern.label:
                for pred, word in zip(pattern.predicates, pattern.label.split(": "), strict=False):
                    labels.setdefault(pred, word)
    return labels


def _local(term: str) -> str:
    """`ns:people.person.parents` / its full IRI -> `people.person.parents`; `wdt:P19` stays."""
    if term.startswith("<") and term.endswith(">"):
        iri = term[1:-1]
        return iri[len(_FREEBASE_IRI) :] if iri.startswith(_FREEBASE_IRI) else iri.rsplit("/", 1)[-1]
    return term[3:] if term.startswith("ns:") else term


def _is_constant(term: str) -> bool:
    return not term.startswith("?")


def _query_facets(query: str, names: Mapping[str, str]) -> tuple[list[tuple[str, bool]], list[str]]:
    """(relations walked from the query's constants, with their direction; entity names)."""
    triples = [(s, _local(p), o) for s, p, o in _TRIPLE.findall(query)]
    entities: list[str] = []
    known: set[str] = set()
    rest = []
    for s, p, o in triples:
        if p in _NAME_PREDICATES and o.startswith('"'):
            entities.append(_literal(o))  # `?e ns:type.object.name "Barack Obama"@en`
            known.add(s)
        else:
            rest.append((s, p, o))
    for term in (t for s, _, o in rest for t in (s, o)):
        if _is_constant(term) and not term.startswith('"'):
            known.add(term)
            name = _entity_name(_local(term), names)
            if name not in entities:
                entities.append(name)
    relations: list[tuple[str, bool]] = []
    # Walk outwards from what is known: a triple whose object is known is read backwards.
    while rest:
        for i, (s, p, o) in enumerate(rest):
            if s in known or o in known:
                backwards = s not in known
                relations.append((p, backwards))
                known.update((s, o))
                del rest[i]
                break
        else:
            relations.extend((p, False) for _, p, _ in rest)
            break
    return relations, entities


def _literal(term: str) -> str:
    body = term[1 : term.rfind('"')] if term.startswith('"') else term
    return body.replace('\\"', '"')


def _entity_name(entity_id: str, names: Mapping[str, str]) -> str:
    bare = entity_id.removeprefix("wd:")
    if bare in names:
        return names[bare]
    if bare.startswith("m.demo_"):  # the demo KB's readable ids
        return bare.removeprefix("m.demo_").replace("_", " ")
    return bare


def _markers(query: str, names: Mapping[str, str]) -> tuple[list[str], list[str]]:
    """(markers that change the answer, minor ones)."""
    markers: list[str] = []
    minor: list[str] = []
    if re.search(r"\bCOUNT\s*\(", query, re.IGNORECASE):
        markers.append("COUNT")
    order = _ORDER.search(query)
    if order:
        markers.append("ORDER BY ↑" if (order.group(1) or "ASC").upper() == "ASC" else "ORDER BY ↓")
    for body in _FILTER.findall(query):
        m = re.match(r"\s*(\S.*?)\s*(!=|<=|>=|<|>|=)\s*(\S.*?)\s*$", body)
        if m is None:
            minor.append("FILTER")
        elif m.group(2) == "!=":
            minor.append(f"FILTER ≠ {_entity_name(_local(m.group(3)), names)}")
        else:
            op = {"<=": "≤", ">=": "≥"}.get(m.group(2), m.group(2))
            markers.append(f"FILTER {op} {_literal(m.group(3))}")
    return markers, minor


def facets(node: Node, names: Mapping[str, str]) -> Facets:
    """The facets of one node's step (`names`: `entity_names` of its tree)."""
    if node.step is None:
        return Facets("Q", full="(question)")
    step = node.step
    action = step.action
    if action is None:
        raw = " ".join(step.raw_text.split())
        return Facets("?", text=raw or "unparsable", full=f"(unparsable) {raw}")
    full = " ".join(action.render().split())
    tool = TOOL_ABBR.get(action.tool, action.tool)
    if action.tool == "Done":
        answer = ", ".join(v.name for v in node.answer) if node.terminal else ""
        return Facets(tool, text=f"→ {answer}" if answer else "", full=full)
    if action.tool in ("SearchNodes", "SearchTypes"):
        return Facets(tool, text=f'"{action.argument}"', full=full)
    relations, entities = _query_facets(action.argument, names)
    markers, minor = _markers(action.argument, names)
    if action.semantic:
        minor.append(f'"{action.semantic}"')
    return Facets(tool, tuple(relations), tuple(entities), tuple(markers), tuple(minor), full=full)


def relation_name(relation: str, segments: int, labels: Mapping[str, str]) -> str:
    """A relation id shortened to its last `segments` path segments (0: the whole id); a
    last segment that only repeats the domain or type (`film.director.film`) keeps one more."""
    if relation in labels:
        return labels[relation]
    parts = relation.split(".")
    if segments <= 0 or segments >= len(parts):
        return relation
    if segments == 1 and len(parts) >= 3 and parts[-1] in parts[:-1]:
        segments = 2
    return ".".join(parts[-segments:])


def _relations_text(f: Facets, segments: int, labels: Mapping[str, str]) -> str:
    return "/".join(("←" if back else "") + relation_name(r, segments, labels) for r, back in f.relations)


def _detail_at(f: Facets, level: int, labels: Mapping[str, str]) -> str:
    """The detail of a label at a level of precision: 0 the relations (or the argument),
    1 longer relation names, 2 the entity too, 3 every marker, 4 whole relation ids,
    5 the whole action."""
    if level >= 5:
        return f.full
    if not f.relations and not f.entities:
        return " ".join(p for p in (f.text, *f.markers, *(f.minor if level >= 3 else ())) if p)
    segments = {0: 1, 1: 2, 2: 1, 3: 2, 4: 0}[level]
    rel = _relations_text(f, segments, labels)
    parts = [rel] if rel else []
    if level >= 2 or not rel:
        parts += [f"· {e}" for e in f.entities[:2]] if rel else list(f.entities[:2])
    parts += list(f.markers)
    if level >= 3:
        parts += list(f.minor)
    return " ".join(parts)


LEVELS = 6


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _pick_details(group: list[Facets], labels: Mapping[str, str]) -> list[str]:
    """Per node of one sibling group, the first detail level no sibling with another
    action shares (siblings with the same action text are the same step)."""
    cut: Callable[[Facets, int], str] = lambda f, lvl: _shorten(  # noqa: E731
        _detail_at(f, lvl, labels), DETAIL_CHARS if lvl < 5 else 2 * DETAIL_CHARS
    )
    keys = [[(f.tool, cut(f, lvl)) for lvl in range(LEVELS)] for f in group]
    chosen: list[int] = []
    for i, f in enumerate(group):
        others = [j for j, g in enumerate(group) if g.full != f.full]
        level = next(
            (lvl for lvl in range(LEVELS) if all(keys[j][lvl] != keys[i][lvl] for j in others)), LEVELS - 1
        )
        chosen.append(level)
    shown = [keys[i][lvl] for i, lvl in enumerate(chosen)]
    # Two names picked at different levels may still read alike: then both show the action.
    for i, f in enumerate(group):
        if any(shown[j] == shown[i] and group[j].full != f.full for j in range(len(group)) if j != i):
            chosen[i] = LEVELS - 1
    return [keys[i][lvl][1] for i, lvl in enumerate(chosen)]


@dataclass(frozen=True)
class StepLabel:
    tool: str  # "SPARQL", "Nodes", ... ("Q" for the root)
    detail: str  # what tells the node from its siblings ("" where nothing needs saying)
    full: str  # the whole action text (hover, the table's action column)

    @property
    def text(self) -> str:
        """Tool and detail on one line: the table's and the node list's name of the node."""
        return f"{self.tool} {self.detail}".strip() if self.detail else self.tool


def step_labels(tree: Tree) -> dict[int, StepLabel]:
    """Every node's label, each sibling group compared as a group."""
    names = entity_names(tree)
    labels = relation_labels(tree)
    found = {node.id: facets(node, names) for node in tree.nodes}
    out = {ROOT_ID: StepLabel("Q", "", "(question)")}
    for parent in tree.nodes:
        # A live tree grows in the search's thread while the page draws it: children added
        # after `found` was taken wait for the next redraw.
        kids = [k for k in parent.children if k in found]
        if not kids:
            continue
        details = _pick_details([found[k] for k in kids], labels)
        for kid, detail in zip(kids, details, strict=True):
            f = found[kid]
            out[kid] = StepLabel(f.tool, detail, f.full)
    return out
