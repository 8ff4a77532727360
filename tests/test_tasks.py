import json

import pytest

from colbench.errors import ConfigError
from colbench.tasks import Task, TaskSet


def make_tasks(n=3):
    return [Task(id=f"t{i}", suite="demo", split="test", prompt=f"prompt {i}",
                 privileged={"answer": i}, metadata={"k": [i]}) for i in range(n)]


def test_hash_is_stable_and_content_sensitive():
    a = TaskSet("demo", make_tasks())
    b = TaskSet("demo", make_tasks())
    assert a.hash == b.hash and a.hash.startswith("sha256:")
    changed = make_tasks()
    changed[1] = changed[1].model_copy(update={"prompt": "other"})
    assert TaskSet("demo", changed).hash != a.hash
    assert TaskSet("demo", list(reversed(make_tasks()))).hash != a.hash


def test_save_and_load_round_trip_with_manifest(tmp_path):
    ts = TaskSet("demo", make_tasks())
    path = ts.save(tmp_path / "demo.jsonl")
    manifest = json.loads((tmp_path / "demo.jsonl.manifest.json").read_text())
    assert manifest["hash"] == ts.hash and manifest["count"] == 3
    loaded = TaskSet.load(path)
    assert loaded.hash == ts.hash
    assert loaded.get("t2").privileged == {"answer": 2}


def test_edited_file_fails_manifest_check(tmp_path):
    path = TaskSet("demo", make_tasks()).save(tmp_path / "demo.jsonl")
    text = path.read_text().replace("prompt 1", "prompt X")
    path.write_text(text)
    with pytest.raises(ConfigError, match="does not match its manifest"):
        TaskSet.load(path)


def test_bad_inputs_name_what_was_wrong(tmp_path):
    with pytest.raises(ConfigError, match="two tasks with id 't0'"):
        TaskSet("dup", make_tasks(1) + make_tasks(1))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(ConfigError, match="bad.jsonl:1"):
        TaskSet.load(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        TaskSet.load(tmp_path / "missing.jsonl")
    with pytest.raises(ConfigError, match="no task 'nope'"):
        TaskSet("demo", make_tasks()).get("nope")


def test_subset_keeps_order():
    ts = TaskSet("demo", make_tasks(5))
    assert ts.subset(2).ids() == ["t0", "t1"]
    assert ts.subset(None) is ts
    with pytest.raises(ConfigError):
        ts.subset(0)


def test_index_splits_name_test_all_and_ranges_and_refuse_the_rest():
    from colbench.tasks import index_split

    assert index_split("test", env="E", test_size=3) == range(3)
    assert index_split("4-6", env="E", test_size=3) == range(4, 7)
    assert index_split("all", env="E", test_size=3, count=10) == range(10)
    assert index_split("8-12", env="E", test_size=3, count=10) == range(8, 13)  # wraps later
    for bad, kwargs in (("all", {}), ("6-4", {}), ("x", {"count": 10}),
                        ("8-12", {"count": 10, "bounded": True})):
        with pytest.raises(ConfigError, match=f"unknown E split '{bad}' under --protocol "
                                              "agentgym: use test"):
            index_split(bad, env="E", test_size=3, **kwargs)
    with pytest.raises(ConfigError, match=r"AgentGym data indices 0-9\)"):
        index_split("0-10", env="E", test_size=3, count=10, bounded=True)
