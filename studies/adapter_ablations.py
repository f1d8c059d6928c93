"""Write the trained policy adapter with parts left out, to measure what each part does.

    python -m studies.adapter_ablations --out runs/ablations
    python -m mcts eval --kb demo --questions examples/questions.jsonl --methods single \\
        --preset small --seed 0 --policy-adapter runs/ablations/no-cases --out runs/demo-policy/no-cases

The adapter (`models/relation_retriever`) is three parts read from their own files: the
relation retriever (`relation_adapter.json` + `weights.npz`), the option ranker
(`option_ranker.json`) and the case memory (`cases.jsonl`). Each variant is a copy of the
folder without some of them; the loaders treat a missing file as a missing part, so no code
path is special to the ablation. The retriever cannot be left out alone (the ranker's
features are built on its scores), and the case memory is read only as ranker features, so
"no ranker" is "retriever only". The `*-base-weight` variants keep their parts but drop the
similarity-prior weight chosen with the retriever (`similarity_prior` in its config), so the
guided policy weighs relation similarity as the base policy does (`Priors.similarity`).
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from mcts.agents.case_memory import CASES_FILE
from mcts.agents.option_ranker import RANKER_FILE
from mcts.agents.relation_adapter import CONFIG_FILE

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Variant:
    left_out: tuple[str, ...] = ()  # files not copied
    base_weight: bool = False  # drop the similarity-prior weight chosen with the retriever


VARIANTS: dict[str, Variant] = {
    "full": Variant(),
    "no-cases": Variant((CASES_FILE,)),
    "retriever-only": Variant((CASES_FILE, RANKER_FILE)),
    "full-base-weight": Variant(base_weight=True),
    "retriever-only-base-weight": Variant((CASES_FILE, RANKER_FILE), base_weight=True),
}


def _drop_prior_weight(config: Path) -> None:
    info = json.loads(config.read_text(encoding="utf-8"))
    info.pop("similarity_prior", None)
    info.pop("similarity_prior_chosen_on", None)
    config.write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")


def write_variants(adapter: Path, out: Path) -> list[Path]:
    """One folder per variant under `out`; returns them in `VARIANTS` order."""
    written = []
    for name, variant in VARIANTS.items():
        target = out / name
        if target.exists():
            shutil.rmtree(target)
        target.mkdir(parents=True)
        for path in sorted(adapter.iterdir()):
            if path.is_file() and path.name not in variant.left_out:
                shutil.copy2(path, target / path.name)
        if variant.base_weight:
            _drop_prior_weight(target / CONFIG_FILE)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--adapter", default=str(ROOT / "models" / "relation_retriever"))
    parser.add_argument("--out", required=True, help="folder for the variants (one sub-folder each)")
    args = parser.parse_args(argv)
    adapter = Path(args.adapter)
    if not adapter.is_dir():
        parser.error(f"no adapter folder at {adapter}")
    for folder in write_variants(adapter, Path(args.out)):
        print(f"{folder.name}: {folder}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
