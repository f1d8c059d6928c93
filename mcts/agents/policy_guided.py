"""The guided policy: real candidate tool calls, chosen by a language model's likelihood.

A 135M-parameter model cannot write correct SPARQL, but it can tell which of a few
sensible next steps reads most naturally after the question and the history. So at a
state the candidates are ENUMERATED from the state and the tools' structured
observations (see `enumerate_options`):

- SearchNodes on question spans that name an entity (the `MentionFinder` port),
  while no entity has been found yet, and for a second entity once a query exists
  (conjunctions);
- SearchGraphPatterns(entity query, semantic=<relation phrase of the question>) for entities found so far, and
  for the answers of the current query (to extend a path);
- ExecuteSPARQL: one hop from an entity along a returned pattern (either direction,
  CVT pairs as `?e p1 ?c . ?c p2 ?x`); the current query extended by one pattern; the
  current query constrained by a pattern of a second entity (conjunction); ORDER BY
  DESC/ASC(?v) LIMIT 1 on a pattern whose sample is a number or date; a FILTER
  comparing such a value with a number of the question; COUNT;
- Done once an ExecuteSPARQL has given results.

Each candidate gets a short templated thought (relations written as words). The
language model scores every candidate: the mean log-likelihood per token of its text
after the prompt of `mcts.agents.prompts` (one prompt pass, candidates batched on its key/value
cache, see `mcts.agents.lm_scoring`). By default the scored text is `Thought: <thought>\nAction:
<Tool>(`: the arguments are a deterministic rendering of what the thought says, and
scoring their ids and SPARQL only rewards text the model can copy from the history
(`score_on="step"` scores the whole action). Prior terms are added, each documented at
`mcts.agents.guided_options.Priors`; then k distinct candidates are sampled without
replacement from softmax(score / temperature), or the top k taken when greedy.
`Candidate.policy_score` is the score used.

The entities named in the question come from a `MentionFinder` port: the KB's own name
index where it has one (the embedded store), else `SearchMentions`, which runs SearchNodes
through the agent's tools on the question's word spans (a SPARQL endpoint has no name
index). Otherwise this module knows the KB only through the tools' observation payloads.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from kb.actions import Action
from kb.base import KBError
from kb.flavour import FREEBASE, Flavour
from kb.name_index import STOPWORDS, normalise
from kb.observation import EntityHit, GraphPattern
from mcts.agents.case_memory import CaseFit, CaseMemory
from mcts.agents.guided_options import (
    FIRST_SEARCHES,
    PER_ANCHOR,
    Option,
    Priors,
    enumerate_options,
    relation_phrase,
    span_for,
    unused_mentions,
)
from mcts.agents.guided_state import read_state
from mcts.agents.lm_scoring import ContinuationScorer, LMContinuationScorer
from mcts.agents.option_ranker import OptionRanker
from mcts.agents.prompts import PromptConfig, candidate_text, prompt_segments
from mcts.agents.query_builder import edge_path
from mcts.search.protocols import Usage
from mcts.search.steps import Candidate, Step

ScoreOn = Literal["thought", "step"]
MENTION_SPAN_WORDS = 6  # longest question span SearchMentions searches for


@runtime_checkable
class MentionFinder(Protocol):
    """Entities named in a question (the guided policy's first SearchNodes come from these)."""

    def find_mentions(self, question: str, limit: int = 10) -> list[EntityHit]: ...


class SearchMentions:
    """A `MentionFinder` for a KB without a name index (a SPARQL endpoint): SearchNodes on
    the question's word spans, longest first, keeping hits whose name is the span.

    Like the name index's `find_mentions`: a span inside an already matched span is
    skipped, spans of stop words only (or a single short word) are not searched, and a
    span may not end in a stop word. Matching is on the name only (an alias match of
    the endpoint reads like a substring match in a SearchNodes hit); "the" in front of
    either side is ignored ("Beatles" finds "The Beatles"). `search` is one SearchNodes;
    a tool error is an empty result, so a KB that is down yields no mention.
    """

    def __init__(self, search: Callable[[str], Sequence[EntityHit]]) -> None:
        self.search = search

    @classmethod
    def through_tools(cls, tools: Any) -> SearchMentions:
        return cls(lambda span: tools.run(Action("SearchNodes", span)).entities)

    @classmethod
    def through_kb(cls, kb: Any) -> SearchMentions:
        def search(span: str) -> Sequence[EntityHit]:
            try:
                return kb.search_names(span, 10)
            except KBError:  # a remote KB that is down: no mention; the agent sees the error later
                return []

        return cls(search)

    def find_mentions(self, question: str, limit: int = 10) -> list[EntityHit]:
        # Words as written, without the possessive ("McCartney's" -> "McCartney").
        # Initials keep their dots ("J. K. Rowling"); the sentence's last one goes.
        words = [re.sub(r"['’]s$", "", w.strip('?!,;:"()')) for w in question.rstrip(" ?!.").split()]
        tokens = [normalise(w) for w in words]
        taken = [False] * len(words)
        hits: list[EntityHit] = []
        for n in range(min(MENTION_SPAN_WORDS, len(words)), 0, -1):
            for start in range(len(words) - n + 1):
                span = tokens[start : start + n]
                if any(taken[start : start + n]) or not _searchable(span):
                    continue
                text = " ".join(words[start : start + n])
                # A capitalised span names something: "Beatles" may be "The Beatles".
                proper = text[:1].isupper()
                wanted = _bare(" ".join(span), proper)
                found = [h for h in self.search(text) if _bare(normalise(h.name), proper) == wanted]
                if found:
                    taken[start : start + n] = [True] * n
                    known = {h.id for h in hits}
                    hits += [h for h in found if h.id not in known]
        return hits[:limit]


def _searchable(span: Sequence[str]) -> bool:
    if not all(span) or span[-1] in STOPWORDS:
        return False
    return not all(t in STOPWORDS or t.isdigit() for t in span) and not (len(span) == 1 and len(span[0]) < 3)


def _bare(name: str, proper: bool) -> str:
    return name.removeprefix("the ") if proper else name


def mention_finder(kb: Any) -> MentionFinder:
    """The KB's name index if it has one (looked for behind a Toolbox too), else
    SearchNodes through the tools (a Toolbox) or the KB's `search_names`."""
    store = getattr(kb, "kb", kb)  # a Toolbox holds its KB as `.kb`
    # A remote KB finds mentions itself only when it holds a name index (a small endpoint).
    if isinstance(store, MentionFinder) and getattr(store, "names", True) is not None:
        return store
    return SearchMentions.through_tools(kb) if hasattr(kb, "run") else SearchMentions.through_kb(kb)


def softmax_sample(scores: Sequence[float], k: int, temperature: float, rng: random.Random) -> list[int]:
    """k distinct indices drawn without replacement from softmax(score / temperature).

    Gumbel-top-k: adding independent Gumbel noise to score/T and taking the top k is
    exactly sequential sampling without replacement; one uniform draw per candidate
    from `rng` keeps it reproducible.
    """
    t = max(temperature, 1e-6)
    keyed = []
    for i, s in enumerate(scores):
        u = min(max(rng.random(), 1e-12), 1 - 1e-12)
        keyed.append((s / t - math.log(-math.log(u)), i))
    keyed.sort(reverse=True)
    return [i for _, i in keyed[:k]]


RELATION_FIT = "relation_fit"
HITS_PER_SPAN = 3  # the entities of one span whose relations are read (the hits an option shows)


def span_relation_fit(
    question: str,
    spans: Sequence[str],
    mentions: Sequence[EntityHit],
    relations_around: Callable[[str], Sequence[GraphPattern]],
    similarities: Callable[[str, Sequence[str]], list[float]],
) -> dict[str, float]:
    """Per span: the best similarity between the question's relation phrase (the `semantic`
    of the first SearchGraphPatterns) and a relation around one of the span's first
    `HITS_PER_SPAN` entities; 0 where none has relations. The topic entity of "what religion
    is practiced in Afghanistan" has a relation that reads as "religion practiced"; the class
    "religion" and a constraining second entity mostly do not. A lookup the KB fails (an
    endpoint down or too slow) counts as no relations: the feature is a hint, not a step."""
    from kb.relation_ranker import readable

    phrase = relation_phrase(question, [h.name for h in mentions])
    out: dict[str, float] = {}
    for span in spans:
        best = 0.0
        for hit in [h for h in mentions if span_for(h, question) == span][:HITS_PER_SPAN]:
            try:
                around = relations_around(hit.id)
            except KBError:
                continue
            texts = [readable(p.relation_text()) for p in around]
            if texts:
                best = max(best, *similarities(phrase, texts))
        out[span] = round(best, 5)
    return out


def relation_similarities(embedder: Any) -> Callable[[str, Sequence[str]], list[float]]:
    """`span_relation_fit`'s similarity through a sentence embedder: relation texts from its
    disk cache (the ones the retriever ranks), the question's phrase from its small one."""

    def similarities(phrase: str, relation_texts: Sequence[str]) -> list[float]:
        query = embedder.encode([phrase], persist=False)[0]
        return [float(x) for x in embedder.encode(list(relation_texts)) @ query]

    return similarities


class GuidedPolicy:
    """Policy for small models: enumerate real tool calls, let the LM choose among them."""

    name = "guided"

    def __init__(
        self,
        model: Any,
        kb: Any,
        *,
        flavour: Flavour | None = None,
        temperature: float = 0.7,
        batch_size: int = 16,
        max_candidates: int = 40,
        priors: Priors | None = None,
        prompt: PromptConfig | None = None,
        scorer: ContinuationScorer | None = None,
        score_on: ScoreOn = "thought",
        ranker: Any = None,
        mentions: MentionFinder | None = None,
        option_ranker: OptionRanker | None = None,
        learned_features: bool | None = None,
        cases: CaseMemory | None = None,
        relation_fit: bool | None = None,
    ) -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if max_candidates < 1:
            raise ValueError(f"max_candidates must be >= 1, got {max_candidates}")
        if model is None and scorer is None:
            raise ValueError("GuidedPolicy needs a loaded model (or a scorer)")
        self.model = model
        self.kb = kb
        # The KB's own vocabulary unless told (a Toolbox or a KB carries its flavour).
        self.flavour = flavour or getattr(kb, "flavour", FREEBASE)
        self.temperature = temperature
        self.max_candidates = max_candidates
        self.score_on = score_on
        # Sentence-embedding ranker (kb.relation_ranker) for homonym descriptions; the
        # process-wide default is loaded on first need.
        self.ranker = ranker
        self.priors = priors or Priors()
        # A trained re-weighing of the LM score and the priors' features (None: lm + prior).
        self.option_ranker = option_ranker
        # The features only a trained ranker weighs that cost a lookup or an embedding
        # (popularity, sample fit): computed for a ranker, and for collecting its training
        # states (`learned_features=True`); the hand-set policy gives them no weight.
        self.learned_features = option_ranker is not None if learned_features is None else learned_features
        # Training questions that took the same steps (`mcts.agents.case_memory`); read only
        # with learned features, like popularity.
        self.cases = cases
        # `relation_fit` at the first step costs a few aggregate queries per entity: read for
        # a ranker that weighs it (None), or when told (collecting the states it is fitted on).
        weighed = option_ranker is not None and option_ranker.weights.get(RELATION_FIT, 0.0) != 0.0
        self.reads_relation_fit = weighed if relation_fit is None else relation_fit
        # One short demonstration in the KB's vocabulary: the prompt is re-read at every step on a CPU.
        self.prompt = prompt or PromptConfig.for_flavour(self.flavour.name, max_demos=1)
        self.scorer: ContinuationScorer = scorer or LMContinuationScorer(model, batch_size=batch_size)
        self.usage = self.scorer.usage if isinstance(self.scorer.usage, Usage) else Usage()
        self.mention_finder = mentions or mention_finder(kb)
        self._mentions: dict[str, list[EntityHit]] = {}
        # An entity's edge count where the KB can say at no cost (the embedded store's
        # name index); an endpoint has no such count, and the feature stays 0 there.
        store = getattr(kb, "kb", kb)
        self._degree_of: Callable[[str], int] | None = getattr(store, "degree_of", None)
        self._description_of: Callable[[str], str] | None = getattr(store, "description_of", None)
        # The last node's options and scores: a search that asks twice at one node (its
        # sampled k, then the greedy top: `greedy_descent`, `greedy_first`) scores it once.
        self._last_scored: tuple[tuple[Any, ...], list[Option], list[float]] | None = None

    # ----- entities named in the question ---------------------------------------------
    def mentions(self, question: str) -> list[EntityHit]:
        if question not in self._mentions:
            self._mentions[question] = list(self.mention_finder.find_mentions(question, 10))
        return self._mentions[question]

    def _homonym_similarity(self, state: Any) -> dict[str, float]:
        """Question-description similarity of hits that share a name with another hit."""
        by_name: dict[str, list[EntityHit]] = {}
        for group in state.hit_groups:
            for hit in group[:3]:
                by_name.setdefault(hit.name.casefold(), []).append(hit)
        homonyms = [h for hits in by_name.values() if len(hits) > 1 for h in hits if h.description]
        if not homonyms or self.priors.homonym == 0:
            return {}
        ranker = self._embedder()
        # The shared name says nothing about which one is meant (and an album named after
        # its artist would match on it): compare question and description without it.
        out: dict[str, float] = {}
        for hit in homonyms:
            name = re.compile(re.escape(hit.name), re.IGNORECASE)
            question = " ".join(name.sub(" ", state.question).split())
            out[hit.id] = float(ranker.rank(question, [name.sub(" ", hit.description)])[0])
        return out

    def _popularity(self, question: str, state: Any) -> dict[str, float]:
        """log(1 + edges) of the entities named in the question and found so far."""
        if self._degree_of is None or not self.learned_features:
            return {}
        ids = {h.id for h in self.mentions(question)} | {h.id for h in state.hits}
        return {i: math.log1p(self._degree_of(i)) for i in ids}

    def _sample_fit(self, state: Any) -> dict[GraphPattern, float]:
        """How well each offered pattern's sample (its name and, where the KB has one, its
        description) reads as what the question asks for: the embedder's similarity to the
        question's relation phrase ("language spoken" against "English Language, West
        Germanic language" rather than "Canada, country in North America")."""
        patterns = [p for ps in state.entity_patterns.values() for p in ps[:PER_ANCHOR]]
        patterns += state.current_patterns()[:PER_ANCHOR]
        if not patterns or self._description_of is None or not self.learned_features:
            return {}
        texts = []
        for p in patterns:
            about = self._description_of(p.sample.id) if p.sample.id else ""
            texts.append(f"{p.sample.name}, {about}" if about else p.sample.name)
        names = [h.name for h in (*self.mentions(state.question), *state.hits)]
        wanted = relation_phrase(state.question, names)
        return dict(zip(patterns, self._similarities(wanted, texts), strict=True))

    def _relation_fit(self, state: Any) -> dict[str, float]:
        """At the first step, per span the question names: how well the best relation around
        its entities reads as the question's relation phrase (`span_relation_fit`)."""
        around = getattr(self.kb, "relations_around", None)
        if state.hits or around is None or not self.reads_relation_fit:
            return {}
        mentions = self.mentions(state.question)
        spans = unused_mentions(state, mentions)[:FIRST_SEARCHES]  # the spans offered, no more
        embedder = self._embedder()
        similar = relation_similarities(embedder) if hasattr(embedder, "encode") else self._similarities
        return span_relation_fit(state.question, spans, mentions, around, similar)

    def _case_fit(self, state: Any) -> CaseFit | None:
        """The case memory's evidence for the entities and patterns on offer at `state`."""
        if self.cases is None or not self.learned_features:
            return None
        entities = {h.id for h in self.mentions(state.question)} | {h.id for h in state.hits}
        anchored = [(i, p) for i, ps in state.entity_patterns.items() for p in ps[:PER_ANCHOR]]
        extensions = list(state.current_patterns()[:PER_ANCHOR])
        current = edge_path(state.current) if state.current is not None else None
        return self.cases.fit(
            state.question, entities, anchored, [p for _, p in anchored] + extensions, current, extensions
        )

    def _embedder(self) -> Any:
        """The sentence-embedding ranker, the process-wide default loaded on first need."""
        if self.ranker is None:
            from kb.relation_ranker import default_ranker

            self.ranker = default_ranker()
        return self.ranker

    def _similarities(self, text: str, others: Sequence[str]) -> list[float]:
        ranker = self._embedder()
        encode = getattr(ranker, "encode", None)
        if encode is None:  # a ranker without embeddings (the lexical one of the tests)
            return [float(x) for x in ranker.rank(text, list(others))]
        # Not persisted: sample descriptions would swell the relation-text disk cache.
        vectors = encode([text, *others], persist=False)
        return [float(x) for x in vectors[1:] @ vectors[0]]

    # ----- the Policy protocol --------------------------------------------------------
    def options(self, question: str, history: Sequence[Step]) -> list[Option]:
        """The capped candidate list at a state (before scoring)."""
        state = read_state(question, history, self.flavour)
        opts = enumerate_options(
            state,
            self.mentions(question),
            self.flavour,
            self.priors,
            hit_similarity=self._homonym_similarity(state),
            popularity=self._popularity(question, state),
            sample_fit=self._sample_fit(state),
            cases=self._case_fit(state),
            relation_fit=self._relation_fit(state),
        )
        opts.sort(key=lambda o: -o.rank)  # stable: enumeration order breaks ties
        return opts[: self.max_candidates]

    def scored_text(self, opt: Option) -> str:
        """What the LM scores: the whole step, or the thought and the tool's name only."""
        if self.score_on == "thought":
            return candidate_text(opt.thought, opt.action.tool + "(")
        return candidate_text(opt.thought, opt.action.render())

    def lm_scores(self, question: str, history: Sequence[Step], opts: Sequence[Option]) -> list[float]:
        """Mean log-likelihood per token of each option's text after the prompt (nats)."""
        tokenizer = self.model.tokenizer if self.model is not None else None
        segments = prompt_segments(tokenizer, question, history, self.prompt)
        texts = [self.scored_text(o) for o in opts]
        return [s.mean_logprob for s in self.scorer.score(segments, texts)]

    def score_options(self, question: str, history: Sequence[Step], opts: Sequence[Option]) -> list[float]:
        lm = self.lm_scores(question, history, opts)
        if self.option_ranker is not None:
            return [self.option_ranker.score(s, o) for s, o in zip(lm, opts, strict=True)]
        return [s + o.prior for s, o in zip(lm, opts, strict=True)]

    def _scored_options(self, question: str, history: Sequence[Step]) -> tuple[list[Option], list[float]]:
        """The node's options and their scores, reused when the same node is asked again
        with the same ranker, priors and prompt (the scores are deterministic)."""
        key = (
            question,
            tuple(history),
            id(self.option_ranker),
            id(self.priors),
            id(self.prompt),
            self.score_on,
        )
        if self._last_scored is not None and self._last_scored[0] == key:
            return self._last_scored[1], self._last_scored[2]
        opts = self.options(question, history)
        scores: list[float] = []
        if opts:
            self.usage.calls += 1
            scores = self.score_options(question, history, opts)
        self._last_scored = (key, opts, scores)
        return opts, scores

    def propose(
        self, question: str, history: Sequence[Step], k: int, *, rng: random.Random, greedy: bool = False
    ) -> list[Candidate]:
        if k < 1:
            return []
        opts, scores = self._scored_options(question, history)
        if not opts:
            return []
        if greedy or self.temperature == 0:
            chosen = sorted(range(len(opts)), key=lambda i: -scores[i])[:k]
        else:
            chosen = softmax_sample(scores, k, self.temperature, rng)
        return [
            Candidate(
                thought=opts[i].thought,
                action=opts[i].action,
                raw_text=candidate_text(opts[i].thought, opts[i].action.render()),
                policy_score=scores[i],
            )
            for i in chosen
        ]
