"""Every config.json shape seqlab ever wrote loads, resumes, explores and exports.

The shapes: the one schema of :mod:`seqlab.runs.config`; seqlab 0.1.0's LM layout (flat settings
plus "model") and seq2seq layout ({"train", "model_config"}, with max_seq_len / tie_output), as
real runs of that version (tests/fixtures/runs_0.1.0, see its make.py); and, made here from those,
the same layouts without "kind" (TrainConfig.save_json's shape) and with the seq2seq settings'
older names (steps, layers). "Exports" is ``seqlab export --to hf`` for a language model; seq2seq
runs have no Hugging Face export, so for them it is their own report, ``seqlab seq2seq eval``.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

import seqlab
from seqlab.cli import main
from seqlab.runs.config import RunConfig, parse_run_config, read_run_config, write_run_config
from seqlab.runs.kinds import Kind, run_kind

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "runs_0.1.0"
SCHEMA = ["data", "kind", "model", "seqlab_version", "settings"]


def _old(path: Path) -> dict:
    return json.loads((path / "config.json").read_text())


# -- the reader and the writer, on dicts ------------------------------------------------------------


def test_the_schema_round_trips_and_is_stamped_with_the_version(tmp_path):
    config = RunConfig(Kind.SEQ2SEQ, {"max_steps": 3}, {"arch": "rnn"}, {"task": "dates"}, seqlab_version="0.0.1")
    write_run_config(tmp_path, config)
    saved = json.loads((tmp_path / "config.json").read_text())
    assert sorted(saved) == SCHEMA and saved["seqlab_version"] == seqlab.__version__ == "0.2.0"
    back = read_run_config(tmp_path)
    assert (back.kind, back.settings, back.model, back.data, back.notes) == (
        Kind.SEQ2SEQ, {"max_steps": 3}, {"arch": "rnn"}, {"task": "dates"}, [])
    with pytest.raises(ValueError, match="RunConfig.kind must be \"lm\" or \"seq2seq\", got 'gpt'"):
        write_run_config(tmp_path, RunConfig("gpt", {}, {}, {}))  # type: ignore[arg-type]


def test_the_old_lm_layouts_are_converted_with_a_note():
    old = _old(FIXTURES / "lm")
    for data in (old, {k: v for k, v in old.items() if k != "kind"}):  # 0.1.0's, and save_json's (no kind)
        config = parse_run_config(data, source="RUN/config.json")
        assert config.kind is Kind.LM and config.settings_at == ""
        assert config.model == old["model"] and config.data == {"data_dir": "data"}
        assert config.settings == {k: v for k, v in old.items() if k not in ("kind", "model")}
        assert config.settings["total_steps"] == 4 and config.seqlab_version is None
        assert config.notes == ["RUN/config.json: written by an older seqlab (0.1.0), in its lm layout; read as the "
                                "one config.json schema (a resume rewrites it)"]


def test_the_old_seq2seq_layout_is_converted_with_a_note():
    old = _old(FIXTURES / "seq2seq")
    assert old["model_config"]["max_seq_len"] == 14 and "tie_output" in old["train"]  # the 0.1.0 names
    for data in (old, {k: v for k, v in old.items() if k != "kind"}):
        config = parse_run_config(data, source="RUN/config.json")
        assert config.kind is Kind.SEQ2SEQ and config.settings_at == "train."
        assert config.model == old["model_config"]  # names are the settings classes' to translate
        assert config.settings == {**old["train"], "parameters": old["parameters"], "world_size": 1, "total_steps": 4}
        assert config.data == {**old["data"], "vocab": old["vocab"], "task": "reverse", "pairs": None,
                               "tokenize": "char", "tokenizer": None}
        assert len(config.notes) == 1 and "in its seq2seq layout" in config.notes[0]


@pytest.mark.parametrize("data, message", [
    ({"kind": "lm", "settings": [], "model": {}}, "RUN: field 'settings' must be a JSON object, found list"),
    ({"kind": "gpt", "settings": {}}, "RUN: field 'kind' must be \"lm\" or \"seq2seq\", found 'gpt'"),
    ({"kind": "seq2seq", "model_config": {}}, "RUN: field 'train' must be a JSON object of settings, found nothing"),
    ({"train": {}, "model_config": 3}, "RUN: field 'model_config' must be a JSON object, found int"),
])
def test_a_config_json_of_a_wrong_shape_names_the_field(data, message):
    with pytest.raises(ValueError) as error:
        parse_run_config(data, source="RUN")
    assert str(error.value).startswith(message)


# -- whole runs: load, resume, explore, export ---------------------------------------------------------


def _lm_shape(run: Path, shape: str) -> None:
    """Rewrite the 0.1.0 LM run's config.json into ``shape``."""
    old = _old(run)
    if shape == "no kind":
        (run / "config.json").write_text(json.dumps({k: v for k, v in old.items() if k != "kind"}))
    elif shape == "schema":
        write_run_config(run, read_run_config(run))


def _s2s_shape(run: Path, shape: str) -> None:
    old = _old(run)
    if shape == "older names, no kind":  # the settings' names before 0.1.0's renames, too
        train = {{"max_steps": "steps", "num_layers": "layers"}.get(k, k): v for k, v in old["train"].items()}
        (run / "config.json").write_text(json.dumps({**{k: v for k, v in old.items() if k != "kind"}, "train": train}))
    elif shape == "schema":
        write_run_config(run, read_run_config(run))


@pytest.fixture(scope="module")
def story_data(tmp_path_factory) -> Path:
    """Data in the 0.1.0 LM run's own tokenizer (what its resume trains on)."""
    from seqlab.lm.data import prepare
    from seqlab.lm.stories import generate_stories

    root = tmp_path_factory.mktemp("stories")
    (root / "train.txt").write_text("<|endoftext|>".join(generate_stories(60, seed=0)))
    (root / "valid.txt").write_text("<|endoftext|>".join(generate_stories(10, seed=1)))
    prepare(root / "train.txt", root / "valid.txt", None, root / "data", progress=False, workers=1,
            tokenizer_dir=FIXTURES / "lm")
    return root / "data"


def _same_weights(model: torch.nn.Module, checkpoint: Path) -> None:
    """The loaded weights are the checkpoint's tensors (read here with torch.load, not by seqlab)."""
    raw = torch.load(checkpoint, weights_only=False)["model"]
    ours = model.state_dict()
    assert set(ours) == set(raw)
    assert all(torch.equal(ours[k].cpu(), raw[k]) for k in raw)


@pytest.mark.parametrize("shape", ["0.1.0", "no kind", "schema"])
def test_an_lm_run_of_each_shape_loads_resumes_explores_and_exports(shape, story_data, tmp_path, capsys):
    from seqlab.explorer.runs import describe_run, load_lm
    from seqlab.lm.loading import load_model
    from seqlab.sweep.records import read_run

    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "lm", run)
    _lm_shape(run, shape)
    old_model = _old(FIXTURES / "lm")["model"]
    # loads
    model, tokenizer, payload = load_model(run=run)
    assert vars(model.config) == old_model and payload["iteration"] == 4
    _same_weights(model, run / "checkpoints" / "latest.pt")
    # explores
    assert run_kind(run) is Kind.LM and describe_run(str(run)).kind == "lm"
    explored = load_lm(describe_run(str(run)))
    assert explored.config["max_steps"] == 4 and explored.config["d_model"] == 8 and explored.step == 4
    record = read_run(run)
    assert (record.status, record.total_steps, record.steps) == ("finished", 4, 4)
    # exports
    assert main(["export", "--to", "hf", str(run), str(tmp_path / "hf")]) == 0
    llama = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert (llama["hidden_size"], llama["num_hidden_layers"], llama["vocab_size"]) == (8, 1, 260)
    # resumes: two more steps, and config.json is written back in the one schema
    capsys.readouterr()
    assert main(["train", "--resume", "--out", str(run), "--data-dir", str(story_data), "--max-steps", "6",
                 "--no-progress"]) == 0
    out = capsys.readouterr()
    assert ("written by an older seqlab" in out.err) == (shape != "schema")
    assert torch.load(run / "checkpoints" / "latest.pt", weights_only=False)["iteration"] == 6
    saved = json.loads((run / "config.json").read_text())
    assert sorted(saved) == SCHEMA and saved["kind"] == "lm" and saved["model"] == old_model
    assert (saved["settings"]["max_steps"], saved["settings"]["d_model"], saved["data"]["data_dir"]) == (
        6, 8, str(story_data))


@pytest.mark.parametrize("shape", ["0.1.0", "older names, no kind", "schema"])
def test_a_seq2seq_run_of_each_shape_loads_resumes_explores_and_evaluates(shape, tmp_path, capsys):
    from seqlab.explorer.runs import describe_run, load_seq2seq
    from seqlab.seq2seq.loading import load_run

    run = tmp_path / "run"
    shutil.copytree(FIXTURES / "seq2seq", run)
    _s2s_shape(run, shape)
    old = _old(FIXTURES / "seq2seq")
    # loads (the checkpoint's model_config still says max_seq_len and tie_output)
    with pytest.warns(UserWarning, match="max_seq_len is now context_length"):
        loaded = load_run(run, device="cpu")
    assert (loaded.step, loaded.model.config.context_length, loaded.model.config.tie_embeddings) == (4, 14, False)
    _same_weights(loaded.model, run / "checkpoints" / "latest.pt")
    # explores
    assert run_kind(run) is Kind.SEQ2SEQ and describe_run(str(run)).kind == "seq2seq"
    with pytest.warns(UserWarning):
        assert load_seq2seq(describe_run(str(run))).train_config.task == "reverse"
    # its own report (no Hugging Face export for seq2seq models)
    capsys.readouterr()
    with pytest.warns(UserWarning):
        assert main(["seq2seq", "eval", "--run", str(run), "--json", "--device", "cpu"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["pairs"] == old["data"]["valid_pairs"] == 10 and 0 <= report["exact_match"] <= 1
    # resumes, and writes config.json back in the one schema under the new names
    assert main(["seq2seq", "train", "--resume", "--out", str(run), "--max-steps", "6", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "tie_output is now tie_embeddings" in err
    assert ("written by an older seqlab" in err) == (shape != "schema")
    assert ("steps is now max_steps" in err) == (shape == "older names, no kind")
    saved = json.loads((run / "config.json").read_text())
    assert sorted(saved) == SCHEMA and saved["kind"] == "seq2seq"
    assert saved["model"]["context_length"] == 14 and not {"max_seq_len", "tie_output"} & set(saved["model"])
    assert saved["settings"]["max_steps"] == 6 and "tie_output" not in saved["settings"]
    assert saved["data"]["fingerprint"] == old["data"]["fingerprint"] and saved["data"]["task"] == "reverse"
