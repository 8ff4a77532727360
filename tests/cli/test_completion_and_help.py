"""Completion from the registries and help for every flag (issue 26): env ids, model kinds,
scripted agents, trainers and executors complete; ``colbench train --help`` lists the
trainers; no flag of any command lacks help text."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest

from colbench.cli.main import build_parser, main


def complete(cli_environ: dict[str, str], tmp_path: Path, line: str) -> list[str]:
    """What the shell would offer for ``line`` (argcomplete's hook, as bash runs it)."""
    pytest.importorskip("argcomplete")
    answer = tmp_path / "completions"
    env = dict(cli_environ, _ARGCOMPLETE="1", COMP_LINE=line, COMP_POINT=str(len(line)),
               _ARGCOMPLETE_STDOUT_FILENAME=str(answer), _ARGCOMPLETE_IFS="\n")
    result = subprocess.run([sys.executable, "-m", "colbench.cli.main"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    return answer.read_text().split()


@pytest.mark.parametrize("line, expected", [
    ("colbench evaluate colbench/Back", {"colbench/Backend-v0", "colbench/Backend-v1"}),
    ("colbench evaluate colbench/Backend-v0 --model ", {"openai:", "hf:", "scripted:",
                                                         "python:"}),
    ("colbench evaluate colbench-test/Guess-v0 --model scripted:",
     {"scripted:asker", "scripted:no-ask", "scripted:oracle", "scripted:random"}),
    ("colbench evaluate colbench/Backend-v0 --executor ", {"local"}),
    ("colbench train ", {"rft", "mt-dpo", "sweet-rl"}),
])
def test_completion_offers_registered_names(cli_environ, tmp_path, line, expected):
    offered = set(complete(cli_environ, tmp_path, line))
    assert expected <= offered, offered


def test_train_help_lists_the_trainers(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = capsys.readouterr().out
    trainers_line = next(line for line in out.splitlines() if line.startswith("trainers: "))
    assert {"rft", "mt-dpo", "sweet-rl"} <= set(trainers_line[len("trainers: "):].split(", "))


def parsers_of(parser: argparse.ArgumentParser, path: str):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from parsers_of(sub, f"{path} {name}")


def without_help(parser: argparse.ArgumentParser) -> list[str]:
    return [action.option_strings[0] if action.option_strings else action.dest
            for action in parser._actions
            if not isinstance(action, argparse._SubParsersAction)
            and (action.help is None or not str(action.help).strip())]


def test_every_flag_and_argument_has_help():
    missing = [f"{path}: {name}" for path, parser in parsers_of(build_parser(), "colbench")
               for name in without_help(parser)]
    assert missing == []


def test_every_trainers_flag_has_help():
    pytest.importorskip("trl", reason="trainers need colbench[train]")
    from colbench import registry
    from colbench.trainers.base import resolve_trainer
    from colbench.trainers.commands.train import trainer_parser

    missing = []
    for name in registry.trainers.names():
        trainer = resolve_trainer(name)
        parser = trainer_parser(name, trainer.config_class)
        missing += [f"train {name}: {flag}" for flag in without_help(parser)]
    assert missing == []
