"""A reader that goes away (``colbench show DIR | head``) ends the command quietly: no
BrokenPipeError traceback, the shell's status for a closed pipe."""

from __future__ import annotations

import shlex
import subprocess
import sys

from colbench.cli import show_cmd
from colbench.cli.main import BROKEN_PIPE_STATUS, main


def test_show_piped_into_head_ends_quietly(run_cli, cli_environ, guess_env_id, tmp_path):
    out = tmp_path / "run"
    made = run_cli(["evaluate", guess_env_id, "--model", "scripted:asker", "--trials", "40",
                    "--out", str(out)])
    assert made.returncode == 0, made.stderr
    whole = run_cli(["show", str(out)])
    assert len(whole.stdout) > 4 * 65536  # far more than a pipe holds: head closes it early
    colbench = shlex.join([sys.executable, "-m", "colbench.cli.main"])
    result = subprocess.run(["bash", "-o", "pipefail", "-c",
                             f"{colbench} show {shlex.quote(str(out))} | head -n 2"],
                            env=cli_environ, capture_output=True, text=True, timeout=120)
    assert len(result.stdout.splitlines()) == 2
    assert result.stderr == ""  # no traceback, no "Exception ignored"
    assert result.returncode == BROKEN_PIPE_STATUS


def test_a_broken_pipe_in_any_command_returns_the_pipe_status(monkeypatch, capsys, mixed_run):
    def closed(*args, **kwargs):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(show_cmd, "format_episode", closed)
    assert main(["show", str(mixed_run)]) == BROKEN_PIPE_STATUS
    assert capsys.readouterr().err == ""
