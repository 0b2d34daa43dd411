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

from seqlab.jsonfile import NUMBER, check_shape, dumps, from_json, to_json


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
    ("text", {"x": [1.0, "NaN", "inf"], "y": "-inf", "z": ["NaN"]}),
    ("null", {"x": [1.0, None, None], "y": None, "z": [None]}),
])
def test_non_finite_numbers_become_text_by_default_or_null(mode, expected):
    out = to_json(NON_FINITE, non_finite=mode)
    assert out == expected
    json.dumps(out, allow_nan=False)
    assert to_json(NON_FINITE) == to_json(NON_FINITE, non_finite="text")  # the project's one form is the default


def test_non_finite_numbers_are_kept_or_refused_when_asked():
    kept = to_json(NON_FINITE, non_finite="keep")
    assert math.isnan(kept["x"][1]) and kept["y"] == -math.inf
    with pytest.raises(ValueError, match="not finite"):
        to_json({"ok": [1.0], "bad": np.array([np.inf])}, non_finite="raise")
    assert to_json([1.0, 2], non_finite="raise") == [1.0, 2]


def test_dumps_never_refuses_and_from_json_reads_the_numbers_back():
    value = {"loss": float("nan"), "norms": [1.5, math.inf, -math.inf], "name": "lr=1e-2", "step": 3}
    text = dumps(value)
    # strict JSON: no bare NaN / Infinity token (json.loads would accept those; parse_constant refuses them)
    strict = json.loads(text, parse_constant=lambda token: pytest.fail(f"bare {token} in {text}"))
    assert strict == {"loss": "NaN", "norms": [1.5, "inf", "-inf"], "name": "lr=1e-2", "step": 3}
    back = from_json(strict)
    assert math.isnan(back["loss"]) and back["norms"] == [1.5, math.inf, -math.inf]
    assert back["name"] == "lr=1e-2" and back["step"] == 3
    assert [float(t) for t in ("NaN", "inf", "-inf")][1:] == [math.inf, -math.inf]  # Python's float reads the form


def test_a_diverging_runs_log_is_written_and_read_back(tmp_path):
    """A NaN loss row in log.jsonl: written (never refused: the step where a run diverges is when its
    log matters), strict JSON, and read back as the float; an old log with a bare NaN still loads."""
    from seqlab.runs.log import JsonlLog, read_jsonl

    path = tmp_path / "log.jsonl"
    log = JsonlLog(path)
    log.write({"step": 1, "train_loss": 2.5, "grad_norm": 1.0})
    log.write({"step": 2, "train_loss": float("nan"), "grad_norm": math.inf})
    log.close()
    lines = path.read_text().splitlines()
    assert json.loads(lines[1], parse_constant=lambda token: pytest.fail(token)) == \
        {"step": 2, "train_loss": "NaN", "grad_norm": "inf"}
    first, second = read_jsonl(path)
    assert first == {"step": 1, "train_loss": 2.5, "grad_norm": 1.0}
    assert second["step"] == 2 and math.isnan(second["train_loss"]) and second["grad_norm"] == math.inf
    resumed = JsonlLog(path, resume_step=2)  # a resume rewrites the kept records through the same writer
    resumed.close()
    assert path.read_text().splitlines() == lines
    old = tmp_path / "old.jsonl"
    old.write_text('{"step": 5, "train_loss": NaN, "grad_norm": Infinity}\n')  # as json.dumps wrote it before
    (record,) = read_jsonl(old)
    assert math.isnan(record["train_loss"]) and record["grad_norm"] == math.inf


def test_the_paths_results_and_the_sweep_write_non_finite_numbers_in_the_one_form(tmp_path):
    from seqlab.seq2seq.paths.results import new_results, read_results, write_results
    from seqlab.seq2seq.paths.settings import PathsSettings
    from seqlab.sweep.records import write_outcome
    from seqlab.sweep.report import write_json

    results = new_results(PathsSettings(), fast=True, seed=0)
    results["tasks"]["copy"] = {"archs": {"rnn": {"parameters": 10, "steps": 4, "exact_match": 0.5, "by_length": {},
                                                  "train_loss": float("nan")}}}
    write_results(tmp_path, results)
    strict = json.loads((tmp_path / "results.json").read_text(), parse_constant=lambda token: pytest.fail(token))
    assert strict["tasks"]["copy"]["archs"]["rnn"]["train_loss"] == "NaN"
    assert math.isnan(read_results(tmp_path)["tasks"]["copy"]["archs"]["rnn"]["train_loss"])
    write_json(tmp_path / "sweep.json", {"runs": [{"name": "lr=10", "final_val_loss": math.inf}]})
    assert json.loads((tmp_path / "sweep.json").read_text())["runs"][0]["final_val_loss"] == "inf"
    write_outcome(tmp_path / "run", "diverged", reason="the training loss is nan at step 3", peak_flops=math.nan,
                  device="cpu")
    assert json.loads((tmp_path / "run" / "sweep_outcome.json").read_text())["peak_flops"] == "NaN"


def test_runs_log_paths_and_sweep_write_json_only_through_the_one_writer():
    """No json.dump(s) in the writers of log.jsonl, the paths results and the sweep's files."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "seqlab"
    files = [root / "runs" / "log.py", root / "seq2seq" / "paths" / "results.py", *sorted((root / "sweep").glob("*.py"))]
    calls = [f"{path.relative_to(root)}:{node.lineno}" for path in files for node in ast.walk(ast.parse(path.read_text()))
             if isinstance(node, ast.Attribute) and node.attr in ("dump", "dumps")
             and isinstance(node.value, ast.Name) and node.value.id == "json"]
    assert calls == []


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
