"""The public API: what ``from colbench import ...`` offers, and the README's example of it."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

import colbench

README = Path(__file__).resolve().parent.parent / "README.md"

#: Names a user reaches for first (issue 11): the verbs and the record types.
VERBS_AND_RECORDS = (
    "evaluate", "EvalConfig", "Runner", "load_model", "ChatModel", "BaseChatModel",
    "Completion", "SamplingParams", "EpisodeRecord", "TurnRecord", "Summary", "Task",
    "TaskSet", "make", "register_env", "env_ids", "TextEnv", "Outcome", "ScriptedAgent",
    "ColbenchError", "ConfigError", "MissingExtraError", "EnvironmentFailure", "registry",
)


def test_the_verbs_and_record_types_import_from_the_top_level():
    for name in VERBS_AND_RECORDS:
        assert name in colbench.__all__, name
    for name in colbench.__all__:
        assert getattr(colbench, name) is not None, name
    assert colbench.evaluate is __import__("colbench.runner", fromlist=["x"]).evaluate
    assert colbench.EpisodeRecord.__name__ == "EpisodeRecord"
    assert set(colbench.__all__) <= set(dir(colbench))


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        colbench.evaluat  # noqa: B018


def test_importing_colbench_loads_neither_the_runner_nor_the_models():
    code = ("import sys, colbench\n"
            "heavy = [m for m in ('colbench.runner', 'colbench.models', 'colbench.rundir', "
            "'torch', 'transformers') if m in sys.modules]\n"
            "print(heavy)\n"
            "colbench.EvalConfig\n"
            "print('colbench.runner' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[:2] == ["[]", "True"]


def readme_python_api_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "the README's Python API section has no python example"
    return match.group(1)


def test_the_readme_example_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(readme_python_api_example(), "README.md", "exec"), {})
    lines = printed.getvalue().splitlines()
    assert lines[0] == "2 episodes ok; success rate 1.0"
    assert len(lines) == 3 and all(line.endswith(" ok 1.0") for line in lines[1:])
    assert (tmp_path / "runs" / "oracle" / "episodes.jsonl").is_file()
