"""Discovery: ``colbench list envs`` (description, splits with task counts, extra and whether
it is installed, --env-arg keys, scripted agents, --json), ``colbench tasks`` and
``colbench describe``."""

from __future__ import annotations

import json

import pytest

from colbench.cli import env_info as env_info_module
from colbench.cli.env_info import describe_line, env_info
from colbench.cli.main import main


def test_env_info_of_the_test_env_counts_each_split(guess_env_id):
    info = env_info(guess_env_id)
    assert info.description == "Guess the secret number (tests only)."
    assert info.splits == {"test": 20, "train": 20}
    assert info.scripted_agents == ["asker", "no-ask", "oracle", "random"]
    assert info.env_args["num_tasks"] == 20 and info.env_args["fail_prob"] == 0.0
    assert "split" not in info.env_args and "tasks" not in info.env_args
    assert info.extra is None and info.installed


def test_list_envs_shows_the_rich_block_and_json(capsys, guess_env_id):
    assert main(["list", "envs", "--no-counts"]) == 0
    out = capsys.readouterr().out
    block = out[out.index(f"  {guess_env_id}"):].split("\n  colbench")[0]
    assert "      Guess the secret number (tests only).\n" in block
    assert "scripted agents: scripted:asker, scripted:no-ask, scripted:oracle" in block
    assert "--env-arg: " in block and "num_tasks=20" in block
    frontend = out[out.index("  colbench/Frontend-v0"):].split("\n  colbench")[0]
    assert "extra: frontend (installed)" in frontend
    assert "splits: test, train" in frontend
    assert main(["list", "envs", "--json", "--no-counts"]) == 0
    rows = {row["env_id"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["colbench/Backend-v0"]["extra"] is None
    assert rows["colbench/TextCraft-v0"]["extra"] == "craft"
    assert rows[guess_env_id]["env_args"]["fail_in"] == "step"


def test_an_env_whose_extra_is_missing_says_so(monkeypatch, capsys):
    monkeypatch.setattr(env_info_module, "missing_distributions",
                        lambda extra: ["scienceworld"] if extra == "embodied" else [])
    info = env_info("colbench/SciWorld-v0", counts=False)
    assert not info.installed
    assert info.problem == ("not installed: pip install 'colbench[embodied]' (missing "
                            "scienceworld)")
    # ScienceWorld's own three splits, none made or counted
    assert info.splits == {"test": None, "dev": None, "train": None}
    assert main(["list", "envs", "--no-counts"]) == 0
    out = capsys.readouterr().out
    block = out[out.index("  colbench/SciWorld-v0"):].split("\n  colbench")[0]
    assert "extra: embodied (NOT installed)" in block
    assert "pip install 'colbench[embodied]'" in block


def test_list_with_json_for_another_kind(capsys):
    assert main(["list", "models", "--json"]) == 0
    names = {row["name"] for row in json.loads(capsys.readouterr().out)}
    assert {"python", "scripted", "openai"} <= names


def test_describe_line_takes_the_first_sentence_of_the_description():
    doc = """## Description

    TextCraft: craft an item. More text
    here.

    ## Observation
    """
    assert describe_line(doc) == "TextCraft: craft an item."
    assert describe_line("One line only") == "One line only"
    assert describe_line(None) == ""


def test_tasks_lists_ids_with_a_filter(capsys, guess_env_id):
    assert main(["tasks", guess_env_id]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("guess-test-000  ") and len(lines) == 21
    assert lines[-1].startswith("20 task(s) in guess-test (sha256:")
    assert main(["tasks", guess_env_id, "--filter", "guess-test-01?", "--split", "test"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == [f"guess-test-{i:03d}"
                                                       for i in range(10, 20)]
    assert lines[-1].startswith("10 of 20 task(s)")
    assert main(["tasks", guess_env_id, "--filter", "007", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["id"] == "guess-test-007" and "prompt" in row


def test_describe_prints_the_spec(capsys, guess_env_id):
    assert main(["describe", "colbench/TextCraft-v0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("colbench/TextCraft-v0  (colbench.gyms.craft.env:TextCraftEnv)")
    assert "scripted agents: scripted:greedy, scripted:oracle, scripted:random" in out
    assert "## Action" in out and "## Reward" in out


def test_describe_a_family_member_shows_what_its_id_fixes(capsys):
    assert main(["describe", "colbench/BabyAI-GoToLocal-v0"]) == 0
    out = capsys.readouterr().out
    assert "registered with: level='GoToLocal'" in out or "registered with: " in out


@pytest.mark.parametrize("command", ["describe", "tasks"])
def test_an_unknown_env_is_a_clear_error(capsys, command):
    assert main([command, "colbench/Bakend-v0"]) == 2
    assert "unknown env 'colbench/Bakend-v0'; did you mean 'colbench/Backend-v0'" in \
        capsys.readouterr().err
