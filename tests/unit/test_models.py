"""Model loading: names from flags/env, the process-wide cache, the one-time conversion."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mcts.agents import models
from mcts.agents.models import (
    DEFAULT_MODEL,
    ModelLoadError,
    describe_defaults,
    load_model,
    resolve_model_names,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def test_names_come_from_arguments_then_env_then_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLICY_MODEL", raising=False)
    monkeypatch.delenv("SCORER_MODEL", raising=False)
    assert resolve_model_names(None, None) == (DEFAULT_MODEL, DEFAULT_MODEL)
    monkeypatch.setenv("SCORER_MODEL", "meta-llama/Llama-3.1-8B-Instruct")
    assert resolve_model_names(None, None) == (DEFAULT_MODEL, "meta-llama/Llama-3.1-8B-Instruct")
    assert resolve_model_names("/models/sft", "x/y") == ("/models/sft", "x/y")


def test_defaults_are_described_for_the_start_up_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLICY_MODEL", raising=False)
    monkeypatch.delenv("SCORER_MODEL", raising=False)
    text = describe_defaults()
    assert "smollm2-135m" in text and "same model" in text and "SCORER_MODEL" in text
    monkeypatch.setenv("SCORER_MODEL", "meta-llama/Llama-3.1-8B-Instruct")
    assert "meta-llama/Llama-3.1-8B-Instruct" in describe_defaults()


def test_bundled_aliases_resolve_to_one_model() -> None:
    for name in (None, "bundled", "smollm2-135m", " SmolLM2-135M "):
        assert models.is_bundled(name)
    assert not models.is_bundled("HuggingFaceTB/SmolLM2-135M-Instruct")


def test_missing_local_folder_is_a_clear_error() -> None:
    with pytest.raises(ModelLoadError, match="not found"):
        load_model("./no/such/model-folder")


def test_gguf_files_load_through_the_same_setting_or_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(ModelLoadError, match="model file not found"):
        load_model(str(tmp_path / "missing.gguf"))
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file")
    with pytest.raises(ModelLoadError, match="cannot load model .*GGUF"):
        load_model(str(bad), device="cpu")


def test_bad_dtype_is_rejected() -> None:
    with pytest.raises(ValueError, match="dtype"):
        load_model(device="cpu", dtype="float8")


def test_failed_conversion_leaves_no_cache_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import transformers

    monkeypatch.setenv("MCTS_KBQA_CACHE", str(tmp_path))

    def boom(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated crash mid-conversion")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", boom)
    with pytest.raises(RuntimeError, match="simulated"):
        models.ensure_bundled_converted()
    folder = tmp_path / "models"
    assert not models.converted_bundled_dir().exists()
    assert list(folder.iterdir()) == []  # the temporary folder is gone too


@pytest.mark.slow
def test_bundled_model_loads_once_and_is_shared() -> None:
    first = load_model()
    again = load_model("smollm2-135m", device="cpu", dtype="float32")
    assert again is first
    assert first.id == DEFAULT_MODEL and first.device == "cpu" and first.dtype == "float32"
    assert first.has_chat_template and first.max_context >= 2048
    assert not first.model.training
    assert (models.converted_bundled_dir() / "model.safetensors").is_file()
    assert first.tokenizer.pad_token_id is not None
