"""Rollouts of ``online-grpo``: episodes of real colbench envs turned into GRPO samples.

One training step draws its groups (an env and a task each, :class:`TaskDraw`), plays
``num_generations`` episodes of each with colbench's own evaluation runner (so env failures,
retries and the run-directory format are the runner's), and turns every episode into one
sample of TRL's ``rollout_func`` format:

* ``prompt_ids``: the system prompt and first observation, rendered with the chat template
  and the generation cue, exactly as the policy was prompted at its first turn;
* ``completion_ids``: every later token of the conversation up to the last agent token; the
  agent's turns are the token ids the policy generated, unchanged;
* ``env_mask``: 1 on the agent's tokens (its message and the end-of-turn marker it emitted),
  0 on everything the environment or the template added (observations, the simulated
  person's replies, role headers). TRL multiplies its loss mask by it;
* ``logprobs``: the sampling policy's log-probability of each agent token (0 elsewhere).

The sequence comes from :func:`colbench.trainers.tokenize.tokenize_continuation`, the function
the offline trainers (``rft``, ``mt-dpo``, ``sweet-rl``) tokenize with, so the masks of online
and offline training agree token for token. Each agent turn's span there is then checked
against the ids the policy generated: equal in the normal case; when a tokenizer would encode
the decoded text differently, the generated ids replace the span (the tokens trained on are the
tokens sampled), and when the policy stopped at ``max_new_tokens`` without emitting the end
marker, the marker the template adds is kept as context with mask 0. Such turns are counted
(``retokenised_turns``).

Each turn's action comes from the current policy or, with probability ``cross_policy_prob``,
from another member of the pool (the stale snapshot, other model specs); the draw is seeded
by the episode and the turn (:func:`draw_policy`), and each turn's record says which policy
played it (``info.policy``, ``info.policy_version``).
"""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.models.base import (
    BaseChatModel,
    Completion,
    Conversation,
    EpisodeContext,
    SamplingParams,
)
from colbench.records import EpisodeRecord, TurnRecord
from colbench.runner import EvalConfig, RunHooks, Runner

CURRENT = "current"
SNAPSHOT = "snapshot"
#: Per completion token (:attr:`Sample.off_policy`): sampled by the current policy, by another
#: policy with its log-probabilities, or without log-probabilities (no ratio can be taken);
#: the trainer marks current tokens of a batch played by earlier weights as stale.
CURRENT_TOKEN, OTHER_TOKEN, UNSCORED_TOKEN, STALE_TOKEN = 0, 1, 2, 3


# -- what a step plays -----------------------------------------------------------------------

@dataclass(frozen=True)
class TaskDraw:
    """One group of a step: ``num_generations`` episodes of ``task_id`` in ``env``."""

    env: str
    task_id: str


def _unit(*parts: Any) -> float:
    """A number in [0, 1) fixed by ``parts`` (not by PYTHONHASHSEED or call order)."""
    digest = hashlib.sha256("\x00".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2 ** 64


def draw_tasks(step: int, count: int, *, envs: Sequence[str], weights: Sequence[float],
               task_ids: dict[str, Sequence[str]], seed: int, process: int = 0
               ) -> list[TaskDraw]:
    """The ``count`` groups of step ``step``: an env by weight, then a task of it uniformly.

    A function of its arguments only, so lockstep and overlapped training (which draws ahead)
    play the same tasks at the same step, and a rerun plays them again."""
    rng = random.Random(f"online-grpo:{seed}:{process}:{step}")
    draws = []
    for _ in range(count):
        env = rng.choices(list(envs), weights=list(weights))[0]
        ids = task_ids[env]
        if not ids:
            raise ConfigError(f"env {env!r} has no tasks to train on")
        draws.append(TaskDraw(env, ids[rng.randrange(len(ids))]))
    return draws


# -- the policies ---------------------------------------------------------------------------

def draw_policy(prob: float, others: Sequence[str], *key: Any) -> str:
    """Which policy plays the turn named by ``key``: the current one, or with probability
    ``prob`` one of ``others`` (uniformly). Seeded by ``key`` alone."""
    if not others or prob <= 0.0:
        return CURRENT
    if _unit("cross-policy", *key) >= prob:
        return CURRENT
    return others[int(_unit("cross-policy-member", *key) * len(others))]


def turn_seed(*key: Any) -> int:
    """The sampling seed of one model call: a turn's sample does not depend on what else
    was being generated at the same time."""
    return int(_unit("sample", *key) * 2 ** 31)


class PolicySnapshot:
    """A stale copy of the policy's weights (AgentRL's cross-policy member; also the copy
    that overlapped rollouts play on).

    ``refresh`` copies the current weights in; the copy then stays as it is while training
    moves the policy on, until the next refresh. Only what trains is copied: parameters that
    do not require gradients (a LoRA model's base weights) are shared with the policy, since
    training never changes them; under LoRA the snapshot holds the adapter's weights and no
    more. Without LoRA it is a full copy of the weights.

    A policy sharded by FSDP holds a shard of each weight per process:
    the copy is then built whole from the gathered shards
    (:func:`colbench.trainers.online_grpo_weights.unsharded_copy`), base weights included
    (no process holds them whole to share), and refreshed with the gathered trained weights.
    """

    def __init__(self, model: Any) -> None:
        import copy

        from colbench.trainers.online_grpo_weights import sharding_of, unsharded_copy

        #: Names of the weights refreshes bring, when the copy was built from shards.
        self._own: set[str] | None = None
        self._shared: set[int] = set()
        if sharding_of(model) is not None:
            self.model, self._own = unsharded_copy(model)
        else:
            frozen = {id(p): p for p in model.parameters() if not p.requires_grad}
            self.model = copy.deepcopy(model, memo=dict(frozen))
            self._shared = _frozen_storage(model)
        self.model.eval()
        for parameter in self.model.parameters():
            parameter.requires_grad_(False)  # frozen ones already are; the rest are copies
        self.version: int | None = None

    def refresh(self, state: dict[str, Any], version: int | None) -> None:
        """Load ``state`` (the trained weights, :func:`weights_of`) and name its version."""
        missing = set(self.own_names()) - set(state)
        if missing:
            raise ConfigError(f"snapshot refresh lacks {len(missing)} trained weights, e.g. "
                              f"{sorted(missing)[0]!r}")
        self.model.load_state_dict(state, strict=False)
        self.version = version

    def own_names(self) -> list[str]:
        """Names (``state_dict`` keys) of the weights this copy holds itself."""
        if self._own is not None:
            return sorted(self._own)
        return [name for name, value in self.model.state_dict().items()
                if value.data_ptr() not in self._shared]

    def state(self) -> dict[str, Any]:
        """The weights this copy holds itself, on the CPU (what a checkpoint saves)."""
        own = set(self.own_names())
        return {k: v.detach().to("cpu").clone() for k, v in self.model.state_dict().items()
                if k in own}

    def own_bytes(self) -> int:
        """Bytes of the tensors this copy holds itself (shared ones not counted)."""
        own = set(self.own_names())
        return sum(v.numel() * v.element_size() for k, v in self.model.state_dict().items()
                   if k in own)


def weights_of(model: Any) -> dict[str, Any]:
    """A detached copy of ``model``'s trained weights, and its buffers (taken on the training
    thread, loaded later on the rollout thread). Parameters that do not require gradients
    (a LoRA model's base) never change and are not copied. A policy sharded by FSDP is
    gathered (every process must call this at the same point)."""
    from colbench.trainers.online_grpo_weights import gathered_weights, sharding_of

    if sharding_of(model) is not None:
        return gathered_weights(model, trained_only=True)
    frozen = _frozen_storage(model)
    return {k: v.detach().clone() for k, v in model.state_dict().items()
            if v.data_ptr() not in frozen}


def _frozen_storage(model: Any) -> set[int]:
    """Data pointers of the parameters that do not train (tied names of one tensor share
    its pointer, so every name of a frozen tensor is found)."""
    return {p.data_ptr() for p in model.parameters() if not p.requires_grad and p.numel()}


class CrossPolicyModel(BaseChatModel):
    """The agent the runner plays: per turn, the current policy or another pool member.

    ``members`` maps names to chat models (``current`` must be one); ``versions`` gives the
    weight version of the members that have one. Token ids and log-probabilities are asked
    for on every call; each completion says in ``extra`` which member made it.
    """

    name = "online-grpo"

    def __init__(self, members: dict[str, BaseChatModel], *, prob: float, step: int,
                 seed: int, versions: dict[str, int | None] | None = None) -> None:
        if CURRENT not in members:
            raise ConfigError("the policy pool has no current policy")
        self.members = dict(members)
        self.others = [name for name in members if name != CURRENT]
        self.prob = prob
        self.step = step
        self.seed = seed
        self.versions = dict(versions or {})

    def bind_episode(self, env: Any, context: EpisodeContext) -> CrossPolicyModel:
        """Every member binds to the episode (a scripted agent in the pool reads the env)."""
        bound = {name: model.bind_episode(env, context) for name, model in self.members.items()}
        if all(bound[name] is self.members[name] for name in bound):
            return self
        return CrossPolicyModel(bound, prob=self.prob, step=self.step, seed=self.seed,
                                versions=self.versions)

    def check_env(self, env: Any) -> None:
        for model in self.members.values():
            model.check_env(env)

    async def respond(self, conversation: Conversation, params: SamplingParams | None,
                      context: EpisodeContext) -> Completion:
        key = (self.seed, self.step, context.env_id, context.task_id, context.trial,
               context.turn)
        member = draw_policy(self.prob, self.others, *key)
        base = params or SamplingParams()
        params = replace(base, logprobs=True, seed=turn_seed(*key))
        completion = await self.members[member].respond(conversation, params, context)
        completion.extra = {**completion.extra, "policy": member,
                            "policy_version": self.versions.get(member)}
        return completion

    def close(self) -> None:
        """The members belong to the rollout engine, which closes them itself."""


# -- recording ------------------------------------------------------------------------------

@dataclass
class TurnTokens:
    """What the policy generated at one turn, as the sample needs it."""

    token_ids: list[int] | None
    logprobs: list[float] | None
    policy: str
    version: int | None


class RolloutRecorder(RunHooks):
    """Keeps each turn's token ids and log-probabilities, and writes each turn's provenance
    into its record (``info.policy``, ``info.policy_version``)."""

    def __init__(self) -> None:
        self.turns: dict[tuple[str, int], list[TurnTokens]] = {}
        self._lock = threading.Lock()

    def on_turn(self, context: EpisodeContext, completion: Completion, turn: TurnRecord) -> None:
        policy = completion.extra.get("policy", CURRENT)
        version = completion.extra.get("policy_version")
        turn.info["policy"] = policy
        turn.info["policy_version"] = version
        key = (context.task_id, context.trial)
        with self._lock:
            if context.turn == 0:  # a retried episode starts over
                self.turns[key] = []
            self.turns.setdefault(key, []).append(
                TurnTokens(completion.token_ids, completion.logprobs, policy, version))


# -- samples --------------------------------------------------------------------------------

@dataclass
class Sample:
    """One episode as a GRPO sample (see the module docs) and what the trainer logs of it."""

    draw: TaskDraw
    group: int
    trial: int
    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float]
    reward: float | None
    record: EpisodeRecord | None
    #: Turns played by each policy.
    policies: dict[str, int] = field(default_factory=dict)
    #: Turns whose generated ids differ from the shared tokenisation (module docs).
    retokenised_turns: int = 0
    #: Per completion token, which policy sampled it (:data:`CURRENT_TOKEN`...).
    off_policy: list[int] = field(default_factory=list)
    #: Other policies' turns left out of the loss for want of log-probabilities.
    unscored_turns: int = 0
    #: The step whose weights played it, and how many steps later it is trained on (the
    #: trainer sets both).
    version: int = 0
    staleness: int = 0
    family: str = ""

    @property
    def dropped(self) -> bool:
        """An environment failure: no reward, no tokens in the loss."""
        return self.reward is None

    @property
    def loss_tokens(self) -> int:
        return sum(self.env_mask)


def episode_reward(record: EpisodeRecord, metric: str) -> float | None:
    """The trajectory reward from the episode's terminal metrics; None for an environment
    failure (dropped, never scored 0). A model failure is the agent's and scores 0."""
    if record.status != "ok":
        return None
    if record.failure == "model" and metric not in record.metrics:
        return 0.0
    if metric not in record.metrics:
        raise ConfigError(f"env {record.env!r} reported no {metric!r} metric for task "
                          f"{record.task_id!r} (it reported: {sorted(record.metrics)}); set "
                          "reward_metric to one it reports")
    value = record.metrics[metric]
    if isinstance(value, bool) or metric == "success":
        return float(bool(value))
    return float(value)


@dataclass
class EpisodeTokens:
    """An episode laid out for the loss (module docs). ``off_policy`` codes each token's
    sampler (:data:`CURRENT_TOKEN`, :data:`OTHER_TOKEN`, :data:`UNSCORED_TOKEN`; the
    importance ratio's statistics are logged per kind); ``unscored_turns`` counts other
    policies' turns left out of the loss because there are no log-probabilities to take a
    ratio against."""

    prompt_ids: list[int]
    completion_ids: list[int]
    env_mask: list[int]
    logprobs: list[float]
    off_policy: list[int]
    retokenised_turns: int = 0
    unscored_turns: int = 0


def episode_tokens(tokenizer: Any, record: EpisodeRecord, turns: Sequence[TurnTokens], *,
                   off_policy_tokens: str = "train") -> EpisodeTokens:
    """The tokens of an episode that played at least one turn (module docs)."""
    from colbench.trainers.data import split_episode
    from colbench.trainers.tokenize import tokenize_continuation

    # Split before the agent's first action: under an instruction turn the first assistant
    # message is the instructions' reply, which is context, not turn 0.
    prompt, continuation = split_episode(record)
    prompt_ids, ids, turn_index = tokenize_continuation(tokenizer, prompt, continuation)
    out = EpisodeTokens(prompt_ids, [], [], [], [])

    def add(tokens: Sequence[int], trained: int, logprobs: Sequence[float], code: int) -> None:
        out.completion_ids.extend(tokens)
        out.env_mask.extend([trained] * len(tokens))
        out.logprobs.extend(logprobs)
        out.off_policy.extend([code] * len(tokens))

    position = 0
    for turn in range(len(record.turns)):
        # Context before this turn: observations and template text, not the agent's.
        start = position
        while position < len(ids) and turn_index[position] != turn:
            position += 1
        add(ids[start:position], 0, [0.0] * (position - start), 0)
        span_end = position
        while span_end < len(ids) and turn_index[span_end] == turn:
            span_end += 1
        span = ids[position:span_end]
        position = span_end
        tokens = turns[turn] if turn < len(turns) else None
        other = int(tokens is not None and tokens.policy != CURRENT)
        trained = 0 if other and off_policy_tokens == "mask" else 1
        generated = tokens.token_ids if tokens is not None else None
        code = OTHER_TOKEN if other else CURRENT_TOKEN
        if tokens is None or not tokens.logprobs:
            code = UNSCORED_TOKEN
            if other and off_policy_tokens == "importance":
                # Nothing to take the ratio against: the turn stays as context only.
                trained = 0
                out.unscored_turns += 1
        if not generated:  # a member that gives text only: the shared tokenisation stands
            add(span, trained, [0.0] * len(span), code)
            continue
        sampled = list(tokens.logprobs or [0.0] * len(generated))  # type: ignore[union-attr]
        if generated == span:
            add(span, trained, sampled, code)
            continue
        out.retokenised_turns += 1
        add(generated, trained, sampled, code)
        if span and span[-1] != generated[-1]:
            # Stopped without the end marker: the template adds it to the context.
            add(span[-1:], 0, [0.0], 0)
    return out


def failed_sample(draw: TaskDraw, group: int, trial: int, record: EpisodeRecord | None,
                  filler: int) -> Sample:
    """An environment failure's place in the batch: one masked token, no reward."""
    return Sample(draw=draw, group=group, trial=trial, prompt_ids=[filler],
                  completion_ids=[filler], env_mask=[0], logprobs=[0.0], reward=None,
                  record=record, off_policy=[UNSCORED_TOKEN])


# -- playing a step -------------------------------------------------------------------------

def _slug(env: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", env).strip("_") or "env"


@dataclass
class RolloutSettings:
    """What the engine needs of the trainer's config."""

    num_generations: int
    reward_metric: str = "score"
    split: str = "train"
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    concurrency: int = 8
    env_retries: int = 0
    temperature: float = 1.0
    max_new_tokens: int = 256
    off_policy_tokens: str = "train"
    seed: int = 0
    #: Where the envs run (:mod:`colbench.runner.executor`), and the executor's options.
    executor: str = "local"
    #: The env server that serves every env (``--env-url``; None: envs made here).
    env_url: str | None = None
    executor_options: dict[str, Any] = field(default_factory=dict)


class RolloutEngine:
    """Plays a step's groups in the envs and returns their samples.

    Each step's episodes are written as run directories under ``out/step-NNNNNN/ENV``
    (``colbench show``/``report`` read them like evaluations). Pluggable: anything with a
    ``play(step, draws, policy, budget) -> list[Sample]`` method can feed the trainer (a
    remote or Ray-backed runner included).
    """

    def __init__(self, settings: RolloutSettings, tokenizer: Any, out: Path, *,
                 families: Callable[[str, str], str] | None = None) -> None:
        self.settings = settings
        self.tokenizer = tokenizer
        self.out = Path(out)
        self.families = families
        #: Appended to each run directory's name: under several processes each writes its own
        #: (``-rank1``), since a run directory has one writer.
        self.tag = ""
        filler = tokenizer.pad_token_id
        self.filler = filler if filler is not None else tokenizer.eos_token_id
        self._executor: Any = None

    @property
    def executor(self) -> Any:
        """The one executor every step's runner places its envs with, made on first use:
        it keeps envs warm between runs (``local``: a pool in this process, reset by each
        episode; ``ray``: its actors and their envs), so they are built once, not per step."""
        if self._executor is None:
            from colbench.runner.executor import LOCAL, LocalEnvExecutor, resolve_executor

            if self.settings.executor == LOCAL and not self.settings.executor_options:
                self._executor = LocalEnvExecutor(keep_warm=True)
            else:
                self._executor = resolve_executor(self.settings.executor,
                                                  self.settings.executor_options)
        return self._executor

    def close(self) -> None:
        """Release the executor's envs and workers."""
        if self._executor is not None:
            self._executor.close()
            self._executor = None

    def play(self, step: int, draws: Sequence[TaskDraw], policy: BaseChatModel,
             budget: int | None = None) -> list[Sample]:
        """Play ``num_generations`` episodes of every draw; one sample per episode, groups in
        the order of ``draws``."""
        samples: list[Sample | None] = [None] * (len(draws) * self.settings.num_generations)
        for env, rounds in self._rounds(draws).items():
            for round_index, groups in enumerate(rounds):
                name = _slug(env) + (f"-{round_index}" if round_index else "") + self.tag
                folder = self.out / f"step-{step:06d}" / name
                self._play_round(env, groups, draws, policy, budget, step, folder, samples)
        return [s for s in samples if s is not None]

    @staticmethod
    def _rounds(draws: Sequence[TaskDraw]) -> dict[str, list[list[int]]]:
        """Per env, the groups split into rounds of distinct tasks (a runner plays each task
        once per trial)."""
        rounds: dict[str, list[list[int]]] = {}
        for group, draw in enumerate(draws):
            env_rounds = rounds.setdefault(draw.env, [])
            for members in env_rounds:
                if all(draws[g].task_id != draw.task_id for g in members):
                    members.append(group)
                    break
            else:
                env_rounds.append([group])
        return rounds

    def _play_round(self, env: str, groups: list[int], draws: Sequence[TaskDraw],
                    policy: BaseChatModel, budget: int | None, step: int, folder: Path,
                    samples: list[Sample | None]) -> None:
        settings = self.settings
        env_kwargs = dict(settings.env_kwargs)
        env_kwargs.setdefault("split", settings.split)
        config = EvalConfig(
            env=env, model=f"online-grpo:step-{step}", out=folder, split=settings.split,
            trials=settings.num_generations, concurrency=settings.concurrency,
            seed=int(_unit("episode-seed", settings.seed, step, env) * 2 ** 31),
            env_kwargs=env_kwargs,
            sampling=SamplingParams(temperature=settings.temperature,
                                    max_tokens=settings.max_new_tokens, logprobs=True),
            max_env_retries=settings.env_retries, max_consecutive_failures=0, resume=False,
            progress=False, max_turns=budget,  # the curriculum's budget: reset options
            env_url=settings.env_url)
        recorder = RolloutRecorder()
        runner = Runner(config, model=policy, hooks=[recorder], executor=self.executor)
        try:
            wanted = {draws[g].task_id for g in groups}
            by_id = {task.id: task for task in runner.tasks}
            missing = sorted(wanted - set(by_id))
            if missing:
                raise ConfigError(f"env {env!r} has no task(s) {missing} in split "
                                  f"{settings.split!r}")
            from colbench.tasks import TaskSet

            runner.tasks = TaskSet(f"online-grpo-step-{step}",
                                   [by_id[draws[g].task_id] for g in groups])
            asyncio.run(_run(runner, settings.concurrency))
            records = {record.key: record for record in runner.run_dir.latest_episodes()}
        finally:
            runner.close()
        for group in groups:
            draw = draws[group]
            for trial in range(settings.num_generations):
                record = records.get((draw.task_id, trial))
                index = group * settings.num_generations + trial
                samples[index] = self._sample(draw, group, trial, record,
                                              recorder.turns.get((draw.task_id, trial), []))

    def _sample(self, draw: TaskDraw, group: int, trial: int, record: EpisodeRecord | None,
                turns: list[TurnTokens]) -> Sample:
        if record is None:
            return failed_sample(draw, group, trial, record, self.filler)
        reward = episode_reward(record, self.settings.reward_metric)
        if reward is None or not record.turns:
            sample = failed_sample(draw, group, trial, record, self.filler)
            sample.reward = reward  # a model failure before any turn still scores 0
        else:
            laid = episode_tokens(self.tokenizer, record, turns,
                                  off_policy_tokens=self.settings.off_policy_tokens)
            sample = Sample(draw=draw, group=group, trial=trial, prompt_ids=laid.prompt_ids,
                            completion_ids=laid.completion_ids, env_mask=laid.env_mask,
                            logprobs=laid.logprobs, reward=reward, record=record,
                            retokenised_turns=laid.retokenised_turns,
                            off_policy=laid.off_policy, unscored_turns=laid.unscored_turns)
        for tokens in turns[:len(record.turns)]:
            sample.policies[tokens.policy] = sample.policies.get(tokens.policy, 0) + 1
        if self.families is not None:
            sample.family = self.families(draw.env, draw.task_id)
        return sample


async def _run(runner: Runner, concurrency: int) -> Any:
    loop = asyncio.get_running_loop()
    loop.set_default_executor(ThreadPoolExecutor(max_workers=concurrency + 4,
                                                 thread_name_prefix="online-grpo-model"))
    return await runner.run()


# -- overlap --------------------------------------------------------------------------------

class OverlapScheduler:
    """Rollouts of later steps run on a worker thread while the current step trains.

    ``take(step, launch)`` returns step ``step``'s batch: the one prepared ahead, or one made
    now. ``launch(s)`` is called on the training thread and returns the job that makes batch
    ``s`` (capturing the weights it must use at that moment); jobs run one at a time on the
    worker. With ``overlap`` off every batch is made when it is taken (lockstep). At most
    ``max_staleness`` batches are prepared ahead, so a batch's weights lag the step that
    trains on it by at most that many steps.
    """

    def __init__(self, *, overlap: bool, max_staleness: int, last_step: int) -> None:
        self.overlap = overlap
        self.max_staleness = max_staleness
        self.last_step = last_step
        self._pending: dict[int, Future] = {}
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="online-grpo")

    def take(self, step: int, launch: Callable[[int], Callable[[], Any]]) -> Any:
        future = self._pending.pop(step, None)
        batch = future.result() if future is not None else launch(step)()
        if self.overlap:
            for ahead in range(step + 1, min(step + self.max_staleness, self.last_step) + 1):
                if ahead not in self._pending:
                    self._pending[ahead] = self._executor.submit(launch(ahead))
        return batch

    def wait(self) -> None:
        """Block until every batch prepared ahead is played (they stay to be taken)."""
        for future in list(self._pending.values()):
            future.exception()  # waits; a failure is raised when the batch is taken

    def close(self) -> None:
        for future in self._pending.values():
            future.cancel()
        self._executor.shutdown(wait=True, cancel_futures=True)
        self._pending.clear()
