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


class FakeSuiteTaskSets:
    """A suite's contribution to ``colbench data`` (a TaskSetSource), recording its calls."""

    env_id = "colbench-test/Fake-v0"

    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def import_file(self, source, out, *, split, name):
        from colbench.tasks import TaskSet

        self.calls.append(("import", source, out, split, name))
        return TaskSet(name, [])

    def build(self, split):
        from colbench.tasks import TaskSet

        self.calls.append(("build", split))
        return TaskSet(f"fake-{split}", [])


@pytest.fixture()
def fake_suite(cache):
    from colbench import registry

    suite = FakeSuiteTaskSets()
    registry.task_sets.register("fake", suite)
    yield suite
    registry.task_sets.unregister("fake")


def test_each_suite_contributes_its_task_sets_through_the_registry(tmp_path, fake_suite, cache,
                                                                   capsys):
    src = tmp_path / "rows.jsonl"
    src.write_text("{}\n")
    assert main(["data", "import", "fake", str(src), "--split", "train"]) == 0
    out = capsys.readouterr().out
    assert fake_suite.calls == [("import", src, cache / "fake" / "rows.jsonl", "train", "rows")]
    assert "imported 0 tasks as 'rows'" in out
    assert "colbench evaluate colbench-test/Fake-v0 --tasks rows --model SPEC" in out

    assert main(["data", "build", "fake", "--split", "all"]) == 0
    assert fake_suite.calls[1:] == [("build", "test"), ("build", "train")]
    assert "fake-test: 0 tasks" in capsys.readouterr().out

    assert main(["data", "list"]) == 0
    listing = capsys.readouterr().out
    assert f"backend task sets in {cache / 'backend'}" in listing
    assert f"fake task sets in {cache / 'fake'}" in listing


def test_an_unknown_suite_is_refused_by_name(capsys):
    with pytest.raises(SystemExit) as done:
        main(["data", "build", "nosuch"])
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'nosuch'" in err and "backend" in err


def test_the_data_command_imports_no_suite_until_one_is_asked_for(cli_environ, tmp_path):
    import subprocess
    import sys

    probe = ("import sys\nfrom colbench.cli.main import main\n"
             "assert main(['data', 'list']) == 0\n"
             "print(sorted(m for m in sys.modules if m.startswith('colbench.gyms.backend')))\n")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            env=dict(cli_environ, COLBENCH_CACHE=str(tmp_path)), timeout=120)
    assert result.returncode == 0, result.stderr
    assert "backend task sets in" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"
