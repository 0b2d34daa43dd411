"""linear_cross_entropy (LM head + cross-entropy, block by block) against F.cross_entropy(hidden @ W.T):
values, gradients, ignore_index, dtypes, peak memory, op counts and torch.compile."""

import pytest
import torch
import torch.nn.functional as F

import seqlab.model.loss as loss_module
from benchmarks.instruments.op_count import OpCounter
from benchmarks.instruments.peak_memory import peak_memory
from seqlab.model import gpu_path_forced
from seqlab.model.loss import cross_entropy, linear_cross_entropy

pytestmark = pytest.mark.usefixtures("one_thread")


def inputs(shape, vocab, d, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(*shape, d, generator=g, dtype=torch.float64).to(dtype).requires_grad_()
    weight = (torch.randn(vocab, d, generator=g, dtype=torch.float64) / d**0.5).to(dtype).requires_grad_()
    targets = torch.randint(0, vocab, shape, generator=g)
    return hidden, weight, targets


def oracle(hidden, weight, targets, **kwargs):
    """F.cross_entropy(hidden @ W.T) and its gradients on fresh leaves of the same values."""
    h, w = hidden.detach().clone().requires_grad_(), weight.detach().clone().requires_grad_()
    loss = F.cross_entropy((h @ w.t()).reshape(-1, w.shape[0]), targets.reshape(-1), **kwargs)
    return (loss, *torch.autograd.grad(loss, (h, w)))


def ours(hidden, weight, targets, **kwargs):
    loss = linear_cross_entropy(hidden, weight, targets, **kwargs)
    return (loss, *torch.autograd.grad(loss, (hidden, weight)))


def assert_all_close(got, expected, **tolerance):
    for name, a, b in zip(("loss", "grad_hidden", "grad_weight"), got, expected):
        torch.testing.assert_close(a, b, msg=lambda m, n=name: f"{n}: {m}", **tolerance)


@pytest.mark.parametrize("shape", [(37,), (3, 13)])
@pytest.mark.parametrize("chunk_size", [None, 1, 5, 16, 1000])
def test_float32_values_and_gradients_match_functional(shape, chunk_size):
    hidden, weight, targets = inputs(shape, 50, 24)
    assert_all_close(ours(hidden, weight, targets, chunk_size=chunk_size), oracle(hidden, weight, targets),
                     rtol=1e-5, atol=1e-5)


def test_gpu_path_blocks_match_functional():
    hidden, weight, targets = inputs((4, 19), 33, 16)
    with gpu_path_forced():
        got = ours(hidden, weight, targets)
    assert_all_close(got, oracle(hidden, weight, targets), rtol=1e-5, atol=1e-5)


def test_float64_gradcheck_with_a_scaled_upstream_gradient():
    hidden, weight, targets = inputs((9,), 7, 5, dtype=torch.float64)
    assert torch.autograd.gradcheck(lambda h, w: 3.0 * linear_cross_entropy(h, w, targets, chunk_size=4),
                                    (hidden, weight))


def test_bfloat16_matches_functional_on_bfloat16_logits():
    hidden, weight, targets = inputs((4, 32), 64, 32, dtype=torch.bfloat16)
    loss, grad_h, grad_w = ours(hidden, weight, targets, chunk_size=24)
    ref_loss, ref_h, ref_w = oracle(hidden, weight, targets)
    assert loss.dtype == torch.float32 and grad_h.dtype == grad_w.dtype == torch.bfloat16
    torch.testing.assert_close(loss, ref_loss.float(), rtol=1.6e-2, atol=1e-3)
    # bfloat16 rounding of the per-token gradients (~1/128 each): compare against their scale
    for got, ref in ((grad_h, ref_h), (grad_w, ref_w)):
        torch.testing.assert_close(got.float(), ref.float(), rtol=2e-2, atol=2e-2 * ref.float().abs().max().item())


def test_autocast_runs_the_matmuls_in_bfloat16_and_returns_float32_gradients():
    hidden, weight, targets = inputs((2, 16), 40, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss, grad_h, grad_w = ours(hidden, weight, targets)
    explicit = ours(hidden.detach().bfloat16().requires_grad_(), weight.detach().bfloat16().requires_grad_(), targets)
    assert grad_h.dtype == grad_w.dtype == torch.float32
    torch.testing.assert_close(loss, explicit[0])
    torch.testing.assert_close(grad_h, explicit[1].float())
    torch.testing.assert_close(grad_w, explicit[2].float())


@pytest.mark.parametrize("ignore_index", [0, -100])
def test_ignore_index_matches_functional(ignore_index):
    hidden, weight, targets = inputs((5, 8), 21, 12)
    targets.view(-1)[::3] = ignore_index  # e.g. a seq2seq batch's padding
    got = ours(hidden, weight, targets, ignore_index=ignore_index, chunk_size=6)
    assert_all_close(got, oracle(hidden, weight, targets, ignore_index=ignore_index), rtol=1e-5, atol=1e-5)
    assert torch.all(got[1][targets == ignore_index] == 0)  # ignored tokens get no gradient


def test_every_target_ignored_gives_zero_like_cross_entropy():
    hidden, weight, _ = inputs((6,), 9, 4)
    targets = torch.full((6,), -100)
    loss, grad_h, grad_w = ours(hidden, weight, targets, ignore_index=-100)
    assert loss.item() == 0.0 and torch.all(grad_h == 0) and torch.all(grad_w == 0)
    logits = (hidden @ weight.t()).detach()
    assert cross_entropy(logits, torch.zeros(6, dtype=torch.long), ignore_index=0).item() == 0.0  # same rule


def test_errors_name_the_shapes_and_the_bad_id():
    hidden, weight, targets = inputs((2, 3), 10, 4)
    with pytest.raises(ValueError, match=r"hidden \(2, 3, 4\) and targets \(3,\) disagree"):
        linear_cross_entropy(hidden, weight, targets[0])
    with pytest.raises(ValueError, match=r"weight \(4, 10\) must be \(vocab, d\) with d = 4.*transpose"):
        linear_cross_entropy(hidden, weight.t(), targets)
    with pytest.raises(ValueError, match=r"target id 10 at index \(4,\) is outside \[0, 10\)"):
        linear_cross_entropy(hidden, weight, torch.tensor([[0, 1, 2], [3, 10, 5]]))
    with pytest.raises(ValueError, match="chunk_size must be a positive"):
        linear_cross_entropy(hidden, weight, targets, chunk_size=0)


def test_token_blocks_cpu_default_and_fixed_count_on_the_gpu_path():
    rows = loss_module.LINEAR_CE_CPU_ROWS
    cpu = loss_module._token_blocks(2 * rows + 3, None, False)
    assert [(b.start, b.stop) for b in cpu] == [(0, rows), (rows, 2 * rows), (2 * rows, 2 * rows + 3)]
    for n in (8, 100, 32_768):
        gpu = loss_module._token_blocks(n, None, True)
        assert len(gpu) == loss_module.LINEAR_CE_GPU_BLOCKS and gpu[0].start == 0 and gpu[-1].stop == n
        assert all(a.stop == b.start for a, b in zip(gpu, gpu[1:]))
    assert len(loss_module._token_blocks(3, None, True)) == 3  # no empty blocks
    assert len(loss_module._token_blocks(100, 30, True)) == 4  # an explicit chunk_size wins


def test_gpu_path_operation_count_does_not_grow_with_the_tokens():
    counts = []
    for tokens in (64, 1024):
        hidden, weight, targets = inputs((tokens,), 30, 8)
        with gpu_path_forced(), OpCounter() as counter:
            linear_cross_entropy(hidden, weight, targets).backward()
        counts.append((counter.total, counter.syncs))
    assert counts[0] == counts[1] and counts[0][1] == 0


def extra_bytes(tokens, vocab, d, chunk_size):
    """Peak bytes above the inputs of one forward + backward, minus the two gradients it returns."""
    hidden, weight, targets = inputs((tokens,), vocab, d)
    peak = peak_memory(lambda: linear_cross_entropy(hidden, weight, targets, chunk_size=chunk_size).backward())
    return peak - (hidden.numel() + weight.numel()) * 4


def test_peak_memory_is_a_few_blocks_whatever_the_number_of_tokens():
    vocab, d, chunk = 2000, 32, 256
    block = chunk * vocab * 4  # one block of float32 logits: 2 MB
    small, large = extra_bytes(2048, vocab, d, chunk), extra_bytes(16_384, vocab, d, chunk)
    assert small < 3 * block and large < 3 * block, (small, large)
    assert abs(large - small) < block / 2  # 8x the tokens (16 MB more full logits), same temporaries
    # the measure sees full logits: logits + their gradient = 2 x 16,384 x 2,000 x 4 bytes = 262 MB
    hidden, weight, targets = inputs((16_384,), vocab, d)
    full = peak_memory(lambda: cross_entropy(hidden @ weight.t(), targets).backward())
    assert full > 2 * 16_384 * vocab * 4


@pytest.mark.slow
def test_peak_memory_at_32k_tokens_vocab_10k_d_512_is_under_half_a_gigabyte():
    hidden, weight, targets = inputs((32_768,), 10_000, 512)
    ours_peak = peak_memory(lambda: linear_cross_entropy(hidden, weight, targets).backward())
    hidden.grad = weight.grad = None
    full_peak = peak_memory(lambda: cross_entropy(hidden @ weight.t(), targets).backward())
    assert ours_peak < 0.5e9, ours_peak
    assert full_peak > 2.6e9, full_peak  # fp32 logits and their gradient: 2 x 1.31 GB


def test_compiles_to_one_graph_with_matching_values_and_gradients():
    from torch._dynamo.testing import CompileCounterWithBackend

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")  # AOTAutograd traces the hand-written backward too
    hidden, weight, targets = inputs((2, 24), 50, 16)
    for chunk_size in (None, 7):
        compiled = torch.compile(lambda h, w, t, c=chunk_size: linear_cross_entropy(h, w, t, chunk_size=c),
                                 backend=counter, fullgraph=True)  # fullgraph: a break raises
        loss = compiled(hidden, weight, targets)
        got = (loss, *torch.autograd.grad(loss, (hidden, weight)))
        assert_all_close(got, oracle(hidden, weight, targets), rtol=1e-5, atol=1e-5)
    assert counter.frame_count == 2  # one graph per compiled function, no breaks
    torch._dynamo.reset()
