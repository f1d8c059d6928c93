"""CLI subcommands `trajectories`, `train-policy` and `split`, registered on `python -m mcts`.

    python -m mcts trajectories --kb ../shared/data/fbqa/kb.nt.gz \\
        --questions ../shared/data/fbqa/dev.jsonl --out runs/traj/dev.jsonl
    python -m mcts train-policy --trajectories runs/traj/dev.jsonl --out models/relation_retriever
    python -m mcts train-policy --mode sft --trajectories runs/traj/dev.jsonl --base smollm2-135m \\
        --out runs/lora --max-steps 20        # LoRA with TRL (GPU: --base meta-llama/Llama-3.1-8B-Instruct)
    python -m mcts split --questions ../shared/data/fbqa/dev.jsonl --part test --out runs/test.jsonl

Training uses only the `train` ids of the split file (`examples/splits/fbqa_dev.json`)
and chooses the epoch on its `choose` ids; `test` ids are never read. Exit status: 0
done, 2 bad arguments or input files.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

_SPLIT_HELP = "split file with train/choose/test ids (default: examples/splits/fbqa_dev.json)"


def register(subparsers: Any) -> None:
    """Add `trajectories`, `train-policy` and `split` to the `python -m mcts` subcommands."""
    tr = subparsers.add_parser("trajectories", help="build gold tool-call trajectories on the real tools")
    tr.add_argument("--kb", required=True, help="KB spec (e.g. ../shared/data/fbqa/kb.nt.gz)")
    tr.add_argument("--questions", required=True, help="question JSONL with path and kb_sparql")
    tr.add_argument("--out", required=True, help="trajectory JSONL to write")
    tr.add_argument("--limit", type=int, default=None, help="first N questions")
    tr.add_argument("--no-progress", action="store_true")
    tr.set_defaults(func=cmd_trajectories)

    tp = subparsers.add_parser("train-policy", help="train the policy adapter on trajectories")
    tp.add_argument("--trajectories", required=True, help="JSONL from `python -m mcts trajectories`")
    tp.add_argument("--out", required=True, help="adapter folder to write")
    tp.add_argument(
        "--mode",
        choices=["retriever", "options", "sft"],
        default="retriever",
        help="retriever: relation retriever for the guided policy (CPU default); options: the guided "
        "policy's option ranker, into a retriever's folder (needs --kb, --questions); "
        "sft: LoRA on the ReAct text (TRL)",
    )
    tp.add_argument("--kb", default=None, help="options: KB spec the trajectories were built on")
    tp.add_argument("--questions", default=None, help="options: question JSONL with path and kb_sparql")
    tp.add_argument(
        "--states", default=None, help="options: state JSONL to write or resume (default: OUT/states.jsonl)"
    )
    tp.add_argument("--base", default=None, help="sft: base model (bundled alias, folder or hub id)")
    tp.add_argument("--split", default=None, help=_SPLIT_HELP)
    tp.add_argument("--seed", type=int, default=0)
    tp.add_argument("--epochs", type=float, default=None, help="epochs (retriever 40, sft 2)")
    tp.add_argument("--lr", type=float, default=None, help="learning rate (retriever 1e-3, sft 2e-4)")
    tp.add_argument("--rank", type=int, default=None, help="adapter rank (retriever 8, sft LoRA r 16)")
    tp.add_argument(
        "--relation-fit",
        action="store_true",
        help="options: the first entity choice also reads how well each span's relations fit the question",
    )
    tp.add_argument(
        "--learned-term-scale",
        type=float,
        default=1.0,
        help="retriever: save the learned term times this (0..1; 0.5 blends it with the zero-shot embedder)",
    )
    tp.add_argument("--max-steps", type=int, default=-1, help="sft: stop after this many steps")
    tp.add_argument("--max-length", type=int, default=1024, help="sft: tokens per conversation")
    tp.add_argument("--limit", type=int, default=None, help="sft: first N training conversations")
    tp.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    tp.add_argument("--no-progress", action="store_true")
    tp.set_defaults(func=cmd_train_policy)

    sp = subparsers.add_parser("split", help="write one part (train/choose/test) of the split as JSONL")
    sp.add_argument("--questions", required=True)
    sp.add_argument(
        "--part", required=True, help="train, choose or test; with --split, any id list of that file"
    )
    sp.add_argument("--out", required=True)
    sp.add_argument("--split", default=None, help=_SPLIT_HELP)
    sp.set_defaults(func=cmd_split)


def _err(message: str) -> int:
    print(f"error: {' '.join(str(message).split())}", file=sys.stderr)
    return 2


def cmd_trajectories(args: argparse.Namespace) -> int:
    from kb.spec import open_kb
    from mcts.training.split import read_jsonl
    from mcts.training.trajectories import build_all

    try:
        records = read_jsonl(args.questions)[: args.limit]
        kb = open_kb(args.kb)
    except (OSError, ValueError, RuntimeError) as exc:
        return _err(str(exc))

    def bar(items: Any) -> Any:
        from tqdm import tqdm

        return tqdm(items, desc="trajectories", disable=args.no_progress)

    report = build_all(records, kb, args.out, progress=bar)
    print(report.lines())
    print(f"written: {args.out}")
    return 0


def cmd_train_policy(args: argparse.Namespace) -> int:
    from mcts.training.split import SPLIT_FILE, load_split
    from mcts.training.trajectories import read_trajectories

    try:
        split = load_split(args.split or SPLIT_FILE)
        trajectories = read_trajectories(args.trajectories, valid_only=False)
    except (OSError, ValueError, KeyError) as exc:
        return _err(str(exc))
    train, choose = set(split["train"]), set(split["choose"])
    if args.mode == "retriever":
        from mcts.training.retriever import RetrieverConfig, train_retriever

        config = RetrieverConfig(
            seed=args.seed,
            **{
                k: v
                for k, v in (("epochs", args.epochs), ("lr", args.lr), ("rank", args.rank))
                if v is not None
            },
        )
        if not 0.0 <= args.learned_term_scale <= 1.0:
            return _err("--learned-term-scale: between 0 and 1")
        config = RetrieverConfig(
            **{**config.__dict__, "epochs": int(config.epochs), "learned_term_scale": args.learned_term_scale}
        )
        summary = train_retriever(
            trajectories, train, choose, args.out, config, resume=args.resume, progress=not args.no_progress
        )
    elif args.mode == "options":
        if not args.kb or not args.questions:
            return _err("--mode options needs --kb and --questions (the trajectories' KB and questions)")
        from mcts.training.option_pipeline import build_option_ranker
        from mcts.training.split import read_jsonl

        def bar(items: Any) -> Any:
            from tqdm import tqdm

            return tqdm(items, desc="states", disable=args.no_progress)

        try:
            summary = build_option_ranker(
                args.kb,
                read_jsonl(args.questions),
                trajectories,
                split,
                args.out,
                args.states or Path(args.out) / "states.jsonl",
                resume=args.resume,
                relation_fit=args.relation_fit,
                progress=bar,
            )
        except (ValueError, OSError) as exc:
            return _err(str(exc))
    else:
        from mcts.training.sft import SFTSettings, train_lora

        if args.limit is not None:
            keep = [t["id"] for t in trajectories if t["valid"] and t["id"] in train][: args.limit]
            train = set(keep)
        overrides = {
            k: v
            for k, v in (("epochs", args.epochs), ("lr", args.lr), ("lora_r", args.rank))
            if v is not None
        }
        settings = SFTSettings(
            seed=args.seed, max_steps=args.max_steps, max_length=args.max_length, **overrides
        )
        try:
            summary = train_lora(
                trajectories,
                args.base,
                args.out,
                settings,
                ids=train,
                resume=args.resume,
                progress=not args.no_progress,
            )
        except (ValueError, RuntimeError, OSError) as exc:
            return _err(str(exc))
    print(json.dumps(summary, indent=1))
    # The option ranker's curve sits beside the retriever's in the same folder.
    curve = "option_ranker_loss.png" if args.mode == "options" else "loss.png"
    print(f"adapter: {args.out} (loss curve: {Path(args.out) / curve})")
    return 0


def cmd_split(args: argparse.Namespace) -> int:
    from mcts.training.split import SPLIT_FILE, write_part

    try:
        n = write_part(args.questions, args.part, args.out, args.split or SPLIT_FILE)
    except (OSError, ValueError, KeyError) as exc:
        return _err(str(exc))
    print(f"{n} {args.part} questions -> {args.out}")
    return 0
