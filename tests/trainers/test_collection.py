"""The model pool reads the episode context (not the env) to pick its member, and collection
plugs into the runner through its public hooks."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import helpers_env
import pytest

from colbench.errors import ConfigError
from colbench.models.base import (
    BaseChatModel,
    Completion,
    Conversation,
    EpisodeContext,
    SamplingParams,
)
from colbench.rundir import RunDir
from colbench.runner import episode_seed
from colbench.trainers.collection import (
    CollectConfig,
    ModelPool,
    collect,
    draw_member,
    draw_model,
)


class Member(BaseChatModel):
    """A pool member that notes what it was asked to check and to bind."""

    def __init__(self, name: str, refuses: bool = False) -> None:
        self.name = name
        self.refuses = refuses
        self.checked: list[Any] = []
        self.bound: list[tuple[Any, EpisodeContext]] = []

    def check_env(self, env: Any) -> None:
        self.checked.append(env)
        if self.refuses:
            raise ConfigError(f"{self.name} cannot play this env")

    def bind_episode(self, env: Any, context: EpisodeContext) -> BaseChatModel:
        self.bound.append((env, context))
        return self

    def generate(self, conversations: Sequence[Conversation],
                 params: SamplingParams | None = None) -> list[Completion]:
        return [Completion(text=f"{self.name}: {helpers_env.asker_reply(c)}")
                for c in conversations]


def context(task_id: str, trial: int, seed: int = 0, turn: int = 0) -> EpisodeContext:
    return EpisodeContext(env_id="e", task_id=task_id, trial=trial,
                          seed=episode_seed(seed, task_id, trial), turn=turn)


def test_the_pool_picks_its_member_from_the_context_alone():
    members = [Member("a"), Member("b"), Member("c")]
    pool = ModelPool(["spec:a", "spec:b", "spec:c"], members)
    env = object()
    contexts = [context(f"t{i}", trial) for i in range(8) for trial in range(3)]
    picked = [pool.bind_episode(env, c) for c in contexts]
    assert {m.name for m in picked} == {"a", "b", "c"}  # 24 draws reach every member
    for ctx, member in zip(contexts, picked, strict=True):
        # The same draw collection always made: the base seed, the task and the trial.
        assert member is members[draw_model(0, ctx.task_id, ctx.trial, 3)]
        assert pool.member_spec(ctx) == f"spec:{member.name}"
        # The member binds with the episode's own context; the turn never changes the draw.
        assert (env, ctx) in member.bound
        assert pool.member_index(ctx.at_turn(5)) == pool.member_index(ctx)
    # Another episode seed is another draw.
    assert [draw_member(c.seed + 1, 3) for c in contexts] != [pool.member_index(c)
                                                               for c in contexts]


def test_the_pool_checks_every_member_and_never_plays_outside_an_episode():
    refusing = Member("b", refuses=True)
    pool = ModelPool(["a", "b"], [Member("a"), refusing])
    with pytest.raises(ConfigError, match="b cannot play this env"):
        pool.check_env("env")
    assert refusing.checked == ["env"]
    with pytest.raises(ConfigError, match="inside episodes only"):
        pool.generate([[{"role": "user", "content": "hi"}]])
    with pytest.raises(ConfigError, match="one model per spec"):
        ModelPool(["a", "b"], [Member("a")])


def test_collection_labels_each_record_with_the_member_that_played_it(tmp_path):
    members = [Member("first"), Member("second")]
    out = tmp_path / "collected"
    summary = collect(CollectConfig(env=helpers_env.ENV_ID, models=["m:first", "m:second"],
                                    out=out, k=3, num_tasks=4, progress=False), models=members)
    assert summary.model == "pool(m:first, m:second)" and summary.counts.ok == 12
    run = RunDir(out)
    for record in run.latest_episodes():
        spec = ["m:first", "m:second"][draw_model(0, record.task_id, record.trial, 2)]
        assert record.model == spec
        # The text shows which member really played: the label and the play agree.
        assert record.turns[0].action.startswith(spec.removeprefix("m:") + ":")
    assert {r.model for r in run.latest_episodes()} == {"m:first", "m:second"}
    assert run.read_collect_info()["models"] == ["m:first", "m:second"]
    assert len(run.read_tasks()) == 4


def test_a_refused_folder_gets_no_collection_files(tmp_path):
    out = tmp_path / "taken"
    collect(CollectConfig(env=helpers_env.ENV_ID, models=["scripted:oracle"], out=out, k=1,
                          num_tasks=2, progress=False))
    run = RunDir(out)
    (out / "collect.json").unlink()
    (out / "tasks.jsonl").unlink()
    with pytest.raises(ConfigError, match="holds a different run"):
        collect(CollectConfig(env=helpers_env.ENV_ID, models=["scripted:no-ask"], out=out, k=1,
                              num_tasks=2, progress=False))
    assert run.read_collect_info() is None and run.read_tasks() is None
