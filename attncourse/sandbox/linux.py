"""The Linux calls the sandbox needs that Python does not offer (through libc), and their flags."""

import ctypes
import os

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
LINUX_CAPABILITY_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret, what):
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(
    source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None
) -> None:
    _check(
        _libc.mount(
            source.encode() if source else None,
            str(target).encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def prctl(option: int, value: int) -> None:
    """Set a process attribute (``PR_SET_*``); the result is not checked."""
    _libc.prctl(option, value, 0, 0, 0)


def drop_capabilities() -> None:
    """Give up every capability. A kernel forked (not exec'd) in a user namespace would
    otherwise keep all those the namespace gave the sandbox, enough to unmount what hides
    the course; exec and a switch away from root drop them anyway."""
    header = (ctypes.c_uint32 * 2)(LINUX_CAPABILITY_VERSION_3, 0)
    _check(_libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")


def write(path: str, text: str) -> None:
    """Write a small file of the kernel's interfaces (``/proc``, cgroups)."""
    with open(path, "w") as f:
        f.write(text)
