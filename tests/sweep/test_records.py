"""seqlab.sweep.records reads a run's config.json and log.jsonl through the run format (seqlab.runs),
so a damaged file gets the run format's message naming the file and line, and a torn last log line
(a kill mid-append) is dropped as everywhere else."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from seqlab.sweep.records import read_run

RECORDS = Path(__file__).resolve().parents[2] / "seqlab" / "sweep" / "records.py"


def _run(tmp_path: Path, config: str | None, log: str) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    if config is not None:
        (run / "config.json").write_text(config)
    (run / "log.jsonl").write_text(log)
    return run


LOG = "".join(json.dumps(r) + "\n" for r in ({"step": 10, "wallclock": 1.0, "tokens": 100, "train_loss": 2.5},
                                             {"step": 20, "wallclock": 2.0, "tokens": 200, "train_loss": 2.0,
                                              "val_loss": 2.2}))


def test_damaged_config_names_the_file_and_line(tmp_path):
    run = _run(tmp_path, '{"max_steps": 20,\n "lr": }', LOG)
    with pytest.raises(ValueError, match=rf"{run / 'config.json'}, line 2: invalid JSON"):
        read_run(run)
    (run / "config.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"config.json: expected a JSON object of settings, found list"):
        read_run(run)
    (run / "config.json").write_bytes(b'{"max_steps": "\xff"}')
    with pytest.raises(ValueError, match=r"config.json: not UTF-8 text"):
        read_run(run)


def test_a_torn_last_log_line_is_dropped_and_a_torn_middle_line_named(tmp_path):
    run = _run(tmp_path, json.dumps({"max_steps": 20}), LOG + '{"step": 3')
    record = read_run(run)
    assert (record.status, record.steps, record.final_val_loss, record.final_train_loss) == ("finished", 20, 2.2, 2.0)
    (run / "log.jsonl").write_text('{"step": 3\n' + LOG)
    with pytest.raises(ValueError, match=rf"{run / 'log.jsonl'}, line 1: invalid JSON"):
        read_run(run)


def test_a_run_without_config_is_pending_or_unknown(tmp_path):
    run = _run(tmp_path, None, "")
    assert read_run(run).status == "pending"
    (run / "log.jsonl").write_text(LOG)
    assert read_run(run).status == "unknown"  # a log but no length to compare it with


def test_records_reads_run_files_through_the_run_format_only():
    tree = ast.parse(RECORDS.read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert {"seqlab.runs.directory", "seqlab.runs.log"} <= imported
    assert not any(module.startswith("seqlab.training") for module in imported if module)
    # reading a run's records (the explorer's compare panel does) imports no training module
    code = ("import sys, seqlab.sweep.records as r\nr.read_run(sys.argv[1])\n"
            "print(sorted(m for m in sys.modules if m.startswith('seqlab.training')))")
    result = subprocess.run([sys.executable, "-c", code, str(RECORDS.parent)], capture_output=True, text=True,
                            env={"PYTHONPATH": str(RECORDS.parents[2]), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"
