"""The Frontend env: Gymnasium's checker, the protocol, scoring of oracle / no-ask / missing
answers on a 100-task sample with both scorers, and a run through the CLI and the report."""

from __future__ import annotations

import json
import re
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from PIL import Image

import colbench
from colbench.cli.main import main
from colbench.gyms.frontend.baselines import page_from_description
from colbench.gyms.frontend.env import FrontendEnv
from colbench.gyms.frontend.scoring import black_image, make_scorer
from colbench.runner import EvalConfig, evaluate

TASK = "frontend-test-00003"


@pytest.fixture()
def env(image_dir):
    made = gym.make("colbench/Frontend-v0", scorer="perceptual", image_dir=str(image_dir))
    yield made.unwrapped
    made.close()


def test_registered_and_passes_the_checker(image_dir):
    assert "colbench/Frontend-v0" in colbench.env_ids()
    made = gym.make("colbench/Frontend-v0", scorer="perceptual", image_dir=str(image_dir))
    try:
        check_env(made.unwrapped, skip_render_check=True)
    finally:
        made.close()


def _html(page: str, words: str = "") -> str:
    return f"{words}\n```html\n{page}\n```"


def test_protocol_last_html_is_the_answer_and_images_follow_the_page(env):
    obs, info = env.reset(seed=0, options={"task_id": TASK})
    assert obs == env.task.prompt and info["images"] == []
    assert "I WANT TO ANSWER:" in info["system_prompt"]
    target_html = env.privileged()["ground_truth"]
    assert target_html not in obs and target_html not in json.dumps(info)

    obs, reward, term, trunc, info = env.step("What colours should it have?")
    assert reward == 0 and not term and not trunc and info["images"] == []
    assert obs.startswith("I don't see a page yet.") and "<" not in obs

    first = page_from_description(env.task.prompt)
    obs, _, _, _, info = env.step(_html(first, "Here is a first try."))
    [first_image] = info["images"]
    assert Path(first_image).is_file() and Image.open(first_image).width == 1366
    assert len(obs) <= 1000 and "<" not in obs and obs != ""

    obs, _, _, _, info = env.step("Anything else I should change?")
    assert info["images"] == [first_image]  # still the current page

    obs, reward, term, trunc, info = env.step("I WANT TO ANSWER: that is my page.")
    assert term and not trunc
    metrics = info["metrics"]
    assert metrics["final_image"] == first_image == info["final_image"]
    assert Path(metrics["target_image"]).is_file()
    assert metrics["questions"] == 3 and metrics["turns"] == 4 and metrics["html_messages"] == 1
    assert metrics["answered"] and not metrics["missing_answer"]
    assert info["final_answer"].strip() == first.strip()
    expected = make_scorer("perceptual").score(Image.open(first_image),
                                               Image.open(metrics["target_image"]))
    assert reward == metrics["score"] == pytest.approx(expected)
    assert metrics["success"] == (metrics["score"] >= 0.9)
    with pytest.raises(RuntimeError, match="reset"):
        env.step("more")


def test_the_turn_budget_scores_the_last_html(env):
    env.reset(seed=0, options={"task_id": TASK, "max_turns": 2})
    env.step(_html("<html><body><h1>one</h1></body></html>"))
    target_html = env.privileged()["ground_truth"]
    _, reward, term, trunc, info = env.step(_html(target_html, "second and last"))
    assert trunc and not term and not info["metrics"]["answered"]
    assert reward == 1.0


def test_a_missing_answer_scores_what_a_black_image_scores(env):
    env.reset(seed=0, options={"task_id": TASK})
    _, reward, term, _, info = env.step("I WANT TO ANSWER: I could not write anything.")
    assert term and info["metrics"]["missing_answer"]
    target = Image.open(info["metrics"]["target_image"])
    assert reward == make_scorer("perceptual").score(black_image(), target)
    black = Image.open(info["metrics"]["final_image"]).convert("RGB")
    assert black.getbbox() is None and black.size == (1366, 768)


def test_an_answer_that_does_not_render_is_scored_as_black(image_dir):
    env = FrontendEnv(scorer="perceptual", image_dir=image_dir, render_timeout=3)
    env.reset(seed=0, options={"task_id": TASK})
    hang = "<html><body><script>while (true) {}</script></body></html>"
    _, reward, _, _, info = env.step(_html(hang, "I WANT TO ANSWER:"))
    metrics = info["metrics"]
    assert "did not render" in metrics["render_verdict"] and "timeout" in metrics["render_verdict"]
    target = Image.open(metrics["target_image"])
    assert reward == make_scorer("perceptual").score(black_image(), target)


def test_bad_arguments_say_what_is_wrong(image_dir):
    with pytest.raises(colbench.ConfigError, match="clip_model"):
        FrontendEnv(scorer="perceptual", clip_model="/x", image_dir=image_dir)
    with pytest.raises(colbench.ConfigError, match="unknown frontend task set"):
        FrontendEnv(tasks="no-such-set", image_dir=image_dir)


def _run(tmp_path: Path, model: str, scorer: str, image_dir: Path, n: int) -> dict:
    out = tmp_path / f"{model.replace(':', '_')}-{scorer.split(':')[0]}"
    summary = evaluate(EvalConfig(env="colbench/Frontend-v0", model=model, out=out,
                                  num_tasks=n, concurrency=4, progress=False,
                                  env_kwargs={"scorer": scorer, "image_dir": str(image_dir)}))
    assert summary.counts.ok == n, (out / "episodes.jsonl").read_text()[-2000:]
    return {"score": summary.metrics["score"].mean, "summary": summary}


@pytest.mark.slow
def test_oracle_no_ask_and_missing_on_a_100_task_sample_with_both_scorers(
        tmp_path, image_dir, tiny_clip):
    n = 100
    results = {}
    for scorer in ("perceptual", f"clip:{tiny_clip}"):
        oracle = _run(tmp_path, "scripted:oracle", scorer, image_dir, n)
        no_ask = _run(tmp_path, "scripted:no-ask", scorer, image_dir, n)
        results[scorer] = (oracle["score"], no_ask["score"])
        assert oracle["score"] >= 0.99, scorer
        assert no_ask["score"] <= oracle["score"] - 0.1, (scorer, no_ask["score"])
        summary = oracle["summary"]
        assert summary.scorer == make_scorer(scorer).name
        assert summary.scorer_weights_hash == make_scorer(scorer).weights_hash()
    assert results["perceptual"][1] < 0.8
    assert make_scorer(f"clip:{tiny_clip}").weights_hash().startswith("sha256:")


def test_cli_evaluate_with_scorer_then_html_report_shows_both_renders(tmp_path, tiny_clip,
                                                                      capsys):
    out = tmp_path / "run"
    code = main(["evaluate", "colbench/Frontend-v0", "--model", "scripted:no-ask",
                 "--scorer", f"clip:{tiny_clip}", "--num-tasks", "2", "--out", str(out),
                 "--no-progress", "--concurrency", "2"])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["scorer"] == f"clip:{tiny_clip}"
    assert summary["scorer_weights_hash"].startswith("sha256:")
    record = json.loads((out / "episodes.jsonl").read_text().splitlines()[0])
    assert Path(record["metrics"]["target_image"]).is_file()
    assert Path(record["metrics"]["final_image"]).is_file()
    page = tmp_path / "report.html"
    assert main(["report", str(out), "--html", str(page)]) == 0
    html = page.read_text()
    assert html.count('class="compare"') == 2
    # Renders are files beside the page, not data: URIs (issue 17, item 6).
    assert "data:image" not in html
    sources = re.findall(r'<img src="([^"]+)"', html)
    assert len(sources) >= 4 and all((tmp_path / src).is_file() for src in sources)


def test_cli_stops_when_clip_weights_are_missing(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-hf-home"))
    out = tmp_path / "run"
    code = main(["evaluate", "colbench/Frontend-v0", "--model", "scripted:oracle",
                 "--num-tasks", "1", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert "could not be loaded" in err and "--scorer perceptual" in err
    assert not (out / "episodes.jsonl").exists()


def test_compat_is_accepted_and_changes_nothing(image_dir):
    """``--compat`` can be passed to both suites; the frontend already follows the reference
    harness, so the env it makes describes itself exactly as the default one does."""
    plain = FrontendEnv(scorer="perceptual", image_dir=image_dir)
    compat = FrontendEnv(scorer="perceptual", image_dir=image_dir, compat=True)
    assert compat.describe() == plain.describe()
    with pytest.raises(colbench.ConfigError, match="compat must be True or False"):
        FrontendEnv(scorer="perceptual", image_dir=image_dir, compat="yes")
