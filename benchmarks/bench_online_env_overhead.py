"""Per-step env overhead of an online trainer: local envs pooled across steps, local envs
rebuilt every step, and envs in Ray actors, side by side on a backend env and a web env.

An online trainer (``colbench train online-grpo``) plays one run of episodes per training
step on one executor. What the envs cost a step, apart from the policy, is what this measures:
each "step" here is a run of ``--episodes`` episodes played by the scripted oracle (no model
time), at ``--concurrency``, on:

* ``local, rebuilt``: the local executor closing its envs at the end of each step (how every
  step used to start: a new sandbox pool, browser or JVM per step);
* ``local, pooled``: the local executor keeping its envs warm across steps
  (``LocalEnvExecutor(keep_warm=True)``, what ``online-grpo`` uses), each episode resetting
  its env;
* ``ray``: ``--executor ray``, one executor for every step, so its actors and their envs start
  once (skipped, with a line, without ray).

Printed per env and setting: the first step's seconds, the mean of the later steps, the envs
built in all, and each later-step mean as a ratio of the pooled one. ``colbench/Backend-v0``
runs answers in its sandbox; ``colbench/WebShop-v0`` drives Chromium (needs the ``[web]``
extra and Chromium).

Usage: ``python benchmarks/bench_online_env_overhead.py [--steps 4] [--episodes 8]
[--concurrency 4] [--envs colbench/Backend-v0,colbench/WebShop-v0] [--envs-per-actor 2]
[--num-cpus N] [--no-ray]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from colbench.runner import EnvExecutor, EvalConfig, LocalEnvExecutor, Runner
from colbench.runner.executor import EnvSpec

DEFAULT_ENVS = "colbench/Backend-v0,colbench/WebShop-v0"


@dataclass
class StepTimes:
    """One setting's steps on one env: each step's seconds and the envs built here."""

    seconds: list[float] = field(default_factory=list)
    built: int = 0

    @property
    def later_mean(self) -> float:
        """The mean seconds of the steps after the first (the steady state)."""
        later = self.seconds[1:] or self.seconds
        return statistics.fmean(later)


class BuildCounter:
    """Counts the envs :meth:`EnvSpec.make` builds in this process while installed."""

    def __init__(self) -> None:
        self.count = 0
        self._make: Callable[[EnvSpec], Any] = EnvSpec.make

    def __enter__(self) -> BuildCounter:
        make = self._make

        def counting(spec: EnvSpec) -> Any:
            self.count += 1
            return make(spec)

        EnvSpec.make = counting  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        EnvSpec.make = self._make  # type: ignore[method-assign]


def play_steps(env_id: str, executor: EnvExecutor, args: argparse.Namespace,
               root: Path) -> StepTimes:
    """``args.steps`` runs of ``args.episodes`` oracle episodes of ``env_id`` on one
    ``executor`` (closed at the end), timed one by one."""
    times = StepTimes()
    with BuildCounter() as built:
        try:
            for step in range(args.steps):
                config = EvalConfig(env=env_id, model="scripted:oracle",
                                    out=root / f"step-{step}", split="test",
                                    num_tasks=args.episodes, concurrency=args.concurrency,
                                    seed=step, progress=False)
                started = time.perf_counter()
                runner = Runner(config, executor=executor)
                try:
                    asyncio.run(runner.run())
                finally:
                    runner.close()
                times.seconds.append(time.perf_counter() - started)
        finally:
            executor.close()
    times.built = built.count
    return times


def settings(args: argparse.Namespace) -> list[tuple[str, Callable[[], EnvExecutor]]]:
    """The settings to compare, each with how to build its executor."""
    chosen: list[tuple[str, Callable[[], EnvExecutor]]] = [
        ("local, rebuilt", lambda: LocalEnvExecutor(keep_warm=False)),
        ("local, pooled", lambda: LocalEnvExecutor(keep_warm=True)),
    ]
    if not args.no_ray:
        from colbench.plugins.ray_executor import RayEnvExecutor

        actor_cpus = min(1.0, args.num_cpus * args.envs_per_actor / max(1, args.concurrency))
        chosen.append(("ray", lambda: RayEnvExecutor(envs_per_actor=args.envs_per_actor,
                                                     actor_cpus=actor_cpus)))
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4, help="runs (training steps) per setting")
    parser.add_argument("--episodes", type=int, default=8, help="episodes per step")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--envs", default=DEFAULT_ENVS, help="comma-separated env ids")
    parser.add_argument("--envs-per-actor", type=int, default=2)
    parser.add_argument("--num-cpus", type=int, default=os.cpu_count() or 2,
                        help="CPUs of the local Ray instance")
    parser.add_argument("--no-ray", action="store_true", help="leave the Ray setting out")
    args = parser.parse_args(argv)
    if args.steps < 2:
        parser.error("--steps must be at least 2 (the first step builds; later ones show "
                     "what a step costs once the envs exist)")
    if not args.no_ray:
        try:
            import ray
        except ImportError:
            print("bench_online_env_overhead: ray is not installed; leaving it out "
                  "(pip install 'colbench[ray]')")
            args.no_ray = True
        else:
            ray.init(num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    env_ids = [e.strip() for e in args.envs.split(",") if e.strip()]
    results: dict[str, dict[str, StepTimes]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-online-env-") as tmp:
            for env_id in env_ids:
                results[env_id] = {}
                for name, build in settings(args):
                    folder = Path(tmp) / env_id.replace("/", "_") / name.replace(", ", "-")
                    results[env_id][name] = play_steps(env_id, build(), args, folder)
    finally:
        if not args.no_ray:
            import ray

            ray.shutdown()

    print(f"online env overhead: {args.steps} steps of {args.episodes} oracle episodes, "
          f"concurrency {args.concurrency}; load average "
          f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for env_id, by_setting in results.items():
        pooled = by_setting["local, pooled"].later_mean
        print(f"{env_id}")
        for name, times in by_setting.items():
            ratio = "" if name == "local, pooled" else \
                f"   {name}/pooled = {times.later_mean / pooled:.2f}"
            where = "" if name != "ray" else " (here, to read the tasks; the actors build theirs)"
            print(f"  {name:<15} first step {times.seconds[0]:6.2f} s   later steps "
                  f"{times.later_mean:6.2f} s/step   envs built {times.built}{where}{ratio}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
