"""`python -m mcts train-policy --mode options`: fold retrievers, states, then the ranker.

1. For stacking (see `mcts.training.option_states`), one relation retriever per fold of the
   train questions, each trained on the other folds (epoch chosen on the choose questions,
   as for the shipped one); about 1.5 min each, kept in `<states>.folds/` for `--resume`.
2. The states of the train questions (similarity from their fold's retriever) and of the
   choose questions (from the shipped retriever in `out`), LM-scored by the bundled model;
   resumable.
   Each policy also reads a case memory (`mcts.agents.case_memory`) of the train questions
   its retriever was trained on: the other folds' for a train question, all of them for a
   choose question; the latter is saved as `out/cases.jsonl`.
   With `relation_fit`, the first entity choice's options also carry `relation_fit` (what
   each span's entities could answer; `mcts.agents.policy_guided.span_relation_fit`).
3. The ranker (`mcts.training.option_ranker`), saved as `out/option_ranker.json` beside the
   retriever it was trained with.
4. One adapter per fold that never saw that fold's train questions, and the questions, in
   `<states>.folds/` (`mcts.training.fold_adapters`): a held-out single path on 300 questions.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any


def build_option_ranker(
    kb_spec: str,
    records: Sequence[dict[str, Any]],
    trajectories: Sequence[dict[str, Any]],
    split: dict[str, list[str]],
    out: str | Path,
    states_path: str | Path,
    *,
    folds: int = 2,
    resume: bool = False,
    relation_fit: bool = False,
    progress: Callable[[Iterable[Any]], Iterable[Any]] = lambda it: it,
) -> dict[str, Any]:
    import resource

    from kb.relation_ranker import default_ranker
    from kb.spec import open_kb
    from kb.tools import Toolbox
    from mcts.agents.case_memory import CaseMemory, save_cases
    from mcts.agents.guided_options import Priors
    from mcts.agents.models import load_model
    from mcts.agents.option_ranker import OptionRanker
    from mcts.agents.policy_guided import GuidedPolicy
    from mcts.agents.relation_adapter import AdaptedRanker, RelationAdapter, is_relation_adapter, prior_weight
    from mcts.training.cases import cases_from_records
    from mcts.training.fold_adapters import write_fold_adapters
    from mcts.training.option_ranker import train_option_ranker
    from mcts.training.option_states import collect, fold_of, read_states
    from mcts.training.retriever import retriever_config, train_retriever
    from mcts.training.trajectories import RecordingRanker

    if not is_relation_adapter(out):
        raise ValueError(f"{out}: train the relation retriever there first (--mode retriever)")
    started = time.perf_counter()
    train_ids, choose_ids = set(split["train"]), set(split["choose"])
    fold_dir = Path(f"{states_path}.folds")
    fold_folders = []
    config = retriever_config(out)  # the fold retrievers are trained as the one in `out` was
    for f in range(folds):
        folder = fold_dir / f"retriever-{f}"
        if not (resume and is_relation_adapter(folder)):
            others = {i for i in train_ids if fold_of(i, folds) != f}
            train_retriever(trajectories, others, choose_ids, folder, config, progress=False)
        fold_folders.append(folder)

    kb = open_kb(kb_spec)
    model = load_model(None)
    embedder = default_ranker()

    def cases_of(ids: set[str]) -> list[Any]:
        return cases_from_records(r for r in records if str(r["id"]) in ids)

    def policy_for(folder: Path | str, cases: list[Any]) -> tuple[Any, Any, Any]:
        recorder = RecordingRanker(AdaptedRanker(embedder, RelationAdapter.load(folder)))
        tools = Toolbox(kb, ranker=recorder)
        memory = CaseMemory(cases, lambda: embedder)
        policy = GuidedPolicy(model, tools, learned_features=True, cases=memory, relation_fit=relation_fit)
        return tools, recorder, policy

    per_fold = [
        policy_for(folder, cases_of({i for i in train_ids if fold_of(i, folds) != f}))
        for f, folder in enumerate(fold_folders)
    ]
    save_cases(cases_of(train_ids), out)
    shipped = policy_for(out, cases_of(train_ids))

    def make_policy(record: dict[str, Any]) -> tuple[Any, Any, Any]:
        rid = str(record["id"])
        return per_fold[fold_of(rid, folds)] if rid in train_ids else shipped

    wanted = [r for r in records if str(r["id"]) in train_ids | choose_ids and r.get("path")]
    counts = collect(wanted, make_policy, states_path, resume=resume, progress=progress)
    base = OptionRanker.from_priors(Priors(similarity=prior_weight(out) or Priors().similarity))
    train_rows, choose_rows = read_states(states_path, train_ids), read_states(states_path, choose_ids)
    summary = train_option_ranker(train_rows, choose_rows, base, out)
    # This invocation's collection (0 new questions on a resume) and the states trained on.
    summary["states"] = {**counts, "train_states": len(train_rows), "choose_states": len(choose_rows)}
    summary["relation_fit"] = relation_fit  # the first entity choice read what each span could answer
    summary["total_wall_s"] = round(time.perf_counter() - started, 1)
    summary["peak_rss_gb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    saved = OptionRanker.load(out)  # again, with the collection's figures beside the fit's
    OptionRanker(saved.weights, {"trained": summary}).save(out)
    # For a held-out single path on the train questions (`mcts.training.fold_adapters`).
    train_records = [r for r in records if str(r["id"]) in train_ids]
    written = write_fold_adapters(train_records, train_rows, base, summary["l2"], out, fold_dir, folds)
    summary["fold_adapters"] = [str(adapter) for adapter, _ in written]
    return summary
