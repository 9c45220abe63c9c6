"""A Dask cluster that fails on purpose (``make soak``): named one-thread workers without a
nanny (killing one is a machine going away), a worker whose disk is full (its local
directory a full 1 MB tmpfs, where it would write each run's scratch course), and what a run
left behind (processes carrying its mark, files in its temporary directory)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

MARK = "ATTNCOURSE_SOAK"  # in the environment of every process the run starts


class FaultyCluster:
    """``dask scheduler`` and workers on 127.0.0.1, every process marked with ``MARK``."""

    def __init__(self, base: Path, names: list[str]):
        self.base = Path(base)
        self.tmp = self.base / "tmp"
        self.tmp.mkdir(parents=True, exist_ok=True)
        self.env = {**os.environ, MARK: str(self.base), "TMPDIR": str(self.tmp)}
        self.dask = str(Path(sys.executable).with_name("dask"))
        port = _free_port()
        self.address = f"tcp://127.0.0.1:{port}"
        self.processes = {
            "scheduler": self._start(
                "scheduler", "scheduler", "--host=127.0.0.1", f"--port={port}", "--no-dashboard"
            )
        }
        self.mounts = []
        for name in names:
            self.add(name)

    def _start(self, log, *args):
        with open(self.base / f"{log}.log", "ab") as out:
            return subprocess.Popen(
                [self.dask, *args], stdout=out, stderr=subprocess.STDOUT, env=self.env
            )

    def add(self, name: str, disk_full: bool = False) -> None:
        """Start worker ``name``; ``disk_full``: its local directory is a full tmpfs."""
        local = self.base / name
        local.mkdir(exist_ok=True)
        if disk_full:
            subprocess.run(
                ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(local)], check=True
            )
            self.mounts.append(local)
            with open(local / "filler", "wb") as f:
                try:
                    f.write(b"\0" * 2**21)
                except OSError:
                    pass  # full, as wanted
        self.processes[name] = self._start(
            name,
            "worker",
            self.address,
            "--nthreads=1",
            "--no-nanny",
            f"--name={name}",
            "--host=127.0.0.1",
            "--no-dashboard",
            f"--local-directory={local}",
        )

    def kill(self, name: str) -> None:
        """SIGKILL worker ``name`` mid-task, and the kernels and grading process it started."""
        process = psutil.Process(self.processes[name].pid)
        children = process.children(recursive=True)
        self.processes[name].send_signal(signal.SIGKILL)
        self.processes[name].wait(timeout=30)
        for child in children:  # a machine that goes away takes its processes with it
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + 30
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        for mount in self.mounts:
            subprocess.run(["umount", "-l", str(mount)], check=False)


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def leftovers(base: Path) -> list[str]:
    """What a run under ``base`` left: live processes carrying its mark, and files in its
    temporary directory or worker directories (a run's scratch course, a kernel's copy)."""
    found = []
    for process in psutil.process_iter(["pid", "name"]):
        try:
            if process.environ().get(MARK) == str(base):
                found.append(f"process {process.pid} {process.info['name']}")
        except (psutil.AccessDenied, psutil.NoSuchProcess, OSError):
            continue
    base = Path(base)
    for folder in [base / "dask" / "tmp", *(base / "dask").glob("w*")]:
        if folder.is_dir():
            found += [f"file {p}" for p in folder.glob("attncourse-*")]
    return found
