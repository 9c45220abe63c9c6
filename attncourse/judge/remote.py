"""The judge's view of a student's notebook: names, objects and calls, answered as data.

A check receives a :class:`StudentNamespace` and uses it much like the
notebook's ``globals()``: ``"MyMHA" in ns``, ``ns["MyMHA"]``. What comes back is
plain data (see :mod:`attncourse.judge.wire`) or a :class:`Remote`, a handle to
an object that stays in the kernel: calling it or reading an attribute is a
request to the kernel, and the answer is again data or a handle. The student's
objects themselves never enter the judge's process.
"""

import functools
import itertools
import json
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np
import torch

from attncourse.cells import CodeCell
from attncourse.constants import EXAMPLE_STUDENT
from attncourse.judge import footprint as footprints
from attncourse.judge import wire
from attncourse.judge.program import Program, as_cells


class Channel(Protocol):
    """What carries a request to the kernel and its reply back (``attncourse.judge.channel``)."""

    def send(self, text: str, arrays: Sequence[np.ndarray] = ()) -> tuple[str, list[np.ndarray]]:
        """The reply's text and arrays."""
        ...


class KernelFault(Exception):
    """No usable answer from the kernel: it died, hung, or sent something that is not a reply."""


class StudentRaised(Exception):
    """The student's code raised while the judge called it (reported by the kernel as data)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(f"{kind}: {message}")
        self.kind = kind
        self.message = message


class Session:
    """Requests to one kernel through ``channel`` (text in, reply text out)."""

    def __init__(self, channel: Channel) -> None:
        self.channel = channel
        self._seq = itertools.count()
        self._remotes: dict[int, Remote] = {}
        self._outbox: list[np.ndarray] = []  # the arrays of the request being built (see encode)
        self._frames: list[np.ndarray] = []  # the arrays of the last reply
        self.requests = 0  # sent so far (the bench's profile reads it)

    def request(self, op: str, **fields: Any) -> dict[str, Any]:
        seq = next(self._seq)
        self.requests += 1
        arrays, self._outbox = self._outbox, []
        text, self._frames = self.channel.send(json.dumps({"op": op, "seq": seq, **fields}), arrays)
        try:
            reply = wire.parse_reply(text)
        except wire.ReplyError as error:
            raise KernelFault(f"the kernel's answer was not readable ({error})") from None
        if type(reply) is not dict or reply.get("seq") != seq:
            raise KernelFault("the kernel answered a different request")
        raised = reply.get("raised")
        if raised is not None:
            if type(raised) is not dict:
                raise KernelFault("the kernel's answer was not readable")
            raise StudentRaised(str(raised.get("type"))[:100], str(raised.get("message"))[:2000])
        return reply

    def value(self, reply: dict[str, Any]) -> Any:
        try:
            return wire.decode(reply.get("value"), self._remote, frames=self._frames)
        except wire.ReplyError as error:
            raise KernelFault(f"the kernel's answer was not plain data ({error})") from None

    def footprint(self, reply: dict[str, Any]) -> footprints.Footprint:
        """The :class:`~attncourse.judge.footprint.Footprint` a call's reply carries."""
        try:
            record = wire.decode(reply.get("footprint"), self._remote, frames=self._frames)
            return footprints.from_wire(record)
        except (wire.ReplyError, ValueError) as error:
            raise KernelFault(f"the kernel's footprint was not a record ({error})") from None

    def _remote(self, item: dict[str, Any]) -> "Remote":
        remote = Remote(self, item["id"], item.get("cls"), item.get("name"), item.get("callable"))
        self._remotes[id(remote)] = remote
        return remote

    def encode(self, value: Any) -> dict:
        def handle_id(obj: object) -> int | None:
            return obj._id if isinstance(obj, Remote) and obj._session is self else None

        return wire.encode(value, handle_id, self._outbox)


class Remote:
    """An object that lives in the kernel. ``cls`` and ``__name__`` are what the kernel says."""

    def __init__(
        self, session: Session, handle: int, cls: object, name: object, is_callable: object
    ) -> None:
        self._session = session
        self._id = handle
        self.cls = str(cls)[:200]
        self._name = str(name or "")[:200]
        self._callable = bool(is_callable)

    @property
    def __name__(self):
        return self._name or self.cls.rsplit(".", 1)[-1]

    def __repr__(self):
        return f"<{self.cls} in the kernel>"

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self.attr(name)

    def attr(self, name: str, ref: bool = False) -> Any:
        """Attribute ``name`` of the object (AttributeError when it has none)."""
        session = self._session
        reply = session.request("getattr", obj=session.encode(self), name=name, ref=ref)
        if reply.get("missing"):
            raise AttributeError(name)
        return session.value(reply)

    def __call__(self, *args, **kwargs):
        return self.call(*args, **kwargs)

    def call(
        self,
        *args: Any,
        no_grad: bool = False,
        stdout: bool = False,
        ref: bool = False,
        footprint: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Call the object; with ``stdout`` return ``(value, printed text)``, with ``footprint``
        ``(value, Footprint)``: the tensor operations the call dispatched, recorded in the
        kernel (:mod:`attncourse.judge.footprint` says when that record can be trusted)."""
        session = self._session
        reply = session.request(
            "call",
            func=session.encode(self),
            args=[session.encode(a) for a in args],
            kwargs={k: session.encode(v) for k, v in kwargs.items()},
            no_grad=no_grad,
            stdout=stdout,
            ref=ref,
            footprint=footprint,
        )
        value = session.value(reply)
        if footprint:
            return value, session.footprint(reply)
        if stdout:
            text = reply.get("stdout")
            return value, text[: wire.MAX_TEXT] if type(text) is str else ""
        return value

    def is_a(self, kind: "str | Remote") -> bool:
        """The kernel's word on ``isinstance(obj, kind)``, kind "module", "linear" or a Remote class."""
        session = self._session
        target = kind if isinstance(kind, str) else session.encode(kind)
        reply = session.request("isinstance", obj=session.encode(self), kind=target)
        return session.value(reply) is True


class StudentNamespace:
    """The notebook's globals as the judge sees them, plus the student's source.

    ``sources`` holds the text of every code cell the student wrote (answer
    cells and cells they added, never the course's own cells), for the source
    rules; ``device`` stands for the kernel's grading device in arguments. ``student``
    is the id nbgrader grades the notebook under (never what the notebook says): the
    checks of per-student numbers draw that student's instance; ``roster()`` gives the
    class's ids (the gradebook's students, read only when called) and ``instance_matches``
    collects the classmates whose numbers the answers are, for the run record.
    """

    device = wire.DeviceMarker()

    def __init__(
        self,
        session: Session,
        sources: Iterable[str | CodeCell] = (),
        student: str = EXAMPLE_STUDENT,
        roster: Callable[[], Sequence[str]] = tuple,
        matches: list[dict] | None = None,
    ) -> None:
        self._session = session
        self.student = student
        self.roster = roster
        self.instance_matches = [] if matches is None else matches
        self.cells = as_cells(sources)
        self.sources = [cell.source for cell in self.cells if cell.student]

    @functools.cached_property
    def program(self) -> Program:
        """The notebook's code, parsed once for every source rule of this grading."""
        return Program(self.cells)

    def _get(self, name):
        reply = self._session.request("get", name=name)
        if reply.get("missing"):
            raise KeyError(name)
        return self._session.value(reply)

    def __getitem__(self, name):
        return self._get(name)

    def __contains__(self, name):
        try:
            self._get(name)
        except KeyError:
            return False
        return True

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self._get(name)
        except KeyError:
            return default

    @staticmethod
    def on_device(tensor: torch.Tensor) -> wire.Grading:
        """``tensor`` as an argument placed on the kernel's grading device."""
        return wire.Grading(tensor)
