#!/usr/bin/env python
"""A copy of a policy-adapter folder whose relation retriever's learned term is scaled.

    python -m studies.blend_adapter runs/traj/option_states.jsonl.folds/adapter-0 runs/blend/adapter-0 --scale 0.5

The retriever scores `q . r + (q U) . (r V)` (`mcts.agents.relation_adapter`); the copy has
`U` times `--scale`, so 0 is the zero-shot embedder and 1 the adapter as trained. Everything
else in the folder (option ranker, case memory, similarity weight) is copied as it is, and the
scale is recorded in `relation_adapter.json` as `learned_term_scale`. It measures a blend with
the zero-shot embedder on the same evaluation as the adapter (`studies.retriever_study`
shows the same blend's top-1) without training anything.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from mcts.agents.relation_adapter import RelationAdapter, is_relation_adapter


def blend(source: Path, target: Path, scale: float) -> Path:
    if not is_relation_adapter(source):
        raise ValueError(f"{source}: no relation retriever there (relation_adapter.json)")
    if target.exists():
        raise ValueError(f"{target} exists; pick a new folder")
    adapter = RelationAdapter.load(source)
    shutil.copytree(source, target)
    info = {**adapter.info, "learned_term_scale": scale * float(adapter.info.get("learned_term_scale", 1.0))}
    return RelationAdapter(u=adapter.u * scale, v=adapter.v, info=info).save(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", type=Path, help="a policy-adapter folder (e.g. models/relation_retriever)")
    parser.add_argument("target", type=Path, help="the new folder (must not exist)")
    parser.add_argument("--scale", type=float, default=0.5, help="factor on the learned term (0 to 1)")
    args = parser.parse_args(argv)
    if not 0.0 <= args.scale <= 1.0:
        parser.error("--scale: between 0 and 1")
    try:
        print(f"written: {blend(args.source, args.target, args.scale)}")
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
