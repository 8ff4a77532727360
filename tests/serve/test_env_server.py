"""colbench's routes of the env server: episodes, their bounds, data-only kwargs, the token,
retried calls, reaping and shutdown."""

from __future__ import annotations

import json

import helpers_env
import httpx
import pytest

from colbench.errors import ConfigError
from colbench.serve import EnvServer, check_env_kwargs

GUESS = helpers_env.ENV_ID


def _create(url: str, env_id: str = GUESS, **body: object) -> httpx.Response:
    return httpx.post(f"{url}/v1/episodes", json={"env_id": env_id, **body})


def test_an_episode_plays_over_http(env_server) -> None:
    server = env_server()
    assert httpx.get(f"{server.url}/v1/health").json()["status"] == "ok"
    ids = [e["id"] for e in httpx.get(f"{server.url}/v1/envs").json()["envs"]]
    assert GUESS in ids and "colbench/TextCraft-v0" in ids
    about = _create(server.url, env_kwargs={"num_tasks": 3}).json()
    episode = f"{server.url}/v1/episodes/{about['episode_id']}"
    tasks = httpx.get(f"{episode}/tasks").json()
    assert [t["id"] for t in tasks["tasks"]] == helpers_env.guess_tasks(3).ids()
    reset = httpx.post(f"{episode}/reset", json={"seed": 1, "options": {
        "task_id": tasks["tasks"][1]["id"], "max_turns": 2}}).json()
    assert reset["info"]["task_id"] == tasks["tasks"][1]["id"]
    assert reset["info"]["max_turns"] == 2
    secret = helpers_env.secret_for(tasks["tasks"][1]["id"])
    step = httpx.post(f"{episode}/step", json={"action": f"ANSWER: {secret}"}).json()
    assert step["terminated"] and step["reward"] == 1.0
    assert step["info"]["metrics"]["success"] is True
    # The episode ended: another step is the env's error, not a crash of the server.
    again = httpx.post(f"{episode}/step", json={"action": "ANSWER: 1"})
    assert again.status_code == 500 and "reset()" in again.json()["error"]["message"]
    assert httpx.delete(episode).json() == {"closed": True}
    assert httpx.post(f"{episode}/step", json={"action": "x"}).status_code == 404
    assert len(server.app.episodes) == 0


def test_privileged_data_is_never_served(env_server) -> None:
    """Every reply of a whole backend episode, and its task list, leave out the reference
    code and the test calls that only the simulator and the scorer see."""
    import colbench

    local = colbench.make("colbench/Backend-v0")
    task = local.unwrapped.tasks[0]
    code_lines = str(task.privileged["ground_truth"]).splitlines()
    secrets = [max(code_lines, key=len).strip(), *task.privileged["test_cases"]]
    local.close()
    server = env_server()
    about = _create(server.url, "colbench/Backend-v0")
    episode = f"{server.url}/v1/episodes/{about.json()['episode_id']}"
    bodies = [about.text, httpx.get(f"{episode}/tasks").text,
              httpx.post(f"{episode}/reset", json={"options": {"task_id": task.id}}).text]
    for action in ("What happens for negative amounts?",
                   "I WANT TO ANSWER:\n```python\ndef f():\n    return 0\n```"):
        bodies.append(httpx.post(f"{episode}/step", json={"action": action}).text)
    listed = json.loads(bodies[1])["tasks"][0]
    assert listed["id"] == task.id and "privileged" not in listed
    for body in bodies:
        assert "ground_truth" not in json.loads(body).get("info", {})
        for secret in secrets:
            assert json.dumps(secret)[1:-1] not in body
    assert httpx.get(f"{episode}/privileged").status_code == 404


@pytest.mark.parametrize("kwargs, named", [
    ({"simulator": "python:os:system"}, "env_kwargs.simulator 'python:os:system'"),
    ({"simulator": "os.path:join"}, "env_kwargs.simulator 'os.path:join'"),
    ({"simulator": "hf:some/model?trust_remote_code=true"}, "trust_remote_code"),
    ({"options": {"nested": ["json:loads"]}}, "env_kwargs.options 'json:loads'"),
    ({"tasks": "/etc/passwd"}, "'tasks'"),
])
def test_env_kwargs_that_name_code_or_files_are_refused(env_server, kwargs, named) -> None:
    server = env_server()
    reply = _create(server.url, env_kwargs=kwargs)
    assert reply.status_code == 400
    assert named in reply.json()["error"]["message"]
    assert len(server.app.episodes) == 0


def test_registered_names_and_model_specs_pass_as_data() -> None:
    kwargs = {"simulator": "openai:gpt-4o@http://localhost:8000/v1", "split": "test",
              "scorer": "clip", "max_turns": 3}
    assert check_env_kwargs(kwargs) == kwargs
    with pytest.raises(ConfigError, match="JSON object"):
        check_env_kwargs(["split"])


def test_an_env_id_that_is_a_module_path_is_refused(env_server) -> None:
    server = env_server()
    reply = _create(server.url, "helpers_env:GuessEnv")
    assert reply.status_code == 400
    assert "registered ids only" in reply.json()["error"]["message"]


def test_episodes_per_client_are_bounded(env_server) -> None:
    server = env_server(max_episodes_per_client=2)
    first = _create(server.url).json()["episode_id"]
    _create(server.url)
    refused = _create(server.url)
    assert refused.status_code == 429 and "close some" in refused.json()["error"]["message"]
    httpx.delete(f"{server.url}/v1/episodes/{first}")
    assert _create(server.url).status_code == 200


def test_a_token_is_required_when_set(env_server) -> None:
    token = "t" * 24
    server = env_server(token=token)
    assert httpx.get(f"{server.url}/v1/health").status_code == 200
    missing = _create(server.url)
    assert missing.status_code == 401 and "missing bearer token" in missing.text
    wrong = httpx.post(f"{server.url}/v1/episodes", json={"env_id": GUESS},
                       headers={"Authorization": "Bearer " + "x" * 24})
    assert wrong.status_code == 401 and token not in wrong.text
    right = httpx.post(f"{server.url}/v1/episodes", json={"env_id": GUESS},
                       headers={"Authorization": f"Bearer {token}"})
    assert right.status_code == 200
    with pytest.raises(ConfigError, match="at least 16"):
        EnvServer(token="short")


def test_a_repeated_call_gets_the_same_reply_without_stepping_twice(env_server) -> None:
    server = env_server()
    episode = f"{server.url}/v1/episodes/{_create(server.url).json()['episode_id']}"
    httpx.post(f"{episode}/reset", json={"seed": 0, "seq": 1})
    first = httpx.post(f"{episode}/step", json={"action": "is it a number?", "seq": 2})
    repeated = httpx.post(f"{episode}/step", json={"action": "is it a number?", "seq": 2})
    assert repeated.content == first.content
    following = httpx.post(f"{episode}/step", json={"action": "again?", "seq": 3}).json()
    assert following["info"]["turn"] == 2  # the repeated call did not take a turn
    skipped = httpx.post(f"{episode}/step", json={"action": "x", "seq": 9})
    assert skipped.status_code == 409


class _Closing:
    """Counts the envs the server closes."""

    closed: list[str] = []


def _counting_env(env_id: str, kwargs: dict) -> object:
    from colbench.envs import make

    env = make(env_id, **kwargs)
    close = env.close

    def counted() -> None:
        _Closing.closed.append(env_id)
        close()

    env.close = counted  # type: ignore[method-assign]
    return env


def test_idle_episodes_are_reaped_and_their_clients_told(env_server) -> None:
    _Closing.closed = []
    server = env_server(idle_timeout=60, make_env=_counting_env)
    episode_id = _create(server.url).json()["episode_id"]
    busy_id = _create(server.url).json()["episode_id"]
    table = server.app.episodes
    busy = table.get(busy_id)
    busy.busy += 1  # a call in progress is never reaped
    import time

    assert table.reap(now=time.monotonic() + 30) == []
    assert table.reap(now=time.monotonic() + 61) == [episode_id]
    busy.busy -= 1
    assert _Closing.closed == [GUESS]
    gone = httpx.post(f"{server.url}/v1/episodes/{episode_id}/step", json={"action": "x"})
    assert gone.status_code == 404 and "--idle-timeout" in gone.json()["error"]["message"]


def test_shutdown_closes_every_env_and_refuses_new_episodes(env_server) -> None:
    _Closing.closed = []
    server = env_server(make_env=_counting_env)
    for _ in range(3):
        _create(server.url)
    assert server.app.shutdown() == 3
    assert _Closing.closed == [GUESS] * 3
    assert _create(server.url).status_code == 429


def test_the_command_serves_until_sigterm_then_closes_every_env(cli_environ, tmp_path) -> None:
    """``colbench serve-envs`` under waitress: it serves, and SIGTERM stops it gracefully,
    closing the episodes still open (and saying how many)."""
    import signal
    import subprocess
    import sys

    token = tmp_path / "token"
    token.write_text("s" * 32 + "\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "colbench.cli.main", "serve-envs", "--port", "0",
         "--token-file", str(token), "--threads", "4"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_environ)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = line.split("serving at ", 1)[1].split()[0]
        headers = {"Authorization": "Bearer " + "s" * 32}
        for _ in range(2):
            created = httpx.post(f"{url}/v1/episodes", json={"env_id": GUESS}, headers=headers)
            assert created.status_code == 200
        assert httpx.post(f"{url}/v1/episodes", json={"env_id": GUESS}).status_code == 401
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, err
    assert "closed 2 open episode(s)" in err
