"""Every hand-written backward pass against central differences (< 1e-7 max relative error)."""

import numpy as np
import pytest

from seqlab.labs.checks import GRADIENT_CHECKS
from seqlab.labs.gradcheck import (
    check_gradients,
    numerical_gradient,
    passed,
    relative_error,
)


@pytest.mark.parametrize("name", list(GRADIENT_CHECKS))
def test_gradient_check(name):
    errors = GRADIENT_CHECKS[name]()
    assert errors, "a check must compare at least one parameter"
    assert all(passed(e) for e in errors.values()), errors


def test_numerical_gradient_matches_known_derivative():
    x = np.array([0.3, -1.2, 2.0])
    grad = numerical_gradient(lambda v: float(np.sum(np.sin(v) * v)), x)
    np.testing.assert_allclose(grad, np.cos(x) * x + np.sin(x), rtol=1e-8)
    np.testing.assert_array_equal(x, [0.3, -1.2, 2.0])     # restored after perturbation


def test_check_catches_a_wrong_gradient():
    w = np.array([1.0, 2.0])
    errors = check_gradients(lambda: float(np.sum(w ** 3)), {"w": w}, {"w": 3 * w ** 2 * 1.001})
    assert not passed(errors["w"])
    assert errors["w"] == pytest.approx(0.001 / 2.001, rel=1e-4)


def test_relative_error_exact_zeros_agree_and_shapes_checked():
    assert relative_error(np.zeros(3), np.zeros(3)) == 0.0
    with pytest.raises(ValueError, match="shapes differ"):
        relative_error(np.zeros(2), np.zeros(3))
    with pytest.raises(TypeError, match="float64"):
        numerical_gradient(lambda v: 0.0, np.zeros(2, dtype=np.float32))
