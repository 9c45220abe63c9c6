"""Run one hidden test in the judge and turn its outcome into the test cell's outputs.

The outcome is written as nbgrader reads it (an ``error`` output fails the
cell, none passes), so ``SaveAutoGrades``, feedback and formgrader show the
judge's verdict. Only the judge writes a test cell's outputs.
"""

import importlib
import logging
import secrets
from collections.abc import Callable

import nbformat
from nbformat.notebooknode import NotebookNode

from attncourse.judge import checks, rules
from attncourse.judge.remote import KernelFault, StudentNamespace, StudentRaised

log = logging.getLogger(__name__)


def checks_of(assignment: str, module: str | None = None) -> dict[str, Callable]:
    """grade_id -> check function of ``assignment``: ``CHECKS`` of ``module``, by default
    ``attncourse.grading.<assignment>`` (an assignment's grading module is found by its name)."""
    return importlib.import_module(module or f"attncourse.grading.{assignment}").CHECKS


def new_secret() -> str:
    """A fresh per-run secret: every hidden input is drawn from it, nothing precomputed matches."""
    return secrets.token_hex(16)


def run_check(
    check: Callable, ns: StudentNamespace, secret: str, test_index: int | None = None
) -> str | None:
    """None when ``check(ns)`` passes, else the failure message (expected, got, likely cause).

    With ``test_index`` (the test cell's place in the notebook), the import rule is judged
    first: an answer that imports beyond the course's first cell fails every test of its part.
    """
    try:
        with checks.secret_scope(secret):
            if test_index is not None:
                rules.assert_imports_in_first_cell(ns, test_index)
            check(ns)
    except checks.GradingError as error:
        return str(error)
    except StudentRaised as error:
        return f"your code raised {error.kind} while it was being checked: {error.message}"
    except KernelFault as error:
        return f"the check could not be completed: {error}"
    except AssertionError as error:
        return str(error) or "the check failed"
    except Exception as error:  # noqa: BLE001 - a check that cannot read the answer fails it
        log.warning(
            "check %s could not judge the answer: %r", getattr(check, "__name__", check), error
        )
        return (
            "the answer could not be checked "
            f"({type(error).__name__}: {str(error)[:300]}); "
            "likely cause: it returned something of an unexpected kind"
        )
    return None


def outputs(message: str | None) -> list[NotebookNode]:
    """nbformat outputs for a verdict: nothing for a pass, one GradingError for a failure."""
    if message is None:
        return [
            nbformat.v4.new_output(
                "display_data", data={"text/plain": "passed (checked by the grader)"}
            )
        ]
    return [
        nbformat.v4.new_output(
            "error",
            ename="GradingError",
            evalue=message,
            traceback=[f"\x1b[0;31mGradingError\x1b[0m: {message}"],
        )
    ]
