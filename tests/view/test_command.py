"""``colbench view`` as a user runs it: a real process serving the page until Ctrl-C, and clear
errors for bad input."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import urllib.request

import pytest

pytest.importorskip("flask", reason="colbench view needs colbench[view] (flask)")


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def start_view(cli_environ, *args: str) -> tuple[subprocess.Popen[str], str]:
    """``colbench view ARGS`` in the background, and the URL it says it serves."""
    # Ctrl-C is what stops it: give the child the default SIGINT handling even where this
    # suite runs in a background job, whose children inherit SIGINT ignored.
    process = subprocess.Popen([sys.executable, "-m", "colbench.cli.main", "view", *args],
                               env=cli_environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, preexec_fn=_default_sigint)
    line = process.stdout.readline()
    match = re.search(r"at (http://\S+/) ", line)
    if match is None:
        process.kill()
        raise AssertionError(f"no URL in {line!r}; stderr: {process.stderr.read()}")
    return process, match.group(1)


def test_serves_the_runs_until_interrupted(cli_environ, guess_mixed, backend_oracle):
    process, url = start_view(cli_environ, str(guess_mixed.parent), str(backend_oracle),
                              "--port", "0", "--no-open")
    try:
        assert url.startswith("http://127.0.0.1:")
        with urllib.request.urlopen(url + "api/runs", timeout=30) as response:
            runs = json.load(response)["runs"]
        assert {r["env"] for r in runs} == {"colbench-test/Guess-v0", "colbench/Backend-v0"}
        with urllib.request.urlopen(url, timeout=30) as response:
            assert b"colbench view" in response.read()
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 0, stderr
    assert "Traceback" not in stderr
    assert "2 run(s) found" in stderr


def test_an_empty_folder_is_served_and_said_to_be_empty(cli_environ, tmp_path):
    process, url = start_view(cli_environ, str(tmp_path), "--port", "0", "--no-open")
    try:
        with urllib.request.urlopen(url + "api/runs", timeout=30) as response:
            assert json.load(response)["runs"] == []
    finally:
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert "no runs there yet" in stderr


@pytest.mark.parametrize("args, message", [
    (["{missing}"], "not a directory"),
    (["{run}", "--port", "70000"], "--port must be from 0 to 65535"),
    (["{run}", "--poll", "0"], "--poll must be a positive number"),
])
def test_bad_input_is_named(run_cli, guess_mixed, tmp_path, args, message):
    words = [a.format(missing=tmp_path / "nowhere", run=guess_mixed) for a in args]
    result = run_cli(["view", *words, "--no-open"])
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_busy_port_is_named(cli_environ, run_cli, guess_mixed):
    process, url = start_view(cli_environ, str(guess_mixed), "--port", "0", "--no-open")
    try:
        port = url.rsplit(":", 1)[1].strip("/")
        result = run_cli(["view", str(guess_mixed), "--port", port, "--no-open"])
        assert result.returncode == 2
        assert f"cannot listen on 127.0.0.1:{port}" in result.stderr
        assert "--port 0" in result.stderr
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
