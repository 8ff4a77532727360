"""What every worker of a pool is told at start: limits, hidden paths, uids, privileges.

The configuration travels once, as JSON on the worker's stdin (see ``_worker_handle``);
everything in it is fixed for the pool's lifetime.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from colbench.errors import ConfigError
from colbench.sandbox._types import SandboxLimits

DEFAULT_UID_BASE = 420_000
UID_COUNT = 4096


def default_hidden_paths() -> list[str]:
    """What the code must never see even where the filesystem view binds its parent: the
    colbench package (task data ships inside it) or, for a source checkout, the checkout."""
    package = Path(__file__).resolve().parent.parent
    paths = [str(package)]
    checkout = package.parent
    if (checkout / "pyproject.toml").exists() or (checkout / ".git").exists():
        paths.append(str(checkout))
    # COLBENCH_CACHE is where colbench.taskcache keeps task sets (hidden tests among them).
    for name in ("COLBENCH_CACHE", "COLBENCH_HOME", "COLBENCH_CACHE_DIR"):
        if os.environ.get(name):
            paths.append(os.path.expanduser(os.environ[name]))
    return paths


def env_flag(name: str) -> bool | None:
    """A yes/no environment variable: None when unset or empty; a clear error otherwise."""
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return None
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be 1 or 0 (true/false, yes/no, on/off), got {raw!r}")


def worker_config(limits: SandboxLimits, hidden_paths: Sequence[str | os.PathLike[str]],
                  preload: Sequence[str] | None, privileged: bool | None,
                  user_namespace: bool | None = None, cgroups: bool | None = None) -> bytes:
    """The JSON a pool's workers read at start. ``hidden_paths`` come on top of
    :func:`default_hidden_paths` and ``COLBENCH_SANDBOX_HIDE`` (``os.pathsep``-separated);
    ``privileged=None`` means: take all the isolation the machine allows.
    ``user_namespace`` and ``cgroups`` (None: use them where possible) fall back on
    ``COLBENCH_SANDBOX_USERNS`` and ``COLBENCH_SANDBOX_CGROUPS``."""
    if user_namespace is None:
        user_namespace = env_flag("COLBENCH_SANDBOX_USERNS")
    if cgroups is None:
        cgroups = env_flag("COLBENCH_SANDBOX_CGROUPS")
    hide = default_hidden_paths() + [os.fspath(p) for p in hidden_paths]
    hide += [p for p in os.environ.get("COLBENCH_SANDBOX_HIDE", "").split(os.pathsep) if p]
    config: dict[str, Any] = {
        "limits": {
            "cpu_seconds": limits.cpu_seconds, "wall_seconds": limits.wall_seconds,
            "memory_bytes": int(limits.memory_bytes),
            "max_processes": int(limits.max_processes),
            "output_bytes": int(limits.output_bytes), "file_bytes": int(limits.file_bytes),
            "open_files": int(limits.open_files), "result_bytes": int(limits.result_bytes),
            "value_digits": limits.value_digits, "value_items": limits.value_items,
        },
        "tmp_bytes": int(limits.file_bytes),
        "hidden_paths": hide,
        "uid_base": int(os.environ.get("COLBENCH_SANDBOX_UID_BASE", DEFAULT_UID_BASE)),
        "uid_count": UID_COUNT,
        "privileged": privileged is not False,
        "user_namespace": user_namespace,
        "cgroups": cgroups is not False,
    }
    if preload is not None:
        config["preload"] = list(preload)
    return json.dumps(config).encode()
