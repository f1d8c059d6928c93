"""Re-record the shipped example traces (examples/traces/) with the current code.

    python scripts/record_traces.py            # every trace in the manifest
    python scripts/record_traces.py --check    # exit 1 if the recordings are stale

Run it whenever the policy, prompts, cleaning or scorer change: tests/unit/test_shipped_traces.py
fails while `manifest.json`'s fingerprint differs from `agent_code_fingerprint()`. Each
entry is one `python -m mcts run` on the bundled demo KB and model, so the recordings are
exactly what a user gets from the CLI.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from mcts.agents.fingerprint import agent_code_fingerprint

ROOT = Path(__file__).resolve().parent.parent

MANIFEST = ROOT / "examples" / "traces" / "manifest.json"


def record(entry: dict) -> None:
    flags = [f"--{k.replace('_', '-')}={v}" for k, v in entry["settings"].items()]
    target = MANIFEST.parent / entry["file"]
    command = [sys.executable, "-m", "mcts", "run", "--kb", "demo", "--question", entry["question"], *flags]
    command += ["--trace", str(target)]
    print(" ".join(command[1:]), flush=True)
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only say whether the recordings are stale")
    args = parser.parse_args()
    manifest = json.loads(MANIFEST.read_text())
    current = agent_code_fingerprint()
    if args.check:
        stale = manifest["fingerprint"] != current
        print("stale" if stale else "up to date", manifest["fingerprint"], current)
        return int(stale)
    for entry in manifest["traces"]:
        record(entry)
    manifest["fingerprint"] = current
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
