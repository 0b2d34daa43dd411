"""--wandb and --tensorboard for every run of a sweep, offline: W&B's offline run file (group = the
sweep's name, name = the run's name) and TensorBoard's event files, read back and checked against
each run's log.jsonl."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from seqlab.sweep.runner import plan_sweep, run_sweep
from tests.sweep.conftest import tiny_base

NAMES = ["lr=0.01", "lr=0.03"]


def read_wandb_records(path: Path) -> list:
    """The protobuf records of a W&B run file (``run-<id>.wandb``): a LevelDB-style log, i.e. a 7-byte
    header (":W&B", magic 0xBEE1, version) then 32 KiB blocks of chunks, each with a 7-byte header
    (checksum, length, type: 1 full, 2 first, 3 middle, 4 last; 0 padding)."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, magic, _version = struct.unpack("<4sHB", data[:7])
    assert (ident, magic) == (b":W&B", 0xBEE1)
    block, position, pending, records = 32768, 7, b"", []
    while position + 7 <= len(data):
        left = block - position % block
        if left < 7:
            position += left
            continue
        _checksum, length, kind = struct.unpack("<IHB", data[position:position + 7])
        if kind == 0:
            position += left
            continue
        chunk = data[position + 7:position + 7 + length]
        position += 7 + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def _history(records) -> dict[int, dict[str, float]]:
    rows = {}
    for record in records:
        if record.WhichOneof("record_type") == "history":
            row = {item.key or "/".join(item.nested_key): json.loads(item.value_json) for item in record.history.item}
            rows[row["_step"]] = row
    return rows


def test_wandb_and_tensorboard_track_every_run_of_the_sweep(byte_data, tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="wandb is not installed (pip install -e '.[test]')")
    pytest.importorskip("tensorboard", reason="tensorboard is not installed (pip install -e '.[test]')")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    for name, value in (("WANDB_MODE", "offline"), ("WANDB_SILENT", "true"), ("WANDB_CONFIG_DIR", tmp_path / "wbc"),
                        ("WANDB_CACHE_DIR", tmp_path / "wbcache"), ("WANDB_DATA_DIR", tmp_path / "wbdata")):
        monkeypatch.setenv(name, str(value))
    monkeypatch.delenv("WANDB_RUN_GROUP", raising=False)
    out = tmp_path / "tracked"
    base = tiny_base(byte_data, max_steps=10, eval_interval=5, wandb=True, tensorboard=True)
    outcome = run_sweep(plan_sweep(base, out, grid=["lr=1e-2,3e-2"]), say=lambda line: None)
    assert outcome.trained == NAMES and [r.status for r in outcome.records] == ["finished", "finished"]
    import os

    assert "WANDB_RUN_GROUP" not in os.environ  # set for the runs only
    for name in NAMES:
        log = [json.loads(line) for line in (out / name / "log.jsonl").read_text().splitlines()]
        train = [(r["step"], r["train_loss"]) for r in log if "train_loss" in r]
        val = [(r["step"], r["val_loss"]) for r in log if "val_loss" in r]
        assert [s for s, _ in train] == [5, 10] and [s for s, _ in val] == [5, 10]
        # TensorBoard: RUN/tensorboard/, read back with TensorBoard's own event reader
        events = EventAccumulator(str(out / name / "tensorboard"))
        events.Reload()
        for key, expected in (("train_loss", train), ("val_loss", val)):
            got = [(e.step, e.value) for e in events.Scalars(key)]
            assert [s for s, _ in got] == [s for s, _ in expected]
            assert [v for _, v in got] == pytest.approx([v for _, v in expected], rel=1e-6)  # float32 on disk
        # W&B: one offline run in RUN/wandb/, in the sweep's group, named after the run
        (run_file,) = (out / name / "wandb").glob("offline-run-*/run-*.wandb")
        records = read_wandb_records(run_file)
        (run,) = [r.run for r in records if r.WhichOneof("record_type") == "run"]
        assert (run.run_group, run.display_name, run.project) == ("tracked", name, "seqlab")
        history = _history(records)
        assert [(step, row["train_loss"]) for step, row in sorted(history.items()) if "train_loss" in row] == train
        assert [(step, row["val_loss"]) for step, row in sorted(history.items()) if "val_loss" in row] == val
