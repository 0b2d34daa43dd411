"""The run directory's tokenizer copy: replaced whole, or not at all."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from seqlab.atomic import _TEMPORARY_NAME
from seqlab.lm.settings import TrainConfig
from seqlab.lm.task import write_run_files
from seqlab.tokenizer.files import TOKENIZER_FILES


def _tokenizer(directory: Path, label: str) -> dict[str, str]:
    directory.mkdir(parents=True)
    contents = {name: f"{label} {name}" for name in TOKENIZER_FILES}
    for name, text in contents.items():
        (directory / name).write_text(text)
    return contents


def _read(directory: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in directory.iterdir()}


def test_the_run_tokenizer_is_never_missing_while_it_is_replaced(tmp_path, monkeypatch):
    data, run = tmp_path / "data", tmp_path / "run"
    new = _tokenizer(data / "tokenizer", "new")
    old = _tokenizer(run / "tokenizer", "old")
    config = TrainConfig(data_dir=str(data), out_dir=str(run), overwrite=True)
    model_config = config.model_config(vocab_size=256)
    target = run / "tokenizer"

    # the new folder cannot take the tokenizer's name (the last step): the old tokenizer must still be there
    real_rename, real_replace = os.rename, os.replace

    def refuse_new_folder(rename):
        def patched(src, dst, *args, **kwargs):
            if Path(dst) == target and Path(src).name.startswith(".tokenizer.tmp"):
                raise OSError(5, "Input/output error (simulated)")
            return rename(src, dst, *args, **kwargs)
        return patched

    monkeypatch.setattr(os, "rename", refuse_new_folder(real_rename))
    monkeypatch.setattr(os, "replace", refuse_new_folder(real_replace))
    with pytest.raises(OSError, match="simulated"):
        write_run_files(config, model_config, world_size=1, total_steps=10)
    assert _read(target) == old
    monkeypatch.undo()
    assert [p.name for p in run.rglob("*") if _TEMPORARY_NAME.fullmatch(p.name)] == []

    write_run_files(config, model_config, world_size=1, total_steps=10)
    assert _read(target) == new
    assert [p.name for p in run.rglob("*") if _TEMPORARY_NAME.fullmatch(p.name)] == []
