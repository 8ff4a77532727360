"""The frontend suite's replay: how a server re-checks a recorded frontend episode.

What decides a frontend episode's figures is its last page: the env renders the last HTML the
agent wrote and scores that render against the target's. The replay re-does exactly that,
with the env's own code: a fresh :class:`~colbench.gyms.frontend.env.FrontendEnv` with the
server's scorer is reset for the task and given one final message holding the transcript's
last HTML (or no HTML, when the transcript has none), so the page is re-rendered by the
server's renderer and re-scored by the server's scorer. Everything else is recomputed from
the transcript the way the env counts it and compared with the record: the first
observation (the task's description), each turn starting from the reply to the one before,
where the episode ends (the first message with ``I WANT TO ANSWER:``, or the last turn), the
rewards (0 but on the last turn), the final answer, the closing message, and the metrics
``score``, ``success``, ``missing_answer``, ``answered``, ``questions``, ``turns`` and
``html_messages``.

Why not re-step the whole dialogue: the designer's replies do not enter the score (only the
last page does), re-stepping would render every page the agent sent instead of one (a render
is the expensive part: about a second each), and the built-in designer reads the rendered
DOM, whose layout depends on the browser build and fonts of the machine that rendered it,
so an honest run made elsewhere could not be told from a forged one by its replies. The
replies are therefore kept as recorded (the board shows which simulator a run used); a
record that edits them gains nothing that the score sees.

Scores: the server scores with the scorer the run names, only if it holds the same one:
``perceptual`` (weight-free), or a CLIP whose weights hash equals the run's
``scorer_weights_hash``, from the CLIP folders or hub ids the operator lists
(``clip_models``, default: ``$COLBENCH_REPLAY_CLIP_MODELS``, separated by ``os.pathsep``).
A scorer named by the run is never loaded by its name (it may be a path or a class of the
submitter's choosing). A recorded score must agree with the server's within
``score_tolerance`` (renders of one page differ slightly between browser builds); the
server's score is the one ranked.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from colbench.answer import ANSWER_MARKER
from colbench.gyms.frontend.env import FrontendEnv
from colbench.gyms.frontend.protocol import extract_html
from colbench.gyms.frontend.protocols import PROTOCOLS, FrontendProtocol
from colbench.protocols import choose
from colbench.records import EpisodeRecord
from colbench.replay import (
    MODEL_FAILURE_METRICS,
    ReplayResult,
    RunFacts,
    helpers_outside_memory_limit,
    same_value,
    show_value,
)
from colbench.tasks import Task, TaskSet

#: Where an operator lists the CLIP weights its server scores with (folders or hub ids).
CLIP_MODELS_VARIABLE = "COLBENCH_REPLAY_CLIP_MODELS"
#: Metrics recomputed from the transcript alone (the env counts them the same way).
COUNTED = ("answered", "questions", "turns", "html_messages")
#: Metrics that come from re-rendering and re-scoring the last page.
SCORED = ("score", "success", "missing_answer")


def final_message(page: str | None) -> str:
    """A final answer whose page, as the env reads it, is exactly ``page`` (None: a final
    answer with no page). ``page`` is what :func:`extract_html` read from some message, so
    one of the forms it reads gives it back; the first that does is used."""
    if page is None:
        return ANSWER_MARKER
    for message in (f"{ANSWER_MARKER}\n```html\n{page}```", f"{ANSWER_MARKER}\n{page}"):
        if extract_html(message) == page:
            return message
    raise ValueError("the page cannot be sent back in a message that reads as the same page")


class FrontendReplay:
    """Re-renders and re-scores ``colbench/Frontend-v0`` episodes; see the module docstring.

    ``ranking``: each protocol's own (:attr:`FrontendProtocol.ranking`): a ``sweet-rl``
    board ranks by mean similarity (``score``), the paper's second figure (its first, the
    win rate against a reference, compares two runs), then by success; ``success`` is colbench's own 0.9 threshold, which the paper does not use.
    colbench's own protocol keeps the default (success, then score). An episode is read by
    the rules of the protocol its run played (its page, its final answer, its closing text).

    Parameters
    ----------
    sandbox : object or None
        Handed to every replay by a server; ignored, since no code runs.
    clip_models : sequence of str or None
        CLIP weights the server holds (folders or hub ids loaded offline).
    renderer : Renderer or None
        As for :class:`FrontendEnv`; None: the process's warm renderer pool.
    image_dir : str or Path or None
        As for :class:`FrontendEnv`; None: the render cache.
    render_timeout : float or None
        As for :class:`FrontendEnv`.
    score_tolerance : float
        How far a recorded score may be from the server's.
    workers : int
        Episodes checked at once.
    """

    ranking: ClassVar[dict[str, tuple[str, ...]]] = {
        protocol.name: protocol.ranking for protocol in PROTOCOLS if protocol.ranking}

    def __init__(self, sandbox: object = None, *, clip_models: Sequence[str] | None = None,
                 renderer: Any = None, image_dir: str | Path | None = None,
                 render_timeout: float | None = None, score_tolerance: float = 0.01,
                 workers: int = 2) -> None:
        del sandbox  # no untrusted code runs: pages render in the browser's own sandbox
        if clip_models is None:
            listed = os.environ.get(CLIP_MODELS_VARIABLE, "")
            clip_models = [c for c in listed.split(os.pathsep) if c.strip()]
        if not 0 <= score_tolerance < 1:
            raise ValueError(f"score_tolerance must be in [0, 1), got {score_tolerance}")
        if workers < 1:
            raise ValueError(f"FrontendReplay needs at least one worker, got {workers}")
        self.clip_models = [str(c) for c in clip_models]
        self.renderer = renderer
        self.image_dir = image_dir
        self.render_timeout = render_timeout
        self.score_tolerance = float(score_tolerance)
        self._workers = int(workers)
        self._clips: dict[str, Any] | None = None  # weights hash -> scorer, loaded once
        self._clip_failures: list[str] = []
        self._own_renderer: Any = None
        self._own_pid = 0
        self._lock = threading.Lock()

    @property
    def workers(self) -> int:
        return self._workers

    # -- the server's scorers -------------------------------------------------------------------
    def _server_clips(self) -> dict[str, Any]:
        with self._lock:
            if self._clips is None:
                from colbench.gyms.frontend.scoring import make_scorer

                clips: dict[str, Any] = {}
                for source in self.clip_models:
                    try:
                        scorer = make_scorer(f"clip:{source}")
                    except Exception as exc:  # an operator's typo must not stop the others
                        self._clip_failures.append(f"{source}: {exc}")
                        continue
                    clips[scorer.weights_hash()] = scorer
                self._clips = clips
            return self._clips

    def scorer_for(self, run: RunFacts) -> Any | None:
        """The server's scorer for ``run``, or None when it holds none that is the same."""
        from colbench.gyms.frontend.scoring import make_scorer

        perceptual = make_scorer("perceptual")
        if run.scorer in ("perceptual", perceptual.name):  # its name carries its version
            return perceptual
        if (run.scorer or "").startswith("clip") and run.scorer_weights_hash:
            return self._server_clips().get(run.scorer_weights_hash)
        return None

    def run_problems(self, run: RunFacts) -> list[str]:
        if self.scorer_for(run) is not None:
            return []
        if not (run.scorer or "").startswith("clip"):
            return [f"summary.json names the scorer {run.scorer!r}; the server re-scores "
                    "pages only with perceptual or a CLIP whose weights it holds"]
        held = ", ".join(sorted(self._server_clips())) or "none"
        return [f"the run was scored by {run.scorer!r} with weights "
                f"{run.scorer_weights_hash or '(no hash in summary.json)'}; this server holds "
                f"no CLIP with those weights (it holds: {held}), so it cannot re-score the "
                "pages"]

    # -- one episode ----------------------------------------------------------------------------
    @staticmethod
    def rules_for(run: RunFacts) -> FrontendProtocol:
        """The protocol ``run`` played, whose rules read its episodes.

        Parameters
        ----------
        run:
            What the run's ``summary.json`` says (its ``protocol``).
        """
        return choose(PROTOCOLS, run.protocol, "FrontendReplay")

    def check(self, task: Task, record: EpisodeRecord, run: RunFacts) -> ReplayResult:
        where = f"{record.task_id} trial {record.trial}"
        rules = self.rules_for(run)
        model_failed = getattr(record, "failure", None) == "model"
        turns = record.turns
        problems: list[str] = []
        if not turns and not model_failed:
            return ReplayResult(self.failed_metrics(task, record),
                                [f"{where}: the record has no turns"])
        if turns and turns[0].observation != task.prompt:
            problems.append(f"{where}: the first observation is not the task's description")
        for number in range(1, len(turns)):
            if turns[number].observation != turns[number - 1].next_observation:
                problems.append(f"{where}: turn {number + 1} does not start from the reply to "
                                f"turn {number}")
        final_at = next((i for i, t in enumerate(turns) if rules.is_final(t.action)), None)
        if final_at is not None and final_at + 1 < len(turns):
            problems.append(f"{where}: turn {final_at + 1} is a final answer but the "
                            "transcript goes on")
        if model_failed:
            if final_at is not None:
                problems.append(f"{where}: the record says the model failed, but turn "
                                f"{final_at + 1} is a final answer")
            metrics = dict(MODEL_FAILURE_METRICS)
            return ReplayResult(metrics, problems + self._compare(record, metrics, where,
                                                                 tuple(metrics)))
        for number, turn in enumerate(turns[:-1], start=1):
            if not same_value(turn.reward, 0.0):
                problems.append(f"{where}: turn {number}: recorded reward "
                                f"{show_value(turn.reward)}, but only the last turn is scored")
        pages = [html for html in (rules.read_page(t.action) for t in turns) if html is not None]
        answered = rules.is_final(turns[-1].action)
        counted = {"answered": answered, "questions": len(turns) - 1, "turns": len(turns),
                   "html_messages": len(pages)}
        if (record.terminated or record.truncated) and \
                (record.terminated, record.truncated) != (answered, not answered):
            problems.append(f"{where}: the record says the episode was "
                            f"{'terminated' if record.terminated else 'truncated'}, but it "
                            f"{'ends with' if answered else 'has no'} final answer")
        last_page = pages[-1] if pages else None
        if record.final_answer is not None and record.final_answer != last_page:
            problems.append(f"{where}: the recorded final_answer is not the last HTML in the "
                            "transcript (the server scores the transcript)")
        scorer = self.scorer_for(run)
        if scorer is None:  # named in run_problems; the record's figures are kept
            metrics = dict(record.metrics)
            metrics.update(counted)
            return ReplayResult(metrics, problems + self._compare(record, metrics, where,
                                                                 COUNTED))
        try:
            metrics = self.rescore(task, last_page, scorer)
        except ValueError as exc:
            metrics = self.failed_metrics(task, record)
            problems.append(f"{where}: the last page cannot be re-scored: {exc}")
        metrics.update(counted)
        recorded_score = record.metrics.get("score")
        closing = turns[-1].next_observation
        if isinstance(recorded_score, (int, float)) and closing is not None and \
                closing != rules.closing_observation(recorded_score):
            problems.append(f"{where}: turn {len(turns)}: the recorded closing message does "
                            "not state the recorded score")
        if not same_value(turns[-1].reward, recorded_score):
            problems.append(f"{where}: turn {len(turns)}: recorded reward "
                            f"{show_value(turns[-1].reward)} is not the recorded score "
                            f"{show_value(recorded_score)}")
        return ReplayResult(metrics, problems + self._compare(record, metrics, where,
                                                             SCORED + COUNTED))

    def _renderer(self) -> Any:
        """The renderer given, else one of the replay's own per process (a server verifies in
        forked processes; a browser pool started by another process is not usable there)."""
        if self.renderer is not None:
            return self.renderer
        with self._lock:
            if self._own_renderer is None or self._own_pid != os.getpid():
                from colbench.gyms.frontend.render.renderer import DEFAULT_TIMEOUT, Renderer

                renderer = Renderer(pool_size=self._workers,
                                    timeout=self.render_timeout or DEFAULT_TIMEOUT)
                with helpers_outside_memory_limit():
                    renderer.warm()  # started now, outside a verifier's memory limit
                self._own_renderer, self._own_pid = renderer, os.getpid()
            return self._own_renderer

    def release(self) -> None:
        """Close the replay's own renderer (the verifier calls it when a batch of checks
        ends; the next check starts another)."""
        with self._lock:
            renderer, mine = self._own_renderer, self._own_pid == os.getpid()
            self._own_renderer = None
        if renderer is not None and mine:
            renderer.close()

    def rescore(self, task: Task, page: str | None, scorer: Any) -> dict[str, Any]:
        """The env's metrics for ``page`` as the final answer to ``task`` (None: no page),
        rendered and scored by the server."""
        message = final_message(page)
        env = FrontendEnv(tasks=TaskSet(f"replay-{task.id}", [task]), scorer=scorer,
                          renderer=self._renderer(), image_dir=self.image_dir,
                          render_timeout=self.render_timeout)
        try:
            env.reset(options={"task_id": task.id, "max_turns": 1})
            *_, info = env.step(message)
        finally:
            env.close()
        return dict(info["metrics"])

    def failed_metrics(self, task: Task, record: EpisodeRecord) -> dict[str, Any]:
        return {"score": 0.0, "success": False, "missing_answer": True, "answered": False,
                "questions": 0, "turns": 0, "html_messages": 0}

    def _compare(self, record: EpisodeRecord, metrics: dict[str, Any], where: str,
                 keys: Sequence[str]) -> list[str]:
        problems = []
        for key in keys:
            recorded, mine = record.metrics.get(key), metrics.get(key)
            close = (key == "score" and isinstance(recorded, (int, float))
                     and not isinstance(recorded, bool) and isinstance(mine, (int, float))
                     and abs(float(recorded) - float(mine)) <= self.score_tolerance)
            if not (close or same_value(recorded, mine)):
                problems.append(f"{where}: recorded {key} {show_value(recorded)}, the "
                                f"server's re-run gives {show_value(mine)}")
        return problems
