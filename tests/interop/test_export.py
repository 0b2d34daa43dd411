"""`seqlab export --to hf`: a run trained here, loaded by transformers with no custom code. Oracles:
LlamaForCausalLM (logits, greedy generation) and AutoTokenizer (ids) computed in the test."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from seqlab.cli import main
from seqlab.inference.generate import generate
from seqlab.lm.loading import load_model
from tests.interop.conftest import (
    NORM_EPS,
    ROPE_THETA,
    hf_greedy,
    hf_logits,
    seqlab_logits,
)

FILES = [".seqlab-out.json", "config.json", "generation_config.json", "model.safetensors", "special_tokens_map.json",
         "tokenizer.json", "tokenizer_config.json"]


@pytest.fixture(scope="module")
def exported(trained_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("export") / "hf"
    assert main(["export", "--to", "hf", str(trained_run), str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def seqlab_side(trained_run):
    model, tokenizer, _ = load_model(run=trained_run)
    return model, tokenizer


def test_the_folder_holds_a_llama_config_with_the_runs_theta_and_eps(exported, seqlab_side):
    model, _ = seqlab_side
    assert sorted(p.name for p in exported.iterdir()) == FILES
    config = json.loads((exported / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"] and config["model_type"] == "llama"
    assert config["rope_parameters"]["rope_theta"] == ROPE_THETA == config["rope_theta"]
    assert config["rms_norm_eps"] == NORM_EPS
    assert (config["hidden_size"], config["num_hidden_layers"], config["num_attention_heads"],
            config["intermediate_size"], config["vocab_size"], config["max_position_embeddings"]) == (
        32, 2, 2, model.config.d_ff, 320, 32)


def test_transformers_gives_seqlabs_logits_and_greedy_text(exported, seqlab_side, cs336_dir):
    from transformers import LlamaForCausalLM

    model, tokenizer = seqlab_side
    hf = LlamaForCausalLM.from_pretrained(exported, dtype=torch.float32).eval()
    assert hf.config.rope_parameters["rope_theta"] == ROPE_THETA and hf.config.rms_norm_eps == NORM_EPS
    for name in ("tinystories_sample.txt", "address.txt"):
        ids = tokenizer.encode((cs336_dir / name).read_text(encoding="utf-8"))[:32]
        ours, theirs = seqlab_logits(model, ids), hf_logits(hf, ids)
        assert ours.shape == theirs.shape == (32, 320)
        torch.testing.assert_close(theirs, ours, rtol=0, atol=1e-5)
    eos = tokenizer.eot_id
    for prompt in ("Once upon a time", "The little dog", "Tom"):
        ids = tokenizer.encode(prompt)
        expected = hf_greedy(hf, ids, 20, eos)
        assert generate(model, ids, 20, temperature=0.0, eos_id=eos) == expected
        assert len(expected) >= 5


def test_auto_tokenizer_gives_seqlabs_ids_on_the_fixtures(exported, seqlab_side, cs336_dir):
    from transformers import AutoTokenizer

    _, tokenizer = seqlab_side
    auto = AutoTokenizer.from_pretrained(exported)
    assert auto.eos_token_id == tokenizer.eot_id and auto.model_max_length == 32
    for name in ("tinystories_sample.txt", "address.txt", "german.txt", "corpus.en"):
        text = (cs336_dir / name).read_text(encoding="utf-8")
        ids = tokenizer.encode(text)
        assert auto(text, add_special_tokens=False)["input_ids"] == ids
        assert auto.decode(ids) == text


def _ablated_run(trained_run, tmp_path, **ablation):
    """A copy of the trained run whose checkpoint holds a model with one ablation."""
    from seqlab.model import TransformerLM
    from seqlab.runs.checkpoint import save_checkpoint

    run = tmp_path / "ablated"
    shutil.copytree(trained_run / "tokenizer", run / "tokenizer")
    model = TransformerLM(320, 32, 32, 2, 2, **ablation)
    save_checkpoint(model, None, 1, run / "checkpoints" / "latest.pt")
    return run


@pytest.mark.parametrize("ablation, words", [
    ({"norm_position": "post"}, "norm_position='post'"),
    ({"norm": "none"}, "norm='none'"),
    ({"positional": "nope"}, "positional='nope'"),
    ({"ffn": "silu"}, "ffn='silu'"),
])
def test_models_llama_cannot_express_are_refused_by_field(trained_run, tmp_path, capsys, ablation, words):
    run = _ablated_run(trained_run, tmp_path, **ablation)
    assert main(["export", "--to", "hf", str(run), str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err
    assert words in err and "latest.pt" in err and "cannot be exported as a Llama" in err
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == [run]


def test_export_is_atomic_and_never_replaces_foreign_files(trained_run, exported, tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert main(["export", "--to", "hf", str(trained_run), str(out)]) == 1
    assert "notes.txt" in capsys.readouterr().err and [p.name for p in out.iterdir()] == ["notes.txt"]
    # an earlier export is replaced whole; a failure while writing leaves it as it was
    again = tmp_path / "again"
    shutil.copytree(exported, again)
    (again / "config.json").write_text("{}")
    import seqlab.interop.export as export_module

    def broken(tensors, path):
        raise OSError(28, "No space left on device")

    real = export_module.save_safetensors
    export_module.save_safetensors = broken
    try:
        assert main(["export", "--to", "hf", str(trained_run), str(again)]) == 1
    finally:
        export_module.save_safetensors = real
    assert "No space left" in capsys.readouterr().err and (again / "config.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again", "out"]  # no temporary left
    assert main(["export", "--to", "hf", str(trained_run), str(again)]) == 0
    assert json.loads((again / "config.json").read_text())["architectures"] == ["LlamaForCausalLM"]


def test_a_run_without_checkpoint_or_tokenizer_is_named(trained_run, tmp_path, capsys):
    assert main(["export", "--to", "hf", str(tmp_path / "nothing"), str(tmp_path / "out")]) == 1
    assert "nothing: no checkpoints/latest.pt" in capsys.readouterr().err
    run = tmp_path / "run"
    shutil.copytree(trained_run / "checkpoints", run / "checkpoints")
    assert main(["export", "--to", "hf", str(run), str(tmp_path / "out")]) == 1
    assert "has no tokenizer/ directory" in capsys.readouterr().err


@pytest.mark.parametrize("num_kv_heads, tied", [(2, False), (1, True), (None, True)])
def test_grouped_query_and_tied_models_export(trained_run, tmp_path, cs336_dir, num_kv_heads, tied):
    """Random weights (the conversion does not care), a GQA/MQA and/or tied model: transformers
    reads num_key_value_heads and tie_word_embeddings and gives the same logits and greedy ids."""
    from safetensors import safe_open
    from transformers import LlamaForCausalLM

    from seqlab.model import TransformerLM
    from seqlab.runs.checkpoint import save_checkpoint

    torch.manual_seed(0)
    extra = {**({"num_kv_heads": num_kv_heads} if num_kv_heads else {}), **({"tie_embeddings": True} if tied else {})}
    model = TransformerLM(320, 32, 32, 2, 4, rope_theta=ROPE_THETA, **extra).eval()
    run = tmp_path / "run"
    shutil.copytree(trained_run / "tokenizer", run / "tokenizer")
    save_checkpoint(model, None, 1, run / "checkpoints" / "latest.pt")
    assert main(["export", "--to", "hf", str(run), str(tmp_path / "hf")]) == 0
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["num_key_value_heads"] == (num_kv_heads or 4) and config["tie_word_embeddings"] is tied
    with safe_open(str(tmp_path / "hf" / "model.safetensors"), "pt") as handle:
        assert ("lm_head.weight" in handle.keys()) is not tied
        assert handle.get_slice("model.layers.0.self_attn.k_proj.weight").get_shape() == [(num_kv_heads or 4) * 8, 32]
    hf = LlamaForCausalLM.from_pretrained(tmp_path / "hf", dtype=torch.float32).eval()
    tokenizer = load_model(run=run).tokenizer
    ids = tokenizer.encode((cs336_dir / "tinystories_sample.txt").read_text(encoding="utf-8"))[:32]
    torch.testing.assert_close(hf_logits(hf, ids), seqlab_logits(model, ids), rtol=0, atol=1e-5)
    prompt = tokenizer.encode("Once upon a time")
    assert generate(model, prompt, 12, temperature=0.0, eos_id=tokenizer.eot_id) == hf_greedy(hf, prompt, 12,
                                                                                              tokenizer.eot_id)


def test_a_seq2seq_run_is_named_not_read_as_fields(tiny_s2s_run, tmp_path, capsys):
    """A seq2seq run printed its model fields as 'unknown model config fields 'arch', ...'."""
    assert main(["export", "--to", "hf", str(tiny_s2s_run), str(tmp_path / "hf")]) == 2  # the wrong kind of run
    err = capsys.readouterr().err
    assert f"{tiny_s2s_run} is a seq2seq run (written by `seqlab seq2seq train`)" in err
    assert "`seqlab export --to hf` needs a run of `seqlab train` or `seqlab demo`" in err and "unknown" not in err
    assert not (tmp_path / "hf").exists()
