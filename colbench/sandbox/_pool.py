"""The sandbox's public face in the evaluator: :class:`Sandbox`, a pool of warm workers.

The pool's parts live beside it: ``_config`` (what workers are told at start),
``_worker_handle`` (the evaluator's handle on one worker process), ``_slots`` (which worker
is free, who waits), ``_job`` (one job's conversation with its child) and ``_verdict`` (the
job's events turned into a verdict). ``_shared`` holds the process-wide pool.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Sequence
from typing import Any

from colbench.errors import ConfigError, EnvironmentFailure
from colbench.sandbox._config import env_flag, worker_config
from colbench.sandbox._job import WorkerLost
from colbench.sandbox._slots import WorkerSlots
from colbench.sandbox._types import CallResult, SandboxLimits, Verdict
from colbench.sandbox._verdict import assemble_verdict
from colbench.sandbox._worker_handle import WorkerHandle

UNSAFE_ENV = "COLBENCH_UNSAFE_NO_ISOLATION"


def missing_isolation(report: dict[str, Any]) -> list[str]:
    """What untrusted code would be able to do, given a worker's isolation report: one
    phrase per missing guarantee that the pool will not run code without."""
    missing = []
    if not report.get("private_root"):
        missing.append("no private filesystem view: the code could read every file this user "
                       "can (earlier runs' records, the task cache with hidden tests)")
    if not report.get("network_namespace"):
        missing.append("no network namespace: the code could open network connections")
    return missing


def refuse_without_isolation(report: dict[str, Any]) -> None:
    """Raise EnvironmentFailure, saying what is missing and how to proceed, when the
    workers could not isolate the code (see :func:`missing_isolation`)."""
    missing = missing_isolation(report)
    if not missing:
        return
    notes = "; ".join(report.get("notes", []))
    raise EnvironmentFailure(
        "the sandbox refuses to run untrusted code on this machine: " + "; ".join(missing) +
        f". What the workers found: {notes or 'nothing more'}. To fix it, run as root, or "
        "allow unprivileged user namespaces (Debian 12 and most distributions allow them; "
        "see the sysctls kernel.unprivileged_userns_clone and user.max_user_namespaces, and "
        "AppArmor's kernel.apparmor_restrict_unprivileged_userns). To run the code anyway, "
        f"accepting that it can read your files and use the network, pass "
        f"Sandbox(unsafe_no_isolation=True) or set {UNSAFE_ENV}=1.")


class Sandbox:
    """A pool of warm sandbox workers that run untrusted Python modules and calls.

    ``Sandbox(workers=2, limits=SandboxLimits(...))`` starts the workers (each a Python that
    has already imported what the code usually needs); :meth:`run_calls` runs one job on a
    free worker, from any thread. Each job runs in a process forked from a worker, limited as
    :class:`SandboxLimits` says, isolated as :attr:`isolation` reports, and killed with all it
    started when the job ends. The worker forks the next job's process ahead of time and hands
    its pipes to the calling thread, which writes the job into it and reads the results
    straight back (see ``_job``); the worker's clean-up runs while the caller goes on. On a
    quiet two-core machine a ten-call job costs about 1.4 ms against 0.33 ms for running the
    same code in the caller's own process (``benchmarks/bench_sandbox.py``).

    ``hidden_paths`` adds paths the code must not see even where the filesystem view would
    show them (the colbench package and a source checkout are always hidden); the
    environment variable ``COLBENCH_SANDBOX_HIDE`` (``os.pathsep``-separated) adds more.
    By default the sandbox takes all the isolation it can get (:attr:`isolation` says which
    ``mode``): as root, a uid of its own per worker, namespaces and a private view; without
    root, the same view and namespaces from a user namespace (``user_namespace=True`` asks
    for that mode as root too; ``False``, or ``COLBENCH_SANDBOX_USERNS=0``, forbids it).
    Memory and processes are limited per job with cgroups where the machine delegates them
    (``cgroups=False`` or ``COLBENCH_SANDBOX_CGROUPS=0`` turns that off), and a seccomp
    filter closes what the code never needs. ``privileged=False`` explicitly asks for no
    isolation but the rlimits (no uid drop, no filesystem view), for debugging.

    Where neither root nor a user namespace gives a private view and an empty network, the
    pool refuses to start (:class:`colbench.errors.EnvironmentFailure`, naming what is
    missing), unless the caller accepts the risk with ``unsafe_no_isolation=True`` or
    ``COLBENCH_UNSAFE_NO_ISOLATION=1``: the code could then read this user's files (earlier
    runs, the task cache) and open network connections.

    Raises :class:`colbench.errors.EnvironmentFailure` when no worker can be started.
    """

    def __init__(self, workers: int = 2, limits: SandboxLimits | None = None, *,
                 hidden_paths: Sequence[str | os.PathLike[str]] = (),
                 preload: Sequence[str] | None = None,
                 privileged: bool | None = None,
                 user_namespace: bool | None = None,
                 cgroups: bool | None = None,
                 unsafe_no_isolation: bool = False) -> None:
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
            raise ConfigError(f"Sandbox(workers=...) must be a positive int, got {workers!r}")
        limits = SandboxLimits() if limits is None else limits
        if not isinstance(limits, SandboxLimits):
            raise ConfigError(f"Sandbox(limits=...) must be a SandboxLimits, got {limits!r}")
        self.limits = limits
        self.workers = workers
        for name, flag in (("privileged", privileged), ("user_namespace", user_namespace),
                           ("cgroups", cgroups)):
            if flag is not None and not isinstance(flag, bool):
                raise ConfigError(f"Sandbox({name}=...) must be True, False or None, got "
                                  f"{flag!r}")
        if not isinstance(unsafe_no_isolation, bool):
            raise ConfigError("Sandbox(unsafe_no_isolation=...) must be True or False, got "
                              f"{unsafe_no_isolation!r}")
        unsafe = unsafe_no_isolation or env_flag(UNSAFE_ENV) is True
        self._config = worker_config(limits, hidden_paths, preload, privileged,
                                     user_namespace, cgroups)
        self._pid = os.getpid()
        started = [WorkerHandle(self._config) for _ in range(workers)]
        try:
            for worker in started:
                worker.handshake()
            if privileged is not False and not unsafe:
                refuse_without_isolation(started[0].report)
        except EnvironmentFailure:
            for worker in started:
                worker.kill()
            raise
        self._report: dict[str, Any] = started[0].report
        # A partial, not a bound method: the slots must not keep the Sandbox alive, so that
        # a pool dropped without close() still stops its workers when it is collected.
        self._slots = WorkerSlots(started, functools.partial(WorkerHandle.start, self._config))

    # -- public --------------------------------------------------------------------------
    @property
    def isolation(self) -> dict[str, Any]:
        """Which isolation the workers could apply. Keys: ``mode`` (``root``,
        ``user-namespace`` or ``none``), ``network_namespace``, ``uid_drop``,
        ``mount_namespace``, ``private_root`` (the read-only filesystem view),
        ``ipc_namespace``, ``user_namespace``, ``pid_namespace``, ``root``, ``rlimits``
        (names of the limits in force), ``cgroup`` (the per-job limits: ``None`` where the
        machine gives no cgroups, else their version and what they limit), ``seccomp`` and
        ``seccomp_denied`` (the system calls the filter refuses), ``uids`` (one per live
        worker) and ``notes``: one sentence per missing piece, saying what the code can
        therefore do."""
        report = dict(self._report or {})
        report.pop("pid", None)
        report.pop("uid", None)
        report["uids"] = sorted(w.report.get("uid") for w in self._slots.live()
                                if w.report.get("uid") is not None)
        report["notes"] = list(report.get("notes", []))
        return report

    def run_calls(self, code: str, calls: Sequence[str], *,
                  blocklist: Sequence[str] | None = None) -> Verdict:
        """Run ``code`` as a module and evaluate each of ``calls`` in its namespace.

        A call that fails (an exception, a limit, a crash) fails alone: the remaining calls
        run in a fresh process. ``blocklist``: substrings that reject the code before it runs
        (status ``blocked``, naming the first entry of the list that occurs).
        """
        if os.getpid() != self._pid:
            raise EnvironmentFailure("this Sandbox belongs to the process that created it; a "
                                     "forked process must create its own (get_sandbox() does)")
        if not isinstance(code, str):
            raise ConfigError(f"run_calls: code must be a str, got {type(code).__name__}")
        if isinstance(calls, str) or not all(isinstance(c, str) for c in calls):
            raise ConfigError("run_calls: calls must be a list of str expressions")
        calls = list(calls)
        if blocklist is not None:
            if isinstance(blocklist, str) or not all(isinstance(b, str) for b in blocklist):
                raise ConfigError("run_calls: blocklist must be a list of str")
            for entry in blocklist:
                if entry and entry in code:
                    return Verdict("blocked", f"the code contains {entry!r}, which the "
                                   "blocklist rejects; nothing ran",
                                   [CallResult(False, None, f"blocked: {entry!r}")
                                    for _ in calls])
        started = time.monotonic()
        payload = json.dumps({"code": code, "calls": calls}).encode()  # ASCII: escapes
        # Generous: every call may time out, and each needs a fresh process.
        budget = (len(calls) + 1) * (self.limits.wall_seconds + 2.0) + 30.0
        lost = ""
        for _ in range(2):  # a worker lost mid-job gets one more try on a fresh one
            worker = self._slots.acquire()
            try:
                frames = worker.run(payload, len(calls), budget)
            except WorkerLost as exc:
                self._slots.discard(worker)
                lost = str(exc)
                continue
            except BaseException:
                self._slots.discard(worker)
                raise
            self._slots.release(worker)
            verdict = assemble_verdict(frames, calls, self.limits)
            verdict.elapsed_seconds = time.monotonic() - started
            return verdict
        return self._crashed(calls, f"the sandbox worker died twice while running this code "
                                    f"({lost}); the code may have killed it", started)

    def close(self) -> None:
        """Stop every worker. Jobs in flight end with EnvironmentFailure."""
        if os.getpid() != self._pid:
            return  # a forked copy: the workers belong to the parent process
        self._slots.close()

    @property
    def closed(self) -> bool:
        return self._slots.closed

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._slots.closed:
                self.close()
        except Exception:
            pass

    @staticmethod
    def _crashed(calls: list[str], message: str, started: float) -> Verdict:
        return Verdict("crashed", message,
                       [CallResult(False, None, "crashed: the sandbox worker died")
                        for _ in calls], elapsed_seconds=time.monotonic() - started)
