"""Subcommands that parts and plugins contribute through the ``colbench.commands`` entry points:
``--help`` lists them all; one whose extra is missing says which extra to install; a broken one
warns and the rest of the CLI works."""

from __future__ import annotations

import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from colbench.cli.main import CORE_COMMANDS, main

#: Every command of an installed colbench and its line in ``colbench --help``.
HELP_LINES = {
    "list": "list registered components and their origin",
    "describe": "show an env's spec",
    "tasks": "list an env's task ids",
    "evaluate": "evaluate a model on an env",
    "play": "play the agent yourself in the terminal",
    "show": "print episode transcripts of a run",
    "report": "compare runs in a table or an HTML page",
    "compare": "per-task win rate of a run against a reference run",
    "view": "browse runs in a local web page that updates while they run",
    "data": "build, import and list task sets",
    "models": "make a tiny random chat model for offline tries",
    "serve-envs": "serve every registered env over HTTP",
    "mcp": "serve one env's episode as MCP tools over stdio",
    "collect": "collect K episodes per task as training data",
    "leaderboard": "run a leaderboard server and manage its tokens",
    "submit": "send a run to a colbench leaderboard",
    "train": "train a model on collected episodes",
}

GOOD_COMMAND = '''
def add_parser(subparsers):
    p = subparsers.add_parser("hello", help="say hello from a plugin")
    p.add_argument("--to", default="world")
    p.set_defaults(func=run)


def run(args):
    print(f"hello {args.to}")
    return 0
'''

NEEDS_EXTRA = '''
from colbench.errors import MissingExtraError

raise MissingExtraError("the fancy command", "fancy", "fancylib")
'''

PLUGIN_MODULES = {
    "hello_command": GOOD_COMMAND,
    "fancy_command": NEEDS_EXTRA,
    "broken_command": "raise RuntimeError('boom at import')\n",
    "odd_commands": textwrap.dedent('''
        NOT_A_COMMAND = object()


        class RaisesInParser:
            @staticmethod
            def add_parser(subparsers):
                raise ValueError("no parser today")


        class WrongName:
            @staticmethod
            def add_parser(subparsers):
                subparsers.add_parser("not-its-name").set_defaults(func=lambda args: 0)
        '''),
}

PLUGIN_ENTRY_POINTS = """\
[colbench.commands]
hello = hello_command
fancy = fancy_command
broken = broken_command
gone = no_such_module_anywhere
list = hello_command
plain = odd_commands:NOT_A_COMMAND
raising = odd_commands:RaisesInParser
misnamed = odd_commands:WrongName
"""


@pytest.fixture
def plugin_site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A distribution ``colbench-command-plugins`` on sys.path that declares good, broken and
    extra-needing commands, as an installed third-party package would."""
    site = tmp_path / "site"
    site.mkdir()
    for module, source in PLUGIN_MODULES.items():
        (site / f"{module}.py").write_text(source)
        monkeypatch.delitem(sys.modules, module, raising=False)
    dist = site / "colbench_command_plugins-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: colbench-command-plugins\n"
                                   "Version: 1.0\n")
    (dist / "entry_points.txt").write_text(PLUGIN_ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(site))
    yield site
    for module in PLUGIN_MODULES:
        sys.modules.pop(module, None)


def help_rows(text: str) -> list[tuple[str, str]]:
    """(command, help) for each command row of ``colbench --help``."""
    return re.findall(r"^    (\S+)\s+(.+)$", text, re.MULTILINE)


def run_main(capsys: pytest.CaptureFixture[str], args: list[str]) -> tuple[int, str, str]:
    try:
        code = main(args)
    except SystemExit as done:  # argparse's --help and usage errors
        code = int(done.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_help_lists_the_cores_and_the_contributed_commands_in_a_stable_order(capsys):
    code, out, _ = run_main(capsys, ["--help"])
    assert code == 0
    rows = help_rows(out)
    assert dict(rows) == HELP_LINES
    names = [name for name, _ in rows]
    assert names[:len(CORE_COMMANDS)] == list(CORE_COMMANDS)
    assert names[len(CORE_COMMANDS):] == sorted(set(HELP_LINES) - set(CORE_COMMANDS))


def test_the_installed_executable_lists_them_too(run_cli):
    result = run_cli(["--help"])
    assert result.returncode == 0, result.stderr
    assert dict(help_rows(result.stdout)) == HELP_LINES
    assert result.stderr == ""


def test_a_plugin_command_runs_and_broken_ones_warn_naming_themselves(plugin_site, capsys):
    code, out, err = run_main(capsys, ["hello", "--to", "plugins"])
    assert (code, out) == (0, "hello plugins\n")
    warnings = err.splitlines()
    assert all(line.startswith("colbench: warning: ") for line in warnings), err
    expected = {
        "broken": "failed to load: RuntimeError: boom at import",
        "gone": "failed to load: ModuleNotFoundError",
        "list": "is ignored: colbench's core already provides it",
        "plain": "has no add_parser(subparsers)",
        "raising": "failed to build its parser: ValueError: no parser today",
        "misnamed": "did not add a subcommand named 'misnamed'",
    }
    for name, reason in expected.items():
        line = next((w for w in warnings if f"command {name!r}" in w), None)
        assert line is not None, f"no warning for {name}: {err}"
        assert reason in line and "colbench-command-plugins" in line, line
    assert not any("'hello'" in w or "'fancy'" in w for w in warnings)

    # The core's commands still work, and the core's `list` is not the plugin's.
    code, out, _ = run_main(capsys, ["list", "models"])
    assert code == 0 and out.startswith("models:\n")
    code, out, _ = run_main(capsys, ["--help"])
    listed = dict(help_rows(out))
    assert listed["hello"] == "say hello from a plugin"
    assert listed["list"] == HELP_LINES["list"]
    assert not {"broken", "gone", "plain", "raising", "misnamed"} & set(listed)


@pytest.mark.parametrize("args", [["fancy"], ["fancy", "--flag", "x", "--help"], ["fancy", "-h"]])
def test_a_command_whose_extra_is_missing_is_listed_and_names_the_extra(plugin_site, capsys,
                                                                       args):
    code, out, _ = run_main(capsys, ["--help"])
    assert dict(help_rows(out))["fancy"] == "(not installed: pip install 'colbench[fancy]')"
    code, out, err = run_main(capsys, args)
    assert code == 2 and out == ""
    *plugin_warnings, last = err.splitlines()
    assert all(line.startswith("colbench: warning: command 'broken'") or
               "'fancy'" not in line for line in plugin_warnings)
    assert last == ("colbench fancy: error: the fancy command needs the optional dependencies "
                    "of colbench[fancy] (could not import 'fancylib'); install them with: "
                    "pip install 'colbench[fancy]'")


def test_the_executable_gives_the_install_line_without_a_traceback(
        plugin_site, run_cli: Callable, cli_environ: dict[str, str]):
    result = run_cli(["fancy", "--anything"],
                     extra_env={"PYTHONPATH": f"{plugin_site}:{cli_environ['PYTHONPATH']}"})
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.splitlines()[-1].endswith("install them with: pip install "
                                                   "'colbench[fancy]'")
    assert "colbench: warning: command 'broken'" in result.stderr


BLOCK_EXTRAS = textwrap.dedent('''
    import importlib.abc, sys

    BLOCKED = {"torch", "transformers", "trl", "peft", "datasets", "accelerate", "flask",
               "sqlalchemy", "alembic", "psycopg", "werkzeug"}

    class NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)

    sys.meta_path.insert(0, NotInstalled())
    from colbench.cli.main import main
    sys.exit(main(sys.argv[1:]))
    ''')


@pytest.mark.parametrize(("args", "extra"), [
    (["train", "rft", "--model", "hf:x", "--data", "{fixture}", "--out", "{out}"], "train"),
    (["leaderboard", "token", "list", "--db", "sqlite:///{out}.db"], "leaderboard"),
    (["leaderboard", "serve", "--port", "0"], "leaderboard"),
])
def test_without_the_extras_every_command_is_listed_and_names_its_extra(
        args, extra, tmp_path, cli_environ):
    """The parts' commands build their parsers without their extras (help unchanged) and say
    which extra to install when run."""
    import subprocess

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "run_before_layout" / "collect"
    args = [a.format(fixture=fixture, out=tmp_path / "out") for a in args]
    listed = subprocess.run([sys.executable, "-c", BLOCK_EXTRAS, "--help"], capture_output=True,
                            text=True, env=cli_environ, timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert dict(help_rows(listed.stdout)) == HELP_LINES
    ran = subprocess.run([sys.executable, "-c", BLOCK_EXTRAS, *args], capture_output=True,
                         text=True, env=cli_environ, timeout=120)
    assert ran.returncode == 2, ran.stderr
    assert ran.stderr.strip().splitlines() == [ran.stderr.strip()]  # one line
    assert ran.stderr.strip().endswith(f"install them with: pip install 'colbench[{extra}]'")
