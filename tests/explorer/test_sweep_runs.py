"""`seqlab explore --run SWEEPDIR` opens every trained run of the sweep, as `seqlab compare` does."""

from __future__ import annotations

import json
import shutil

from seqlab.cli import main
from seqlab.explorer.runs import RunRegistry
from seqlab.explorer.server import ExplorerServer
from seqlab.sweep.report import compare_run_dirs
from tests.test_faults_inference import write_run


def _sweep(tmp_path):
    run = write_run(tmp_path / "made", vocab_size=257)
    sweep = tmp_path / "sweeps" / "lr"
    for name in ("lr=0.001", "lr=0.003"):
        shutil.copytree(run, sweep / name)
    (sweep / "lr=0.01").mkdir()  # planned, not trained yet
    runs = [{"name": n} for n in ("lr=0.001", "lr=0.003", "lr=0.01")]
    (sweep / "sweep.json").write_text(json.dumps({"runs": runs}))
    return sweep


def test_a_sweep_directory_stands_for_its_trained_runs(tmp_path, capsys, monkeypatch):
    sweep = _sweep(tmp_path)
    registry = RunRegistry([str(sweep)])
    assert [(r.id, r.kind, r.problem) for r in registry.runs] == [
        (str(sweep / "lr=0.001"), "lm", None), (str(sweep / "lr=0.003"), "lm", None)]
    # the same runs compare finds, less the one not trained yet (the oracle: compare's own list)
    assert [str(p) for _, p in compare_run_dirs([sweep])][:2] == [r.id for r in registry.runs]

    def stop(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(ExplorerServer, "serve_forever", stop)
    main(["explore", "--run", str(sweep), "--port", "0", "--no-browser"])
    assert "not a seqlab run" not in capsys.readouterr().err


def test_a_sweep_with_no_trained_run_is_still_named(tmp_path):
    sweep = tmp_path / "empty_sweep"
    sweep.mkdir()
    (sweep / "sweep.json").write_text(json.dumps({"runs": [{"name": "a"}]}))
    (registered,) = RunRegistry([str(sweep)]).runs
    assert registered.id == str(sweep) and registered.kind == "invalid"
