"""``make classroom``: a JupyterHub with demo accounts on 127.0.0.1; Ctrl-C stops it.

Run as root: it creates Unix accounts (an instructor, two students and a hub user
outside the course) with fresh passwords, printed below the address.
"""

import argparse
import os
import secrets
import signal
import sys
from pathlib import Path

from classroom.accounts import Account
from classroom.hub import running
from classroom.provision import Classroom, exposed, provision
from classroom.reach import Unreachable

DEMO = (
    ("attn-instructor", "instructor"),
    ("attn-alice", "student"),
    ("attn-bob", "student"),
    ("attn-guest", ""),
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m classroom", description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("/srv/attncourse-classroom"))
    parser.add_argument("--port", type=int, default=8000)
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("make classroom creates Unix accounts and starts their servers: run it as root")
        return 2
    accounts = tuple(Account(name, role, secrets.token_urlsafe(9)) for name, role in DEMO)
    try:
        room = provision(Classroom(args.root.resolve(), accounts, port=args.port))
    except Unreachable as unreachable:
        print(f"make classroom: {unreachable}", file=sys.stderr)
        return 2
    if open_to_all := exposed(room):
        names = ", ".join(str(p.relative_to(room.checkout)) for p in open_to_all)
        print(
            f"warning: every account can read {names} of {room.checkout}, whose .venv the "
            "users' servers run from; on a real hub keep the repository out of students' reach"
        )
    log = room.root / "hub" / "jupyterhub.log"
    print(f"Starting JupyterHub (log: {log}) ...", flush=True)
    try:
        with running(room, log):
            print(f"\nClassroom at {room.url}  (course directory: {room.course})\n")
            for a in accounts:
                print(f"  {a.role or 'no course':<10}  {a.name:<16}  password {a.password}")
            print("\nCtrl-C stops the hub and every user's server.", flush=True)
            signal_wait()
    except KeyboardInterrupt:
        pass
    print("Stopped.")
    return 0


def signal_wait():
    """Sleep until Ctrl-C (SIGINT) or SIGTERM."""
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
