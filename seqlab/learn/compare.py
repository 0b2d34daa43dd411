"""Compare a student's output with the reference's, leaf by leaf, naming what differs.

Outputs are nested dicts, tuples and lists of leaves (NumPy arrays, torch tensors, numbers, bytes).
A leaf's name is its path: ``grads["Wh"]``, ``output[0]``. :func:`structure_error` says what has the
wrong type or shape; :func:`first_difference` gives the first element outside the tolerance, with
its index, expected and actual value.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

RTOL, ATOL = 1e-6, 1e-8


def _is_tensor(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def _kind(x) -> str:
    if _is_tensor(x):
        return "torch.Tensor"
    if isinstance(x, np.ndarray):
        return "numpy.ndarray"
    return type(x).__name__


def _array(x) -> np.ndarray:
    if _is_tensor(x):
        return x.detach().cpu().double().numpy() if x.is_floating_point() else x.detach().cpu().numpy()
    return np.asarray(x)


def _number(x) -> bool:
    return isinstance(x, numbers.Number) or (isinstance(x, np.ndarray) and x.ndim == 0) or \
        isinstance(x, np.generic)


def _numbers(items) -> bool:
    """An empty list, or a list of plain numbers: compared as one array of values."""
    return all(isinstance(v, numbers.Number) or isinstance(v, np.generic) for v in items)


def structure_error(expected: Any, actual: Any, name: str):
    """None when ``actual`` has the form of ``expected``, else what differs, naming the part and both
    forms (a :class:`~seqlab.learn.words.Said`: English as a str, either language when rendered)."""
    from seqlab.learn.words import said
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return said("compare.dict_keys", name=name, keys=str(sorted(map(str, expected))), kind=_kind(actual))
        missing = [k for k in expected if k not in actual]
        if missing:
            return said("compare.no_key", name=name, keys=", ".join(repr(k) for k in missing),
                        has=str(sorted(map(repr, actual))))
        for key in expected:
            error = structure_error(expected[key], actual[key], f"{name}[{key!r}]")
            if error:
                return error
        return None
    if isinstance(expected, (tuple, list)):
        if not isinstance(actual, (tuple, list)):
            return said("compare.container_of", name=name, container=type(expected).__name__, n=len(expected),
                        kind=_kind(actual))
        if _numbers(expected):
            return None if _numbers(actual) else said("compare.numbers", name=name)   # compared as values
        if len(actual) != len(expected):
            return said("compare.items", name=name, n=len(expected), m=len(actual))
        for i, (e, a) in enumerate(zip(expected, actual)):
            error = structure_error(e, a, f"{name}[{i}]")
            if error:
                return error
        return None
    if isinstance(expected, (bytes, str)):
        return None if isinstance(actual, type(expected)) else \
            said("compare.type_is", name=name, type=type(expected).__name__, kind=_kind(actual))
    if _is_tensor(expected):
        if not _is_tensor(actual):
            return said("compare.tensor_shape", name=name, shape=str(tuple(expected.shape)), kind=_kind(actual))
        if tuple(actual.shape) != tuple(expected.shape):
            return said("compare.shape_is", name=name, got=str(tuple(actual.shape)), expected=str(tuple(expected.shape)))
        return None
    if isinstance(expected, np.ndarray) and expected.ndim > 0:
        if not isinstance(actual, np.ndarray):
            return said("compare.ndarray_shape", name=name, shape=str(expected.shape), kind=_kind(actual))
        if actual.shape != expected.shape:
            return said("compare.shape_is", name=name, got=str(actual.shape), expected=str(expected.shape))
        if expected.dtype == bool and actual.dtype != bool:
            return said("compare.bool_array", name=name, dtype=str(actual.dtype))
        if actual.dtype == object:
            return said("compare.objects", name=name)
        return None
    if _number(expected):
        if not _number(actual) or isinstance(actual, (str, bytes)):
            if isinstance(actual, np.ndarray):
                return said("compare.number_shape", name=name, kind=_kind(actual), shape=str(np.shape(actual)))
            return said("compare.number", name=name, kind=_kind(actual))
        return None
    return None


def leaf_pairs(expected: Any, actual: Any, name: str):
    """(name, expected leaf, actual leaf) in the expected value's order (the forms must agree)."""
    if isinstance(expected, dict):
        for key in expected:
            yield from leaf_pairs(expected[key], actual[key], f"{name}[{key!r}]")
    elif isinstance(expected, (tuple, list)) and not _numbers(expected):
        for i, (e, a) in enumerate(zip(expected, actual)):
            yield from leaf_pairs(e, a, f"{name}[{i}]")
    else:
        yield name, expected, actual


# the coarsest tolerance two values of these float dtypes can be held to (float32 rounds at about 1e-7
# relative, and a few operations accumulate that)
LOW_PRECISION = {"float32": (1e-4, 1e-5), "float16": (1e-2, 1e-3), "bfloat16": (2e-2, 1e-3)}


def tolerance(expected, actual, rtol: float, atol: float) -> tuple[float, float]:
    """(rtol, atol), widened to the precision of a float32 (or half) tensor or array among the two:
    a float32 result cannot match a float64 one to 1e-6."""
    for value in (expected, actual):
        widened = LOW_PRECISION.get(str(getattr(value, "dtype", "")).replace("torch.", ""))
        if widened:
            rtol, atol = max(rtol, widened[0]), max(atol, widened[1])
    return rtol, atol


def _leaf_difference(expected, actual, rtol, atol, equal_nan=False):
    if isinstance(expected, (bytes, str)):
        return None if expected == actual else ((), expected, actual)
    rtol, atol = tolerance(expected, actual, rtol, atol)
    e, a = _array(expected), _array(actual)
    if e.shape != a.shape:
        return ((), f"shape {e.shape}", f"shape {a.shape}")
    if e.dtype == bool or e.dtype.kind in "iu":
        bad = e != a
    else:
        a = a.astype(np.float64)
        bad = ~np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
    return index, e[index].item() if e.ndim else e.item(), a[index].item() if a.ndim else a.item()


def first_difference(expected: Any, actual: Any, name: str, rtol: float = RTOL, atol: float = ATOL,
                     equal_nan: bool = False):
    """None, or (element name with index, expected, actual) of the first value outside the tolerance.
    The forms must agree already (:func:`structure_error`)."""
    for leaf_name, e, a in leaf_pairs(expected, actual, name):
        found = _leaf_difference(e, a, rtol, atol, equal_nan)
        if found is not None:
            index, ev, av = found
            where = leaf_name + ("[" + ", ".join(map(str, index)) + "]" if index else "")
            return where, ev, av
    return None


def agrees(expected: Any, actual: Any, rtol: float = RTOL, atol: float = ATOL) -> bool:
    """Same form and every value within the tolerance (NaN where the other has NaN counts as agreeing:
    a mutant that overflows is recognised by its NaNs)."""
    return structure_error(expected, actual, "x") is None and \
        first_difference(expected, actual, "x", rtol, atol, equal_nan=True) is None


def show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return repr(value)
