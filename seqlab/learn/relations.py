"""How one expected output differs from the student's: a factor, a transpose, a shift, which positions.

Pure functions of two values (nested dicts, tuples and arrays in the checked form), in words said
later where they describe. :mod:`seqlab.learn.diagnosis` builds its recognisers and its description
of an unrecognised difference from them.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import numpy as np

from seqlab.learn import compare

Path = tuple  # a leaf's place in an output: ("xs",), (1, "Wx"), ...


def pick(value, path: Path):
    for key in path:
        value = value[key]
    return value


def leaves(value, path: Path = ()) -> Iterator[tuple[Path, Any]]:
    """(path, leaf) of every leaf, in compare.leaf_pairs's order."""
    if isinstance(value, dict):
        for key in value:
            yield from leaves(value[key], (*path, key))
    elif isinstance(value, (tuple, list)) and not compare._numbers(value):
        for i, item in enumerate(value):
            yield from leaves(item, (*path, i))
    else:
        yield path, value


def leaf_name(path: Path) -> str:
    return "output" + "".join(f"[{k!r}]" for k in path)


def array(x) -> np.ndarray:
    a = compare._array(x)
    return a.astype(np.float64) if a.dtype.kind in "biuf" else a


def close(expected, actual, rtol: float = compare.RTOL, atol: float = compare.ATOL) -> bool:
    """Same form and values within the tolerance (NaN where the other has NaN agrees)."""
    if isinstance(expected, dict) or isinstance(expected, (tuple, list)) and not compare._numbers(expected):
        return compare.agrees(expected, actual, rtol, atol)
    if isinstance(expected, (bytes, str)) or isinstance(actual, (bytes, str)):
        return expected == actual
    rtol, atol = compare.tolerance(expected, actual, rtol, atol)
    try:
        e, a = array(expected), array(actual)
    except Exception:  # noqa: BLE001 - not numbers: equal or not
        return expected == actual
    return e.shape == a.shape and e.dtype.kind != "O" and a.dtype.kind != "O" and \
        bool(np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True))


# --- relations between one expected leaf and the student's ---------------------------------------------------
def factor(expected, actual, rtol: float = 1e-6, atol: float = 1e-9) -> float | None:
    """c when actual = c * expected everywhere (c != 1, expected not all zero), else None. Entries that
    are not finite (masked scores of -inf) must be the same in both and are left out."""
    e, a = array(expected), array(actual)
    if e.shape != a.shape or e.dtype.kind not in "fiu":
        return None
    finite = np.isfinite(e) & np.isfinite(a)
    if not np.array_equal(e[~finite], a[~finite], equal_nan=True):
        return None
    e, a = e[finite], a[finite]
    norm = float(np.sum(e * e))
    if norm == 0:
        return None
    c = float(np.sum(e * a)) / norm
    if math.isclose(c, 1.0, rel_tol=1e-9) or not np.allclose(a, c * e, rtol=rtol, atol=atol):
        return None
    return c


def named_factor(c: float, known: dict[str, float], rel: float = 1e-6) -> str | None:
    """The name in ``known`` of the value c (e.g. {"1/T": 0.25}), or None."""
    return next((name for name, value in known.items() if math.isclose(c, value, rel_tol=rel)), None)


def is_transposed(expected, actual, rtol: float = 1e-6, atol: float = 1e-8) -> bool:
    e, a = array(expected), array(actual)
    if e.ndim < 2 or close(e, a, rtol, atol):
        return False
    t = np.swapaxes(e, -1, -2)
    return t.shape == a.shape and close(t, a, rtol, atol)


def shift(expected, actual, axis: int = 0, rtol: float = 1e-6, atol: float = 1e-8) -> int | None:
    """+1 when actual[t] = expected[t - 1] along ``axis`` (one position late), -1 when actual[t] =
    expected[t + 1] (one early), for every t the two share; None otherwise."""
    e, a = array(expected), array(actual)
    if e.shape != a.shape or e.ndim == 0 or e.shape[axis] < 2 or close(e, a, rtol, atol):
        return None
    e, a = np.moveaxis(e, axis, 0), np.moveaxis(a, axis, 0)
    if close(e[:-1], a[1:], rtol, atol):
        return 1
    if close(e[1:], a[:-1], rtol, atol):
        return -1
    return None


def differing(expected, actual, axis: int = 0, rtol: float = 1e-6, atol: float = 1e-8) -> list[int]:
    """Indices along ``axis`` where any element differs."""
    e, a = array(expected), array(actual)
    if e.shape != a.shape or e.ndim == 0:
        return []
    if e.dtype.kind == "b" or e.dtype.kind in "iu" and a.dtype.kind in "biu":
        bad = e != a
    else:
        bad = ~np.isclose(a, e, rtol=rtol, atol=atol, equal_nan=True)
    other = tuple(k for k in range(bad.ndim) if k != axis % bad.ndim)
    return [int(i) for i in np.flatnonzero(bad.any(axis=other) if other else bad)]


def indices_text(indices: list[int], size: int):
    """0, 1, 2 / 0..5 / all (words said later)."""
    from seqlab.learn.words import said
    if len(indices) == size and size > 1:
        return said("relation.all")
    if len(indices) > 3 and indices == list(range(indices[0], indices[-1] + 1)):
        return f"{indices[0]}..{indices[-1]}"
    shown = ", ".join(map(str, indices[:8])) + (", ..." if len(indices) > 8 else "")
    return shown


def axis_said(name: str, many: bool = False):
    """An axis's name (an exercise's ``axes``: "time step", "query row") in words said later; a name
    words.toml does not know is said as it is."""
    from seqlab.learn.words import entry, said
    table = "axes_plural" if many else "axes"
    try:
        entry(f"{table}.{name}")
    except KeyError:
        return plural(name) if many else name
    return said(f"{table}.{name}")


def positions(expected, actual, axis_name: str, axis: int = 0, rtol: float = 1e-6, atol: float = 1e-8):
    """'time steps 0, 1 differ (time step 2 is right)' along one axis (words said later); None when
    nothing differs, or everything does (then it is no help)."""
    from seqlab.learn.words import said
    e = array(expected)
    if e.ndim == 0:
        return None
    bad = differing(expected, actual, axis, rtol, atol)
    size = e.shape[axis]
    if not bad or len(bad) > 1 and len(bad) == size:
        return None
    right = [i for i in range(size) if i not in bad]
    text = said("relation.many_differ", axes=axis_said(axis_name, True), indices=indices_text(bad, size)) \
        if len(bad) > 1 else said("relation.one_differs", axis=axis_said(axis_name), index=bad[0])
    if right:
        text = said("relation.one_right", text=text, axis=axis_said(axis_name), index=right[0]) if len(right) == 1 \
            else said("relation.many_right", text=text, axes=axis_said(axis_name, True), indices=indices_text(right, size))
    return text


def plural(noun: str) -> str:
    """'time step' -> 'time steps', 'query row' -> 'query rows'."""
    return noun if noun.endswith("s") else noun + "s"


def relation(expected, actual, rtol: float = 1e-6, atol: float = 1e-8, axis_names: tuple = ()):
    """How one leaf differs, in words said later: NaN, a sign, a constant factor, a transpose, a shift, and where."""
    from seqlab.learn.words import said
    if isinstance(expected, (bytes, str)):
        return said("relation.str_is", got=repr(actual), expected=repr(expected))
    try:
        e, a = array(expected), array(actual)
    except Exception:  # noqa: BLE001
        return said("relation.other_kind")
    if e.shape != a.shape:
        return said("relation.shape", got=str(a.shape), expected=str(e.shape))
    if a.dtype.kind == "f" and not np.all(np.isfinite(a)) and np.all(np.isfinite(e)):
        bad = np.argwhere(~np.isfinite(a)) if a.ndim else []
        kind = "NaN" if np.isnan(a).any() else "inf"
        return said("relation.non_finite_at", kind=kind, at=", ".join(map(str, bad[0]))) if len(bad) else \
            said("relation.non_finite", kind=kind)
    if a.dtype.kind in "fiu" and e.dtype.kind in "fiu" and np.all(a == 0) and np.any(e != 0):
        return said("relation.zeros")
    c = factor(e, a, max(rtol, 1e-6), atol)
    if c is not None:
        return said("relation.sign") if math.isclose(c, -1, rel_tol=1e-6) else said("relation.factor", c=f"{c:.6g}")
    if is_transposed(e, a, rtol, atol):
        return said("relation.transposed")
    for axis in range(min(e.ndim, 2)):
        s = shift(e, a, axis, rtol, atol)
        if s is not None:
            name = axis_said(axis_names[axis]) if axis < len(axis_names) and axis_names[axis] else \
                said("relation.axis_n", n=axis)
            return said("relation.late" if s > 0 else "relation.early", axis=name)
    if e.ndim == 0:
        return said("relation.str_is", got=compare.show(a.item()), expected=compare.show(e.item()))
    parts = []
    for axis in range(min(e.ndim, 2)):
        name = axis_names[axis] if axis < len(axis_names) and axis_names[axis] else ("row" if axis == 0 else "column")
        text = positions(e, a, name, axis, rtol, atol)
        if text is not None:
            parts.append(text)
    if not parts:
        return said("relation.every_differs", axis=axis_said(axis_names[0] if axis_names and axis_names[0] else "row"))
    return _joined(parts, "describe.joined")


def _joined(parts: list, key: str):
    """Words said later joined two by two with ``key`` ("{a}; {b}" or "{a}, {b}")."""
    from seqlab.learn.words import said
    joined = parts[0]
    for part in parts[1:]:
        joined = said(key, a=joined, b=part)
    return joined


def listed(items: list, key: str = "describe.listed"):
    """``items`` (case labels, names) joined with ", " in words said later (Chinese: "、"), or with
    the text ``key`` ("describe.joined": "; ")."""
    return _joined(list(items), key)


def axes_of(exercise, path: Path) -> tuple:
    """The names the exercise gives the axes of the leaf at ``path`` (by its last key or index)."""
    axes = getattr(exercise, "axes", None) or {}
    return axes.get(path[-1], ()) if path else axes.get("", ())
