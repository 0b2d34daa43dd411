"""The one OUT rule (seqlab.outdir): a command that writes a folder takes a new or empty one, one it
wrote itself, or anything with --overwrite. Each writing command is given another program's folder
(the fault) and must leave it byte for byte as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from seqlab.cli import main
from seqlab.outdir import MARKER, check_out_folder, output_folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def foreign_tokenizer(folder: Path) -> dict[str, bytes]:
    """What transformers' save_pretrained leaves for a tokenizer: the names `bpe export --to hf` writes."""
    folder.mkdir(parents=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        (folder / name).write_text(json.dumps({"someone": "else's", "file": name}))
    return snapshot(folder)


def test_the_rule_new_empty_own_foreign_and_overwrite(tmp_path):
    out = tmp_path / "out"
    with output_folder(out, "seqlab x") as building:  # new
        (building / "a.txt").write_text("1")
    assert json.loads((out / MARKER).read_text()) == {"command": "seqlab x", "files": ["a.txt"]}
    with output_folder(out, "seqlab x") as building:  # its own: replaced whole
        (building / "b.txt").write_text("2")
    assert sorted(os.listdir(out)) == [MARKER, "b.txt"]
    with pytest.raises(FileExistsError, match="written by `seqlab x`, not `seqlab y`"):
        check_out_folder(out, "seqlab y")  # another command's
    (out / "mine.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="now also holds mine.txt"):
        check_out_folder(out, "seqlab x")  # its own, with a user's file added
    check_out_folder(out, "seqlab x", overwrite=True)
    empty = tmp_path / "empty"
    empty.mkdir()
    check_out_folder(empty, "seqlab y")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError, match="is a file"):
        check_out_folder(tmp_path / "file", "seqlab y")
    # a failure inside the block leaves the old folder as it was
    before = snapshot(out)
    with pytest.raises(RuntimeError), output_folder(out, "seqlab x", overwrite=True) as building:
        (building / "half.txt").write_text("half")
        raise RuntimeError("disk full")
    assert snapshot(out) == before and sorted(os.listdir(tmp_path)) == ["empty", "file", "out"]


def test_overwrite_never_replaces_the_working_directory_or_a_parent(tmp_path, monkeypatch):
    work = tmp_path / "project"
    work.mkdir()
    (work / "code.py").write_text("x")
    monkeypatch.chdir(work)
    for target in (".", str(tmp_path)):
        with pytest.raises(ValueError, match="working directory"):
            check_out_folder(target, "seqlab x", overwrite=True)


@pytest.mark.parametrize("to", ["hf", "tiktoken"])
def test_bpe_export_never_writes_over_another_tokenizer(cs336_dir, tmp_path, capsys, to):
    from seqlab.tokenizer import Tokenizer

    Tokenizer.from_files(cs336_dir / "gpt2_vocab.json", cs336_dir / "gpt2_merges.txt",
                         ["<|endoftext|>"]).save(tmp_path / "tok")
    out = tmp_path / "theirs"
    before = foreign_tokenizer(out)
    if to == "tiktoken":
        (out / "tokenizer.tiktoken").write_text("someone else's ranks")
        before = snapshot(out)
    assert main(["bpe", "export", "--to", to, str(tmp_path / "tok"), str(out)]) == 1
    assert "not written by `seqlab bpe export" in capsys.readouterr().err and snapshot(out) == before
    ours = tmp_path / "ours"
    assert main(["bpe", "export", "--to", to, str(tmp_path / "tok"), str(ours)]) == 0
    assert main(["bpe", "export", "--to", to, str(tmp_path / "tok"), str(ours)]) == 0  # its own: again
    other = "tiktoken" if to == "hf" else "hf"
    assert main(["bpe", "export", "--to", other, str(tmp_path / "tok"), str(ours)]) == 1  # another format's
    assert f"written by `seqlab bpe export --to {to}`" in capsys.readouterr().err
    assert main(["bpe", "export", "--to", to, str(tmp_path / "tok"), str(out), "--overwrite"]) == 0
    assert snapshot(out) != before and MARKER in os.listdir(out)


def test_bpe_train_keeps_a_gpt2_folder_and_recognises_its_own(cs336_dir, tmp_path, capsys):
    corpus = cs336_dir / "tinystories_sample.txt"
    gpt2 = tmp_path / "gpt2"
    gpt2.mkdir()
    for name in ("vocab.json", "merges.txt"):  # a Hugging Face GPT-2 folder: no special_tokens.json
        (gpt2 / name).write_bytes((cs336_dir / f"gpt2_{name}").read_bytes())
    before = snapshot(gpt2)
    args = ["bpe", "train", "--input", str(corpus), "--vocab-size", "270", "--workers", "1", "--no-progress"]
    assert main([*args, "--out", str(gpt2)]) == 1
    assert "not written by `seqlab bpe train`" in capsys.readouterr().err and snapshot(gpt2) == before
    old = tmp_path / "old"  # a tokenizer this command wrote before the marker existed
    assert main([*args, "--out", str(old)]) == 0
    (old / MARKER).unlink()
    assert main([*args, "--out", str(old)]) == 0


def test_prepare_refuses_a_foreign_folder_and_replaces_its_own(tmp_path, capsys):
    from seqlab.lm.stories import write_corpus

    train, valid = write_corpus(tmp_path / "t.txt", 60, 0), write_corpus(tmp_path / "v.txt", 10, 1)
    out = tmp_path / "data"
    out.mkdir()
    (out / "meta.json").write_text("my own notes")  # a name prepare writes, but not its folder
    (out / "notes.md").write_text("keep me")
    before = snapshot(out)
    args = ["prepare", "--train", str(train), "--valid", str(valid), "--vocab-size", "270", "--workers", "1",
            "--no-progress", "--out", str(out)]
    assert main(args) == 1
    assert "not written by `seqlab prepare`" in capsys.readouterr().err and snapshot(out) == before
    fresh = tmp_path / "fresh"
    args[-1] = str(fresh)
    assert main(args) == 0 and main(args) == 0  # its own folder, replaced
    assert json.loads((fresh / MARKER).read_text())["command"] == "seqlab prepare"


def _tiny_run(folder: Path, losses: list[float], *, vocab: int = 300, kind: str = "lm", data: str = "data") -> Path:
    folder.mkdir(parents=True)
    config = {"kind": kind, "max_steps": len(losses), "total_steps": len(losses), "data_dir": data,
              "model": {"vocab_size": vocab}}
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "log.jsonl").write_text("".join(json.dumps({"step": i + 1, "val_loss": loss, "wallclock": i}) + "\n"
                                              for i, loss in enumerate(losses)))
    return folder


def test_compare_never_writes_over_a_users_or_a_sweeps_report(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    a, b = _tiny_run(tmp_path / "a", [3.0, 2.0]), _tiny_run(tmp_path / "b", [3.0, 2.5])
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.md").write_text("my report")
    (mine / "curves.png").write_bytes(b"my figure")
    before = snapshot(mine)
    assert main(["compare", str(a), str(b), "--out", str(mine)]) == 1
    assert "not written by `seqlab compare`" in capsys.readouterr().err and snapshot(mine) == before
    out = tmp_path / "cmp"
    assert main(["compare", str(a), str(b), "--out", str(out)]) == 0
    assert main(["compare", str(a), "--out", str(out)]) == 0  # its own comparison, replaced
    assert json.loads((out / "compare.json").read_text())["best"] == "a"
    assert main(["compare", str(a), str(b), "--out", str(mine), "--overwrite"]) == 0
    assert (mine / "report.md").read_text().startswith("# Comparison of 2 runs")


def test_demo_refuses_another_programs_folder_before_any_work(tmp_path, capsys):
    out = tmp_path / "d"
    out.mkdir()
    (out / "run").mkdir()
    (out / "thesis.tex").write_text("two years of work")
    before = snapshot(out)
    assert main(["demo", "--fast", "--out", str(out), "--no-progress"]) == 1
    assert "not written by `seqlab demo`" in capsys.readouterr().err and snapshot(out) == before
