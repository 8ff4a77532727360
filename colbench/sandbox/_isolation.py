"""The isolation a pool gives, said in one line: what is in force, what is missing, the level.

A worker's isolation report (``Sandbox.isolation``) holds every detail; a run needs less: one
line at its start, one record in ``summary.json`` and a yes or no for
``--require-isolation full``. :func:`describe_isolation` makes that record from a report, so
that the runner, which learns it from an env's facts, never needs a pool of its own.

Levels:

* ``full``: nothing below is missing;
* ``partial``: the code runs in a private filesystem view without network, but something else
  is missing (per-job memory and process limits where cgroups are not delegated, the seccomp
  filter, a PID namespace, a uid of its own);
* ``none``: no private view or no empty network: the caller accepted the risk
  (``unsafe_no_isolation``), since the pool refuses to start otherwise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from colbench.errors import ConfigError, EnvironmentFailure

#: What ``--require-isolation`` accepts, weakest first.
ISOLATION_LEVELS = ("none", "partial", "full")


def describe_isolation(report: Mapping[str, Any]) -> dict[str, Any]:
    """The record of a pool's isolation for results: ``level`` (see the module docstring),
    ``mode`` (``root``, ``user-namespace`` or ``none``), ``in_force`` and ``missing`` (one
    phrase each; a missing one says what the code can therefore do).

    Parameters
    ----------
    report:
        A worker's isolation report, as :attr:`colbench.sandbox.Sandbox.isolation` gives it.
    """
    in_force: list[str] = []
    missing: list[str] = []

    def check(present: bool, what: str, absent: str) -> None:
        (in_force if present else missing).append(what if present else absent)

    check(bool(report.get("uid_drop") or report.get("user_namespace")),
          "own uid" if report.get("uid_drop") else "user namespace, no capabilities",
          "no uid of its own: the code runs as " + ("root" if report.get("root") else
                                                    "this user"))
    check(bool(report.get("private_root")), "private read-only filesystem view",
          "no private filesystem view: the code can read every file this user can")
    check(bool(report.get("network_namespace")), "no network",
          "no network namespace: the code can open network connections")
    check(bool(report.get("pid_namespace")), "own PID namespace",
          "no PID namespace: the code can tell which other processes exist")
    cgroup = report.get("cgroup")
    reason = report.get("cgroup_missing") or "the machine gives no cgroups"
    check(bool(cgroup),
          f"per-job memory and process limits (cgroup v{cgroup['version']})" if cgroup else "",
          f"no per-job memory or process limit: {reason}; memory is limited per process "
          "only, so a job of several processes can hold that much in each")
    check(bool(report.get("seccomp")), "seccomp filter",
          "no seccomp filter: the code can create namespaces and reach kernel facilities "
          "such as bpf, keyctl and io_uring")
    in_force.append("per-process rlimits")
    if not (report.get("private_root") and report.get("network_namespace")):
        level = "none"
    else:
        level = "partial" if missing else "full"
    return {"level": level, "mode": str(report.get("mode", "none")), "in_force": in_force,
            "missing": missing}


def isolation_line(isolation: Mapping[str, Any] | None, env_id: str = "") -> str:
    """One line for the start of a run: the level and mode, what is in force, what is
    missing. ``isolation`` None: the env runs none of the agent's code in the sandbox.

    Parameters
    ----------
    isolation:
        A record made by :func:`describe_isolation`, or None.
    env_id:
        The env the run plays, named where it reports no sandbox.
    """
    if isolation is None:
        return f"sandbox isolation: not used ({env_id or 'this env'} runs no code of the " \
               "agent's in colbench's sandbox)"
    line = (f"sandbox isolation: {isolation.get('level')} ({isolation.get('mode')} mode: "
            f"{', '.join(isolation.get('in_force', []))})")
    missing = isolation.get("missing") or []
    return line + ("; missing: " + "; ".join(missing) if missing else "")


def check_isolation(isolation: Mapping[str, Any] | None, required: str | None) -> None:
    """Raise :class:`~colbench.errors.EnvironmentFailure`, saying what is missing, when the
    sandbox's isolation is below ``required`` (one of :data:`ISOLATION_LEVELS`; None
    requires nothing). An env that runs no code in the sandbox (``isolation`` None) has
    nothing to isolate and passes.

    Parameters
    ----------
    isolation:
        A record made by :func:`describe_isolation`, or None.
    required:
        The weakest level accepted, or None.
    """
    if required is None or isolation is None:
        return
    if required not in ISOLATION_LEVELS:
        raise ConfigError(f"--require-isolation must be one of {', '.join(ISOLATION_LEVELS)}, "
                          f"got {required!r}")
    level = isolation.get("level")
    if level in ISOLATION_LEVELS and \
            ISOLATION_LEVELS.index(level) >= ISOLATION_LEVELS.index(required):
        return
    missing = "; ".join(isolation.get("missing") or []) or "unknown"
    raise EnvironmentFailure(
        f"--require-isolation {required}: the code sandbox gives {level} isolation here "
        f"({isolation.get('mode')} mode), missing: {missing}. Per-job limits need cgroups "
        "this user may write: run as root, or where the machine delegates cgroups to this "
        "user; or leave out --require-isolation to run with what this machine gives.")
