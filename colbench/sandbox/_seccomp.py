"""The seccomp filter that closes the kernel surface an answer never needs.

Runs inside the worker process (standard library plus libseccomp's Python bindings; it never
imports colbench). The worker installs the filter on itself once, after its own isolation is
set up and before it forks the first job's child; every child inherits it, so a job costs
nothing for it (building and loading a filter takes about 0.25 ms, which a per-child load
would add to every job's set-up). The filter cannot be lifted: seccomp filters only stack.

Denied with ``EPERM`` (what the code sees is an ordinary "Operation not permitted"):

* new namespaces and joining others: ``unshare`` (except a lone ``CLONE_NEWIPC``, which each
  child asks for itself before the code runs and which needs a capability the code no longer
  has), ``setns``, and ``clone`` with any namespace flag;
* the mount table: ``mount``, ``umount2``, ``pivot_root``, ``chroot`` and the new mount API;
* other processes' memory: ``ptrace``, ``process_vm_readv``, ``process_vm_writev``;
* kernel facilities an answer has no use for and whose bugs are the usual way out of a
  container: ``keyctl``, ``add_key``, ``request_key``, ``bpf``, ``perf_event_open``,
  ``userfaultfd``, ``open_by_handle_at``, module loading, ``kexec``.

Answered ``ENOSYS``, as a kernel built without them would answer, so that a library that
can do without them falls back:

* ``clone3``: its flags sit in a struct a filter cannot read, and the C library falls back to
  ``clone`` (whose flags the filter does read) when it sees ENOSYS;
* ``io_uring_setup``, ``io_uring_enter`` and ``io_uring_register``: an interface with a long
  record of kernel bugs, and one whose operations the filter could not see (they are read
  from a ring in memory, not passed as system calls);
* ``memfd_create``: anonymous files an answer needs no more than any other file (its private
  ``/tmp`` serves); they are how code gets writable memory that it can map executable again
  without a file on disk. Nothing colbench runs in the sandbox was found calling it: the
  backend's 1,000 test-split references under both protocols and its test suite, traced.

libseccomp does the BPF: ``pyseccomp`` (PyPI) or Debian's ``python3-seccomp`` (module
``seccomp``); they share one API. Where neither imports, :func:`install` says so and the
worker reports it in its isolation notes.
"""

from __future__ import annotations

import errno
from types import ModuleType
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
CLONE_NEWTIME = 0x00000080
NAMESPACE_FLAGS = (CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                   CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWTIME)

#: Denied outright, whatever the arguments.
DENIED_SYSCALLS = (
    "setns", "mount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev",
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "open_by_handle_at", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load",
)

#: Answered ``ENOSYS``: what the code sees is "Function not implemented", so that a library
#: falls back as it would on a kernel without them.
ABSENT_SYSCALLS = ("clone3", "io_uring_setup", "io_uring_enter", "io_uring_register",
                   "memfd_create")


def bindings() -> ModuleType | None:
    """libseccomp's Python bindings, or None where neither package imports."""
    for name in ("seccomp", "pyseccomp"):
        try:
            return __import__(name)
        except (ImportError, OSError):  # OSError: the bindings load libseccomp.so itself
            continue
    return None


def build(lib: ModuleType) -> Any:
    """The filter (a libseccomp ``SyscallFilter``), not yet loaded. A name this kernel or
    this libseccomp does not know is skipped: a call that does not exist needs no rule."""
    deny = lib.ERRNO(errno.EPERM)
    syscall_filter = lib.SyscallFilter(lib.ALLOW)

    def rule(action: Any, name: str, *args: Any) -> None:
        try:
            syscall_filter.add_rule(action, name, *args)
        except (ValueError, RuntimeError, OSError):
            pass

    for name in DENIED_SYSCALLS:
        rule(deny, name)
    rule(deny, "unshare", lib.Arg(0, lib.NE, CLONE_NEWIPC))
    for flag in NAMESPACE_FLAGS:
        rule(deny, "clone", lib.Arg(0, lib.MASKED_EQ, flag, flag))
    absent = lib.ERRNO(errno.ENOSYS)
    for name in ABSENT_SYSCALLS:
        rule(absent, name)
    return syscall_filter


def install() -> dict[str, Any]:
    """Load the filter into this process (which needs ``no_new_privs`` or root). Returns
    the report the worker passes on: ``{"enabled": bool, "denied": [...], "note": str}``."""
    lib = bindings()
    if lib is None:
        return {"enabled": False, "denied": [],
                "note": "no seccomp filter (libseccomp's Python bindings are not installed: "
                        "pip install pyseccomp, or apt install python3-seccomp): the code can "
                        "create namespaces, mount filesystems in them and reach kernel "
                        "facilities such as bpf and keyctl"}
    try:
        build(lib).load()
    except (OSError, RuntimeError, ValueError) as exc:
        return {"enabled": False, "denied": [],
                "note": f"no seccomp filter (loading it failed: {exc}): the code can create "
                        "namespaces, mount filesystems in them and reach kernel facilities "
                        "such as bpf and keyctl"}
    denied = sorted({*DENIED_SYSCALLS, *ABSENT_SYSCALLS, "unshare", "clone (namespace flags)"})
    return {"enabled": True, "denied": denied, "note": ""}
