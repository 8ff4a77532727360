"""online-grpo: does it learn, and what does overlapping rollouts with training buy?

1. **It learns.** A tiny random Llama (the tests' word-level tokenizer, nothing downloaded)
   trains with ``online-grpo`` in a two-turn synthetic env of our own, ``Digits``: the person
   asks for numbers twice, and the score is the share of the agent's words that are numbers
   (0-10, 100). A random policy scores about 0.1. The mean reward of the first steps and of the
   last steps is printed with 95% intervals (episodes clustered by group); the run is seeded,
   and ``--check-reproducible`` trains it twice and compares every episode's reward.
2. **Overlap.** The same training with a latency-bound policy (each model call waits
   ``--latency`` seconds, as a remote server would, before a tiny model generates), once in
   lockstep and once overlapped (the next step's rollouts run while the current step trains):
   episodes per second of wall time, and their ratio.

Usage: ``python benchmarks/bench_online_rl.py [--steps 40] [--latency 0.05]
[--check-reproducible] [--skip-learning] [--skip-overlap]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from colbench.env import Outcome, TextEnv  # noqa: E402
from colbench.models.tiny import build_tiny_model  # noqa: E402
from colbench.tasks import Task, TaskSet  # noqa: E402

ENV_ID = "colbench-bench/Digits-v0"
NUMBERS = {str(n) for n in range(11)} | {"100"}


def digit_share(text: str) -> float:
    """The share of the words of ``text`` that are numbers; 0 for an empty message."""
    words = text.split()
    return sum(w in NUMBERS for w in words) / len(words) if words else 0.0


class DigitsEnv(TextEnv):
    """## Description

    Say numbers (benchmark only). The person asks for numbers; the agent's words that are
    numbers (0-10, 100) count. Two turns by default.

    ## Reward

    ``score``: the share of number words over the agent's messages of the episode;
    ``success``: a score of at least 0.5.

    ## Termination

    Truncated and scored at ``max_turns``.
    """

    env_id: ClassVar[str] = "colbench-bench/Digits"
    default_max_turns: ClassVar[int] = 2

    def __init__(self, split: str = "train", tasks: Any = None, *, num_tasks: int = 16,
                 max_turns: int | None = None, render_mode: str | None = None) -> None:
        task_set = TaskSet(f"digits-{split}", [
            Task(id=f"digits-{split}-{i:02d}", suite="digits", split=split,
                 prompt=f"Task {i} : please write 2 3 or 7 , the numbers .")
            for i in range(num_tasks)])
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        self._shares: list[float] = []

    def system_prompt(self, task: Task) -> str:
        return "Answer with numbers ."

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._shares = []
        return task.prompt, {}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        self._shares.append(digit_share(action))
        if not last_turn:
            return Outcome(observation="more numbers ?")
        score = sum(self._shares) / len(self._shares)
        return Outcome(observation="thank you .", reward=score,
                       metrics={"score": score, "success": score >= 0.5})


def register() -> str:
    from colbench import register_env

    register_env(ENV_ID, f"{DigitsEnv.__module__}:DigitsEnv", source="bench_online_rl")
    return ENV_ID


# -- training -------------------------------------------------------------------------------

def learning_config(steps: int, seed: int, **overrides: Any) -> Any:
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    values: dict[str, Any] = dict(
        envs=[ENV_ID], max_steps=steps, per_device_train_batch_size=16, num_generations=8,
        learning_rate=3e-3, max_new_tokens=4, temperature=1.0, seed=seed, overlap=False,
        concurrency=8, logging_steps=max(1, steps), lr_scheduler_type="constant",
        task_normalisation="off")
    values.update(overrides)
    return OnlineGRPOConfig(**values)


def train_once(model_path: Path, out: Path, config: Any, trainer: str = "online-grpo") -> None:
    from colbench.trainers import train

    train(trainer, model=f"hf:{model_path}", out=out, config=config)


def rewards_by_step(out: Path) -> dict[int, list[dict[str, Any]]]:
    """Each step's samples as online-grpo wrote them (``rollouts/step-N/samples.jsonl``)."""
    steps: dict[int, list[dict[str, Any]]] = {}
    for path in sorted((out / "rollouts").glob("step-*/samples.jsonl")):
        step = int(path.parent.name.split("-")[1])
        steps[step] = [json.loads(line) for line in path.read_text().splitlines()]
    return steps


def window(steps: dict[int, list[dict[str, Any]]], chosen: Sequence[int]
           ) -> tuple[float, tuple[float, float], int]:
    """Mean reward of the steps ``chosen`` and its 95% interval, clustered by group."""
    from colbench.stats import bounded_interval

    values, clusters = [], []
    for step in chosen:
        for row in steps[step]:
            if row["reward"] is not None:
                values.append(float(row["reward"]))
                clusters.append((step, row["group"]))
    mean = sum(values) / len(values)
    return mean, bounded_interval(values, clusters), len(values)


def learning(args: argparse.Namespace, model_path: Path, work: Path) -> dict[str, Any]:
    out = work / "learn"
    started = time.perf_counter()
    train_once(model_path, out, learning_config(args.steps, args.seed))
    seconds = time.perf_counter() - started
    steps = rewards_by_step(out)
    k = max(1, min(args.window, len(steps) // 2))
    first = window(steps, sorted(steps)[:k])
    last = window(steps, sorted(steps)[-k:])
    result = {"steps": len(steps), "window": k, "first": first, "last": last,
              "seconds": seconds, "out": out}
    if args.check_reproducible:
        again = work / "learn-again"
        train_once(model_path, again, learning_config(args.steps, args.seed))
        second = rewards_by_step(again)
        result["reproducible"] = all(
            [r["reward"] for r in steps[s]] == [r["reward"] for r in second[s]] for s in steps)
    return result


# -- overlap --------------------------------------------------------------------------------

class LatencyBound:
    """A policy behind a slow link: every call waits ``latency`` seconds (without holding a
    thread, as an HTTP client would), then the wrapped model answers."""

    def __init__(self, inner: Any, latency: float) -> None:
        self.inner = inner
        self.latency = latency

    async def respond(self, conversation: Any, params: Any, context: Any) -> Any:
        await asyncio.sleep(self.latency)
        return await self.inner.respond(conversation, params, context)

    def close(self) -> None:
        self.inner.close()


def latency_trainer(latency: float) -> str:
    """Register an ``online-grpo`` whose policies are latency-bound; return its name."""
    from colbench.registry import trainers
    from colbench.trainers.base import register_trainer
    from colbench.trainers.online_grpo_trainer import OnlineGRPOTrainer, default_chat_model

    name = f"online-grpo-latency-{int(latency * 1000)}ms"
    if trainers.is_registered(name):
        return name

    def slow(role: str, module: Any, tokenizer: Any, config: Any) -> Any:
        return LatencyBound(default_chat_model(role, module, tokenizer, config), latency)

    register_trainer(type("LatencyBoundOnlineGRPO", (OnlineGRPOTrainer,),
                          {"name": name, "chat_factory": slow}))
    return name


def overlap(args: argparse.Namespace, model_path: Path, work: Path) -> dict[str, Any]:
    name = latency_trainer(args.latency)
    results = {}
    for mode in ("lockstep", "overlap"):
        config = learning_config(args.overlap_steps, args.seed, overlap=(mode == "overlap"),
                                 max_staleness=1)
        started = time.perf_counter()
        train_once(model_path, work / mode, config, trainer=name)
        seconds = time.perf_counter() - started
        episodes = sum(len(v) for v in rewards_by_step(work / mode).values())
        results[mode] = {"seconds": seconds, "episodes": episodes,
                         "episodes_per_second": episodes / seconds}
    results["ratio"] = (results["overlap"]["episodes_per_second"]
                        / results["lockstep"]["episodes_per_second"])
    return results


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps (learning)")
    parser.add_argument("--window", type=int, default=5, help="steps in each compared window")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--hidden", type=int, default=32, help="hidden size of the tiny Llama")
    parser.add_argument("--latency", type=float, default=0.05,
                        help="seconds each model call waits (overlap benchmark)")
    parser.add_argument("--overlap-steps", type=int, default=8)
    parser.add_argument("--overlap-hidden", type=int, default=256,
                        help="hidden size of the model of the overlap benchmark (training "
                             "must take time for overlap to hide the rollouts behind it)")
    parser.add_argument("--check-reproducible", action="store_true")
    parser.add_argument("--skip-learning", action="store_true")
    parser.add_argument("--skip-overlap", action="store_true")
    args = parser.parse_args(argv)

    import torch

    torch.set_num_threads(1)
    register()
    with tempfile.TemporaryDirectory(prefix="bench-online-rl-") as tmp:
        work = Path(tmp)
        if not args.skip_learning:
            model = build_tiny_model(work / "tiny", hidden_size=args.hidden, seed=args.seed)
            result = learning(args, model, work)
            (m0, (lo0, hi0), n0), (m1, (lo1, hi1), n1) = result["first"], result["last"]
            print(f"learning: {result['steps']} steps in {result['seconds']:.1f} s; mean "
                  f"reward (share of number words) over {result['window']} steps")
            print(f"  first steps: {m0:.3f}  95% CI [{lo0:.3f}, {hi0:.3f}]  ({n0} episodes)")
            print(f"  last steps:  {m1:.3f}  95% CI [{lo1:.3f}, {hi1:.3f}]  ({n1} episodes)")
            print(f"  learned: {'yes' if lo1 > hi0 else 'NO'} (intervals "
                  f"{'do not overlap' if lo1 > hi0 else 'overlap'})")
            if "reproducible" in result:
                print(f"  reproducible: {'yes' if result['reproducible'] else 'NO'} (same "
                      "seed, every episode's reward compared)")
        if not args.skip_overlap:
            model = build_tiny_model(work / "overlap-model", hidden_size=args.overlap_hidden,
                                     layers=4, seed=args.seed)
            result = overlap(args, model, work)
            for mode in ("lockstep", "overlap"):
                r = result[mode]
                print(f"{mode}: {r['episodes']} episodes in {r['seconds']:.2f} s = "
                      f"{r['episodes_per_second']:.1f} episodes/s")
            print(f"overlap / lockstep rollout throughput: {result['ratio']:.2f}x "
                  f"(model latency {args.latency * 1000:.0f} ms per call)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
