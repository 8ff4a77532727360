"""Per-family and per-level breakdowns from the tasks' metadata (issue 17, item 6)."""

from __future__ import annotations

from html.parser import HTMLParser

from colbench.records import EpisodeRecord, TaskSetRef
from colbench.report import load_run, render_html
from colbench.report._breakdown import GroupStats, breakdown, breakdown_keys


class Tables(HTMLParser):
    """Rows of each breakdown table: {key: {group: [cell texts]}}."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, dict[str, list[str]]] = {}
        self._key: str | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table" and "breakdown" in (attrs.get("class") or ""):
            self._key = attrs["data-key"]
            self.tables[self._key] = {}
        elif tag == "tr" and self._key and "data-group" in attrs:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._key:
            self.tables[self._key][self._row[0]] = self._row[1:]
            self._row = None
        elif tag == "table":
            self._key = None


def record(task: str, level: str | None, *, score: float = 0.0, success: bool = False,
           status: str = "ok", trial: int = 0) -> EpisodeRecord:
    metadata = None if level is None else {"level": level, "seed": int(task[-1])}
    if status == "error":
        return EpisodeRecord(task_id=task, trial=trial, env="colbench/BabyAI-v0",
                             model="scripted:bot", status="error", failure="env",
                             error="the JVM died", task_metadata=metadata)
    return EpisodeRecord(task_id=task, trial=trial, env="colbench/BabyAI-v0",
                         model="scripted:bot", status="ok", task_metadata=metadata,
                         metrics={"score": score, "success": success})


def babyai_run(tmp_path, bench):
    """GoTo: 2 scored (1 success), 1 env error; Open: 1 scored failure; PutNext (a level
    sorted last) 1 success; one record written before records had metadata."""
    records = [
        record("babyai/GoTo/1", "GoTo", score=1.0, success=True),
        record("babyai/GoTo/2", "GoTo", score=0.5),
        record("babyai/GoTo/3", "GoTo", status="error"),
        record("babyai/Open/1", "Open", score=0.25),
        record("babyai/PutNext/1", "PutNext", score=1.0, success=True),
        record("babyai/old/1", None, score=1.0, success=True),
    ]
    return bench.write_run(tmp_path / "babyai", records,
                           TaskSetRef(name="babyai-test", hash="sha256:" + "1" * 64))


def test_groups_count_scored_episodes_and_env_errors(tmp_path, bench):
    run = load_run(babyai_run(tmp_path, bench))
    assert breakdown_keys([run]) == ["level"]  # seed names one task, not a group
    assert breakdown(run, "level") == {
        "GoTo": GroupStats(episodes=2, env_errors=1, success=0.5, score=0.75),
        "Open": GroupStats(episodes=1, env_errors=0, success=0.0, score=0.25),
        "PutNext": GroupStats(episodes=1, env_errors=0, success=1.0, score=1.0)}


def test_the_page_shows_a_row_per_group_with_each_runs_counts(tmp_path, bench):
    first = load_run(babyai_run(tmp_path, bench))
    other = bench.write_run(tmp_path / "other", [record("babyai/Synth/1", "Synth", score=0.1)],
                            TaskSetRef(name="babyai-synth", hash="sha256:" + "2" * 64))
    parsed = Tables()
    parsed.feed(render_html([first, load_run(other)]))
    assert list(parsed.tables) == ["level"]
    rows = parsed.tables["level"]
    assert list(rows) == ["GoTo", "Open", "PutNext", "Synth"]
    # Per run: episodes, env errors, success %, score %.
    assert rows["GoTo"] == ["2", "1", "50.0", "75.0", "0", "0", "–", "–"]
    assert rows["Synth"] == ["0", "0", "–", "–", "1", "0", "0.0", "10.0"]


def test_no_breakdown_when_tasks_name_one_group_or_none(tmp_path, bench):
    same = bench.write_run(tmp_path / "one", [record("babyai/GoTo/1", "GoTo"),
                                              record("babyai/GoTo/2", "GoTo")],
                           TaskSetRef(name="babyai-goto", hash="sha256:" + "3" * 64))
    bare = bench.write_run(tmp_path / "bare", [record("t/1", None), record("t/2", None)],
                           TaskSetRef(name="bare", hash="sha256:" + "4" * 64))
    for run in (same, bare):
        assert 'id="breakdowns"' not in render_html([load_run(run)])


def test_tasks_saved_by_a_collection_give_old_records_their_groups(tmp_path, bench):
    from colbench.rundir import RunDir
    from colbench.tasks import Task, TaskSet

    run = bench.write_run(tmp_path / "collected", [record("b-0", None), record("b-1", None)],
                          TaskSetRef(name="backend-train", hash="sha256:" + "5" * 64))
    RunDir(run).write_tasks(TaskSet("backend-train", [
        Task(id=f"b-{i}", suite="backend", split="train", prompt="p", privileged={},
             metadata={"family": family}) for i, family in enumerate(["sort", "water"])]))
    assert breakdown_keys([load_run(run)]) == ["family"]
