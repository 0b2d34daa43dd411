"""Central finite differences: the oracle every hand-written gradient in the labs is checked against.

The check passes when the maximum relative error is below 1e-7 (float64), an entry's error being
|a - b| / max(|a| + |b|, 1e-2): an entry below the floor (GRADIENT_FLOOR) must agree to 1e-9
absolute. A central difference rounds by about machine_eps * |loss| / eps ~ 2e-11 on its own, and
how it rounds depends on the BLAS kernel: without the floor, an entry of 1e-4 passed at 4.5e-8 with
OpenBLAS's Haswell kernel and failed at 1.1e-7 with its Sandybridge one; with it, every check's
worst error is 7.8e-9 under each (tests/labs/test_gradients_any_cpu.py).

Step size: a central difference has truncation error ~ eps^2 |f'''| and rounding error
~ machine_eps |f| / eps; in float64 the two balance near eps = cbrt(2.2e-16) ~ 6e-6. `check_gradients`
uses eps = 1e-5 (CHECK_EPS), whose total error is ~1e-11 absolute; with 1e-6 the rounding term
(~1e-10) alone would push the relative error of a legitimately small entry (~1e-4) above 1e-7.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

TOLERANCE = 1e-7
CHECK_EPS = 1e-5
# Floor of the denominator, so two exact zeros give 0 rather than 0/0. (Central differences of a
# function that does not depend on an entry at all are exactly 0, matching an analytic exact 0.)
TINY = 1e-12
# check_gradients' floor: below it an entry is held to TOLERANCE * GRADIENT_FLOOR = 1e-9 absolute, 50
# times a central difference's own rounding, so that the BLAS kernel's rounding cannot decide a check
GRADIENT_FLOOR = 1e-2


def numerical_gradient(f: Callable[[np.ndarray], float], x: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Central-difference gradient of the scalar `f(x)` with respect to every entry of `x`.

    x: float64 array of any shape; it is perturbed in place one entry at a time and restored, so
    `f` may also read it through a closure. Returns an array shaped like `x`.
    (f(x + eps e_i) - f(x - eps e_i)) / (2 eps) has error O(eps^2), unlike the one-sided O(eps).
    """
    if not isinstance(x, np.ndarray) or x.dtype != np.float64:
        raise TypeError(f"numerical_gradient needs a float64 ndarray, got {type(x).__name__} "
                        f"{getattr(x, 'dtype', '')}")
    grad = np.zeros_like(x)
    flat, flat_grad = x.reshape(-1), grad.reshape(-1)   # views: writing flat[i] perturbs x
    for i in range(flat.size):
        original = flat[i]
        flat[i] = original + eps
        f_plus = float(f(x))
        flat[i] = original - eps
        f_minus = float(f(x))
        flat[i] = original
        flat_grad[i] = (f_plus - f_minus) / (2.0 * eps)
    return grad


def relative_error(a: np.ndarray, b: np.ndarray, tiny: float = TINY) -> float:
    """Max over entries of |a - b| / max(|a| + |b|, tiny). Shapes must match."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(f"relative_error: shapes differ, {a.shape} vs {b.shape}")
    if a.size == 0:
        return 0.0
    denominator = np.maximum(np.abs(a) + np.abs(b), tiny)
    return float(np.max(np.abs(a - b) / denominator))


def check_gradients(
    loss_fn: Callable[[], float],
    params: dict[str, np.ndarray],
    analytic: dict[str, np.ndarray],
    eps: float = CHECK_EPS,
) -> dict[str, float]:
    """Compare analytic gradients with central differences, one parameter array at a time.

    loss_fn: takes no arguments and reads the arrays in `params` (they are perturbed in place).
    params: name -> float64 array; analytic: name -> gradient of the same shape.
    Returns name -> max relative error, the denominator floored at GRADIENT_FLOOR.
    """
    missing = set(params) - set(analytic)
    if missing:
        raise KeyError(f"check_gradients: no analytic gradient for {sorted(missing)}")
    errors = {}
    for name, value in params.items():
        if analytic[name].shape != value.shape:
            raise ValueError(f"check_gradients: gradient of {name!r} has shape {analytic[name].shape}, "
                             f"parameter has {value.shape}")
        numeric = numerical_gradient(lambda _x: loss_fn(), value, eps)
        errors[name] = relative_error(analytic[name], numeric, GRADIENT_FLOOR)
    return errors


def passed(error: float, tolerance: float = TOLERANCE) -> bool:
    return bool(np.isfinite(error) and error < tolerance)
