"""How often the guided policy's greedy choice at the first relation step is the gold relation.

A cheap proxy for single-path accuracy, to choose how much the guided policy should trust
a relation retriever, measured on the `choose` questions of the split. For each question
the state is the start of its gold trajectory (SearchNodes on the topic entity, then
SearchGraphPatterns around it, ranked by the retriever under test); the policy's options
there are scored by the language model once, and the greedy pick is recomputed for
several weights of the similarity prior (`Priors.similarity`; the LM scores do not
depend on it). A pick is right when it is the one-hop query along the gold relation.

    python -m mcts.training.choice_eval --kb ../shared/data/fbqa/kb.nt.gz \\
        --questions ../shared/data/fbqa/dev.jsonl --part choose

Loads the bundled language model (one process), the embedder and the KB.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

WEIGHTS = (0.0, 2.0, 4.0, 8.0, 16.0)


def first_choice_accuracy(
    records: Sequence[dict[str, Any]],
    kb: Any,
    model: Any,
    rankers: dict[str, Any],
    weights: Sequence[float] = WEIGHTS,
) -> dict[str, dict[str, float]]:
    """{ranker name: {"w=<weight>": share of questions whose greedy pick is the gold hop}}."""
    from kb.tools import Toolbox
    from mcts.agents.guided_options import Priors
    from mcts.agents.policy_guided import GuidedPolicy
    from mcts.agents.query_builder import one_hop
    from mcts.training.trajectories import RecordingRanker, build_trajectory, path_patterns

    default = Priors().similarity
    out: dict[str, dict[str, float]] = {}
    for name, ranker in rankers.items():
        recorder = RecordingRanker(ranker)
        tools = Toolbox(kb, ranker=recorder)
        policy = GuidedPolicy(model, tools)
        right = dict.fromkeys(weights, 0)
        n = 0
        for rec in records:
            if not rec.get("path"):
                continue
            n += 1
            traj = build_trajectory(rec, tools, recorder)
            if len(traj.steps) < 2 or traj.steps[1].action is None:
                continue
            history = traj.steps[:2]
            direction, predicates = path_patterns(rec["path"])[0]
            ref = tools.flavour.short(tools.flavour.entity_iri(str(rec["topic_entities"][0]["mid"])))
            gold = [
                one_hop(ref, p).render()
                for p in history[1].observation.patterns
                if p.direction == direction and tuple(p.predicates) == predicates
            ]
            opts = policy.options(rec["question"], history)
            if not opts:
                continue
            lm = policy.lm_scores(rec["question"], history, opts)
            for w in weights:
                totals = []
                for o, s in zip(opts, lm, strict=True):
                    sim = dict(o.features).get("similarity", 0.0) if o.kind == "hop" else 0.0
                    totals.append(s + o.prior + (w - default) * sim)
                pick = opts[max(range(len(opts)), key=lambda i: totals[i])]
                right[w] += bool(gold) and pick.action.argument == gold[0]
        out[name] = {f"w={w:g}": round(right[w] / max(n, 1), 4) for w in weights} | {"n": n}
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mcts.training.choice_eval", description=__doc__)
    parser.add_argument("--kb", required=True)
    parser.add_argument("--questions", required=True)
    parser.add_argument("--part", default="choose", choices=["train", "choose", "test"])
    parser.add_argument(
        "--adapter", default=None, help="relation retriever folder (default: the shipped one)"
    )
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument(
        "--write", action="store_true", help="store the best weight for the trained retriever in its config"
    )
    args = parser.parse_args(argv)

    from kb.relation_ranker import default_ranker
    from kb.spec import open_kb
    from mcts.agents.models import BUNDLED_POLICY_ADAPTER, load_model
    from mcts.agents.relation_adapter import AdaptedRanker, RelationAdapter
    from mcts.training.split import load_split, read_jsonl, select

    records = select(read_jsonl(args.questions), load_split()[args.part])[: args.limit]
    base = default_ranker()
    adapter = RelationAdapter.load(args.adapter or BUNDLED_POLICY_ADAPTER)
    rankers = {"zero-shot": base, "trained": AdaptedRanker(base, adapter)}
    result = first_choice_accuracy(records, open_kb(args.kb), load_model(None), rankers)
    print(json.dumps({"part": args.part, **result}, indent=1))
    if args.write:
        trained = {float(k[2:]): v for k, v in result["trained"].items() if k.startswith("w=")}
        best = min(w for w, acc in trained.items() if acc == max(trained.values()))  # smallest among ties
        set_prior_weight(args.adapter or BUNDLED_POLICY_ADAPTER, best, {"part": args.part, **result})
        print(f"similarity_prior = {best:g} written to {args.adapter or BUNDLED_POLICY_ADAPTER}")
    return 0


def set_prior_weight(folder: Any, weight: float, evidence: dict[str, Any]) -> None:
    from pathlib import Path

    from mcts.agents.relation_adapter import CONFIG_FILE

    path = Path(folder) / CONFIG_FILE
    info = json.loads(path.read_text(encoding="utf-8"))
    info.update(similarity_prior=weight, similarity_prior_chosen_on=evidence)
    path.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    raise SystemExit(main())
