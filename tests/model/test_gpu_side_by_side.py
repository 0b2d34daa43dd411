"""benchmarks/gpu_side_by_side.py stays ready for a GPU: its FLOP count against the models' own weights,
the issue's MFU numbers, every training mode and the generation comparison run on a CPU at tiny sizes
(compiled modes through aot_eager), and without CUDA it exits 2 with a message."""

import pytest
import torch
from benchmark_scripts import load_benchmark

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("gpu_side_by_side")


@pytest.mark.parametrize("shape", ["tiny", "cs336"])
def test_matmul_parameters_are_the_matmul_weights_of_both_models(bench, shape):
    """The oracles: every 2-D weight of seqlab's model and of transformers' Llama but the embedding table."""
    from seqlab.model import TransformerLM

    config = bench.model_config(bench.SHAPES[shape])
    ours = TransformerLM.from_config(config, device="meta")
    theirs = bench.hf_llama(config, "meta")
    ours_count = sum(p.numel() for n, p in ours.named_parameters() if p.dim() == 2 and "token_embeddings" not in n)
    theirs_count = sum(p.numel() for n, p in theirs.named_parameters() if p.dim() == 2 and "embed_tokens" not in n)
    assert bench.matmul_parameters(bench.SHAPES[shape]) == ours_count == theirs_count


def test_the_flop_formula_reproduces_the_issues_mfu(bench):
    cs336 = bench.SHAPES["cs336"]
    assert bench.flops_per_token(cs336) == 6 * 17_571_840 + 12 * 4 * 512 * 256
    # issue 18's table at the CS336 shape on a 989 TFLOP/s H200: 20.1 ms -> 18.4%, 14.1 -> 26.2%, 12.9 -> 28.8%
    for ms, share in ((20.1, 0.184), (14.1, 0.262), (12.9, 0.288)):
        assert bench.mfu(ms / 1e3, cs336, 989e12) == pytest.approx(share, abs=0.0015)
    assert bench.mfu(0.01, cs336, None) is None


def test_modes_are_parsed_and_unknown_ones_refused(bench):
    assert bench.split_mode("raw-eager") == ("raw", False) and bench.split_mode("trainer-logits") == ("trainer-logits", True)
    with pytest.raises(ValueError, match="unknown mode 'fast'"):
        bench.split_mode("fast")


def _check_rows(bench, rows, modes):
    assert list(rows) == modes
    for row in rows.values():
        assert len(row["ms_rounds"]) == 2 and row["ms"] > 0
        assert row["tokens_per_s"] == pytest.approx(64 / row["ms"] * 1e3)
        assert row["mfu"] == pytest.approx(bench.flops_per_token(bench.SHAPES["tiny"]) * row["tokens_per_s"] / 1e12)


def test_every_eager_training_mode_runs_and_is_timed_on_a_cpu(bench):
    modes = ["trainer-eager", "trainer-logits-eager", "raw-eager", "raw-logits-eager", "raw-pad-eager", "hf-eager"]
    said = []
    report = bench.measure_train("tiny", modes, torch.device("cpu"), rounds=2, steps=1, warmup=1, precision="fp32",
                                 peak=1e12, say=said.append)
    rows = report["modes"]
    _check_rows(bench, rows, modes)
    assert len(said) == len(modes)
    assert rows["trainer-eager"]["fused_loss"] is False and not rows["trainer-eager"]["compiled"]  # CPU: auto
    assert rows["raw-eager"]["loss"] == "fused" and rows["raw-logits-eager"]["loss"] == "logits"
    assert rows["raw-pad-eager"]["pad_vocab_multiple"] == 128 and rows["hf-eager"]["attn_implementation"] == "sdpa"
    assert rows["raw-eager"]["speed_vs_hf-eager"] == pytest.approx(rows["hf-eager"]["ms"] / rows["raw-eager"]["ms"])
    assert rows["trainer-eager"]["speed_vs_hf-eager"] > 0


@pytest.mark.slow
def test_the_compiled_training_modes_run_on_a_cpu(bench, monkeypatch):
    """The compiled modes through aot_eager (about 30 s on a busy 2-core machine: slow)."""
    from torch._dynamo.testing import CompileCounterWithBackend

    from seqlab.training import engine as engine_module

    torch._dynamo.reset()
    engine_compiles = CompileCounterWithBackend("aot_eager")  # the Trainer's compile, on a CPU
    monkeypatch.setattr(engine_module, "compile_model",
                        lambda module, device: (torch.compile(module, backend=engine_compiles), None))
    modes = ["trainer", "raw", "raw-logits", "hf"]
    report = bench.measure_train("tiny", modes, torch.device("cpu"), rounds=2, steps=1, warmup=1, precision="fp32",
                                 peak=1e12, compile_backend="aot_eager", say=lambda m: None)
    rows = report["modes"]
    _check_rows(bench, rows, modes)
    assert rows["trainer"]["compiled"] and engine_compiles.frame_count == 1
    assert rows["raw"]["speed_vs_hf"] == pytest.approx(rows["hf"]["ms"] / rows["raw"]["ms"])


def test_generation_runs_seqlab_and_transformers_on_the_same_weights(bench):
    """In float32 the greedy tokens of seqlab (eager, and its compiled static step) and of transformers'
    generate on the copied weights are the same, token for token."""
    torch._dynamo.reset()
    report = bench.measure_generate([1, 3], torch.device("cpu"), new_tokens=6, rounds=1, dtype_name="fp32",
                                    shape_name="tiny", context=32, compile_setting="aot_eager", say=lambda m: None)
    for batch in (1, 3):
        row = report["batches"][batch]
        assert set(row) == {"seqlab", "seqlab-compiled", "hf"}
        for name, numbers in row.items():
            assert numbers["tokens_equal_to_seqlab_eager"] == 1.0, (batch, name)
            assert numbers["tokens_per_s"] == pytest.approx(batch * 6 / (numbers["ms_per_token"] * 6 / 1e3))
        assert row["seqlab-compiled"]["speed_vs_hf"] > 0


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message of a machine without CUDA")
@pytest.mark.parametrize("what", ["train", "generate"])
def test_without_cuda_it_exits_2_and_says_why(bench, capsys, what):
    assert bench.main([what]) == 2
    assert "needs a CUDA GPU" in capsys.readouterr().err
