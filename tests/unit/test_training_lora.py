"""LoRA SFT with TRL on trajectory ReAct text runs for real on a CPU with the bundled model."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("peft")
pytest.importorskip("trl")


@pytest.mark.slow
def test_lora_sft_trains_two_steps_and_loads_as_a_policy_adapter(fbqa_kb, fbqa_dir: Path, tmp_path: Path):
    import torch

    from mcts.agents.models import describe_adapter, load_model, resolve_policy_adapter
    from mcts.training.sft import SFTSettings, train_lora
    from mcts.training.split import read_jsonl
    from mcts.training.trajectories import build_all, read_trajectories

    build_all(read_jsonl(fbqa_dir / "dev.jsonl")[:3], fbqa_kb, tmp_path / "traj.jsonl")
    trajectories = read_trajectories(tmp_path / "traj.jsonl")
    assert trajectories
    settings = SFTSettings(max_steps=2, grad_accum=1, max_length=192, lora_r=4, lora_alpha=8, save_steps=1)
    out = tmp_path / "lora"
    summary = train_lora(trajectories, None, out, settings, progress=False)
    assert summary["steps"] == 2 and summary["final_loss"] is not None
    assert (out / "adapter_config.json").is_file() and (out / "loss.png").stat().st_size > 0
    assert any(out.glob("checkpoint-*"))  # resumable

    assert resolve_policy_adapter(str(out), None) == str(out.resolve())
    assert describe_adapter(str(out)) == "lora (LoRA)"
    base = load_model(None)
    tuned = load_model(None, adapter=str(out))
    assert tuned.model is not base.model
    ids = base.tokenizer("Thought: Find the entity", return_tensors="pt").input_ids
    with torch.no_grad():
        diff = (tuned.model(ids).logits - base.model(ids).logits).abs().max()
    assert diff > 0  # the adapter changed the policy; the shared base (the scorer's) did not move
    assert load_model(None) is base
