"""The backend's protocols as objects: colbench's own and ``sweet-rl``.

(:mod:`colbench.gyms.backend.protocol` is the answer format; this module names the rule sets
an env plays by.) Each protocol owns its task set and the source it names, the instructions
(a system prompt), the part of the agent's message that counts, the scorer, the turn budget,
the agent's default sampling, the model-backed simulated human's settings, and the answer the
oracle gives; :class:`~colbench.gyms.backend.env.BackendEnv` delegates each of those to the
protocol it plays.

``sweet-rl`` plays by the SWEET-RL harness's rules (:mod:`colbench.gyms.backend.sweet_rl`):
its message rules and verdict, the agent sampled at T = 1.0 with 1,024 new tokens, and a
model-backed person asked as the harness asks it (one user message holding the whole
transcript, T = 0, 4,096 new tokens, the reply's first 400 characters, no code filter). The
paper's numbers are on the harness's test set; a run on colbench's generated tasks says so in
``summary.json`` and at start, with the command that imports the published set.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from colbench.errors import ConfigError
from colbench.gyms.backend import sweet_rl
from colbench.gyms.backend.protocol import ANSWER_MARKER, answer_text, extract_code
from colbench.gyms.backend.scoring import score_code
from colbench.gyms.backend.tasks import OFFICIAL_SOURCE, load_backend_tasks
from colbench.protocols import DEFAULT_PROTOCOL, Protocol, SamplingDefaults
from colbench.tasks import Task, TaskSet

if TYPE_CHECKING:
    from colbench.models.base import SamplingParams

SYSTEM_PROMPT = """You are helping a person write a Python function. They describe what they \
need, but their request leaves out details that only they know: exact thresholds, special \
cases, rounding, ordering, defaults, error conventions. Ask them short questions to learn those \
details; they answer in plain words and never write code. You have at most {max_turns} \
messages in total. When you are ready, send a message that starts with "{marker}" followed by \
the complete function in Python (you may add imports and helper functions). Your last allowed \
message counts as your answer whatever it says."""

#: The longest reply of the simulated human, in characters: the published harness's cut.
REPLY_CUT_CHARS = 400

#: The forms the model-backed person's request takes (see :class:`ModelHumanSettings`).
MESSAGE_FORMS: tuple[str, ...] = ("chat", "transcript")
#: How its reply is cut to ``max_chars`` (see :class:`ModelHumanSettings`).
REPLY_CUTS: tuple[str, ...] = ("sentence", "characters")


@dataclass(frozen=True)
class ModelHumanSettings:
    """How the model-backed simulated human is asked and how its reply is cut: a protocol's
    simulator settings (:attr:`BackendProtocol.human`), recorded with every run.

    The defaults are colbench's own.

    Parameters
    ----------
    form:
        ``chat``: a system prompt holding the request and the hidden function, then the
        dialogue as chat turns (the agent as the model's user); ``transcript``: one user
        message holding the request, the hidden function and the whole dialogue so far as
        text.
    temperature:
        The model's sampling temperature.
    max_tokens:
        The most new tokens per reply.
    max_chars:
        The longest reply the agent is shown, in characters.
    cut:
        ``sentence``: whole sentences that fit in ``max_chars`` (else a word boundary and
        ``...``), whitespace folded; ``characters``: the first ``max_chars`` characters.
    code_filter:
        Whether code in a reply is said in words or removed (a reply of code only becomes
        :data:`~colbench.gyms.backend.simulator.CODE_REFUSAL`).
    """

    form: str = "chat"
    temperature: float = 0.0
    max_tokens: int = 256
    max_chars: int = REPLY_CUT_CHARS
    cut: str = "sentence"
    code_filter: bool = True

    def __post_init__(self) -> None:
        if self.form not in MESSAGE_FORMS:
            raise ConfigError(f"model-backed simulator: form must be one of "
                              f"{', '.join(MESSAGE_FORMS)}, got {self.form!r}")
        if self.cut not in REPLY_CUTS:
            raise ConfigError(f"model-backed simulator: cut must be one of "
                              f"{', '.join(REPLY_CUTS)}, got {self.cut!r}")
        if self.max_tokens < 1 or self.max_chars < 1:
            raise ConfigError("model-backed simulator: max_tokens and max_chars must be at "
                              f"least 1, got {self.max_tokens} and {self.max_chars}")

    @property
    def sampling(self) -> SamplingParams:
        """The model's sampling settings."""
        from colbench.models.base import SamplingParams

        return SamplingParams(temperature=self.temperature, max_tokens=self.max_tokens)

    def settings(self) -> dict[str, Any]:
        """These settings as runs record them (JSON-ready)."""
        return {"form": self.form, "temperature": self.temperature,
                "max_tokens": self.max_tokens, "max_chars": self.max_chars, "cut": self.cut,
                "code_filter": self.code_filter}


#: What the built-in simulated human is, under every protocol (its replies are colbench's).
_BUILTIN_HUMAN = "builtin or a model (--simulator)"


@dataclass(frozen=True)
class BackendProtocol(Protocol):
    """colbench's own backend rules: the whole message counts, the answer's code is every
    fenced block joined and runs as a real module in the sandbox, floats compare with a
    tolerance. Subclasses change what differs.

    Parameters
    ----------
    scorer_name:
        The scorer's name as results record it (``summary.json``'s ``scorer``); the
        leaderboard's replay reads it back to re-score by the same rules.
    human:
        The model-backed simulated human's settings (:class:`ModelHumanSettings`), recorded
        in :meth:`settings` under ``simulator``.
    """

    scorer_name: str = "hidden-tests"
    human: ModelHumanSettings = field(default_factory=ModelHumanSettings)

    def __post_init__(self) -> None:
        super().__post_init__()
        # The recorded simulator settings are derived from ``human``, their one owner.
        object.__setattr__(self, "simulator",
                           {"kind": _BUILTIN_HUMAN, "model": self.human.settings()})

    def load_tasks(self, split: str, source: str | None) -> TaskSet:
        """The task set a run plays.

        Parameters
        ----------
        split:
            ``train`` or ``test`` of colbench's generated tasks.
        source:
            A task-set name, a colbench task JSONL or a published ColBench backend JSONL in
            place of the split; None: the split.
        """
        return load_backend_tasks(split, source=source)

    def system_prompt(self, max_turns: int) -> str:
        """The instructions for an episode of ``max_turns`` turns."""
        return SYSTEM_PROMPT.format(max_turns=max_turns, marker=ANSWER_MARKER)

    def visible_part(self, message: str) -> str:
        """The part of the agent's message the person sees and the answer is read from."""
        return message

    def score(self, task: Task, message: str, sandbox: Any) -> tuple[str, dict[str, Any]]:
        """The code read from a final message and its metrics on ``task``'s hidden tests.

        Parameters
        ----------
        task:
            The episode's task.
        message:
            The final message (its visible part): the answer after the marker, or the
            whole last-turn message.
        sandbox:
            The code sandbox the answer runs in.
        """
        code = extract_code(answer_text(message))
        return code, score_code(task, code, sandbox)

    def oracle_code(self, reference: str) -> str:
        """The answer the oracle gives: the reference, in the form these rules run."""
        return reference

    def simulated_human(self, simulator: Any) -> Any:
        """``simulator`` set for these rules: a model-backed person (one that takes settings)
        under :attr:`human`; any other as it is.

        Parameters
        ----------
        simulator:
            The simulated human an env was given.
        """
        adopt = getattr(simulator, "with_settings", None)
        return adopt(self.human) if callable(adopt) else simulator


@dataclass(frozen=True)
class SweetRLBackendProtocol(BackendProtocol):
    """The SWEET-RL harness's rules (:mod:`colbench.gyms.backend.sweet_rl`): the ``OUTPUT:``
    label and second markers cut the message, the blocklist, bare ``exec``, one-second
    calls and Python's ``==``."""

    def system_prompt(self, max_turns: int) -> str:
        return sweet_rl.SYSTEM_PROMPT.format(max_turns=max_turns, marker=ANSWER_MARKER)

    def visible_part(self, message: str) -> str:
        return sweet_rl.visible_message(message)

    def score(self, task: Task, message: str, sandbox: Any) -> tuple[str, dict[str, Any]]:
        metrics = sweet_rl.score_answer(task, sweet_rl.answer_of(message), sandbox)
        return metrics.pop("code"), metrics

    def oracle_code(self, reference: str) -> str:
        # The harness's bare exec hides top-level imports from the function.
        return sweet_rl.self_contained(reference)


COLBENCH = BackendProtocol(
    DEFAULT_PROTOCOL, summary="colbench's own backend rules",
    task_source="colbench's generated tasks, or an imported set (--tasks)",
    max_turns=10, scorer="hidden tests run as a module in the sandbox")
SWEET_RL = SweetRLBackendProtocol(
    sweet_rl.PROTOCOL, summary="the SWEET-RL harness's ColBench backend rules",
    task_source="the harness's test.jsonl where imported (colbench data import), else "
                "colbench's generated tasks",
    max_turns=sweet_rl.MAX_TURNS, sampling=SamplingDefaults(temperature=1.0, max_tokens=1024),
    scorer="the harness's check_correctness rules (blocklist, ==, exec semantics)",
    scorer_name=sweet_rl.SCORER,
    human=ModelHumanSettings(form="transcript", temperature=0.0, max_tokens=4096,
                             max_chars=400, cut="characters", code_filter=False),
    paper_task_source=OFFICIAL_SOURCE,
    paper_tasks_hint="--protocol sweet-rl on colbench's own tasks: this number is not the "
                     "paper's task set; import ColBench's backend test.jsonl with 'colbench "
                     "data import backend test.jsonl --name colbench-test' and run with "
                     "--tasks colbench-test")

#: The backend's protocols, its default first.
PROTOCOLS: tuple[BackendProtocol, ...] = (COLBENCH, SWEET_RL)


def compat_protocol(requested: str | None) -> str:
    """The protocol the deprecated ``compat=True`` (``--env-arg compat=true``) means:
    ``sweet-rl``. A different protocol asked beside it is a ConfigError.

    Parameters
    ----------
    requested:
        The protocol asked for with it, or None.
    """
    if requested not in (None, SWEET_RL.name):
        raise ConfigError(f"compat=True (--env-arg compat=true) means protocol "
                          f"{SWEET_RL.name!r}; it cannot be combined with protocol {requested!r}")
    return SWEET_RL.name
