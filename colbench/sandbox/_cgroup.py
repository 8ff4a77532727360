"""Per-job resource control with cgroups, inside the worker (standard library only).

rlimits count per process: a job of 16 processes could hold 16 times ``memory_bytes``. A
cgroup counts the job as one: every job's child joins a cgroup of its own before the code
runs, and everything it forks stays there. Each job's cgroup gets

* a memory limit for all its processes together, swap included (so it cannot page out
  past the limit), and on the cgroup v2 interface ``memory.oom.group``: at the limit the
  kernel kills the whole job, not one process of it;
* a process limit for the whole job (``pids.max``), root or not;
* its CPU time accounted (``cpu.stat`` or ``cpuacct.usage``), whatever forked;
* a kill of the whole cgroup at the job's end (``cgroup.kill``) before it is removed.

cgroup v2 comes first: the worker needs its own cgroup to offer the ``memory`` and ``pids``
controllers and to let it enable them below (root, or a subtree delegated by systemd). On a
machine that mounts the v1 controllers instead (hybrid hosts, many containers), the worker
uses v1's ``memory`` and ``pids`` hierarchies, where a notification on the memory cgroup's
out-of-memory event makes the worker kill the whole job (v1 has no ``oom.group``).

The worker opens its parent directories before it pivots into its private filesystem view
(which has no ``/sys``) and works relative to those descriptors from then on. Where neither
interface can be used, :func:`setup` says why and the worker reports it: the limits are then
per process, as before.
"""

from __future__ import annotations

import errno
import os
import signal
import time
from typing import Any

PARENT_PREFIX = "colbench-sandbox-"


# ------------------------------------------------------------------------- discovery

def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(mount root, mount point, fstype, super options) of every cgroup mount."""
    found = []
    try:
        with open("/proc/self/mountinfo") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return found
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
            continue
        point = fields[4].replace("\\040", " ")
        found.append((fields[3], point, tail[0], set(tail[2].split(","))))
    return found


def _own_cgroups() -> dict[str, str]:
    """Controller (``""`` for the v2 hierarchy) -> this process's cgroup path."""
    paths: dict[str, str] = {}
    try:
        with open("/proc/self/cgroup") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return paths
    for line in lines:
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        for controller in parts[1].split(",") if parts[1] else [""]:
            paths[controller] = parts[2]
    return paths


def _join(root: str, point: str, path: str) -> str | None:
    """The directory of cgroup ``path`` under a mount of hierarchy root ``root``."""
    if root != "/" and not (path == root or path.startswith(root.rstrip("/") + "/")):
        return None  # our cgroup lies outside what this mount shows
    relative = path[len(root):] if root != "/" else path
    return os.path.join(point, relative.lstrip("/")).rstrip("/") or "/"


def _read(dir_fd: int, name: str) -> str:
    fd = os.open(name, os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        return os.read(fd, 1 << 16).decode()
    finally:
        os.close(fd)


def _write(dir_fd: int, name: str, value: str) -> None:
    fd = os.open(name, os.O_WRONLY | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _exists(dir_fd: int, name: str) -> bool:
    try:
        os.stat(name, dir_fd=dir_fd)
        return True
    except OSError:
        return False


def _open_dir(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _make_parent(base: str, made: list[tuple[int, str]]) -> int:
    """Create this worker's parent cgroup under ``base``; return its directory fd and add
    (fd of ``base``, name) to ``made``, which is how it is removed at the end (by then the
    worker's filesystem view no longer has ``base``). Parents that a killed worker left
    behind (no process alive under their name) are removed first."""
    try:
        for name in os.listdir(base):
            if name.startswith(PARENT_PREFIX) and name[len(PARENT_PREFIX):].isdigit() and \
                    not os.path.exists(f"/proc/{name[len(PARENT_PREFIX):]}"):
                _remove_tree(os.path.join(base, name))
    except OSError:
        pass
    name = f"{PARENT_PREFIX}{os.getpid()}"
    base_fd = _open_dir(base)
    try:
        os.mkdir(name, 0o755, dir_fd=base_fd)
    except BaseException:
        os.close(base_fd)
        raise
    made.append((base_fd, name))
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=base_fd)


def _remove_parents(made: list[tuple[int, str]]) -> None:
    for base_fd, name in made:
        try:
            os.rmdir(name, dir_fd=base_fd)
        except OSError:
            pass
        os.close(base_fd)
    made.clear()


def _remove_tree(path: str) -> None:
    for name in os.listdir(path):
        full = os.path.join(path, name)
        if os.path.isdir(full):
            _remove_tree(full)
    os.rmdir(path)


# ---------------------------------------------------------------------------- the cgroups

class JobCgroup:
    """The cgroup(s) of one job's child: one directory per hierarchy (v2: one)."""

    def __init__(self, owner: JobCgroups, name: str) -> None:
        self.owner = owner
        self.name = name
        #: Opened ``cgroup.procs`` files, one per hierarchy: the child writes "0" to each.
        self.join_fds: list[int] = []
        #: v1: an eventfd that becomes readable when the memory cgroup runs out of memory.
        self.oom_fd: int | None = None
        self.killed_for_memory = False

    def join(self) -> None:
        """In the child, first thing: move this process into the job's cgroup(s)."""
        for fd in self.join_fds:
            os.write(fd, b"0")
        self.close_fds()

    def close_fds(self) -> None:
        for fd in self.join_fds:
            os.close(fd)
        self.join_fds = []

    def pids(self) -> list[int]:
        text = _read(self.owner.dir_fds[0], f"{self.name}/cgroup.procs")
        return [int(pid) for pid in text.split()]

    def kill(self) -> None:
        """Kill every process of the job. v2: one write; v1: until none is left (the
        process limit bounds how many a fork loop can make meanwhile)."""
        if self.owner.version == 2 and self.owner.has_kill:
            try:
                _write(self.owner.dir_fds[0], f"{self.name}/cgroup.kill", "1")
                return
            except OSError:
                pass
        for _ in range(100):
            try:
                pids = self.pids()
            except OSError:
                return
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.001)

    def out_of_memory(self) -> bool:
        """Whether the kernel found the job at its memory limit with nothing to reclaim."""
        if self.killed_for_memory:
            return True
        try:
            if self.owner.version == 2:
                events = _read(self.owner.dir_fds[0], f"{self.name}/memory.events")
            else:
                events = _read(self.owner.dir_fds[0], f"{self.name}/memory.oom_control")
        except OSError:
            return False
        for line in events.splitlines():
            key, _, value = line.partition(" ")
            if key in ("oom_kill", "oom_group_kill") and value.strip() not in ("", "0"):
                return True
        return False

    def cpu_seconds(self) -> float | None:
        """CPU time of every process the job ran (None where not accounted)."""
        try:
            if self.owner.version == 2:
                for line in _read(self.owner.dir_fds[0], f"{self.name}/cpu.stat").splitlines():
                    if line.startswith("usage_usec "):
                        return int(line.split()[1]) / 1e6
                return None
            if self.owner.cpuacct_fd is None:
                return None
            return int(_read(self.owner.cpuacct_fd, f"{self.name}/cpuacct.usage")) / 1e9
        except (OSError, ValueError):
            return None

    def remove(self) -> bool:
        """Remove the job's directories (its processes must be reaped). False if some
        could not be removed yet."""
        if self.oom_fd is not None:
            os.close(self.oom_fd)
            self.oom_fd = None
        self.close_fds()
        done = True
        for dir_fd in self.owner.all_fds():
            try:
                os.rmdir(self.name, dir_fd=dir_fd)
            except FileNotFoundError:
                pass
            except OSError:
                done = False
        return done


class JobCgroups:
    """A worker's parent cgroup(s) and the per-job cgroups it makes below them.

    ``dir_fds``: the parent directory per hierarchy that must work (v2: one; v1: memory,
    then pids); ``cpuacct_fd``: v1's CPU accounting parent, where there is one.
    """

    def __init__(self, version: int, dir_fds: list[int], limits: dict[str, Any],
                 parents: list[tuple[int, str]], cpuacct_fd: int | None = None) -> None:
        self.version = version
        self.parents = parents
        self.dir_fds = dir_fds
        self.cpuacct_fd = cpuacct_fd
        self.memory = int(limits["memory_bytes"])
        self.processes = int(limits["max_processes"])
        self.has_kill = version == 2 and _exists(dir_fds[0], "cgroup.kill")
        self.count = 0
        self.stale: list[JobCgroup] = []  # could not be removed yet: retried later

    def all_fds(self) -> list[int]:
        return self.dir_fds + ([self.cpuacct_fd] if self.cpuacct_fd is not None else [])

    def describe(self) -> dict[str, Any]:
        return {"version": self.version, "memory_bytes": self.memory,
                "max_processes": self.processes, "oom_kills_whole_job": True,
                "cpu_accounted": self.version == 2 or self.cpuacct_fd is not None}

    def create(self) -> JobCgroup:
        """A fresh cgroup for the next child, limits set, ready to join."""
        self.stale = [job for job in self.stale if not job.remove()]
        self.count += 1
        job = JobCgroup(self, f"job-{self.count}")
        try:
            for dir_fd in self.all_fds():
                os.mkdir(job.name, 0o755, dir_fd=dir_fd)
            if self.version == 2:
                self._limit_v2(job)
            else:
                self._limit_v1(job)
            for dir_fd in self.all_fds():
                job.join_fds.append(os.open(f"{job.name}/cgroup.procs",
                                            os.O_WRONLY | os.O_CLOEXEC, dir_fd=dir_fd))
        except BaseException:
            job.remove()
            raise
        return job

    def _limit_v2(self, job: JobCgroup) -> None:
        fd = self.dir_fds[0]
        _write(fd, f"{job.name}/memory.max", str(self.memory))
        for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
            if _exists(fd, f"{job.name}/{name}"):
                _write(fd, f"{job.name}/{name}", value)
        _write(fd, f"{job.name}/pids.max", str(self.processes))

    def _limit_v1(self, job: JobCgroup) -> None:
        memory_fd, pids_fd = self.dir_fds
        _write(memory_fd, f"{job.name}/memory.limit_in_bytes", str(self.memory))
        if _exists(memory_fd, f"{job.name}/memory.memsw.limit_in_bytes"):
            _write(memory_fd, f"{job.name}/memory.memsw.limit_in_bytes", str(self.memory))
        _write(pids_fd, f"{job.name}/pids.max", str(self.processes))
        control = os.open(f"{job.name}/memory.oom_control", os.O_RDONLY | os.O_CLOEXEC,
                          dir_fd=memory_fd)
        try:
            event = os.eventfd(0, os.EFD_CLOEXEC | os.EFD_NONBLOCK)
            try:
                _write(memory_fd, f"{job.name}/cgroup.event_control", f"{event} {control}")
            except BaseException:
                os.close(event)
                raise
            job.oom_fd = event
        finally:
            os.close(control)

    def close(self) -> None:
        """Remove what is left, then the parents themselves (at the worker's exit)."""
        for job in self.stale:
            job.kill()
            job.remove()
        self.stale = []
        for dir_fd in self.all_fds():
            try:
                for name in os.listdir(dir_fd):
                    if name.startswith("job-"):
                        os.rmdir(name, dir_fd=dir_fd)
            except OSError:
                pass
            os.close(dir_fd)
        self.dir_fds, self.cpuacct_fd = [], None
        _remove_parents(self.parents)


# ------------------------------------------------------------------------------- setup

def setup(limits: dict[str, Any]) -> tuple[JobCgroups | None, str]:
    """This worker's per-job cgroups, or None and the reason there are none. Must run
    before the worker leaves the real filesystem."""
    mounts = _mounts()
    own = _own_cgroups()
    reasons = []
    v2_mounts = [m for m in mounts if m[2] == "cgroup2"]
    if v2_mounts and "" in own:
        root, point, _, _ = v2_mounts[0]
        base = _join(root, point, own[""])
        try:
            if base is None:
                raise OSError(errno.ENOENT, "this process's cgroup is not under the mount")
            return _setup_v2(base, limits), ""
        except OSError as exc:
            reasons.append(f"cgroup v2 at {point}: {exc.strerror or exc}")
    else:
        reasons.append("no cgroup v2 hierarchy is mounted")
    v1 = {}
    for controller in ("memory", "pids", "cpuacct"):
        for root, point, fstype, options in mounts:
            if fstype == "cgroup" and controller in options and controller in own:
                v1[controller] = _join(root, point, own[controller])
                break
    if v1.get("memory") and v1.get("pids"):
        made: list[tuple[int, str]] = []
        opened: list[int] = []
        try:
            opened.append(_make_parent(v1["memory"], made))
            opened.append(_make_parent(v1["pids"], made))
            cpuacct = None
            if v1.get("cpuacct") and v1["cpuacct"] != v1["memory"]:
                try:
                    cpuacct = _make_parent(v1["cpuacct"], made)
                except OSError:
                    cpuacct = None
            groups = JobCgroups(1, opened, limits, made, cpuacct)
            probe = groups.create()  # one real job cgroup: every file it needs works
            probe.remove()
            return groups, ""
        except OSError as exc:
            for fd in opened:
                os.close(fd)
            _remove_parents(made)
            reasons.append(f"cgroup v1 memory and pids: {exc.strerror or exc}")
    else:
        reasons.append("no cgroup v1 memory and pids hierarchies")
    return None, "; ".join(reasons)


def _setup_v2(base: str, limits: dict[str, Any]) -> JobCgroups:
    base_fd = _open_dir(base)
    try:
        available = _read(base_fd, "cgroup.controllers").split()
        missing = [c for c in ("memory", "pids") if c not in available]
        if missing:
            raise OSError(errno.ENOTSUP, f"the controllers {', '.join(missing)} are not "
                                         f"available to this cgroup ({base})")
        enabled = _read(base_fd, "cgroup.subtree_control").split()
        if not {"memory", "pids"} <= set(enabled):
            # Refused (EBUSY) where our own cgroup holds processes and is not the root:
            # only a delegated, empty parent can hand controllers down.
            _write(base_fd, "cgroup.subtree_control", "+memory +pids")
    finally:
        os.close(base_fd)
    made: list[tuple[int, str]] = []
    parent = _make_parent(base, made)
    try:
        _write(parent, "cgroup.subtree_control", "+memory +pids")
        groups = JobCgroups(2, [parent], limits, made)
        probe = groups.create()
        probe.remove()
    except OSError:
        os.close(parent)
        _remove_parents(made)
        raise
    return groups
