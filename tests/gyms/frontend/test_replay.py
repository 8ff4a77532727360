"""The frontend's replay: the last page of an honest record is re-rendered and re-scored to
the recorded figures (perceptual and CLIP scorers), the transcript's counts are recomputed,
every forgery that touches the score or the transcript is named, and a run scored with
weights the server does not hold is never re-scored by the name the run gives."""

from __future__ import annotations

from pathlib import Path

import pytest
from replay_helpers import forgeries, play

from colbench.answer import ANSWER_MARKER
from colbench.gyms.frontend.env import FrontendEnv
from colbench.gyms.frontend.replay import FrontendReplay, final_message
from colbench.gyms.frontend.scoring import make_scorer
from colbench.gyms.frontend.tasks import load_frontend_tasks
from colbench.replay import RunFacts, find_replay
from colbench.tasks import TaskSet

ENV = "colbench/Frontend-v0"
PAGE = "<html><body><h1 class='text-3xl'>Hello</h1></body></html>"


@pytest.fixture(scope="module")
def task():
    return load_frontend_tasks("test")[0]


def _records(task, renderer, image_dir: Path, scorer: str):
    env = FrontendEnv(tasks=TaskSet("one", [task]), scorer=scorer, renderer=renderer,
                      image_dir=image_dir)
    try:
        honest = play(env, [f"Here is a start:\n```html\n{PAGE}\n```", "Does the title fit?",
                            f"{ANSWER_MARKER}\n```html\n{task.privileged['ground_truth']}```"],
                      env_id=ENV, options={"task_id": task.id})
        failing = play(env, [f"{ANSWER_MARKER} nothing yet"], env_id=ENV,
                       options={"task_id": task.id})
    finally:
        env.close()
    return honest, failing


def _run(scorer: str) -> RunFacts:
    made = make_scorer(scorer)
    return RunFacts(env=ENV, split="test", simulator="builtin", scorer=made.name,
                    scorer_weights_hash=made.weights_hash())


def test_the_registry_names_the_frontend_replay() -> None:
    assert find_replay(ENV) is FrontendReplay


def test_honest_records_are_re_rendered_and_re_scored(task, renderer, image_dir,
                                                      tiny_clip) -> None:
    for scorer in ("perceptual", f"clip:{tiny_clip}"):
        replay = FrontendReplay(clip_models=[str(tiny_clip)], renderer=renderer,
                                image_dir=image_dir, score_tolerance=0.0)
        honest, failing = _records(task, renderer, image_dir, scorer)
        assert honest.metrics["questions"] == 2 and failing.metrics["missing_answer"]
        assert replay.run_problems(_run(scorer)) == []
        for record in (honest, failing):
            result = replay.check(task, record, _run(scorer))
            assert result.problems == [], scorer
            for key in ("score", "success", "missing_answer", "answered", "questions",
                        "turns", "html_messages"):
                assert result.metrics[key] == record.metrics[key], (scorer, key)


def test_every_forgery_of_the_score_or_the_transcript_is_named(task, renderer,
                                                               image_dir) -> None:
    honest, failing = _records(task, renderer, image_dir, "perceptual")
    replay = FrontendReplay(renderer=renderer, image_dir=image_dir)
    run = _run("perceptual")
    found = forgeries(honest, failing, f"{ANSWER_MARKER} done")
    for kind in ("edited success", "no turns", "written without running", "other actions"):
        assert replay.check(task, found[kind], run).problems, kind
    # A page that is not the transcript's, a closing message that states another score.
    turns = [t.model_copy() for t in honest.turns]
    turns[-1] = turns[-1].model_copy(update={"next_observation": "Your page scored 0.123 "
                                             "against the page I had in mind."})
    assert replay.check(task, honest.model_copy(update={"turns": turns}), run).problems
    assert replay.check(task, honest.model_copy(update={"final_answer": PAGE}), run).problems
    # By design, the designer's replies are not replayed (module docstring): they do not
    # enter the score, which is recomputed from the last page.
    assert replay.check(task, found["edited observation"], run).problems == []


def test_weights_the_server_does_not_hold_are_never_loaded_by_the_runs_name(tiny_clip
                                                                            ) -> None:
    replay = FrontendReplay(clip_models=[])
    run = RunFacts(env=ENV, scorer=f"clip:{tiny_clip}", scorer_weights_hash="sha256:abc")
    [problem] = replay.run_problems(run)
    assert "holds no CLIP with those weights" in problem
    hostile = RunFacts(env=ENV, scorer="os:system", scorer_weights_hash=None)
    assert "re-scores pages only with perceptual" in replay.run_problems(hostile)[0]


def test_the_final_message_reads_as_the_same_page() -> None:
    from colbench.gyms.frontend.protocol import extract_html

    for page in (PAGE + "\n", "<html><body><pre>```</pre></body></html>\n"):
        assert extract_html(final_message(page)) == page
    assert final_message(None) == ANSWER_MARKER
