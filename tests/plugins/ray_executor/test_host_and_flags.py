"""The ray executor's pieces that need no cluster: the env host, the flags, a missing Ray."""

from __future__ import annotations

import sys

import helpers_env
import pytest

from colbench.cli.main import main
from colbench.errors import ConfigError, MissingExtraError
from colbench.plugins.ray_executor import EnvHost, RayEnvExecutor
from colbench.runner import EnvSpec, LocalEnvExecutor, resolve_executor


def test_env_host_keeps_one_warm_env_per_slot_and_plays_scripted_agents_beside_it(
        guess_env_id):
    host = EnvHost(EnvSpec(guess_env_id, {"num_tasks": 3}), slots=2)
    task = list(helpers_env.guess_tasks(3))[1]
    obs, info = host.call(0, "reset", (), {"seed": 1, "options": {"task_id": task.id}})
    assert info["task_id"] == task.id and obs == task.prompt
    env = host._envs[0]
    assert host.call(0, "privileged") == {"secret": helpers_env.secret_for(task.id)}
    answer = host.act(0, "oracle", [{"role": "user", "content": obs}])
    assert answer == f"ANSWER: {helpers_env.secret_for(task.id)}"
    _, reward, terminated, _, step_info = host.call(0, "step", (answer,))
    assert terminated and step_info["metrics"]["success"]
    host.call(0, "reset", (), {"seed": 2, "options": {"task_id": task.id}})
    assert host._envs[0] is env, "an env stays warm across episodes"
    assert 0 not in host._agents, "a reset forgets the last episode's scripted agent"
    host.drop(0)
    assert 0 not in host._envs
    with pytest.raises(ValueError, match="slot 2 is not one of this host's 2 slots"):
        host.call(2, "reset")
    host.close()


def test_executor_options_are_checked_with_the_name_of_what_is_wrong():
    with pytest.raises(ConfigError, match="envs_per_actor must be at least 1"):
        RayEnvExecutor(envs_per_actor=0)
    with pytest.raises(ConfigError, match="cannot be negative"):
        RayEnvExecutor(actor_cpus=-1)
    with pytest.raises(ConfigError, match="bad options for executor 'ray'.*colour"):
        resolve_executor("ray", {"colour": "blue"})
    with pytest.raises(ConfigError, match="the local executor takes no options"):
        resolve_executor("local", {"address": "auto"})
    with pytest.raises(ConfigError, match="does not place episodes' envs"):
        resolve_executor("dynamic-tp")
    with pytest.raises(ConfigError, match="unknown executor 'rya'; did you mean 'ray'"):
        resolve_executor("rya")
    assert isinstance(resolve_executor("local"), LocalEnvExecutor)
    assert isinstance(resolve_executor("ray", {"envs_per_actor": 2}), RayEnvExecutor)


def test_a_missing_ray_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now raises ImportError
    executor = RayEnvExecutor()
    with pytest.raises(MissingExtraError, match=r"pip install 'colbench\[ray\]'"):
        executor.connect()


@pytest.mark.parametrize("command", ["evaluate", "collect"])
def test_address_and_executor_args_need_an_executor_that_takes_them(command, tmp_path,
                                                                    guess_env_id, capsys):
    base = [command, guess_env_id, "--model", "scripted:oracle", "--out", str(tmp_path / "r"),
            "--no-progress"]
    assert main([*base, "--address", "auto"]) == 2
    assert "--address names a Ray cluster: it needs --executor ray" in capsys.readouterr().err
    assert main([*base, "--executor-arg", "envs_per_actor=2"]) == 2
    assert "--executor-arg needs --executor NAME" in capsys.readouterr().err
    assert main([*base, "--executor", "rya"]) == 2
    assert "did you mean 'ray'" in capsys.readouterr().err
    assert not (tmp_path / "r" / "episodes.jsonl").exists()
