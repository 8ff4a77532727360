"""The text-environment base class that every colbench env derives from.

Every env is a ``gymnasium.Env[str, str]``: the observation is the text the agent reads, the
action is the agent's whole message. Subclasses implement :meth:`TextEnv._begin` and
:meth:`TextEnv._act`; this class picks tasks, counts turns, applies the turn budget and fills
the ``info`` keys that the runner and trainers rely on.

Ending an episode follows Gymnasium's split. ``terminated``: the task reached a terminal state
of its own (solved, failed for good, the final answer given). ``truncated``: a limit from
outside the task's dynamics cut it off (the turn budget, or a step limit of the simulator the
env wraps). :meth:`TextEnv.step` never reports both: when a subclass sets both on one step,
``terminated`` wins, because the task really did end there. Either way the last step's ``info``
carries the episode's ``metrics``, so a cut-off episode is still scored and recorded.
"""

from __future__ import annotations

import abc
import numbers
import string
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import gymnasium as gym
from gymnasium import spaces

from colbench.errors import ConfigError
from colbench.protocols import DEFAULT_PROTOCOL, Protocol, choose
from colbench.tasks import Task, TaskSet

Message = dict[str, str]

__all__ = ["DEFAULT_PROTOCOL", "AnyText", "Message", "Outcome", "ScriptedAgent", "TextEnv",
           "episode_turn_budget"]


class AnyText(spaces.Text):
    """A ``Text`` space whose ``contains`` admits any string up to ``max_length`` characters.

    Gymnasium's ``Text`` checks every character against a finite charset; an agent's message
    may contain any Unicode character, so membership only checks the type and the length.
    Sampling still draws from the printable ASCII charset.
    """

    def __init__(self, max_length: int, *, min_length: int = 0, seed: int | None = None) -> None:
        super().__init__(max_length=max_length, min_length=min_length,
                         charset=string.printable, seed=seed)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"


@dataclass
class Outcome:
    """What one agent action led to, as a subclass reports it to :meth:`TextEnv.step`.

    An outcome that ends the episode either way must carry ``metrics``.

    Parameters
    ----------
    observation : str
        What the agent reads next.
    reward : float
        The step's reward.
    terminated : bool
        The task reached a terminal state (wins over ``truncated`` when both are set).
    truncated : bool
        A limit outside the task's own dynamics (a wrapped simulator's step limit) ended the
        episode before the turn budget did; the base class truncates on the budget's last
        turn by itself, so a subclass that only has the turn budget never sets it.
    info : dict
        Gymnasium's ``info`` for the step.
    metrics : dict or None
        Set on the episode's last step: success, score and the suite's own metrics.
    """

    observation: str
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    info: dict[str, Any] = field(default_factory=dict)
    # Set on the episode's last step: success, score and the suite's own metrics.
    metrics: dict[str, Any] | None = None


class ScriptedAgent(abc.ABC):
    """A deterministic agent that may read the env's privileged data (see ``scripted:NAME``).

    Parameters
    ----------
    env : TextEnv
        The env it plays, whose current task (privileged data included) it may read.
    """

    def __init__(self, env: TextEnv) -> None:
        self.env = env

    @abc.abstractmethod
    def act(self, messages: Sequence[Message]) -> str:
        """The agent's next message, given the chat so far."""

    def seed_episode(self, seed: int) -> None:
        """Take the episode's seed before the first turn (``scripted:NAME`` binds one agent
        per episode and calls this wherever the agent plays, in this process or beside a
        remote env). Deterministic agents ignore it; one that draws at random seeds its
        draws from it, so that a run repeats exactly under every executor.

        Parameters
        ----------
        seed:
            The episode's seed (the record's ``seed``).
        """
        return None


#: The turn budget of an episode whose env sets none of its own: the one owner of this
#: default (the leaderboard's challenge server reads it for an env it cannot make).
DEFAULT_MAX_TURNS = 10


def episode_turn_budget(value: Any) -> int | None:
    """The ``max_turns`` of ``reset(options=...)``, checked: a whole number of at least 1, or
    None (the env's own budget for the task).

    This is the Gymnasium way to set a budget for one episode (a horizon curriculum grows it
    step by step); it holds for that episode only, and the next ``reset`` without it goes back
    to the env's own budget. Checked before the env changes anything, so a bad value leaves the
    episode in progress as it was."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ConfigError(f"reset(options={{'max_turns': ...}}) takes a whole number of turns "
                          f"of at least 1, got {value!r}")
    return int(value)


class TextEnv(gym.Env[str, str], abc.ABC):
    """Base of colbench's text environments. See the module docstring.

    Parameters
    ----------
    tasks : TaskSet
        The tasks ``reset`` draws from (not empty).
    max_turns : int or None
        The agent's turn budget per episode; None: the class's ``default_max_turns``.
    render_mode : str or None
        Gymnasium's render mode: ``ansi`` or None.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}
    #: Registered id prefix and version, e.g. ``colbench/Backend`` and ``"0"``.
    env_id: ClassVar[str] = ""
    version: ClassVar[str] = "0"
    default_max_turns: ClassVar[int] = DEFAULT_MAX_TURNS
    max_text_length: ClassVar[int] = 100_000
    #: The wall-clock bound, in seconds, on one ``reset`` or ``step`` when the runner plays
    #: the env (``colbench evaluate --step-timeout`` overrides it): a call past it ends the
    #: episode as the environment's failure, naming the call. An env whose steps are quick
    #: by nature sets a lower one.
    step_timeout_s: ClassVar[float] = 600.0
    #: AgentGym's env-specific server routes this env answers under ``colbench serve-envs``
    #: (``GET /agentgym/ENV_ID/ROUTE?id=N``, beside the routes every env has): route -> the
    #: name of the method answering it. The method takes what the episode's agent was shown
    #: at its reset, a mapping with ``observation`` (the first one), ``metadata`` (the task's
    #: public metadata) and ``fields`` (what :meth:`agentgym_reset_fields` added), and returns
    #: the JSON reply; a ColbenchError becomes AgentGym's ``{"error": ...}``.
    agentgym_routes: ClassVar[dict[str, str]] = {}
    #: AgentGym's routes of this env that a server does not answer, and why (each would show
    #: more than the agent observes, or privileged data): route -> the reason, sent with a 404.
    agentgym_unserved: ClassVar[dict[str, str]] = {}
    #: Scripted agents by name (``scripted:NAME``), each a ScriptedAgent subclass.
    scripted_agents: ClassVar[dict[str, Callable[[TextEnv], ScriptedAgent]]] = {}
    #: The protocols this env family plays, as objects (:mod:`colbench.protocols`), its
    #: default first; a subclass that declares them gets :attr:`protocols` from their names.
    protocol_specs: ClassVar[tuple[Protocol, ...]] = ()
    #: The names of the protocols this env plays (see :meth:`choose_protocol`); the first is
    #: its default, colbench's own. A named one (``agentgym``) reproduces a seed's released env.
    protocols: ClassVar[tuple[str, ...]] = (DEFAULT_PROTOCOL,)
    #: The protocol this instance plays; recorded in every result (:meth:`describe`).
    protocol: str = DEFAULT_PROTOCOL

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "protocol_specs" in cls.__dict__ and cls.protocol_specs:
            cls.protocols = tuple(spec.name for spec in cls.protocol_specs)

    def __init__(self, tasks: TaskSet, *, max_turns: int | None = None,
                 render_mode: str | None = None) -> None:
        if len(tasks) == 0:
            raise ConfigError(f"{type(self).__name__}: the task set {tasks.name!r} is empty")
        self.tasks = tasks
        # Without a budget from the caller, an env whose tasks have budgets of their own gives
        # each episode its task's (task_turn_budget); max_turns then says the largest.
        budgets = [] if max_turns is not None else [
            budget for task in tasks if (budget := self.task_turn_budget(task)) is not None]
        self._budget_per_task = bool(budgets)
        if budgets:
            max_turns = max(budgets)
        self.max_turns = int(self.default_max_turns if max_turns is None else max_turns)
        if self.max_turns < 1:
            raise ConfigError(f"max_turns must be at least 1, got {max_turns}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(f"render_mode {render_mode!r} is not one of "
                              f"{self.metadata['render_modes']}")
        self.render_mode = render_mode
        self.observation_space = AnyText(self.max_text_length)
        self.action_space = AnyText(self.max_text_length)
        self.task: Task | None = None
        self.turn = 0
        self._done = True
        self._episode_max_turns = self.max_turns
        self._transcript: list[tuple[str, str]] = []

    # -- subclass interface -------------------------------------------------------------------
    def system_prompt(self, task: Task) -> str:
        """Instructions for the agent, sent as the system message."""
        return ""

    def task_turn_budget(self, task: Task) -> int | None:
        """The turn budget of an episode on ``task`` by the kind of task it is (SciWorld's
        task types, BabyAI's level families), used when the env was given no ``max_turns``
        (a suite's constructor passes its protocol's budget, where the protocol sets one);
        None, the default: ``max_turns`` for every task. The constructor calls it, so it
        reads the task alone.

        Parameters
        ----------
        task : Task
            The task an episode plays.
        """
        return None

    def default_episode_max_turns(self, task: Task) -> int:
        """The turn budget of an episode on ``task`` when ``reset()`` names none: the task's
        own (:meth:`task_turn_budget`) where the env budgets per task, else ``max_turns``.

        Parameters
        ----------
        task : Task
            The task an episode plays.
        """
        budget = self.task_turn_budget(task) if self._budget_per_task else None
        return self.max_turns if budget is None else budget

    @abc.abstractmethod
    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        """Start an episode on ``task``; return the first observation and extra info."""

    @abc.abstractmethod
    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        """Apply the agent's message. On ``last_turn`` the env must finish the episode
        (set ``metrics``): it is ``truncated`` unless the outcome says ``terminated`` (the
        env's call: the step itself reached a terminal state). Before the last turn, an
        outcome may end the episode with ``terminated`` or ``truncated``."""

    # -- gymnasium API ------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        task_id = options.pop("task_id", None)
        max_turns = episode_turn_budget(options.pop("max_turns", None))
        if task_id is not None:
            task = self.tasks.get(str(task_id))
        else:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        self._episode_max_turns = (max_turns if max_turns is not None
                                   else self.default_episode_max_turns(task))
        self.task = task
        self.turn = 0
        self._done = False
        self._transcript = []
        observation, extra = self._begin(task)
        self._transcript.append(("env", observation))
        info = {"task_id": task.id, "turn": 0, "max_turns": self._episode_max_turns,
                "system_prompt": self.system_prompt(task),
                "message_structure": self.protocol_spec.message_structure, **extra}
        return observation, info

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done or self.task is None:
            raise RuntimeError("the episode has ended: call reset() before step()")
        if not isinstance(action, str):
            raise TypeError(f"an action is a str, got {type(action).__name__}")
        self.turn += 1
        last_turn = self.turn >= self._episode_max_turns
        self._transcript.append(("agent", action))
        outcome = self._act(action, last_turn=last_turn)
        terminated = bool(outcome.terminated)
        # Never both: a step that reached a terminal state is terminated even at a limit.
        truncated = not terminated and (bool(outcome.truncated) or last_turn)
        info = {"task_id": self.task.id, "turn": self.turn,
                "max_turns": self._episode_max_turns, **outcome.info}
        if terminated or truncated:
            self._done = True
            if outcome.metrics is None:
                raise RuntimeError(f"{type(self).__name__} ended an episode without metrics")
        if outcome.metrics is not None:
            info["metrics"] = dict(outcome.metrics)
        self._transcript.append(("env", outcome.observation))
        return outcome.observation, float(outcome.reward), terminated, truncated, info

    def render(self) -> str | None:
        if self.render_mode != "ansi":
            return None
        return "\n\n".join(f"[{who}] {text}" for who, text in self._transcript)

    # -- colbench extensions ------------------------------------------------------------------
    def privileged(self) -> dict[str, Any]:
        """The current task's privileged data: for simulators, scorers and critics only."""
        if self.task is None:
            raise RuntimeError("no task: call reset() first")
        return dict(self.task.privileged)

    @classmethod
    def protocol_objects(cls) -> tuple[Protocol, ...]:
        """This env family's protocols as objects: the declared ones, or (for an env that
        names its protocols only) one plain :class:`~colbench.protocols.Protocol` per name."""
        return cls.protocol_specs or tuple(Protocol(name) for name in cls.protocols)

    @property
    def protocol_spec(self) -> Protocol:
        """The protocol object this instance plays (the env delegates its rules to it)."""
        return choose(self.protocol_objects(), self.protocol, type(self).__name__)

    def choose_protocol(self, name: str | None) -> str:
        """Set and return the protocol this instance plays (``None``: the default). A name
        the env does not play is a ConfigError listing the ones it does, so that a run never
        silently plays another protocol than the one asked for.

        Parameters
        ----------
        name:
            The protocol's name, or None for the env's default.
        """
        self.protocol = choose(self.protocol_objects(), name, type(self).__name__).name
        return self.protocol

    def scripted_agent(self, name: str) -> ScriptedAgent:
        factory = self.scripted_agents.get(name)
        if factory is None:
            known = ", ".join(sorted(self.scripted_agents)) or "none"
            raise ConfigError(f"{type(self).__name__} has no scripted agent {name!r} "
                              f"(known: {known})")
        return factory(self)

    def describe(self) -> dict[str, Any]:
        """Facts about this env instance that results record (simulator, scorer...)."""
        # The protocol's settings as this instance plays them: its budget is the effective one
        # (a max_turns argument overrides the protocol's).
        spec = self.protocol_spec
        settings = {**spec.settings(), "max_turns": self.max_turns,
                    "notes": spec.notes_for(self.tasks)}
        return {"env_version": self.version, "task_set": self.tasks.name,
                "task_set_hash": self.tasks.hash, "protocol": self.protocol,
                "protocol_settings": settings}

