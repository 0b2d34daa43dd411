"""Generation through a preallocated KV cache and a compiled one-token step (issue 18 item 6): the same
greedy tokens, the same samples for a seed and the same logits as the dynamic cache (the eager
reference), with sliding windows, batches of unequal prompts, GQA/MQA and tied weights; the step
compiles to one graph, once per batch size; its operations do not grow with the batch and it never
reads the device. CUDA graphs (mode "reduce-overhead") need a GPU: on a CPU the compiled step runs
through AOTAutograd ("aot_eager"), and through inductor in the slow test."""

from itertools import islice

import pytest
import torch
from test_faults_generation_limits import first_tokens
from test_generate import ABLATIONS, naive_greedy, tiny_model

from benchmarks.instruments.op_count import OpCounter
from seqlab.inference.generate import generate, generate_stream
from seqlab.inference.windows import (
    RowWindows,
    StaticRowWindows,
    compile_options,
    decode_step,
    static_decoder,
)
from seqlab.model import KVCache, StaticKVCache, gpu_path_forced

pytestmark = pytest.mark.usefixtures("one_thread")
PROMPTS = [[5, 9, 2, 30], [7], list(range(1, 12)), [3, 3, 3, 3, 3, 3]]


@pytest.mark.parametrize("name", ABLATIONS)
def test_static_cache_gives_the_dynamic_caches_greedy_tokens_and_samples(name):
    model = tiny_model(context_length=8, **ABLATIONS[name])
    dynamic = generate(model, PROMPTS, 30, temperature=0)  # 30 tokens through 8 positions: many slides
    assert generate(model, PROMPTS, 30, temperature=0, static_cache=True) == dynamic
    assert dynamic[0] == naive_greedy(model, PROMPTS[0], 30)
    for kwargs in (dict(temperature=1.0), dict(temperature=0.7, top_k=5, top_p=0.9)):
        sampled = generate(model, PROMPTS, 30, seed=11, **kwargs)
        assert generate(model, PROMPTS, 30, seed=11, static_cache=True, **kwargs) == sampled


@pytest.mark.parametrize("slide", [1, 3, None])
def test_every_steps_logits_equal_the_dynamic_caches(slide):
    model = tiny_model(context_length=8, num_kv_heads=2)
    keep = 8 - (slide or 2)
    windows = [p[-keep:] if len(p) > 8 else p for p in PROMPTS]
    with torch.no_grad():
        dynamic, static = RowWindows(model, windows, 40, keep), StaticRowWindows(model, windows, 40, keep)
        a, b = dynamic.prefill(), static.prefill()
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)
        g = torch.Generator().manual_seed(0)
        for _ in range(40):
            next_ids = torch.randint(0, 37, (len(windows),), generator=g)  # any tokens, not only the argmax
            a, b = dynamic.advance(next_ids), static.advance(next_ids)
            torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)
    assert isinstance(static.cache, StaticKVCache) and static.cache.keys[0].shape == (4, 2, 8, 8)  # GQA: 2 heads


def test_a_static_cache_appends_each_rows_keys_at_its_own_column():
    cache = StaticKVCache(2, 3, 2, 6, 4)
    keys, values = torch.randn(3, 2, 1, 4), torch.randn(3, 2, 1, 4)
    columns = torch.tensor([0, 5, 2])
    k, v = cache.at(columns).append(1, keys, values)
    assert k is cache.keys[1] and v is cache.values[1]
    expected_k, expected_v = torch.zeros(3, 2, 6, 4), torch.zeros(3, 2, 6, 4)
    for row, column in enumerate(columns.tolist()):  # the oracle: a plain loop over rows
        expected_k[row, :, column] = keys[row, :, 0]
        expected_v[row, :, column] = values[row, :, 0]
    assert torch.equal(k, expected_k) and torch.equal(v, expected_v) and not cache.keys[0].any()
    fresh = KVCache(2)
    for layer in range(2):
        fresh.append(layer, torch.ones(2, 2, 3, 4) * (layer + 1), torch.ones(2, 2, 3, 4))
    cache.load(fresh, torch.tensor([2, 0]))
    assert torch.equal(cache.keys[1][0, :, :3], torch.full((2, 3, 4), 2.0))
    assert torch.equal(cache.keys[1][1], expected_k[1])  # row 1 untouched
    cache.reset()
    assert not any(t.any() for t in (*cache.keys, *cache.values))
    with pytest.raises(ValueError, match="batch size and heads must match"):
        cache.at(columns).append(0, torch.randn(2, 2, 1, 4), torch.randn(2, 2, 1, 4))
    with pytest.raises(ValueError, match="do not fit a static cache of 6 columns"):
        long = KVCache(2)
        for layer in range(2):
            long.append(layer, torch.ones(3, 2, 7, 4), torch.ones(3, 2, 7, 4))
        cache.load(long)


@pytest.mark.parametrize("batch", [1, 4])
def test_the_compiled_step_is_one_graph_compiled_once_and_equals_eager(batch):
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    model = tiny_model(context_length=8, num_kv_heads=2, tie_embeddings=True)
    prompts = PROMPTS[:batch]
    expected = generate(model, prompts, 20, temperature=0)
    assert generate(model, prompts, 20, temperature=0, compile=counter) == expected
    assert counter.frame_count == 1  # one graph for every step, slides included
    sampled = generate(model, prompts, 20, temperature=0.8, seed=5)
    assert generate(model, prompts, 20, temperature=0.8, seed=5, compile=counter) == sampled
    assert counter.frame_count == 1  # a second generation reuses the compiled step and its buffers
    assert static_decoder(model, batch, torch.float32, counter).compiled


def test_a_compiled_stream_matches_and_other_batch_sizes_compile_their_own_step():
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    model = tiny_model(context_length=8)
    stream = list(generate_stream(model, [4, 5, 6], 12, temperature=0, compile=counter))
    assert stream == generate(model, [4, 5, 6], 12, temperature=0)
    generate(model, PROMPTS, 12, temperature=0, compile=counter)
    assert counter.frame_count == 2  # batch 1 and batch 4


def test_the_static_step_makes_the_same_operations_at_any_batch_and_never_reads_the_device():
    model = tiny_model(context_length=16, num_kv_heads=2)
    counts = []
    for batch in (1, 8):
        decoder = static_decoder(model, batch, torch.float32)
        ids, before = torch.zeros(batch, dtype=torch.long), torch.arange(batch) + 3
        with torch.no_grad(), gpu_path_forced(), OpCounter() as counter:
            decode_step(model, decoder.cache, ids, before)
        counts.append(counter.total)
        assert counter.syncs == 0, counter.sync_ops
    assert counts[0] == counts[1]
    with torch.no_grad(), gpu_path_forced():  # and the whole decoding loop, slides included
        rows = StaticRowWindows(model, [[1, 2, 3], [4, 5, 6, 7, 8]], 10**6, keep=12)
        next_ids = rows.prefill().argmax(-1)
        with OpCounter() as counter:
            for _ in range(3 * 16):
                next_ids = rows.advance(next_ids).argmax(-1)
    assert counter.syncs == 0, counter.sync_ops


def test_a_huge_request_with_the_static_cache_stays_bounded():
    from test_faults_generation_limits import small_model

    model = small_model()
    small, _ = first_tokens(model, [1, 2, 3], 5, 5, temperature=0, static_cache=True)
    huge, largest = first_tokens(model, [1, 2, 3], 10**9, 5, temperature=0, static_cache=True)
    assert huge == small == list(islice(generate_stream(model, [1, 2, 3], 5, temperature=0), 5))
    assert largest < 200_000


def test_bad_combinations_are_named():
    model = tiny_model()
    with pytest.raises(ValueError, match="compile=True needs the static cache"):
        generate(model, [1, 2], 3, compile=True, static_cache=False)
    with pytest.raises(ValueError, match="static_cache=True is a KV cache; it cannot go with use_cache=False"):
        generate(model, [1, 2], 3, static_cache=True, use_cache=False)


def test_cuda_gets_cuda_graphs_and_a_named_backend_is_used_as_given():
    cuda, cpu = torch.device("cuda"), torch.device("cpu")
    assert compile_options(True, cuda) == {"mode": "reduce-overhead", "fullgraph": True, "dynamic": False}
    assert compile_options(True, cpu) == {"fullgraph": True, "dynamic": False}
    assert compile_options("aot_eager", cuda) == {"backend": "aot_eager", "fullgraph": True, "dynamic": False}


@pytest.mark.slow
def test_the_step_compiled_by_inductor_on_a_cpu_matches_eager():
    """compile=True on a CPU: torch.compile's default backend (C++ code for the CPU), one graph."""
    torch._dynamo.reset()
    model = tiny_model(context_length=8, num_kv_heads=2)
    expected = generate(model, PROMPTS, 20, temperature=0)
    assert generate(model, PROMPTS, 20, temperature=0, compile=True) == expected
    sampled = generate(model, PROMPTS, 20, temperature=0.8, seed=2)
    assert generate(model, PROMPTS, 20, temperature=0.8, seed=2, compile=True) == sampled


def test_cli_generate_compile_prints_the_same_text(tmp_path, capsys, monkeypatch):
    """`seqlab generate --compile` decodes through the compiled static step (here through aot_eager, the
    CPU stand-in for CUDA graphs) and prints what the eager command prints."""
    from test_generate import make_run_dir

    from seqlab.cli import main
    from seqlab.inference import windows

    torch._dynamo.reset()
    compiled = []
    real_options = windows.compile_options

    def cpu_stand_in(compile, device):
        compiled.append(compile)
        return real_options("aot_eager", device)

    monkeypatch.setattr(windows, "compile_options", cpu_stand_in)
    run, _, _ = make_run_dir(tmp_path)
    args = ["generate", "--run", str(run), "--prompt", "hello", "--max-tokens", "30", "--temperature", "0"]
    assert main(args) == 0
    eager = capsys.readouterr().out
    assert main([*args, "--compile"]) == 0
    assert capsys.readouterr().out == eager and compiled == [True]
