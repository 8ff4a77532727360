"""The README's first command evaluates an honest baseline (issue 14): a blind agent, never
one that reads hidden data, and it runs as written (on a few tasks here, to stay quick)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import colbench
from colbench.baselines import BlindAgent

README = Path(__file__).resolve().parents[1] / "README.md"


def first_command() -> list[str]:
    """The colbench command of the README's first bash block (after ``pip install ... &&``)."""
    block = re.search(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert block, "the README has no bash block"
    line = block.group(1).strip().split("&&")[-1]
    return shlex.split(line)


def test_the_first_command_evaluates_a_blind_baseline():
    argv = first_command()
    assert argv[:4] == ["python", "-m", "colbench", "evaluate"]
    env_id, model = argv[4], argv[argv.index("--model") + 1]
    assert model.startswith("scripted:")
    env = colbench.make(env_id)
    try:
        agent = env.unwrapped.scripted_agents[model.removeprefix("scripted:")]
    finally:
        env.close()
    assert issubclass(agent, BlindAgent) and not agent.sees_privileged
    text = README.read_text(encoding="utf-8")
    paragraph = text.split("```", 4)[4].split("\n\n")[1]
    assert "blind baseline" in paragraph and "scripted:oracle" in paragraph


def test_the_first_command_runs(tmp_path):
    argv = first_command()
    model = argv[argv.index("--model") + 1]
    argv = [sys.executable, *argv[1:], "--limit", "5", "--out", str(tmp_path / "run"),
            "--no-progress"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert model in done.stdout and "0.0 [" in done.stdout  # the blind floor: no success
