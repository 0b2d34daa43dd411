"""The from-scratch Triton FlashAttention-2 (the flash backend) against seqlab's reference attention and
CS336 assignment 2's own test shapes, in values and gradients.

Without a GPU the kernels run on the CPU in Triton's interpreter (float32): tests/conftest.py sets
TRITON_INTERPRET=1 before anything imports triton (Triton picks the interpreter when triton.language
and each kernel are defined). Skipped only where triton is not installed.
"""

import math
import subprocess
import sys

import pytest
import torch

from seqlab.model.attention import scaled_dot_product_attention as reference

pytest.importorskip("triton")
pytestmark = pytest.mark.usefixtures("one_thread")
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def tensors(batch, heads, kv_heads, n, m, d, seed=0, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    make = lambda *shape: torch.randn(*shape, generator=g).to(DEVICE, dtype).requires_grad_()
    return make(batch, heads, n, d), make(batch, kv_heads, m, d), make(batch, kv_heads, m, d)


def expand_heads(t, heads):
    return t.repeat_interleave(heads // t.shape[-3], dim=-3)


def check_against_reference(q, k, v, causal, atol=1e-5, rtol=1e-4):
    from seqlab.model.flash_attention import flash_attention

    out = flash_attention(q, k, v, causal=causal)
    grad_out = torch.randn(out.shape, generator=torch.Generator().manual_seed(5)).to(out)
    grads = torch.autograd.grad(out, (q, k, v), grad_out)
    heads = q.shape[-3]
    expected = reference(q.double(), expand_heads(k, heads).double(), expand_heads(v, heads).double(), causal=causal)
    expected_grads = torch.autograd.grad(expected, (q, k, v), grad_out.double())
    assert out.shape == expected.shape and out.dtype == q.dtype
    torch.testing.assert_close(out.double(), expected, atol=atol, rtol=rtol)
    for name, a, b in zip("QKV", grads, expected_grads):
        assert a.dtype == q.dtype
        torch.testing.assert_close(a.double(), b.double(), atol=atol, rtol=rtol, msg=lambda msg, name=name: f"d{name}: {msg}")
    return out


# (batch, heads, kv_heads, n, m, d): tiles of 32 with ragged ends, d not a power of two, cached keys
# (m > n), queries that see no key (n > m, causal), grouped-query heads, a single query (decoding)
SHAPES = [(2, 2, 2, 37, 37, 16), (1, 4, 2, 40, 40, 24), (1, 2, 1, 20, 45, 8), (1, 2, 2, 45, 20, 16),
          (2, 4, 1, 1, 33, 16)]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("causal", [False, True])
def test_values_and_gradients_match_the_reference(shape, causal):
    check_against_reference(*tensors(*shape), causal)


def test_queries_without_a_visible_key_give_zeros_not_nan():
    q, k, v = tensors(1, 2, 2, 40, 10, 16)
    out = check_against_reference(q, k, v, causal=True)
    assert torch.all(out[..., :30, :] == 0)  # query i sits at position i - 30


def test_non_contiguous_inputs_in_the_model_layout():
    """The model passes (batch, seq, heads, d) projections transposed to (batch, heads, seq, d)."""
    g = torch.Generator().manual_seed(1)
    qkv = torch.randn(2, 33, 3, 4, 16, generator=g).to(DEVICE).requires_grad_()
    q, k, v = (t.transpose(1, 2) for t in qkv.unbind(2))
    assert not q.is_contiguous()
    from seqlab.model.flash_attention import flash_attention

    out = flash_attention(q, k, v, causal=True)
    expected = reference(q, k, v, causal=True)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-4)
    (grad,) = torch.autograd.grad(out.square().sum(), qkv)
    (expected_grad,) = torch.autograd.grad(expected.square().sum(), qkv)
    torch.testing.assert_close(grad, expected_grad, atol=1e-5, rtol=1e-4)


@pytest.mark.filterwarnings("ignore:All-NaN slice encountered:RuntimeWarning")  # the interpreter's NumPy max
def test_causal_tiles_above_the_diagonal_are_never_read():
    """NaN in every key/value a query tile cannot see leaves that tile's outputs clean, and NaN in
    queries that cannot see a key tile leaves that tile's dK and dV clean: the tiles are skipped,
    not loaded and masked (NaN * 0 would be NaN)."""
    from seqlab.model.flash_attention import INTERPRETER_BLOCKS, flash_attention

    block = INTERPRETER_BLOCKS["BLOCK_M"] if DEVICE == "cpu" else 128
    n = 2 * block
    q, k, v = (t.detach() for t in tensors(1, 1, 1, n, n, 16))
    k_bad, v_bad = k.clone(), v.clone()
    k_bad[..., block:, :] = float("nan")
    v_bad[..., block:, :] = float("nan")
    out = flash_attention(q, k_bad, v_bad, causal=True)
    torch.testing.assert_close(out[..., :block, :], reference(q, k, v, causal=True)[..., :block, :],
                               atol=1e-5, rtol=1e-4)
    q_bad = q.clone()
    q_bad[..., :block, :] = float("nan")  # queries 0..block-1 never see keys block..n-1
    q_bad.requires_grad_(), k.requires_grad_(), v.requires_grad_()
    out = flash_attention(q_bad, k, v, causal=True)
    grad_k, grad_v = torch.autograd.grad(out[..., block:, :].sum(), (k, v))
    assert torch.isfinite(grad_k[..., block:, :]).all() and torch.isfinite(grad_v[..., block:, :]).all()


# --- CS336 assignment 2's interface: FlashAttentionTriton.apply(Q, K, V, is_causal), (batch, n, d) ---

def cs336_reference(q, k, v, is_causal):
    """Attention and log-sum-exp the way the assignment's tests form them (masked scores at -1e6)."""
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if is_causal:
        n = q.shape[-2]
        keep = torch.arange(n, device=q.device)[:, None] >= torch.arange(k.shape[-2], device=q.device)[None, :]
        scores = torch.where(keep, scores, -1e6)
    return torch.softmax(scores, dim=-1) @ v, torch.logsumexp(scores, dim=-1)


def cs336_inputs():
    torch.random.manual_seed(0)
    make = lambda: torch.randn(4, 128, 64, device=DEVICE, requires_grad=True)
    return make(), make(), make(), torch.randn(4, 128, 64, device=DEVICE)


@pytest.mark.parametrize("is_causal", [False, True])
def test_cs336_forward_saves_the_log_sum_exp_of_shape_batch_by_queries(is_causal):
    from seqlab.model.flash_attention import FlashAttentionTriton

    q, k, v, _ = cs336_inputs()
    out = FlashAttentionTriton.apply(q, k, v, is_causal)
    saved = [t for t in out.grad_fn.saved_tensors if t.shape == (q.shape[0], q.shape[1])]
    assert len(saved) == 1
    expected_out, expected_lse = cs336_reference(q, k, v, is_causal)
    torch.testing.assert_close(out, expected_out, rtol=1e-2, atol=1e-2)
    torch.testing.assert_close(saved[0], expected_lse, rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("is_causal", [False, True])
def test_cs336_backward(is_causal):
    from seqlab.model.flash_attention import FlashAttentionTriton

    q, k, v, grad_out = cs336_inputs()
    cs336_reference(q, k, v, is_causal)[0].backward(grad_out)
    expected = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    FlashAttentionTriton.apply(q, k, v, is_causal).backward(grad_out)
    for got, want in zip((q.grad, k.grad, v.grad), expected):
        torch.testing.assert_close(got, want, rtol=1e-2, atol=1e-2)


def test_errors_name_the_problem():
    from seqlab.model.flash_attention import flash_attention

    q, k, v = tensors(1, 4, 3, 8, 8, 16)
    with pytest.raises(ValueError, match="multiple of the key/value heads"):
        flash_attention(q, k, v)
    q, k, v = tensors(1, 2, 2, 8, 8, 16)
    with pytest.raises(ValueError, match="takes no mask.*'sdpa' or 'reference'"):
        flash_attention(q, k, v, torch.ones(8, 8, dtype=torch.bool))
    with pytest.raises(ValueError, match="heads dimension"):
        flash_attention(q[0, 0], k[0, 0], v[0, 0])
    if DEVICE == "cpu":
        with pytest.raises(TypeError, match="interpreter runs float32 only"):
            flash_attention(q.bfloat16(), k.bfloat16(), v.bfloat16())


def test_backend_support_says_flash_runs_here():
    from seqlab.model.backend_support import attention_backend_supports

    assert attention_backend_supports("flash", DEVICE, torch.float32, has_mask=False, head_dim=64)
    assert not attention_backend_supports("flash", DEVICE, torch.float32, has_mask=False, head_dim=512)
    assert not attention_backend_supports("flash", DEVICE, torch.float32, has_mask=True)


@pytest.mark.skipif(DEVICE != "cuda", reason="bfloat16 and float16 need a GPU (the interpreter is float32 only)")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_on_the_gpu(dtype):
    check_against_reference(*tensors(2, 8, 2, 200, 200, 64, dtype=dtype), True, atol=2e-2, rtol=2e-2)


def test_import_seqlab_model_needs_no_triton():
    code = ("import sys; sys.modules['triton'] = None\n"
            "import torch, seqlab.model, seqlab.model.flash_attention as fa, seqlab.model.backend_support as bs\n"
            "assert not fa.triton_available()\n"
            "assert not bs.attention_backend_supports('flash', 'cpu', torch.float32, False)\n"
            "q = torch.zeros(1, 1, 2, 4)\n"
            "try:\n    fa.flash_attention(q, q, q)\nexcept RuntimeError as e:\n    print('ERR', e)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ERR attention='flash' needs triton" in result.stdout


def test_compiles_without_graph_breaks():
    """The kernels sit behind two torch custom operators, so torch.compile traces around them."""
    from torch._dynamo.testing import CompileCounterWithBackend

    from seqlab.model.flash_attention import flash_attention

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")  # AOTAutograd also traces the backward (fake kernels)
    q, k, v = tensors(1, 4, 2, 40, 40, 16)
    compiled = torch.compile(lambda q, k, v: flash_attention(q, k, v, causal=True), backend=counter,
                             fullgraph=True)  # a graph break would raise
    out = compiled(q, k, v)
    grads = torch.autograd.grad(out.square().sum(), (q, k, v))
    eager = flash_attention(q, k, v, causal=True)
    eager_grads = torch.autograd.grad(eager.square().sum(), (q, k, v))
    assert counter.frame_count == 1
    torch.testing.assert_close(out, eager)
    for a, b in zip(grads, eager_grads):
        torch.testing.assert_close(a, b)
    torch._dynamo.reset()
