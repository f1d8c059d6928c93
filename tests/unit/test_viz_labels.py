"""Node labels that tell siblings apart (`viz.labels`): on the shipped traces and on small
hand-built sibling groups, one feature at a time."""

from __future__ import annotations

import pytest

from kb.actions import Action
from kb.observation import EntityHit, Observation, Value
from mcts.search.steps import Step
from mcts.search.trace import load_trace
from mcts.search.tree import Tree
from ui.config import TRACES_DIR
from viz.labels import relation_name, step_labels


def _trace(name: str) -> Tree:
    return load_trace(TRACES_DIR / name).to_tree()


def _group(*actions: Action, hits: tuple[EntityHit, ...] = ()) -> dict[int, str]:
    """Labels of one sibling group under a SearchNodes node (whose hits name the entities)."""
    tree = Tree("q")
    top = tree.add_child(0, Step("", Action("SearchNodes", "x"), Observation("hits", entities=hits)))
    ids = [tree.add_child(top.id, Step("", a, Observation("[]"))).id for a in actions]
    labels = step_labels(tree)
    return {i: labels[i].text for i in ids}


def _sparql(body: str, head: str = "SELECT DISTINCT ?x WHERE", tail: str = "") -> Action:
    return Action("ExecuteSPARQL", f"{head} {{ {body} }}{tail}")


def test_obama_siblings_3_4_5_read_three_different_relations() -> None:
    labels = step_labels(_trace("fast-obama.json"))
    texts = [labels[i].text for i in (3, 4, 5)]
    assert texts == ["SPARQL place_of_birth", "SPARQL children", "SPARQL nationality"]
    assert labels[6].text == "Done → Honolulu"
    assert labels[1].text == 'Nodes "Barack Obama"'
    assert labels[11].text == "SPARQL ←parents"  # ?x parents Obama: walked backwards
    assert labels[3].full.startswith('ExecuteSPARQL("SELECT DISTINCT ?x WHERE { ns:m.demo_barack_obama')


def test_inception_names_a_cvt_path_and_a_relation_whose_last_segment_repeats_its_domain() -> None:
    labels = step_labels(_trace("fast-inception.json"))
    assert labels[3].text == "SPARQL directed_by"
    assert labels[4].text == "SPARQL ←performance.film/←actor.film"
    assert labels[5].text == "SPARQL ←director.film"
    assert len({labels[i].text for i in (3, 4, 5)}) == 3


def test_siblings_sharing_a_relation_are_told_apart_by_their_entity_and_only_then() -> None:
    hits = (EntityHit("m.1", "Ada Lovelace"), EntityHit("m.2", "Charles Babbage"))
    labels = _group(
        _sparql("ns:m.1 ns:people.person.place_of_birth ?x ."),
        _sparql("ns:m.2 ns:people.person.place_of_birth ?x ."),
        _sparql("ns:m.1 ns:people.person.spouse_s ?x ."),
        hits=hits,
    )
    assert list(labels.values()) == [
        "SPARQL place_of_birth · Ada Lovelace",
        "SPARQL place_of_birth · Charles Babbage",
        "SPARQL spouse_s",  # nothing shares it: it stays short
    ]


def test_a_shared_last_segment_brings_in_the_one_before() -> None:
    labels = _group(
        _sparql("ns:m.1 ns:book.author.works ?x ."),
        _sparql("ns:m.1 ns:film.director.works ?x ."),
        _sparql("ns:m.1 ns:people.person.parents ?x ."),
    )
    assert list(labels.values()) == ["SPARQL author.works", "SPARQL director.works", "SPARQL parents"]


def test_count_order_by_and_comparing_filters_are_named() -> None:
    labels = _group(
        _sparql("ns:m.1 ns:people.person.children ?x .", head="SELECT (COUNT(DISTINCT ?x) AS ?count) WHERE"),
        _sparql(
            "ns:m.1 ns:tv.actor.series ?x . ?x ns:tv.series.episodes ?n .",
            head="SELECT ?x WHERE",
            tail=" ORDER BY DESC(?n) LIMIT 1",
        ),
        _sparql("ns:m.1 ns:band.member ?x . ?x ns:people.person.date_of_birth ?d . FILTER(YEAR(?d) < 1942)"),
    )
    assert list(labels.values()) == [
        "SPARQL children COUNT",
        "SPARQL series/episodes ORDER BY ↓",
        "SPARQL member/date_of_birth FILTER < 1942",
    ]


def test_siblings_differing_only_in_a_minor_part_show_it_and_the_same_step_twice_reads_alike() -> None:
    a = _sparql("?x ns:film.actor.film ?c . ?c ns:film.performance.film ns:m.9 . FILTER(?x != ns:m.9)")
    b = _sparql("?x ns:film.actor.film ?c . ?c ns:film.performance.film ns:m.9 .")
    labels = list(_group(a, b, a).values())
    assert labels[0] != labels[1] and "FILTER ≠" in labels[0]
    assert labels[0] == labels[2]  # the same action: the same name


def test_names_come_from_the_trees_observations_and_searches_keep_their_argument() -> None:
    tree = Tree("q")
    hit = EntityHit("m.0abc", "Dune")
    top = tree.add_child(0, Step("", Action("SearchNodes", "Dune"), Observation("x", entities=(hit,))))
    kid = tree.add_child(
        top.id,
        Step(
            "",
            Action("SearchGraphPatterns", 'SELECT ?e WHERE { ?e ns:type.object.name "Dune"@en }'),
            Observation(""),
        ),
    )
    done = tree.add_child(
        kid.id,
        Step("", Action("Done"), Observation("Done")),
        terminal=True,
        answer=(Value("Frank Herbert", "m.9"),),
    )
    labels = step_labels(tree)
    assert labels[top.id].text == 'Nodes "Dune"'
    assert labels[kid.id].text == "Patterns Dune"
    assert labels[done.id].text == "Done → Frank Herbert"
    assert labels[0].text == "Q"


@pytest.mark.parametrize(
    ("relation", "segments", "expected"),
    [
        ("people.person.parents", 1, "parents"),
        ("film.director.film", 1, "director.film"),
        ("people.person.parents", 2, "person.parents"),
        ("people.person.parents", 0, "people.person.parents"),
        ("wdt:P19", 1, "wdt:P19"),
    ],
)
def test_relation_names(relation: str, segments: int, expected: str) -> None:
    assert relation_name(relation, segments, {}) == expected
    assert relation_name("wdt:P19", 1, {"wdt:P19": "place of birth"}) == "place of birth"


def test_a_step_that_did_not_parse_is_named_so() -> None:
    tree = Tree("q")
    bad = tree.add_child(
        0, Step("", None, Observation.error("no"), raw_text="Action: Foo("), validity="parse_error"
    )
    assert step_labels(tree)[bad.id].tool == "?"
