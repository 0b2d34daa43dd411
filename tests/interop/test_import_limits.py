"""`seqlab import` refuses config.json files that cannot run and weights that are not numbers, before
anything the size of the model is allocated, and says what is wrong with a field's type. "Before"
is checked by the work done (layer names looked at, models built, Python memory), not by a clock."""

from __future__ import annotations

import json
import tracemalloc
from contextlib import contextmanager

import pytest
import torch

from seqlab.cli import main
from tests.interop.test_import import _edit_config, _refused, folder, hf_tokenizer, save_llama  # noqa: F401


MAX_PEAK_BYTES = 64 * 2**20  # the imports and the files; a plan of a million layers alone is over 1 GB


@contextmanager
def work_done(monkeypatch):
    """What `seqlab import` does inside the block: the Llama weight names it looks at, the models it
    builds (on any device, the meta device included) and the peak of Python's memory."""
    import seqlab.interop.hf_import as hf_import
    from seqlab.model import TransformerLM

    work = {"names": 0, "models": 0, "peak_bytes": 0}
    names, build = hf_import.llama_names, TransformerLM.from_config.__func__

    def counted_names(*args, **kwargs):
        for entry in names(*args, **kwargs):
            work["names"] += 1
            yield entry

    def counted_build(cls, *args, **kwargs):
        work["models"] += 1
        return build(cls, *args, **kwargs)

    monkeypatch.setattr(hf_import, "llama_names", counted_names)
    monkeypatch.setattr(TransformerLM, "from_config", classmethod(counted_build))
    tracemalloc.start()
    try:
        yield work
    finally:
        work["peak_bytes"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()


def test_the_work_counter_sees_an_import_that_builds_the_model(folder, tmp_path, monkeypatch):
    with work_done(monkeypatch) as work:
        assert main(["import", "--from", "hf", str(folder), str(tmp_path / "run")]) == 0
    assert work["models"] >= 1 and work["names"] == 1 + 2 * 9 + 2  # embedding, 2 layers of 9, norm, head


def test_a_context_of_a_trillion_positions_is_refused_before_allocating(folder, tmp_path, capsys, monkeypatch):
    from seqlab.interop.limits import running_bytes
    from seqlab.model import ModelConfig

    _edit_config(folder, max_position_embeddings=10**12)
    with work_done(monkeypatch) as work:
        err = _refused(folder, tmp_path / "run", capsys, "config.json: this model needs about",
                       "max_position_embeddings=1,000,000,000,000", "cannot run here")
    assert (work["models"], work["names"]) == (0, 0) and work["peak_bytes"] < MAX_PEAK_BYTES, work
    # the oracle: 2 layers x 10^12 positions x 8 dims x 4 bytes of RoPE tables, 2 x 2 x 10^12 x 64 x 4 of cache,
    # and the parameters counted by hand (embedding and head 400 x 64, per layer 4 x 64^2 + 3 x 64 x 96 + 2 x 64)
    parts = running_bytes(ModelConfig(vocab_size=400, context_length=10**12, d_model=64, num_layers=2, num_heads=8,
                                      d_ff=96))
    parameters = 2 * 400 * 64 + 2 * (4 * 64 * 64 + 3 * 64 * 96 + 2 * 64) + 64
    assert parts == {"parameters": 4 * parameters, "RoPE tables": 2 * 10**12 * 8 * 4,
                     "KV cache": 2 * 2 * 10**12 * 64 * 4}
    assert f"needs about {sum(parts.values()) / 1e15:.1f} PB of memory" in err and "(KV cache 1.0 PB;" in err


def test_a_million_layers_are_refused_without_work_for_each_layer(folder, tmp_path, capsys, monkeypatch):
    """Refused by its memory estimate (nothing built, no name planned); where the memory would fit,
    refused at the first missing tensor (layer 2 of a 2-layer folder): 19 names looked at, not 9
    million, and still no model built."""
    import seqlab.interop.limits as limits

    _edit_config(folder, num_hidden_layers=10**6)
    monkeypatch.setattr(limits, "available_memory_bytes", lambda: 64 * 10**9)  # the same on every machine
    with work_done(monkeypatch) as work:
        _refused(folder, tmp_path / "run", capsys, "num_hidden_layers=1,000,000", "64.0 GB is available")
    assert (work["models"], work["names"]) == (0, 0) and work["peak_bytes"] < MAX_PEAK_BYTES, work
    monkeypatch.setattr(limits, "available_memory_bytes", lambda: 10**15)  # fits: then the weights are missing
    with work_done(monkeypatch) as work:
        _refused(folder, tmp_path / "run", capsys, "tensor model.layers.2.", "is missing", "num_hidden_layers=1000000")
    assert (work["models"], work["names"]) == (0, 1 + 2 * 9 + 1) and work["peak_bytes"] < MAX_PEAK_BYTES, work


@pytest.mark.parametrize("value, words", [(float("nan"), "(1 NaN, 0 infinite)"), (float("inf"), "(0 NaN, 1 infinite)")])
def test_non_finite_weights_are_refused_naming_the_tensor(hf_tokenizer, tmp_path, capsys, value, words):
    from safetensors.torch import load_file, save_file

    save_llama(tmp_path / "hf", hf_tokenizer)
    path = tmp_path / "hf" / "model.safetensors"
    tensors = load_file(path)
    tensors["model.layers.1.mlp.up_proj.weight"][3, 5] = value
    save_file(tensors, path, metadata={"format": "pt"})
    _refused(tmp_path / "hf", tmp_path / "run", capsys, "model.safetensors: tensor model.layers.1.mlp.up_proj.weight "
             "holds 1 non-finite value", words)


@pytest.mark.parametrize("changes, words", [
    ({"architectures": "LlamaForCausalLM"},
     ['architectures must be a list, e.g. ["LlamaForCausalLM"], got the string "LlamaForCausalLM"']),
    ({"architectures": ["MistralForCausalLM"]}, ["architectures ['MistralForCausalLM'] is not supported"]),
    ({"head_dim": "8"}, ['head_dim must be an integer, got the string "8"']),
    ({"num_hidden_layers": 2.5}, ["num_hidden_layers must be an integer, got the fractional number 2.5"]),
])
def test_a_fields_type_is_said(folder, tmp_path, capsys, changes, words):
    _edit_config(folder, **changes)
    _refused(folder, tmp_path / "run", capsys, *words)


def test_no_architectures_key(folder, tmp_path, capsys):
    config = json.loads((folder / "config.json").read_text())
    del config["architectures"]
    (folder / "config.json").write_text(json.dumps(config))
    assert main(["import", "--from", "hf", str(folder), str(tmp_path / "run")]) == 0  # model_type "llama" says it
    capsys.readouterr()
    del config["model_type"]
    (folder / "config.json").write_text(json.dumps(config))
    _refused(folder, tmp_path / "run2", capsys, 'has neither "architectures" nor "model_type"')


def test_weights_imported_are_the_files_values(folder, tmp_path):
    """The finite check reads what it imports: the run's embedding is the file's (oracle: safetensors)."""
    from safetensors.torch import load_file

    from seqlab.lm import load_model

    assert main(["import", "--from", "hf", str(folder), str(tmp_path / "run")]) == 0
    model, _, _ = load_model(run=tmp_path / "run")
    theirs = {}
    for shard in sorted(folder.glob("model-*.safetensors")):
        theirs.update(load_file(shard))
    torch.testing.assert_close(model.token_embeddings.weight, theirs["model.embed_tokens.weight"], rtol=0, atol=0)
