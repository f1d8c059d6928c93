"""The guided policy's candidate steps at a state, each with a templated thought and a prior.

`enumerate_options(state, mentions, flavour, priors)` lists every sensible next tool
call given what the history's observations hold (see `mcts.agents.policy_guided` for the
list). Each option carries a `prior`: a documented term added to the language
model's score (see `Priors`), the named `features` that prior is the weighted sum of (so a
trained ranker, `mcts.agents.option_ranker`, can weigh them anew), and a cheap `rank` used
only to cap the number of candidates before the model scores them.

The priors read a few question words (how many; superlative and comparative words;
numbers) and the state's shape; they never look at gold answers or at the KB beyond
the observations. This module knows nothing of models.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Literal

from kb.actions import Action
from kb.flavour import Flavour
from kb.name_index import STOPWORDS
from kb.observation import EntityHit, GraphPattern, Value
from mcts.agents.case_memory import CaseFit
from mcts.agents.guided_state import GuidedState, squash
from mcts.agents.query_builder import (
    Op,
    Order,
    Query,
    answer_pattern_query,
    compared,
    constrain,
    counted,
    extend,
    one_hop,
    superlative,
)

OptionKind = Literal[
    "search_nodes",
    "entity_patterns",
    "answer_patterns",
    "hop",
    "extend",
    "constrain",
    "superlative",
    "compare",
    "count",
    "done",
]
_DATES = frozenset({"date", "dateTime", "gYear", "gYearMonth"})
_NUMBERS = frozenset(
    {"integer", "int", "decimal", "float", "double", "long", "short", "nonNegativeInteger", "positiveInteger"}
)
_COUNT = re.compile(r"\bhow many\b|\bnumber of\b", re.IGNORECASE)
_MOST = re.compile(
    r"\b(most|largest|biggest|highest|longest|latest|last|newest|youngest|recent|recently|maximum|greatest)\b",
    re.I,
)
_LEAST = re.compile(r"\b(least|smallest|lowest|shortest|earliest|first|oldest|debut|minimum|fewest)\b", re.I)
_BEFORE = re.compile(r"\b(before|earlier than|prior to|less than|fewer than|under|below)\b", re.I)
_AFTER = re.compile(r"\b(after|later than|since|more than|greater than|over|above)\b", re.I)
_NUMBER = re.compile(r"\b\d{1,3}(?:,\d{3})+\b|\b\d+\b")
_WHEN = re.compile(r"^\s*(when|what year|in what year|in which year|what date|on what date)\b", re.I)
_WHERE = re.compile(
    r"^\s*(where|in what (city|country|place|state)|in which (city|country|place|state))\b", re.I
)
_WHO = re.compile(r"^\s*(who|whom)\b", re.I)
_PLACE_WORDS = re.compile(
    r"place|location|located|contained|city|country|region|state|venue|headquarters|born_in", re.I
)
Wh = Literal["when", "where", "who", ""]
PER_ANCHOR = 8  # patterns of one anchor (an entity, the current answers) that become queries
FIRST_SEARCHES = 4  # spans offered to SearchNodes before any entity is found (2 afterwards)


@dataclass(frozen=True)
class Priors:
    """Terms added to the LM score (mean log-prob per token, in nats). Each is documented
    because each is a choice a 135M model cannot make alone.

    similarity: x the tool's semantic similarity (cosine, ~0..1) between the question and a
        pattern, for candidates built from a pattern: the sentence embedder reads relation
        ids far better than a 135M LM does.
    done_bonus: Done right after a non-empty result from depth 3 on, unless the question
        still names an entity not searched yet, asks "how many" without a COUNT, or has a
        superlative/comparative word while the query has no ORDER BY/FILTER yet.
    switch_penalty: once a query has results, a fresh one-hop query from the same entity
        (abandoning the current answers) is less likely than building on them; so is
        exploring a homonym of an entity already explored, or an entity of an earlier search.
    second_entity: searching (and then exploring) an entity named in the question that is
        not used yet, once a query has results (conjunctions).
    refine: exploring the answers' relations when the question has a superlative word or a
        number (comparative) and the query has no ORDER BY/FILTER yet.
    count: COUNT when the question asks "how many" (the same amount is taken off otherwise).
    direction: a superlative/comparison whose direction word matches the question's; and
        taken off an extension to a number/date when the question has a superlative word
        but no "when" (it asks for the entity with the largest value, not the value).
    answer_type: a one-hop or extension whose values fit the question word: +1 x this for
        a date after "when", a place-like relation after "where"; -1 x this for an entity
        after "when" or a literal after "where"/"who". While the current answers do not
        fit, Done earns no bonus and exploring the answers' relations earns `refine`.
    homonym: x the sentence-embedding similarity between the question and an entity's
        description, for entities that share their name with another hit (telling
        "Paris" in Texas from the capital of France is the description's job).
    repeat_relation: an extension along a relation the query already uses (mostly a walk
        back to where the path came from; a 135M LM likes to repeat the last thought).
    """

    similarity: float = 4.0
    done_bonus: float = 2.5
    switch_penalty: float = -2.0
    second_entity: float = 1.5
    refine: float = 1.5
    count: float = 1.5
    direction: float = 1.0
    answer_type: float = 1.0
    repeat_relation: float = -2.0
    homonym: float = 2.0

    def weigh(self, features: Features) -> float:
        """The prior of an option: each named feature times the weight of the same name
        (features without a hand-set weight, `LEARNED_ONLY`, count zero here)."""
        return sum(getattr(self, name) * value for name, value in features if name in PRIOR_NAMES)


PRIOR_NAMES = frozenset(f.name for f in fields(Priors))
# Features the hand-set priors give no weight; a trained option ranker
# (`mcts.agents.option_ranker`) may: where an entity sits among the SearchNodes hits
# (0 = first), whether its name is written in the question, how many words a span has, and
# how far a pattern's similarity is below the best one of the same anchor (0 for the best);
# for an entity span, where it starts in the question (0 = first word, 1 = last), whether
# it is written as a name (capitalised, not the first word) or in quotes (a title), or
# is an entity's name the question only writes as an alias ("Kingdom of France" for "France")
# or misspelt;
# an entity's popularity (log of 1 + its edges, where the KB can say; a question is
# usually about the better known of the things it names); and for a pattern, whether it
# points into the entity (`in`), whether it goes through a CVT node, and how well its
# sample value (name and description) reads as what the question asks for ("what
# language ..." against "English Language, West Germanic language"); and how similar the
# question is to a training question that took the same step, and to one that stopped
# where the current query ends or went on from there (`mcts.agents.case_memory`); and for
# the first entity to search, how well the best relation around the span's entities reads
# as the question's relation phrase (`relation_fit`: what the entity could answer, which
# needs no training question of the same family).
LEARNED_ONLY = (
    "hit_rank",
    "name_in_question",
    "span_words",
    "similarity_gap",
    "relation_fit",
    "span_position",
    "span_proper",
    "span_quoted",
    "span_alias",
    "popularity",
    "inverse",
    "cvt",
    "sample_fit",
    "case_entity",
    "case_relation",
    "case_relation_any",
    "case_stop",
    "case_further",
    "case_stop_any",
    "case_further_any",
)
Features = tuple[tuple[str, float], ...]


@dataclass(frozen=True)
class Option:
    """One enumerated candidate before scoring. `features` are what its prior is made of
    (name -> value; `prior == priors.weigh(features)`), kept so that a trained ranker can
    weigh them again."""

    kind: OptionKind
    thought: str
    action: Action
    prior: float = 0.0
    rank: float = 0.0  # cheap pre-rank used to cap the number of candidates (higher first)
    features: Features = ()


@dataclass(frozen=True)
class QuestionCues:
    asks_count: bool
    most: bool
    least: bool
    before: bool
    after: bool
    numbers: tuple[str, ...]
    wh: Wh = ""

    @classmethod
    def read(cls, question: str) -> QuestionCues:
        numbers = tuple(dict.fromkeys(n.replace(",", "") for n in _NUMBER.findall(question)))
        return cls(
            asks_count=_COUNT.search(question) is not None,
            most=_MOST.search(question) is not None,
            least=_LEAST.search(question) is not None,
            before=_BEFORE.search(question) is not None,
            after=_AFTER.search(question) is not None,
            numbers=numbers,
            wh=_question_word(question),
        )

    def fits(self, relation: str, sample: Value) -> int:
        """+1 / -1 / 0: does a relation leading to `sample` fit the question word?"""
        literal = sample.id is None
        if self.wh == "when":
            return 1 if literal and (sample.datatype or "") in _DATES else -1 if not literal else 0
        if self.wh == "where":
            return -1 if literal else 1 if _PLACE_WORDS.search(relation) else 0
        if self.wh == "who":
            return -1 if literal else 0
        return 0

    @property
    def superlative(self) -> bool:
        return self.most or self.least

    @property
    def comparative(self) -> bool:
        return bool(self.numbers) and not self.asks_count


def _question_word(question: str) -> Wh:
    if _WHEN.search(question):
        return "when"
    if _WHERE.search(question):
        return "where"
    if _WHO.search(question):
        return "who"
    return ""


def _names(values: Sequence[Value], limit: int = 3) -> str:
    shown = ", ".join(v.name for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")


def words(p: GraphPattern) -> str:
    """A relation as words for the thought: the last two parts of each id, `_` as space
    (`people.person.place_of_birth` -> `person place of birth`); the LM reads words
    better than ids, and the action keeps the exact ids."""
    if p.label:  # the KB's own words (Wikidata property labels: "position held: start time")
        return p.label
    parts = [" ".join(r.split(".")[-2:]).replace("_", " ") for r in p.predicates]
    return " -> ".join(parts)


def span_for(hit: EntityHit, question: str) -> str:
    """The question's own words for an entity found by `find_mentions` (else its name)."""
    m = re.search(re.escape(hit.name), question, re.IGNORECASE)
    return m.group(0) if m else hit.name


# Words that carry no relation meaning: the name index's stop words, except the question and
# comparison words, which do ("where born" -> place of birth, "when born" -> date of birth).
_FILLER = STOPWORDS - {
    "when",
    "where",
    "who",
    "why",
    "how",
    "many",
    "much",
    "most",
    "more",
    "before",
    "after",
    "than",
    "during",
}


def relation_phrase(question: str, names: Sequence[str]) -> str:
    """A short `semantic` for SearchGraphPatterns: the question without its entity names and filler.

    Passing the whole question would put it verbatim into every later cleaned history
    (the "keep structured arguments" rule keeps `semantic`), so PPL(H', Q) would be low for
    every sibling and the IG reward would barely separate them. A capable agent writes a
    relation phrase here ("place of birth"); this is the guided policy's stand-in.
    A name the question writes all in lower case ("capital", "political party": a class
    or common noun the name index also holds) is a relation word there, so it stays.
    """

    def drop_proper(match: re.Match[str]) -> str:
        return match.group(0) if match.group(0).islower() else " "

    text = question
    for name in sorted({n for n in names if n}, key=len, reverse=True):
        text = re.sub(re.escape(name), drop_proper, text, flags=re.IGNORECASE)
    kept = [w for w in re.findall(r"[\w'-]+", text) if w.casefold() not in _FILLER]
    return " ".join(kept)[:80] or question[:80]


_QUOTED = re.compile(r'"[^"]+"|“[^”]+”')


def span_cues(span: str, question: str) -> dict[str, float]:
    """Where and how the question writes an entity span (see `LEARNED_ONLY`). A place named by
    its adjective is written there ("Chile" in "Chilean"); a misspelt name is not."""
    m = re.search(re.escape(span), question, re.IGNORECASE)
    if m is None:  # found through an alias or a misspelling: the question does not write the name
        return {"span_alias": 1.0}
    before = len(question[: m.start()].split())
    words = max(len(question.split()) - 1, 1)
    quoted = any(q.start() <= m.start() and m.end() <= q.end() for q in _QUOTED.finditer(question))
    return {
        "span_position": min(before / words, 1.0),
        "span_proper": float(before > 0 and m.group(0)[:1].isupper()),
        "span_quoted": float(quoted),
    }


def pattern_shape(p: GraphPattern) -> dict[str, float]:
    return {"inverse": float(p.direction == "in"), "cvt": float(len(p.predicates) > 1)}


def unused_mentions(state: GuidedState, mentions: Sequence[EntityHit]) -> list[str]:
    known = {h.id for h in state.hits}
    spans = dict.fromkeys(span_for(h, state.question) for h in mentions if h.id not in known)
    return [s for s in spans if s.casefold() not in state.searched]


# Cheap pre-ranks per option family, used only to cap the candidate list before the LM scores
# it (higher survives the cap; ties keep the enumeration order). A few steps that bring in
# new information (an entity, the relations around one) rank above the many queries built
# from patterns, which compete among themselves by similarity (+ the pattern's score, < 1).
RANK_DONE = 100.0  # stopping: never hidden by the cap, whatever else is on offer
RANK_SEARCH = 50.0  # an entity the question names: without it no query can start
RANK_ENTITY_PATTERNS = 40.0  # the relations around a found entity: what a first query is built from
RANK_ANSWER_PATTERNS = 30.0  # the relations around the answers: what a refinement is built from
RANK_COUNT_ASKED = 25.0  # COUNT when the question asks "how many": above every pattern query
RANK_BUILD_ON = 20.0  # extend / constrain the current answers (+ score): the usual next query
RANK_ORDER = 15.0  # superlative / comparison (+ score): only for number and date patterns
RANK_HOP = 10.0  # a fresh one-hop query (+ score): once answers exist, it abandons them
RANK_COUNT = 5.0  # COUNT when the question does not ask for one: last, kept only if room is left


@dataclass(frozen=True)
class _Context:
    """What every option family reads: the state, the question's cues and the side evidence
    (see `enumerate_options`), with the few facts about the current answers several families
    share."""

    state: GuidedState
    mentions: Sequence[EntityHit]
    flavour: Flavour
    priors: Priors
    cues: QuestionCues
    semantic: str  # the relation phrase every SearchGraphPatterns carries
    per_anchor: int
    hit_similarity: Mapping[str, float]
    popularity: Mapping[str, float]
    sample_fit: Mapping[GraphPattern, float]
    cases: CaseFit
    relation_fit: Mapping[str, float]
    refined: bool  # the current query has an ORDER BY or a comparing FILTER
    unfit: bool  # the current answers do not fit the question word (`_answers_unfit`)
    counted: bool  # the current answers already say "how many" (see `_is_counted`)

    def option(
        self, kind: OptionKind, thought: str, action: Action, feats: dict[str, float], rank: float
    ) -> Option:
        kept = tuple((k, float(v)) for k, v in feats.items() if v)
        return Option(kind, thought, action, self.priors.weigh(kept), rank, kept)

    def query(
        self, kind: OptionKind, thought: str, query: Query, feats: dict[str, float], rank: float
    ) -> Option:
        return self.option(kind, thought, Action("ExecuteSPARQL", query.render()), feats, rank)

    def ref(self, ident: str) -> str:
        """How the query builder writes the entity (`ns:m.0abc`, `wd:Q76`)."""
        return self.flavour.short(self.flavour.entity_iri(ident))

    def fit(self, p: GraphPattern) -> float:
        return self.cues.fits(p.label or p.relation_text(), p.sample)

    def shape(self, p: GraphPattern) -> dict[str, float]:
        return {
            **pattern_shape(p),
            "sample_fit": self.sample_fit.get(p, 0.0),
            "case_relation_any": self.cases.relation_any.get(p, 0.0),
        }


def enumerate_options(
    state: GuidedState,
    mentions: Sequence[EntityHit],
    flavour: Flavour,
    priors: Priors,
    *,
    per_anchor: int = PER_ANCHOR,
    hit_similarity: Mapping[str, float] | None = None,
    popularity: Mapping[str, float] | None = None,
    sample_fit: Mapping[GraphPattern, float] | None = None,
    cases: CaseFit | None = None,
    relation_fit: Mapping[str, float] | None = None,
) -> list[Option]:
    """Every sensible next step at `state` (not yet capped; actions already taken dropped).

    `hit_similarity`: entity id -> question-description similarity of homonyms;
    `popularity`: entity id -> log(1 + edges), where the KB can say; `sample_fit`: pattern
    -> similarity of its sample to what the question asks for; `cases`: the case memory's
    evidence for each entity and relation; `relation_fit`: span -> how well its entities'
    relations read as the question's relation phrase (the first search only)."""
    cues = QuestionCues.read(state.question)
    current = state.current
    ctx = _Context(
        state=state,
        mentions=mentions,
        flavour=flavour,
        priors=priors,
        cues=cues,
        semantic=relation_phrase(state.question, [h.name for h in (*mentions, *state.hits)]),
        per_anchor=per_anchor,
        hit_similarity=hit_similarity or {},
        popularity=popularity or {},
        sample_fit=sample_fit or {},
        cases=cases or CaseFit(),
        relation_fit=relation_fit or {},
        refined=current is not None
        and (current.order is not None or any(f.op != "!=" for f in current.filters)),
        unfit=current is not None and not current.count and _answers_unfit(cues, current, state),
        counted=current is not None and _is_counted(current, state),
    )
    unused = unused_mentions(state, mentions)
    options = itertools.chain(
        _search_options(ctx, unused),
        _entity_pattern_options(ctx),
        _done_option(ctx, unused),
        _answer_pattern_option(ctx),
        _count_option(ctx),
        _entity_query_options(ctx),
        _answer_query_options(ctx),
    )
    return [o for o in options if _is_new(o.action, state)]


def _is_new(action: Action, state: GuidedState) -> bool:
    """Neither this action nor (for a query) the same query differently spaced was taken."""
    if action.tool == "ExecuteSPARQL" and squash(action.argument) in state.executed:
        return False
    return action.render() not in state.taken


def _is_counted(query: Query, state: GuidedState) -> bool:
    """A "how many" is answered by a COUNT, or by a number the KB stores (episodes: 62)."""
    return query.count or all(v.id is None and (v.datatype or "") in _NUMBERS for v in state.current_values)


def _search_options(ctx: _Context, unused: Sequence[str]) -> Iterator[Option]:
    """SearchNodes for entities the question names and no search has found: up to
    `FIRST_SEARCHES` spans before anything is found, 2 once a query has results (a second
    entity for a conjunction), none in between (the found entities come first)."""
    state, q = ctx.state, ctx.state.question
    if state.hits and state.current is None:
        return
    second = 1.0 if state.current is not None else 0.0
    for span in unused[: FIRST_SEARCHES if not state.hits else 2]:
        feats = {"second_entity": second, "span_words": len(span.split()), **span_cues(span, q)}
        found = [h.id for h in ctx.mentions if span_for(h, q) == span]
        feats["popularity"] = max((ctx.popularity.get(i, 0.0) for i in found), default=0.0)
        feats["case_entity"] = max((ctx.cases.entity.get(i, 0.0) for i in found), default=0.0)
        if not state.hits:
            feats["relation_fit"] = ctx.relation_fit.get(span, 0.0)
        thought = f'Find the entity "{span}" in the knowledge base.'
        yield ctx.option("search_nodes", thought, Action("SearchNodes", span), feats, RANK_SEARCH)


def _entity_pattern_options(ctx: _Context) -> Iterator[Option]:
    """SearchGraphPatterns around the top 3 hits of each search not explored yet (entities
    the current query already uses excluded)."""
    state, q, current = ctx.state, ctx.state.question, ctx.state.current
    used = current.entities() if current is not None else set()
    explored_names = {state.name_of(i).casefold() for i in state.entity_patterns}
    for g, group in enumerate(state.hit_groups):
        latest = g == len(state.hit_groups) - 1
        for position, hit in enumerate(group[:3]):
            query = state.hit_queries.get(hit.id) or ctx.flavour.entity_query(hit)
            if squash(query) in state.explored or hit.id in used:
                continue
            about = f" ({hit.description[:60]})" if hit.description else ""
            feats = {
                "homonym": ctx.hit_similarity.get(hit.id, 0.0),
                "hit_rank": position,
                "name_in_question": float(hit.name.casefold() in q.casefold()),
                "popularity": ctx.popularity.get(hit.id, 0.0),
                "case_entity": ctx.cases.entity.get(hit.id, 0.0),
            }
            if current is not None:
                feats["second_entity" if latest and g > 0 else "switch_penalty"] = 1.0
            elif hit.name.casefold() in explored_names or any(h.id in state.entity_patterns for h in group):
                feats["switch_penalty"] = 1.0  # a homonym or a sibling hit of an entity already explored
            thought = f"Look at the relations of {hit.name}{about} that fit the question."
            action = Action("SearchGraphPatterns", query, semantic=ctx.semantic)
            yield ctx.option("entity_patterns", thought, action, feats, RANK_ENTITY_PATTERNS)


def _done_option(ctx: _Context, unused: Sequence[str]) -> Iterator[Option]:
    """Done once a query has run; its bonus only when nothing the question asks for is
    obviously still missing (see `Priors.done_bonus`)."""
    state, cues, current = ctx.state, ctx.cues, ctx.state.current
    if current is None:
        return
    pending = bool(unused) or ctx.unfit or (cues.asks_count and not ctx.counted)
    pending = pending or ((cues.superlative or cues.comparative) and not ctx.refined and not current.count)
    ready = state.last_nonempty and state.depth >= 3 and not pending
    feats = {"done_bonus": float(ready), "case_stop": ctx.cases.stop, "case_stop_any": ctx.cases.stop_any}
    thought = f"The answer is {_names(state.current_values, 5)}."
    yield ctx.option("done", thought, Action("Done"), feats, RANK_DONE)


def _answer_pattern_option(ctx: _Context) -> Iterator[Option]:
    """SearchGraphPatterns around the current answers, to go one step further (a plain
    query with answers and fewer than 6 triples only)."""
    state, cues, current = ctx.state, ctx.cues, ctx.state.current
    if current is None or not current.is_plain or not state.current_values:
        return
    query = answer_pattern_query(current)
    if squash(query) in state.explored or len(current.triples) >= 6:
        return
    refine = ((cues.superlative or cues.comparative) and not ctx.refined) or ctx.unfit
    feats = {
        "refine": float(refine),
        "case_further": ctx.cases.further,
        "case_further_any": ctx.cases.further_any,
    }
    thought = f"Look at the relations of {_names(state.current_values)} to go one step further."
    action = Action("SearchGraphPatterns", query, semantic=ctx.semantic)
    yield ctx.option("answer_patterns", thought, action, feats, RANK_ANSWER_PATTERNS)


def _count_option(ctx: _Context) -> Iterator[Option]:
    """COUNT the current answers (a plain query with answers only)."""
    state, cues, current = ctx.state, ctx.cues, ctx.state.current
    if current is None or not current.is_plain or not state.current_values:
        return
    wanted = 1.0 if cues.asks_count and not ctx.counted else -1.0
    rank = RANK_COUNT_ASKED if cues.asks_count else RANK_COUNT
    thought = f"Count the answers {_names(state.current_values)}."
    yield ctx.query("count", thought, counted(current), {"count": wanted}, rank)


def _entity_query_options(ctx: _Context) -> Iterator[Option]:
    """Queries from the explored entities' patterns, entity by entity: one-hop queries from
    an entity (before any query, or one the current query uses), else the current answers
    constrained by it."""
    state, current = ctx.state, ctx.state.current
    used = current.entities() if current is not None else set()
    used_names = {state.name_of(i).casefold() for i in used}
    for ident, patterns in state.entity_patterns.items():
        shown = patterns[: ctx.per_anchor]
        if current is None or ident in used:
            yield from _hop_options(ctx, ident, shown)
        elif current.is_plain and state.name_of(ident).casefold() not in used_names:
            yield from _constrain_options(ctx, current, ident, shown)  # not a homonym of the anchor


def _hop_options(ctx: _Context, ident: str, patterns: Sequence[GraphPattern]) -> Iterator[Option]:
    name = ctx.state.name_of(ident)
    best = max((p.score for p in patterns), default=0.0)
    switch = 1.0 if ctx.state.current is not None else 0.0
    for p in patterns:
        feats = {
            "similarity": p.score,
            "similarity_gap": p.score - best,
            "switch_penalty": switch,
            "answer_type": ctx.fit(p),
            "case_relation": ctx.cases.relation.get((ident, p), 0.0),
            **ctx.shape(p),
        }
        query = one_hop(ctx.ref(ident), p)
        yield ctx.query("hop", f"Follow {words(p)} from {name}.", query, feats, RANK_HOP + p.score)


def _constrain_options(
    ctx: _Context, current: Query, ident: str, patterns: Sequence[GraphPattern]
) -> Iterator[Option]:
    name = ctx.state.name_of(ident)
    best = max((p.score for p in patterns), default=0.0)
    for p in patterns:
        feats = {"similarity": p.score, "similarity_gap": p.score - best, **ctx.shape(p)}
        thought = f"Keep the answers linked to {name} by {words(p)}."
        query = constrain(current, ctx.ref(ident), p)
        yield ctx.query("constrain", thought, query, feats, RANK_BUILD_ON + p.score)


def _answer_query_options(ctx: _Context) -> Iterator[Option]:
    """Queries from the current answers' patterns, pattern by pattern: the answers extended
    along it and, for a number or date, the answers ordered or compared by it."""
    current = ctx.state.current
    if current is None or not current.is_plain:
        return
    shown = ctx.state.current_patterns()[: ctx.per_anchor]
    best = max((p.score for p in shown), default=0.0)
    for p in shown:
        yield from _extend_option(ctx, current, p, best)
        kind = p.sample.datatype or ""
        if p.sample.id is None and (kind in _DATES or kind in _NUMBERS):
            yield from _order_options(ctx, current, p, is_date=kind in _DATES)


def _extend_option(ctx: _Context, current: Query, p: GraphPattern, best: float) -> Iterator[Option]:
    feats = {
        "similarity": p.score,
        "similarity_gap": p.score - best,
        "answer_type": ctx.fit(p),
        "case_relation": ctx.cases.extension.get(p, 0.0),
        **ctx.shape(p),
    }
    feats["repeat_relation"] = float(bool(set(p.predicates) & set(current.relations())))
    kind = p.sample.datatype or ""
    literal_value = p.sample.id is None and (kind in _DATES or kind in _NUMBERS)
    if literal_value and ctx.cues.superlative and not ctx.cues.wh:
        feats["direction"] = -1.0  # "which ... most/first" asks for the entity, not its value
    thought = f"Follow {words(p)} from {_names(ctx.state.current_values)}."
    yield ctx.query("extend", thought, extend(current, p), feats, RANK_BUILD_ON + p.score)


def _order_options(ctx: _Context, current: Query, p: GraphPattern, *, is_date: bool) -> Iterator[Option]:
    """The answer with the largest and the smallest value along a number/date pattern, then
    the answers compared with each number the question writes (first two)."""
    cues, rank = ctx.cues, RANK_ORDER + p.score
    big, small = ("latest", "earliest") if is_date else ("largest", "smallest")
    orders: tuple[tuple[Order, str, bool], ...] = (("DESC", big, cues.most), ("ASC", small, cues.least))
    for order, word, hint in orders:
        thought = f"Take the answer with the {word} {words(p)}."
        feats = {"similarity": p.score, "direction": float(hint)}
        yield ctx.query("superlative", thought, superlative(current, p, order), feats, rank)
    for number in cues.numbers[:2]:
        for op, word, hint in _comparisons(is_date, cues):
            thought = f"Keep the answers whose {words(p)} is {word} {number}."
            query = compared(current, p, op, number, year=is_date and len(number) == 4)
            yield ctx.query(
                "compare", thought, query, {"similarity": p.score, "direction": float(hint)}, rank
            )


def _answers_unfit(cues: QuestionCues, query: Query, state: GuidedState) -> bool:
    """The current answers clearly do not fit the question word (see Priors.answer_type)."""
    values = state.current_values
    if not values or not cues.wh:
        return False
    relations = query.relations()
    last = state.relation_words(relations[-1:])
    return all(cues.fits(last, v) < 0 for v in values[:5]) or (
        cues.wh == "where" and not _PLACE_WORDS.search(state.relation_words(relations))
    )


def _comparisons(is_date: bool, cues: QuestionCues) -> list[tuple[Op, str, bool]]:
    neither = not cues.before and not cues.after
    if is_date:
        return [("<", "before", cues.before), (">", "after", cues.after), ("=", "in", neither)]
    return [("<", "less than", cues.before), (">", "more than", cues.after), ("=", "equal to", neither)]
