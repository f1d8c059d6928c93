"""Training the option ranker (`mcts.agents.option_ranker`): the guided policy's whole choice.

The relation retriever only improves which relation looks similar; whether to stop, count,
take one more hop or start at another entity is still the hand-set priors' call. Here
every weight of the policy's score (the LM score, each prior's feature, a bias per kind of
step, a similarity weight per kind) is fitted to the gold next step of trajectories:

- data: the states of `mcts.training.option_states` (train questions, similarity from
  retrievers of the other folds; choose questions, similarity from the shipped retriever);
- loss: listwise softmax cross-entropy over each state's options, plus
  `l2 * |w - w_hand|^2`, which pulls every weight to the hand-set policy's (so a feature
  the data rarely shows, like COUNT, keeps its documented prior);
- `l2` is chosen on held-out states: the choose states pooled with 2-fold cross-validation
  over the train questions (top-1 of the gold step, then the choose loss); the test
  questions are never read.

Seconds on a CPU once the states are collected.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcts.agents.option_ranker import LM, OptionRanker, per_kind_key
from mcts.training.option_states import StateRow, fold_of

L2_GRID = (0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0)


@dataclass(frozen=True)
class FitConfig:
    steps: int = 300
    lr: float = 0.05
    seed: int = 0


class _Batch:
    """States as a padded tensor (states, options, features) with a mask."""

    def __init__(self, rows: Sequence[StateRow], names: Sequence[str]) -> None:
        import torch

        index = {n: i for i, n in enumerate(names)}
        width = max(len(r.lm) for r in rows)
        self.x = torch.zeros((len(rows), width, len(names)))
        self.mask = torch.zeros((len(rows), width), dtype=torch.bool)
        for s, row in enumerate(rows):
            for o, (lm, feats, kind) in enumerate(zip(row.lm, row.features, row.kinds, strict=True)):
                self.x[s, o, index[LM]] = lm
                if per_kind_key(LM, kind) in index:
                    self.x[s, o, index[per_kind_key(LM, kind)]] = lm
                for name, value in feats.items():
                    if name in index:
                        self.x[s, o, index[name]] = value
                self.mask[s, o] = True
        self.gold = torch.tensor([r.gold for r in rows])

    def logits(self, w: Any) -> Any:
        return (self.x @ w).masked_fill(~self.mask, float("-inf"))

    def loss(self, w: Any) -> Any:
        import torch

        return torch.nn.functional.cross_entropy(self.logits(w), self.gold)

    def picks(self, w: Any) -> list[bool]:
        """Per state: is the gold option the only top-scored one (a tie is not a pick)?"""
        import torch

        with torch.no_grad():
            s = self.logits(w)
            gold = s.gather(1, self.gold.unsqueeze(1))
            return [bool(x) for x in (s >= gold).sum(1) == 1]

    def top1(self, w: Any) -> float:
        picks = self.picks(w)
        return sum(picks) / len(picks)


def vocabulary(rows: Sequence[StateRow], base: OptionRanker) -> list[str]:
    names = {n for r in rows for feats in r.features for n in feats} | set(base.weights)
    names |= {per_kind_key(LM, kind) for r in rows for kind in r.kinds}
    return [LM, *sorted(names - {LM})]


def fit(
    train: Sequence[StateRow], base: OptionRanker, l2: float, config: FitConfig = FitConfig()
) -> tuple[OptionRanker, list[float]]:
    """Weights minimising the listwise loss on `train` plus the pull to `base`; the loss curve."""
    import torch

    torch.manual_seed(config.seed)
    names = vocabulary(train, base)
    batch = _Batch(train, names)
    w0 = torch.tensor([base.weights.get(n, 0.0) for n in names])
    w = torch.nn.Parameter(w0.clone())
    opt = torch.optim.Adam([w], lr=config.lr)
    curve: list[float] = []
    for _ in range(config.steps):
        loss = batch.loss(w)
        total = loss + l2 * ((w - w0) ** 2).sum()
        opt.zero_grad()
        total.backward()
        opt.step()
        curve.append(float(loss.detach()))
    weights = {n: round(float(v), 4) for n, v in zip(names, w.detach(), strict=True)}
    return OptionRanker(weights), curve


def _scored(rows: Sequence[StateRow], ranker: OptionRanker) -> tuple[_Batch, Any]:
    """The states as a batch, and the ranker's weights in the batch's feature order."""
    import torch

    names = vocabulary(rows, ranker)
    return _Batch(rows, names), torch.tensor([ranker.weights.get(n, 0.0) for n in names])


def evaluate(rows: Sequence[StateRow], ranker: OptionRanker) -> dict[str, float]:
    """Share of states whose top-scored option is the gold step (ties count against), and the loss."""
    import torch

    batch, w = _scored(rows, ranker)
    with torch.no_grad():
        return {"top1": round(batch.top1(w), 4), "loss": round(float(batch.loss(w)), 4), "states": len(rows)}


def picks(rows: Sequence[StateRow], ranker: OptionRanker) -> list[bool]:
    """Per state: does the ranker pick the gold step alone (a tie is not a pick)?"""
    batch, w = _scored(rows, ranker)
    return batch.picks(w)


def held_out_picks(
    train: Sequence[StateRow],
    base: OptionRanker,
    l2: float,
    config: FitConfig = FitConfig(),
    cv_folds: int = 2,
) -> list[bool]:
    """`picks` of each train state by a ranker fitted on the other folds' questions only."""
    right: dict[int, bool] = {}
    for fold in range(cv_folds):
        scored = [i for i, r in enumerate(train) if fold_of(r.id, cv_folds) == fold]
        fitted = [r for r in train if fold_of(r.id, cv_folds) != fold]
        if scored and fitted:
            ranker = fit(fitted, base, l2, config)[0]
            right.update(zip(scored, picks([train[i] for i in scored], ranker), strict=True))
    return [right.get(i, False) for i in range(len(train))]


def picks_by_step(rows: Sequence[StateRow], ranker: OptionRanker) -> dict[str, list[int]]:
    """[right, states] per kind of gold step: which entity to search (`search_nodes`), which
    relation to follow (`hop`, `extend`), when to stop (`done`) or look one hop further
    (`answer_patterns`); where a ranker's misses are."""
    return by_step(rows, picks(rows, ranker))


def by_step(rows: Sequence[StateRow], right_of: Sequence[bool]) -> dict[str, list[int]]:
    """[right, states] per kind of gold step, from one pick per state."""
    out: dict[str, list[int]] = {}
    for row, right in zip(rows, right_of, strict=True):
        tally = out.setdefault(row.kinds[row.gold], [0, 0])
        tally[0] += right
        tally[1] += 1
    return dict(sorted(out.items()))


def _add(tally: dict[str, list[int]], more: dict[str, list[int]]) -> None:
    for kind, (right, states) in more.items():
        tally.setdefault(kind, [0, 0])
        tally[kind][0] += right
        tally[kind][1] += states


@dataclass(frozen=True)
class GridFit:
    """The ranker fitted on every train state with one `l2`, and how it did held out."""

    l2: float
    ranker: OptionRanker
    curve: list[float]
    scores: dict[str, Any]  # choose top-1 and loss, held-out top-1 overall and per kind of step


def fit_grid(
    train: Sequence[StateRow],
    choose: Sequence[StateRow],
    base: OptionRanker,
    *,
    grid: Sequence[float] = L2_GRID,
    config: FitConfig = FitConfig(),
    cv_folds: int = 2,
) -> tuple[GridFit, list[GridFit]]:
    """One fit per `l2`, and the one kept: the highest held-out top-1, then the lowest choose
    loss, then the strongest pull to the hand-set weights.

    Held out: the choose states (scored by the ranker fitted on all train states) pooled
    with `cv_folds`-fold cross-validation over the train questions (each fold scored by a
    ranker fitted on the others). The choose states alone are ~110, too few to tell
    neighbouring `l2` values apart (one state is ~1 point)."""
    if not train or not choose:
        raise ValueError(f"need states to train on and to choose with (got {len(train)} and {len(choose)})")
    tried = []
    for l2 in grid:
        ranker, curve = fit(train, base, l2, config)
        tally = picks_by_step(choose, ranker)
        _add(tally, by_step(train, held_out_picks(train, base, l2, config, cv_folds)))
        right, seen = (sum(t[i] for t in tally.values()) for i in (0, 1))
        held_out = {"held_out_top1": round(right / seen, 4), "held_out_by_step": tally}
        tried.append(GridFit(l2, ranker, curve, {**evaluate(choose, ranker), **held_out}))
    kept = max(tried, key=lambda t: (t.scores["held_out_top1"], -t.scores["loss"], t.l2))
    return kept, tried


def train_option_ranker(
    train: Sequence[StateRow],
    choose: Sequence[StateRow],
    base: OptionRanker,
    out: str | Path,
    *,
    grid: Sequence[float] = L2_GRID,
    config: FitConfig = FitConfig(),
    cv_folds: int = 2,
) -> dict[str, Any]:
    """Fit one ranker per `l2` (`fit_grid`), save the one kept (and its loss curve) in `out`."""
    from mcts.training.plots import save_curve

    started = time.perf_counter()
    kept, tried = fit_grid(train, choose, base, grid=grid, config=config, cv_folds=cv_folds)
    summary = {
        "hand_set": {"train": evaluate(train, base), "choose": evaluate(choose, base)},
        "trained": {"train": evaluate(train, kept.ranker), "choose": kept.scores},
        "l2": kept.l2,
        "grid": {f"{t.l2:g}": t.scores for t in tried},
        "config": config.__dict__,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    trained = OptionRanker(kept.ranker.weights, {"trained": summary})
    Path(out).mkdir(parents=True, exist_ok=True)
    trained.save(out)
    save_curve(
        Path(out) / "option_ranker_loss.png",
        {"train loss": kept.curve},
        xlabel="step",
        title=f"option ranker (listwise, l2 {kept.l2:g})",
    )
    return summary
