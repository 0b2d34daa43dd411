"""The student's function beside the reference on the same inputs, as JSON-able data (for the
explorer's "yours" beside each widget).

    yours_and_reference("seqlab-learn", "attention", [((q, keys, values), {"mask": mask})])

returns {"implemented": bool, "not_implemented": bool, "timed_out": bool, "failure": str | None,
"calls": [{"yours", "reference", "error", "difference": {"where", "expected", "actual", "message"} | None,
"marks"}]}: the student's code runs in a child process with a time limit (seqlab.learn.runner), in a
sandbox where one runs, the reference here (a workspace file that links outside the workspace is
refused: WorkspaceError); only the part of the output the exercise checks is compared and returned. ``marks`` lists the path of every element
that differs (``["weights", 0, 1]``: key, then index), so a page can outline each one; values that
are not finite are the strings "NaN", "inf", "-inf" (JSON has no such numbers).
"""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np

from seqlab.jsonfile import to_json
from seqlab.learn import compare
from seqlab.learn.catalog import exercise
from seqlab.learn.runner import run_students
from seqlab.learn.sandbox import for_check
from seqlab.learn.workspace import exercise_file, progress_kept, progress_lock


def yours_and_reference(workspace, name: str, calls: list[tuple[tuple, dict]], time_limit: float = 5.0) -> dict:
    ex = exercise(name)
    if ex is None:
        raise ValueError(f"no Implement exercise {name!r}")
    path = exercise_file(workspace, name)           # WorkspaceError (a ValueError) for a link outside it
    if not path.is_file():
        return {"implemented": False, "not_implemented": False, "timed_out": False,
                "failure": f"{path} does not exist (seqlab learn start {name})", "calls": []}
    isolation = for_check()
    if isolation.kind == "bubblewrap":              # the student's code cannot see progress.json
        run = run_students([ex.job(path, calls, time_limit)], launcher=isolation.launcher())[0]
    else:
        with progress_lock(workspace), progress_kept(workspace):   # what the code writes there is undone
            run = run_students([ex.job(path, calls, time_limit)], launcher=isolation.launcher())[0]
    reference = ex.reference()
    out = {"implemented": not (run.calls and run.calls[0].not_implemented) and run.failure is None,
           "not_implemented": bool(run.calls and run.calls[0].not_implemented), "timed_out": run.timed_out,
           "failure": run.failure, "calls": []}
    for (args, kwargs), call in zip(calls, run.calls):
        expected = ex.compared(reference(*copy.deepcopy(args), **copy.deepcopy(kwargs)))
        entry = {"reference": _json(expected), "yours": None, "error": call.error,
                 "difference": None, "marks": []}
        if call.error is None:
            try:
                yours = ex.compared(call.output)
            except Exception:  # noqa: BLE001 - another form than the reference's
                yours = call.output
            entry["yours"] = _json(yours)
            problem = compare.structure_error(expected, yours, "output")
            if problem:
                entry["difference"] = {"where": "output", "expected": None, "actual": None, "message": str(problem)}
            else:
                found = compare.first_difference(expected, yours, "output", ex.rtol, ex.atol)
                if found:
                    where, e, a = found
                    entry["difference"] = {"where": where, "expected": _json(e),
                                           "actual": _json(a),
                                           "message": f"{where}: expected {compare.show(e)}, got {compare.show(a)}"}
                    entry["marks"] = differing_paths(expected, yours, ex.rtol, ex.atol)
        out["calls"].append(entry)
    return out


def differing_paths(expected, actual, rtol: float = compare.RTOL, atol: float = compare.ATOL,
                    limit: int = 500) -> list[list]:
    """The path of every element of ``actual`` that differs from ``expected`` (the forms agree):
    dict keys and list positions down to a leaf, then the element's index in it. At most ``limit``.

        differing_paths({"w": np.array([[1.0, 2.0]])}, {"w": np.array([[1.0, 3.0]])})  ->  [["w", 0, 1]]
    """
    found: list[list] = []

    def walk(e, a, path):
        if len(found) >= limit:
            return
        if isinstance(e, dict):
            for key in e:
                walk(e[key], a[key], [*path, str(key)])
        elif isinstance(e, (tuple, list)) and not compare._numbers(e):
            for i, (x, y) in enumerate(zip(e, a)):
                walk(x, y, [*path, i])
        elif isinstance(e, (bytes, str)):
            if e != a:
                found.append(path)
        else:
            x, y = compare._array(e), compare._array(a)
            if x.shape != y.shape:
                found.append(path)
                return
            if x.dtype == bool or x.dtype.kind in "iu":
                bad = x != y
            else:
                bad = ~np.isclose(y.astype(np.float64), x, rtol=rtol, atol=atol, equal_nan=True)
            if bad.ndim == 0:
                if bad:
                    found.append(path)
                return
            for index in np.argwhere(bad)[: limit - len(found)]:
                found.append([*path, *(int(i) for i in index)])

    walk(expected, actual, [])
    return found


def _json(value):
    """JSON-able data with NaN and infinities as the strings "NaN", "inf", "-inf", and anything that
    is not JSON (an object a student's function returned) as its repr, cut at 200 characters."""
    return to_json(value, non_finite="text", unknown="repr")
