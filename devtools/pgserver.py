"""A PostgreSQL server of its own for a run: a temporary data directory, loopback only, as an
unprivileged user when run as root (``initdb`` refuses root); restartable, stopped at the end."""

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path


def binaries() -> tuple[str, str] | None:
    """(initdb, pg_ctl) of the installed PostgreSQL, or None."""
    found = []
    for name in ("initdb", "pg_ctl"):
        path = (
            shutil.which(name)
            or (sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}")) or [None])[-1]
        )
        found.append(path)
    return tuple(found) if all(found) else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PostgresServer:
    """``start()`` a fresh server with an empty ``gradebook`` database; ``url``; ``restart()``;
    ``stop()`` (removes its data)."""

    def __init__(self):
        found = binaries()
        if found is None:
            raise RuntimeError("PostgreSQL is not installed (apt-get install postgresql)")
        self.initdb, self.pg_ctl = found
        self.user = "nobody" if os.geteuid() == 0 else None
        # Its own folder in the system's temporary directory: the unprivileged server must
        # reach it, which a caller's private temporary folder would not let it.
        self.base = Path(tempfile.mkdtemp(prefix="attncourse-pg-"))
        self.data = self.base / "data"
        self.port = _free_port()
        self.url = f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/gradebook"

    def _run(self, *cmd: str) -> None:
        subprocess.run(cmd, user=self.user, check=True, capture_output=True, cwd=self.base)

    def start(self) -> "PostgresServer":
        os.chmod(self.base, 0o755)
        self.data.mkdir()
        if self.user:
            entry = pwd.getpwnam(self.user)
            os.chown(self.data, entry.pw_uid, entry.pw_gid)
        self._run(self.initdb, "-D", str(self.data), "-U", "postgres", "--auth=trust")
        self._pg_ctl("start")
        import psycopg2

        admin = psycopg2.connect(
            host="127.0.0.1", port=self.port, user="postgres", dbname="postgres"
        )
        admin.autocommit = True
        admin.cursor().execute("CREATE DATABASE gradebook")
        admin.close()
        return self

    def _pg_ctl(self, action: str, *extra: str) -> None:
        options = f"-p {self.port} -k {self.data} -c listen_addresses=127.0.0.1"
        log = str(self.data / "server.log")
        self._run(self.pg_ctl, "-D", str(self.data), "-o", options, "-l", log, "-w", *extra, action)

    def restart(self) -> None:
        """Stop (``-m fast``: open connections are cut) and start again on the same port."""
        self._pg_ctl("restart", "-m", "fast")

    def stop(self) -> None:
        subprocess.run(
            [self.pg_ctl, "-D", str(self.data), "-m", "immediate", "-w", "stop"],
            user=self.user,
            capture_output=True,
        )
        shutil.rmtree(self.base, ignore_errors=True)
