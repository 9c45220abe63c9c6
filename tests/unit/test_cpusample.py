"""``devtools/cpusample.py``: a command's CPU by kind of process, read from ``/proc``."""

import sys

import devtools.cpusample as cpusample
from devtools.cpusample import kind, sample


def test_each_process_is_named_by_its_kind():
    assert kind("/v/bin/python3 /v/bin/nbgrader autograde toy --force") == "nbgrader autograde"
    assert kind("/v/bin/python3 -m attncourse.sandbox.forkserver /s ['torch']") == (
        "fork server and its kernels"
    )
    assert kind("/usr/bin/make test") == "/usr/bin/make"  # no kind of its own: the program


def test_the_cpu_of_a_child_that_computes_is_counted_and_its_status_kept(monkeypatch):
    monkeypatch.setattr(cpusample, "KINDS", (("cpusample-probe", "probe"), *cpusample.KINDS))
    code = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass"
    status, cpu, count = sample([sys.executable, "-c", code, "cpusample-probe"], every=0.1)
    assert status == 0 and count["probe"] == 1
    assert 0.4 <= cpu["probe"] <= 1.5, cpu  # what it spent, read before it exited
    assert sample([sys.executable, "-c", "raise SystemExit(3)"], every=0.1)[0] == 3
