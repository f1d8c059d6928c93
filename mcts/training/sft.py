"""LoRA fine-tuning of the policy LM on trajectory ReAct text (the paper's setting), with TRL.

Each valid trajectory becomes one chat conversation (`messages`: system = tool
description, user = `Q: ...`, then one assistant turn `Thought/Action` and one user turn
`Observation` per step), exactly the prompt the ReAct and guided policies read.
`trl.SFTTrainer` trains a PEFT LoRA adapter on it (loss on the assistant turns where the
chat template marks them, else on the whole text). On a GPU this is the paper's recipe
for an 8B instruct model; on a CPU it runs for real with the bundled 135M model on a few
short examples (the test does two steps).

The adapter folder is what `mcts.agents.models.load_model(..., adapter=DIR)` loads. A
`loss.png` of the logged training loss is written beside it; `resume=True` continues
from the last checkpoint in the folder.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class SFTSettings:
    epochs: float = 2.0
    max_steps: int = -1  # > 0: stop after this many optimiser steps (tests, smoke runs)
    batch_size: int = 1
    grad_accum: int = 4
    lr: float = 2e-4
    max_length: int = 1024  # tokens per conversation (longer ones are cut)
    lora_r: int = 16
    lora_alpha: int = 32
    lora_dropout: float = 0.05
    seed: int = 0
    save_steps: int = 50
    logging_steps: int = 1


def conversations(
    trajectories: Sequence[dict[str, Any]], ids: set[str] | None = None
) -> list[dict[str, Any]]:
    return [
        {"messages": t["messages"]}
        for t in trajectories
        if t.get("valid") and t.get("messages") and (ids is None or t["id"] in ids)
    ]


def train_lora(
    trajectories: Sequence[dict[str, Any]],
    base: str | None,
    out: str | Path,
    settings: SFTSettings = SFTSettings(),
    *,
    ids: set[str] | None = None,
    resume: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """Train a LoRA adapter on `base` (bundled alias, folder or hub id); save it in `out`."""
    import torch
    from datasets import Dataset
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    from mcts.agents.models import default_device, model_source
    from mcts.training.plots import save_curve

    rows = conversations(trajectories, ids)
    if not rows:
        raise ValueError("no valid trajectories to train on")
    out = Path(out)
    started = time.perf_counter()
    source = model_source(base)
    tokenizer = AutoTokenizer.from_pretrained(source)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    device = default_device()
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype)
    config = SFTConfig(
        output_dir=str(out),
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps,
        per_device_train_batch_size=settings.batch_size,
        gradient_accumulation_steps=settings.grad_accum,
        learning_rate=settings.lr,
        max_length=settings.max_length,
        logging_steps=settings.logging_steps,
        save_steps=settings.save_steps,
        save_total_limit=2,
        seed=settings.seed,
        report_to=[],
        disable_tqdm=not progress,
        use_cpu=device == "cpu",
        bf16=device != "cpu",
        dataloader_num_workers=0,
    )
    lora = LoraConfig(
        r=settings.lora_r,
        lora_alpha=settings.lora_alpha,
        lora_dropout=settings.lora_dropout,
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj"],
        task_type="CAUSAL_LM",
    )
    trainer = SFTTrainer(
        model=model,
        args=config,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=lora,
    )
    has_checkpoint = resume and any(out.glob("checkpoint-*"))
    result = trainer.train(resume_from_checkpoint=True if has_checkpoint else None)
    trainer.model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    losses = [float(h["loss"]) for h in trainer.state.log_history if "loss" in h]
    save_curve(
        out / "loss.png", {"train loss": losses}, title="LoRA SFT on trajectories", xlabel="logged step"
    )
    summary = {
        "base": base or "smollm2-135m",
        "examples": len(rows),
        "steps": int(result.global_step),
        "final_loss": losses[-1] if losses else None,
        "wall_s": round(time.perf_counter() - started, 1),
        "settings": settings.__dict__,
    }
    (out / "training.json").write_text(
        json.dumps({**summary, "losses": losses}, indent=1) + "\n", encoding="utf-8"
    )
    return summary
