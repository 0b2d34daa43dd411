"""`seqlab export --to hf` and `seqlab import --from hf` under the one OUT rule (seqlab.outdir): a
transformers save_pretrained folder is never written over; their own earlier output is."""

from __future__ import annotations

import json

from seqlab.cli import main
from seqlab.outdir import MARKER
from tests.interop.test_import import hf_tokenizer, save_llama  # noqa: F401 (a fixture)
from tests.test_outdir import snapshot


def test_export_never_replaces_a_save_pretrained_folder(trained_run, hf_tokenizer, tmp_path, capsys):
    theirs = tmp_path / "theirs"
    save_llama(theirs, hf_tokenizer)  # config.json + model.safetensors: names the export writes too
    before = snapshot(theirs)
    assert main(["export", "--to", "hf", str(trained_run), str(theirs)]) == 1
    err = capsys.readouterr().err
    assert "not written by `seqlab export --to hf`" in err and "--overwrite" in err
    assert snapshot(theirs) == before
    ours = tmp_path / "ours"
    assert main(["export", "--to", "hf", str(trained_run), str(ours)]) == 0
    assert main(["export", "--to", "hf", str(trained_run), str(ours)]) == 0  # an earlier export: replaced
    assert json.loads((ours / MARKER).read_text())["command"] == "seqlab export --to hf"
    assert main(["export", "--to", "hf", str(trained_run), str(theirs), "--overwrite"]) == 0
    assert snapshot(theirs) != before


def test_import_replaces_only_its_own_untrained_run(hf_tokenizer, tmp_path, capsys):
    src = tmp_path / "hf"
    save_llama(src, hf_tokenizer)
    run = tmp_path / "run"
    assert main(["import", "--from", "hf", str(src), str(run)]) == 0
    assert main(["import", "--from", "hf", str(src), str(run)]) == 0  # its own, untouched: replaced
    (run / "log.jsonl").write_text('{"step": 1}\n')  # trained since: its log would be lost
    before = snapshot(run)
    assert main(["import", "--from", "hf", str(src), str(run)]) == 1
    assert "now also holds log.jsonl" in capsys.readouterr().err and snapshot(run) == before
    # an export folder is not an import's
    assert main(["import", "--from", "hf", str(src), str(src)]) == 1
    assert "not written by `seqlab import --from hf`" in capsys.readouterr().err
