"""``import colbench`` registers every env id with Gymnasium without importing Gymnasium
(with NumPy and pydantic, most of what ``colbench list envs`` paid at start): the ids reach
Gymnasium's registry when it is imported, whichever of the two is imported first. Each check
runs in a fresh interpreter, since this one has imported everything already."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from helpers_env import ENV_ID  # the test plugin's id, declared by an entry point (conftest)

#: An id of a family (registered with kwargs) and one registered alone by a suite manifest.
FAMILY_ID = "colbench/BabyAI-GoToObj-v0"
SUITE_ID = "colbench/Backend-v1"


def _run(code: str, env: dict[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_colbench_imports_no_gymnasium_numpy_or_pydantic(cli_environ):
    code = (
        "import json, sys, colbench\n"
        "heavy = [m for m in ('gymnasium', 'numpy', 'pydantic', 'colbench.env', "
        "'colbench.tasks') if m in sys.modules]\n"
        "text_env = colbench.TextEnv\n"  # a lazy name: loads colbench.env, and Gymnasium
        "import gymnasium\n"
        "print(json.dumps({'heavy': heavy, 'is_gym_env': issubclass(text_env, gymnasium.Env),\n"
        "    'task': colbench.Task.__module__, 'ids': len(colbench.env_ids())}))\n")
    result = _run(code, cli_environ)
    assert result["heavy"] == []
    assert result["is_gym_env"] is True
    assert result["task"] == "colbench.tasks"
    assert result["ids"] > 40  # every suite's ids, BabyAI's levels among them


_BOTH_ORDERS = """
import json, sys, warnings
{gymnasium_first}
import colbench
from colbench.envs import register_env, register_env_family
gym_before = 'gymnasium' in sys.modules
# Registered after colbench: waits for Gymnasium when it is not imported yet.
register_env("colbench-test/Late-v0", "helpers_env:GuessEnv", kwargs={{"num_tasks": 2}})
with warnings.catch_warnings():
    warnings.simplefilter("error")  # the same registration again says nothing
    register_env_family({{"colbench-test/Late-v0": ("helpers_env:GuessEnv",
                                                   {{"num_tasks": 2}})}}, name="again")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")  # another one keeps the first, with a warning
    register_env_family({{"colbench-test/Late-v0": ("helpers_env:GuessEnv",
                                                   {{"num_tasks": 9}})}}, name="other")
import gymnasium
made = {{}}
for env_id in ("{suite}", "{plugin}", "colbench-test/Late-v0"):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        env = gymnasium.make(env_id)
    made[env_id] = type(env.unwrapped).__name__
    if env_id == "colbench-test/Late-v0":
        made["late_tasks"] = len(env.unwrapped.tasks)
    env.close()
print(json.dumps({{"gym_before": gym_before, "made": made,
                  "family_kwargs": repr(gymnasium.spec("{family}").kwargs),
                  "late_kwargs": gymnasium.spec("colbench-test/Late-v0").kwargs,
                  "warned": [str(w.message) for w in caught],
                  "hooks_left": [type(f).__name__ for f in sys.meta_path
                                 if "Gymnasium" in type(f).__name__]}}))
"""


@pytest.mark.parametrize("gymnasium_first", [False, True])
def test_gymnasium_makes_colbench_ids_whichever_is_imported_first(cli_environ,
                                                                  gymnasium_first):
    code = _BOTH_ORDERS.format(gymnasium_first="import gymnasium" if gymnasium_first else "",
                               suite=SUITE_ID, family=FAMILY_ID, plugin=ENV_ID)
    result = _run(code, cli_environ)
    assert result["gym_before"] is gymnasium_first
    assert result["made"] == {SUITE_ID: "BackendV1Env", ENV_ID: "GuessEnv",
                              "colbench-test/Late-v0": "GuessEnv", "late_tasks": 2}
    assert result["family_kwargs"] == "{'levels': ('GoToObj',)}"
    assert result["late_kwargs"] == {"num_tasks": 2}
    assert len(result["warned"]) == 1 and "already registered" in result["warned"][0]
    assert result["hooks_left"] == []  # the import hook leaves once Gymnasium is in


def test_gymnasium_alone_makes_an_id_through_the_module_prefix(cli_environ):
    # Gymnasium's own way to load a package that registers ids: "module:env_id".
    code = ("import json, sys, warnings, gymnasium\n"
            "assert 'colbench' not in sys.modules\n"
            f"env = gymnasium.make('colbench:{SUITE_ID}')\n"
            "print(json.dumps({'made': type(env.unwrapped).__name__}))\n")
    assert _run(code, cli_environ) == {"made": "BackendV1Env"}
