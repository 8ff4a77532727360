"""Per-job resource control with cgroups, inside the worker (standard library only).

rlimits count per process: a job of 16 processes could hold 16 times ``memory_bytes``. A
cgroup counts the job as one: every job's child joins a cgroup of its own before the code
runs, and everything it forks stays there. Each job's cgroup gets

* a memory limit for all its processes together, swap included (so it cannot page out
  past the limit), and on the cgroup v2 interface ``memory.oom.group``: at the limit the
  kernel kills the whole job, not one process of it;
* a process limit for the whole job (``pids.max``), root or not;
* its CPU time accounted (``cpu.stat`` or ``cpuacct.usage``), whatever forked;
* a kill of the whole cgroup at the job's end (``cgroup.kill``).

A worker keeps one job cgroup and hands it to job after job: making and removing one per job
(on v1 a directory in each of three hierarchies) cost a job more CPU than all the rest of
its cgroup handling. Before a cgroup is handed on, :meth:`JobCgroups.reset` makes sure that
nothing of the last job is in it: no task, not even an unreaped one (``pids.current``); no
more than :data:`LEFTOVER_BYTES` still charged (beyond it the kernel is asked to reclaim the
old job's page cache); no unread out-of-memory alarm. The counters that only grow (CPU time,
out-of-memory kills) are read against the baseline taken then. A cgroup that fails any of
this is removed and the next job gets a fresh one, as before.

cgroup v2 comes first: the worker needs its own cgroup to offer the ``memory`` and ``pids``
controllers and to let it enable them below (root, or a subtree delegated by systemd). On a
machine that mounts the v1 controllers instead (hybrid hosts, many containers), the worker
uses v1's ``memory`` and ``pids`` hierarchies, where a notification on the memory cgroup's
out-of-memory event makes the worker kill the whole job (v1 has no ``oom.group``).

The worker opens its parent directories before it pivots into its private filesystem view
(which has no ``/sys``) and works relative to those descriptors from then on. Where neither
interface can be used, :func:`setup` says why and the worker reports it: the limits are then
per process, as before.

Tested against the kernel: the v1 path (this project's machines mount v1's memory and pids).
The v2 path's file handling (setup, the limits it writes, reuse, the baselines, removal) is
tested against a simulated ``cgroup2`` tree (tests/sandbox/test_cgroups.py); what only a real
v2 kernel shows (``cgroup.kill``, ``memory.oom.group``, ``memory.reclaim``, delegation) is not
tested until a machine with cgroup v2 runs those tests.
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


def oom_kill_count(text: str) -> int:
    """Processes killed for want of memory, from the text of a memory cgroup's
    ``memory.events`` (v2) or ``memory.oom_control`` (v1); 0 where the kernel does not count
    them. The evaluator reads the same file through a descriptor the worker hands it."""
    total = 0
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key in ("oom_kill", "oom_group_kill") and value.strip().isdigit():
            total += int(value)
    return total


def _open_dir(path: str) -> int:
    return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)


def _mkdir_cgroup(dir_fd: int, name: str) -> None:
    """Make a cgroup directory (the kernel fills it with its control files)."""
    os.mkdir(name, 0o755, dir_fd=dir_fd)


def _rmdir_cgroup(dir_fd: int, name: str) -> None:
    """Remove an empty cgroup directory (its control files go with it)."""
    os.rmdir(name, dir_fd=dir_fd)


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
        _mkdir_cgroup(base_fd, name)
    except BaseException:
        os.close(base_fd)
        raise
    made.append((base_fd, name))
    return os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=base_fd)


def _remove_parents(made: list[tuple[int, str]]) -> None:
    for base_fd, name in made:
        try:
            _rmdir_cgroup(base_fd, name)
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

def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


#: What a job cgroup may still have charged once its processes are gone and still be handed
#: to the next job as it is. An empty cgroup shows some: the kernel charges a cgroup ahead
#: in batches of 64 pages per CPU (which its next job's allocations use up first) and a few
#: of the old job's kernel objects (directory entries, inodes), which the kernel reclaims
#: when it needs to. Above this the cgroup's memory is reclaimed (the kernel drops the old
#: job's page cache), and what still stays above it has the cgroup removed and a fresh one
#: made: one job's memory never counts against the next beyond this margin. Reclaiming costs
#: more than the rest of a reset together, so it is not done below the margin.
LEFTOVER_BYTES = (1 << 20) + _cpus() * (256 << 10)


class JobCgroup:
    """The cgroup(s) of one job's child: one directory per hierarchy (v2: one).

    A worker reuses it job after job (see :meth:`JobCgroups.release`): its limits are
    written once, its files stay open, and what it counts is read against the baseline taken
    when it was last handed out, since the kernel's counters only grow.
    """

    def __init__(self, owner: JobCgroups, name: str) -> None:
        self.owner = owner
        self.name = name
        #: Opened ``cgroup.procs`` files, one per hierarchy: the child writes "0" to each.
        #: The worker keeps them for the next job; the child closes its copies.
        self.join_fds: list[int] = []
        #: v1: an eventfd that becomes readable when the memory cgroup runs out of memory.
        self.oom_fd: int | None = None
        self.killed_for_memory = False
        #: Whether :meth:`kill` saw the cgroup empty (then it need not be read again).
        self.emptied = False
        #: The counters as they stood when this job began (the cgroup's earlier jobs).
        self.oom_base = 0
        self.cpu_base = 0.0
        #: Files read after every job, kept open and read again from offset 0 (a cgroup
        #: file renders afresh there): a path lookup per read is most of a read's cost.
        self.read_fds: dict[tuple[int, str], int] = {}
        #: The out-of-memory counter file, opened once more for the evaluator: a copy goes
        #: with each job's ticket, so that the evaluator can see an OOM kill in the job
        #: before it accepts a result (see :meth:`oom_counter_fd`).
        self.counter_fd: int | None = None

    def read(self, dir_fd: int, file: str) -> str:
        """The current text of one of this cgroup's files in the hierarchy of ``dir_fd``
        (not ``cgroup.procs``, which v1 does not render afresh: see :meth:`pids`)."""
        fd = self.read_fds.get((dir_fd, file))
        if fd is None:
            fd = os.open(f"{self.name}/{file}", os.O_RDONLY | os.O_CLOEXEC, dir_fd=dir_fd)
            self.read_fds[dir_fd, file] = fd
        return os.pread(fd, 1 << 16, 0).decode()

    def join(self) -> None:
        """In the child, first thing: move this process into the job's cgroup(s), then
        close the child's copies of the files (the code never gets them)."""
        for fd in self.join_fds:
            os.write(fd, b"0")
        self.close_fds()

    def close_fds(self) -> None:
        for fd in self.join_fds:
            os.close(fd)
        self.join_fds = []

    def close_read_fds(self) -> None:
        for fd in self.read_fds.values():
            os.close(fd)
        self.read_fds = {}
        if self.counter_fd is not None:
            os.close(self.counter_fd)
            self.counter_fd = None

    def pids(self) -> list[int]:
        # Opened afresh each time: v1 serves a list of pids it made up to a second earlier
        # to a file descriptor that reads it again.
        text = _read(self.owner.dir_fds[0], f"{self.name}/cgroup.procs")
        return [int(pid) for pid in text.split()]

    def tasks(self) -> int:
        """How many tasks the job has: every thread of every process, until it is reaped."""
        return int(self.read(self.owner.dir_fds[-1], "pids.current"))  # v1: pids hierarchy

    def kill(self) -> bool:
        """Kill every process of the job. v2: one write; v1: until none is left (the
        process limit bounds how many a fork loop can make meanwhile). True when the
        cgroup was seen empty afterwards."""
        if self.owner.version == 2 and self.owner.has_kill:
            try:
                _write(self.owner.dir_fds[0], f"{self.name}/cgroup.kill", "1")
                return False  # the kernel kills asynchronously: not yet seen empty
            except OSError:
                pass
        for _ in range(100):
            try:
                # No task counted at all (the usual end: the child was reaped first) is
                # one read of an open file; otherwise the list of the processes to kill.
                pids = self.pids() if self.tasks() else []
            except (OSError, ValueError):
                return False
            if not pids:
                self.emptied = True
                return True
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.001)
        return False

    @property
    def oom_counter_file(self) -> str:
        return "memory.events" if self.owner.version == 2 else "memory.oom_control"

    def oom_kills(self) -> int:
        """How many processes the kernel has killed in this cgroup for want of memory, in
        all its jobs so far (0 where the kernel does not count them)."""
        return oom_kill_count(self.read(self.owner.dir_fds[0], self.oom_counter_file))

    def oom_counter_fd(self) -> int | None:
        """A descriptor of this cgroup's out-of-memory counter file for the evaluator (its
        own open file, not the one :meth:`oom_kills` reads), opened once; None where it
        cannot be opened. The child never holds it: it closes every inherited descriptor."""
        if self.counter_fd is None:
            try:
                self.counter_fd = os.open(f"{self.name}/{self.oom_counter_file}",
                                          os.O_RDONLY | os.O_CLOEXEC,
                                          dir_fd=self.owner.dir_fds[0])
            except OSError:
                return None
        return self.counter_fd

    def out_of_memory(self) -> bool:
        """Whether the kernel found this job at its memory limit with nothing to reclaim."""
        if self.killed_for_memory:
            return True
        try:
            return self.oom_kills() > self.oom_base
        except OSError:
            return False

    def cpu_total(self) -> float | None:
        """CPU seconds the cgroup has accounted in all its jobs (None where it cannot)."""
        if self.owner.version == 2:
            for line in self.read(self.owner.dir_fds[0], "cpu.stat").splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
            return None
        if self.owner.cpuacct_fd is None:
            return None
        return int(self.read(self.owner.cpuacct_fd, "cpuacct.usage")) / 1e9

    def cpu_seconds(self) -> float | None:
        """CPU time of every process this job ran (None where not accounted)."""
        try:
            total = self.cpu_total()
        except (OSError, ValueError):
            return None
        return None if total is None else max(0.0, total - self.cpu_base)

    def memory_usage(self) -> int:
        """Bytes charged to the cgroup now (its processes' memory and its page cache)."""
        name = "memory.current" if self.owner.version == 2 else "memory.usage_in_bytes"
        return int(self.read(self.owner.dir_fds[0], name))

    def reclaim(self, amount: int) -> None:
        """Ask the kernel to drop what an ended job left charged (its page cache)."""
        fd = self.owner.dir_fds[0]
        try:
            if self.owner.version == 2:
                if _exists(fd, f"{self.name}/memory.reclaim"):
                    _write(fd, f"{self.name}/memory.reclaim", str(amount))
            else:
                _write(fd, f"{self.name}/memory.force_empty", "0")
        except OSError:
            pass  # partly reclaimed (EAGAIN) or refused: the caller reads what is left

    def remove(self) -> bool:
        """Remove the job's directories (its processes must be reaped). False if some
        could not be removed yet."""
        if self.oom_fd is not None:
            os.close(self.oom_fd)
            self.oom_fd = None
        self.close_fds()
        self.close_read_fds()
        done = True
        for dir_fd in self.owner.all_fds():
            try:
                _rmdir_cgroup(dir_fd, self.name)
            except FileNotFoundError:
                pass
            except OSError:
                done = False
        return done


class JobCgroups:
    """A worker's parent cgroup(s) and the job cgroups it keeps below them.

    ``dir_fds``: the parent directory per hierarchy that must work (v2: one; v1: memory,
    then pids); ``cpuacct_fd``: v1's CPU accounting parent, where there is one.

    Making and removing a cgroup per job is most of what cgroups cost a job (on v1 a
    directory in each of three hierarchies, each with its own kernel state to set up and
    tear down): a worker instead keeps one job cgroup and hands it to job after job once it
    is empty and clean (:meth:`release`), so a job pays a few reads instead.
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
        #: The job cgroup that is empty and clean, ready for the next job.
        self.spare: JobCgroup | None = None
        #: How many job cgroups were handed out again rather than made (for the report).
        self.reused = 0

    def all_fds(self) -> list[int]:
        return self.dir_fds + ([self.cpuacct_fd] if self.cpuacct_fd is not None else [])

    def describe(self) -> dict[str, Any]:
        return {"version": self.version, "memory_bytes": self.memory,
                "max_processes": self.processes, "oom_kills_whole_job": True,
                "cpu_accounted": self.version == 2 or self.cpuacct_fd is not None}

    def acquire(self) -> JobCgroup:
        """The cgroup for the next child, limits set, ready to join: the spare one where
        there is one, else a fresh one."""
        if self.spare is not None:
            job, self.spare = self.spare, None
            self.reused += 1
            return job
        return self.create()

    def release(self, job: JobCgroup) -> None:
        """Take back a job's cgroup once its processes are killed and reaped: kept as the
        spare if :meth:`reset` finds it empty and clean, removed otherwise."""
        if self.spare is None and self.reset(job):
            self.spare = job
            return
        if not job.remove():
            self.stale.append(job)

    def reset(self, job: JobCgroup) -> bool:
        """Make an ended job's cgroup fit for the next job: no task left in it (not even
        one unreaped), nothing of the old job charged to it beyond :data:`LEFTOVER_BYTES`
        (its page cache is reclaimed), no unread out-of-memory alarm, and the baselines of
        its counters taken. Its limits stay as they were written. False (the caller
        removes it) where that cannot be made sure."""
        try:
            if not job.emptied and job.pids():
                return False
            if job.tasks():  # one not reaped yet counts too
                return False
            if job.oom_fd is not None:
                try:
                    os.eventfd_read(job.oom_fd)  # an unread alarm of the old job
                except BlockingIOError:
                    pass
            usage = job.memory_usage()
            if usage > LEFTOVER_BYTES:
                job.reclaim(usage)
                usage = job.memory_usage()
            if usage > LEFTOVER_BYTES:
                return False
        except (OSError, ValueError):
            return False
        try:
            job.oom_base = job.oom_kills()
        except OSError:
            job.oom_base = 0  # not counted here: the v1 eventfd still tells
        try:
            job.cpu_base = job.cpu_total() or 0.0
        except (OSError, ValueError):
            job.cpu_base = 0.0  # cpu_seconds then fails the same way: None
        job.killed_for_memory = job.emptied = False
        if len(job.join_fds) != len(self.all_fds()):
            return False
        return True

    def create(self) -> JobCgroup:
        """A fresh cgroup for the next child, limits set, ready to join."""
        self.stale = [job for job in self.stale if not job.remove()]
        self.count += 1
        job = JobCgroup(self, f"job-{self.count}")
        try:
            for dir_fd in self.all_fds():
                _mkdir_cgroup(dir_fd, job.name)
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
        if self.spare is not None:
            self.stale.append(self.spare)
            self.spare = None
        for job in self.stale:
            job.kill()
            job.remove()
        self.stale = []
        for dir_fd in self.all_fds():
            try:
                for name in os.listdir(dir_fd):
                    if name.startswith("job-"):
                        _rmdir_cgroup(dir_fd, name)
            except OSError:
                pass
            os.close(dir_fd)
        self.dir_fds, self.cpuacct_fd = [], None
        _remove_parents(self.parents)


# ------------------------------------------------------------------------------- setup

def setup(limits: dict[str, Any]) -> tuple[JobCgroups | None, str]:
    """This worker's per-job cgroups, or None and the reason there are none (headed
    ``cgroups not writable as this user`` where the kernel refused for want of permission).
    Must run before the worker leaves the real filesystem."""
    mounts = _mounts()
    own = _own_cgroups()
    reasons = []
    refused = False  # for want of permission, as an unprivileged user is
    v2_mounts = [m for m in mounts if m[2] == "cgroup2"]
    if v2_mounts and "" in own:
        root, point, _, _ = v2_mounts[0]
        base = _join(root, point, own[""])
        try:
            if base is None:
                raise OSError(errno.ENOENT, "this process's cgroup is not under the mount")
            return _setup_v2(base, limits), ""
        except OSError as exc:
            refused |= exc.errno in _PERMISSION_ERRORS
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
            refused |= exc.errno in _PERMISSION_ERRORS
            reasons.append(f"cgroup v1 memory and pids: {exc.strerror or exc}")
    else:
        reasons.append("no cgroup v1 memory and pids hierarchies")
    reason = "; ".join(reasons)
    return None, f"cgroups not writable as this user ({reason})" if refused else reason


_PERMISSION_ERRORS = (errno.EACCES, errno.EPERM, errno.EROFS)


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
