"""The attention backends wired into the models (issue 18 item 4): attention="sdpa" | "flash" beside
reference | chunked | auto, in the language model and in the seq2seq Transformer.

Every backend equals the reference inside the full models, in logits and in every parameter's
gradient (flash runs in Triton's CPU interpreter here: tests/conftest.py sets TRITON_INTERPRET=1
without CUDA; float32 and tiny shapes). flash takes no mask: with a padding mask it falls back to
auto's choice, which the call counts below show. The dispatcher reads no tensor values (no host
sync) and loops over nothing; sdpa's operation count is flat in the batch like the reference's.
`seqlab seq2seq train --attention sdpa` runs end to end (`seqlab train --attention sdpa`:
tests/training/test_attention_flag.py).
"""

from types import SimpleNamespace

import pytest
import torch
from benchmark_scripts import load_benchmark

import seqlab.model.attention as attention_module
from benchmarks.instruments.op_count import OpCounter
from seqlab.model import TransformerLM, attention_backend, gpu_path_forced

pytestmark = pytest.mark.usefixtures("one_thread")
BACKENDS = ("reference", "chunked", "sdpa", "flash")
LM = dict(vocab_size=29, context_length=12, d_model=16, num_layers=2, num_heads=4, d_ff=32)


def needs_triton(backend):
    if backend == "flash":
        pytest.importorskip("triton")


@pytest.fixture
def calls(monkeypatch):
    """How often each backend function ran (wrapped where MultiHeadAttention looks them up)."""
    counts = dict.fromkeys(BACKENDS, 0)
    for backend, name in (("reference", "scaled_dot_product_attention"), ("chunked", "chunked_attention"),
                          ("sdpa", "sdpa_attention"), ("flash", "flash_attention")):
        original = getattr(attention_module, name)

        def spy(*args, _original=original, _backend=backend, **kwargs):
            counts[_backend] += 1
            return _original(*args, **kwargs)

        monkeypatch.setattr(attention_module, name, spy)
    return counts


def test_which_backend_runs():
    cpu = torch.zeros(2, 4, 8, 16)
    assert attention_backend("sdpa", cpu) == "sdpa" and attention_backend("sdpa", cpu, has_mask=True) == "sdpa"
    assert attention_backend("auto", cpu, has_mask=True) == "chunked"
    # flash: where it runs (here the CPU interpreter, float32, no mask), else what auto picks
    if pytest.importorskip("triton"):
        assert attention_backend("flash", cpu) == "flash"
    assert attention_backend("flash", cpu, has_mask=True) == "chunked"
    assert attention_backend("flash", cpu.double()) == "chunked"  # the interpreter is float32 only
    assert attention_backend("flash", torch.zeros(1, 512)) == "chunked"  # head_dim > 256
    with gpu_path_forced():
        assert attention_backend("flash", cpu, has_mask=True) == "reference"
    # CUDA tensors (described by device, dtype and shape: all the dispatcher reads): auto is sdpa;
    # flash falls back to it for a mask, and here also because no GPU can run the kernel
    cuda = SimpleNamespace(device=torch.device("cuda", 0), dtype=torch.bfloat16, shape=(2, 4, 8, 64))
    assert attention_backend("auto", cuda) == "sdpa" and attention_backend("reference", cuda) == "reference"
    assert attention_backend("flash", cuda, has_mask=True) == "sdpa"
    assert attention_backend("flash", cuda) == ("flash" if torch.cuda.is_available() else "sdpa")


def test_choosing_a_backend_reads_no_tensor_values():
    q = torch.zeros(2, 4, 8, 16)
    with OpCounter() as counter:
        for name in ("auto", "reference", "chunked", "sdpa", "flash"):
            for has_mask in (False, True):
                attention_backend(name, q, has_mask=has_mask)
    assert counter.total == 0 and counter.syncs == 0


def _lm_grads(model, ids, padding_mask):
    logits = model(ids, padding_mask=padding_mask)
    weights = torch.randn(logits.shape, generator=torch.Generator().manual_seed(4))
    grads = torch.autograd.grad((logits * weights).sum(), list(model.parameters()))
    return logits.detach(), dict(zip([n for n, _ in model.named_parameters()], grads))


@pytest.mark.parametrize("num_kv_heads", [None, 2])
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_equals_the_reference_inside_the_language_model(backend, num_kv_heads, calls):
    needs_triton(backend)
    torch.manual_seed(0)
    model = TransformerLM(**LM, num_kv_heads=num_kv_heads, attention="reference")
    ids = torch.randint(0, 29, (2, 10), generator=torch.Generator().manual_seed(1))
    # row 1 is left-padded: its first two queries see no real key (a zero output in every backend)
    padding = torch.ones(2, 10, dtype=torch.bool)
    padding[1, :2] = False
    for mask in (None, padding):
        model.set_attention("reference")
        want, want_grads = _lm_grads(model, ids, mask)
        model.set_attention(backend)
        for name in calls:
            calls[name] = 0
        got, grads = _lm_grads(model, ids, mask)
        torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)
        for name, grad in grads.items():
            torch.testing.assert_close(grad, want_grads[name], atol=2e-5, rtol=1e-4, msg=lambda m, n=name: f"{n}: {m}")
        ran = "chunked" if backend == "flash" and mask is not None else backend  # flash falls back for a mask
        assert calls[ran] == LM["num_layers"] and sum(calls.values()) == LM["num_layers"], (backend, mask, calls)


@pytest.mark.parametrize("backend", ["sdpa", "flash"])
def test_kv_cache_decoding_with_a_backend_equals_the_reference_forward(backend, calls):
    """Decoding: one query against the cached keys (causal with m > n), prefill and padding included."""
    from test_transformer import decode_with_cache

    needs_triton(backend)
    torch.manual_seed(0)
    model = TransformerLM(**LM, num_kv_heads=2, attention="reference")
    ids = torch.randint(0, 29, (2, 12), generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        full = model(ids)
        model.set_attention(backend)
        torch.testing.assert_close(decode_with_cache(model, ids, 5), full, atol=2e-5, rtol=1e-4)
        assert calls[backend] == 8 * LM["num_layers"]  # prefill + 7 steps, no mask: the backend ran throughout
        padding = torch.ones(2, 12, dtype=torch.bool)
        padding[0, :3] = False
        model.set_attention("reference")
        full = model(ids, padding_mask=padding)
        model.set_attention(backend)
        torch.testing.assert_close(decode_with_cache(model, ids, 5, padding), full, atol=2e-5, rtol=1e-4)


def _s2s(backend, **options):
    from seqlab.seq2seq.transformer import TransformerSeq2Seq

    torch.manual_seed(0)
    return TransformerSeq2Seq(13, 11, 16, 4, 2, 1, 24, 16, attention=backend, **options)


def _s2s_batch():
    g = torch.Generator().manual_seed(3)
    src, tgt = torch.randint(4, 13, (3, 7), generator=g), torch.randint(4, 11, (3, 6), generator=g)
    src_mask = torch.arange(7)[None, :] < torch.tensor([7, 4, 2])[:, None]
    tgt_mask = torch.arange(6)[None, :] < torch.tensor([6, 6, 3])[:, None]
    return src, tgt, src_mask, tgt_mask


@pytest.mark.parametrize("options", [{}, dict(positional="rope", norm_position="pre", ffn="swiglu")],
                         ids=["post-sinusoidal-relu", "pre-rope-swiglu"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_every_backend_equals_the_reference_inside_the_seq2seq_transformer(backend, options, calls):
    needs_triton(backend)
    src, tgt, src_mask, tgt_mask = _s2s_batch()
    reference, model = _s2s("reference", **options), _s2s(backend, **options)
    weights = torch.randn(3, 6, 11, generator=torch.Generator().manual_seed(4))
    # 2 encoder self-attentions, 1 decoder self-attention, 1 cross-attention
    for masks, flash_runs in (((src_mask, tgt_mask), False), ((None, None), True)):
        want = reference(src, tgt, *masks)
        want_grads = torch.autograd.grad((want * weights).sum(), list(reference.parameters()))
        for name in calls:
            calls[name] = 0
        got = model(src, tgt, *masks)
        grads = torch.autograd.grad((got * weights).sum(), list(model.parameters()))
        torch.testing.assert_close(got, want, atol=2e-5, rtol=1e-4)
        for (name, _), a, b in zip(model.named_parameters(), grads, want_grads):
            torch.testing.assert_close(a, b, atol=2e-5, rtol=1e-4, msg=lambda m, n=name: f"{n}: {m}")
        ran = "chunked" if backend == "flash" and not flash_runs else backend  # masks send flash to auto's choice
        assert calls[ran] == 4 and sum(calls.values()) == 4, (backend, masks[0] is None, calls)


@pytest.mark.parametrize("backend", ["sdpa", "flash"])
def test_seq2seq_incremental_decoding_with_a_backend_equals_the_reference_forward(backend, calls):
    """encode + decode_step: cross-attention to the memory's cached keys/values (flash runs there when
    the source has no mask) and causal self-attention over the KV cache, one query at a time."""
    needs_triton(backend)
    src, tgt, src_mask, _ = _s2s_batch()
    reference, model = _s2s("reference", positional="rope"), _s2s(backend, positional="rope")
    with torch.no_grad():
        for mask in (None, src_mask):
            want = reference(src, tgt, mask)
            state = model.encode(src, mask)
            steps = []
            for t in range(tgt.shape[1]):
                logits, state = model.decode_step(state, tgt[:, t])
                steps.append(logits)
            torch.testing.assert_close(torch.stack(steps, 1), want, atol=2e-5, rtol=1e-4)
    assert calls[backend] > 0


def test_seq2seq_set_attention_switches_every_attention_and_checks_the_name():
    model = _s2s("auto")
    model.set_attention("sdpa")
    assert model.config.attention == "sdpa"
    assert {m.attention for m in model.modules() if isinstance(m, attention_module.MultiHeadAttention)} == {"sdpa"}
    with pytest.raises(ValueError, match="unknown attention backend 'xformers'"):
        model.set_attention("xformers")
    from seqlab.seq2seq.config import Seq2SeqConfig

    with pytest.raises(ValueError, match=r"Seq2SeqConfig.attention must be one of \('auto', 'reference', "
                                         r"'chunked', 'sdpa', 'flash'\), got 'xformers'"):
        Seq2SeqConfig("transformer", 13, 11, attention="xformers")


@pytest.fixture(scope="module")
def launch_count():
    return load_benchmark("launch_count")


def test_sdpa_operation_count_is_flat_in_the_batch_and_a_step_makes_no_sync(launch_count):
    counts = [launch_count.count_forward_backward("sdpa", b) for b in (8, 128)]
    assert counts[0] == counts[1] <= 2000, counts
    counter = launch_count.count_training_step("sdpa", 2, gpu_path=True)
    assert counter.syncs == 0, counter.sync_ops


@pytest.mark.parametrize("backend", ["reference", "sdpa", "flash"])
def test_a_padded_batch_on_the_gpu_path_makes_no_sync(backend):
    """A padding mask (and flash's fall back for it) adds no host read: same count at batch 2 and 8."""
    from seqlab.model.loss import cross_entropy

    needs_triton(backend)
    torch.manual_seed(0)
    model = TransformerLM(**LM, attention=backend)
    totals = []
    for batch in (2, 8):
        ids = torch.randint(0, 29, (batch, 11))
        padding = torch.ones(batch, 10, dtype=torch.bool)
        padding[0, :3] = False
        with gpu_path_forced(), OpCounter() as counter:
            cross_entropy(model(ids[:, :-1], padding_mask=padding), ids[:, 1:]).backward()
        assert counter.syncs == 0, counter.sync_ops
        totals.append(counter.total)
    assert totals[0] == totals[1], totals


@pytest.mark.parametrize("backend", ["sdpa", "flash"])
def test_a_model_with_a_backend_compiles_without_graph_breaks(backend):
    import torch._dynamo

    needs_triton(backend)
    torch._dynamo.reset()
    model = TransformerLM(**LM, attention=backend)
    explanation = torch._dynamo.explain(model)(torch.randint(0, 29, (2, 8)))
    torch._dynamo.reset()
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1


def test_seqlab_seq2seq_train_with_sdpa_runs_and_records_it(tmp_path, monkeypatch):
    from seqlab.cli import main
    from seqlab.runs.config import read_run_config
    from seqlab.seq2seq.loading import load_run

    counts = {"sdpa": 0}
    original = attention_module.sdpa_attention
    monkeypatch.setattr(attention_module, "sdpa_attention",
                        lambda *a, **k: counts.__setitem__("sdpa", counts["sdpa"] + 1) or original(*a, **k))
    run = tmp_path / "reverse"
    assert main(["seq2seq", "train", "--task", "reverse", "--min-len", "2", "--max-len", "5", "--train-size", "100",
                 "--valid-size", "10", "--d-model", "16", "--num-heads", "2", "--num-layers", "1", "--batch-size",
                 "16", "--max-steps", "3", "--eval-interval", "3", "--eval-batches", "1", "--threads", "1",
                 "--no-progress", "--attention", "sdpa", "--out", str(run)]) == 0
    config = read_run_config(run)
    assert config.settings["attention"] == "sdpa" and config.model["attention"] == "sdpa"
    assert counts["sdpa"] >= 3 * 4  # 3 steps x (encoder, decoder self, cross) + evaluation
    # loading for translation picks the backend for the device, as load_model does for the LM
    assert load_run(run, device="cpu").model.config.attention == "auto"
