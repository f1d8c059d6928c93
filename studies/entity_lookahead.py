#!/usr/bin/env python
"""Which entity to search first: would it help to look at what each candidate can answer?

    python -m studies.entity_lookahead --kb ../shared/data/fbqa/kb.nt.gz \\
        --questions ../shared/data/fbqa/dev.jsonl --states runs/traj/option_states.jsonl

At its first step the guided policy picks which of the question's entity spans to search
(`SearchNodes`). The option ranker reads the span's words and place, the entity's popularity
and the case memory; a question of a family the training lacks has no case to go by, and the
constraining entity of a conjunction ("... in Afghanistan", "... that trades with China") is
written like the topic entity. What the ranker does not read is what each candidate could
answer: `relation_fit` is the best cosine (the zero-shot MiniLM embedder, which reads relation
words as well on every family) between the question's relation phrase (the `semantic` the
policy passes to SearchGraphPatterns) and any relation SearchGraphPatterns could show around
the span's entities (its first three hits).

No language model runs: the first-step states of `--states` (written by `python -m mcts
train-policy --mode options`: LM scores and features of the train questions, similarity from
retrievers of the other fold, and of the choose questions) get the feature, and the option
ranker is fitted again as that command fits it (`l2` chosen on held-out states). Top-1 of the
first entity choice, held out: a train question by the ranker fitted on the other fold's
questions (its family counted as seen when that fold holds a member, as `python -m mcts study folds`
counts it), a choose question by the ranker fitted on every train question. Columns: the
first span the policy lists, the span of the highest `relation_fit` alone, the ranker as
shipped (refitted on these states), and the ranker with `relation_fit`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kb.observation import EntityHit
from mcts.agents.policy_guided import RELATION_FIT as FEATURE
from mcts.training.option_states import StateRow, family_seen_by_fold, read_states

FOLDS = 2  # as `train-policy --mode options` splits the train part


@dataclass(frozen=True)
class FirstChoice:
    """One question's first-step state, with `relation_fit` per option (the spans in order)."""

    row: StateRow
    part: str
    family_seen: bool | None
    faithful_one_hop: bool


def first_step_spans(question: str, mentions: Sequence[EntityHit], flavour: Any) -> list[str]:
    """The spans of the policy's first-step SearchNodes options, in their order."""
    from mcts.agents.guided_options import FIRST_SEARCHES, unused_mentions
    from mcts.agents.guided_state import read_state

    return unused_mentions(read_state(question, [], flavour), mentions)[:FIRST_SEARCHES]


def relation_fits(
    question: str, spans: Sequence[str], mentions: Sequence[EntityHit], tools: Any, embedder: Any
) -> list[float]:
    """Per span, the policy's `relation_fit` (`mcts.agents.policy_guided.span_relation_fit`)."""
    from mcts.agents.policy_guided import relation_similarities, span_relation_fit

    fits = span_relation_fit(
        question, spans, mentions, tools.relations_around, relation_similarities(embedder)
    )
    return [fits[s] for s in spans]


def with_feature(row: StateRow, fits: Sequence[float]) -> StateRow:
    features = tuple({**f, FEATURE: v} if v else dict(f) for f, v in zip(row.features, fits, strict=True))
    return replace(row, features=features)


def without_feature(row: StateRow) -> StateRow:
    return replace(row, features=tuple({k: v for k, v in f.items() if k != FEATURE} for f in row.features))


def top1(values: Sequence[float], gold: int) -> bool:
    """Is `gold` the only highest value? (a tie is not a pick, as the ranker's own top-1 counts it)"""
    return values[gold] == max(values) and values.count(max(values)) == 1


def ranker_picks(train: list[StateRow], choose: list[StateRow], base: Any) -> dict[tuple[str, int], bool]:
    """Held-out picks of a ranker fitted as `train-policy --mode options` fits it."""
    from mcts.training.option_ranker import fit_grid, held_out_picks, picks

    kept, _ = fit_grid(train, choose, base)
    out = dict(zip(((r.id, r.step) for r in train), held_out_picks(train, base, kept.l2), strict=True))
    out.update(zip(((r.id, r.step) for r in choose), picks(choose, kept.ranker), strict=True))
    return out


def table(choices: Sequence[FirstChoice], columns: dict[str, Callable[[FirstChoice], bool]]) -> list[str]:
    lines = ["| first entity choice | states | " + " | ".join(columns) + " |",
             "|---|---:|" + "---:|" * len(columns)]  # fmt: skip
    groups = (("", lambda c: True), (", family seen", lambda c: c.family_seen is True),
              (", family unseen", lambda c: c.family_seen is False),
              (", faithful one-hop, family unseen", lambda c: c.faithful_one_hop and c.family_seen is False))  # fmt: skip
    for part in ("train", "choose"):
        for label, keep in groups:
            mine = [c for c in choices if c.part == part and keep(c)]
            if mine:
                cells = [f"{100 * sum(map(pick, mine)) / len(mine):.1f}" for pick in columns.values()]
                lines.append(f"| {part}{label} | {len(mine)} | " + " | ".join(cells) + " |")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--kb", required=True, help="KB spec (the Freebase subset the states were built on)")
    parser.add_argument("--questions", required=True, help="question JSONL (dev.jsonl)")
    parser.add_argument("--states", required=True, help="states of `train-policy --mode options`")
    parser.add_argument(
        "--adapter", default="models/relation_retriever", help="the policy adapter the states were built for"
    )
    args = parser.parse_args(argv)

    from kb.relation_ranker import default_ranker
    from kb.spec import open_kb
    from kb.tools import Toolbox
    from mcts.agents.guided_options import Priors
    from mcts.agents.option_ranker import OptionRanker
    from mcts.agents.policy_guided import mention_finder
    from mcts.agents.relation_adapter import prior_weight
    from mcts.evaluation.facets import load_split_info

    info = load_split_info()
    train_ids = {i for i, part in info.part_of.items() if part == "train"}
    choose_ids = {i for i, part in info.part_of.items() if part == "choose"}
    lines = Path(args.questions).read_text(encoding="utf-8").splitlines()
    records = {str(r["id"]): r for r in map(json.loads, filter(str.strip, lines))}
    seen = family_seen_by_fold(sorted(train_ids), FOLDS)
    train, choose = read_states(args.states, train_ids), read_states(args.states, choose_ids)
    if not train or not choose:
        print(f"error: {args.states}: no train or no choose states", file=sys.stderr)
        return 2
    kb = open_kb(args.kb)
    tools, finder, embedder = Toolbox(kb, timeout_s=60), mention_finder(kb), default_ranker()
    added: dict[tuple[str, int], StateRow] = {}
    choices: list[FirstChoice] = []
    for row in (*train, *choose):
        if row.step != 0 or set(row.kinds) != {"search_nodes"} or row.id not in records:
            continue
        record = records[row.id]
        mentions = finder.find_mentions(record["question"], 10)
        spans = first_step_spans(record["question"], mentions, tools.flavour)
        if len(spans) != len(row.kinds):  # not the options the states were collected with
            print(
                f"warning: {row.id}: {len(spans)} spans for {len(row.kinds)} options; left out",
                file=sys.stderr,
            )
            continue
        row_with = with_feature(
            without_feature(row), relation_fits(record["question"], spans, mentions, tools, embedder)
        )
        added[(row.id, row.step)] = row_with
        faithful_one_hop = record.get("hops") == 1 and record.get("path_matches_gold_relations") is True
        part = "train" if row.id in train_ids else "choose"
        family_seen = seen(row.id) if part == "train" else info.facets(row.id, record).family_in_train
        choices.append(FirstChoice(row_with, part, family_seen, faithful_one_hop))
    base = OptionRanker.from_priors(Priors(similarity=prior_weight(args.adapter) or Priors().similarity))
    # States collected with a policy that computes the feature hold it already: the ranker
    # column is fitted without it anywhere, the other with it at the first step only.
    train, choose = [without_feature(r) for r in train], [without_feature(r) for r in choose]
    shipped = ranker_picks(train, choose, base)
    looked = ranker_picks(
        [added.get((r.id, r.step), r) for r in train], [added.get((r.id, r.step), r) for r in choose], base
    )
    columns: dict[str, Callable[[FirstChoice], bool]] = {
        "first span listed": lambda c: c.row.gold == 0,
        "highest relation_fit": lambda c: top1([f.get(FEATURE, 0.0) for f in c.row.features], c.row.gold),
        "ranker": lambda c: shipped[(c.row.id, c.row.step)],
        "ranker + relation_fit": lambda c: looked[(c.row.id, c.row.step)],
    }
    print("\n".join(table(choices, columns)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
