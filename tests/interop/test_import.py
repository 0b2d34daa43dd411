"""`seqlab import --from hf`: random LlamaForCausalLM folders saved here with transformers (fp32,
bf16, sharded), turned into runs that seqlab's commands use. Oracles: the same LlamaForCausalLM
(logits, greedy generation, the loss of every window), its parameter count, its tokenizer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from seqlab.cli import main
from seqlab.inference.generate import generate
from seqlab.lm.loading import load_model
from tests.interop.conftest import hf_greedy, hf_logits, seqlab_logits

EOT = "<|endoftext|>"
VOCAB = 400
PROMPTS = ("Once upon a time", "the cat sat on", "iron cement is")


@pytest.fixture(scope="module")
def hf_tokenizer(cs336_dir):
    """A byte-level BPE trained by Hugging Face tokenizers itself (400 ids, <|endoftext|> = 0)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=[EOT], show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train([str(cs336_dir / "corpus.en")], trainer)
    assert tokenizer.get_vocab_size() == VOCAB
    return tokenizer


def save_llama(folder: Path, tokenizer, *, dtype=torch.float32, shard: bool = False, num_kv_heads: int = 8,
               tied: bool = False, seed: int = 0):
    """A random LlamaForCausalLM (2 layers, 8 query heads of 8, ``num_kv_heads`` key/value heads, θ 500,
    ε 1e-6) saved with save_pretrained, and the tokenizer.json beside it; returns the model in float32
    (the oracle)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                         num_attention_heads=8, num_key_value_heads=num_kv_heads, max_position_embeddings=64,
                         rms_norm_eps=1e-6, rope_parameters={"rope_type": "default", "rope_theta": 500.0},
                         tie_word_embeddings=tied, initializer_range=0.05, bos_token_id=0, eos_token_id=0)
    model = LlamaForCausalLM(config).eval()
    model.to(dtype).save_pretrained(folder, max_shard_size="150KB" if shard else "5GB")
    tokenizer.save(str(folder / "tokenizer.json"))
    return model.float()


# 8 query heads; key/value heads 8 (MHA), 2 (GQA) or 1 (MQA); tied or not; fp32 or bf16; one sharded
CASES = {"fp32": {}, "bf16": {"dtype": torch.bfloat16}, "gqa": {"num_kv_heads": 2},
         "gqa_tied_bf16": {"num_kv_heads": 2, "tied": True, "dtype": torch.bfloat16}, "tied": {"tied": True},
         "mqa_tied": {"num_kv_heads": 1, "tied": True},
         "gqa_tied_sharded": {"num_kv_heads": 2, "tied": True, "shard": True}}


@pytest.fixture(scope="module")
def import_case(hf_tokenizer, tmp_path_factory):
    """``import_case(name)`` -> (HF model in float32, the imported run, the folder), made once per case."""
    made = {}

    def make(name: str):
        if name not in made:
            root = tmp_path_factory.mktemp(name)
            model = save_llama(root / "hf", hf_tokenizer, **CASES[name])
            assert main(["import", "--from", "hf", str(root / "hf"), str(root / "run")]) == 0
            made[name] = model, root / "run", root / "hf", CASES[name]
        return made[name]

    return make


@pytest.fixture(params=sorted(CASES))
def imported(request, import_case):
    return import_case(request.param)


@pytest.fixture
def sharded(import_case):
    """The sharded GQA import with tied embeddings, on which seqlab's commands are run."""
    return import_case("gqa_tied_sharded")


def test_the_folder_and_the_run_have_the_cases_shape(imported):
    _, run, folder, case = imported
    shards = sorted(p.name for p in folder.glob("model*.safetensors"))
    assert (len(shards) > 2) is case.get("shard", False) and (folder / "model.safetensors.index.json").is_file() is (
        len(shards) > 2)
    llama = json.loads((folder / "config.json").read_text())
    kv_heads, tied = case.get("num_kv_heads", 8), case.get("tied", False)
    assert llama["num_key_value_heads"] == kv_heads and llama["tie_word_embeddings"] is tied
    assert llama["dtype"] == ("bfloat16" if case.get("dtype") == torch.bfloat16 else "float32")
    model = load_model(run=run).model
    assert model.config.num_kv_heads == kv_heads and model.config.tie_embeddings is tied
    assert model.layers[0].attn.k_proj.weight.shape == (kv_heads * 8, 64)
    assert (model.lm_head.weight is model.token_embeddings.weight) is tied


def test_logits_and_greedy_generation_equal_transformers(imported, cs336_dir):
    from transformers import LlamaForCausalLM

    model, run, folder, _ = imported
    ours, tokenizer, payload = load_model(run=run)
    assert payload["iteration"] == 0 and ours.config.rope_theta == 500.0 and ours.config.norm_eps == 1e-6
    reference = LlamaForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()  # bf16 -> fp32 is exact
    for name in ("tinystories_sample.txt", "address.txt"):
        ids = tokenizer.encode((cs336_dir / name).read_text(encoding="utf-8"))[:64]
        torch.testing.assert_close(seqlab_logits(ours, ids), hf_logits(reference, ids), rtol=0, atol=1e-5)
    for prompt in PROMPTS:
        ids = tokenizer.encode(prompt)
        expected = hf_greedy(reference, ids, 20, eos_id=0)
        assert generate(ours, ids, 20, temperature=0.0, eos_id=0) == expected and len(expected) > 3


def test_the_tokenizer_gives_the_hf_ids(imported, hf_tokenizer, cs336_dir):
    _, run, _, _ = imported
    tokenizer = load_model(run=run).tokenizer
    assert tokenizer.vocab_size == VOCAB and tokenizer.eot_id == 0
    for name in ("tinystories_sample.txt", "german.txt", "corpus.en"):
        text = (cs336_dir / name).read_text(encoding="utf-8")
        assert tokenizer.encode(text) == hf_tokenizer.encode(text).ids


def test_seqlab_generate_prints_the_greedy_continuation(sharded, capsys):
    model, run, _, _ = sharded
    tokenizer = load_model(run=run).tokenizer
    prompt = PROMPTS[0]
    expected = hf_greedy(model, tokenizer.encode(prompt), 12, eos_id=0)
    capsys.readouterr()
    assert main(["generate", "--run", str(run), "--prompt", prompt, "--temperature", "0", "--max-tokens", "12"]) == 0
    text = expected[:-1] if expected[-1] == 0 else expected
    assert capsys.readouterr().out == prompt + tokenizer.decode(text) + "\n"


def test_seqlab_eval_gives_the_loss_of_transformers(sharded, cs336_dir, tmp_path, capsys):
    model, run, _, _ = sharded
    tokenizer = load_model(run=run).tokenizer
    ids = tokenizer.encode((cs336_dir / "tinystories_sample.txt").read_text(encoding="utf-8"))[:64 * 5 + 1]
    np.save(tmp_path / "valid.npy", np.array(ids, dtype=np.uint16))
    capsys.readouterr()
    assert main(["eval", "--run", str(run), "--data", str(tmp_path / "valid.npy"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    windows = torch.tensor(ids[:-1]).view(5, 64), torch.tensor(ids[1:]).view(5, 64)
    with torch.no_grad():
        logits = model(input_ids=windows[0]).logits
    expected = torch.nn.functional.cross_entropy(logits.reshape(-1, VOCAB), windows[1].reshape(-1)).item()
    assert result["tokens"] == 320 and result["loss"] == pytest.approx(expected, abs=1e-5)


def test_explore_serves_the_imported_run(sharded):
    from seqlab.explorer.runs import RunRegistry
    from tests.explorer.conftest import client_for, serving

    model, run, _, _ = sharded
    tokenizer = load_model(run=run).tokenizer
    text = PROMPTS[1]
    ids = tokenizer.encode(text)
    probs = torch.softmax(hf_logits(model, ids)[-1].double(), -1)
    with serving(RunRegistry([str(run)])) as server:
        client = client_for(server)
        assert [r["kind"] for r in client.ok("runs")["runs"]] == ["lm"]
        assert [t["id"] for t in client.ok("lm/tokens", {"text": text})["tokens"]] == ids
        candidates = client.ok("lm/next", {"text": text})["candidates"]
    top = torch.sort(probs, descending=True).indices[:20].tolist()
    assert [c["id"] for c in candidates] == top
    assert [c["prob"] for c in candidates] == pytest.approx(probs[top].tolist(), abs=1e-6)


def test_accounting_counts_the_transformers_parameters(sharded, capsys):
    model, run, _, _ = sharded
    capsys.readouterr()
    assert main(["accounting", "--config", str(run / "config.json"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["parameters"] == sum(p.numel() for p in model.parameters())


def test_train_resume_fine_tunes_the_imported_run(sharded, hf_tokenizer, cs336_dir, tmp_path, capsys):
    """Data prepared with the run's own tokenizer (`seqlab prepare --tokenizer RUN`, the README's
    command), then `seqlab train --resume`."""
    _, source, _, _ = sharded
    run = tmp_path / "run"
    shutil.copytree(source, run)
    data = tmp_path / "data"
    texts = {split: cs336_dir / name for split, name in (("train", "corpus.en"), ("valid", "tinystories_sample.txt"))}
    assert main(["prepare", "--tokenizer", str(run), "--train", str(texts["train"]), "--valid", str(texts["valid"]),
                 "--out", str(data), "--no-progress"]) == 0
    assert json.loads((data / "meta.json").read_text())["vocab_size"] == VOCAB
    for split, text in texts.items():  # the ids Hugging Face's tokenizer gives
        assert np.load(data / f"{split}.npy").tolist() == hf_tokenizer.encode(text.read_text(encoding="utf-8")).ids
    capsys.readouterr()
    assert main(["prepare", "--tokenizer", str(run), "--special-token", "<s>", "--train", str(texts["train"]),
                 "--valid", str(texts["valid"]), "--out", str(tmp_path / "other")]) == 2
    assert "--special-token cannot be given with --tokenizer" in capsys.readouterr().err
    assert not (tmp_path / "other").exists()
    before = load_model(run=run).model.state_dict()
    assert main(["train", "--resume", "--out-dir", str(run), "--data-dir", str(data), "--max-steps", "3",
                 "--batch-size", "2", "--warmup-steps", "1", "--eval-interval", "3", "--eval-batches", "1",
                 "--threads", "1", "--no-progress"]) == 0
    assert "completed at step 3/3" in capsys.readouterr().out
    after, _, payload = load_model(run=run)
    assert payload["iteration"] == 3 and payload["optimizer"]["state"]  # AdamW moments now exist
    changed = [name for name, value in after.state_dict().items() if not torch.equal(value, before[name])]
    assert "layers.0.attn.q_proj.weight" in changed and "token_embeddings.weight" in changed
    assert json.loads((run / "config.json").read_text())["settings"]["norm_eps"] == 1e-6


def test_generate_stops_at_llama_3s_end_of_text(tmp_path, cs336_dir, capsys):
    """A Llama 3 style tokenizer names its end-of-text ``<|end_of_text|>``. With the final norm's
    weight zeroed every logit is 0, so greedy decoding picks id 0, that token: transformers'
    generate (eos_token_id from config.json) stops at once, and so must `seqlab generate`."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train([str(cs336_dir / "corpus.en")], trainers.BpeTrainer(
        vocab_size=VOCAB, special_tokens=["<|end_of_text|>", "<|begin_of_text|>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    model = save_llama(tmp_path / "hf", tokenizer)
    with torch.no_grad():
        model.model.norm.weight.zero_()
    model.save_pretrained(tmp_path / "hf")
    prompt = PROMPTS[0]
    assert hf_greedy(model, tokenizer.encode(prompt).ids, 12, eos_id=model.config.eos_token_id) == [0]
    assert main(["import", "--from", "hf", str(tmp_path / "hf"), str(tmp_path / "run")]) == 0
    assert load_model(run=tmp_path / "run").tokenizer.eot_id == tokenizer.token_to_id("<|end_of_text|>") == 0
    capsys.readouterr()
    assert main(["generate", "--run", str(tmp_path / "run"), "--prompt", prompt, "--temperature", "0",
                 "--max-tokens", "12"]) == 0
    assert capsys.readouterr().out == prompt + "\n"


# -- refusals: the file and the field are named, nothing is written ---------------------------------


@pytest.fixture
def folder(hf_tokenizer, tmp_path) -> Path:
    save_llama(tmp_path / "hf", hf_tokenizer, shard=True)
    return tmp_path / "hf"


def _refused(src, out, capsys, *words) -> str:
    assert main(["import", "--from", "hf", str(src), str(out)]) == 1
    err = capsys.readouterr().err
    for word in words:
        assert word in err, err
    assert not Path(out).exists() or Path(out).name == "existing"
    return err


def _edit_config(folder: Path, **changes) -> None:
    path = folder / "config.json"
    config = json.loads(path.read_text())
    config.update(changes)
    path.write_text(json.dumps(config))


@pytest.mark.parametrize("changes, words", [
    ({"rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 8.0}},
     ["rope_parameters.rope_type 'llama3' is not supported"]),
    ({"rope_scaling": {"rope_type": "linear", "factor": 2.0}}, ["rope_scaling", "'linear'"]),
    ({"attention_bias": True}, ["attention_bias True is not supported", "no biases"]),
    ({"mlp_bias": True}, ["mlp_bias True is not supported"]),
    ({"sliding_window": 4096}, ["sliding_window 4096 is not supported"]),
    ({"hidden_act": "gelu"}, ["hidden_act 'gelu' is not supported"]),
    ({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True}},
     ["quantization_config {'quant_method': 'bitsandbytes'", "unquantized"]),
    ({"head_dim": 32}, ["head_dim 32 is not supported"]),
    ({"architectures": ["MistralForCausalLM"], "model_type": "mistral"},
     ["architectures ['MistralForCausalLM'] is not supported", "LlamaForCausalLM"]),
    ({"intermediate_size": 128}, ["mlp.gate_proj.weight",
                                  "has shape [96, 64], but config.json implies [128, 64]"]),
    ({"vocab_size": 500}, ["tokenizer.json has 400 ids but", "vocab_size is 500"]),
    ({"num_key_value_heads": 3}, ["num_attention_heads 8 is not a multiple of num_key_value_heads 3"]),
])
def test_unsupported_or_inconsistent_configs_are_refused(folder, tmp_path, capsys, changes, words):
    _edit_config(folder, **changes)
    err = _refused(folder, tmp_path / "run", capsys, *words)
    assert str(folder) in err


def test_key_value_heads_that_disagree_with_the_weights_are_a_shape_mismatch(folder, tmp_path, capsys):
    _edit_config(folder, num_key_value_heads=2)  # the weights have 8 key/value heads
    _refused(folder, tmp_path / "run", capsys, "self_attn.k_proj.weight has shape [64, 64], but config.json "
             "implies [16, 64]")


def test_a_missing_shard_is_named(folder, tmp_path, capsys):
    shard = sorted(folder.glob("model-*.safetensors"))[1]
    shard.unlink()
    _refused(folder, tmp_path / "run", capsys, "model.safetensors.index.json", shard.name, "is missing")


def test_a_missing_or_extra_tensor_is_named(hf_tokenizer, tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    save_llama(tmp_path / "hf", hf_tokenizer)
    path = tmp_path / "hf" / "model.safetensors"
    tensors = load_file(path)
    save_file({**tensors, "model.layers.1.self_attn.q_proj.bias": torch.zeros(64)}, path, metadata={"format": "pt"})
    _refused(tmp_path / "hf", tmp_path / "run", capsys, "model.safetensors: tensor "
             "model.layers.1.self_attn.q_proj.bias is not supported", "no biases")
    del tensors["model.layers.1.mlp.down_proj.weight"]
    save_file(tensors, path, metadata={"format": "pt"})
    _refused(tmp_path / "hf", tmp_path / "run", capsys, "tensor model.layers.1.mlp.down_proj.weight is missing")


def test_an_existing_out_a_hub_name_and_pickled_weights_are_refused(folder, tmp_path, capsys, monkeypatch):
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    _refused(folder, existing, capsys, "OUT", "is not empty and was not written by `seqlab import --from hf`", "--overwrite")
    assert [p.name for p in existing.iterdir()] == ["keep.txt"]
    monkeypatch.chdir(tmp_path)
    _refused("HuggingFaceTB/SmolLM-135M", tmp_path / "run", capsys, "never downloads",
             "huggingface-cli download HuggingFaceTB/SmolLM-135M --local-dir SmolLM-135M")
    _refused(tmp_path / "nowhere", tmp_path / "run", capsys, "nowhere does not exist")
    for path in folder.glob("model*"):
        path.unlink()
    (folder / "pytorch_model.bin").write_bytes(b"")
    _refused(folder, tmp_path / "run", capsys, "has neither model.safetensors", "pytorch_model.bin",
             "save_pretrained")


def test_an_unsupported_tokenizer_is_named(folder, tmp_path, capsys):
    table = json.loads((folder / "tokenizer.json").read_text())
    table["normalizer"] = {"type": "NFKC"}
    (folder / "tokenizer.json").write_text(json.dumps(table))
    _refused(folder, tmp_path / "run", capsys, "tokenizer.json: normalizer.type 'NFKC' is not supported")
