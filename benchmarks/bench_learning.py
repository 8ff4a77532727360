"""Does colbench's training pipeline make a tiny model better at a real env's held-out tasks?

Two real envs (``--env``), each from a random tiny Llama (4 layers x 128, tied input and
output embeddings, a word-level tokenizer over the oracle's texts), on CPU: collect the
scripted oracle on the train split, fine-tune with ``rft``, evaluate on held-out tasks (one
episode per task, success with its 95% Wilson interval from ``colbench.stats``), run
``online-grpo`` from that checkpoint rewarded by success, evaluate again, and run the
ablations from the same seed and checkpoint, each changing one setting of the main run: the
horizon curriculum (off: the last stage's turn budget from the first step), cross-policy
sampling (p = 0.25 against a stale snapshot) and task normalisation (off / env).

**BabyAI** (``--env babyai``, the default): four single-room level families (GoToRedBall,
GoToRedBallGrey, GoToObj, OpenDoor) under colbench's protocol. Train: the env's train split
(250 seeds per level); held out: seeds 2,000,000-2,000,199 of each level (800 tasks, seeds
no split plays: new layouts of the same missions). Evaluations sample at temperature 1 (the
rollouts' decoding, and AgentGym-RL's evaluation setting), 10 turns, 12 tokens per message.
``rft`` 200 steps; RL 64 steps with four updates per rollout batch of 4 tasks x 8 episodes
(``rl_batch`` 8), learning rate 5e-4 and TRL's per-episode loss (``loss_type: grpo``). The
main run has no horizon curriculum (the ablations flip one setting each). Measured (seed 0,
2 cores, 22 minutes end to end with ``--jobs 2``)::

    after rft (SFT):         61.3% [57.8, 64.6]  (490/800)
    after online RL (main):  70.5% [67.2, 73.6]  (564/800)
    verdict: better: the 95% intervals do not overlap

    run                      curriculum      p task norm  rollout success  held-out success
    main                     off          0.00 off        0.63 -> 0.72      70.5% [67.2, 73.6]
    curriculum on            on           0.00 off        0.49 -> 0.70      61.9% [58.5, 65.2]
    cross-policy p=0.25      off          0.25 off        0.60 -> 0.63      58.1% [54.7, 61.5]
    task normalisation env   off          0.00 env        0.62 -> 0.79      70.5% [67.2, 73.6]

What the rows say:

* The curriculum (32 steps at 5 turns, then 10) spends half the run on episodes cut at 5
  turns, which lose about a fifth of the successes 10 turns allow (rollout success 0.49
  against 0.63 at the start), and ends where it began.
* Cross-policy sampling against a stale snapshot (refreshed every 21 steps) holds rollout
  success back (0.60 -> 0.63) and ends below the start: a quarter of the turns come from an
  older policy, corrected by a clipped importance ratio.
* With one env, task normalisation is one z-score over the whole batch's advantages
  (weighted by loss tokens): a small shift and a rescaling, which Adam mostly undoes. The
  two runs diverge (the same actions in 54 of the 800 held-out episodes) and end at the
  same count by coincidence.

Earlier measurements on these levels: TRL's default loss (``dapo``: a mean over every token of
the batch) lets a failed 10-turn episode outweigh eight 1-turn successes: from 500 ``rft``
steps, at learning rate 5e-4 with four updates per batch, 64 steps took greedy held-out
success from 60.5% to 8.0% (1e-3: 19.0%). With the curriculum, 128 ``grpo`` steps collapsed
after about 50 into messages that repeat "to" up to the token cap. The mission-reading
families (GoToLocal, PickupLoc, GoToObjDoor) did not learn: 500-1,200 ``rft`` steps left the
model writing one object whatever the mission named. (Sampled figures measured before
commit 3950402 are not comparable: ``hf:`` replayed the same random numbers on every
unseeded call.)

**TextCraft** (``--env textcraft``) under ``--protocol agentgym`` (AgentGym's task indices;
test: indices 0-99, all depth 1):

1. **Collect** the oracle once on the whole train split (indices 100-543, goals of depth
   1-4; 428 of 444 solved).
2. **Fine-tune**: the tokenizer also learns the recipe book as the game writes it (item
   names, goal lines, crafting commands: the game's lexicon, as a real model's tokenizer
   would know it); ``rft`` for 600 steps on the oracle's successful episodes.
3. **Evaluate** on the test split (indices 0-99): greedy decoding, a turn budget of 10 (the
   protocol's is 20; the oracle solves every test goal in 2-4) and 40 tokens per message.
4. **Online RL** on the train tasks of depth 1 (indices 100-124), 16 steps of 4 tasks x 8
   episodes at learning rate 2e-4, one update per batch, TRL's default loss (5e-4 and 1e-3
   made held-out success fall), then the same evaluation.

Measured (seed 0, under other test load): after ``rft`` 13.0% [7.8, 21.0] (13/100); after
online RL 12.0% [7.0, 19.8], and 12-13% in every ablation row: the intervals overlap. Only 8
of the main run's 64 groups had mixed rewards (the start solves about 4% of its
temperature-1 rollouts), and the test failures are mostly a wrong first action: an
ingredient of a train recipe learnt by heart, not the goal's line read among the
distractors, which RL on train tasks (where the recipe learnt by heart is right) cannot
correct. Stages took 9 minutes (rft), 12-32 minutes per RL run and 1-2 per evaluation.

Everything is cached under ``--workdir`` (the oracle data, the tiny model, the fine-tuned
checkpoint, each RL run and each evaluation), so a rerun, or one with other RL settings,
reuses what it can. The RL runs are shared among ``--jobs`` processes (default 2, one per
core). ``--quick`` runs every stage at toy sizes (a smoke test of the script).

Usage: ``python benchmarks/bench_learning.py [--env babyai|textcraft] [--quick]
[--workdir DIR] [--seed 0] [--runs main,...] [--jobs 2]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_online_rl import rewards_by_step  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Sizes:
    """How big each stage is.

    Parameters
    ----------
    train, rl_train, test:
        The agentgym index splits the oracle is collected on, online RL plays, and the
        evaluations run (``N-M``: indices N to M inclusive; ``test``: 0-99).
    layers, hidden:
        The tiny Llama's shape.
    sft_steps, sft_lr, sft_max_length:
        ``rft``'s optimiser steps, learning rate and longest training sequence.
    rl_steps, rl_lr, groups, generations, rl_max_tokens:
        ``online-grpo``'s optimiser steps, learning rate, groups (tasks) per step, episodes
        per group and longest agent message.
    horizon_stages, steps_per_stage:
        The curriculum of the runs that have it on.
    rl_batch, loss_type:
        Episodes per optimiser step (None: the whole step's rollouts, one update per batch
        of ``groups x generations`` episodes; fewer makes several updates per batch), and
        TRL's ``loss_type``: ``dapo`` (TRL's default) averages over every token of the batch,
        so a long failed episode weighs as much as many short successes; ``grpo`` averages
        each episode's tokens first, so every episode weighs the same.
    eval_max_tokens, eval_max_turns, eval_temperature:
        The evaluations' longest agent message (well past the oracle's, about 20 words, so
        that a rambling model costs little time), turn budget (None: the protocol's, 20) and
        sampling temperature (0: greedy).
    """

    train: str
    rl_train: str
    test: str
    layers: int
    hidden: int
    sft_steps: int
    sft_lr: float
    sft_max_length: int
    rl_steps: int
    rl_lr: float
    groups: int
    generations: int
    rl_max_tokens: int
    horizon_stages: tuple[int, ...]
    steps_per_stage: int
    eval_max_tokens: int = 48
    eval_max_turns: int | None = None
    eval_temperature: float = 0.0
    rl_batch: int | None = None
    loss_type: str = "dapo"

    @property
    def step_episodes(self) -> int:
        """Episodes per optimiser step: ``rl_batch``, else the whole rollout batch."""
        return self.rl_batch or self.groups * self.generations

    def eval_dir(self, seed: int) -> str:
        """The folder name of an evaluation under these sizes (in the model's folder)."""
        decoding = "" if self.eval_temperature == 0 else f"-t{self.eval_temperature:g}"
        return f"eval-{self.test}{decoding}-seed{seed}"

    def label(self) -> str:
        return (f"{self.layers}x{self.hidden}-tied-sft{self.sft_steps}-lr{self.sft_lr:g}"
                f"-len{self.sft_max_length}")


#: The main RL run's settings unless a bench sets its own (``Bench.main``).
MAIN = {"curriculum": True, "cross_policy_prob": 0.0, "task_normalisation": "off"}
#: Cross-policy sampling's probability in the ablation of a main run without it.
CROSS_POLICY_P = 0.25


def ablations(main: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each ablation's name and its one change to ``main``: the horizon curriculum on/off,
    cross-policy sampling p = 0/0.25, task normalisation off/env."""
    curriculum = not main["curriculum"]
    p = 0.0 if main["cross_policy_prob"] else CROSS_POLICY_P
    norm = "off" if main["task_normalisation"] != "off" else "env"
    return {f"curriculum {'on' if curriculum else 'off'}": {"curriculum": curriculum},
            f"cross-policy p={p:g}": {"cross_policy_prob": p},
            f"task normalisation {norm}": {"task_normalisation": norm}}


@dataclasses.dataclass(frozen=True)
class Bench:
    """One real env the benchmark runs: its id, how its splits are played and its sizes.

    Parameters
    ----------
    key, title:
        ``--env``'s name for it, and how the report names it.
    env_id, env_kwargs:
        The env and the keyword arguments every stage makes it with.
    full, quick:
        The sizes of a real run and of ``--quick``.
    heldout_seed:
        BabyAI only: split ``heldout-N`` plays seeds ``heldout_seed`` to ``heldout_seed + N -
        1`` of every level (seeds no split of the env plays).
    extra_texts:
        Texts of the env's vocabulary that the oracle's episodes may never write, for the
        tiny tokenizer (None: none).
    main:
        The main RL run's settings (default :data:`MAIN`); each ablation flips one of them.
    """

    key: str
    title: str
    env_id: str
    env_kwargs: dict[str, Any]
    full: Sizes
    quick: Sizes
    heldout_seed: int | None = None
    extra_texts: Callable[[], list[str]] | None = None
    main: dict[str, Any] = dataclasses.field(default_factory=lambda: dict(MAIN))

    def runs(self) -> dict[str, dict[str, Any]]:
        """Every RL run's settings by name: the main run, then each ablation."""
        return {"main": dict(self.main)} | {
            name: self.main | change for name, change in ablations(self.main).items()}

    def split_kwargs(self, work: Path, split: str) -> tuple[str, dict[str, Any]]:
        """The split and env keyword arguments that play ``split`` (``heldout-N``: N held-out
        seeds per level, written as a task file under ``work``)."""
        if not split.startswith("heldout-") or self.heldout_seed is None:
            return split, dict(self.env_kwargs)
        from colbench.gyms.embodied.babyai.env import babyai_tasks
        from colbench.tasks import TaskSet

        levels = self.env_kwargs["levels"]
        seeds = range(self.heldout_seed, self.heldout_seed + int(split.split("-")[1]))
        path = work / f"heldout-{'+'.join(levels)}-{seeds.start}-{seeds.stop - 1}.jsonl"
        if not path.is_file():
            TaskSet("heldout", babyai_tasks("heldout", seeds, levels)).save(path)
        return "test", {k: v for k, v in self.env_kwargs.items() if k != "levels"} | {
            "tasks": str(path)}


def recipe_book_texts() -> list[str]:
    """TextCraft's recipe book as the game writes it: every item's name, its goal line and
    every crafting command."""
    from colbench.gyms.craft.recipes import display_name, load_recipe_book

    book = load_recipe_book()
    items = sorted(set(book.recipes) | set(book.raw) | set(book.tags))
    return ([display_name(item) for item in items]
            + [f"Goal: craft {display_name(item)}." for item in items]
            + [recipe.command() for recipes in book.recipes.values() for recipe in recipes])


#: Four single-room BabyAI level families: go to the red ball (among grey distractors, or
#: coloured ones), go to the one object named, open the door named. The tiny model learns
#: them from the oracle within minutes; the mission-reading families (GoToLocal, PickupLoc,
#: GoToObjDoor) it does not (see the module docstring).
BABYAI_LEVELS = ["GoToRedBall", "GoToRedBallGrey", "GoToObj", "OpenDoor"]
BENCHES: dict[str, Bench] = {
    "babyai": Bench(
        key="babyai", title="BabyAI (colbench protocol), levels " + ", ".join(BABYAI_LEVELS),
        env_id="colbench/BabyAI-v0", env_kwargs={"levels": BABYAI_LEVELS},
        heldout_seed=2_000_000,
        main=MAIN | {"curriculum": False},
        full=Sizes(train="train", rl_train="train", test="heldout-200", layers=4, hidden=128,
                   sft_steps=200, sft_lr=3e-3, sft_max_length=1024, rl_steps=64, rl_lr=5e-4,
                   groups=4, generations=8, rl_max_tokens=12, horizon_stages=(5, 10),
                   steps_per_stage=32, eval_max_tokens=12, eval_max_turns=10,
                   eval_temperature=1.0, rl_batch=8, loss_type="grpo"),
        quick=Sizes(train="train", rl_train="train", test="heldout-1", layers=1, hidden=32,
                    sft_steps=4, sft_lr=2e-3, sft_max_length=512, rl_steps=2, rl_lr=1e-4,
                    groups=1, generations=2, rl_max_tokens=8, horizon_stages=(2, 4),
                    steps_per_stage=1, eval_max_tokens=8, eval_max_turns=3,
                    eval_temperature=1.0, loss_type="grpo")),
    "textcraft": Bench(
        key="textcraft", title="TextCraft (agentgym protocol)", env_id="colbench/TextCraft-v0",
        env_kwargs={"protocol": "agentgym"}, extra_texts=recipe_book_texts,
        full=Sizes(train="100-543", rl_train="100-124", test="test", layers=4, hidden=128,
                   sft_steps=600, sft_lr=3e-3, sft_max_length=1024, rl_steps=16, rl_lr=2e-4,
                   groups=4, generations=8, rl_max_tokens=32, horizon_stages=(5, 10),
                   steps_per_stage=8, eval_max_tokens=40, eval_max_turns=10),
        quick=Sizes(train="100-119", rl_train="100-105", test="0-5", layers=1, hidden=32,
                    sft_steps=4, sft_lr=2e-3, sft_max_length=512, rl_steps=2, rl_lr=1e-4,
                    groups=1, generations=2, rl_max_tokens=8, horizon_stages=(2, 4),
                    steps_per_stage=1, eval_max_tokens=8, eval_max_turns=3)),
}
DEFAULT_BENCH = "babyai"

@dataclasses.dataclass(frozen=True)
class Success:
    """Held-out success of one evaluation: successes of ``n`` episodes, one per task."""

    successes: int
    n: int
    ci95: tuple[float, float]
    seconds: float

    @property
    def rate(self) -> float:
        return self.successes / self.n if self.n else 0.0

    def text(self) -> str:
        lo, hi = self.ci95
        return (f"{100 * self.rate:5.1f}% [{100 * lo:4.1f}, {100 * hi:4.1f}]  "
                f"({self.successes}/{self.n})")


# -- the stages -----------------------------------------------------------------------------

def run_trainer(name: str, model: Path, out: Path, config: Any, data: Path | None = None
                ) -> None:
    """Train ``name`` into ``out`` (over a run cut short before) with the libraries' output
    in ``out/train.log``, as ``colbench train`` keeps it without ``-v``."""
    from colbench.trainers import train
    from colbench.trainers.quiet import library_output_to_log

    with library_output_to_log(out):
        train(name, model=f"hf:{model}", data=data, out=out, config=config, overwrite=True)


def collect_oracle(bench: Bench, work: Path, split: str, seed: int) -> Path:
    """The oracle's episodes on ``split`` (a finished collection is read back)."""
    from colbench.models.base import SamplingParams
    from colbench.trainers.collection import CollectConfig, collect

    out = work / f"oracle-{split}"
    if (out / "summary.json").is_file():  # written last: finished, read without its lock
        return out
    split, kwargs = bench.split_kwargs(work, split)
    collect(CollectConfig(env=bench.env_id, models=["scripted:oracle"], out=out, k=1,
                          split=split, seed=seed, env_kwargs=kwargs, progress=False,
                          sampling=SamplingParams(temperature=0.0)))
    return out


def lexicon(bench: Bench, data: Path) -> list[str]:
    """The texts the tiny tokenizer learns words from: the oracle's episodes (system prompt,
    observations, actions) and, for TextCraft, the recipe book as the game writes it: every
    item's name, its goal line (``Goal: craft X.``: the word-level tokenizer splits on spaces
    only, so ``X.`` is a word of its own) and every crafting command (ingredients end in
    ``,``). Without them a quarter of TextCraft's test goals read as ``<unk>``."""
    texts: list[str] = []
    for line in (data / "episodes.jsonl").read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        texts.append(record["system_prompt"] or "")
        for turn in record["turns"]:
            texts += [turn["observation"], turn["action"], turn["next_observation"] or ""]
    if bench.extra_texts is not None:
        texts += bench.extra_texts()
    return [text for text in texts if text.strip()]


def fine_tune(bench: Bench, work: Path, data: Path, sizes: Sizes, seed: int) -> Path:
    """A tiny Llama trained by ``rft`` on the oracle's data; reused when already trained."""
    from colbench.models.tiny import build_tiny_model
    from colbench.trainers.rft_config import RFTConfig

    out = work / f"sft-{data.name}-{sizes.label()}-seed{seed}"
    if (out / "colbench_train.json").is_file():
        return out
    # Tied embeddings: a test goal's words were mostly never written in the oracle's
    # actions, and an untied output layer only ever learns to push such words down, so the
    # model could not copy them from the observation (1 of 67 test tasks solved after 400
    # steps, against 9 of 73 tied).
    base = build_tiny_model(
        work / f"tiny-{data.name}-{sizes.layers}x{sizes.hidden}-tied-seed{seed}",
        layers=sizes.layers, hidden_size=sizes.hidden, seed=seed, texts=lexicon(bench, data),
        tie_embeddings=True, overwrite=True)
    config = RFTConfig(max_steps=sizes.sft_steps, learning_rate=sizes.sft_lr,
                       max_length=sizes.sft_max_length, per_device_train_batch_size=4,
                       gradient_checkpointing=False, logging_steps=max(1, sizes.sft_steps // 4),
                       seed=seed)
    run_trainer("rft", base, out, config, data=data)
    return out


def rl_config(bench: Bench, work: Path, sizes: Sizes, seed: int, setting: dict[str, Any]
              ) -> Any:
    """The ``online-grpo`` settings of one run (``setting``: MAIN with an ablation's change)."""
    from colbench.trainers.online_grpo_config import OnlineGRPOConfig

    # Without the curriculum the turn budget is the last stage's from the first step (not
    # the env's 20): the ablation then changes the schedule alone.
    stages = (list(sizes.horizon_stages) if setting["curriculum"]
              else [sizes.horizon_stages[-1]])
    split, kwargs = bench.split_kwargs(work, sizes.rl_train)
    return OnlineGRPOConfig(
        envs=[bench.env_id], env_kwargs=kwargs, split=split,
        max_steps=sizes.rl_steps, learning_rate=sizes.rl_lr, lr_scheduler_type="constant",
        per_device_train_batch_size=sizes.step_episodes,
        num_generations=sizes.generations, generation_batch_size=sizes.groups * sizes.generations,
        concurrency=sizes.groups * sizes.generations, temperature=1.0,
        max_new_tokens=sizes.rl_max_tokens, reward_metric="success", overlap=False,
        horizon_stages=stages, steps_per_stage=sizes.steps_per_stage,
        cross_policy_prob=setting["cross_policy_prob"], snapshot_every=max(1, sizes.rl_steps // 3),
        task_normalisation=setting["task_normalisation"], seed=seed,
        logging_steps=max(1, sizes.rl_steps), save_steps=None,
        trl_args={"loss_type": sizes.loss_type})


def online_rl(bench: Bench, work: Path, start: Path, sizes: Sizes, seed: int, name: str,
              setting: dict[str, Any]) -> Path:
    """An ``online-grpo`` run from ``start``; reused when the same run finished before."""
    config = rl_config(bench, work, sizes, seed, setting)
    key = "-".join(f"{k}={v}" for k, v in sorted(setting.items()))
    out = work / f"rl-{start.name}-{rl_label(sizes)}-{key}".replace(" ", "_")
    if not (out / "colbench_train.json").is_file():
        run_trainer("online-grpo", start, out, config)
    return out


def rl_label(sizes: Sizes) -> str:
    extra = ("" if sizes.rl_batch is None else f"-b{sizes.rl_batch}") + (
        "" if sizes.loss_type == "dapo" else f"-{sizes.loss_type}")
    return (f"{sizes.rl_train}-s{sizes.rl_steps}-lr{sizes.rl_lr:g}-g{sizes.groups}"
            f"x{sizes.generations}-t{sizes.rl_max_tokens}{extra}")


#: Conversations per forward pass in the evaluations (``hf:``'s ``batch_size``), with four
#: batches' worth of episodes in flight: on 100 BabyAI tasks, 16 per batch took 39 s where
#: 8 per batch with 16 in flight took 45-66 s.
EVAL_BATCH = 16


def evaluate_model(bench: Bench, work: Path, model: Path, sizes: Sizes, seed: int
                   ) -> Success:
    """Held-out success of ``model`` on ``sizes.test`` (one episode per task, at
    ``sizes.eval_temperature``); a finished evaluation in ``model``'s folder is read back."""
    from colbench.models.base import SamplingParams
    from colbench.runner import EvalConfig, evaluate
    from colbench.stats import wilson_interval

    out = model / sizes.eval_dir(seed)
    started = time.perf_counter()
    # summary.json is written last: a finished evaluation is read, not run again, which
    # would load the model to play nothing and record the episodes' own time in place of
    # the whole evaluation's (model loading included).
    if not (out / "summary.json").is_file():
        split, kwargs = bench.split_kwargs(work, sizes.test)
        evaluate(EvalConfig(
            env=bench.env_id, model=f"hf:{model}?batch_size={EVAL_BATCH}", out=out,
            split=split, seed=seed, env_kwargs=kwargs, concurrency=4 * EVAL_BATCH,
            progress=False,
            max_turns=sizes.eval_max_turns,
            sampling=SamplingParams(temperature=sizes.eval_temperature,
                                    max_tokens=sizes.eval_max_tokens)))
    seconds = time.perf_counter() - started
    records = [json.loads(line) for line in
               (out / "episodes.jsonl").read_text(encoding="utf-8").splitlines()]
    successes = sum(bool((r["metrics"] or {}).get("success")) for r in records)
    return Success(successes, len(records), wilson_interval(successes, len(records)), seconds)


# -- the report -----------------------------------------------------------------------------

def overlap_verdict(before: Success, after: Success) -> str:
    """Whether ``after`` beats ``before`` with non-overlapping 95% intervals, in words."""
    if after.ci95[0] > before.ci95[1]:
        return "better: the 95% intervals do not overlap"
    if after.ci95[1] < before.ci95[0]:
        return "WORSE: the 95% intervals do not overlap"
    return "intervals overlap: no significant difference"


def rl_metrics(run: Path) -> str:
    """The run's mean rollout success over its first and last quarter of steps."""
    steps = rewards_by_step(run)
    if not steps:
        return ""
    order = sorted(steps)
    k = max(1, len(order) // 4)

    def mean(chosen: Sequence[int]) -> float:
        rewards = [r["reward"] for s in chosen for r in steps[s] if r["reward"] is not None]
        return sum(rewards) / len(rewards) if rewards else 0.0

    return f"{mean(order[:k]):.2f} -> {mean(order[-k:]):.2f}"


def recorded_seconds(sft: Path, runs: Sequence[Path], sizes: Sizes, seed: int
                     ) -> dict[str, float]:
    """The seconds each training and evaluation took when it ran, as its files record them
    (``colbench_train.json``, ``summary.json``): a cached stage's cost, not this run's."""
    def seconds(path: Path) -> float:
        return float(json.loads(path.read_text(encoding="utf-8")).get("seconds") or 0.0)

    evaluations = [model / sizes.eval_dir(seed) / "summary.json"
                   for model in (sft, *runs)]
    return {"fine-tune": seconds(sft / "colbench_train.json"),
            "online RL": sum(seconds(run / "colbench_train.json") for run in runs),
            "evaluations": sum(seconds(path) for path in evaluations)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="toy sizes: checks that every stage runs (a few minutes)")
    parser.add_argument("--workdir", type=Path, default=None,
                        help="where data, checkpoints and runs are cached (default: "
                             "~/.cache/colbench/bench_learning)")
    parser.add_argument("--env", choices=sorted(BENCHES), default=DEFAULT_BENCH,
                        help=f"the real env to learn (default {DEFAULT_BENCH})")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--runs", default=None,
                        help="comma-separated online RL runs to train and evaluate (default: "
                             "the main run and every ablation of --env's bench); e.g. to fill "
                             "the cache "
                             "from two processes at once")
    # A process the benchmark starts for its share of the RL runs: it trains and evaluates
    # them into the cache and reports nothing (the fine-tuned model's evaluation is the
    # starting process's).
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--jobs", type=int, default=2,
                        help="online RL runs trained at once, each in a process of its own "
                             "(default 2: one per core of the machine it was sized for)")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error(f"--jobs: at least 1 process, got {args.jobs}")
    every = BENCHES[args.env].runs()
    chosen = every if args.runs is None else {
        name.strip(): every.get(name.strip()) for name in args.runs.split(",")}
    if any(setting is None for setting in chosen.values()):
        parser.error(f"--runs: unknown run(s) {[n for n, v in chosen.items() if v is None]}; "
                     f"choose from {', '.join(every)}")

    for key, value in {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
                       "TRL_EXPERIMENTAL_SILENCE": "1"}.items():
        os.environ.setdefault(key, value)
    from colbench.trainers.quiet import silence_library_bars

    silence_library_bars()
    import torch

    torch.set_num_threads(1)
    bench = BENCHES[args.env]
    sizes = bench.quick if args.quick else bench.full
    work = args.workdir or Path.home() / ".cache" / "colbench" / "bench_learning"
    work = work / bench.key / ("quick" if args.quick else "full")
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    timings: dict[str, float] = {}

    def timed(stage: str, fn: Any, *a: Any) -> Any:
        t = time.perf_counter()
        result = fn(*a)
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - t
        return result

    data = timed("collect", collect_oracle, bench, work, sizes.train, args.seed)
    sft = timed("fine-tune", fine_tune, bench, work, data, sizes, args.seed)
    runs: dict[str, dict[str, Any]] = {n: s for n, s in chosen.items() if s is not None}
    # The other processes train their share of the runs into the cache meanwhile (this one
    # evaluates the fine-tuned model first, then trains its own share); this one then reads
    # their checkpoints and evaluations back.
    shares = [list(runs)[i::args.jobs] for i in range(args.jobs)]
    others = [subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), *(["--quick"] if args.quick else []),
         "--workdir", str(work.parent.parent), "--env", bench.key, "--seed", str(args.seed),
         "--jobs", "1", "--worker",
         "--runs", ",".join(share)], stdout=subprocess.DEVNULL) for share in shares[1:] if share]
    before = (None if args.worker
              else timed("evaluate", evaluate_model, bench, work, sft, sizes, args.seed))

    def train_and_evaluate(name: str) -> tuple[Path, Success]:
        run = timed("online RL", online_rl, bench, work, sft, sizes, args.seed, name,
                    runs[name])
        return run, timed("evaluate", evaluate_model, bench, work, run, sizes, args.seed)

    results = {name: train_and_evaluate(name) for name in shares[0]}
    failed = [process.args for process in others if process.wait() != 0]
    if failed:
        print(f"online RL in another process failed: {failed}", file=sys.stderr)
        return 1
    # The other processes' runs are read back from the cache (trained here if one is not).
    results = {name: results.get(name) or train_and_evaluate(name) for name in runs}
    if before is None:
        return 0
    wall = time.perf_counter() - started

    print(f"{bench.title}, held-out split {sizes.test!r}; evaluation: "
          + ("greedy" if sizes.eval_temperature == 0 else "sampled")
          + f" (temperature {sizes.eval_temperature:g}), {sizes.eval_max_tokens} tokens per turn, "
          "one episode per task, 95% Wilson intervals")
    print(f"model: tiny Llama {sizes.layers} layers x {sizes.hidden}; rft {sizes.sft_steps} "
          f"steps on the oracle's {sizes.train} episodes; online-grpo on {sizes.rl_train}: "
          f"rollout batches of {sizes.groups} tasks x {sizes.generations} episodes, "
          f"{sizes.rl_steps} optimiser steps of {sizes.step_episodes} episodes, learning rate "
          f"{sizes.rl_lr:g}, loss {sizes.loss_type}")
    print(f"  after rft (SFT):        {before.text()}")
    if "main" in results:
        main_success = results["main"][1]
        print(f"  after online RL (main): {main_success.text()}")
        print(f"  verdict: {overlap_verdict(before, main_success)}")
    print()
    print(f"{'run':<24} {'curriculum':<11} {'p':>5} {'task norm':<10} "
          f"{'rollout success':<16} {'held-out success [95% CI]':<30} vs SFT")
    print(f"{'SFT (start)':<24} {'-':<11} {'-':>5} {'-':<10} {'-':<16} {before.text():<30} -")
    for name, (run, success) in results.items():
        setting = runs[name]
        print(f"{name:<24} {'on' if setting['curriculum'] else 'off':<11} "
              f"{setting['cross_policy_prob']:>5.2f} {setting['task_normalisation']:<10} "
              f"{rl_metrics(run):<16} {success.text():<30} "
              f"{overlap_verdict(before, success).split(':')[0]}")
    print()
    print("wall time of this invocation: "
          + ", ".join(f"{k} {v:.0f} s" for k, v in timings.items())
          + f"; total {wall:.0f} s (a cached stage takes no time; load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end)")
    recorded = recorded_seconds(sft, [run for run, _ in results.values()], sizes, args.seed)
    print("wall time each stage took when it ran: "
          + ", ".join(f"{k} {v:.0f} s" for k, v in recorded.items())
          + f"; total {sum(recorded.values()):.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
