"""Challenge splits: fresh tasks minted from a server secret, whose hidden references never
leave the server.

A public test split can be rebuilt from the published package (its seeds are public), so a
model that was trained on it, or an agent that calls the generator, cannot be told from an
honest one. A challenge split closes that door:

* **Minting** (``colbench leaderboard challenge mint NAME --count N``): the seed is an HMAC of
  the env and the challenge's name under ``challenge_secret``, so nobody without the secret
  can regenerate the tasks. The suite draws them through its ``colbench.task_sets`` entry
  point (``mint(seed, count, split=...)``: same families, same difficulty, none sharing hidden
  values with its public splits). The hidden tasks are stored in the database.
* **The public part** (``GET /api/v1/challenges/NAME/tasks``, with a token): each task's
  :func:`public_task`: its id, prompt and signature, no other metadata; the privileged data
  is replaced by an empty reference and no test calls, so the local env runs (and scores
  every answer 0 of 0). Challenges are minted from ``colbench/Backend-v1`` by default
  (:data:`DEFAULT_CHALLENGE_ENV`), from the program skeletons that neither public split
  draws from.
* **The simulated human runs on the server** (``POST /api/v1/challenges/NAME/reply``, with a
  token): the client's env asks it through :class:`~colbench.leaderboard.challenge_client.
  ChallengeSimulator` (``--simulator challenge:URL``). It is the suite's built-in simulator,
  which answers in words from the task's facts and never writes code; each token may ask
  each task at most ``challenge_episodes_per_task`` times the env's question budget of
  distinct questions (asking the same again costs nothing, so retries and resumed runs are
  free). No endpoint ever returns a reference, a test call or a test result.
* **The env asks the server too** where it needs the hidden world (``POST
  /api/v1/challenges/NAME/env``, with a token): a DeepSearch run searches and opens the
  challenge world's articles there. The suite's ``colbench.task_sets`` entry answers
  (``serve_challenge(task, request)``) from the hidden task, counted against the same
  per-token, per-task budget as the simulated human's questions (repeating a request is
  free). It answers what the env shows the agent, never the task's answer or seed.
* **Scoring** happens when the run is submitted: the worker verifies it against the hidden
  tasks with the suite's own replay (:class:`ChallengeReplay`), which recomputes every reply
  of the simulated human and scores the final answers against the hidden tests. The record's
  own verdicts (made locally, without the tests) are replaced by the server's. The entry is
  listed on a board of its own, split ``challenge:NAME``, apart from the public splits'.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import gzip
import hashlib
import hmac
import inspect
import json
import os
import re
import threading
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from colbench.env import DEFAULT_MAX_TURNS
from colbench.errors import ConfigError
from colbench.leaderboard._db import Challenge, ChallengeQuestion, Database, utcnow
from colbench.leaderboard._settings import LeaderboardSettings
from colbench.leaderboard.suites import Suite, SuiteCatalog
from colbench.leaderboard.upload import UploadError
from colbench.protocols import DEFAULT_PROTOCOL
from colbench.records import EpisodeRecord, Summary
from colbench.replay import EnvReplay, Replay, ReplayResult, RunFacts
from colbench.tasks import Task, TaskSet

#: ``Submission.split`` of a challenge entry: ``challenge:NAME``. A run's own split can never
#: look like it (a colon is not allowed in one), so the boards keep them apart.
SPLIT_PREFIX = "challenge:"
#: The name the client's remote simulator records in a run's summary.
REMOTE_SIMULATOR = "challenge"
#: The simulator the server runs for challenges (deterministic, so a replay reproduces it).
SERVER_SIMULATOR = "builtin"
#: Where the secret comes from when the settings name none.
SECRET_ENV = "COLBENCH_CHALLENGE_SECRET"
#: Longest message, and longest message in a dialogue, the simulated human reads (characters).
MAX_MESSAGE_CHARS = 20_000

_NAME = re.compile(r"^[a-z0-9][a-z0-9-]{0,39}$")


class ChallengeError(UploadError):
    """A refused challenge request: ``status`` (4xx) and a reason a person can act on (an
    upload refusal, so the submission endpoint reports it like any other)."""


@dataclass(frozen=True)
class ChallengeInfo:
    """What may be said about a challenge in public."""

    name: str
    env: str
    task_count: int
    public_hash: str
    created_at: dt.datetime

    @property
    def split(self) -> str:
        """The board the challenge's entries are listed on."""
        return SPLIT_PREFIX + self.name


def _info(row: Challenge) -> ChallengeInfo:
    return ChallengeInfo(name=row.name, env=row.env, task_count=row.task_count,
                         public_hash=row.public_hash, created_at=row.created_at)


def challenge_name(split: str) -> str | None:
    """The challenge a stored submission's split names, or None for a public split."""
    return split[len(SPLIT_PREFIX):] if split.startswith(SPLIT_PREFIX) else None


# -- minting ----------------------------------------------------------------------------------

def challenge_secret(settings: LeaderboardSettings) -> str:
    """The server's secret: the settings', else ``$COLBENCH_CHALLENGE_SECRET``."""
    secret = settings.challenge_secret or os.environ.get(SECRET_ENV, "")
    if len(secret) < 16:
        raise ConfigError(f"challenge splits need a secret of at least 16 characters: set "
                          f"challenge_secret in the server's --config file or {SECRET_ENV} "
                          "(keep it private: it regenerates every hidden reference)")
    return secret


def derive_seed(secret: str, env: str, name: str) -> int:
    """The seed a challenge is drawn from: an HMAC of the env and the name under the secret
    (64 bits), so that the same secret re-mints the same tasks and nobody else can."""
    digest = hmac.new(secret.encode("utf-8"), f"{env}\x00{name}".encode(),
                      hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big")


#: The only metadata a challenge task's public row keeps: what the prompt already shows.
PUBLIC_METADATA = ("signature",)


def public_task(task: Task) -> Task:
    """What a submitter gets of a hidden task: id, suite, split, prompt and the signature.
    Nothing the generator used (a family, the open details, a level, its name and version)
    goes out: a solver that knows the package must not learn from it which template or
    program shape is behind the task. The privileged data becomes an empty reference with no
    test calls, which the local env can run without knowing anything."""
    return Task(id=task.id, suite=task.suite, split=task.split, prompt=task.prompt,
                privileged={"ground_truth": "", "test_cases": []},
                metadata={k: task.metadata[k] for k in PUBLIC_METADATA if k in task.metadata})


def public_task_set(hidden: TaskSet) -> TaskSet:
    return TaskSet(hidden.name, [public_task(t) for t in hidden], version=hidden.version)


def _task_set_source(env: str) -> Any:
    """The suite's ``colbench.task_sets`` entry that serves ``env`` and can mint."""
    from colbench import registry

    for suite in registry.task_sets.names():
        source = registry.task_sets.get(suite)
        if getattr(source, "env_id", None) == env:
            if not callable(getattr(source, "mint", None)):
                break
            return source
    mintable = [n for n in registry.task_sets.names()
                if callable(getattr(registry.task_sets.get(n), "mint", None))]
    raise ConfigError(f"no suite can mint challenge tasks for {env!r} (suites that can: "
                      f"{', '.join(mintable) or 'none'})")


def _pack(tasks: TaskSet) -> bytes:
    return gzip.compress("".join(t.canonical_json() + "\n" for t in tasks).encode("utf-8"),
                         mtime=0)


def _unpack(name: str, blob: bytes) -> TaskSet:
    lines = gzip.decompress(blob).decode("utf-8").splitlines()
    return TaskSet(name, [Task.model_validate_json(line) for line in lines if line.strip()])


#: The env challenges are minted for unless the operator names another: Backend-v1, whose
#: program space the package cannot enumerate (Backend-v0's tasks come from public
#: templates, which a secret seed does not hide).
DEFAULT_CHALLENGE_ENV = "colbench/Backend-v1"


def mint_challenge(db: Database, settings: LeaderboardSettings, name: str, count: int, *,
                   env: str = DEFAULT_CHALLENGE_ENV, vocabulary: str | None = None
                   ) -> ChallengeInfo:
    """Mint and store the challenge ``name`` of ``count`` tasks (see the module docstring).

    ``vocabulary`` (default: the ``challenge_vocabulary`` setting) names a private vocabulary
    the suite's minting has registered; the tasks then draw names from it too."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"challenge name {name!r}: use 1-40 lowercase letters, digits and "
                          "dashes, starting with a letter or digit")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ConfigError(f"challenge size must be a positive number of tasks, got {count!r}")
    secret = challenge_secret(settings)
    with db.read() as session:
        if session.get(Challenge, name) is not None:
            raise ConfigError(f"a challenge named {name!r} exists already; pick another name")
    vocabulary = vocabulary if vocabulary is not None else settings.challenge_vocabulary
    source = _task_set_source(env)
    options: dict[str, str] = {}
    if vocabulary is not None:
        if "vocabulary" not in inspect.signature(source.mint).parameters:
            raise ConfigError(f"{env} mints no challenge with a private vocabulary; mint "
                              "without one or from colbench/Backend-v1")
        options["vocabulary"] = vocabulary
    hidden = source.mint(derive_seed(secret, env, name), count, split=f"challenge-{name}",
                         **options)
    public = public_task_set(hidden)
    row = Challenge(name=name, env=env, created_at=utcnow(), task_count=len(hidden),
                    public_hash=public.hash, tasks_gz=_pack(hidden))
    try:
        with db.write() as session:
            session.add(row)
    except IntegrityError:
        raise ConfigError(f"a challenge named {name!r} exists already; pick another "
                          "name") from None
    return _info(row)


# -- reading ----------------------------------------------------------------------------------

_hidden_cache: dict[tuple[str, str], TaskSet] = {}
_cache_lock = threading.Lock()


def list_challenges(db: Database) -> list[ChallengeInfo]:
    with db.read() as session:
        rows = session.scalars(select(Challenge).order_by(Challenge.created_at))
        return [_info(row) for row in rows]


def get_challenge(db: Database, name: str) -> ChallengeInfo | None:
    with db.read() as session:
        row = session.get(Challenge, name[:100])
        return _info(row) if row is not None else None


def challenge_for_run(db: Database, summary: Summary) -> ChallengeInfo | None:
    """The challenge a submitted run was made on (its task-set hash is the challenge's
    public hash), or None. A run on a challenge's tasks under another env is refused."""
    with db.read() as session:
        row = session.scalar(select(Challenge)
                             .where(Challenge.public_hash == summary.task_set.hash))
        info = _info(row) if row is not None else None
    if info is not None and info.env != summary.env:
        raise ChallengeError(422, f"the run's tasks are the challenge {info.name!r} of "
                                  f"{info.env}, but summary.json is for {summary.env!r}")
    return info


def hidden_tasks(db: Database, name: str) -> TaskSet:
    """The hidden tasks of ``name`` (cached: a challenge never changes once minted)."""
    key = (db.url, name)
    with _cache_lock:
        cached = _hidden_cache.get(key)
    if cached is not None:
        return cached
    with db.read() as session:
        row = session.get(Challenge, name)
        if row is None:
            raise ChallengeError(404, f"no challenge named {name[:100]!r}")
        tasks = _unpack(f"{row.env.split('/')[-1]}-challenge-{name}", row.tasks_gz)
    with _cache_lock:
        _hidden_cache[key] = tasks
    return tasks


# -- verification -----------------------------------------------------------------------------

class ChallengeReplay:
    """The suite's replay, made to check a challenge run.

    Two things differ from a public run: the simulated human's replies came from the server
    (the run names the simulator :data:`REMOTE_SIMULATOR`; they are recomputed with the
    server's :data:`SERVER_SIMULATOR`, so a reply that is not the server's is caught as
    usual), and the record's final verdict was made locally without the hidden tests. The
    latter is settled first: the episode is stepped once to learn the server's verdict on the
    final answer, which replaces the record's last observation, reward and metrics; then the
    suite's replay checks the whole settled record (every reply, the turn accounting, the
    final answer) and scores it. Everything the client could know is still checked.
    """

    def __init__(self, inner: Replay) -> None:
        self.inner = inner

    @property
    def workers(self) -> int:
        return int(getattr(self.inner, "workers", 1) or 1)

    @staticmethod
    def server_facts(run: RunFacts) -> RunFacts:
        if run.simulator == REMOTE_SIMULATOR:
            return dataclasses.replace(run, simulator=SERVER_SIMULATOR)
        return run

    def run_problems(self, run: RunFacts) -> list[str]:
        problems = []
        # A suite whose replay says its env has no simulated human (DeepSearch) asks none.
        if getattr(self.inner, "asks_simulator", True) and run.simulator != REMOTE_SIMULATOR:
            problems.append(f"the run used the simulator {run.simulator!r}; a challenge run "
                            "asks the server's (--simulator challenge:URL)")
        return problems + self.inner.run_problems(self.server_facts(run))

    def check(self, task: Task, record: EpisodeRecord, run: RunFacts) -> ReplayResult:
        facts = self.server_facts(run)
        return self.inner.check(task, self.settled(task, record, facts), facts)

    def settled(self, task: Task, record: EpisodeRecord, facts: RunFacts) -> EpisodeRecord:
        """``record`` with the server's verdict on its final answer (unchanged when the
        replay cannot step the env, or the episode does not end where the record does: the
        check reports that)."""
        if not isinstance(self.inner, EnvReplay) or not record.turns:
            return record
        env = self.inner.make_env(task, record, facts)
        try:
            rollout = self.inner.rollout(env, task, record)
        finally:
            env.close()
        if not rollout.ended or len(rollout.steps) != len(record.turns):
            return record
        last = rollout.steps[-1]
        turns = list(record.turns)
        turns[-1] = turns[-1].model_copy(update={"next_observation": last.observation,
                                                 "reward": last.reward})
        metrics = {**record.metrics, **(rollout.metrics or {})}
        return record.model_copy(update={"turns": turns, "metrics": metrics})


class ChallengeCatalog(SuiteCatalog):
    """The catalog a challenge submission is verified with: one suite, the challenge's env,
    whose only task set is the hidden one, matched by the public tasks' hash (a challenge
    run covers the whole challenge), replayed with :class:`ChallengeReplay`."""

    def __init__(self, base: SuiteCatalog, env: str, hidden: TaskSet, public_hash: str) -> None:
        suite = base.get(env)
        if suite is None:
            raise ChallengeError(422, f"this server no longer ranks {env!r}")
        if suite.replay is None:
            raise ChallengeError(422, f"{env} has no replay, so its challenge runs cannot be "
                                      "scored")
        # Reading a split fills in the env's version and turn budget.
        base.task_set(suite, (suite.splits or ("test",))[0])
        self.public_hash = public_hash
        super().__init__([Suite(env_id=env, load_split=lambda _split: hidden,
                                env_version=suite.env_version, max_turns=suite.max_turns,
                                replay=ChallengeReplay(suite.replay), splits=None)],
                         registered_envs=False)

    def match(self, suite: Suite, split: str, task_hash: str, count: int | None,
              protocol: str = DEFAULT_PROTOCOL) -> TaskSet | None:
        # A challenge is minted for colbench's own protocol: its hidden set is the only one.
        if protocol != DEFAULT_PROTOCOL:
            return None
        return self.task_set(suite, split) if task_hash == self.public_hash else None


@dataclass(frozen=True)
class ChallengeSplit:
    """What verifying a challenge submission needs beyond the server's catalog (sent to the
    verification process, so plain data)."""

    env: str
    hidden: TaskSet
    public_hash: str

    def catalog(self, base: SuiteCatalog) -> ChallengeCatalog:
        return ChallengeCatalog(base, self.env, self.hidden, self.public_hash)


def challenge_split(db: Database, name: str) -> ChallengeSplit:
    info = get_challenge(db, name)
    if info is None:
        raise ChallengeError(404, f"no challenge named {name[:100]!r}")
    return ChallengeSplit(info.env, hidden_tasks(db, name), info.public_hash)


# -- the server's simulated human -------------------------------------------------------------

_simulators: dict[str, Any] = {}


def _simulator(suite: str) -> Any:
    from colbench.simulators import make_simulator

    with _cache_lock:
        simulator = _simulators.get(suite)
        if simulator is None:
            simulator = _simulators[suite] = make_simulator(SERVER_SIMULATOR, suite=suite)
        return simulator


def _dialogue(value: Any, max_messages: int) -> list[dict[str, str]]:
    if not isinstance(value, list) or len(value) > max_messages:
        raise ChallengeError(400, f"dialogue must be a list of at most {max_messages} chat "
                                  "messages")
    dialogue = []
    for index, message in enumerate(value):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant") \
                or not isinstance(message.get("content"), str) \
                or len(message["content"]) > MAX_MESSAGE_CHARS:
            raise ChallengeError(400, f"dialogue[{index}] must be {{'role': 'user' or "
                                      f"'assistant', 'content': text of at most "
                                      f"{MAX_MESSAGE_CHARS} characters}}")
        dialogue.append({"role": message["role"], "content": message["content"]})
    return dialogue


def turn_budget(max_turns: int | None) -> int:
    """A challenge suite's turn budget: its own, else the core's default
    (:data:`colbench.env.DEFAULT_MAX_TURNS`).

    Parameters
    ----------
    max_turns:
        The budget the suite's challenge settings name, or None.
    """
    return max_turns or DEFAULT_MAX_TURNS


def question_budget(settings: LeaderboardSettings, max_turns: int | None) -> int:
    """Distinct questions one token may ask about one task: the env's questions per
    episode (all turns but the answer) times ``challenge_episodes_per_task``."""
    return settings.challenge_episodes_per_task * max(1, turn_budget(max_turns) - 1)


def _asked_task(db: Database, name: str, body: dict[str, Any]
                ) -> tuple[ChallengeInfo, TaskSet, str]:
    """The challenge ``name``, its hidden tasks and the id of the one ``body`` asks about
    (its ``task_id``); a ChallengeError when it names none of them."""
    hidden = hidden_tasks(db, name)
    info = get_challenge(db, name)
    assert info is not None
    task_id = body.get("task_id")
    if not isinstance(task_id, str) or task_id not in set(hidden.ids()):
        raise ChallengeError(404, f"challenge {name!r} has no task {str(task_id)[:100]!r}")
    return info, hidden, task_id


def _max_turns(catalog: SuiteCatalog, env: str) -> int | None:
    suite = catalog.get(env)
    return suite.max_turns if suite is not None else None


def _charge(db: Database, settings: LeaderboardSettings, max_turns: int | None,
            token_id: int, name: str, task_id: str, asked: Any) -> None:
    """Count ``asked`` (a question, or an env's request) against the token's budget for the
    task, unless the same was asked before; refuse it past the budget."""
    digest = hashlib.sha256(json.dumps(asked, sort_keys=True)
                            .encode("utf-8", "surrogatepass")).hexdigest()
    where = (ChallengeQuestion.challenge == name, ChallengeQuestion.token_id == token_id,
             ChallengeQuestion.task_id == task_id)
    try:
        _count_question(db, where, question_budget(settings, max_turns), task_id,
                        ChallengeQuestion(challenge=name, token_id=token_id, task_id=task_id,
                                          digest=digest, asked_at=utcnow()))
    except IntegrityError:
        pass  # the same, counted a moment ago by a concurrent request


def simulated_reply(db: Database, settings: LeaderboardSettings, catalog: SuiteCatalog,
                    token_id: int, name: str, body: Any) -> str:
    """The server's simulated human's reply to ``body`` (``task_id``, ``dialogue``,
    ``message``) on challenge ``name``, counted against the token's budget for the task."""
    if not isinstance(body, dict):
        raise ChallengeError(400, "send a JSON object with task_id, dialogue and message")
    info, hidden, task_id = _asked_task(db, name, body)
    message = body.get("message")
    if not isinstance(message, str) or len(message) > MAX_MESSAGE_CHARS:
        raise ChallengeError(400, f"message must be text of at most {MAX_MESSAGE_CHARS} "
                                  "characters")
    max_turns = _max_turns(catalog, info.env)
    dialogue = _dialogue(body.get("dialogue", []), 2 * turn_budget(max_turns))
    _charge(db, settings, max_turns, token_id, name, task_id, [dialogue, message])
    task = hidden.get(task_id)
    return str(_simulator(task.suite).reply(task, dialogue, message))


def env_request(db: Database, settings: LeaderboardSettings, catalog: SuiteCatalog,
                token_id: int, name: str, body: Any) -> Any:
    """The suite's answer to ``body`` (``task_id``, ``request``): a request of a run's env
    about a hidden task of challenge ``name`` (a search of the challenge world), answered
    by the suite's ``colbench.task_sets`` entry (``serve_challenge(task, request)``) and
    counted against the token's budget for the task like a question (a request the suite
    refuses as malformed is not counted).

    Parameters
    ----------
    db, settings, catalog:
        The server's database, settings and suites.
    token_id:
        The asking token.
    name:
        The challenge.
    body:
        The JSON request body.
    """
    if not isinstance(body, dict) or not isinstance(body.get("request"), dict):
        raise ChallengeError(400, "send a JSON object with task_id and request (an object)")
    info, hidden, task_id = _asked_task(db, name, body)
    try:
        source = _task_set_source(info.env)
    except ConfigError:
        source = None
    serve = getattr(source, "serve_challenge", None)
    if not callable(serve):
        raise ChallengeError(404, f"{info.env}'s env asks the server nothing")
    request = body["request"]
    try:
        answer = serve(hidden.get(task_id), request)
    except ConfigError as exc:  # a malformed request costs nothing
        raise ChallengeError(400, str(exc)) from None
    _charge(db, settings, _max_turns(catalog, info.env), token_id, name, task_id,
            ["env", request])
    return answer


def _count_question(db: Database, where: tuple[Any, ...], budget: int, task_id: str,
                    question: ChallengeQuestion) -> None:
    """Record ``question`` unless it was asked before; refuse it past the budget."""
    with db.write() as session:
        asked = session.scalar(select(ChallengeQuestion.id)
                               .where(*where, ChallengeQuestion.digest == question.digest))
        if asked is None:
            count = session.scalar(select(func.count()).select_from(ChallengeQuestion)
                                   .where(*where)) or 0
            if count >= budget:
                raise ChallengeError(429, f"this token has asked {count} distinct questions "
                                          f"about {task_id}, the challenge's budget per task "
                                          f"({budget}); repeating an earlier question is "
                                          "still answered")
            session.add(question)
