"""seqlab.jsonfile's writing side: to_json, the one converter of results to JSON types (the labs'
results, the explorer's widgets, the student's values beside the reference), against json and
NumPy/torch's own tolist computed here; and check_shape, which every reader of a results file uses
to name what the file lacks."""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import torch

from seqlab.jsonfile import NUMBER, check_shape, to_json


@dataclass
class Step:
    h: np.ndarray
    names: tuple


def test_arrays_tensors_scalars_dataclasses_tuples_and_bytes_become_plain_json():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(2, 3))
    t = torch.randn(3, 2, requires_grad=True)
    value = {"a": a, 3: (np.int64(7), np.float32(0.5), np.bool_(True)), "t": t,
             "step": Step(h=a[0], names=("x", b"\xff\x00")), "raw": bytearray(b"ab")}
    out = to_json(value)
    assert out == {"a": a.tolist(), "3": [7, 0.5, True], "t": t.detach().tolist(),
                   "step": {"h": a[0].tolist(), "names": ["x", "\xff\x00"]}, "raw": "ab"}
    assert json.loads(json.dumps(out, allow_nan=False)) == out  # nothing but JSON types
    assert [type(v) for v in out["3"]] == [int, float, bool]


NON_FINITE = {"x": np.array([1.0, np.nan, np.inf]), "y": -math.inf, "z": torch.tensor([float("nan")])}


@pytest.mark.parametrize("mode, expected", [
    ("null", {"x": [1.0, None, None], "y": None, "z": [None]}),
    ("text", {"x": [1.0, "NaN", "inf"], "y": "-inf", "z": ["NaN"]}),
])
def test_non_finite_numbers_become_null_or_text(mode, expected):
    out = to_json(NON_FINITE, non_finite=mode)
    assert out == expected
    json.dumps(out, allow_nan=False)


def test_non_finite_numbers_are_kept_or_refused():
    kept = to_json(NON_FINITE)
    assert math.isnan(kept["x"][1]) and kept["y"] == -math.inf
    with pytest.raises(ValueError, match="not finite"):
        to_json({"ok": [1.0], "bad": np.array([np.inf])}, non_finite="raise")
    assert to_json([1.0, 2], non_finite="raise") == [1.0, 2]


def test_objects_of_no_json_type_are_kept_or_shown_by_their_repr():
    thing = object()
    assert to_json([thing])[0] is thing
    shown = to_json({"o": thing, "f": Fraction(1, 4), "d": Decimal("0.5"), "c": 1 + 2j, "long": "x" * 300},
                    unknown="repr")
    assert shown == {"o": repr(thing), "f": 0.25, "d": 0.5, "c": "(1+2j)", "long": "x" * 300}


def test_the_labs_and_the_explorer_use_the_one_converter():
    import seqlab.explorer.api as api
    import seqlab.labs.results as results

    assert results.to_json is to_json and api.to_json is to_json


SHAPE = {"status": str, "models": {"*": {"layers": int, "curve": {"steps": [int], "loss": [(NUMBER, None)]},
                                        "bump": (dict, None)}}}
GOOD = {"status": "completed", "models": {"a": {"layers": 1, "curve": {"steps": [1, 2], "loss": [0.5, None]},
                                                "bump": None}}, "extra": "ignored"}


@pytest.mark.parametrize("change, message", [
    (lambda d: d.pop("status"), 'r.json: no "status"'),
    (lambda d: d["models"]["a"].pop("curve"), 'r.json: models.a has no "curve"'),
    (lambda d: d["models"]["a"]["curve"]["steps"].append("3"), "r.json: models.a.curve.steps[2] should be a number, "
                                                                "found a string"),
    (lambda d: d["models"]["a"].update(layers=True), "r.json: models.a.layers should be a number, found true or false"),
    (lambda d: d["models"]["a"].update(layers=None), "r.json: models.a.layers should be a number, found null"),
    (lambda d: d["models"]["a"]["curve"].update(loss={}), "r.json: models.a.curve.loss should be a list, found an "
                                                          "object"),
    (lambda d: d.update(models=[]), "r.json: models should be an object, found a list"),
    (lambda d: d["models"]["a"].update(bump=[1]), "r.json: models.a.bump should be an object or null, found a list"),
])
def test_a_shape_check_names_the_first_place_that_lacks_what_is_asked(change, message):
    check_shape(GOOD, SHAPE, "r.json")  # the good document passes
    damaged = copy.deepcopy(GOOD)
    change(damaged)
    with pytest.raises(ValueError) as raised:
        check_shape(damaged, SHAPE, "r.json")
    assert str(raised.value) == message
