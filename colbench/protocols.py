"""Protocols: the rules an env plays by, as objects chosen by name.

A protocol says which tasks an env plays and where they come from, how the conversation opens
(a system prompt, or an instruction turn the assistant acknowledges, as AgentGym's clients
send it), how the agent's message is read and what the env answers, how it is scored, how many
turns an episode has, how the agent is sampled by default and how the simulated human is set.
colbench's own protocol is :data:`DEFAULT_PROTOCOL`; named ones (``agentgym``,
``agentgym-rl``, ``sweet-rl``) reproduce a published harness so that numbers compare.

Each env family declares its protocols as objects (subclasses of :class:`Protocol` that add
the family's behaviour: loading tasks, starting a game, playing an action); the env picks one
by name (:meth:`colbench.env.TextEnv.choose_protocol`) and delegates to it, so no env code
tests which protocol it plays. :meth:`Protocol.settings` is the one place that records,
summaries, reports, replays and the leaderboard read a protocol's effective settings from.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from colbench.errors import ConfigError

#: The protocol every env plays unless told otherwise: colbench's own tasks, texts and budgets.
DEFAULT_PROTOCOL = "colbench"

#: How the conversation opens: ``system``: the instructions are the system message;
#: ``instruction-turn``: they are the first user message, answered by an assistant
#: :data:`INSTRUCTION_REPLY` (AgentGym's clients), then the first observation follows.
MessageStructure = Literal["system", "instruction-turn"]
MESSAGE_STRUCTURES: tuple[str, ...] = ("system", "instruction-turn")
#: The assistant's reply to an instruction turn.
INSTRUCTION_REPLY = "OK"

Message = dict[str, str]


@dataclass(frozen=True)
class SamplingDefaults:
    """How a protocol samples the agent unless the user says otherwise.

    Parameters
    ----------
    temperature:
        Sampling temperature; None: the runner's own default (0.0, greedy).
    max_tokens:
        Most new tokens per turn; None: the runner's own default (1,024).
    """

    temperature: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class Protocol:
    """The rules one env family plays under one protocol name.

    The fields are what every protocol states and what a run records; an env family's
    subclass adds its behaviour (tasks, game, parser, scorer) as methods.

    Parameters
    ----------
    name:
        The name users choose it by (``--protocol NAME``).
    summary:
        One line: what it reproduces, for listings and reports.
    task_source:
        Where its tasks come from, in words (a generator, a harness's released indices, an
        imported file).
    max_turns:
        The turn budget of an episode; None: the env's own (it may differ per task).
    sampling:
        The agent's default sampling (:class:`SamplingDefaults`); flags override it.
    message_structure:
        ``system`` or ``instruction-turn`` (see :data:`MessageStructure`).
    scorer:
        The scorer's name in words (``goal crafted``, ``harness check_correctness``...).
    simulator:
        The simulated human's settings, where the env has one (model, sampling, cut...).
    notes:
        What a result under it must say about itself, written into ``summary.json``.
    paper_task_source:
        The ``metadata["source"]`` that marks the tasks of the paper this protocol
        reproduces (an imported published set); ``""``: the protocol names none.
    paper_tasks_hint:
        What a run on other tasks must say: that its number is not the paper's, and the
        command that imports the paper's tasks (see :meth:`notes_for`).
    """

    name: str
    summary: str = ""
    task_source: str = ""
    max_turns: int | None = None
    sampling: SamplingDefaults = field(default_factory=SamplingDefaults)
    message_structure: str = "system"
    scorer: str = ""
    simulator: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    paper_task_source: str = ""
    paper_tasks_hint: str = ""

    def __post_init__(self) -> None:
        if self.message_structure not in MESSAGE_STRUCTURES:
            raise ConfigError(f"protocol {self.name!r}: message_structure must be one of "
                              f"{', '.join(MESSAGE_STRUCTURES)}, got {self.message_structure!r}")

    def settings(self) -> dict[str, Any]:
        """Every setting of this protocol, as runs record it (JSON-ready)."""
        return {"name": self.name, "task_source": self.task_source,
                "max_turns": self.max_turns,
                "sampling": {"temperature": self.sampling.temperature,
                             "max_tokens": self.sampling.max_tokens},
                "message_structure": self.message_structure, "scorer": self.scorer,
                "simulator": dict(self.simulator), "notes": list(self.notes)}

    def notes_for(self, tasks: Iterable[Any]) -> list[str]:
        """The notes of a run on ``tasks`` under this protocol: :attr:`notes`, and
        :attr:`paper_tasks_hint` where the protocol names the paper's tasks and some of
        ``tasks`` are not among them.

        Parameters
        ----------
        tasks:
            The run's tasks (each with ``metadata``).
        """
        notes = list(self.notes)
        if self.paper_task_source and self.paper_tasks_hint and any(
                task.metadata.get("source") != self.paper_task_source for task in tasks):
            notes.append(self.paper_tasks_hint)
        return notes

    def renamed(self, name: str, **changes: Any) -> Protocol:
        """A copy of this protocol under another name with some fields changed (a protocol
        that differs from another only by its settings, as ``agentgym-rl`` from
        ``agentgym``)."""
        return replace(self, name=name, **changes)


def opening_messages(system_prompt: str, observation: str,
                     structure: str = "system") -> list[Message]:
    """The chat an episode opens with: the instructions by ``structure``, then the first
    observation as a user message. An empty ``system_prompt`` sends the observation alone.

    Parameters
    ----------
    system_prompt:
        The instructions (the env's, or the user's own).
    observation:
        The env's first observation.
    structure:
        One of :data:`MESSAGE_STRUCTURES`.
    """
    if structure not in MESSAGE_STRUCTURES:
        raise ConfigError(f"unknown message structure {structure!r}: use one of "
                          f"{', '.join(MESSAGE_STRUCTURES)}")
    messages: list[Message] = []
    if system_prompt and structure == "instruction-turn":
        messages += [{"role": "user", "content": system_prompt},
                     {"role": "assistant", "content": INSTRUCTION_REPLY}]
    elif system_prompt:
        messages.append({"role": "system", "content": system_prompt})
    messages.append({"role": "user", "content": observation})
    return messages


def choose(protocols: Sequence[Protocol], name: str | None, owner: str) -> Protocol:
    """The protocol called ``name`` among ``protocols`` (None: the first, the default). A
    name not among them is a ConfigError listing the ones there are, so that a run never
    plays another protocol than the one asked for.

    Parameters
    ----------
    protocols:
        An env family's protocols, its default first.
    name:
        The name asked for, or None.
    owner:
        Who plays them (an env class's name), for the error.
    """
    if not protocols:
        raise ConfigError(f"{owner} declares no protocol")
    if name is None:
        return protocols[0]
    for protocol in protocols:
        if protocol.name == str(name):
            return protocol
    raise ConfigError(f"{owner} has no protocol {name!r} "
                      f"(it plays: {', '.join(p.name for p in protocols)})")


#: The sampling fields a protocol may set by default.
SAMPLING_FIELDS: tuple[str, ...] = ("temperature", "max_tokens")


def protocol_sampling(sampling: Any, unset: Sequence[str],
                      settings: Mapping[str, Any] | None) -> Any:
    """``sampling`` with each field named in ``unset`` taken from the protocol's recorded
    ``settings`` (:meth:`Protocol.settings`), where the protocol sets it; the user's choices
    and the fields the protocol leaves open stay as they are.

    Parameters
    ----------
    sampling:
        A dataclass with ``temperature`` and ``max_tokens`` (the model's sampling settings).
    unset:
        The fields the user did not choose.
    settings:
        The protocol's settings as an env describes them; None: an env that records none.
    """
    unknown = sorted(set(unset) - set(SAMPLING_FIELDS))
    if unknown:
        raise ConfigError(f"a protocol sets no sampling field {', '.join(unknown)} "
                          f"(it may set: {', '.join(SAMPLING_FIELDS)})")
    defaults = (settings or {}).get("sampling") or {}
    changes = {name: defaults[name] for name in unset if defaults.get(name) is not None}
    return replace(sampling, **changes) if changes else sampling
