"""attncourse.checks: comparisons that a student cell cannot fool."""

import builtins

import numpy as np
import pytest
import torch

from attncourse import checks
from attncourse.checks import GradingError


@pytest.fixture
def tampering():
    """Undo whatever a test rebinds, even when it fails."""
    yield
    checks.restore_pristine()


def test_check_close_accepts_close_and_names_the_mistake():
    ref = torch.arange(6.0).reshape(2, 3)
    assert checks.check_close("x", ref + 1e-12, ref, 1e-9) < 1e-9
    with pytest.raises(GradingError, match="likely cause: doubled"):
        checks.check_close("x", 2 * ref, ref, 1e-9, {"doubled": 2 * ref, "negated": -ref})


def test_check_close_names_numpy_mistakes_too():
    ref = np.ones((2, 2))
    with pytest.raises(GradingError, match="likely cause: zero"):
        checks.check_close("x", np.zeros((2, 2)), ref, 1e-9, {"zero": np.zeros((2, 2))})


def test_check_close_reports_a_shape_mismatch():
    with pytest.raises(GradingError, match=r"wrong output shape"):
        checks.check_close("x", torch.zeros(3, 2), torch.zeros(2, 3), 1e-9)


def test_values_that_claim_to_equal_anything_are_rejected():
    class Anything:
        def __eq__(self, other):
            return True

    class EqualTensor(torch.Tensor):
        def __eq__(self, other):
            return True

    with pytest.raises(GradingError, match="expected a tensor"):
        checks.check_close("x", Anything(), torch.zeros(2), 1e-9)
    with pytest.raises(GradingError, match="expected a tensor"):
        checks.check_close("x", torch.ones(2).as_subclass(EqualTensor), torch.zeros(2), 1e-9)
    with pytest.raises(GradingError, match="tuple of integers"):
        checks.check_shape("s", Anything(), (2, 3))
    with pytest.raises(GradingError, match="plain int"):
        checks.check_shape("s", (2, 3.0), (2, 3))


def test_comparisons_survive_rebound_torch_and_numpy(tampering):
    torch.allclose = lambda *args, **kwargs: True
    torch.testing.assert_close = lambda *args, **kwargs: None
    np.allclose = lambda *args, **kwargs: True
    torch.Tensor.__sub__ = lambda a, b: torch.zeros_like(a)
    torch.linalg.vector_norm = lambda *args, **kwargs: torch.tensor(0.0)
    with pytest.raises(GradingError):
        checks.check_close("x", torch.ones(3), torch.zeros(3) + 2, 1e-6)


def test_comparisons_survive_rebound_builtins(tampering):
    raised = None
    builtins.isinstance = lambda *args: True
    builtins.AssertionError = Exception
    try:
        checks.check_close("x", torch.ones(3), torch.zeros(3) + 2, 1e-6)
    except Exception as error:  # noqa: BLE001 - whatever came, it is judged below
        raised = error
    finally:
        checks.restore_pristine()
    assert type(raised) is GradingError
    assert not isinstance(1, str)


def test_restore_pristine_undoes_rebinding_of_torch_numpy_builtins_and_helpers(tampering):
    originals = (torch.allclose, np.allclose, builtins.isinstance, torch.nn.Linear.forward)
    torch.allclose = np.allclose = lambda *args, **kwargs: True
    builtins.isinstance = lambda *args: True
    torch.nn.Linear.forward = lambda self, x: x * 0
    checks.check_close = checks.fail = lambda *args, **kwargs: None
    checks.restore_pristine()
    assert (torch.allclose, np.allclose, builtins.isinstance, torch.nn.Linear.forward) == originals
    with pytest.raises(GradingError):
        checks.check_close("x", torch.ones(1), torch.zeros(1) + 2, 1e-6)


def test_protected_module_globals_are_restored(tampering):
    from attncourse.grading import attention_variants as av

    tol, check = av.VALUES_TOL, av.check_close
    av.VALUES_TOL = float("inf")
    av.check_close = lambda *args, **kwargs: 0.0
    checks.restore_pristine()
    assert (av.VALUES_TOL, av.check_close) == (tol, check)


def test_call_names_the_exception():
    def broken(x):
        return x @ torch.zeros(3, 4)

    with pytest.raises(GradingError, match="my_fn raised RuntimeError"):
        checks.call(broken, (torch.zeros(2, 2),), "my_fn")
    with pytest.raises(GradingError, match="expected a function"):
        checks.call(3, (), "my_fn")


def test_distinct_dims_are_distinct_and_seeded():
    a = checks.distinct_dims(checks.rng_for("t"), ["A", "B", "C", "D", "E"])
    b = checks.distinct_dims(checks.rng_for("t"), ["A", "B", "C", "D", "E"])
    assert a == b and len(set(a.values())) == 5


def test_methods_added_to_a_class_are_removed(tampering):
    sub = torch.Tensor.__sub__
    torch.Tensor.__sub__ = lambda a, b: torch.zeros_like(a)
    torch.nn.Linear.extra = lambda self: None
    checks.restore_pristine()
    assert torch.Tensor.__sub__ is sub and not hasattr(torch.nn.Linear, "extra")
    assert torch.equal(torch.ones(2) * 3 - torch.ones(2), torch.full((2,), 2.0))
