"""Every exercise of the catalog has an independent, loop-style implementation in tests/learn (the
NumPy and PyTorch test modules check that each passes); a new exercise without one fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from seqlab.learn.catalog import NUMPY_NAMES, TORCH_NAMES, all_exercises

HERE = Path(__file__).resolve().parent
SCALAR = {"lr_cosine_schedule"}        # a function of one number: nothing to loop over


def _loops(module: str) -> dict:
    spec = importlib.util.spec_from_file_location(f"learn_{module}_loops", HERE / f"{module}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded.LOOPS


def test_every_exercise_has_an_independent_loop_style_implementation():
    loops = {"numpy": _loops("test_numpy_exercises"), "torch": _loops("test_torch_exercises")}
    names = [e.name for e in all_exercises()]
    assert sorted(names) == sorted((*NUMPY_NAMES, *TORCH_NAMES))
    missing = [e.name for e in all_exercises() if e.name not in loops[e.kind]]
    assert not missing, f"no independent implementation in tests/learn for {missing}"
    for kind, sources in loops.items():
        for name, source in sources.items():
            assert f"def {name}(" in source, name
            assert name in SCALAR or "for " in source, f"{name}: the independent implementation is meant to loop"
            assert "torch.nn.functional" not in source, name
