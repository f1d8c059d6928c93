"""Write `tests/measured_search_vs_greedy.json` from finished eval runs (no model run).

    python scripts/measured_acceptance.py "demo (40: first 16 tuned on, 24 not)=runs/demo" \\
        "dev test split (68, report, trained policy)=runs/dev-test"

Each argument is `NAME=RUN_DIR`: the per-question F1 of the `single`, `fast` and
`constant` rows of that run's results (`results.jsonl` or its shards), on the questions all
three finished, with each question's facets (hops, gold path faithful, family in training;
`mcts.evaluation.facets`). The `why` notes of a name already in the file are kept (they
explain a claim not met; write them by hand, they are analysis).
`tests/test_search_acceptance.py` reads the file.
"""

from __future__ import annotations

import argparse
import json
import shlex
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "measured_search_vs_greedy.json"
METHODS = ("single", "fast", "constant")


FACETS = ("hops", "faithful", "family_in_train")


def per_question_f1(run: Path) -> tuple[list[str], dict[str, list[float]], dict[str, list[object]]]:
    f1: dict[str, dict[str, float]] = {m: {} for m in METHODS}
    facets: dict[str, dict[str, object]] = {}
    files = sorted(run.glob("results*.jsonl"))  # unsharded and every shard, as `eval --merge` reads them
    lines = [line for path in files for line in path.read_text(encoding="utf-8").splitlines()]
    if not lines:
        raise SystemExit(f"{run}: no results*.jsonl")
    for line in lines:
        row = json.loads(line)
        if row.get("method") in f1 and not row.get("error"):
            f1[row["method"]][row["question_id"]] = round(float(row["f1"]), 4)
            facets[row["question_id"]] = {k: row.get(k) for k in FACETS}
    order = [q for q in f1["single"] if all(q in f1[m] for m in METHODS)]
    by_facet = {k: [facets[q][k] for q in order] for k in FACETS}
    return order, {m: [f1[m][q] for q in order] for m in METHODS}, by_facet


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("runs", nargs="+", help="NAME=RUN_DIR")
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    old = json.loads(Path(args.out).read_text(encoding="utf-8")) if Path(args.out).is_file() else {}
    # The command as a shell would take it again (names hold spaces), and where the runs' own
    # commands are.
    command = "python scripts/measured_acceptance.py " + shlex.join(args.runs)
    data: dict[str, object] = {"_source": command + " (runs: docs/results.md)"}
    for spec in args.runs:
        name, _, run = spec.partition("=")
        questions, f1, facets = per_question_f1(Path(run))
        entry: dict[str, object] = {"questions": questions, "f1": f1, "facets": facets}
        if isinstance(old.get(name), dict) and old[name].get("why"):
            entry["why"] = old[name]["why"]
        data[name] = entry
        print(f"{name}: {len(questions)} questions, " + ", ".join(
            f"{m} {100 * sum(v) / max(len(v), 1):.1f}" for m, v in f1.items()))  # fmt: skip
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
