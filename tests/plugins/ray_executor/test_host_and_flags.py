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


def _fake_ray(monkeypatch, error: BaseException) -> None:
    """A ``ray`` module whose ``init`` raises ``error`` (no cluster needed)."""
    import types

    def init(**_kwargs):
        raise error

    fake = types.SimpleNamespace(is_initialized=lambda: False, init=init)
    monkeypatch.setitem(sys.modules, "ray", fake)


def _refused_by_token_auth() -> ConnectionError:
    # What Ray 2.60's ray.init raises where the cluster refuses the client's token (or the
    # lack of one): a ConnectionError whose cause quotes the refusal.
    cause = RuntimeError(
        "Failed to connect to GCS. Last connection error: Traceback (most recent call last):\n"
        '  File "python/ray/includes/common.pxi", line 119, in ray._raylet.check_status\n'
        "ray.exceptions.AuthenticationError: RPC error: InvalidAuthToken: Authentication "
        "token is missing or incorrect. Note: RAY_AUTH_MODE is currently 'disabled' (not "
        "'token').")
    error = ConnectionError("Failed to connect to Ray cluster at 10.0.0.5:6379")
    error.__cause__ = cause
    return error


class AuthenticationError(Exception):
    """Stands in for ray.exceptions.AuthenticationError (matched by its name)."""


@pytest.mark.parametrize("error", [
    _refused_by_token_auth(),
    AuthenticationError("Token authentication is enabled but no authentication token was "
                        "found."),
], ids=["cluster refused the token", "no token here"])
def test_an_authentication_refusal_is_told_apart_from_an_unreachable_cluster(monkeypatch,
                                                                             error):
    _fake_ray(monkeypatch, error)
    with pytest.raises(ConfigError) as refused:
        RayEnvExecutor(address="10.0.0.5:6379").connect()
    message = str(refused.value)
    assert "refused this client's authentication" in message and "RAY_AUTH_TOKEN" in message
    assert "cannot reach" not in message
    assert ("InvalidAuthToken: Authentication token is missing or incorrect" in message
            or "no authentication token was found" in message)


def test_an_unreachable_cluster_is_still_said_to_be_unreachable(monkeypatch):
    _fake_ray(monkeypatch, ConnectionError("Failed to connect to Ray cluster at 10.0.0.5:6379"))
    with pytest.raises(ConfigError, match="cannot reach a Ray cluster at '10.0.0.5:6379'"):
        RayEnvExecutor(address="10.0.0.5:6379").connect()


def test_a_scripted_agent_beside_its_env_draws_from_the_episode_seed(guess_env_id):
    # The actor binds the agent at the episode's first move and seeds it with the seed the
    # driver sent, as scripted:random is seeded in a local run.
    from colbench.baselines import chat_rng

    host = EnvHost(EnvSpec(guess_env_id, {"num_tasks": 3}), slots=1)
    task = list(helpers_env.guess_tasks(3))[0]
    obs, _ = host.call(0, "reset", (), {"seed": 1, "options": {"task_id": task.id}})
    chat = [{"role": "user", "content": obs}]
    answers = {}
    for seed in (11, 12):
        host.call(0, "reset", (), {"seed": seed, "options": {"task_id": task.id}})
        answers[seed] = host.act(0, "random", chat, seed)
        assert answers[seed] == f"ANSWER: {chat_rng(seed, chat).randint(1, 100)}"
    assert answers[11] != answers[12]
    host.close()
