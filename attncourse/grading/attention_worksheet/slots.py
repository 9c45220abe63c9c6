"""Q2 of ``attention_worksheet``: which quantity fills each slot of the multi-head figure."""

from attncourse.judge.checks import answer, call, describe, fail
from attncourse.judge.remote import Remote, StudentNamespace

from .references import SLOT_GROUPS, SLOT_KEY, VOCABULARY

PATH_ROLE = {
    "q": "the right path enters the first MatMul as it is: it carries the queries",
    "k": "the middle path is transposed before the first MatMul: it carries the keys",
    "v": "the left path meets the softmax weights in the second MatMul: it carries the values",
}
_VOCAB_BY_LOWER = {v.lower(): v for v in VOCABULARY}


def _as_plain_dict(slots):
    """``SLOTS`` as a plain dict: a dict subclass (OrderedDict...) is copied by the kernel's dict.

    A dict whose keys are all strings arrives as data; a dict subclass arrives as a
    handle, and ``dict(SLOTS)`` in the kernel (``dict`` found in the class's MRO)
    turns it into data. Only the data is judged, so a subclass that lies about its
    items can only misstate its own answer.
    """
    if not isinstance(slots, Remote):
        return slots
    try:
        mro = slots.attr("__class__").attr("__mro__")
    except AttributeError:
        return slots
    if type(mro) is not tuple:
        return slots
    base = next(
        (
            c
            for c in mro
            if isinstance(c, Remote) and c.cls == "builtins.type" and c.__name__ == "dict"
        ),
        None,
    )
    if base is None or not slots.is_a(base):
        return slots
    return call(base, (slots,), "Q2: dict(SLOTS)")


def _normalised_slots(slots):
    """The answered slot dict with upper-case letters and canonical vocabulary names.

    ``SLOTS`` arrives as plain data: a dict whose keys are all strings comes back as
    a dict, a dict subclass is copied into one (:func:`_as_plain_dict`); anything
    else (a list of pairs, a dict keyed by other objects) is not a slot dict.
    """
    slots = _as_plain_dict(slots)
    if type(slots) is not dict:
        fail(
            "Q2: SLOTS must be a dict from slot letter to quantity",
            "a dict such as {'A': 'W_k_h', ...}",
            describe(slots),
            "keys that are not all strings: the keys are the slot letters 'A' .. 'I'"
            if isinstance(slots, Remote)
            else None,
        )
    out = {}
    for key, value in slots.items():
        if type(value) is not str:
            fail(
                "Q2: slot letters and quantities are strings",
                "str: str",
                f"{key!r}: {describe(value)}",
            )
        name = _VOCAB_BY_LOWER.get(value.strip().lower())
        if name is None:
            fail(f"Q2: slot {key!r} holds an unknown quantity", f"one of {VOCABULARY}", repr(value))
        out[key.strip().upper()] = name
    return out


def _slot_cause(slot, got):
    expected = SLOT_KEY[slot]
    if got is None:
        return "this slot was left out of SLOTS"
    roles = {"W_q_h": "q", "W_k_h": "k", "W_v_h": "v", "Q_h": "q", "K_h": "k", "V_h": "v"}
    if got in roles and expected in roles and got.startswith("W_") == expected.startswith("W_"):
        return f"query, key and value paths mixed up: {PATH_ROLE[roles[expected]]}"
    if got.startswith("W_") != expected.startswith("W_"):
        return "a weight matrix and the activation it produces are swapped"
    return "follow the arrows: what enters and what leaves this slot?"


def check_q2_slots(ns: StudentNamespace, group: str) -> None:
    """Each slot of ``group`` holds the quantity that belongs there in the figure."""
    answered = _normalised_slots(answer(ns, "SLOTS", "Q2"))
    wrong = []
    for slot in SLOT_GROUPS[group]:
        got = answered.get(slot)
        if got != SLOT_KEY[slot]:
            wrong.append(f"slot {slot}: {got} ({_slot_cause(slot, got)})")
    if wrong:
        fail(f"Q2 ({group}): wrong quantities in " + "; ".join(wrong))
