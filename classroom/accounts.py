"""The classroom's real Unix accounts: created as root with a password and a private home.

An account the classroom made carries :data:`MARK` in its comment (GECOS) field; an
existing account without it is never touched (its password is not changed).
"""

import os
import pwd
import subprocess
from dataclasses import dataclass
from pathlib import Path

MARK = "attncourse classroom"


@dataclass(frozen=True)
class Account:
    """One hub user: ``role`` is ``instructor``, ``student`` or ``""`` (no course access)."""

    name: str
    role: str
    password: str


class AccountError(RuntimeError):
    """An account name already taken by someone the classroom did not create."""


def entry(name: str) -> pwd.struct_passwd | None:
    """The passwd entry of ``name``, or None."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def ensure(account: Account, homes: Path) -> pwd.struct_passwd:
    """Create ``account`` (home ``homes/<name>``, mode 700) or reset its password."""
    found = entry(account.name)
    if found and found.pw_gecos != MARK:
        raise AccountError(
            f"account {account.name!r} exists and was not made by the classroom "
            f"(comment {found.pw_gecos!r}); pick other names, its password is left alone"
        )
    home = Path(homes) / account.name
    if found and Path(found.pw_dir) != home:
        remove(account.name)
        found = None
    if not found:
        subprocess.run(
            ["useradd", "--create-home", "--home-dir", str(home), "--shell", "/bin/bash"]
            + ["--user-group", "--comment", MARK, account.name],
            check=True,
            capture_output=True,
        )
    subprocess.run(
        ["chpasswd"], input=f"{account.name}:{account.password}\n", text=True, check=True
    )
    home.chmod(0o700)
    return pwd.getpwnam(account.name)


def remove(name: str) -> None:
    """Delete the classroom's account ``name`` and its home (others are left alone)."""
    found = entry(name)
    if found and found.pw_gecos == MARK:
        subprocess.run(["userdel", "--remove", name], check=False, capture_output=True)


def environment(name: str, **extra: str) -> dict:
    """A login-like environment for ``name``: HOME, USER, LOGNAME, SHELL, PATH and ``extra``."""
    user = pwd.getpwnam(name)
    return {
        "HOME": user.pw_dir,
        "USER": name,
        "LOGNAME": name,
        "SHELL": user.pw_shell,
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C.UTF-8",
        **extra,
    }


def run_as(name: str, cmd: list, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    """Run ``cmd`` as the Unix account ``name`` (its uid, gid and groups) in its home."""
    user = pwd.getpwnam(name)
    return subprocess.run(
        [str(c) for c in cmd],
        user=user.pw_uid,
        group=user.pw_gid,
        extra_groups=os.getgrouplist(name, user.pw_gid),
        cwd=kwargs.pop("cwd", user.pw_dir),
        env=environment(name) if env is None else env,
        **kwargs,
    )
