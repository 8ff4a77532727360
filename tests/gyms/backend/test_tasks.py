"""Backend task sets: the built-in sets and their cache, task files, the published format."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest

from colbench.errors import ConfigError
from colbench.gyms.backend import tasks as backend_tasks
from colbench.gyms.backend.generator import content_key, hidden_key, validate_task
from colbench.gyms.backend.tasks import (
    SPLIT_SIZES,
    builtin_path,
    cache_dir,
    clear_memory_cache,
    convert_official_rows,
    import_official,
    load_backend_tasks,
)
from colbench.tasks import TaskSet

SHIPPING = '''def calculate_shipping(weight, country):
    if weight <= 0:
        return 0
    cost = weight * 4.5
    if country != "US":
        cost = cost * 2
    return round(cost, 2)
'''
OFFICIAL_ROWS = [
    {"problem_description": "I need to know what shipping costs. Can you help?\n\n"
                            "The signature of the function is: def calculate_shipping(weight, "
                            "country)",
     "ground_truth": SHIPPING,
     "test_cases": {"test1": "calculate_shipping(2, 'US')", "test2": "calculate_shipping(0, 'FR')",
                    "test3": "calculate_shipping(1.5, 'FR')"}},
    {"problem_description": "Write a function to add two numbers the way I like.",
     "ground_truth": "def add_up(a, b):\n    return a + b + 1\n",
     "test_cases": ["add_up(1, 2)", "add_up(0, 0)"]},
    {"problem_description": "Double it.", "ground_truth": "def twice(x):\n    return 2 * x\n",
     "test_cases": '{"a": "twice(1)", "b": "twice(4)"}'},
]


@pytest.fixture(scope="module")
def shared_root(tmp_path_factory):
    """A cache root whose built-in test set is generated once for the module."""
    root = tmp_path_factory.mktemp("shared_cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("COLBENCH_CACHE", str(root))
        clear_memory_cache()
        load_backend_tasks("test")
    clear_memory_cache()
    return root


@pytest.fixture
def private_cache(tmp_path, monkeypatch):
    """A fresh, empty COLBENCH_CACHE and an empty in-process cache."""
    monkeypatch.setenv("COLBENCH_CACHE", str(tmp_path / "cache"))
    clear_memory_cache()
    yield tmp_path / "cache" / "backend"
    clear_memory_cache()


@pytest.fixture
def cache(shared_root, monkeypatch):
    """The module's cache, with the test set already on disk."""
    monkeypatch.setenv("COLBENCH_CACHE", str(shared_root))
    clear_memory_cache()
    yield shared_root / "backend"
    clear_memory_cache()


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# -- the built-in sets --------------------------------------------------------------------------

def test_builtin_test_set_is_generated_once_cached_privately_and_reused(private_cache):
    start = time.perf_counter()
    test = load_backend_tasks()
    first_load = time.perf_counter() - start
    assert len(test) == SPLIT_SIZES["test"] == 1000
    assert test.name == "backend-test"
    assert {t.split for t in test} == {"test"}
    assert first_load < 30, f"generating the test set took {first_load:.1f}s"

    folder = cache_dir()
    assert folder == private_cache
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    path = builtin_path("test")
    assert path.is_file()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    manifest = path.with_name(path.name + ".manifest.json")
    assert stat.S_IMODE(manifest.stat().st_mode) == 0o600

    # The same process gets the same object; a new process (simulated) reads the disk cache.
    assert load_backend_tasks("test") is test
    assert load_backend_tasks(source="backend-test") is test
    clear_memory_cache()
    start = time.perf_counter()
    again = load_backend_tasks("test")
    assert again is not test and again.hash == test.hash
    assert time.perf_counter() - start < first_load + 1


def test_a_damaged_cache_file_is_regenerated(cache):
    good = load_backend_tasks("test").hash
    path = builtin_path("test")
    path.write_text(path.read_text().replace("backend-test-00007", "backend-test-x0007"))
    clear_memory_cache()
    assert load_backend_tasks("test").hash == good


def test_cache_folder_is_made_private_even_if_it_existed_open(private_cache):
    private_cache.mkdir(parents=True)
    private_cache.chmod(0o755)
    assert stat.S_IMODE(cache_dir().stat().st_mode) == 0o700


def test_unknown_split_and_name_are_clear_errors(cache):
    with pytest.raises(ConfigError, match="split"):
        load_backend_tasks("dev")
    with pytest.raises(ConfigError, match="unknown backend task set 'backend-tset'"):
        load_backend_tasks(source="backend-tset")
    with pytest.raises(ConfigError, match="does not exist"):
        load_backend_tasks(source="/no/such/file.jsonl")


@pytest.mark.slow
def test_builtin_train_set_has_ten_thousand_tasks_none_shared_with_test(cache):
    test = load_backend_tasks("test")
    train = load_backend_tasks("train")
    assert len(train) == SPLIT_SIZES["train"] == 10000
    assert train.name == "backend-train"
    assert {t.split for t in train} == {"train"}
    test_keys = {hidden_key(t) for t in test}
    assert not test_keys & {hidden_key(t) for t in train}
    assert len({content_key(t) for t in train}) == len(train)
    for task in train[::97]:
        validate_task(task)


def test_train_generation_excludes_test_hidden_values(cache, monkeypatch):
    """The count arithmetic and the exclusion, on a small train set (the full one is slow)."""
    monkeypatch.setitem(backend_tasks.SPLIT_SIZES, "train", 120)
    test_keys = {hidden_key(t) for t in load_backend_tasks("test")}
    train = load_backend_tasks("train")
    assert len(train) == 120
    assert [t.id for t in train[:3]] == ["backend-train-00000", "backend-train-00001",
                                         "backend-train-00002"]
    assert not test_keys & {hidden_key(t) for t in train}


# -- task files ---------------------------------------------------------------------------------

def test_colbench_task_file_loads_by_path(cache, tmp_path):
    small = TaskSet("small", list(load_backend_tasks("test")[:5]))
    path = small.save(tmp_path / "small.jsonl")
    loaded = load_backend_tasks(source=path)
    assert loaded.hash == small.hash and loaded.name == "small"
    assert load_backend_tasks(source=str(path)) is loaded


def test_published_format_is_read_as_it_is(cache, tmp_path):
    path = write_jsonl(tmp_path / "colbench_backend_test.jsonl", OFFICIAL_ROWS)
    task_set = load_backend_tasks(source=path)
    assert len(task_set) == 3
    first, second, third = task_set
    assert first.prompt == OFFICIAL_ROWS[0]["problem_description"]
    assert first.privileged == {
        "ground_truth": SHIPPING, "function_name": "calculate_shipping", "facts": [],
        "test_cases": ["calculate_shipping(2, 'US')", "calculate_shipping(0, 'FR')",
                       "calculate_shipping(1.5, 'FR')"]}
    assert first.metadata["source"] == "colbench-official"
    assert first.metadata["signature"] == "def calculate_shipping(weight, country)"
    assert first.metadata["open_details"] == []
    assert first.id == "backend-official-test-00000" and first.split == "test"
    # No signature line in the request: the signature comes from the reference.
    assert second.metadata["signature"] == "def add_up(a, b)"
    assert second.privileged["test_cases"] == ["add_up(1, 2)", "add_up(0, 0)"]
    assert third.privileged["test_cases"] == ["twice(1)", "twice(4)"]


def test_import_official_writes_a_colbench_task_file_loadable_by_name(cache, tmp_path):
    source = write_jsonl(tmp_path / "official_train.jsonl", OFFICIAL_ROWS)
    out = cache_dir() / "backend-official-train.jsonl"
    imported = import_official(source, out)
    assert imported.name == "backend-official-train"
    assert {t.split for t in imported} == {"train"}
    assert TaskSet.load(out).hash == imported.hash
    assert load_backend_tasks(source="backend-official-train").hash == imported.hash
    assert stat.S_IMODE(out.stat().st_mode) == 0o600


def test_convert_official_rows_matches_the_file_reader(cache, tmp_path):
    path = write_jsonl(tmp_path / "rows.jsonl", OFFICIAL_ROWS)
    assert convert_official_rows(OFFICIAL_ROWS) == list(load_backend_tasks(source=path))


@pytest.mark.parametrize(("lines", "message"), [
    (['{"problem_description": "x", "ground_truth": "def f():\\n    return 1\\n", '
      '"test_cases": ["f()"]}', "not json"], r"rows\.jsonl:2: not valid JSON"),
    (['{"problem_description": "x", "ground_truth": "def f():\\n    return 1\\n"}'],
     r"rows\.jsonl:1: missing key\(s\) test_cases"),
    (['{"problem_description": "x", "ground_truth": "def f(:", "test_cases": ["f()"]}'],
     r"rows\.jsonl:1: ground_truth is not valid Python"),
    (['{"problem_description": "x", "ground_truth": "x = 1", "test_cases": ["f()"]}'],
     r"rows\.jsonl:1: ground_truth has no top-level function"),
    (['', '{"problem_description": "x", "ground_truth": "def f():\\n    return 1\\n", '
      '"test_cases": "f()"}'], r"rows\.jsonl:2: test_cases must be"),
    (['{"problem_description": "", "ground_truth": "def f():\\n    return 1\\n", '
      '"test_cases": ["f()"]}'], r"rows\.jsonl:1: problem_description must be"),
    (['{"hello": 1}'], r"rows\.jsonl:1: neither a colbench task"),
    (['[1, 2]'], r"rows\.jsonl:1: neither a colbench task"),
    (['', '   '], r"rows\.jsonl: no tasks"),
])
def test_bad_task_files_name_the_file_and_line(cache, tmp_path, lines, message):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=message):
        load_backend_tasks(source=path)


def test_bad_colbench_task_line_names_the_line(cache, tmp_path):
    good = load_backend_tasks("test")[0]
    path = tmp_path / "mine.jsonl"
    path.write_text(good.canonical_json() + "\n" + '{"id": "x", "prompt": 3}\n')
    with pytest.raises(ConfigError, match=r"mine\.jsonl:2"):
        load_backend_tasks(source=path)


def test_convert_rejects_rows_that_are_not_objects():
    with pytest.raises(ConfigError, match="row 2: .*JSON object"):
        convert_official_rows([OFFICIAL_ROWS[0], ["not", "a", "row"]])


def test_colbench_data_finds_the_backend_by_its_entry_point():
    import gymnasium

    import colbench  # noqa: F401  (registers the env ids)
    from colbench import registry

    source = registry.task_sets.get("backend")
    assert source is backend_tasks.TASK_SETS
    assert gymnasium.spec(source.env_id).id == "colbench/Backend-v0"
