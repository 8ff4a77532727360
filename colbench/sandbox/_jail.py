"""Operating-system isolation for a sandbox worker (Linux; standard library only).

The worker calls :func:`isolate` once at start. As root it

* takes an unprivileged uid of its own (a lock file per uid, so concurrent pools never share
  one: ``RLIMIT_NPROC`` counts per user, and the end-of-job cleanup kills every process of
  that uid);
* leaves the network, IPC and UTS namespaces (``unshare`` through ctypes: Python 3.11 has no
  ``os.unshare``); the new network namespace has no interfaces up, not even loopback;
* becomes init of a PID namespace of its own (see :func:`become_pid_namespace_init`): the
  code sees and can reach no process but its job's, not the evaluator, not other workers'
  jobs, and ``kill(-1)`` in the worker ends every process a job left, however daemonised;
* builds a private, read-only filesystem view and ``pivot_root``\\ s into it: the system
  directories and the Python installation, bound read-only; a fresh ``/dev`` with the harmless
  devices; a ``/proc`` of that PID namespace, which also hides other users' processes (the
  worker's among them); an empty ``/tmp`` (a small tmpfs)
  that holds each job's private directory. Home directories, ``/root``, ``/work``, ``/srv``,
  the colbench package and its data, and any path the caller names are simply not there.

Without root it gets the same from an unprivileged user namespace (see
:func:`enter_user_namespace`): the same private view, an empty network, and a PID namespace
with its own ``/proc``; the code keeps the user's uid but no capabilities. Where the kernel
refuses user namespaces, it takes what an unprivileged user can get and says what is missing
(the pool then refuses to run code unless the caller accepts the risk).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import platform
import pwd
import select
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
CLONE_NEWPID = 0x20000000
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
PR_SET_DUMPABLE = 4
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


def reap_all(uid: int | None, timeout: float = 5.0, *, namespace_init: bool = False) -> None:
    """Kill and reap every descendant. Raises ``OSError`` if some survive ``timeout``.
    ``namespace_init``: this process is init of its PID namespace, where ``kill(-1)``
    reaches every other process of the namespace, however it was daemonised."""
    if uid is not None:
        kill_uid(uid)
    if namespace_init:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
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


# statvfs flag -> mount flag, for the flags a bind remount must repeat.
_KEPT_FLAGS = ((os.ST_NOEXEC, MS_NOEXEC), (os.ST_NOATIME, 1 << 10), (os.ST_NODIRATIME, 1 << 11),
               (os.ST_RELATIME, 1 << 21))


def kept_mount_flags(path: str) -> int:
    """The flags of the mount at ``path`` that a read-only bind remount must keep. Inside a
    user namespace the kernel refuses a remount that would clear a flag the mount was made
    with in the outer namespace (noexec, the atime flags); as root it would merely change
    them, so keeping them is right in both modes."""
    try:
        have = os.statvfs(path).f_flag
    except OSError:
        return 0
    return sum(flag for st_flag, flag in _KEPT_FLAGS if have & st_flag)


def build_root(hidden: list[str], tmp_bytes: int) -> None:
    """Pivot into a private read-only view of the filesystem (see the module docstring).

    Must run single-threaded after ``unshare(CLONE_NEWNS)``, as root or with full
    capabilities in a user namespace that owns the mount namespace (and, for ``/proc``, a
    PID namespace this process lives in).
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
        mount(None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV |
              kept_mount_flags(target))
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


WEAK_NOTE = ("no uid drop, so RLIMIT_NPROC cannot stop a fork storm (the cleanup still kills "
             "every descendant after each job); no private filesystem view: the code can read "
             "every file this user can read, import only what this user can, and write where "
             "this user can")


def new_report() -> dict[str, Any]:
    """An isolation report with nothing applied yet (see :func:`isolate`)."""
    return {
        "mode": "none", "root": False, "uid_drop": False, "uid": None,
        "network_namespace": False, "mount_namespace": False, "private_root": False,
        "ipc_namespace": False, "user_namespace": False, "pid_namespace": False,
        "rlimits": list(RLIMITS), "notes": [], "lock_fd": None, "outer_pid": os.getpid(),
    }


def isolate(config: dict[str, Any]) -> dict[str, Any]:
    """Apply what this process can get; return the isolation report (and keep the uid lock).

    The mode follows the configuration and the machine: ``root`` (the evaluator is root: uid
    drop, namespaces, private view), ``user-namespace`` (the same view and namespaces from an
    unprivileged user namespace: the default without root, and on request as root) or
    ``none`` (neither was possible, or the caller turned privileges off: only rlimits, and a
    network namespace where the kernel allows one)."""
    report = new_report()
    notes: list[str] = report["notes"]
    try:
        prctl(PR_SET_CHILD_SUBREAPER, 1)
    except OSError as exc:
        notes.append(f"could not become a child subreaper ({exc}): processes the code "
                     "daemonises may outlive the job")
    is_root = os.geteuid() == 0
    if config.get("privileged", True) is False:
        who = "running as root with privileges turned off by the caller" if is_root \
            else f"not running as root (uid {os.geteuid()})"
        isolate_weakly(report, who)
        return report
    wants_userns = config.get("user_namespace")
    if wants_userns is True or (not is_root and wants_userns is not False):
        if enter_user_namespace(config, report):
            return report
        if not is_root:
            isolate_weakly(report, f"not running as root (uid {os.geteuid()}) and no user "
                                   "namespace")
            return report
    if not is_root:
        isolate_weakly(report, f"not running as root (uid {os.geteuid()}) and user "
                               "namespaces turned off by the caller")
        return report
    isolate_as_root(config, report)
    return report


def isolate_weakly(report: dict[str, Any], who: str) -> None:
    """What any user can get without namespaces of their own: the rlimits, and a network
    namespace through a user namespace where the kernel allows one."""
    notes: list[str] = report["notes"]
    notes.append(f"{who}: {WEAK_NOTE}")
    report["rlimits"] = [r for r in RLIMITS if r != "RLIMIT_NPROC"]
    uid, gid = os.geteuid(), os.getegid()
    try:
        unshare(CLONE_NEWUSER | CLONE_NEWNET)
        write_id_maps(uid, gid)
        report["network_namespace"] = True
        notes.append("network namespace through an unprivileged user namespace")
    except OSError as exc:
        notes.append(f"no network namespace ({exc}): the code can open sockets, "
                     "including to services on this machine")


def write_id_maps(uid: int, gid: int) -> None:
    """Map this user (and group) onto themselves in the user namespace just entered."""
    with open("/proc/self/setgroups", "w") as handle:
        handle.write("deny")
    with open("/proc/self/uid_map", "w") as handle:
        handle.write(f"{uid} {uid} 1")
    with open("/proc/self/gid_map", "w") as handle:
        handle.write(f"{gid} {gid} 1")


def enter_user_namespace(config: dict[str, Any], report: dict[str, Any]) -> bool:
    """The root mode's isolation from an unprivileged user namespace: new user, mount,
    network, IPC, UTS and PID namespaces, then the private filesystem view.

    The PID namespace needs one fork: its first process becomes its init. This process
    stays outside as a relay that waits for it (and whose death kills it); the init carries
    on as the worker, and this function returns in it. A worker that is init has two gifts:
    ``kill(-1)`` ends every process of the job and nothing else, and the code cannot signal
    it (init only receives the signals it handles). The code keeps the user's uid but no
    capabilities (each child drops them: see :func:`drop_capabilities`).

    As root (on request) the worker first drops to a sandbox uid of its own, so that the
    namespace belongs to an unprivileged user. Returns False, with a note, where the kernel
    refuses; the process is then unchanged, as no step before the unshare changes it.
    """
    notes: list[str] = report["notes"]
    if os.geteuid() == 0:
        try:
            uid, lock_fd = acquire_uid(config["uid_base"], config["uid_count"])
        except OSError as exc:
            notes.append(f"no unprivileged uid for the user namespace ({exc})")
            return False
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
        # A uid change leaves the process undumpable, and /proc/self then belongs to root:
        # the id maps below could not be written.
        prctl(PR_SET_DUMPABLE, 1)
        report.update(uid=uid, lock_fd=lock_fd)
    uid, gid = os.geteuid(), os.getegid()
    flags = (CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS |
             CLONE_NEWPID)
    try:
        unshare(flags)
    except OSError as exc:
        notes.append(f"no user namespace ({exc}; the kernel or a sysctl such as "
                     "kernel.unprivileged_userns_clone or user.max_user_namespaces refuses "
                     "them)")
        return False
    write_id_maps(uid, gid)
    become_pid_namespace_init()
    report.update(mode="user-namespace", user_namespace=True, pid_namespace=True,
                  network_namespace=True, ipc_namespace=True, mount_namespace=True)
    try:
        build_root(list(config.get("hidden_paths", [])), int(config["tmp_bytes"]))
        report["private_root"] = True
    except OSError as exc:
        notes.append(f"could not build the private filesystem view in the user namespace "
                     f"({exc}): the code can read every file this user can read")
    return True


def become_pid_namespace_init() -> None:
    """Fork after ``unshare(CLONE_NEWPID)``: the parent becomes a relay that waits for the
    child and exits with its status; the child (init of the new namespace) returns."""
    alive_r, alive_w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(alive_r)
        os.closerange(3, alive_w)  # the worker's socket among them: only the init speaks
        os.closerange(alive_w + 1, 1 << 16)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    os.close(alive_w)
    prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    # The relay may have died before the line above: its end of the pipe is then closed.
    readable, _, _ = select.select([alive_r], [], [], 0)
    if readable:
        os._exit(1)
    os.close(alive_r)
    # Init receives only the signals it handles; Python handles SIGINT. No job may stop it.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


_CAPABILITY_VERSION_3 = 0x20080522


def drop_capabilities() -> None:
    """Empty this process's capability sets for good. In a user namespace the worker holds
    every capability of that namespace; a job's child must hold none, or it could unmount
    what hides the checkout, or remount its view writable."""
    header = _CapHeader(_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def isolate_as_root(config: dict[str, Any], report: dict[str, Any]) -> None:
    """Root's isolation: a uid of its own, network, IPC, mount and PID namespaces, the
    view. Like :func:`enter_user_namespace`, it forks for the PID namespace and returns in
    the namespace's init, which carries on as the worker."""
    notes: list[str] = report["notes"]
    report.update(mode="root", root=True)
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
    try:
        unshare(CLONE_NEWPID)
    except OSError as exc:
        notes.append(f"no PID namespace ({exc}): the code can see the processes of its own "
                     "uid and probe any pid for whether it exists")
    else:
        # Before the view is built: its /proc must be mounted from inside the namespace.
        become_pid_namespace_init()
        report["pid_namespace"] = True
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
