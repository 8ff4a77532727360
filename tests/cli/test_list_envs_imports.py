"""``colbench list envs`` read from its cache imports no gym, no model library and no other
command's module: what keeps it fast after install (issue 26; the time itself is measured by
benchmarks/bench_list_envs.py)."""

from __future__ import annotations

import json
import subprocess
import sys

#: Top-level packages the cached listing must not import (heavy, or a gym's; Gymnasium,
#: NumPy and pydantic come with the env base class and the tasks, which listing needs not;
#: argcomplete only serves the shell's completion hook).
HEAVY = ("torch", "transformers", "trl", "datasets", "minigrid", "playwright", "bm25s",
         "scienceworld", "textworld", "gymnasium", "numpy", "pydantic", "argcomplete")
#: colbench modules that belong to other commands, to the gyms themselves, or to making envs.
OTHERS = ("colbench.runner", "colbench.models", "colbench.rundir", "colbench.trainers",
          "colbench.leaderboard", "colbench.cli.evaluate_cmd", "colbench.gyms.embodied.babyai.env",
          "colbench.gyms.backend", "colbench.gyms.frontend", "colbench.gyms.search",
          "colbench.env", "colbench.tasks")

_SCRIPT = """
import contextlib, io, json, sys
from colbench.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    status = main(["list", "envs", "--no-counts"])
print(json.dumps({"status": status, "out": out.getvalue(), "modules": sorted(sys.modules)}))
"""


def test_the_cached_listing_imports_no_gym_model_library_or_other_command(cli_environ,
                                                                           tmp_path):
    env = dict(cli_environ, COLBENCH_CACHE=str(tmp_path / "cache"))
    cache = tmp_path / "cache" / "list-envs.json"
    for _attempt in range(3):
        filled = subprocess.run([sys.executable, "-m", "colbench.cli.main", "list", "envs",
                                 "--no-counts"], capture_output=True, text=True, env=env,
                                timeout=600)
        assert filled.returncode == 0, filled.stderr
        written = cache.read_text()
        second = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True,
                                text=True, env=env, timeout=120)
        assert second.returncode == 0, second.stderr
        # A source file edited in between (a shared checkout) makes the cache stale, and the
        # second listing rightly gathers afresh: try again then.
        if cache.read_text() == written:
            break
    else:
        raise AssertionError("the second listing never read the cache it was given")
    result = json.loads(second.stdout)
    assert result["status"] == 0
    assert "colbench/Backend-v0" in result["out"] and "colbench/BabyAI-*" in result["out"]
    modules = result["modules"]
    heavy = [name for name in modules if name.split(".")[0] in HEAVY]
    others = [name for name in modules
              if any(name == other or name.startswith(other + ".") for other in OTHERS)]
    assert not heavy, heavy
    assert not others, others
