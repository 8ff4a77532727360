"""Trainer throughput, printed as ratios measured in one run.

1. Per-turn DPO. The same per-turn preference pairs (a history, then two candidate actions) are
   trained on by colbench's path (``tokenize_continuation`` rows with per-turn masks, through
   ``TurnMaskedDPOTrainer``) and by TRL's ``DPOTrainer`` used directly on the same pairs in its
   conversational format. Both see the same tokens (checked); the ratio is our training tokens
   per second over TRL's, taken as the median of interleaved repeats, each measured from the
   dataset to the end of training, in wall time and in the process's CPU time (which other
   processes on a shared machine disturb less). Target: >= 0.95.
2. Critic scoring. SWEET-RL's critic scores N candidates per turn (critic and reference
   forward passes): all N candidates of a turn in one batch against one candidate at a time.
   Printed as candidates per second and their ratio.

The model is a random Llama built here (``--hidden``, ``--layers``) with the tests' word-level
tokenizer, so nothing is downloaded. Usage:
``python benchmarks/bench_trainers.py [--device cpu|cuda] [--pairs 64] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

from colbench.models.tiny import CORPUS, build_tiny_tokenizer  # noqa: E402

WORDS = " ".join(CORPUS).split()


def build_model(path: Path, hidden: int, layers: int) -> Path:
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    tokenizer = build_tiny_tokenizer(path)
    config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=hidden, intermediate_size=4 * hidden,
        num_hidden_layers=layers, num_attention_heads=max(1, hidden // 64),
        num_key_value_heads=max(1, hidden // 128), max_position_embeddings=2048,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id, tie_word_embeddings=False)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(pad_token_id=tokenizer.pad_token_id,
                                               bos_token_id=tokenizer.bos_token_id,
                                               eos_token_id=tokenizer.eos_token_id)
    model.save_pretrained(str(path))
    return path


def sentence(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(low, high)))


def make_pairs(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """Per-turn pairs: a history of 1-3 earlier turns, then two different actions."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        history = [{"role": "system", "content": sentence(rng, 10, 20)},
                   {"role": "user", "content": sentence(rng, 20, 40)}]
        for _ in range(rng.randint(0, 2)):
            history += [{"role": "assistant", "content": sentence(rng, 5, 20)},
                        {"role": "user", "content": sentence(rng, 5, 20)}]
        chosen, rejected = sentence(rng, 5, 30), sentence(rng, 5, 30)
        pairs.append({"prompt": history,
                      "chosen": [{"role": "assistant", "content": chosen}],
                      "rejected": [{"role": "assistant", "content": rejected}]})
    return pairs


def dpo_args(out: str, steps: int, batch: int, device: str) -> Any:
    from trl import DPOConfig

    return DPOConfig(output_dir=out, max_steps=steps, per_device_train_batch_size=batch,
                     learning_rate=1e-5, gradient_checkpointing=False,
                     bf16=device.startswith("cuda"), use_cpu=device == "cpu",
                     report_to="none", logging_steps=10_000, save_strategy="no",
                     disable_tqdm=True, seed=0, max_length=None)


def run_dpo(kind: str, model_path: Path, pairs: list[dict[str, Any]], batch: int,
            device: str) -> tuple[float, float, int]:
    """Train once; return (wall seconds and process CPU seconds from the dataset to the end of
    training, tokens trained on)."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from colbench.trainers.tokenize import tokenize_continuation
    from colbench.trainers.trl_ext import TurnMaskedDPOTrainer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    policy = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    ref = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)
    steps = len(pairs) // batch
    with tempfile.TemporaryDirectory() as out:
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        started, cpu_started = time.perf_counter(), time.process_time()
        if kind == "colbench":
            rows = []
            for pair in pairs:
                prompt_ids, chosen_ids, chosen_turns = tokenize_continuation(
                    tokenizer, pair["prompt"], pair["chosen"])
                _, rejected_ids, rejected_turns = tokenize_continuation(
                    tokenizer, pair["prompt"], pair["rejected"])
                rows.append({"prompt_ids": prompt_ids, "chosen_ids": chosen_ids,
                             "rejected_ids": rejected_ids, "chosen_turns": chosen_turns,
                             "rejected_turns": rejected_turns})
            trainer = TurnMaskedDPOTrainer(model=policy, ref_model=ref,
                                           args=dpo_args(out, steps, batch, device),
                                           train_dataset=Dataset.from_list(rows),
                                           processing_class=tokenizer)
        else:
            from trl import DPOTrainer

            trainer = DPOTrainer(model=policy, ref_model=ref,
                                 args=dpo_args(out, steps, batch, device),
                                 train_dataset=Dataset.from_list(pairs),
                                 processing_class=tokenizer)
        trainer.train()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds = time.perf_counter() - started
        cpu_seconds = time.process_time() - cpu_started
        tokens = trainer._total_train_tokens
    return seconds, cpu_seconds, tokens


def check_same_tokens(model_path: Path, pairs: list[dict[str, Any]]) -> None:
    """Our rows and TRL's own tokenization of the pairs are the same token sequences."""
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import DPOTrainer

    from colbench.trainers.tokenize import tokenize_continuation

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    load = lambda: AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32)  # noqa: E731
    with tempfile.TemporaryDirectory() as out:
        trl_rows = DPOTrainer(model=load(), ref_model=load(), args=dpo_args(out, 1, 8, "cpu"),
                              train_dataset=Dataset.from_list(pairs),
                              processing_class=tokenizer).train_dataset
    for pair, trl_row in zip(pairs, trl_rows, strict=True):
        prompt_ids, chosen_ids, _ = tokenize_continuation(tokenizer, pair["prompt"],
                                                          pair["chosen"])
        _, rejected_ids, _ = tokenize_continuation(tokenizer, pair["prompt"], pair["rejected"])
        assert trl_row["prompt_ids"] == prompt_ids, "prompt tokens differ"
        assert trl_row["chosen_ids"] == chosen_ids, "chosen tokens differ"
        assert trl_row["rejected_ids"] == rejected_ids, "rejected tokens differ"


def bench_critic(model_path: Path, device: str, turns: int, candidates: int
                 ) -> tuple[float, float]:
    """Candidates scored per second: one turn's candidates per batch, then one at a time."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from colbench.trainers.sweet_rl_critic import CriticScorer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    critic = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).to(device)
    ref = AutoModelForCausalLM.from_pretrained(model_path, dtype=torch.float32).to(device)
    rng = random.Random(1)
    requests = [(make_pairs(1, seed=100 + t)[0]["prompt"],
                 [sentence(rng, 5, 30) for _ in range(candidates)]) for t in range(turns)]
    rates = []
    for batch_size in (candidates, 1):
        scorer = CriticScorer(critic.eval(), tokenizer, ref.eval(), batch_size=batch_size)
        scorer.score(*requests[0])  # warm-up
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        started = time.perf_counter()
        for prompt, actions in requests:
            scorer.score(prompt, actions)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        rates.append(turns * candidates / (time.perf_counter() - started))
    return rates[0], rates[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--pairs", type=int, default=64)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--turns", type=int, default=8, help="turns scored by the critic")
    parser.add_argument("--candidates", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default 1: steadier on a shared machine)")
    args = parser.parse_args(argv)

    import torch

    if args.device == "cpu":
        torch.set_num_threads(args.threads)

    with tempfile.TemporaryDirectory() as folder:
        model_path = build_model(Path(folder) / "model", args.hidden, args.layers)
        pairs = make_pairs(args.pairs)
        check_same_tokens(model_path, pairs)
        run_dpo("colbench", model_path, pairs[:args.batch * 2], args.batch, args.device)  # warm
        results: dict[str, list[tuple[float, float, int]]] = {"colbench": [], "trl": []}
        for repeat in range(args.repeats):
            order = ("colbench", "trl") if repeat % 2 == 0 else ("trl", "colbench")
            for kind in order:  # interleaved, alternating who goes first
                results[kind].append(run_dpo(kind, model_path, pairs, args.batch, args.device))
        tokens = {t for runs in results.values() for _, _, t in runs}
        if len(tokens) != 1:
            raise SystemExit(f"the two paths trained on different token counts: {results}")
        count = tokens.pop()
        print(f"per-turn DPO on {args.pairs} pairs ({count} tokens per run), batch {args.batch}, "
              f"model hidden {args.hidden} x {args.layers} layers, {args.device}, "
              f"{args.repeats} interleaved runs each:")
        rates = {}
        for kind, label in (("colbench", "colbench TurnMaskedDPOTrainer"),
                            ("trl", "TRL DPOTrainer directly")):
            wall = statistics.median(count / w for w, _, _ in results[kind])
            cpu = statistics.median(count / c for _, c, _ in results[kind])
            rates[kind] = (wall, cpu)
            print(f"  {label:30s} {wall:9.0f} tokens/s wall  {cpu:9.0f} tokens per CPU-second")
        print(f"  ratio colbench / TRL: {rates['colbench'][0] / rates['trl'][0]:.3f} wall, "
              f"{rates['colbench'][1] / rates['trl'][1]:.3f} CPU time  (target >= 0.95; on a "
              "shared machine the CPU-time ratio is the steadier one)")

        batched, single = bench_critic(model_path, args.device, args.turns, args.candidates)
        print(f"critic scoring, {args.turns} turns x {args.candidates} candidates:")
        print(f"  batched ({args.candidates} per batch) {batched:8.1f} candidates/s")
        print(f"  one at a time          {single:8.1f} candidates/s")
        print(f"  ratio batched / one at a time: {batched / single:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
