"""One vocabulary of names (issue 17): ``seqlab seq2seq train`` uses the LM's setting names, and the
old ones keep working for one release, with a note, as flags, TOML keys, config.json of existing
runs and Python import paths."""

from __future__ import annotations

import json
import warnings

import pytest
import torch

from seqlab.cli import main
from seqlab.seq2seq.settings import Seq2SeqTrainConfig

pytestmark = pytest.mark.usefixtures("one_thread")
DATA = ["--task", "reverse", "--min-len", "2", "--max-len", "5", "--train-size", "300", "--valid-size", "20",
        "--arch", "rnn", "--d-model", "16", "--batch-size", "32", "--no-progress", "--threads", "1"]
OLD_TO_NEW = {"steps": "max_steps", "layers": "num_layers", "max_seq_len": "context_length",
              "max_minutes": "time_budget_s", "eval_size": "eval_batches"}


def _saved(run) -> dict:
    return json.loads((run / "config.json").read_text())["settings"]


def test_old_flags_still_work_with_a_note(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["seq2seq", "train", *DATA, "--steps", "3", "--layers", "1", "--max-seq-len", "20",
                 "--max-minutes", "0.5", "--eval-size", "70", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    for old, new in OLD_TO_NEW.items():
        assert f"flags: --{old.replace('_', '-')} is now --{new.replace('_', '-')}" in err
    assert "(minutes * 60 = seconds)" in err
    saved = _saved(run)
    # 70 pairs at batch 32 are 3 batches; 0.5 minutes are 30 seconds
    assert (saved["max_steps"], saved["num_layers"], saved["context_length"], saved["time_budget_s"],
            saved["eval_batches"]) == (3, 1, 20, 30.0, 3)
    assert not set(OLD_TO_NEW) & set(saved)
    model = json.loads((run / "config.json").read_text())["model"]
    assert "max_seq_len" not in model and (model["context_length"], model["num_encoder_layers"], model["num_decoder_layers"]) == (20, 1, 1)


def test_an_old_and_a_new_name_together_is_an_error(tmp_path, capsys):
    assert main(["seq2seq", "train", *DATA, "--steps", "3", "--max-steps", "4", "--out", str(tmp_path / "r")]) == 2
    assert "flags: --max-steps is given twice (once under its old name --steps)" in capsys.readouterr().err
    with pytest.raises(ValueError, match="config: max_steps is given twice \\(once under its old name steps\\)"):
        Seq2SeqTrainConfig.from_dict({"steps": 3, "max_steps": 4})


@pytest.mark.parametrize("flags", [["--eval-size", "20", "--batch-size", "0"], ["--batch-size", "0", "--max-minutes", "-1"]])
def test_values_are_checked_before_an_old_name_is_converted(flags, tmp_path, capsys):
    """--eval-size converts with batch_size (pairs / batch_size): a batch size of 0 is refused as
    itself, a usage error like without the old name, never a ZeroDivisionError."""
    assert main(["seq2seq", "train", *DATA, *flags, "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "config batch_size=0: must be >= 1" in err and "Traceback" not in err
    with pytest.raises(ValueError, match=r"^config batch_size=0: must be >= 1$"):
        Seq2SeqTrainConfig.from_dict({"eval_size": 20, "batch_size": 0})
    with pytest.raises(ValueError, match=r"^run/config.json: config batch_size=0: must be >= 1$"):
        Seq2SeqTrainConfig.from_saved({"eval_size": 20, "batch_size": 0}, source="run/config.json")


def test_old_toml_keys_still_work_with_a_note(tmp_path, capsys):
    toml = tmp_path / "run.toml"
    toml.write_text('task = "reverse"\nmin_len = 2\nmax_len = 5\ntrain_size = 300\nvalid_size = 20\n'
                    '[model]\narch = "rnn"\nd_model = 16\nlayers = 1\n[schedule]\nsteps = 2\nbatch_size = 16\n'
                    '[eval]\neval_size = 40\n')
    assert main(["seq2seq", "train", "--config", str(toml), "--no-progress", "--out", str(tmp_path / "r")]) == 0
    err = capsys.readouterr().err
    assert f"config file {toml}: steps is now max_steps" in err and "layers is now num_layers" in err
    saved = _saved(tmp_path / "r")
    assert (saved["max_steps"], saved["num_layers"], saved["eval_batches"]) == (2, 1, 3)  # 40 / 16 -> 3
    toml.write_text("steps = 2\nmax_steps = 3\n")
    assert main(["seq2seq", "train", "--config", str(toml), "--out", str(tmp_path / "r2")]) == 2
    assert "key 'max_steps' is given twice" in capsys.readouterr().err


def test_a_run_saved_with_the_old_names_resumes_and_loads(tmp_path, capsys):
    """A run written before the rename: config.json and the checkpoint's settings under the old names,
    no "kind". It resumes (with a note, the new names written back) and translates."""
    run = tmp_path / "run"
    assert main(["seq2seq", "train", *DATA, "--max-steps", "2", "--num-layers", "1", "--out", str(run)]) == 0

    def to_old(settings: dict) -> dict:
        old = {({v: k for k, v in OLD_TO_NEW.items()}).get(k, k): v for k, v in settings.items()}
        old["max_minutes"] = None
        old["eval_size"] = 20
        return old

    info = json.loads((run / "config.json").read_text())  # seqlab 0.1.0's layout, without "kind"
    old_info = {"train": to_old(info["settings"]), "model_config": info["model"], "vocab": info["data"]["vocab"]}
    (run / "config.json").write_text(json.dumps(old_info))
    payload = torch.load(run / "checkpoints" / "latest.pt", weights_only=True)
    payload["extra"]["config"] = to_old(payload["extra"]["config"])
    torch.save(payload, run / "checkpoints" / "latest.pt")
    capsys.readouterr()

    assert main(["seq2seq", "train", "--out", str(run), "--resume", "--max-steps", "4", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert f"{run / 'config.json'}: steps is now max_steps" in captured.err
    assert "completed at step 4/4" in captured.out
    saved = _saved(run)
    assert saved["max_steps"] == 4 and saved["num_layers"] == 1 and "steps" not in saved
    # an old checkpoint's settings load too (no note: loading is not where the run changes)
    torch.save(payload, run / "checkpoints" / "latest.pt")
    from seqlab.seq2seq import load_run

    loaded = load_run(run, device="cpu")
    assert (loaded.step, loaded.train_config.max_steps, loaded.train_config.num_layers) == (2, 2, 1)
    assert loaded.train_config.eval_batches == 1  # 20 pairs at batch 32


def test_the_public_api_of_seqlab_seq2seq_is_lazy_and_complete():
    import subprocess
    import sys

    code = ("import sys, seqlab.seq2seq as s\n"
            "assert 'torch' not in sys.modules\n"
            "names = ['TransformerSeq2Seq', 'RNNSeq2Seq', 'Seq2SeqConfig', 'build_model', 'translate', 'load_run']\n"
            "assert all(name in s.__all__ for name in names), s.__all__\n"
            "from seqlab.seq2seq import TransformerSeq2Seq, RNNSeq2Seq, Seq2SeqConfig, build_model, translate, load_run\n"
            "m = build_model(Seq2SeqConfig('transformer', 10, 10, d_model=8, num_heads=2))\n"
            "assert isinstance(m, TransformerSeq2Seq) and isinstance(build_model(Seq2SeqConfig('rnn', 10, 10)), RNNSeq2Seq)\n"
            "print('OK')\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "OK", result.stderr[-2000:]


def test_flags_come_from_the_settings_fields():
    """Every Seq2SeqTrainConfig field is a flag of `seqlab seq2seq train` (and the shared ones are
    spelled as in `seqlab train`)."""
    import argparse
    from dataclasses import fields

    from seqlab.lm.settings import TrainConfig
    from seqlab.settings import add_config_arguments

    parsers = {}
    for cls in (Seq2SeqTrainConfig, TrainConfig):
        parser = argparse.ArgumentParser()
        add_config_arguments(parser, cls)
        parsers[cls] = {option for action in parser._actions for option in action.option_strings}
    for f in fields(Seq2SeqTrainConfig):
        assert "--" + f.name.replace("_", "-") in parsers[Seq2SeqTrainConfig] or f.name == "out_dir"
    shared = {"--max-steps", "--num-layers", "--context-length", "--time-budget-s", "--eval-batches", "--out",
              "--out-dir", "--precision", "--compile", "--grad-accum-steps", "--reschedule", "--device"}
    assert shared <= parsers[Seq2SeqTrainConfig] & parsers[TrainConfig]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert Seq2SeqTrainConfig().device == "auto"


def test_the_model_config_shares_the_lm_names_and_reads_the_old_ones(tmp_path, capsys):
    """Seq2SeqConfig says context_length and tie_embeddings, as ModelConfig does; a 0.1.0 checkpoint
    or config.json whose model_config says max_seq_len / tie_output loads with a note; a TOML or
    flag under the old setting name still works."""
    from dataclasses import asdict, fields

    from seqlab.model.config import ModelConfig
    from seqlab.seq2seq.config import Seq2SeqConfig
    from seqlab.settings import OLD_NAMES

    s2s, lm = {f.name for f in fields(Seq2SeqConfig)}, {f.name for f in fields(ModelConfig)}
    assert {"context_length", "tie_embeddings", "d_model", "num_heads", "norm", "attention"} <= s2s & lm
    assert not set(OLD_NAMES) & s2s
    notes: list[str] = []
    old = {"arch": "transformer", "src_vocab_size": 20, "tgt_vocab_size": 20, "max_seq_len": 24, "tie_output": True}
    config = Seq2SeqConfig.from_dict(old, source="ckpt.pt", notes=notes)
    assert (config.context_length, config.tie_embeddings) == (24, True)
    assert notes == ["ckpt.pt: max_seq_len is now context_length (the name seqlab 0.1.0 saved; read as context_length)",
                     "ckpt.pt: tie_output is now tie_embeddings (the name seqlab 0.1.0 saved; read as tie_embeddings)"]
    assert Seq2SeqConfig.from_dict(asdict(config)) == config
    with pytest.raises(ValueError, match="ckpt.pt: context_length is given twice"):
        Seq2SeqConfig.from_dict({**old, "context_length": 24}, source="ckpt.pt")
    with pytest.raises(ValueError, match="ckpt.pt: unknown seq2seq model config field\\(s\\) 'flash'"):
        Seq2SeqConfig.from_dict({**old, "flash": True}, source="ckpt.pt")

    # a run whose checkpoint's model_config has the old names loads (with a warning) and translates
    run = tmp_path / "run"
    assert main(["seq2seq", "train", *DATA, "--max-steps", "2", "--tie-output", "--out", str(run)]) == 0
    assert "flags: --tie-output is now --tie-embeddings" in capsys.readouterr().err
    assert _saved(run)["tie_embeddings"] is True
    ckpt = run / "checkpoints" / "latest.pt"
    payload = torch.load(ckpt, weights_only=False)
    model_config = payload["model_config"]
    model_config["max_seq_len"] = model_config.pop("context_length")
    model_config["tie_output"] = model_config.pop("tie_embeddings")
    torch.save(payload, ckpt)
    from seqlab.seq2seq.loading import load_run

    with pytest.warns(UserWarning, match="max_seq_len is now context_length"):
        loaded = load_run(run, device="cpu")
    assert loaded.model.config.tie_embeddings is True
    assert loaded.model.config.context_length == model_config["max_seq_len"]
