"""The student's function beside the reference on the same inputs, as JSON-able data (for the
explorer's "yours" beside each widget).

    yours_and_reference("seqlab-learn", "attention", [((q, keys, values), {"mask": mask})])

returns {"implemented": bool, "failure": str | None, "calls": [{"yours", "reference", "error",
"difference": {"where", "expected", "actual"} | None}]}: the student's code runs in a child
process with a time limit (seqlab.learn.runner), the reference here; only the part of the output
the exercise checks is compared and returned.
"""

from __future__ import annotations

import copy
from pathlib import Path

from seqlab.learn import compare
from seqlab.learn.catalog import exercise
from seqlab.learn.runner import jsonable, run_student


def yours_and_reference(workspace, name: str, calls: list[tuple[tuple, dict]], time_limit: float = 5.0) -> dict:
    ex = exercise(name)
    if ex is None:
        raise ValueError(f"no Implement exercise {name!r}")
    path = Path(workspace) / f"{name}.py"
    if not path.is_file():
        return {"implemented": False, "failure": f"{path} does not exist (seqlab learn start {name})", "calls": []}
    run = run_student(path, name, calls, time_limit, arg_names=ex.arg_names)
    reference = ex.reference()
    out = {"implemented": not (run.calls and run.calls[0].not_implemented) and run.failure is None,
           "failure": run.failure, "calls": []}
    for (args, kwargs), call in zip(calls, run.calls):
        expected = ex.compared(reference(*copy.deepcopy(args), **copy.deepcopy(kwargs)))
        entry = {"reference": jsonable(expected), "yours": None, "error": call.error, "difference": None}
        if call.error is None:
            try:
                yours = ex.compared(call.output)
            except Exception:  # noqa: BLE001 - another form than the reference's
                yours = call.output
            entry["yours"] = jsonable(yours)
            problem = compare.structure_error(expected, yours, "output")
            if problem:
                entry["difference"] = {"where": "output", "expected": None, "actual": None, "message": problem}
            else:
                found = compare.first_difference(expected, yours, "output", ex.rtol, ex.atol)
                if found:
                    where, e, a = found
                    entry["difference"] = {"where": where, "expected": jsonable(e), "actual": jsonable(a),
                                           "message": f"{where}: expected {compare.show(e)}, got {compare.show(a)}"}
        out["calls"].append(entry)
    return out
