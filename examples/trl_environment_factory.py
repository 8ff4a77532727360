"""Train a model with TRL's GRPO on a colbench env through ``environment_factory``.

The model plays TextCraft by calling its tools (``get``, ``craft``, ``inventory``); TRL runs
each call against one env per rollout, masks the env's answers out of the loss and rewards
the rollout with the episode's score (``colbench.trl``). Without ``--model``, a tiny random
Qwen2-shaped model is built on the spot (no download) with the Qwen3 chat template TRL knows
how to read tool calls from: it says nonsense, so its reward stays 0, but every part of the
pipeline runs, on a CPU, in a minute or two.

Usage: ``python examples/trl_environment_factory.py [--model PATH] [--env colbench/TextCraft-v0]
[--steps 2] [--out DIR]`` (needs ``colbench[train]`` and the env's extra).
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", help="a model folder or hub id with a tool-calling chat "
                                        "template (default: a tiny random one built here)")
    parser.add_argument("--env", default="colbench/TextCraft-v0", help="a colbench env id")
    parser.add_argument("--steps", type=int, default=2, help="training steps (default 2)")
    parser.add_argument("--tasks", type=int, default=4, help="tasks in the train set")
    parser.add_argument("--out", type=Path, help="output folder (default: a temporary one)")
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from colbench.trl import environment_factory, task_rows

    work = Path(args.out or tempfile.mkdtemp(prefix="colbench-trl-"))
    model = args.model
    if model is None:
        from trl.chat_template_utils import qwen3_chat_template

        from colbench.models.tiny import build_tiny_model

        model = str(build_tiny_model(work / "tiny-model", family="qwen2", overwrite=True,
                                     chat_template=qwen3_chat_template))
    tokenizer = AutoTokenizer.from_pretrained(model)
    config = GRPOConfig(output_dir=str(work / "grpo"), max_steps=args.steps,
                        per_device_train_batch_size=2, num_generations=2,
                        max_completion_length=16, max_tool_calling_iterations=2,
                        logging_steps=1, report_to=[], save_strategy="no", use_cpu=True)
    trainer = GRPOTrainer(model=model, args=config, processing_class=tokenizer,
                          train_dataset=Dataset.from_list(task_rows(args.env,
                                                                    limit=args.tasks)),
                          environment_factory=environment_factory(args.env))
    trainer.train()
    for entry in trainer.state.log_history:
        if "reward" in entry:
            print(f"step {entry['step']}: reward {entry['reward']:.3f}, tool calls per "
                  f"rollout {entry.get('tools/call_frequency', 0):.2f}")
    print(f"trained {trainer.state.global_step} steps; output in {work}")


if __name__ == "__main__":
    main()
