"""A missing optional extra gives every command the one-line install message, never a
traceback: commands whose env, model, trainer or server needs the extra, an env that imports
its simulator only at its first reset, and ``colbench list envs`` says which are not
installed. The extras are "removed" in a subprocess by an import blocker."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

BLOCKER = textwrap.dedent('''
    import os, sys
    BLOCKED = set(os.environ["COLBENCH_TEST_BLOCK"].split(","))

    class _Blocker:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _Blocker())
''')


@pytest.fixture(scope="module")
def blocked_cli(tmp_path_factory, cli_environ):
    site = tmp_path_factory.mktemp("blocker")
    (site / "sitecustomize.py").write_text(BLOCKER)
    work = tmp_path_factory.mktemp("work")

    def run(blocked: str, *args: str) -> subprocess.CompletedProcess[str]:
        env = dict(cli_environ, COLBENCH_TEST_BLOCK=blocked,
                   PYTHONPATH=f"{site}:{cli_environ['PYTHONPATH']}")
        return subprocess.run([sys.executable, "-m", "colbench.cli.main", *args], env=env,
                              cwd=work, capture_output=True, text=True, timeout=120)

    return run


@pytest.mark.parametrize("blocked, args, extra", [
    ("selenium", ["evaluate", "colbench/Frontend-v0", "--model", "scripted:oracle",
                  "--limit", "1"], "frontend"),
    ("selenium", ["play", "colbench/Frontend-v0"], "frontend"),
    ("selenium", ["describe", "colbench/Frontend-v0"], "frontend"),
    ("selenium", ["tasks", "colbench/Frontend-v0"], "frontend"),
    ("selenium", ["data", "build", "frontend", "--split", "test"], "frontend"),
    ("flask", ["evaluate", "colbench/WebShop-v0", "--model", "scripted:oracle"], "web"),
    ("minigrid", ["evaluate", "colbench/BabyAI-GoToLocal-v0", "--model", "scripted:oracle"],
     "embodied"),
    ("scienceworld", ["evaluate", "colbench/SciWorld-v0", "--model", "scripted:oracle",
                      "--limit", "1", "--no-progress"], "embodied"),
    ("torch", ["evaluate", "colbench/Backend-v0", "--model", "hf:gpt2", "--limit", "1"], "hf"),
    ("torch", ["train", "rft", "--model", "hf:x", "--data", "{run}", "--out", "o"], "train"),
    ("torch", ["models", "tiny", "tiny"], "hf"),
    ("transformers", ["models", "tiny", "tiny"], "hf"),
    ("flask", ["leaderboard", "serve"], "leaderboard"),
    ("flask", ["view", "{run}", "--no-open", "--port", "0"], "view"),
])
def test_every_command_gives_one_install_line(blocked_cli, mixed_run, blocked, args, extra):
    result = blocked_cli(blocked, *(arg.format(run=mixed_run) for arg in args))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert f"pip install 'colbench[{extra}]'" in lines[0]


def test_list_envs_marks_the_envs_whose_extra_is_missing(blocked_cli):
    result = blocked_cli("selenium,minigrid", "list", "envs", "--no-counts")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    frontend = result.stdout[result.stdout.index("  colbench/Frontend-v0"):].split(
        "\n  colbench")[0]
    assert "extra: frontend (NOT installed)" in frontend
    assert "pip install 'colbench[frontend]'" in frontend
    assert "Backend-v0  builtin\n      ColBench Backend Programming." in result.stdout


def test_an_unknown_module_of_no_extra_still_shows_its_traceback(blocked_cli, tmp_path):
    agent = tmp_path / "agent.py"
    agent.write_text("def reply(messages):\n    return 'x'\n")
    result = blocked_cli("yaml", "evaluate", "colbench/Backend-v0", "--model",
                         f"python:{agent}:reply", "--env-arg", "a=1")
    # pyyaml is a base dependency, not an extra: no install line is invented for it.
    assert "colbench[" not in result.stderr
