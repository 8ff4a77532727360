"""The viewer's JSON API on runs written by the real runner: what the page shows, live
updates as a run appends episodes, and that nothing outside the runs can be fetched."""

from __future__ import annotations

import json
import re
import shutil
import struct
import time
import zlib
from pathlib import Path

import pytest

pytest.importorskip("flask", reason="colbench view needs colbench[view] (flask)")

from colbench.records import EpisodeRecord  # noqa: E402
from colbench.rundir import RunDir  # noqa: E402
from colbench.view import create_app, loopback_names  # noqa: E402
from colbench.view._analysis import score_histogram, transcript  # noqa: E402
from colbench.view._runs import run_id_of  # noqa: E402

from .conftest import hold_lock, unfinished_copy  # noqa: E402


def tiny_png() -> bytes:
    """A 1x1 PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


def client_for(*roots: Path):
    app = create_app(list(roots), allowed_hosts=loopback_names("127.0.0.1"))
    return app.test_client()


def get_json(client, url: str, status: int = 200):
    response = client.get(url)
    assert response.status_code == status, (url, response.get_data(as_text=True))
    return response.get_json()


def runs_by_path(client) -> dict[str, dict]:
    return {Path(r["path"]).name if Path(r["path"]).parent.name == "backend"
            else Path(r["path"]).parent.name: r for r in get_json(client, "/api/runs")["runs"]}


def test_a_folder_of_runs_is_searched_and_each_run_summarised(runs_root, backend_oracle,
                                                              backend_no_ask, guess_mixed):
    client = client_for(runs_root)
    runs = runs_by_path(client)
    assert {"oracle", "no-ask", "guess"} <= set(runs)
    oracle = runs["oracle"]
    assert (oracle["env"], oracle["model"], oracle["protocol"]) == (
        "colbench/Backend-v0", "scripted:oracle", "colbench")
    assert oracle["status"] == "finished" and oracle["episodes"] == 4
    assert oracle["success_rate"] == 1.0 and oracle["score"] == 1.0
    assert oracle["task_set"] == runs["no-ask"]["task_set"]
    guess = runs["guess"]
    assert (guess["episodes"], guess["ok"], guess["env_errors"]) == (4, 3, 1)
    assert guess["success_rate"] == 1.0  # the failed episode is not scored
    assert runs["no-ask"]["success_rate"] < 1.0


def test_runs_are_running_stopped_or_finished(tmp_path, guess_mixed):
    assert json.loads(RunDir(guess_mixed).run_path.read_text())["planned_episodes"] == 4
    live = unfinished_copy(tmp_path / "runs", guess_mixed, "live")
    killed = unfinished_copy(tmp_path / "runs", guess_mixed, "killed")
    interrupted = unfinished_copy(tmp_path / "runs", guess_mixed, "interrupted")
    shutil.copytree(guess_mixed, tmp_path / "runs" / "finished")
    holders = [hold_lock(live), hold_lock(killed)]
    try:
        # The live writer appends an episode after it took the lock: the pace it sets is
        # what the estimate goes by.
        records = RunDir(live).latest_episodes()
        fresh = records[-1].model_copy(update={"task_id": "guess-test-004",
                                               "started_at": time.time(), "seconds": 0.01})
        with RunDir(live).episodes_path.open("a") as handle:
            handle.write(fresh.model_dump_json() + "\n")
        holders[1].kill()
        holders[1].wait()
        writer = RunDir(interrupted)
        writer.acquire_lock()  # as the runner does, then lets go on Ctrl-C
        writer.release_lock()
        rows = {Path(r["path"]).name: r for r in
                get_json(client_for(tmp_path / "runs"), "/api/runs")["runs"]}
    finally:
        for holder in holders:
            holder.kill()
            holder.wait()
    assert rows["live"]["status"] == "running"
    assert (rows["live"]["episodes"], rows["live"]["planned"]) == (5, 10)
    assert rows["live"]["eta_seconds"] is not None and rows["live"]["eta_seconds"] > 0
    assert rows["killed"]["status"] == "stopped"
    assert f"pid {holders[1].pid}" in rows["killed"]["state_reason"]
    assert "killed or crashed" in rows["killed"]["state_reason"]
    assert rows["interrupted"]["status"] == "stopped"
    assert "interrupted" in rows["interrupted"]["state_reason"]
    assert rows["finished"]["status"] == "finished" and rows["finished"]["planned"] == 4
    # Once the live writer is gone, the same run reads as stopped.
    row = get_json(client_for(live), "/api/runs")["runs"][0]
    assert row["status"] == "stopped" and "killed or crashed" in row["state_reason"]


def test_episode_list_outcomes_and_groups(backend_oracle, backend_no_ask, guess_mixed):
    client = client_for(backend_oracle.parent, guess_mixed)
    body = get_json(client, f"/api/runs/{run_id_of(backend_no_ask.resolve())}")
    assert body["group_keys"][0] == "family"  # the backend's task metadata, from its env
    rows = body["episodes"]
    assert [r["task_id"] for r in rows] == sorted(r["task_id"] for r in rows)
    assert all(r["groups"]["family"] for r in rows)
    assert {r["outcome"] for r in rows} <= {"success", "failure"}
    guess = get_json(client, f"/api/runs/{run_id_of(guess_mixed.resolve())}")["episodes"]
    outcomes = {r["task_id"]: r["outcome"] for r in guess}
    assert outcomes["guess-test-001"] == "env-error"
    assert "always fails" in next(r["error"] for r in guess if r["task_id"] == "guess-test-001")
    assert outcomes["guess-test-000"] == "success"


def test_transcript_holds_every_turn_and_the_failure(guess_mixed):
    client = client_for(guess_mixed)
    run_id = run_id_of(guess_mixed.resolve())
    ok = get_json(client, f"/api/runs/{run_id}/episode?task=guess-test-000&trial=0")
    assert ok["outcome"] == "success" and len(ok["turns"]) == 2
    assert ok["turns"][0]["action"] == "What is your number?"
    assert ok["turns"][0]["next_observation"].startswith("My number is")
    assert ok["turns"][1]["reward"] == 1.0 and ok["metrics"]["success"] is True
    assert ok["message_structure"] == "system" and ok["instructions_label"] == "system prompt"
    failed = get_json(client, f"/api/runs/{run_id}/episode?task=guess-test-001&trial=0")
    assert failed["failure"] == "env" and "always fails" in failed["error"]
    get_json(client, f"/api/runs/{run_id}/episode?task=guess-test-999&trial=0", 404)
    get_json(client, f"/api/runs/{run_id}/episode?task=guess-test-000&trial=x", 400)


def test_instructions_are_labelled_by_the_records_message_structure() -> None:
    # Under AgentGym's protocols the instructions are the first user turn: calling them the
    # system prompt misdescribes what the model was sent.
    def shown(structure: str | None) -> dict:
        fields = {} if structure is None else {"message_structure": structure}
        record = EpisodeRecord(task_id="t", trial=0, env="e", model="m", status="ok",
                               system_prompt="Craft the goal.", **fields)
        return transcript(record, lambda n: f"/image/{n}")

    turn = shown("instruction-turn")
    assert turn["message_structure"] == "instruction-turn"
    assert turn["instructions_label"] == "instructions (user turn)"
    assert shown("system")["instructions_label"] == "system prompt"
    assert shown(None)["instructions_label"] == "system prompt"  # records before the field


def test_frontend_renders_are_urls_served_from_the_record(frontend_oracle):
    client = client_for(frontend_oracle)
    run_id = run_id_of(frontend_oracle.resolve())
    [first, _] = get_json(client, f"/api/runs/{run_id}")["episodes"]
    response = client.get(f"/api/runs/{run_id}/episode?task={first['task_id']}&trial=0")
    assert b"base64" not in response.data  # never inlined
    episode = response.get_json()
    captions = [r["caption"] for r in episode["renders"]]
    assert captions == ["target", "final"]
    record = RunDir(frontend_oracle).latest_episodes()[0]
    for render, key in zip(episode["renders"], ("target_image", "final_image"), strict=True):
        image = client.get(render["url"])
        assert image.status_code == 200 and image.mimetype == "image/png"
        assert image.data == Path(record.metrics[key]).read_bytes()
    assert episode["turns"][0]["images"], "the turn's own render is listed under it"
    # Captioned by role, and no absolute path of the render cache reaches the page.
    assert [im["caption"] for im in episode["turns"][0]["images"]] == ["turn 1"]
    assert str(Path(record.metrics["target_image"]).parent) not in response.get_data(
        as_text=True)
    assert episode["metrics"]["target_image"] == "render: target"


def test_runs_outside_the_working_directory_are_labelled_from_the_folder_given(
        runs_root, backend_oracle):
    [row] = [r for r in get_json(client_for(runs_root), "/api/runs")["runs"]
             if r["id"] == run_id_of(backend_oracle.resolve())]
    assert row["label"] == "runs/backend/oracle" and row["path"] == row["label"]


def test_breakdown_by_family_with_plots(backend_no_ask):
    client = client_for(backend_no_ask)
    run_id = run_id_of(backend_no_ask.resolve())
    body = get_json(client, f"/api/runs/{run_id}/breakdown")
    assert body["key"] == "family"
    records = RunDir(backend_no_ask).latest_episodes()
    assert sum(g["episodes"] for g in body["groups"]) == len(records)
    assert sum(g["successes"] for g in body["groups"]) == sum(
        1 for r in records if r.metrics.get("success"))
    assert set(body["plots"]) == {"groups", "turns", "scores"}
    assert all(svg.startswith("<svg") for svg in body["plots"].values())
    assert sum(body["scores"].values()) == len(records)
    assert sum(body["turns"].values()) == len(records)
    error = get_json(client, f"/api/runs/{run_id}/breakdown?key=nonsense", 400)["error"]
    assert "nonsense" in error and "family" in error


def test_records_without_task_metadata_get_it_from_the_env(tmp_path, backend_no_ask):
    """Records written before the runner stored task metadata: the env's task set, made from
    the run's identity, names the families."""
    run = tmp_path / "old"
    shutil.copytree(backend_no_ask, run)
    lines = RunDir(run).episodes_path.read_text().splitlines()
    stripped = []
    for line in lines:
        record = json.loads(line)
        record.pop("task_metadata", None)
        stripped.append(json.dumps(record))
    RunDir(run).episodes_path.write_text("\n".join(stripped) + "\n")
    assert all(r.task_metadata is None for r in RunDir(run).latest_episodes())
    client = client_for(run)
    run_id = run_id_of(run.resolve())
    fresh = get_json(client_for(backend_no_ask), f"/api/runs/{run_id_of(backend_no_ask.resolve())}")
    old = get_json(client, f"/api/runs/{run_id}")
    assert old["metadata_problem"] is None and old["group_keys"][0] == "family"
    assert [e["groups"]["family"] for e in old["episodes"]] == [
        e["groups"]["family"] for e in fresh["episodes"]]


def test_score_histogram_bins():
    assert score_histogram([0.0, 0.05, 0.1, 0.99, 1.0, 1.5, -1]) == [
        3, 1, 0, 0, 0, 0, 0, 0, 0, 3]


def test_plot_labels_from_runs_are_escaped():
    from colbench.view._plots import bar_chart

    chart = bar_chart(['<script>alert(1)</script>'], [0.5], title="t & <b>", maximum=1.0)
    assert "<script>" not in chart and "&lt;script&gt;" in chart and "t &amp; &lt;b&gt;" in chart


def test_a_one_point_curve_is_centred_with_its_value_as_the_tick():
    from colbench.view._plots import line_chart

    chart = line_chart({"loss": [(5.0, 0.6810834202368096)]}, title="loss")
    assert ">0.681</text>" in chart and "0.6810834" not in chart
    assert '<circle cx="' in chart
    frame = re.search(r'<rect x="(\d+)" y="24" width="(\d+)"', chart)
    assert frame is not None
    left, width = int(frame[1]), int(frame[2])
    dot = float(re.search(r'<circle cx="([\d.]+)"', chart)[1])
    assert dot == pytest.approx(left + width / 2)  # in the middle, not on the frame's edge


def test_long_axis_labels_fit_inside_the_chart():
    from colbench.view._plots import bar_chart, line_chart

    chart = line_chart({"kl": [(1, 0.0000123451), (2, 0.0000123462)]}, title="kl")
    for x, label in re.findall(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end">([^<]+)<',
                               chart):
        assert float(x) - 6.5 * len(label) >= 0, label
    bars = bar_chart(["a rather long group name of thirty chars"], [0.5], title="t",
                     maximum=1.0, percent=True)
    x, label = re.search(r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end">([^<]+)<',
                         bars).groups()
    assert float(x) - 6.5 * len(label) >= 0, label


def test_axis_ends_of_a_narrow_curve_read_differently():
    from colbench.view._plots import line_chart

    chart = line_chart({"entropy": [(1, 4.482677), (2, 4.481862)]}, title="entropy")
    assert ">4.4827<" in chart and ">4.4819<" in chart


def test_comparison_marks_flips_per_task(backend_oracle, backend_no_ask):
    client = client_for(backend_oracle.parent)
    a, b = run_id_of(backend_no_ask.resolve()), run_id_of(backend_oracle.resolve())
    body = get_json(client, f"/api/compare?a={a}&b={b}")
    assert body["warnings"] == []  # same env, task set and protocol
    assert len(body["rows"]) == 4
    no_ask = {r.task_id: bool(r.metrics.get("success"))
              for r in RunDir(backend_no_ask).latest_episodes()}
    for row in body["rows"]:
        assert row["change"] == ("both succeed" if no_ask[row["task_id"]] else "gained")
        assert row["b"]["outcome"] == "success"
    assert body["totals"].get("gained", 0) == sum(1 for won in no_ask.values() if not won)
    reverse = get_json(client, f"/api/compare?a={b}&b={a}")
    assert reverse["totals"].get("lost", 0) == body["totals"].get("gained", 0)
    assert [row["flipped"] for row in body["rows"]] == [
        row["change"] == "gained" for row in body["rows"]]
    # The paired tests, over the four pairs, as colbench.stats computes them.
    from colbench.stats import mcnemar_test, paired_bootstrap

    gained = body["totals"].get("gained", 0)
    success = body["tests"]["success"]
    assert success["method"] == "McNemar, exact binomial" and success["n"] == 4
    assert success["p_value"] == mcnemar_test(gained, 0, 4).p_value
    assert success["difference"] == gained / 4
    scores = {r.task_id: r.metrics["score"] for r in RunDir(backend_no_ask).latest_episodes()}
    expected = paired_bootstrap([scores[row["task_id"]] for row in body["rows"]],
                                [row["b"]["score"] for row in body["rows"]])
    assert body["tests"]["score"]["p_value"] == expected.p_value
    assert body["tests"]["score"]["ci95"] == list(expected.ci95)
    assert get_json(client, f"/api/compare?a={a}&b={b}")["tests"] == body["tests"]  # seeded


def test_comparison_names_different_task_sets(backend_oracle, guess_mixed):
    client = client_for(backend_oracle, guess_mixed)
    body = get_json(client, f"/api/compare?a={run_id_of(backend_oracle.resolve())}"
                            f"&b={run_id_of(guess_mixed.resolve())}")
    assert any("different envs" in w for w in body["warnings"])
    assert {row["change"] for row in body["rows"]} == {"only in A", "only in B"}


def test_a_new_episode_shows_on_the_next_poll(tmp_path, guess_mixed):
    run = tmp_path / "growing"
    shutil.copytree(guess_mixed, run)
    RunDir(run).summary_path.unlink()
    client = client_for(run)
    [before] = get_json(client, "/api/runs")["runs"]
    record = RunDir(run).latest_episodes()[0]
    extra = EpisodeRecord.model_validate({**record.model_dump(), "task_id": "guess-test-777"})
    with RunDir(run).episode_writer() as writer:
        writer.write(extra)
    [after] = get_json(client, "/api/runs")["runs"]
    assert after["episodes"] == before["episodes"] + 1
    assert after["version"] != before["version"]
    rows = get_json(client, f"/api/runs/{before['id']}")["episodes"]
    assert "guess-test-777" in {r["task_id"] for r in rows}


def test_a_run_appearing_later_is_found(tmp_path, guess_mixed):
    client = client_for(tmp_path)
    assert get_json(client, "/api/runs")["runs"] == []
    shutil.copytree(guess_mixed, tmp_path / "late")
    [row] = get_json(client, "/api/runs")["runs"]
    assert row["episodes"] == 4


# -- nothing else is served ----------------------------------------------------------------
@pytest.fixture
def hostile_run(tmp_path, guess_mixed) -> tuple[Path, Path]:
    """A copy of a run whose records name files they should not: a secret outside the run
    (by an absolute path and by ../), a text file called .png, and one honest picture."""
    root = tmp_path / "served"
    run = root / "run"
    shutil.copytree(guess_mixed, run)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"not a picture: private text")
    outside_png = tmp_path / "outside.png"
    outside_png.write_bytes(tiny_png())
    (run / "fake.png").write_text("private text named like a picture")
    (run / "ok.png").write_bytes(tiny_png())
    lines = RunDir(run).episodes_path.read_text().splitlines()
    record = json.loads(lines[0])
    record["turns"][0]["info"]["images"] = ["/etc/passwd", str(secret), "../../outside.png",
                                            "fake.png", "ok.png", str(outside_png)]
    lines[0] = json.dumps(record)
    RunDir(run).episodes_path.write_text("\n".join(lines) + "\n")
    return root, run


def test_only_pictures_the_records_name_are_served(hostile_run):
    root, run = hostile_run
    client = client_for(root)
    run_id = run_id_of(run.resolve())
    base = f"/api/runs/{run_id}/image?task=guess-test-000&trial=0&n="
    statuses = [client.get(f"{base}{n}").status_code for n in range(6)]
    # /etc/passwd, a text secret, ../ out of the run, text called .png: refused; a picture
    # in the run and a picture elsewhere that the record names (a render cache): served.
    assert statuses == [404, 404, 404, 404, 200, 200]
    for bad in ("-1", "6", "1e3", "../0"):
        assert client.get(f"{base}{bad}").status_code in (400, 404)


@pytest.mark.parametrize("url", [
    "/assets/../../pyproject.toml", "/assets/..%2f_app.py", "/assets/index.html/../_runs.py",
    "/assets/%2e%2e/%2e%2e/etc/passwd", "/api/runs/..%2f..%2fetc%2fpasswd",
    "/api/runs/../../etc/passwd", "/etc/passwd", "/static/viewer.js", "/api/runs/%2Fetc",
])
def test_no_path_reaches_the_disk(url, hostile_run):
    root, _ = hostile_run
    response = client_for(root).get(url)
    assert response.status_code == 404, url
    assert b"root:" not in response.data and b"private text" not in response.data


def test_page_and_assets_are_served_with_a_strict_policy(guess_mixed):
    client = client_for(guess_mixed)
    page = client.get("/")
    assert page.status_code == 200 and b"/assets/viewer.js" in page.data
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    script = client.get("/assets/viewer.js")
    assert script.status_code == 200 and script.mimetype == "text/javascript"
    assert b"innerHTML" in script.data and script.data.count(b"innerHTML") == 1  # plots only


def test_other_host_names_are_refused_on_loopback(guess_mixed):
    client = client_for(guess_mixed)
    assert client.get("/api/runs", headers={"Host": "127.0.0.1:7575"}).status_code == 200
    refused = client.get("/api/runs", headers={"Host": "evil.example:7575"})
    assert refused.status_code == 403 and b"evil.example" in refused.data


# -- training curves -------------------------------------------------------------------------
def test_training_curves_from_the_newest_checkpoint_and_grpo_samples(tmp_path):
    out = tmp_path / "trained"
    for step in (2, 4):
        folder = out / f"checkpoint-{step}"
        folder.mkdir(parents=True)
        history = [{"step": s, "epoch": s / 4, "loss": 2.0 / s, "learning_rate": 1e-3}
                   for s in range(1, step + 1)]
        (folder / "trainer_state.json").write_text(json.dumps({"log_history": history}))
    for step, rewards in ((1, [0.0, 1.0]), (2, [1.0, 1.0])):
        folder = out / "rollouts" / f"step-{step:06d}"
        folder.mkdir(parents=True)
        (folder / "samples.jsonl").write_text(
            "".join(json.dumps({"reward": r}) + "\n" for r in rewards) + '{"rew')
    body = get_json(client_for(tmp_path), "/api/training")
    [training] = body["trainings"]
    assert training["path"] == str(out.resolve())
    assert training["curves"]["loss"] == [[1.0, 2.0], [2.0, 1.0], [3.0, 2 / 3], [4.0, 0.5]]
    assert training["curves"]["rollout mean reward (samples)"] == [[1.0, 0.5], [2.0, 1.0]]
    assert "epoch" not in training["curves"]
    assert training["plots"][0]["name"] == "loss"  # losses first
    assert all(p["svg"].startswith("<svg") for p in training["plots"])


@pytest.mark.slow
def test_training_curves_of_a_real_trainer(tmp_path, guess_mixed):
    """``colbench train rft`` on a tiny model with checkpoints: its loss curve shows."""
    for module in ("torch", "transformers", "trl", "peft", "datasets", "accelerate"):
        pytest.importorskip(module, reason="the trainers need colbench[train]")
    import os

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from colbench.cli.main import main
    from colbench.models.tiny import build_tiny_model

    tiny = build_tiny_model(tmp_path / "tiny")
    out = tmp_path / "trained"
    assert main(["train", "rft", "--model", f"hf:{tiny}", "--data", str(guess_mixed),
                 "--out", str(out), "--max-steps", "2", "--per-device-train-batch-size", "2",
                 "--logging-steps", "1", "--no-gradient-checkpointing", "--max-length", "512",
                 "--save-steps", "1"]) == 0
    [training] = get_json(client_for(out), "/api/training")["trainings"]
    assert [step for step, _ in training["curves"]["loss"]] == [1.0, 2.0]


@pytest.mark.parametrize("where", ["simulator", "env"])
def test_a_run_naming_code_is_shown_without_running_it(tmp_path, monkeypatch, where):
    """Issue 21: a shared run whose run.json names code (a python: simulator, or a
    module:Class as its env) is opened without importing it; the page says what was left
    out, in one line, and shows the run (with its breakdown when the env could be made)."""
    from planted_code import backend_run, plant_code

    planted = plant_code(tmp_path / "shared")
    monkeypatch.syspath_prepend(str(planted.folder))
    if where == "simulator":
        run = backend_run(tmp_path / "runs" / "r", {"simulator": planted.python_spec})
    else:
        run = backend_run(tmp_path / "runs" / "r", {}, env=planted.class_spec)
    assert all(r.task_metadata is None for r in RunDir(run).latest_episodes())
    client = client_for(tmp_path / "runs")
    body = get_json(client, f"/api/runs/{run_id_of(run.resolve())}")
    assert not planted.ran()
    note = body["metadata_problem"]
    assert note and "\n" not in note and "run.json names code" in note
    if where == "simulator":
        assert planted.python_spec in note and "made without it" in note
        assert body["group_keys"][0] == "family"
    else:
        assert planted.class_spec in note and "no env was made" in note
        assert len(body["episodes"]) == 4
