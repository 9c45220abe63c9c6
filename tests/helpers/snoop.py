"""A student who tries to get out of the grading sandbox, for the sandbox's tests.

``SNOOP`` is cell code (a ``str.format`` template): it tries to read and to append
to the given paths, to delete the gradebook and to connect to a loopback port, and
prints what happened to each as one line of JSON after ``SNOOP ``; then it raises,
so its cell stops there. ``Listener`` counts connections to that port (none may
arrive from a kernel); ``snoop_report`` reads the JSON back from the autograded
notebook.
"""

import json
import socket
import threading

# What an escape attempt reports, one line of JSON: path -> "ok" or the error it met.
SNOOP = """import json, os, socket

report = {{}}
for path in {reads!r}:
    try:
        with open(path, "rb") as f:
            report[path] = "read %d bytes" % len(f.read())
    except OSError as e:
        report[path] = type(e).__name__
for path in {writes!r}:
    try:
        with open(path, "ab") as f:
            f.write(b"pwned")
        report[path] = "wrote"
    except OSError as e:
        report[path] = type(e).__name__
try:
    os.remove({gradebook!r})
    report["remove gradebook"] = "removed"
except OSError as e:
    report["remove gradebook"] = type(e).__name__
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=3).close()
    report["network"] = "connected"
except OSError as e:
    report["network"] = type(e).__name__
print("SNOOP " + json.dumps(report))
raise RuntimeError("done snooping")
"""


class Listener:
    """A TCP server on loopback that counts connections (none may arrive from a kernel)."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.sock.settimeout(0.5)
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.stop = True
        self.thread.join()
        self.sock.close()


def snoop_report(nb):
    """path or action -> outcome, from the stream output of an autograded notebook."""
    text = "".join(
        o.get("text", "")
        for c in nb.cells
        if c.cell_type == "code"
        for o in c.outputs
        if o.output_type == "stream"
    )
    assert "SNOOP " in text, f"no SNOOP report in the notebook's output: {text[:2000]}"
    return json.loads(text.split("SNOOP ", 1)[1].splitlines()[0])
