"""The ColBench Frontend Design environment."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, ClassVar

from colbench.env import Outcome, TextEnv
from colbench.errors import ConfigError, EnvironmentFailure
from colbench.gyms.frontend.protocols import PROTOCOLS, FrontendProtocol
from colbench.gyms.frontend.tools import FRONTEND_TOOLS
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool

_SUCCESS_THRESHOLD = 0.9


class FrontendEnv(TextEnv):
    """## Description

    ColBench Frontend Design. A simulated person wants a web page and describes it vaguely;
    the target page (Tailwind HTML) is hidden. The agent writes HTML; each time, the person sees
    the agent's render beside the target's and says what differs. The final page is scored by
    the similarity of its render to the target's render.

    ## Observation

    Text (``AnyText``, up to 100,000 characters): first the person's description, then after
    each agent message the person's reply (at most 1,000 characters, never HTML). ``info``
    carries ``images``: the path of the PNG render of the agent's current page (empty until the
    agent has sent HTML) and ``render_verdict`` when that render did not succeed.

    ## Action

    Text: the agent's whole message. HTML in it (a fenced ```html block or an
    ``<html>...</html>`` document) becomes the agent's current page; the last HTML the agent
    produced is its answer. A message containing ``I WANT TO ANSWER:`` ends the episode.

    ## Reward

    0 on every turn but the last; on the last, ``score``: the scorer's similarity of the final
    page's render to the target's (``clip``: cosine of CLIP image embeddings; ``perceptual``:
    a weight-free image similarity; see :mod:`colbench.gyms.frontend.scoring`). A missing answer
    (no HTML at all) or a page that does not render is scored as a black image. The terminal
    ``info["metrics"]`` holds ``score``, ``success`` (score >= ``success_threshold``, default
    0.9), ``missing_answer``, ``answered``, ``questions``, ``turns``, ``html_messages``,
    ``render_verdict``, ``target_image`` and ``final_image`` (PNG paths, for reports; the
    terminal ``info`` has them too; for a missing answer ``final_image`` is the black picture
    that was scored).

    ## Termination

    ``terminated`` when the agent answers. When ``max_turns`` (default 10) run out, the last
    HTML so far is scored and the episode is ``truncated``.

    ## Arguments

    ``split`` ("train" or "test"), ``tasks`` (a task-set name, a colbench task JSONL or a
    published ColBench frontend JSONL), ``max_turns``, ``simulator`` ("builtin" or a model
    spec for a designer that sees images), ``scorer`` ("clip", "clip:PATH_OR_HUB_ID",
    "perceptual", or a Scorer), ``clip_model`` (hub id or folder for ``clip``),
    ``success_threshold``, ``render_timeout`` (seconds per render, default 10), ``image_dir``
    (where renders are kept; default ``$COLBENCH_CACHE/frontend/renders``, a cache capped at
    ``$COLBENCH_RENDER_CACHE_SIZE``, default 2 GiB: see
    :mod:`colbench.gyms.frontend.render.store`), ``renderer`` (a
    :class:`~colbench.gyms.frontend.render.Renderer`; the process-wide warm pool by default),
    ``compat`` (accepted so that one command line serves both ColBench suites; it changes
    nothing here, since this env already renders full-page, scores with CLIP ViT-B/32 cosine
    and cuts the person's replies at 1000 characters as the reference harness does; in the
    backend suite it applies the reference's answer blocklist).

    ``protocol``: ``colbench`` (default) or ``sweet-rl``, the released SWEET-RL harness's
    designer: a vision model (``simulator`` must be its spec) shown only the agent's render of
    the current message and the target's render, its reply cut to 1,000 characters (see
    :mod:`colbench.gyms.frontend.sweet_rl`). The env delegates its instructions, task set,
    turn budget, message reading, designer and closing text to the protocol's object
    (:mod:`colbench.gyms.frontend.protocols`).

    Weights are loaded when the env is first asked to score or to ``describe()`` itself (the
    runner does that before any episode), so a missing CLIP stops a run at once with a message
    saying how to provide it.

    ## Registered ids

    ``colbench/Frontend-v0``.

    ## Versions

    * v0: first version.
    """

    env_id: ClassVar[str] = "colbench/Frontend"
    version: ClassVar[str] = "0"
    default_max_turns: ClassVar[int] = 10
    protocol_specs: ClassVar[tuple[FrontendProtocol, ...]] = PROTOCOLS
    #: The actions as OpenAI tools (``colbench.tools``): ``ask`` and ``answer``.
    action_tools: ClassVar[tuple[ActionTool, ...]] = FRONTEND_TOOLS

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 max_turns: int | None = None, simulator: Any = None,
                 scorer: Any = "clip", clip_model: str | None = None,
                 success_threshold: float = _SUCCESS_THRESHOLD,
                 render_timeout: float | None = None, image_dir: str | Path | None = None,
                 renderer: Any = None, render_mode: str | None = None,
                 compat: bool = False, protocol: str | None = None) -> None:
        from colbench.gyms.frontend.render.renderer import DEFAULT_TIMEOUT, find_browser
        from colbench.gyms.frontend.tasks import cache_dir

        self.choose_protocol(protocol)
        rules = self.rules
        task_set = tasks if isinstance(tasks, TaskSet) else rules.load_tasks(split, tasks)
        if max_turns is None:
            max_turns = rules.max_turns
        super().__init__(task_set, max_turns=max_turns, render_mode=render_mode)
        if renderer is None:
            find_browser()  # fail now, with how to install, rather than mid-episode
        self._renderer = renderer
        self.render_timeout = float(render_timeout or DEFAULT_TIMEOUT)
        self.image_dir = Path(image_dir) if image_dir is not None else cache_dir() / "renders"
        # The designer is made when an episode or describe() first needs it (the runner
        # describes the env before any episode, so a run without the designer its protocol
        # needs, sweet-rl's vision model, stops at start); reading the tasks needs none.
        self._simulator_spec = simulator
        self._simulator: Any = None
        if isinstance(scorer, str) and clip_model and scorer == "clip":
            scorer = f"clip:{clip_model}"
        elif clip_model and not (isinstance(scorer, str) and scorer.startswith("clip")):
            raise ConfigError(f"clip_model={clip_model!r} needs scorer='clip', not {scorer!r}")
        self._scorer_spec = scorer
        # Accepted so that one command line serves both ColBench suites; nothing to switch.
        if not isinstance(compat, bool):
            raise ConfigError(f"compat must be True or False, got {compat!r}")
        self._scorer: Any = None
        self.success_threshold = float(success_threshold)
        self._store: Any = None
        self._lock = threading.Lock()
        self._reset_state()

    def _reset_state(self) -> None:
        self._dialogue: list[dict[str, str]] = []
        self._questions = 0
        self._html_messages = 0
        self._last_html: str | None = None
        self._answer: Any = None
        self._answer_path: Path | None = None
        self._target: Any = None
        self._target_path: Path | None = None

    @property
    def rules(self) -> FrontendProtocol:
        """The protocol this instance plays, with the frontend's behaviour."""
        spec = self.protocol_spec
        assert isinstance(spec, FrontendProtocol)
        return spec

    # -- lazily built parts ---------------------------------------------------------------------
    @property
    def scorer(self) -> Any:
        if self._scorer is None:
            from colbench.gyms.frontend.scoring import make_scorer

            self._scorer = make_scorer(self._scorer_spec)
        return self._scorer

    @property
    def simulator(self) -> Any:
        """The simulated designer the protocol makes from ``simulator`` (on first use)."""
        with self._lock:
            if self._simulator is None:
                self._simulator = self.rules.make_designer(self._simulator_spec)
            return self._simulator

    @property
    def store(self) -> Any:
        with self._lock:
            if self._store is None:
                from colbench.gyms.frontend.render.renderer import get_renderer
                from colbench.gyms.frontend.render.store import RenderStore

                renderer = self._renderer or get_renderer(timeout=self.render_timeout)
                self._store = RenderStore(renderer, self.image_dir)
            return self._store

    @property
    def scripted_agents(self) -> dict[str, Any]:  # type: ignore[override]
        from colbench.gyms.frontend.baselines import BASELINES
        from colbench.gyms.frontend.oracle import OracleAgent

        return {"oracle": OracleAgent, **BASELINES}

    def system_prompt(self, task: Task) -> str:
        return self.rules.system_prompt(self._episode_max_turns)

    # -- rendering --------------------------------------------------------------------------------
    def target_render(self) -> tuple[Any, Path]:
        """The target's render (once per episode); its failure is the environment's."""
        if self._target is None:
            assert self.task is not None
            result, path = self.store.render(self.task.privileged["ground_truth"])
            if not result.ok or path is None:
                raise EnvironmentFailure(f"task {self.task.id}: the target page did not "
                                         f"render ({result.verdict()})")
            self._target, self._target_path = result, path
        else:  # held all episode: keep it from the cache's eviction (and restore it if gone)
            assert self._target_path is not None
            self.store.keep(self._target, self._target_path)
        assert self._target_path is not None
        return self._target, self._target_path

    # -- the episode ------------------------------------------------------------------------------
    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        if not isinstance(task.privileged.get("ground_truth"), str):
            raise ConfigError(f"task {task.id!r} has no target HTML (privileged ground_truth)")
        self._reset_state()
        self.simulator  # noqa: B018  (made now: an episode must not fail at its first reply)
        self._dialogue = [{"role": "user", "content": task.prompt}]
        return task.prompt, {"images": []}

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.task is not None
        rules = self.rules
        html = rules.read_page(action)
        info: dict[str, Any] = {}
        if html is not None:
            self._html_messages += 1
            self._last_html = html
            self._answer, self._answer_path = self.store.render(html)
            if not self._answer.ok:
                info["render_verdict"] = self._answer.verdict()
        elif self._answer_path is not None:  # the same page again: its path must stay valid
            self.store.keep(self._answer, self._answer_path)
        info["images"] = [str(self._answer_path)] if self._answer_path is not None else []
        final = rules.is_final(action)
        if not final and not last_turn:
            target, _ = self.target_render()
            shown = rules.shown_page(html is not None, self._answer)
            reply = self.simulator.reply(self.task, list(self._dialogue), action,
                                         target=target, answer=shown)
            self._questions += 1
            self._dialogue += [{"role": "assistant", "content": action},
                               {"role": "user", "content": reply}]
            return Outcome(observation=reply, info=info)
        metrics = self._score()
        metrics.update(questions=self._questions, turns=self.turn, answered=final,
                       html_messages=self._html_messages)
        info.update(final_answer=self._last_html, target_image=metrics["target_image"],
                    final_image=metrics["final_image"])
        observation = rules.closing_observation(metrics["score"])
        return Outcome(observation=observation, reward=metrics["score"], terminated=final,
                       info=info, metrics=metrics)

    def _score(self) -> dict[str, Any]:
        from colbench.gyms.frontend.scoring import black_image

        target, target_path = self.target_render()
        missing = self._last_html is None
        rendered = self._answer is not None and self._answer.ok
        answer_image = self._answer.image() if rendered else black_image()
        score = float(self.scorer.score(answer_image, target.image()))
        if missing:
            verdict = "no HTML in any message: scored as a black image"
        elif not rendered:
            verdict = f"the page did not render ({self._answer.verdict()}): scored as black"
        else:
            verdict = self._answer.verdict()
        final_path = self._answer_path if rendered else self._black_path(answer_image)
        return {"score": score, "success": score >= self.success_threshold,
                "missing_answer": missing, "render_verdict": verdict,
                "target_image": str(target_path), "final_image": str(final_path)}

    def _black_path(self, image: Any) -> Path:
        """The black picture that stood for the answer, on disk for reports."""
        path = self.store.folder / f"black-{image.width}x{image.height}.png"
        if not path.is_file():
            import io

            from colbench.taskcache import write_private

            buffer = io.BytesIO()
            image.save(buffer, format="PNG")
            write_private(path, buffer.getvalue())
        return path

    def describe(self) -> dict[str, Any]:
        facts = super().describe()
        facts.update(self.scorer.describe())
        facts["simulator"] = self.simulator.name
        facts["renderer"] = self.store.renderer.version
        return facts
