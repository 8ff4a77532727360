"""``colbench collect ENV_ID --model SPEC [--model SPEC...] --k K --out DIR``: training data."""

from __future__ import annotations

import argparse
from pathlib import Path

from colbench.cli.evaluate_cmd import (
    add_executor_arguments,
    add_protocol_argument,
    default_out_dir,
    env_kwargs_from_args,
    executor_options_from_args,
    run_settings_label,
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "collect", help="collect K episodes per task as training data",
        description="Run K episodes per task of ENV_ID and write them as a run directory that "
                    "'colbench train --data DIR' reads: episodes.jsonl, summary.json, and "
                    "tasks.jsonl (the tasks with their privileged data, for critics only). With "
                    "several --model, each episode draws one of them (seeded by --seed, the "
                    "task and the trial). Rerunning the same command resumes.")
    p.add_argument("env_id", metavar="ENV_ID", help="env id, e.g. colbench/Backend-v0")
    p.add_argument("--model", required=True, action="append", metavar="SPEC", dest="models",
                   help="model spec (repeatable: a pool of models, one drawn per episode)")
    p.add_argument("--k", type=int, default=4, metavar="K", help="episodes per task (default: 4)")
    p.add_argument("--split", default="train", help="task split (default: train)")
    p.add_argument("--tasks", metavar="NAME_OR_FILE", help="task set name or JSONL file")
    p.add_argument("--limit", "--num-tasks", dest="num_tasks", type=int, metavar="N",
                   help="collect on the first N tasks only")
    p.add_argument("--concurrency", type=int, default=8, metavar="C",
                   help="episodes in flight at once (default: 8)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="base seed of episodes and of the model draw (default: 0)")
    p.add_argument("--out", type=Path, metavar="DIR",
                   help="data directory (default: runs/<env>/collect/<split>, followed by "
                        "the settings that differ from evaluate's defaults, as evaluate names "
                        "its runs: e.g. train,protocol=agentgym,temperature=0.7)")
    p.add_argument("--simulator", metavar="SPEC",
                   help="simulated human: 'builtin' (default) or a model spec")
    p.add_argument("--max-turns", type=int, metavar="N", help="turn budget per episode")
    add_protocol_argument(p)
    p.add_argument("--temperature", type=float, default=1.0,
                   help="sampling temperature (default: 1.0, so that K episodes differ)")
    p.add_argument("--top-p", type=float, default=1.0, metavar="P",
                   help="nucleus sampling: draw from the likeliest tokens holding P of the "
                        "probability (default: 1.0, all)")
    p.add_argument("--max-tokens", type=int, default=1024, metavar="N",
                   help="most tokens the model may write per turn (default: 1024)")
    p.add_argument("--env-arg", action="append", metavar="KEY=VALUE",
                   help="extra env option (repeatable)")
    add_executor_arguments(p)
    p.add_argument("--env-url", metavar="URL",
                   help="play envs served by 'colbench serve-envs' at URL instead of making "
                        "them here (token: the COLBENCH_ENV_TOKEN environment variable); "
                        "episodes.jsonl is the same, and tasks.jsonl comes from the env made "
                        "here when its suite is installed and its tasks hash as the server's")
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import colbench  # noqa: F401  (registers env ids)
    from colbench.models.base import SamplingParams
    from colbench.runner.tables import summaries_table
    from colbench.trainers.collection import CollectConfig, collect

    env_kwargs = env_kwargs_from_args(args)
    sampling = SamplingParams(temperature=args.temperature, top_p=args.top_p,
                              max_tokens=args.max_tokens)
    # Named by its settings as evaluate's runs are, so that a sweep needs no --out.
    out = args.out or default_out_dir(args.env_id, "collect", args.split,
                                      run_settings_label(args, env_kwargs, sampling, None))
    config = CollectConfig(
        env=args.env_id, models=list(args.models), out=out, k=args.k, split=args.split,
        tasks=args.tasks, num_tasks=args.num_tasks, concurrency=args.concurrency,
        seed=args.seed, env_kwargs=env_kwargs, sampling=sampling,
        progress=not args.no_progress, executor=args.executor,
        executor_options=executor_options_from_args(args), env_url=args.env_url)
    summary = collect(config)
    print(summaries_table([(str(out), summary)]))
    if summary.counts.error:
        print(f"{summary.counts.error} episode(s) ended in an environment or model error and "
              "are left out of training")
    print(f"data: {out}  (colbench train NAME --model SPEC --data {out} --out DIR)")
    return 0
