"""Ways for the judge to reach the kernel side (:mod:`attncourse.judge.agent`).

:class:`KernelChannel` runs each request as a short execution in the sandboxed
kernel (through the grader's nbclient session) and takes the one reply the agent
publishes as display data; :class:`LocalChannel` serves a namespace in this
process, for the fast case tables. Both pass the same JSON text both ways, so
the fast tests exercise the same encoding as real grading.
"""

from pathlib import Path

from attncourse.judge.agent import MIME, make_server
from attncourse.judge.remote import KernelFault

AGENT_SOURCE = (Path(__file__).parent / "agent.py").read_text()
AGENT_NAME = "__attncourse_judge__"


class LocalChannel:
    """The agent over a namespace of this process (tests; never for grading a student)."""

    def __init__(self, namespace):
        self.send = make_server(namespace)


class KernelChannel:
    """Requests as executions in a kernel: ``execute(code)`` runs code there, returns its outputs.

    ``execute`` raises :class:`KernelFault` when the kernel dies or hangs; the
    agent is installed again after the kernel was replaced (``reset``).
    """

    def __init__(self, execute):
        self._execute = execute
        self._installed = False

    def reset(self):
        self._installed = False

    def _install(self):
        code = (
            f"(lambda d: (exec(compile({AGENT_SOURCE!r}, '<judge agent>', 'exec'), d), "
            f"d['install'](get_ipython().user_ns, {AGENT_NAME!r})))"
            "({'__name__': 'attncourse_judge_agent'})"
        )
        self._execute(code)
        self._installed = True

    def send(self, text):
        if not self._installed:
            self._install()
        outputs = self._execute(f"{AGENT_NAME}({text!r})")
        replies = [
            o["data"][MIME]
            for o in outputs
            if o.get("output_type") in ("display_data", "execute_result")
            and MIME in o.get("data", {})
        ]
        if len(replies) != 1:
            timed_out = any(o.get("ename") == "CellTimeoutError" for o in outputs)
            raise KernelFault(
                "the call did not finish within the time limit"
                if timed_out
                else "no answer from the kernel (the notebook's code interfered with the grader's call)"
                if not replies
                else "several answers from the kernel to one call"
            )
        reply = replies[0]
        return reply if isinstance(reply, str) else ""
