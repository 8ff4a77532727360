"""online-grpo's numbers against hand computations: group advantages, task normalisation, the
horizon curriculum; and the settings it refuses."""

from __future__ import annotations

import math

import pytest

from colbench.errors import ConfigError, MissingExtraError
from colbench.trainers.online_grpo_advantages import (
    STD_EPSILON,
    batch_advantages,
    group_advantages,
    informative,
    task_normalise,
)
from colbench.trainers.online_grpo_config import OnlineGRPOConfig
from colbench.trainers.online_grpo_curriculum import HorizonCurriculum


def test_group_advantages_by_hand():
    # Group a: rewards 1, 0 -> mean 0.5, unbiased std sqrt(0.5) -> +-0.5 / (0.7071 + 1e-4).
    # Group b: 3, 1, 2 -> mean 2, unbiased std 1 -> (1, -1, 0) / (1 + 1e-4).
    advantages = group_advantages([1.0, 0.0, 3.0, 1.0, 2.0], ["a", "a", "b", "b", "b"])
    a = 0.5 / (math.sqrt(0.5) + STD_EPSILON)
    b = 1 / (1 + STD_EPSILON)
    assert advantages == pytest.approx([a, -a, b, -b, 0.0])
    # The population std (n): 0.5 and sqrt(2/3), so group a's advantages are 1.41x larger.
    population = group_advantages([1.0, 0.0, 3.0, 1.0, 2.0], ["a", "a", "b", "b", "b"],
                                  std="population")
    s = math.sqrt(2 / 3)
    assert population == pytest.approx([0.5 / (0.5 + STD_EPSILON), -0.5 / (0.5 + STD_EPSILON),
                                        1 / (s + STD_EPSILON), -1 / (s + STD_EPSILON), 0.0])
    assert population[0] / advantages[0] == pytest.approx(math.sqrt(2), rel=1e-3)
    assert group_advantages([1.0, 0.0], ["a", "a"], scale="none") == [0.5, -0.5]
    with pytest.raises(ValueError, match="std must be one of"):
        group_advantages([1.0, 0.0], ["a", "a"], std="sample")


def test_default_advantages_are_trls_own():
    """The default (unbiased std, group scale) gives TRL's GRPOTrainer numbers: its
    ``nanstd`` over each group, ``(r - mean) / (std + 1e-4)``, dropped rewards as NaN."""
    torch = pytest.importorskip("torch")
    trl_utils = pytest.importorskip("trl.trainer.utils")
    rewards = [0.2, 0.9, 0.4, 0.4, 1.0, None, 0.0, 0.5, 0.3, 0.3, 0.3, 0.7]
    generations = 4
    tensor = torch.tensor([math.nan if r is None else r for r in rewards], dtype=torch.float64)
    grouped = tensor.view(-1, generations)
    mean = torch.nanmean(grouped, dim=1).repeat_interleave(generations)
    std = trl_utils.nanstd(grouped, dim=1).repeat_interleave(generations)
    trl_advantages = torch.nan_to_num((tensor - mean) / (std + 1e-4), nan=0.0).tolist()
    ours = group_advantages(rewards, [i // generations for i in range(len(rewards))])
    assert ours == pytest.approx(trl_advantages, rel=1e-6, abs=1e-9)


#: Group 0's rewards are all equal; group 1's differ; with 10, 10, 30, 10 loss tokens the
#: token-weighted mean of the task's group advantages is not 0.
EQUAL_GROUP = {"rewards": [1.0, 1.0, 1.0, 0.0], "groups": [0, 0, 1, 1],
               "tasks": ["env"] * 4, "tokens": [10, 10, 30, 10]}


def test_task_normalisation_used_to_move_an_all_equal_group_off_zero():
    """The bug: z-scoring the whole task centred the equal group's zeros to -0.45 each."""
    raw = group_advantages(EQUAL_GROUP["rewards"], EQUAL_GROUP["groups"])
    centred_all = task_normalise(raw, EQUAL_GROUP["tasks"], EQUAL_GROUP["tokens"])
    assert centred_all[0] == pytest.approx(-0.4472, abs=1e-4)  # what signal=None does
    fixed = batch_advantages(EQUAL_GROUP["rewards"], EQUAL_GROUP["groups"],
                             EQUAL_GROUP["tasks"], EQUAL_GROUP["tokens"])
    assert fixed[:2] == [0.0, 0.0]
    assert fixed[2] > 0 > fixed[3]


@pytest.mark.parametrize("normalisation", ["off", "env", "family"])
@pytest.mark.parametrize("scale", ["group", "none"])
@pytest.mark.parametrize("std", ["unbiased", "population"])
def test_all_equal_groups_get_zero_under_every_setting(normalisation, scale, std):
    # Three groups of one task: equal rewards, differing ones, equal again with a drop.
    rewards = [0.7, 0.7, 0.7, 1.0, 0.0, 0.4, 0.2, None, 0.2]
    groups = [0, 0, 0, 1, 1, 1, 2, 2, 2]
    tasks = ["env"] * 9
    tokens = [5, 9, 2, 4, 8, 3, 7, 0, 6]
    out = batch_advantages(rewards, groups, tasks, tokens, scale=scale, std=std,
                           normalisation=normalisation)
    assert out[:3] == [0.0, 0.0, 0.0] and out[6:] == [0.0, 0.0, 0.0]
    assert any(out[3:6])
    assert informative(rewards, groups) == [False] * 3 + [True] * 3 + [False] * 3


def test_dropped_samples_leave_the_baseline():
    # Without the None, the group is 1, 0, 0.5: the None counts nowhere and gets 0.
    with_drop = group_advantages([1.0, None, 0.0, 0.5], ["g"] * 4)
    without = group_advantages([1.0, 0.0, 0.5], ["g"] * 3)
    assert with_drop[1] == 0.0
    assert [with_drop[0], with_drop[2], with_drop[3]] == pytest.approx(without)
    assert group_advantages([None, None], ["g", "g"]) == [0.0, 0.0]


def _weighted(values, weights):
    total = sum(weights)
    mean = sum(v * w for v, w in zip(values, weights, strict=True)) / total
    var = sum(w * (v - mean) ** 2 for v, w in zip(values, weights, strict=True)) / total
    return mean, math.sqrt(var)


def test_task_normalisation_puts_envs_of_any_scale_at_mean_0_std_1():
    # Env "big" rewards are 100x env "small"'s; unscaled group advantages keep that scale.
    rewards = [1.0, 0.0, 0.5, 0.2, 100.0, 0.0, 50.0, 20.0]
    groups = [0, 0, 1, 1, 2, 2, 3, 3]
    tasks = ["small"] * 4 + ["big"] * 4
    tokens = [3, 5, 2, 7] * 2
    raw = group_advantages(rewards, groups, scale="none")
    assert max(map(abs, raw[4:])) == pytest.approx(100 * max(map(abs, raw[:4])))
    normalised = task_normalise(raw, tasks, tokens)
    for task in ("small", "big"):
        idx = [i for i, t in enumerate(tasks) if t == task]
        mean, std = _weighted([normalised[i] for i in idx], [tokens[i] for i in idx])
        assert mean == pytest.approx(0.0, abs=1e-12)
        assert std == pytest.approx(1.0)
    # One scale for both: rewards 100x apart in the same pattern get the same advantages.
    assert normalised[:4] == pytest.approx(normalised[4:])


def test_task_normalisation_skips_samples_without_loss_tokens():
    out = task_normalise([2.0, -2.0, 5.0], ["t", "t", "t"], [1, 1, 0])
    assert out == pytest.approx([1.0, -1.0, 0.0])
    assert task_normalise([0.3, 0.3], ["t", "t"], [2, 2]) == [0.0, 0.0]  # centred only
    with pytest.raises(ValueError, match="one entry per sample"):
        task_normalise([1.0], ["t", "u"], [1])


def test_curriculum_budgets_by_step():
    curriculum = HorizonCurriculum.from_settings([5, 10, 15], 100)
    assert [curriculum.budget(s) for s in (0, 99, 100, 199, 200, 250, 10_000)] == \
        [5, 5, 10, 10, 15, 15, 15]
    assert HorizonCurriculum.from_settings(None, 100).budget(7) is None
    assert HorizonCurriculum.from_settings([3], 1).budget(50) == 3
    with pytest.raises(ConfigError, match="horizon_stages"):
        HorizonCurriculum.from_settings([5, 0], 10)
    with pytest.raises(ConfigError, match="steps_per_stage"):
        HorizonCurriculum.from_settings([5], 0)


@pytest.mark.parametrize("kwargs,message", [
    ({"per_device_train_batch_size": 6, "num_generations": 4}, "multiple of num_generations"),
    ({"num_generations": 1}, "at least 2"),
    ({"reward_metric": "reward"}, "reward_metric must be one of"),
    ({"off_policy_tokens": "drop"}, "off_policy_tokens must be one of"),
    ({"task_normalisation": "task"}, "task_normalisation must be one of"),
    ({"cross_policy_prob": 1.5}, r"cross_policy_prob must be in \[0, 1\]"),
    ({"temperature": 0.7}, "off_policy_tokens=importance.*temperature 1.0"),
    ({"std_estimator": "sample"}, "std_estimator must be one of"),
    ({"beta": -0.1}, "cannot be negative"),
    ({"preset": "agentrl2"}, "no preset 'agentrl2'.*agentgym-rl, agentrl"),
    ({"address": "auto"}, "need another executor than local"),
    ({"executor": "ray", "executor_options": {"model_replicas": 1}}, "model_replicas"),
    ({"envs": ["a", "b"], "env_weights": [1.0]}, "env_weights has 1 entries for 2 envs"),
    ({"envs": ["a"], "env_weights": [0.0]}, "positive sum"),
    ({"max_steps": -1}, "max_steps must be at least 1"),
    ({"horizon_stages": [0]}, "horizon_stages"),
])
def test_bad_settings_are_named(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        OnlineGRPOConfig(**kwargs)


def test_env_weights_are_shares():
    assert OnlineGRPOConfig(envs=["a", "b"], env_weights=[3, 1]).weights() == [0.75, 0.25]
    assert OnlineGRPOConfig(envs=["a", "b"]).weights() == [0.5, 0.5]


def test_vllm_generation_without_vllm_names_the_extra():
    pytest.importorskip("trl", reason="the trainers need colbench[train]")
    from colbench.trainers.online_grpo_trainer import check_generation_backend

    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(MissingExtraError, match=r"colbench\[gpu\].*vllm"):
            check_generation_backend("vllm-colocate")
    check_generation_backend("hf")


def test_draws_depend_on_step_and_seed_only():
    from colbench.trainers.online_grpo_rollout import draw_tasks

    ids = {"a": [f"a{i}" for i in range(50)], "b": [f"b{i}" for i in range(50)]}
    first = draw_tasks(3, 400, envs=["a", "b"], weights=[0.75, 0.25], task_ids=ids, seed=1)
    assert first == draw_tasks(3, 400, envs=["a", "b"], weights=[0.75, 0.25], task_ids=ids,
                               seed=1)
    assert first != draw_tasks(4, 400, envs=["a", "b"], weights=[0.75, 0.25], task_ids=ids,
                               seed=1)
    share = sum(d.env == "a" for d in first) / len(first)
    assert 0.68 < share < 0.82


def test_long_episodes_are_cut_to_max_length():
    pytest.importorskip("trl", reason="the trainers need colbench[train]")
    from colbench.trainers.online_grpo_rollout import Sample, TaskDraw
    from colbench.trainers.online_grpo_trainer import cut_to_length

    sample = Sample(draw=TaskDraw("e", "t"), group=0, trial=0, prompt_ids=[1, 2, 3],
                    completion_ids=[4, 5, 6, 7], env_mask=[1, 0, 1, 1],
                    logprobs=[-1.0, 0.0, -2.0, -3.0], reward=1.0, record=None)
    assert not cut_to_length(sample, None) and not cut_to_length(sample, 7)
    assert cut_to_length(sample, 5)
    assert (sample.completion_ids, sample.env_mask, sample.logprobs) == \
        ([4, 5], [1, 0], [-1.0, 0.0])
    assert sample.reward == 1.0


@pytest.mark.parametrize("deepspeed_stage,fsdp_version,settings,refused", [
    (3, None, {"overlap": True}, "DeepSpeed ZeRO-3: overlap"),
    (3, None, {"overlap": False, "cross_policy_prob": 0.25},
     "DeepSpeed ZeRO-3: the cross-policy snapshot"),
    (0, 2, {"overlap": True, "cross_policy_prob": 0.25}, None),  # FSDP: gathered
    (3, None, {"overlap": False}, None),
    (2, None, {"overlap": True, "cross_policy_prob": 0.25}, None),
    (0, None, {"overlap": True, "cross_policy_prob": 0.25}, None),
])
def test_sharded_weights_refuse_per_process_copies(deepspeed_stage, fsdp_version, settings,
                                                   refused):
    """Under ZeRO-3 each process holds a shard, which the overlap copy and the snapshot
    are not gathered from, so they are refused at start; FSDP's shards are gathered."""
    pytest.importorskip("trl", reason="the trainers need colbench[train]")
    from types import SimpleNamespace

    from colbench.trainers.online_grpo_trainer import check_sharding

    accelerator = SimpleNamespace(state=SimpleNamespace(
        deepspeed_plugin=SimpleNamespace(zero_stage=deepspeed_stage) if deepspeed_stage
        else None,
        fsdp_plugin=SimpleNamespace(fsdp_version=fsdp_version) if fsdp_version else None))
    config = OnlineGRPOConfig(**settings)
    if refused is None:
        check_sharding(accelerator, config)
    else:
        with pytest.raises(ConfigError, match=refused):
            check_sharding(accelerator, config)
