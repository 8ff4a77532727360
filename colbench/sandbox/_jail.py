"""Operating-system isolation for a sandbox worker (Linux; standard library only).

The worker calls :func:`isolate` once at start. As root it

* takes an unprivileged uid of its own (a lock file per uid, so concurrent pools never share
  one: ``RLIMIT_NPROC`` counts per user, and the end-of-job cleanup kills every process of
  that uid);
* leaves the network, IPC and UTS namespaces (``unshare`` through ctypes: Python 3.11 has no
  ``os.unshare``); the new network namespace has no interfaces up, not even loopback;
* builds a private, read-only filesystem view and ``pivot_root``\\ s into it: the system
  directories and the Python installation, bound read-only; a fresh ``/dev`` with the harmless
  devices; a ``/proc`` that hides other users' processes; an empty ``/tmp`` (a small tmpfs)
  that holds each job's private directory. Home directories, ``/root``, ``/work``, ``/srv``,
  the colbench package and its data, and any path the caller names are simply not there.

Without root it takes what an unprivileged user can get (a network namespace through a user
namespace, where the kernel allows one) and says what is missing.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import pwd
import signal
import site
import stat
import sys
import tempfile
import time
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
PR_SET_NO_NEW_PRIVS = 38

_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "riscv64": 41, "ppc64le": 203,
               "s390x": 217, "i686": 217, "armv7l": 218}

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong,
                        ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]
_libc.unshare.argtypes = [ctypes.c_int]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                        ctypes.c_ulong]


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def prctl(option: int, value: int) -> None:
    _check(_libc.prctl(option, value, 0, 0, 0), f"prctl({option})")


def mount(source: str | None, target: str, fstype: str | None, flags: int,
          data: str | None = None) -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else os.fsencode(text)
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)),
           f"mount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    number = _PIVOT_ROOT.get(platform.machine())
    if number is None:
        raise OSError(errno.ENOSYS, f"pivot_root: unknown architecture {platform.machine()}")
    _check(_libc.syscall(number, os.fsencode(new_root), os.fsencode(put_old)), "pivot_root")


# --------------------------------------------------------------------------------- uids

def acquire_uid(base: int, count: int) -> tuple[int, int]:
    """Lock and return ``(uid, lock_fd)``: a uid no user has and no other worker holds."""
    lock_dir = os.path.join(tempfile.gettempdir(), ".colbench-sandbox-uids")
    try:
        os.mkdir(lock_dir, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(lock_dir)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
        raise OSError(errno.EPERM, f"{lock_dir} is not a private directory of this user")
    for uid in range(base, base + count):
        try:
            pwd.getpwuid(uid)
            continue  # a real account: never borrow it
        except KeyError:
            pass
        fd = os.open(os.path.join(lock_dir, f"{uid}.lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                     0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        return uid, fd
    raise OSError(errno.EAGAIN, f"all sandbox uids {base}..{base + count - 1} are in use")


def kill_uid(uid: int) -> bool:
    """Kill every process of ``uid`` from a helper that becomes that uid (root ignores
    nothing here: ``kill(-1)`` as that user reaches exactly its processes). Returns whether
    the helper could take the uid."""
    pid = os.fork()
    if pid == 0:
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            for _ in range(64):  # a second pass catches what forked during the first
                try:
                    os.kill(-1, signal.SIGKILL)
                except ProcessLookupError:
                    break
            os._exit(0)
        except BaseException:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def direct_children() -> list[int]:
    """This process's live children (orphaned descendants land here: we are a subreaper)."""
    me = os.getpid()
    try:
        with open(f"/proc/self/task/{me}/children") as handle:
            return [int(pid) for pid in handle.read().split()]
    except OSError:
        pass
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == me:
            found.append(int(name))
    return found


def reap_all(uid: int | None, timeout: float = 5.0) -> None:
    """Kill and reap every descendant. Raises ``OSError`` if some survive ``timeout``."""
    if uid is not None:
        kill_uid(uid)
    deadline = time.monotonic() + timeout
    while True:
        try:
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        except ChildProcessError:
            return
        children = direct_children()
        for pid in children:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > deadline:
            raise OSError(errno.EBUSY, f"processes {children} survived SIGKILL")
        time.sleep(0.002)


def no_descendants() -> bool:
    """Reap finished children; True when none is left (the common, clean case: no fork)."""
    try:
        while True:
            pid, _ = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return False
    except ChildProcessError:
        return True


# --------------------------------------------------------------------- filesystem view

_SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_DEVICES = ("null", "zero", "full", "random", "urandom")


def _inside(path: str, parent: str) -> bool:
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def python_paths() -> list[str]:
    """What the interpreter needs to import modules: its prefixes and ``sys.path``."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix,
             os.path.dirname(os.path.realpath(sys.executable))}
    paths.update(site.getsitepackages())
    paths.update(entry for entry in sys.path if entry)
    return sorted({os.path.realpath(p) for p in paths if os.path.exists(p)})


def build_root(hidden: list[str], tmp_bytes: int) -> None:
    """Pivot into a private read-only view of the filesystem (see the module docstring).

    Must run as root, single-threaded, after ``unshare(CLONE_NEWNS)``.
    """
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Stage the new root on a tmpfs over /tmp: only this namespace sees it.
    mount("colbench-stage", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=64k")
    root = "/tmp/root"
    os.mkdir(root, 0o755)
    mount("colbench-root", root, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=256k")

    hidden = [os.path.realpath(h) for h in hidden if h]
    binds = []
    for path in [*_SYSTEM_DIRS, *python_paths()]:
        if not os.path.lexists(path):
            continue
        if path not in _SYSTEM_DIRS and any(_inside(path, h) for h in hidden):
            continue
        if any(_inside(path, done) for done in binds):
            continue
        binds.append(path)
    for path in sorted(binds, key=len):
        target = root + path
        os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
        if os.path.islink(path):
            os.symlink(os.readlink(path), target)
            continue
        if os.path.isdir(path):
            os.makedirs(target, mode=0o755, exist_ok=True)
        else:
            open(target, "w").close()
        mount(path, target, None, MS_BIND | MS_REC)
        mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    # Inside a bound tree, mount empty read-only filesystems over what must stay hidden.
    for path in hidden:
        target = root + path
        if not any(_inside(path, b) and path != b for b in binds) or not os.path.lexists(target):
            continue
        if os.path.isdir(target) and not os.path.islink(target):
            mount("colbench-hidden", target, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                  "mode=0555,size=4k")
        elif os.path.isfile(target):
            mount("/dev/null", target, None, MS_BIND)
            mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY)

    dev = root + "/dev"
    os.mkdir(dev, 0o755)
    mount("colbench-dev", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k")
    for name in _DEVICES:
        if os.path.exists(f"/dev/{name}"):
            open(f"{dev}/{name}", "w").close()
            mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for name, link in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                       ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2"),
                       ("shm", "/tmp")):
        os.symlink(link, f"{dev}/{name}")
    mount(None, dev, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NOEXEC)

    os.mkdir(root + "/proc", 0o555)
    proc_flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    for options in ("hidepid=invisible", "hidepid=2", None):
        try:
            mount("proc", root + "/proc", "proc", proc_flags, options)
            break
        except OSError:
            if options is None:
                raise

    os.mkdir(root + "/tmp", 0o755)
    mount("colbench-tmp", root + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
          f"mode=0755,size={max(tmp_bytes, 1 << 20)},nr_inodes=4096")
    for name in ("home", "root", "var"):
        os.makedirs(root + "/" + name, mode=0o755, exist_ok=True)

    os.chdir(root)
    pivot_root(".", ".")
    # The old root is now stacked under the new one; detach it.
    _check(_libc.umount2(b".", MNT_DETACH), "umount old root")
    os.chdir("/")
    mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


# ------------------------------------------------------------------------ the whole thing

RLIMITS = ["RLIMIT_CPU", "RLIMIT_AS", "RLIMIT_NPROC", "RLIMIT_FSIZE", "RLIMIT_NOFILE",
           "RLIMIT_CORE"]


def isolate(config: dict[str, Any]) -> dict[str, Any]:
    """Apply what this process can get; return the isolation report (and keep the uid lock)."""
    notes: list[str] = []
    report: dict[str, Any] = {
        "root": False, "uid_drop": False, "uid": None, "network_namespace": False,
        "mount_namespace": False, "private_root": False, "ipc_namespace": False,
        "rlimits": list(RLIMITS), "notes": notes, "lock_fd": None,
    }
    privileged = os.geteuid() == 0 and config.get("privileged", True)
    report["root"] = privileged
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    except OSError as exc:
        notes.append(f"could not become a child subreaper ({exc}): processes the code "
                     "daemonises may outlive the job")

    if not privileged:
        who = "running as root with privileges turned off by the caller" \
            if os.geteuid() == 0 else f"not running as root (uid {os.geteuid()})"
        notes.append(f"{who}: no uid drop, so RLIMIT_NPROC cannot stop a fork storm (the "
                     "cleanup still kills every descendant after each job); no private "
                     "filesystem view: the code can read every file this user can read, "
                     "import only what this user can, and write where this user can")
        report["rlimits"] = [r for r in RLIMITS if r != "RLIMIT_NPROC"]
        uid, gid = os.geteuid(), os.getegid()
        try:
            unshare(CLONE_NEWUSER | CLONE_NEWNET)
            with open("/proc/self/setgroups", "w") as handle:
                handle.write("deny")
            with open("/proc/self/uid_map", "w") as handle:
                handle.write(f"{uid} {uid} 1")
            with open("/proc/self/gid_map", "w") as handle:
                handle.write(f"{gid} {gid} 1")
            report["network_namespace"] = True
            notes.append("network namespace through an unprivileged user namespace")
        except OSError as exc:
            notes.append(f"no network namespace ({exc}): the code can open sockets, "
                         "including to services on this machine")
        return report

    try:
        uid, lock_fd = acquire_uid(config["uid_base"], config["uid_count"])
        if kill_uid(uid):  # also the probe that setuid to it works
            report.update(uid=uid, uid_drop=True, lock_fd=lock_fd)
        else:
            os.close(lock_fd)
            notes.append(f"cannot switch to uid {uid}: the code runs as root, and "
                         "RLIMIT_NPROC cannot stop a fork storm")
    except OSError as exc:
        notes.append(f"no unprivileged uid for the code ({exc}): it runs as root")
    if not report["uid_drop"]:
        report["rlimits"] = [r for r in RLIMITS if r != "RLIMIT_NPROC"]

    for flag, key, what in ((CLONE_NEWNET, "network_namespace", "network namespace"),
                            (CLONE_NEWIPC | CLONE_NEWUTS, "ipc_namespace", "IPC namespace"),
                            (CLONE_NEWNS, "mount_namespace", "mount namespace")):
        try:
            unshare(flag)
            report[key] = True
        except OSError as exc:
            consequence = {
                "network_namespace": "the code can open sockets, including to services on "
                                     "this machine",
                "ipc_namespace": "System V IPC objects of the machine are reachable",
                "mount_namespace": "no private filesystem view",
            }[key]
            notes.append(f"no {what} ({exc}): {consequence}")
    if report["mount_namespace"]:
        try:
            build_root(list(config.get("hidden_paths", [])), int(config["tmp_bytes"]))
            report["private_root"] = True
        except OSError as exc:
            notes.append(f"could not build the private filesystem view ({exc}): the code can "
                         "read every world-readable file on the machine")
    if not report["private_root"] and report["uid_drop"]:
        notes.append("the code can import only the modules the worker preloaded when the "
                     "Python installation is not readable by other users")
    return report
