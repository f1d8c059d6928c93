"""The guided policy: real candidate tool calls, chosen by a language model's likelihood.

A 135M-parameter model cannot write correct SPARQL, but it can tell which of a few
sensible next steps reads most naturally after the question and the history. So at a
state the candidates are ENUMERATED from the state and the tools' structured
observations (see `enumerate_options`):

- SearchNodes on question spans that the KB's name index knows (`find_mentions`),
  while no entity has been found yet, and for a second entity once a query exists
  (conjunctions);
- SearchGraphPatterns(entity query, semantic=question) for entities found so far, and
  for the answers of the current query (to extend a path);
- ExecuteSPARQL: one hop from an entity along a returned pattern (either direction,
  CVT pairs as `?e p1 ?c . ?c p2 ?x`); the current query extended by one pattern; the
  current query constrained by a pattern of a second entity (conjunction); ORDER BY
  DESC/ASC(?v) LIMIT 1 on a pattern whose sample is a number or date; COUNT;
- Done after an ExecuteSPARQL with results.

Each candidate gets a short templated thought. The language model scores every
candidate: the mean log-likelihood per token of `Thought: ...\\nAction: ...` after the
prompt of `mcts.prompts` (one prompt pass, candidates batched on its cache, see
`mcts.lm_scoring`). Prior terms are added (each documented at `Priors`); then k distinct
candidates are sampled without replacement from softmax(score / temperature), or the
top k taken when greedy. `Candidate.policy_score` is the score used.

This module knows the KB only through `find_mentions` / `search_names` (to find spans)
and the tools' observation payloads; it runs no tool itself.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from kb.actions import Action
from kb.flavour import FREEBASE, Flavour
from kb.observation import EntityHit, GraphPattern, Value
from mcts.guided_state import GuidedState, read_state, squash
from mcts.lm_scoring import ContinuationScorer, LMContinuationScorer
from mcts.prompts import PromptConfig, candidate_text, prompt_segments
from mcts.protocols import Usage
from mcts.query_builder import (
    Query,
    answer_pattern_query,
    constrain,
    counted,
    extend,
    one_hop,
    superlative,
)
from mcts.steps import Candidate, Step

OptionKind = Literal[
    "search_nodes",
    "entity_patterns",
    "answer_patterns",
    "hop",
    "extend",
    "constrain",
    "superlative",
    "count",
    "done",
]
ScoreOn = Literal["thought", "step"]
_NUMERIC = frozenset(
    {"integer", "int", "decimal", "float", "double", "long", "short", "date", "dateTime", "gYear", "gYearMonth",
     "nonNegativeInteger", "positiveInteger"}
)  # fmt: skip
_COUNT_WORDS = re.compile(r"\bhow many\b|\bnumber of\b|\bcount\b", re.IGNORECASE)


@dataclass(frozen=True)
class Priors:
    """Terms added to the LM score (mean log-prob per token, nats). All default on.

    similarity: x the tool's semantic similarity of the pattern (cosine, ~0..1) to the
        question, for candidates built from a pattern: the 135M model reads relation ids
        poorly, the sentence embedder reads them well.
    done_bonus: Done right after a non-empty result, from depth 3 on (the shortest useful
        path is SearchNodes, SearchGraphPatterns, ExecuteSPARQL).
    count_bonus / count_penalty: COUNT when the question asks "how many" / otherwise.
    """

    similarity: float = 2.0
    done_bonus: float = 0.5
    count_bonus: float = 1.0
    count_penalty: float = -1.0


@dataclass(frozen=True)
class Option:
    """One enumerated candidate before scoring."""

    kind: OptionKind
    thought: str
    action: Action
    prior: float = 0.0
    rank: float = 0.0  # cheap pre-rank used to cap the number of candidates (higher first)


def _names(values: Sequence[Value], limit: int = 3) -> str:
    shown = ", ".join(v.name for v in values[:limit])
    return shown + (", ..." if len(values) > limit else "")


def _sample(p: GraphPattern) -> str:
    return p.sample.name if len(p.sample.name) <= 40 else p.sample.name[:37] + "..."


def _span_for(hit: EntityHit, question: str) -> str:
    """The question's own words for an entity found by `find_mentions` (else its name)."""
    for label in (hit.name,):
        m = re.search(re.escape(label), question, re.IGNORECASE)
        if m:
            return m.group(0)
    return hit.name


def enumerate_options(
    state: GuidedState,
    mentions: Sequence[EntityHit],
    flavour: Flavour,
    priors: Priors,
    *,
    per_anchor: int = 8,
) -> list[Option]:
    """Every sensible next step at `state` (not yet capped; actions already taken dropped)."""
    q = state.question
    out: list[Option] = []

    def add(kind: OptionKind, thought: str, action: Action, prior: float = 0.0, rank: float = 0.0) -> None:
        if action.render() not in state.taken:
            out.append(Option(kind, thought, action, prior, rank))

    def pattern_prior(p: GraphPattern) -> float:
        return priors.similarity * p.score

    if state.last_nonempty:
        bonus = priors.done_bonus if state.depth >= 3 else 0.0
        add("done", f"The answer is {_names(state.last_values, 5)}.", Action("Done"), bonus, 100.0)

    # Entities: search the question's spans first; later only for a second (conjunction) entity.
    known_ids = {h.id for h in state.hits}
    if not state.hits or state.current is not None:
        spans = dict.fromkeys(_span_for(h, q) for h in mentions if h.id not in known_ids)
        for span in list(spans)[: 4 if not state.hits else 2]:
            if span.casefold() not in state.searched:
                add("search_nodes", f'Find the entity "{span}" in the knowledge base.', Action("SearchNodes", span),
                    rank=50.0)  # fmt: skip

    for hit in state.hits[:6]:
        query = state.hit_queries.get(hit.id) or flavour.entity_query(hit)
        if squash(query) in state.explored:
            continue
        about = f" ({hit.description[:60]})" if hit.description else ""
        add("entity_patterns", f"Look at the relations of {hit.name}{about} that fit the question.",
            Action("SearchGraphPatterns", query, semantic=q), rank=40.0 + hit.score / 100)  # fmt: skip

    current = state.current
    if current is not None and current.is_plain and state.current_values:
        query = answer_pattern_query(current)
        if squash(query) not in state.explored and len(current.triples) < 5:
            add("answer_patterns", f"Look at the relations of {_names(state.current_values)} to go one step further.",
                Action("SearchGraphPatterns", query, semantic=q), rank=30.0)  # fmt: skip

    def execute(kind: OptionKind, thought: str, query: Query, prior: float, rank: float) -> None:
        text = query.render()
        if squash(text) not in state.executed:
            add(kind, thought, Action("ExecuteSPARQL", text), prior, rank)

    in_current = current.entities() if current is not None else set()
    for ident, patterns in state.entity_patterns.items():
        name = state.name_of(ident)
        for p in patterns[:per_anchor]:
            rel = p.relation_text()
            if current is None or ident in in_current:
                execute("hop", f"Follow {rel} from {name}, e.g. {_sample(p)}.", one_hop(ident, p),
                        pattern_prior(p), 10.0 + p.score)  # fmt: skip
            elif current.is_plain:
                execute("constrain", f"Keep the answers linked to {name} by {rel}.", constrain(current, ident, p),
                        pattern_prior(p), 20.0 + p.score)  # fmt: skip

    if current is not None and current.is_plain:
        answers = _names(state.current_values)
        for p in state.current_patterns()[:per_anchor]:
            rel = p.relation_text()
            execute("extend", f"Follow {rel} from {answers}, e.g. {_sample(p)}.", extend(current, p),
                    pattern_prior(p), 20.0 + p.score)  # fmt: skip
            if p.sample.id is None and (p.sample.datatype or "") in _NUMERIC:
                for order, word in (("DESC", "largest"), ("ASC", "smallest")):
                    execute("superlative", f"Take the answer with the {word} {rel}.",
                            superlative(current, p, order), pattern_prior(p), 15.0 + p.score)  # type: ignore[arg-type]  # fmt: skip
        asks_count = _COUNT_WORDS.search(q) is not None
        execute("count", f"Count the answers {answers}.", counted(current),
                priors.count_bonus if asks_count else priors.count_penalty, 25.0 if asks_count else 5.0)  # fmt: skip
    return out


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


class GuidedPolicy:
    """Policy for small models: enumerate real tool calls, let the LM choose among them."""

    name = "guided"

    def __init__(
        self,
        model: Any,
        kb: Any,
        *,
        flavour: Flavour = FREEBASE,
        temperature: float = 0.7,
        batch_size: int = 16,
        max_candidates: int = 40,
        priors: Priors | None = None,
        prompt: PromptConfig | None = None,
        scorer: ContinuationScorer | None = None,
        score_on: ScoreOn = "thought",
    ) -> None:
        if temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {temperature}")
        if max_candidates < 1:
            raise ValueError(f"max_candidates must be >= 1, got {max_candidates}")
        if model is None and scorer is None:
            raise ValueError("GuidedPolicy needs a loaded model (or a scorer)")
        self.model = model
        self.kb = kb
        self.flavour = flavour
        self.temperature = temperature
        self.max_candidates = max_candidates
        self.score_on = score_on
        self.priors = priors or Priors()
        # One short demonstration: the prompt is re-read at every step on a CPU.
        self.prompt = prompt or PromptConfig(fewshot="freebase", max_demos=1)
        self.scorer: ContinuationScorer = scorer or LMContinuationScorer(model, batch_size=batch_size)
        self.usage = self.scorer.usage if isinstance(self.scorer.usage, Usage) else Usage()
        self._mentions: dict[str, list[EntityHit]] = {}

    # ----- entities named in the question ---------------------------------------------
    def mentions(self, question: str) -> list[EntityHit]:
        if question not in self._mentions:
            finder = getattr(self.kb, "find_mentions", None)
            hits = list(finder(question, 10)) if finder is not None else _fallback_mentions(self.kb, question)
            self._mentions[question] = hits
        return self._mentions[question]

    # ----- the Policy protocol --------------------------------------------------------
    def options(self, question: str, history: Sequence[Step]) -> list[Option]:
        """The capped candidate list at a state (before scoring)."""
        state = read_state(question, history, self.flavour)
        opts = enumerate_options(state, self.mentions(question), self.flavour, self.priors)
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
        return [s + o.prior for s, o in zip(lm, opts, strict=True)]

    def propose(
        self, question: str, history: Sequence[Step], k: int, *, rng: random.Random, greedy: bool = False
    ) -> list[Candidate]:
        opts = self.options(question, history)
        if not opts or k < 1:
            return []
        self.usage.calls += 1
        scores = self.score_options(question, history, opts)
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


def _fallback_mentions(kb: Any, question: str, limit: int = 10) -> list[EntityHit]:
    """For a KB without `find_mentions` (a remote endpoint): search runs of capitalised
    words and quoted phrases of the question by name, keep exact name matches."""
    words = re.findall(r"[\w'.-]+", question)
    spans: list[str] = re.findall(r'"([^"]+)"', question)
    run: list[str] = []
    for w in [*words, ""]:
        if w[:1].isupper() or (run and w[:1].isdigit()):
            run.append(w)
            continue
        if run:
            spans.append(" ".join(run))
        run = []
    hits: list[EntityHit] = []
    for span in dict.fromkeys(spans):
        try:
            found = kb.search_names(span, 3)
        except Exception:  # a remote KB that is down: no mention, the agent sees errors later
            continue
        hits += [h for h in found if h.name.casefold() == span.casefold()]
    return hits[:limit]
