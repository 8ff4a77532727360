"""``colbench train NAME --model SPEC --data DIR --out DIR [--config FILE.yaml] [flags]``.

Without ``colbench -v``, the libraries' warnings, logs and progress bars stay off the terminal
(in ``OUT/train.log``), and one colbench bar follows the training steps
(:mod:`colbench.trainers.quiet`).

The flags after NAME depend on the trainer: each field of its config dataclass is one
(``colbench train NAME --help`` lists them with their help and defaults). A YAML file given
with ``--config`` sets the same fields; flags override it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

#: The command's own flags; a trainer's config fields may not reuse them.
OWN_FLAGS = {"--model", "--data", "--out", "--config", "--env", "--overwrite", "--help", "-h"}


def trainer_summaries() -> list[tuple[str, str]]:
    """``(name, source)`` of every registered trainer, read from the registry without
    importing any (a trainer's module imports torch and TRL)."""
    from colbench import registry

    return registry.trainers.sources()


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    trainers = trainer_summaries()
    p = subparsers.add_parser(
        "train", help="train a model on collected episodes",
        description="Train a model with a registered trainer (colbench list trainers) on data "
                    "from 'colbench collect'. Run 'colbench train NAME --help' for the trainer's "
                    "settings. Writes a checkpoint or a LoRA adapter, with a model card, that "
                    "'colbench evaluate ENV --model hf:OUT' runs.",
        usage="colbench train NAME --model SPEC --data DIR --out DIR [--config FILE.yaml] "
              "[--env ENV_ID] [--overwrite] [trainer flags]",
        epilog="trainers: " + (", ".join(
            name if source == "builtin" else f"{name} ({source})" for name, source in trainers)
            or "none installed"))
    p.add_argument("name", nargs="?", metavar="NAME",
                   help="trainer name (one of the trainers below, a plugin's) or module:Class")
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(func=run)


def trainer_parser(name: str, config_class: type, summary: str = "") -> argparse.ArgumentParser:
    """The parser of ``colbench train NAME``: the command's flags and the trainer's."""
    from colbench.trainers.config_io import add_config_arguments

    parser = argparse.ArgumentParser(
        prog=f"colbench train {name}", description=summary or None,
        epilog="Settings may also come from --config FILE.yaml (same names, with underscores); "
               "flags override the file.")
    parser.add_argument("--model", required=True, metavar="SPEC",
                        help="starting model: hf:PATH_OR_ID[?adapter=PATH&dtype=...], or a path")
    parser.add_argument("--data", action="append", type=Path, metavar="DIR",
                        help="data directory from 'colbench collect' (repeatable)")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR",
                        help="where the checkpoint or adapter is written")
    parser.add_argument("--config", type=Path, metavar="FILE.yaml",
                        help="YAML file of the trainer's settings")
    parser.add_argument("--env", metavar="ENV_ID",
                        help="the env the data must come from (refuse data of any other); "
                             "a trainer that plays envs (online-grpo) plays it")
    parser.add_argument("--overwrite", action="store_true",
                        help="train into --out even if it is not empty")
    add_config_arguments(parser, config_class, reserved=OWN_FLAGS)
    return parser


def run(args: argparse.Namespace) -> int:
    from colbench import registry
    from colbench.trainers.base import resolve_trainer

    if not args.name:
        names = ", ".join(registry.trainers.names()) or "none"
        print(f"usage: colbench train NAME --model SPEC --data DIR --out DIR [flags]\n"
              f"trainers: {names}\n'colbench train NAME --help' lists a trainer's flags",
              file=sys.stderr)
        return 2
    quiet = not getattr(args, "verbose", False)
    if quiet:  # before the trainer's libraries are imported: tqdm reads it then
        from colbench.trainers.quiet import silence_library_bars

        silence_library_bars()
    trainer_class = resolve_trainer(args.name)
    parser = trainer_parser(args.name, trainer_class.config_class,
                            getattr(trainer_class, "summary", ""))
    options = parser.parse_args(args.rest)
    if not quiet:
        return train_from_options(args.name, trainer_class, options)
    from colbench.trainers.quiet import library_output_to_log

    with library_output_to_log(options.out) as log:
        status = train_from_options(args.name, trainer_class, options)
    if log.is_file():
        print(f"  library warnings and logs: {log} ('colbench -v train ...' shows them)")
    return status


def train_from_options(name: str, trainer_class: type, options: argparse.Namespace) -> int:
    from colbench.trainers.api import train
    from colbench.trainers.config_io import build_config, flag_values, load_yaml

    file_values = load_yaml(options.config) if options.config else {}
    config = build_config(trainer_class.config_class, file_values, flag_values(options),
                          file_name=str(options.config) if options.config else "config file")
    result = train(name, model=options.model, out=options.out, data=options.data,
                   config=config, env=options.env, overwrite=options.overwrite)
    kind = "LoRA adapter" if result.adapter else "checkpoint"
    print(f"{name}: wrote a {kind} to {result.path}")
    for role, path in result.artefacts.items():
        print(f"  {role}: {path}")
    interesting = {k: v for k, v in result.metrics.items()
                   if k in ("train_loss", "train_runtime", "episodes", "pairs", "critic_pairs",
                            "actor_pairs", "critic_accuracy")}
    if interesting:
        print("  " + ", ".join(f"{k}={v}" for k, v in interesting.items()))
    print(f"evaluate it: colbench evaluate ENV_ID --model hf:{result.path}")
    return 0
