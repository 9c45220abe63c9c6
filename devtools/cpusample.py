"""Where a command's CPU goes, by kind of process: ``python devtools/cpusample.py -- make test``.

Runs the command while reading every process's CPU time from ``/proc`` twice a second, and
prints the CPU seconds and the number of processes of each kind (the kernels forked by the fork
server, nbgrader's commands by name, the grading workers, the test processes...), most first. A
process that lives less than half a second may be missed; a kernel forked from the fork server
keeps the server's command line, so the two are one kind. How stop 40 found what ``make test``
spent its CPU on (README, Development).
"""

import argparse
import os
import subprocess
import time
from collections import Counter

KINDS = (  # (a word of the command line, its kind), the first that matches
    ("attncourse.sandbox.forkserver", "fork server and its kernels"),
    ("ipykernel", "kernel launchers, and kernels started afresh"),
    ("bin/nbgrader ", "nbgrader {word}"),
    ("bin/attncourse ", "attncourse {word}"),
    ("attncourse.worker", "grading processes (attncourse grade)"),
    ("bin/alembic", "alembic (nbgrader's gradebook migrations)"),
    ("xdist", "test processes"),
    ("-u -c import sys;exec(eval(sys.stdin.readline()))", "test processes"),
    ("dask", "dask scheduler and workers"),
    ("chrom", "chromium"),
    ("postgres", "postgresql"),
    ("jupyterhub", "jupyterhub"),
    ("node", "node (the hub's proxy)"),
)


def kind(cmdline: str) -> str:
    """The kind of the process with ``cmdline`` (its arguments joined by spaces)."""
    for word, name in KINDS:
        if word in cmdline:
            after = cmdline.split(word, 1)[1].split()
            return name.format(word=after[0] if after else "")
    return cmdline.split(" ", 1)[0][:60] or "(no command line)"


def _cpu(pid: str) -> tuple[str, float] | None:
    """(start time, CPU seconds) of process ``pid``, or None where it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return fields[19], (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sample(cmd: list[str], every: float = 0.5) -> tuple[int, Counter[str], Counter[str]]:
    """Run ``cmd``; its exit status, and CPU seconds and processes by kind, while it ran."""
    first: dict[tuple[str, str], float] = {}  # (pid, start) -> CPU when first seen
    last: dict[tuple[str, str], float] = {}
    kinds: dict[tuple[str, str], str] = {}
    me = str(os.getpid())
    process = subprocess.Popen(cmd)
    before = True
    while True:
        done = process.poll() is not None
        for pid in filter(str.isdigit, os.listdir("/proc")):
            got = _cpu(pid) if pid != me else None
            if got is None:
                continue
            key = (pid, got[0])
            if key not in kinds:
                try:
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        kinds[key] = kind(f.read().replace(b"\0", b" ").decode(errors="replace"))
                except OSError:
                    continue
                first[key] = got[1] if before else 0.0
            last[key] = got[1]
        before = False
        if done:
            break
        time.sleep(every)
    cpu: Counter[str] = Counter()
    count: Counter[str] = Counter()
    for key, name in kinds.items():
        cpu[name] += last[key] - first[key]
        count[name] += 1
    return process.returncode, cpu, count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cmd", nargs="+", help="the command, after --")
    args = parser.parse_args()
    status, cpu, count = sample(args.cmd)
    for name, seconds in cpu.most_common():
        if seconds >= 0.05:
            print(f"{seconds:9.1f} s  {count[name]:6d}  {name}")
    print(f"{sum(cpu.values()):9.1f} s  in all")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
