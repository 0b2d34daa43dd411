"""Accounting: parameter counts, matmul FLOPs and memory derived from the model config."""

import json
import subprocess
import sys

import pytest

from seqlab import accounting
from seqlab.accounting import (
    PRESETS,
    account,
    adamw_step_flops,
    count_parameters,
    forward_flops,
    max_batch_size,
    memory_bytes,
    training_step_flops,
    training_time_seconds,
)
from seqlab.cli import main

GPT2_XL = dict(vocab_size=50257, context_length=1024, num_layers=48, d_model=1600,
               num_heads=25, d_ff=6400)

ABLATIONS = [
    {},
    {"norm": "none"},
    {"norm_position": "post"},
    {"positional": "nope"},
    {"ffn": "silu", "d_ff": None},
    {"num_kv_heads": 2},  # grouped-query attention
    {"num_kv_heads": 1, "tie_embeddings": True},  # multi-query attention, tied embeddings
    {"tie_embeddings": True},
]


def test_gpt2_xl_parameters_and_flops_match_the_assignment():
    assert count_parameters(GPT2_XL)["total"] == 2_127_057_600
    flops = forward_flops(GPT2_XL)
    assert flops["total"] == 4_513_336_524_800
    assert f"{flops['total']:.4e}" == "4.5133e+12"
    # the preset is the same model
    assert count_parameters(PRESETS["gpt2-xl"])["total"] == 2_127_057_600


def test_gpt2_xl_components_by_hand():
    n, d, f, L, V = 1024, 1600, 6400, 48, 50257
    flops = forward_flops(GPT2_XL)
    assert flops["q_proj"] == L * 2 * n * d * d
    assert flops["attention_scores"] == flops["attention_values"] == L * 2 * n * n * d
    assert flops["ffn"] == L * 3 * 2 * n * d * f
    assert flops["lm_head"] == 2 * n * d * V
    report = account(GPT2_XL)
    assert sum(report["forward_flops_proportions"].values()) == pytest.approx(1.0)
    # the feed-forward dominates GPT-2 XL at full context (about two thirds)
    assert report["forward_flops_proportions"]["ffn"] == pytest.approx(62914560000 * 48 / 4513336524800)


def test_flops_scale_with_batch_and_training_is_three_forwards():
    one = forward_flops(PRESETS["tinystories"], 128, 1)
    four = forward_flops(PRESETS["tinystories"], 128, 4)
    assert all(four[k] == 4 * one[k] for k in one)
    assert training_step_flops(PRESETS["tinystories"], 128, 4) == 3 * four["total"]
    # halving the sequence quarters the n^2 attention terms and halves the rest
    half = forward_flops(PRESETS["tinystories"], 64, 1)
    assert one["attention_scores"] == 4 * half["attention_scores"]
    assert one["ffn"] == 2 * half["ffn"]


def test_memory_is_linear_in_batch_and_max_batch_fits():
    cfg = PRESETS["gpt2-small"]
    params = count_parameters(cfg)["total"]
    m1, m5 = memory_bytes(cfg, batch_size=1), memory_bytes(cfg, batch_size=5)
    a, b = m1["per_sequence_a"], m1["fixed_b"]
    assert b == 16 * params == m1["parameters"] + m1["gradients"] + m1["optimizer_state"]
    assert m5["total"] == 5 * a + b
    best = max_batch_size(cfg, memory_gb=80)
    assert best * a + b <= 80e9 < (best + 1) * a + b
    assert max_batch_size(cfg, memory_gb=0.1) == 0  # the optimizer state alone does not fit


def test_activation_count_by_hand_for_a_tiny_model():
    cfg = dict(vocab_size=11, context_length=5, d_model=8, num_layers=2, num_heads=2, d_ff=16)
    n, d, f, h, L, V = 5, 8, 16, 2, 2, 11
    per_layer = 2 * n * d + 3 * n * d + 2 * h * n * n + 2 * n * d + 4 * n * f + n * d
    expected = L * per_layer + n * d + 2 * n * V
    assert accounting.activation_elements(cfg)["total"] == expected
    assert memory_bytes(cfg)["per_sequence_a"] == 4 * expected


def test_adamw_and_training_time():
    cfg = PRESETS["tinystories"]
    params = count_parameters(cfg)["total"]
    assert adamw_step_flops(cfg) == 14 * params
    seconds = training_time_seconds(cfg, steps=10, batch_size=2, mfu=0.5, peak_flops=1e12)
    expected = 10 * (3 * forward_flops(cfg, None, 2)["total"] + 14 * params) / 0.5e12
    assert seconds == pytest.approx(expected)
    with pytest.raises(ValueError, match="mfu"):
        training_time_seconds(cfg, mfu=1.5)


def test_bad_config_names_the_problem():
    with pytest.raises(ValueError, match="bogus"):
        count_parameters(dict(GPT2_XL, bogus=1))
    with pytest.raises(ValueError, match="divisible"):
        count_parameters(dict(GPT2_XL, num_heads=7))
    with pytest.raises(ValueError, match="missing"):
        count_parameters({"vocab_size": 10})


@pytest.mark.parametrize("ablation", ABLATIONS, ids=lambda a: ",".join(f"{k}={v}" for k, v in a.items()) or "default")
def test_parameter_count_matches_an_instantiated_model(ablation):
    from seqlab.model import ModelConfig, TransformerLM

    cfg = ModelConfig(**{**dict(vocab_size=97, context_length=16, d_model=32, num_layers=3,
                                num_heads=4, d_ff=48), **ablation})
    model = TransformerLM.from_config(cfg)
    expected = sum(p.numel() for p in model.parameters() if p.requires_grad)
    assert count_parameters(cfg)["total"] == expected


@pytest.mark.parametrize("ablation", [{}, {"ffn": "silu", "d_ff": None}, {"positional": "nope"},
                                      {"num_kv_heads": 2, "tie_embeddings": True}, {"num_kv_heads": 1}],
                         ids=["default", "silu", "nope", "gqa-tied", "mqa"])
def test_forward_flops_match_torch_flop_counter(ablation):
    """torch's FlopCounterMode counts 2mnp per matmul of the real forward pass."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    from seqlab.model import ModelConfig, TransformerLM

    cfg = ModelConfig(**{**dict(vocab_size=97, context_length=16, d_model=32, num_layers=2,
                                num_heads=4, d_ff=48), **ablation})
    model = TransformerLM.from_config(cfg)
    ids = torch.randint(0, cfg.vocab_size, (3, 12))
    counter = FlopCounterMode(display=False)
    with counter, torch.no_grad():
        model(ids)
    assert forward_flops(cfg, seq_len=12, batch_size=3)["total"] == counter.get_total_flops()


def test_grouped_query_attention_and_tied_embeddings_by_hand():
    n, d, f, h, L, V = 5, 8, 16, 4, 2, 11
    base = dict(vocab_size=V, context_length=n, d_model=d, num_layers=L, num_heads=h, d_ff=f)
    d_kv = 1 * (d // h)  # one key/value head of d_head = 2
    mqa = dict(base, num_kv_heads=1)
    params, mha_params = count_parameters(mqa), count_parameters(base)
    assert params["attention"] == L * (2 * d * d + 2 * d * d_kv) < mha_params["attention"] == L * 4 * d * d
    assert params["lm_head"] == d * V and count_parameters(dict(mqa, tie_embeddings=True))["lm_head"] == 0
    assert (count_parameters(dict(mqa, tie_embeddings=True))["total"] == params["total"] - d * V)
    flops, mha_flops = forward_flops(mqa), forward_flops(base)
    assert flops["k_proj"] == flops["v_proj"] == L * 2 * n * d * d_kv
    for same in ("q_proj", "output_proj", "attention_scores", "attention_values", "lm_head"):
        assert flops[same] == mha_flops[same]  # every query head still scores every key
    assert forward_flops(dict(mqa, tie_embeddings=True)) == flops  # tying shares a matrix, not a multiply
    assert (accounting.activation_elements(base)["qkv"] - accounting.activation_elements(mqa)["qkv"]
            == L * 2 * n * (d - d_kv))
    assert accounting.kv_cache_bytes(mqa, batch_size=3) == 2 * L * 3 * n * d_kv * 4
    assert accounting.kv_cache_bytes(base, seq_len=4, bytes_per_value=2) == 2 * L * 4 * d * 2


@pytest.mark.parametrize("changes", [{}, {"num_kv_heads": 2}, {"num_kv_heads": 1}], ids=["mha", "gqa", "mqa"])
def test_kv_cache_bytes_equal_a_filled_cache(changes):
    import torch

    from seqlab.model import ModelConfig, TransformerLM

    cfg = ModelConfig(vocab_size=97, context_length=16, d_model=32, num_layers=3, num_heads=4, **changes)
    model = TransformerLM.from_config(cfg)
    cache = model.new_kv_cache()
    with torch.no_grad():
        model(torch.randint(0, 97, (2, 9)), kv_cache=cache)
        model(torch.randint(0, 97, (2, 1)), kv_cache=cache)
    stored = sum(t.numel() * t.element_size() for t in cache.keys + cache.values)
    assert accounting.kv_cache_bytes(cfg, seq_len=10, batch_size=2) == stored
    assert account(cfg, accounting.ReportOptions(context_length=10, batch_size=2))["kv_cache_bytes"] == stored


@pytest.mark.parametrize("name, published", [("smollm-135m", 134_515_008), ("llama3.2-1b", 1_235_814_400)])
def test_gqa_tied_presets_count_their_models_parameters(name, published):
    """Oracle: the model built on the meta device (shapes only). The published sizes of SmolLM-135M
    and Llama 3.2 1B are the same numbers."""
    from seqlab.model import ModelConfig, TransformerLM

    model = TransformerLM.from_config(ModelConfig(**PRESETS[name]), device="meta")
    assert count_parameters(PRESETS[name])["total"] == model.num_parameters() == published


def test_cli_json_and_table(capsys, tmp_path):
    assert main(["accounting", "--preset", "gpt2-xl", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["parameters"] == 2_127_057_600
    assert report["forward_flops"] == 4_513_336_524_800

    toml = tmp_path / "model.toml"
    toml.write_text('vocab_size = 10000\ncontext_length = 256\nd_model = 512\nnum_layers = 4\n'
                    'num_heads = 16\nd_ff = 1344\n')
    assert main(["accounting", "--config", str(toml), "--batch-size", "2", "--context-length", "128"]) == 0
    table = capsys.readouterr().out
    assert "2mnp" in table and "attention_scores" in table
    assert f"{count_parameters(PRESETS['tinystories'])['total']:,}" in table
    assert f"{forward_flops(PRESETS['tinystories'], 128, 2)['total']:.4e}" in table
    assert "KV cache (float32, inference), batch 2 x 128 tokens: 4.194 MB" in table  # 2*4*2*128*512*4 bytes
    assert main(["accounting", "--preset", "smollm-135m"]) == 0
    table = capsys.readouterr().out
    assert "9 heads (3 key/value heads)" in table and "tied embeddings" in table and "134,515,008" in table

    run_config = tmp_path / "config.json"  # a run's config.json with a "model" sub-dict
    run_config.write_text(json.dumps({"lr": 1e-3, "model": PRESETS["tinystories"]}))
    assert main(["accounting", "--config", str(run_config), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["parameters"] == count_parameters(PRESETS["tinystories"])["total"]

    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert main(["accounting", "--config", str(bad)]) == 1  # a damaged or missing input fails (1)
    assert "bad.json" in capsys.readouterr().err
    assert main(["accounting", "--config", str(tmp_path / "none.json")]) == 1
    assert capsys.readouterr().err.count("none.json") == 1  # named once, not repeated
    assert main(["accounting", "--preset", "gpt2-xl", "--steps", "-5", "--memory-gb", "0"]) == 2
    assert "must be positive: --steps -5, --memory-gb 0" in capsys.readouterr().err


def test_module_import_does_not_need_torch():
    code = "import sys, seqlab.accounting; sys.exit(1 if 'torch' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("name, shape", [("gpt2-small", (12, 768, 12)), ("gpt2-medium", (24, 1024, 16)),
                                         ("gpt2-large", (36, 1280, 20)), ("gpt2-xl", (48, 1600, 25))])
def test_gpt2_presets_say_they_are_not_gpt2(name, shape, capsys):
    """Issue 22: the gpt2-* presets are GPT-2's sizes in this toolkit's Llama-style model (190M and
    2.13B parameters for small and xl), not GPT-2 (124M, 1.56B); --help and the output say so. The
    GPT-2 counts are measured on Hugging Face's GPT2LMHeadModel (built on the meta device)."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    from seqlab.accounting.presets import GPT2_PARAMETERS

    layers, d_model, heads = shape
    with torch.device("meta"):
        gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=layers, n_embd=d_model, n_head=heads))
    assert GPT2_PARAMETERS[name] == sum(p.numel() for p in gpt2.parameters())
    ours = count_parameters(PRESETS[name])["total"]
    assert ours > GPT2_PARAMETERS[name]
    assert main(["accounting", "--preset", name]) == 0
    note = capsys.readouterr().out.splitlines()[-1]
    assert note.startswith(f"note: preset {name}: GPT-2 ") and "Llama-style" in note
    millions = lambda n: f"{n / 1e9:.2f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"  # noqa: E731
    assert f"{millions(ours)} parameters, not GPT-2" in note and note.endswith(f"'s {millions(GPT2_PARAMETERS[name])}")
    assert main(["accounting", "--preset", name, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["note"] == note.removeprefix("note: ")


def test_the_help_names_the_gpt2_difference(capsys):
    with pytest.raises(SystemExit):
        main(["accounting", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    small, xl = count_parameters(PRESETS["gpt2-small"])["total"], count_parameters(PRESETS["gpt2-xl"])["total"]
    assert f"gpt2-small {small / 1e6:.0f}M (GPT-2 small: 124M)" in help_text
    assert f"gpt2-xl {xl / 1e9:.2f}B (GPT-2 XL: 1.56B)" in help_text
    assert main(["accounting", "--preset", "tinystories"]) == 0
    assert "GPT-2" not in capsys.readouterr().out  # its note names its budget only


@pytest.mark.parametrize("steps, unit", [(20_000, "min"), (2_000_000, "h"), (100, "s")])
def test_training_time_is_printed_in_a_unit_that_fits(steps, unit, capsys):
    """A GPU-sized run is minutes, not "0.0 days" (the README quotes this estimate)."""
    seconds = training_time_seconds(PRESETS["tinystories"], steps=steps, batch_size=64, mfu=0.4, peak_flops=989e12)
    assert main(["accounting", "--preset", "tinystories", "--steps", str(steps), "--train-batch-size", "64",
                 "--mfu", "0.4", "--peak-flops", "989e12"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("training time:"))
    size = {"s": 1, "min": 60, "h": 3600}[unit]
    expected = f"= {seconds / size:.1f} {unit}" if unit != "s" else f"= {seconds:.0f} s"
    assert line.endswith(expected), (line, expected)
