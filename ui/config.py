"""How the app is started: host, port, KB and models from flags, then env, then defaults.

Flags: --host --port --kb --policy-model --scorer-model --policy-kind --policy-endpoint
--queue-size. Env: HOST, PORT (else GRADIO_SERVER_NAME/PORT, as set on Spaces), KB,
POLICY_MODEL, SCORER_MODEL, POLICY_KIND, POLICY_ENDPOINT. Defaults: 127.0.0.1:7860, the bundled demo KB, the bundled model.
Also the `spaces.GPU` guard: a real decorator on a ZeroGPU Space, a no-op elsewhere.
Knows nothing of Gradio components or the search.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

PolicyKind = Literal["guided", "react"]
POLICY_KINDS: tuple[PolicyKind, ...] = ("guided", "react")


@dataclass(frozen=True)
class AppConfig:
    host: str = "127.0.0.1"
    port: int = 7860
    kb: str = "demo"
    policy_model: str = ""  # "" = the bundled SmolLM2-135M-Instruct
    scorer_model: str = ""  # "" = the bundled model (the paper used Llama-3.1-8B-Instruct)
    policy_kind: PolicyKind = "guided"
    policy_endpoint: str = ""  # an OpenAI-compatible server for the policy, if any
    queue_size: int = 16  # waiting runs beyond this are refused with a message


def parse_config(argv: Sequence[str] | None = None, env: dict[str, str] | None = None) -> AppConfig:
    env = dict(os.environ if env is None else env)
    parser = argparse.ArgumentParser(description="MCTS-KBQA interactive demo (Gradio).")
    # Spaces sets GRADIO_SERVER_NAME=0.0.0.0; HOST/PORT win over Gradio's own variables.
    host = env.get("HOST") or env.get("GRADIO_SERVER_NAME") or AppConfig.host
    port = env.get("PORT") or env.get("GRADIO_SERVER_PORT") or AppConfig.port
    parser.add_argument("--host", default=host)
    parser.add_argument("--port", type=int, default=int(port))
    parser.add_argument(
        "--kb",
        default=env.get("KB", AppConfig.kb),
        help='"demo", an RDF file/folder, or an http(s) SPARQL endpoint',
    )
    parser.add_argument(
        "--policy-model", default=env.get("POLICY_MODEL", ""), help="HF id or local path; empty = bundled"
    )
    parser.add_argument(
        "--scorer-model", default=env.get("SCORER_MODEL", ""), help="HF id or local path; empty = bundled"
    )
    parser.add_argument(
        "--policy-kind", choices=POLICY_KINDS, default=env.get("POLICY_KIND", AppConfig.policy_kind)
    )
    parser.add_argument(
        "--policy-endpoint", default=env.get("POLICY_ENDPOINT", ""), help="OpenAI-compatible URL"
    )
    parser.add_argument("--queue-size", type=int, default=AppConfig.queue_size)
    args = parser.parse_args(argv)
    return AppConfig(
        host=args.host,
        port=args.port,
        kb=args.kb,
        policy_model=args.policy_model,
        scorer_model=args.scorer_model,
        policy_kind=args.policy_kind,
        policy_endpoint=args.policy_endpoint,
        queue_size=args.queue_size,
    )


def gpu_decorator(duration: int = 120) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`spaces.GPU(duration=...)` where the `spaces` package exists (Hugging Face Spaces), else identity."""
    try:
        import spaces  # type: ignore[import-not-found]
    except ImportError:
        return lambda fn: fn
    return spaces.GPU(duration=duration)


EXAMPLES_FILE = Path(__file__).resolve().parents[1] / "examples" / "questions.jsonl"
WIKIDATA_EXAMPLES_FILE = EXAMPLES_FILE.with_name("questions_wikidata.jsonl")
TRACES_DIR = Path(__file__).resolve().parents[1] / "examples" / "traces"


def bundled_traces(folder: Path = TRACES_DIR) -> list[str]:
    """File names of the recorded traces shipped in examples/traces/ (not its manifest)."""
    if not folder.is_dir():
        return []
    return sorted(p.name for p in folder.glob("*.json") if p.name != "manifest.json")


def bundled_trace_path(name: str, folder: Path = TRACES_DIR) -> Path | None:
    """The path of one shipped trace by file name; None for anything outside that folder."""
    if not name or name not in bundled_traces(folder):
        return None
    return folder / name


def example_records(path: Path) -> list[dict]:
    """The JSON objects of an example file, one per line; a missing file or a broken line
    costs only those examples, never the app."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            records.append(item)
    return records


def load_example_questions(path: Path = EXAMPLES_FILE, limit: int = 8) -> list[str]:
    """Questions for gr.Examples from examples/questions.jsonl ({"question": ...} per line)."""
    out: list[str] = []
    for item in example_records(path):
        text = item.get("question")
        if isinstance(text, str) and text.strip():
            out.append(text.strip())
        if len(out) >= limit:
            break
    return out
