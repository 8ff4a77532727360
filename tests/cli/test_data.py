"""``colbench data``: importing published backend rows and listing cached sets."""

import json

import pytest

from colbench.cli.main import main

ROW = {
    "problem_description": "I need a function that works out a fee.\n\nThe signature of the "
                           "function is: def fee(amount)",
    "ground_truth": "def fee(amount):\n    if amount > 50:\n        return 5\n    return 2\n",
    "test_cases": ["fee(10)", "fee(60)", "fee(50)", "fee(51)", "fee(0)", "fee(100)", "fee(49)",
                   "fee(1)", "fee(70)", "fee(30)"],
}


@pytest.fixture()
def cache(tmp_path, monkeypatch):
    from colbench.gyms.backend import tasks

    monkeypatch.setenv("COLBENCH_CACHE", str(tmp_path / "cache"))
    tasks.clear_memory_cache()
    yield tmp_path / "cache"
    tasks.clear_memory_cache()


def test_import_then_load_by_name(tmp_path, cache, capsys):
    src = tmp_path / "published_test.jsonl"
    src.write_text("\n".join(json.dumps(ROW) for _ in range(1)) + "\n")
    assert main(["data", "import", "backend", str(src), "--name", "mine"]) == 0
    out = capsys.readouterr().out
    assert "imported 1 tasks as 'mine'" in out
    from colbench.gyms.backend.tasks import load_backend_tasks

    task_set = load_backend_tasks("test", source="mine")
    assert task_set[0].privileged["test_cases"] == ROW["test_cases"]
    assert main(["data", "list"]) == 0
    assert "mine" in capsys.readouterr().out


def test_import_of_a_bad_file_names_the_problem(tmp_path, cache, capsys):
    src = tmp_path / "bad.jsonl"
    src.write_text('{"problem_description": "x"}\n')
    assert main(["data", "import", "backend", str(src)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl" in err
    assert main(["data", "import", "backend", str(tmp_path / "missing.jsonl")]) == 2
