"""The ScienceWorld environment (``colbench/SciWorld-v0``); its gold-path oracle is in
:mod:`colbench.gyms.embodied.sciworld_oracle`.

ScienceWorld is a Scala simulator; the ``scienceworld`` package ships its jar and talks to it
through py4j. Each env owns one JVM (about 190 MB), started at the first reset and reused by
every later one (a reset loads the task variation into the running simulator), and stopped by
:meth:`SciWorldEnv.close` (the process is waited for, then killed if it lingers).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from colbench import actions
from colbench.env import Outcome, TextEnv
from colbench.errors import ColbenchError, ConfigError, EnvironmentFailure, MissingExtraError
from colbench.gyms.embodied.sciworld_protocols import PROTOCOLS, SciWorldProtocol
from colbench.gyms.embodied.sciworld_tasks import turn_budget
from colbench.gyms.embodied.sciworld_tools import SCIWORLD_TOOLS
from colbench.tasks import Task, TaskSet
from colbench.tools import ActionTool

JAVA_HELP = ("ScienceWorld runs on Java 17 or newer, and no 'java' was found on PATH or in "
             "JAVA_HOME. Install a Java runtime, e.g. on Debian or Ubuntu: "
             "'apt-get update && apt-get install -y openjdk-17-jre-headless'.")

#: The commands the simulator understands, as its own action templates name them
#: (``ScienceWorldEnv.get_possible_actions()``; a test checks the list against the installed
#: simulator), with what each does in our words. Two more forms it accepts sit at the end:
#: ``examine`` and ``drop``, which its gold paths use. ``reset task`` is left out: it would
#: restart the episode's task inside a turn budget that keeps counting.
ACTIONS: tuple[tuple[str, str], ...] = (
    ("look around", "describe the room you are in"),
    ("look at OBJ", "describe an object closely"),
    ("look in OBJ", "list what a container holds"),
    ("read OBJ", "read a book, note or recipe"),
    ("inventory", "list what you carry"),
    ("task", "repeat the task"),
    ("go to LOCATION", "walk to a room next to this one (its door must be open)"),
    ("open OBJ", "open a door or container"),
    ("close OBJ", "close a door or container"),
    ("activate OBJ", "switch a device on (a stove, a sink, a stopwatch)"),
    ("deactivate OBJ", "switch a device off"),
    ("connect OBJ to OBJ", "join two electrical terminals (to build or test a circuit)"),
    ("disconnect OBJ", "undo an object's electrical connections"),
    ("use OBJ on OBJ", "use a tool on something (a thermometer on a substance, a shovel on "
                       "the ground)"),
    ("pick up OBJ", "take an object into your inventory"),
    ("put down OBJ", "drop an object you carry"),
    ("move OBJ to OBJ", "put an object in or on a container or place"),
    ("pour OBJ in OBJ", "pour a liquid or a container's contents into a container"),
    ("dunk OBJ in OBJ", "dip a container into a liquid"),
    ("mix OBJ", "mix what a container holds (chemistry)"),
    ("eat OBJ", "eat food"),
    ("flush OBJ", "flush a toilet"),
    ("focus on OBJ", "say which object the task is about; only on an object the task names: "
                     "focusing on a wrong one fails the task"),
    ("wait", "let 10 time steps pass"),
    ("wait1", "let 1 time step pass"),
    ("examine OBJ", "describe an object closely (as look at)"),
    ("drop OBJ", "drop an object you carry (as put down)"),
)

SYSTEM_PROMPT = """You are an agent in ScienceWorld, a text simulation of a house and its \
surroundings where you carry out elementary science experiments. Read the task, explore, and act. \
Reply with one action per message; you may think first, then end your message with a line \
"Action: <action>" (or "Action:" and the action on the next line). OBJ and LOCATION are names \
as the observations give them. Actions:
{actions}
When the simulator asks which of several objects you meant, answer with the number of the one \
you mean. You have {max_turns} actions."""

#: Longest action passed to the simulator; longer text is certainly not an action.
MAX_ACTION = 300


def sendable(command: str) -> bool:
    """Whether ``command`` can reach the simulator's JVM (it goes as UTF-8): a lone surrogate
    cannot, and is the agent's bad input, never the simulator's failure."""
    try:
        command.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class JavaNotFoundError(ColbenchError, RuntimeError):
    """ScienceWorld needs a Java runtime and none was found."""

    def __init__(self) -> None:
        super().__init__(JAVA_HELP)


def find_java() -> str:
    """The ``java`` executable py4j will start, or :class:`JavaNotFoundError`."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and os.access(os.path.join(java_home, "bin", "java"), os.X_OK):
        return os.path.join(java_home, "bin", "java")
    found = shutil.which("java")
    if not found:
        raise JavaNotFoundError()
    return found


#: JVM options that make the simulator deterministic (see :func:`start_simulator`): every
#: object's identity hash is the same constant, so hash sets of the simulator's objects
#: iterate in the order they were filled, whatever the JVM did before.
#: A JVM that does not know the option ignores it (and then fails :attr:`SciWorldEnv.
#: deterministic`) rather than refusing to start.
DETERMINISTIC_JVM_OPTIONS: tuple[str, ...] = ("-XX:+IgnoreUnrecognizedVMOptions",
                                              "-XX:+UnlockExperimentalVMOptions",
                                              "-XX:hashCode=2")

#: Serialises JVM starts: the options reach the JVM through the process's environment.
_start_lock = threading.Lock()


def start_simulator() -> Any:
    """A running ``scienceworld.ScienceWorldEnv`` (one JVM), with clear errors when the
    ``scienceworld`` package or Java is missing.

    Why the JVM gets :data:`DETERMINISTIC_JVM_OPTIONS`: the simulator seeds its random
    generator with the variation at every load, but it keeps its objects in hash sets
    keyed by identity hashes, and HotSpot draws those from a per-thread generator whose
    state depends on everything the JVM did before. The order in which objects are
    updated each tick (heat flowing between them, bees pollinating, plants growing) and in
    which they draw from the seeded generator then differs between two runs of the same
    actions, and more so in a JVM that already played other episodes: measured on 18 gold
    paths of use-thermometer, grow-fruit and mendelian-genetics-known-plant, 17 differed
    (readings of 42 against 44 degrees, fruit a turn later, listings in another order).
    With one constant identity hash all 18 were identical to the character, in a fresh
    JVM and in one that had played other episodes, and after a load that generated the
    gold path; the cost is about 8% more time per step. The options travel in
    ``JDK_JAVA_OPTIONS`` (read by the ``java`` launcher py4j starts, after the user's own
    ``JAVA_TOOL_OPTIONS``, so ours win), appended to any value the user set."""
    try:
        from scienceworld import ScienceWorldEnv
    except ImportError as exc:
        raise MissingExtraError("SciWorld", "embodied", "scienceworld") from exc
    java = find_java()
    if os.path.dirname(java) not in os.environ.get("PATH", "").split(os.pathsep):
        # py4j starts "java" from PATH; make the one found through JAVA_HOME that one.
        os.environ["PATH"] = os.path.dirname(java) + os.pathsep + os.environ.get("PATH", "")
    with _start_lock:
        before = os.environ.get("JDK_JAVA_OPTIONS")
        if DETERMINISTIC_JVM_OPTIONS:
            os.environ["JDK_JAVA_OPTIONS"] = " ".join(
                [*([before] if before else []), *DETERMINISTIC_JVM_OPTIONS])
        try:
            return ScienceWorldEnv("", envStepLimit=10 ** 9)
        except (OSError, subprocess.SubprocessError) as exc:
            raise EnvironmentFailure(f"could not start the ScienceWorld JVM: {exc}") from exc
        finally:
            if before is None:
                os.environ.pop("JDK_JAVA_OPTIONS", None)
            else:
                os.environ["JDK_JAVA_OPTIONS"] = before


def simulator_is_deterministic(simulator: Any) -> bool:
    """Whether ``simulator``'s JVM hands every object the same identity hash (the option
    of :data:`DETERMINISTIC_JVM_OPTIONS` took effect: a JVM other than HotSpot may ignore
    it), asked of the JVM itself."""
    jvm = simulator._gateway.jvm
    hashes = {int(jvm.java.lang.System.identityHashCode(jvm.java.lang.Object()))
              for _ in range(3)}
    return len(hashes) == 1


def stop_simulator(simulator: Any, timeout: float = 10.0) -> None:
    """Shut the gateway down and make sure the JVM process is gone."""
    process = getattr(getattr(simulator, "_gateway", None), "java_process", None)
    try:
        simulator.close()
    except Exception:  # a JVM that already died cannot be shut down politely
        pass
    if process is not None and process.poll() is None:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=timeout)
    # ScienceWorldEnv.__del__ closes again; make that a no-op on a dead gateway.
    simulator.close = lambda: None


def extract_action(message: str) -> str:
    """The command in an agent's message, by the shared grammar of :mod:`colbench.actions`
    (``Action: X``, ``Action:`` then X on the next line, a fenced block, else the last
    line); its case is kept, as the simulator receives it."""
    return actions.extract_command(message)


def system_prompt_text(max_turns: int) -> str:
    """The system prompt for an episode of ``max_turns`` actions."""
    listed = "\n".join(f"- {template}: {what}" for template, what in ACTIONS)
    return SYSTEM_PROMPT.format(actions=listed, max_turns=max_turns)


class SciWorldEnv(TextEnv):
    """## Description

    ScienceWorld: elementary science experiments in a simulated house (boil water, grow a
    plant, test conductivity, find an animal, ...): 30 tasks, each with many variations. A
    task is one (task, variation) pair; the splits follow ScienceWorld's own division of each
    task's variations and never overlap (see ``colbench.gyms.embodied.sciworld_tasks``). Runs
    the ``scienceworld`` package's simulator in a JVM that the env starts at its first reset and
    stops on ``close()``; Java 17 must be installed.

    ## Observation

    Text (``AnyText``, up to 100,000 characters): first the task description and the result of
    ``look around``; then the simulator's answer to each action. An action the simulator does
    not understand gets its answer ("No known action matches that input."); an empty or
    over-long message gets an error observation from the env.

    ## Action

    Text: a ScienceWorld command (``open door to kitchen``, ``focus on thermometer``, ...; the
    system prompt lists every command form, see :data:`ACTIONS`), found by the grammar every
    text gym shares (``colbench.actions``): ``Action: X``; ``Action:`` with X on the next line
    (AgentGym's ``Thought: ... Action:`` form); a fenced block; else the last line. The last
    label or block wins.

    ## Reward

    The normalised score: each step's reward is the change of the task score divided by 100,
    so an episode's rewards sum to its final normalised score (0 to 1). ``info`` carries
    ``score`` (normalised), ``raw_score`` (the simulator's 0 to 100, negative when the task
    failed) and ``moves``. The terminal ``info["metrics"]`` holds ``success`` (a full score),
    ``score`` (final normalised score, 0 when the task failed), ``raw_score``, ``failed``,
    ``turns``, ``task_name`` and ``variation``.

    ## Termination

    ``terminated`` when the simulator says the task is complete: solved, or failed (a negative
    score, e.g. after focusing on the wrong object). After the turn budget the episode is
    ``truncated`` and scored as it stands. The default budget is the task type's
    (``sciworld_tasks.TURN_BUDGETS``: enough for the gold-path oracle with a margin, at least
    30); a ``max_turns`` argument gives every task that budget.

    ## Arguments

    ``split`` (``train``, ``dev`` or ``test``); ``tasks``: a ``TaskSet`` or a colbench task
    JSONL in place of the split; ``task_names``: only these ScienceWorld tasks;
    ``max_turns``: one budget for every task in place of the per-type ones (also per episode
    through ``reset(options={"max_turns": N})``);
    ``simplifications``: ScienceWorld's simplification string (``""`` by default; ``"easy"``
    for all of them); ``gold_path``: generate the gold action sequence at every reset (the
    oracle otherwise uses the sequence shipped for the first 40 test tasks, or asks for it
    once, before its first action); ``protocol``: ``colbench`` (default), ``agentgym``
    (AgentGym's server: its task list by index, first observation, ReAct parser, running
    score as reward, step limit 100, no simplifications, instruction turn and 30 turns;
    splits ``test``, ``all``, ``N-M``; see ``colbench.gyms.embodied.sciworld_agentgym``) or
    ``agentgym-rl`` (the same server under AgentGym-RL's evaluation settings: 30 turns,
    temperature 1, 200 new tokens); see ``colbench.gyms.embodied.sciworld_protocols``.

    ## Registered ids

    ``colbench/SciWorld-v0``.

    ## Versions

    * v0: first version. Since issue 14, every answer form is read, the prompt lists every
      command form, and budgets are per task type (they were 30 for every task, in which the
      oracle could not solve half of the task types).
    """

    env_id: ClassVar[str] = "colbench/SciWorld"
    version: ClassVar[str] = "0"
    default_max_turns: ClassVar[int] = 30
    #: What ``colbench list envs`` and ``describe`` show: ScienceWorld's own three splits.
    splits: ClassVar[tuple[str, ...]] = ("test", "dev", "train")
    #: ``colbench play`` sends each typed line as an action on Enter (actions are one line).
    one_line_actions: ClassVar[bool] = True
    max_text_length: ClassVar[int] = 100_000
    protocol_specs: ClassVar[tuple[SciWorldProtocol, ...]] = PROTOCOLS
    #: The actions as OpenAI tools (``colbench.tools``): ScienceWorld's commands.
    action_tools: ClassVar[tuple[ActionTool, ...]] = SCIWORLD_TOOLS
    #: AgentGym's SciWorld server routes ``colbench serve-envs`` answers beside the common
    #: ones, and those it declines (each shows more than the agent observes), with why.
    agentgym_routes: ClassVar[dict[str, str]] = {"task_description":
                                                 "agentgym_task_description"}
    agentgym_unserved: ClassVar[dict[str, str]] = {
        "goals": "SciWorld's /goals reports the scorer's progress on the task's goals, which "
                 "is privileged data",
        "action_hint": "SciWorld's /action_hint lists every valid action and every object in "
                       "reach, which the agent under colbench's SciWorld is never given",
        "object_tree": "SciWorld's /object_tree is the simulator's whole world, more than the "
                       "agent observes",
        "state": "SciWorld's /state holds the goal progress (privileged) and the world's "
                 "state",
        "step_visual": "SciWorld's /step_visual answers the object tree and the simulator's "
                       "info beside each step, more than the agent observes",
    }

    def __init__(self, split: str = "test", tasks: str | TaskSet | None = None, *,
                 task_names: Sequence[str] | None = None, max_turns: int | None = None,
                 simplifications: str = "", gold_path: bool = False,
                 render_mode: str | None = None, protocol: str | None = None) -> None:
        self.choose_protocol(protocol)
        rules = self.rules
        task_set = TaskSet.from_argument(
            tasks, lambda: rules.load_tasks(split, task_names, simplifications))
        # Without a budget from the caller or the protocol, each episode gets its task type's
        # (task_turn_budget).
        super().__init__(task_set, max_turns=rules.max_turns if max_turns is None else max_turns,
                         render_mode=render_mode)
        find_java()  # fail at construction, with the install hint, rather than mid-run
        self.simplifications = simplifications
        self.gold_path = bool(gold_path)
        self._simulator: Any = None
        #: The current task's gold action sequence, where it is known.
        self.gold_sequence: list[str] | None = None
        #: ScienceWorld's score so far (0-100; negative when the task failed).
        self.raw_score = 0
        self.last_observation = ""
        self._deterministic: bool | None = None
        #: The parts of the first observation a protocol's server reports apart
        #: (:meth:`agentgym_reset_fields`); empty where it reports none.
        self.reset_fields: dict[str, Any] = {}

    @property
    def rules(self) -> SciWorldProtocol:
        """The protocol this instance plays, with SciWorld's behaviour."""
        spec = self.protocol_spec
        assert isinstance(spec, SciWorldProtocol)
        return spec

    @property
    def scripted_agents(self) -> dict[str, Any]:  # type: ignore[override]
        from colbench.gyms.embodied.sciworld_baselines import BASELINES
        from colbench.gyms.embodied.sciworld_oracle import SciWorldOracle

        return {"oracle": SciWorldOracle, **BASELINES}

    @property
    def simulator(self) -> Any:
        if self._simulator is None:
            self._simulator = start_simulator()
            self._deterministic = None
        return self._simulator

    @property
    def deterministic(self) -> bool:
        """Whether this env's simulator replays the same actions to the same text, reward
        and ending (its JVM took :data:`DETERMINISTIC_JVM_OPTIONS`); asked of the JVM once
        per start. Every episode's terminal ``info`` records it, and the leaderboard's
        replay refuses to judge records in a simulator where it is False."""
        simulator = self.simulator
        if self._deterministic is None:
            self._deterministic = simulator_is_deterministic(simulator)
        return self._deterministic

    def system_prompt(self, task: Task) -> str:
        return self.rules.system_prompt(self._episode_max_turns)

    # -- episodes ---------------------------------------------------------------------------
    def _load(self, task: Task, gold: bool) -> str:
        name = task.privileged.get("task_name")
        variation = task.privileged.get("variation")
        if not isinstance(name, str) or not isinstance(variation, int):
            raise ConfigError(f"SciWorld task {task.id!r} needs privileged task_name and "
                              "variation")
        self.simulator.envStepLimit = self.rules.step_limit
        self.reset_fields = {}
        return self.rules.load(self, task, name, variation, gold)

    @staticmethod
    def agentgym_task_description(shown: Mapping[str, Any]) -> dict[str, str]:
        """AgentGym's ``/task_description``: ``{"task_description"}`` as the reset reply gave
        it.

        Parameters
        ----------
        shown:
            What the agent was shown at its reset (see ``TextEnv.agentgym_routes``).
        """
        return {"task_description": str(shown.get("fields", {}).get("task_description", ""))}

    def agentgym_reset_fields(self) -> dict[str, Any]:
        """What AgentGym's SciWorld server adds to its reset reply, for ``colbench
        serve-envs``'s AgentGym routes: ``task_name``, ``var_num``, ``task_description``,
        and ``observation`` as the answer to ``look around`` alone (its client joins the
        description and the observation with a newline into the first observation)."""
        return dict(self.reset_fields)

    def task_turn_budget(self, task: Task) -> int:
        """The budget of the task's type (``sciworld_tasks.TURN_BUDGETS``).

        Parameters
        ----------
        task : Task
            The task an episode plays.
        """
        return turn_budget(str(task.privileged.get("task_name")))

    def _begin(self, task: Task) -> tuple[str, dict[str, Any]]:
        observation = self._load(task, self.gold_path)
        self.last_observation = observation
        return observation, {"score": 0.0, "raw_score": 0, "moves": 0}

    def gold_actions(self) -> list[str]:
        """The simulator's gold action sequence for the current task variation: shipped with
        the task, else generated on demand before the first step (reloading the variation)."""
        if self.task is None:
            raise RuntimeError("no task: call reset() first")
        if self.gold_sequence is None:
            if self.turn > 0:
                raise ConfigError("the gold path can be generated only before the first step; "
                                  "make the env with gold_path=True")
            self._load(self.task, gold=True)
        assert self.gold_sequence is not None
        return list(self.gold_sequence)

    def _act(self, action: str, *, last_turn: bool) -> Outcome:
        assert self.task is not None
        return self.rules.act(self, action, last_turn=last_turn)

    def outcome(self, observation: str, completed: bool, last_turn: bool, command: str,
                reward: float = 0.0) -> Outcome:
        """The turn's outcome: its observation, whether ScienceWorld ended the task, the
        command read and the protocol's reward; the score and metrics from
        :attr:`raw_score`."""
        assert self.task is not None
        raw = self.raw_score
        info = {"command": command, "score": max(raw, 0) / 100.0, "raw_score": raw}
        if self._simulator is not None:
            info["moves"] = int(self._simulator.server.getNumMoves())
        metrics = None
        if completed or last_turn:
            info["deterministic"] = self.deterministic
            metrics = {"success": raw >= 100, "score": max(raw, 0) / 100.0, "raw_score": raw,
                       "failed": raw < 0, "turns": self.turn,
                       "task_name": self.task.privileged.get("task_name"),
                       "variation": self.task.privileged.get("variation")}
        return Outcome(observation=observation, reward=reward, terminated=completed,
                       info=info, metrics=metrics)

    def privileged(self) -> dict[str, Any]:
        data = super().privileged()
        if self._simulator is not None and self.task is not None:
            data["goal_progress"] = str(self._simulator.server.getGoalProgressStr())
            if self.gold_sequence is not None:
                data["gold_actions"] = list(self.gold_sequence)
        return data

    def describe(self) -> dict[str, Any]:
        facts = super().describe()
        facts["simplifications"] = self.simplifications
        return facts

    def close(self) -> None:
        if self._simulator is not None:
            simulator, self._simulator = self._simulator, None
            stop_simulator(simulator)
        super().close()

