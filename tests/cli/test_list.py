"""``colbench list``: every name and where it comes from."""

from __future__ import annotations

import re

from colbench.cli.main import main


def section(out: str, kind: str) -> str:
    match = re.search(rf"^{kind}:\n((?:  .*\n?)*)", out, re.MULTILINE)
    assert match, f"no {kind} section in:\n{out}"
    return match.group(1)


def test_lists_envs_and_models_with_their_sources(capsys):
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    envs = section(out, "envs")
    assert re.search(r"^  colbench/Backend-v0\s+builtin$", envs, re.MULTILINE)
    assert re.search(r"^  colbench-test/Guess-v0\s+colbench tests$", envs, re.MULTILINE)
    models = section(out, "models")
    for kind in ("openai", "hf", "python", "scripted"):
        assert re.search(rf"^  {kind}\s+builtin$", models, re.MULTILINE), kind


def test_one_kind(capsys):
    assert main(["list", "models"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("models:\n") and "envs:" not in out


def test_a_plugin_env_shows_its_distribution(run_cli):
    result = run_cli(["list", "envs", "--no-counts"])
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if "colbench-test/Guess-v0" in x)
    assert "entry point helpers_env:GuessEnv (colbench-test-plugin)" in line


def test_an_empty_kind_says_why_and_where_plugins_register(capsys, monkeypatch):
    # colbench now ships an executor (dynamic-tp): empty the registry to see the note.
    from colbench import registry

    monkeypatch.setattr(registry.executors, "_entries", {})
    monkeypatch.setattr(registry.executors, "_entry_points", {})
    assert main(["list", "executors"]) == 0
    out = capsys.readouterr().out
    assert out == ("executors:\n  (none installed: execution plugins register in the "
                   "colbench.executors entry-point group)\n")


def test_simulators_list_each_suites_kinds(capsys):
    assert main(["list", "simulators"]) == 0
    names = re.findall(r"^  (\S+)", section(capsys.readouterr().out, "simulators"), re.MULTILINE)
    assert {"backend/builtin", "backend/model", "frontend/builtin", "frontend/model"} <= set(names)
