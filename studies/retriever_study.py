"""Does the relation retriever generalise to question families it never saw?

The retriever's top-1 on held-out relation choices (the gold relation ranked first among
every relation around the anchor, as SearchGraphPatterns ranks them), broken down the way
the evaluation is: gold path faithful or not (`path_matches_gold_relations`) and question
family seen in the retriever's training questions or not (`mcts.evaluation.facets`).

Held out twice, both on train and choose questions only:
- train folds: one retriever per fold of the train questions (`option_states.fold_of`, as
  `train-policy --mode options` makes them), each scored on the fold it never saw;
- choose: a retriever on all train questions, scored on the choose questions. Its epoch is
  picked on these same questions (the shipped recipe), so this column is optimistic.

Each recipe picks its epoch by the top-1 on the choose questions' paths it keeps.

Rows are training recipes, each the shipped `RetrieverConfig` over a few seeds (mean),
beside the zero-shot embedder:
- every train path (the shipped recipe);
- without paths marked coincidental (`path_matches_gold_relations` false: the gold query's
  relations are not what the question says, so its relation choice teaches the subset);
- the shipped retrievers with their learned term halved (`BLENDS`: half way back to the
  zero-shot embedder, no new training);
- the shipped retrievers used only where a gate says the question's family is in training,
  the zero-shot embedder elsewhere (`GATES`, no new training): the true family (a bound no
  user's question can reach, its id names no family), and a gate an agent could run, the
  nearest training question's cosine (MiniLM) above 0.5 (chosen on the train folds).

    python -m mcts trajectories --kb ../shared/data/fbqa/kb.nt.gz --questions ../shared/data/fbqa/dev.jsonl --out runs/traj/dev.jsonl
    python -m studies.retriever_study --trajectories runs/traj/dev.jsonl --questions ../shared/data/fbqa/dev.jsonl

Loads only the sentence embedder; about a minute on two cores.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from mcts.training.retriever import Choice, RetrieverConfig, _Encoded, choices_of

ZERO_SHOT = "zero-shot embedder (no adapter)"
SHIPPED = "every train path (shipped)"
RECIPES: dict[str, Callable[[dict[str, Any]], bool]] = {
    SHIPPED: lambda record: True,
    "without coincidental paths": lambda record: record.get("path_matches_gold_relations") is not False,
}
# A recipe's retrievers scored with their learned term scaled down (a blend with the
# zero-shot embedder, whose score is the cosine alone): name -> (recipe, scale).
BLENDS: dict[str, tuple[str, float]] = {"every train path, learned term halved": (SHIPPED, 0.5)}
# A recipe's retrievers where a gate, reading (family seen, the nearest training question's
# cosine), says the question has a family member in training; the zero-shot embedder
# elsewhere, where the adapter's memory misleads: name -> (recipe, gate).
NEAR_QUESTION = 0.5
GATES: dict[str, tuple[str, Callable[[bool, float], bool]]] = {
    "every train path where the family is in training (true family), zero-shot elsewhere": (
        SHIPPED, lambda seen, near: seen),
    f"every train path where a train question is near (cosine > {NEAR_QUESTION}), zero-shot elsewhere": (
        SHIPPED, lambda seen, near: near > NEAR_QUESTION),
}  # fmt: skip


@dataclass(frozen=True)
class HeldOutChoice:
    """One relation choice scored by a retriever that never trained on its question."""

    recipe: str
    seed: int
    where: str  # "train folds" or "choose"
    question_id: str
    faithful: bool | None
    family_seen: bool
    right: bool


@dataclass(frozen=True)
class Column:
    label: str
    where: str
    keep: Callable[[HeldOutChoice], bool]


COLUMNS = (
    Column("train folds: all", "train folds", lambda c: True),
    Column("faithful", "train folds", lambda c: c.faithful is True),
    Column("faithful, family unseen", "train folds", lambda c: c.faithful is True and not c.family_seen),
    Column("faithful, family seen", "train folds", lambda c: c.faithful is True and c.family_seen),
    Column("not faithful", "train folds", lambda c: c.faithful is False),
    Column("choose: all", "choose", lambda c: True),
    Column("faithful", "choose", lambda c: c.faithful is True),
    Column("faithful, family unseen", "choose", lambda c: c.faithful is True and not c.family_seen),
)


def _choices_with_owners(trajectories: Sequence[dict[str, Any]], ids: set[str]) -> list[tuple[str, Choice]]:
    return [(t["id"], c) for t in trajectories if t["id"] in ids for c in choices_of([t])]


def _fit(train: _Encoded, choose: _Encoded, config: RetrieverConfig) -> tuple[Any, Any]:
    """The shipped recipe without its files: the epoch with the best choose top-1."""
    from mcts.training.retriever import new_adapter, train_epoch

    u, v, opt = new_adapter(train.q.shape[1], config)
    best, best_uv = choose.topk(u, v, 1), (u.detach().clone(), v.detach().clone())
    for _ in range(config.epochs):
        train_epoch(train, u, v, opt, config)
        top1 = choose.topk(u, v, 1)
        if top1 > best:
            best, best_uv = top1, (u.detach().clone(), v.detach().clone())
    return best_uv


def _scored(
    recipe: str, seed: int, where: str, facts: Sequence[tuple[str, Any, bool]], ranks: Any
) -> list[HeldOutChoice]:
    """One row per held-out choice: `facts` (question id, faithful, family seen), `ranks` the
    gold relation's rank per choice (0: first)."""
    return [HeldOutChoice(recipe, seed, where, qid, faithful, seen, rank == 0)
            for (qid, faithful, seen), rank in zip(facts, ranks.tolist(), strict=True)]  # fmt: skip


def held_out_choices(
    trajectories: Sequence[dict[str, Any]],
    records: Sequence[dict[str, Any]],
    split: dict[str, list[str]],
    *,
    seeds: Sequence[int] = (0, 1),
    folds: int = 2,
    config: RetrieverConfig | None = None,
    ranker: Any = None,
) -> list[HeldOutChoice]:
    """Every held-out relation choice, scored zero-shot and by each recipe and seed (the
    shipped `RetrieverConfig` unless `config` says otherwise)."""
    import torch

    from kb.relation_ranker import default_ranker
    from mcts.evaluation.facets import family_of
    from mcts.training.option_states import fold_of

    config = config or RetrieverConfig()
    ranker = ranker or default_ranker()
    by_id = {str(r["id"]): r for r in records}
    train_ids, choose_ids = set(split["train"]) & set(by_id), set(split["choose"]) & set(by_id)
    fold_ids = [{i for i in train_ids if fold_of(i, folds) == f} for f in range(folds)]
    # (where, retriever's training questions, held-out questions)
    settings = [("train folds", train_ids - held, held) for held in fold_ids]
    settings.append(("choose", train_ids, choose_ids))
    # Each recipe picks its epoch on the choose questions' paths it would train on.
    pick_epoch_on = {}
    for recipe, keep in RECIPES.items():
        kept = [c for _, c in _choices_with_owners(trajectories, {i for i in choose_ids if keep(by_id[i])})]
        if not kept:
            raise ValueError(f"{recipe}: no relation choice among the choose questions to pick an epoch on")
        pick_epoch_on[recipe] = _Encoded(kept, ranker)

    out: list[HeldOutChoice] = []
    for where, trained_on, held in settings:
        pairs = _choices_with_owners(trajectories, held)
        if not pairs:
            continue
        owners, held_choices = zip(*pairs, strict=True)
        test = _Encoded(held_choices, ranker)
        families = {family_of(i) for i in trained_on}
        facts = [(qid, by_id[qid].get("path_matches_gold_relations"), bool(family_of(qid)) and family_of(qid) in families)
                 for qid in owners]  # fmt: skip

        zero_u = test.q.new_zeros((test.q.shape[1], 1))
        zero_ranks = test.ranks(zero_u, zero_u)
        out += _scored(ZERO_SHOT, 0, where, facts, zero_ranks)
        near = _nearest_question(owners, trained_on, by_id, ranker)
        for recipe, keep in RECIPES.items():
            kept = {i for i in trained_on if keep(by_id[i])}
            train_choices = [c for _, c in _choices_with_owners(trajectories, kept)]
            if not train_choices:
                continue
            train = _Encoded(train_choices, ranker)
            for seed in seeds:
                u, v = _fit(train, pick_epoch_on[recipe], replace(config, seed=seed))
                ranks = test.ranks(u, v)
                out += _scored(recipe, seed, where, facts, ranks)
                for blend, (base, scale) in BLENDS.items():
                    if base == recipe:
                        out += _scored(blend, seed, where, facts, test.ranks(u * scale, v))
                for gated, (base, gate) in GATES.items():
                    if base == recipe:
                        use = torch.tensor(
                            [gate(seen, n) for (_, _, seen), n in zip(facts, near, strict=True)]
                        )
                        out += _scored(gated, seed, where, facts, torch.where(use, ranks, zero_ranks))
    return out


def _nearest_question(owners: Sequence[str], trained_on: set[str], by_id: dict[str, dict[str, Any]],
                      ranker: Any) -> list[float]:  # fmt: skip
    """Per held-out choice, the cosine of its question with the nearest training question."""
    import numpy as np

    trained = sorted(trained_on)
    known = np.asarray(ranker.encode([by_id[i]["question"] for i in trained], persist=False))
    asked = np.asarray(ranker.encode([by_id[i]["question"] for i in owners], persist=False))
    return (asked @ known.T).max(axis=1).tolist()


def study_markdown(choices: Sequence[HeldOutChoice]) -> str:
    """Top-1 (%) per recipe and column, the mean over seeds; n counts choices (one seed)."""
    recipes = list(dict.fromkeys(c.recipe for c in choices))
    first_seed = {r: min(c.seed for c in choices if c.recipe == r) for r in recipes}
    header = "| retriever | " + " | ".join(
        f"{col.label} (n={sum(col.keep(c) for c in choices if c.where == col.where and c.recipe == ZERO_SHOT)})"
        for col in COLUMNS
    )
    lines = [header + " |", "|---|" + "---:|" * len(COLUMNS)]
    for recipe in recipes:
        cells = []
        for col in COLUMNS:
            picked = [c for c in choices if c.recipe == recipe and c.where == col.where and col.keep(c)]
            seeds = sorted({c.seed for c in picked})
            shares = [
                sum(c.right for c in picked if c.seed == s) / sum(c.seed == s for c in picked) for s in seeds
            ]
            cells.append(f"{100 * sum(shares) / len(shares):.1f}" if shares else "-")
        n_seeds = len({c.seed for c in choices if c.recipe == recipe})
        label = recipe if recipe == ZERO_SHOT else f"{recipe}, {n_seeds} seeds from {first_seed[recipe]}"
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m studies.retriever_study", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--trajectories", required=True, help="from `python -m mcts trajectories`")
    parser.add_argument("--questions", required=True, help="the records (dev.jsonl): faithfulness, families")
    parser.add_argument("--seeds", default="0,1", help="comma separated training seeds")
    parser.add_argument("--folds", type=int, default=2)
    args = parser.parse_args(argv)

    from mcts.training.split import load_split, read_jsonl
    from mcts.training.trajectories import read_trajectories

    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    if not seeds:
        parser.error("--seeds: at least one seed")
    choices = held_out_choices(read_trajectories(args.trajectories, valid_only=False), read_jsonl(args.questions),
                               load_split(), seeds=seeds, folds=args.folds)  # fmt: skip
    print(study_markdown(choices))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
