"""The guided policy: real candidate tool calls, chosen by a language model's likelihood.

A 135M-parameter model cannot write correct SPARQL, but it can tell which of a few
sensible next steps reads most naturally after the question and the history. So at a
state the candidates are ENUMERATED from the state and the tools' structured
observations (see `enumerate_options`):

- SearchNodes on question spans that the KB's name index knows (`find_mentions`),
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

This module knows the KB only through `find_mentions` / `search_names` (to find spans)
and the tools' observation payloads; it runs no tool itself.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Sequence
from typing import Any, Literal

from kb.base import KBError
from kb.flavour import FREEBASE, Flavour
from kb.observation import EntityHit
from mcts.agents.guided_options import Option, Priors, enumerate_options
from mcts.agents.guided_state import read_state
from mcts.agents.lm_scoring import ContinuationScorer, LMContinuationScorer
from mcts.agents.prompts import PromptConfig, candidate_text, prompt_segments
from mcts.search.protocols import Usage
from mcts.search.steps import Candidate, Step

ScoreOn = Literal["thought", "step"]


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
        flavour: Flavour | None = None,
        temperature: float = 0.7,
        batch_size: int = 16,
        max_candidates: int = 40,
        priors: Priors | None = None,
        prompt: PromptConfig | None = None,
        scorer: ContinuationScorer | None = None,
        score_on: ScoreOn = "thought",
        ranker: Any = None,
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
        # One short demonstration in the KB's vocabulary: the prompt is re-read at every step on a CPU.
        self.prompt = prompt or PromptConfig.for_flavour(self.flavour.name, max_demos=1)
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

    def _homonym_similarity(self, state: Any) -> dict[str, float]:
        """Question-description similarity of hits that share a name with another hit."""
        by_name: dict[str, list[EntityHit]] = {}
        for group in state.hit_groups:
            for hit in group[:3]:
                by_name.setdefault(hit.name.casefold(), []).append(hit)
        homonyms = [h for hits in by_name.values() if len(hits) > 1 for h in hits if h.description]
        if not homonyms or self.priors.homonym == 0:
            return {}
        if self.ranker is None:
            from kb.relation_ranker import default_ranker

            self.ranker = default_ranker()
        # The shared name says nothing about which one is meant (and an album named after
        # its artist would match on it): compare question and description without it.
        out: dict[str, float] = {}
        for hit in homonyms:
            name = re.compile(re.escape(hit.name), re.IGNORECASE)
            question = " ".join(name.sub(" ", state.question).split())
            out[hit.id] = float(self.ranker.rank(question, [name.sub(" ", hit.description)])[0])
        return out

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
        except KBError:  # a remote KB that is down: no mention; the agent sees the error later
            continue
        hits += [h for h in found if h.name.casefold() == span.casefold()]
    return hits[:limit]
