"""FlashAttention-2, written from scratch in Triton: the `flash` attention backend.

The forward walks over key/value tiles with an online softmax and saves only each query's
log-sum-exp L, never the (n, m) scores; the backward recomputes P = exp(Q K^T / sqrt(d) - L) tile
by tile (kernels: seqlab.model.flash_kernels). Same calling convention as the reference, with
grouped-query K/V and causal = the n queries are the last n of m positions. It takes NO mask
(the dispatcher falls back to another backend). Runs on CUDA, or on a CPU under TRITON_INTERPRET=1
(float32, slow: for tests); triton is imported only when a kernel first runs. The launches are
torch custom operators, so torch.compile keeps the model in one graph. `FlashAttentionTriton.apply(
Q, K, V, is_causal)` is CS336's interface.

Example (values as the reference; run on a GPU, or on a CPU under TRITON_INTERPRET=1):

    >>> q = k = torch.eye(2)[None, None]; v = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    >>> flash_attention(q, k, v, causal=True)  # query 1: softmax([0, 0.71]) = [0.33, 0.67]
    tensor([[[[1.0000, 2.0000],
              [2.3395, 3.3395]]]])
"""

from __future__ import annotations

import contextlib
import importlib.util
import math
import os
import sys

import torch

from seqlab.model.attention_inputs import check_attention_inputs
from seqlab.model.broadcast import broadcast_shapes

FLASH_DTYPES = (torch.float32, torch.bfloat16, torch.float16)
MAX_HEAD_DIM = 256
# tile sizes (BLOCK_M queries x BLOCK_N keys) and launch settings on a GPU for head dims <= 64 and
# <= 256: common FlashAttention choices, NOT yet tuned on a GPU (none was available); tune them with
# benchmarks/attention_backends.py
GPU_FORWARD = {64: dict(BLOCK_M=128, BLOCK_N=64, num_warps=4, num_stages=3),
               256: dict(BLOCK_M=64, BLOCK_N=64, num_warps=8, num_stages=2)}
GPU_BACKWARD = {64: dict(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=2),
                256: dict(BLOCK_M=32, BLOCK_N=64, num_warps=8, num_stages=1)}
# the interpreter runs each program in NumPy: fewer, larger tiles are faster
INTERPRETER_BLOCKS = dict(BLOCK_M=32, BLOCK_N=32)


def triton_available() -> bool:
    """Whether triton can be imported (without importing it)."""
    try:
        return importlib.util.find_spec("triton") is not None
    except (ImportError, ValueError):
        return False


def interpreter_on() -> bool:
    """Whether the kernels run (or, not yet defined, will run) in Triton's CPU interpreter."""
    kernels = sys.modules.get("seqlab.model.flash_kernels")
    if kernels is not None:
        return kernels.INTERPRETED
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def flash_supports(device: torch.device | str, dtype: torch.dtype, has_mask: bool,
                   head_dim: int | None = None) -> bool:
    """Whether flash_attention can run these inputs: triton installed, no mask, float32/bfloat16/
    float16, head_dim <= MAX_HEAD_DIM, and a CUDA GPU of compute capability >= 7.0 (8.0 for
    bfloat16), or float32 CPU tensors under Triton's interpreter."""
    device = torch.device(device)
    if has_mask or dtype not in FLASH_DTYPES or not triton_available():
        return False
    if head_dim is not None and not 0 < head_dim <= MAX_HEAD_DIM:
        return False
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return False
        major, _ = torch.cuda.get_device_capability(device)
        return major >= (8 if dtype == torch.bfloat16 else 7)
    return device.type == "cpu" and dtype == torch.float32 and interpreter_on()


def _kernels():
    """seqlab.model.flash_kernels, imported (and the kernels defined) on first use."""
    if not triton_available():
        raise RuntimeError("attention='flash' needs triton (pip install triton; it ships with torch on "
                           "Linux x86-64): use attention='sdpa' or 'reference' without it")
    from seqlab.model import flash_kernels

    return flash_kernels


def _launch_settings(head_dim: int, device: torch.device, backward: bool) -> dict:
    block_d = max(16, triton_next_power_of_2(head_dim))
    if device.type != "cuda":
        return dict(INTERPRETER_BLOCKS, BLOCK_D=block_d)
    table = GPU_BACKWARD if backward else GPU_FORWARD
    return dict(table[64 if block_d <= 64 else 256], BLOCK_D=block_d)


def triton_next_power_of_2(value: int) -> int:
    """The smallest power of two >= value (triton.next_power_of_2, without importing triton)."""
    return 1 << max(0, value - 1).bit_length()


def _precision(dtype: torch.dtype) -> str:
    """float32 tiles multiply in full float32 ("ieee"), unless torch itself allows TF32 matmuls."""
    return "tf32" if dtype == torch.float32 and torch.backends.cuda.matmul.allow_tf32 else "ieee"


def check_flash_inputs(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    """q (batch, heads, n, d), k and v (batch, kv_heads, m, d): the shapes and dtypes the kernels take."""
    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"flash kernels take (batch, heads, positions, head_dim) tensors, got Q "
                         f"{tuple(q.shape)}, K {tuple(k.shape)}, V {tuple(v.shape)}")
    if k.shape != v.shape or k.shape[0] != q.shape[0] or k.shape[-1] != q.shape[-1]:
        raise ValueError(f"flash attention needs K and V of one shape (batch, kv_heads, m, d) matching "
                         f"Q's batch and d (V's d too): Q {tuple(q.shape)}, K {tuple(k.shape)}, V {tuple(v.shape)}")
    heads, kv_heads = q.shape[1], k.shape[1]
    if kv_heads == 0 or heads % kv_heads != 0:
        raise ValueError(f"Q has {heads} heads and K/V {kv_heads}: the query heads must be a multiple "
                         f"of the key/value heads (grouped-query attention)")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in FLASH_DTYPES:
        raise TypeError(f"flash attention takes Q, K, V of one dtype among float32, bfloat16, float16; "
                        f"got {q.dtype}, {k.dtype}, {v.dtype}")
    if q.shape[-1] > MAX_HEAD_DIM:
        raise ValueError(f"flash attention supports head_dim <= {MAX_HEAD_DIM}, got {q.shape[-1]}")
    if not (q.device == k.device == v.device):
        raise ValueError(f"Q, K, V are on different devices: {q.device}, {k.device}, {v.device}")


def _kernels_for(q: torch.Tensor):
    """The kernels module, once the device of q is one they run on (CUDA, or a CPU when interpreted)."""
    kernels = _kernels()
    if q.device.type != "cuda":
        if q.device.type != "cpu" or not kernels.INTERPRETED:
            raise RuntimeError(
                f"the Triton flash kernels run on CUDA tensors (got {q.device}); on a CPU only in Triton's "
                f"interpreter, with TRITON_INTERPRET=1 set before triton is first imported (now "
                f"{'set' if os.environ.get('TRITON_INTERPRET') == '1' else 'unset'}"
                f"{', but the kernels were defined without it' if not kernels.INTERPRETED else ''})")
        if q.dtype != torch.float32:
            raise TypeError(f"Triton's CPU interpreter runs float32 only, got {q.dtype}")
    return kernels


def _on_device(q: torch.Tensor):
    """Launch context: kernels go to q's GPU (not the current one)."""
    return torch.cuda.device(q.device) if q.device.type == "cuda" else contextlib.nullcontext()


# The kernels are launched from two torch custom operators, so torch.compile sees two opaque operations
# (shapes from the register_fake functions) instead of tracing into Triton launches.

@torch.library.custom_op("seqlab::flash_forward", mutates_args=())
def flash_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """(O (batch, heads, n, d) in q's dtype, log-sum-exp (batch, heads, n) float32) of 4-d inputs."""
    check_flash_inputs(q, k, v)
    batch, heads, n, d = q.shape
    kv_heads, m = k.shape[1], k.shape[2]
    out = torch.empty((batch, heads, n, d), dtype=q.dtype, device=q.device)
    lse = torch.empty((batch, heads, n), dtype=torch.float32, device=q.device)
    if out.numel() == 0:
        return out, lse
    kernels = _kernels_for(q)
    settings = _launch_settings(d, q.device, backward=False)
    grid = (triton_cdiv(n, settings["BLOCK_M"]), batch * heads)
    with _on_device(q):
        kernels.flash_forward_kernel[grid](
            q, k, v, out, lse, *q.stride(), *k.stride(), *v.stride(), *out.stride(), *lse.stride(),
            heads, heads // kv_heads, n, m, d, (1.0 / math.sqrt(d)) * 1.4426950408889634,
            CAUSAL=causal, PRECISION=_precision(q.dtype), **settings,
        )
    return out, lse


@flash_forward.register_fake
def _(q, k, v, causal):
    check_flash_inputs(q, k, v)
    return q.new_empty(q.shape), q.new_empty(q.shape[:-1], dtype=torch.float32)


@torch.library.custom_op("seqlab::flash_backward", mutates_args=())
def flash_backward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                   grad_out: torch.Tensor, causal: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(dQ, dK, dV) of 4-d inputs from the forward's output and log-sum-exp (recomputing P by tiles)."""
    batch, heads, n, d = q.shape
    kv_heads, m = k.shape[1], k.shape[2]
    if q.numel() == 0 or k.numel() == 0:
        return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
    grad_q, grad_k, grad_v = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    kernels = _kernels_for(q)
    grad_out = grad_out.to(q.dtype)
    lse = lse.contiguous()
    delta = (grad_out.float() * out.float()).sum(-1).contiguous()  # rowsum(dO * O) = rowsum(P * dP)
    settings = _launch_settings(d, q.device, backward=True)
    common = dict(CAUSAL=causal, PRECISION=_precision(q.dtype), **settings)
    strides = (*q.stride(), *k.stride(), *v.stride(), *grad_out.stride(), *lse.stride())
    with _on_device(q):
        kernels.flash_backward_dkdv_kernel[(triton_cdiv(m, settings["BLOCK_N"]), batch * kv_heads)](
            q, k, v, grad_out, lse, delta, grad_k, grad_v, *strides, *grad_k.stride(), *grad_v.stride(),
            kv_heads, heads // kv_heads, n, m, d, 1.0 / math.sqrt(d), **common,
        )
        kernels.flash_backward_dq_kernel[(triton_cdiv(n, settings["BLOCK_M"]), batch * heads)](
            q, k, v, grad_out, lse, delta, grad_q, *strides, *grad_q.stride(),
            heads, heads // kv_heads, n, m, d, 1.0 / math.sqrt(d), **common,
        )
    return grad_q, grad_k, grad_v


@flash_backward.register_fake
def _(q, k, v, out, lse, grad_out, causal):
    return torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


class FlashAttentionTriton(torch.autograd.Function):
    """FlashAttention-2 forward and backward in Triton, as CS336 assignment 2 asks.

    apply(Q, K, V, is_causal=False): Q (batch, n, d) and K, V (batch, m, d), or with a heads
    dimension (batch, heads, n, d) and K, V (batch, kv_heads, m, d). Saves Q, K, V, O and the
    log-sum-exp L of each query's scores, of shape Q.shape[:-1] ((batch, n) for 3-d inputs).
    is_causal: query i (of the last n of m positions) sees keys j <= i + m - n.
    """

    @staticmethod
    def forward(ctx, Q, K, V, is_causal=False):
        if Q.dim() not in (3, 4) or K.dim() != Q.dim() or V.dim() != Q.dim():
            raise ValueError(f"FlashAttentionTriton takes Q, K, V of shape (batch, n, d) or (batch, heads, n, d); "
                             f"got {tuple(Q.shape)}, {tuple(K.shape)}, {tuple(V.shape)}")
        as_4d = (lambda t: t.unsqueeze(1)) if Q.dim() == 3 else (lambda t: t)
        out, lse = flash_forward(as_4d(Q), as_4d(K), as_4d(V), bool(is_causal))
        out, lse = out.view(Q.shape), lse.view(Q.shape[:-1])
        ctx.save_for_backward(Q, K, V, out, lse)
        ctx.causal = bool(is_causal)
        return out

    @staticmethod
    def backward(ctx, grad_out):
        Q, K, V, out, lse = ctx.saved_tensors
        as_4d = (lambda t: t.unsqueeze(1)) if Q.dim() == 3 else (lambda t: t)
        grads = flash_backward(as_4d(Q), as_4d(K), as_4d(V), as_4d(out), as_4d(lse), as_4d(grad_out), ctx.causal)
        return (*(g.view(t.shape) for g, t in zip(grads, (Q, K, V))), None)


def flash_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None = None, *,
                    causal: bool = False) -> torch.Tensor:
    """softmax(Q K^T / sqrt(d)) V by the Triton FlashAttention-2 kernels; the `flash` backend.

    Q (..., heads, n, d), K and V (..., kv_heads, m, d) (leading dims broadcast; heads a multiple
    of kv_heads); causal as the reference (queries are the last n of m positions). `mask` must be
    None: a ValueError says to use another backend for a padding mask.
    """
    check_attention_inputs(q, k, v, mask)
    if mask is not None:
        raise ValueError("attention='flash' takes no mask (only causal=True/False); for a padding mask use "
                         "attention='sdpa' or 'reference' (attention_backend_supports('flash', ..., "
                         "has_mask=True) is False, so a dispatcher falls back to them)")
    if min(q.dim(), k.dim(), v.dim()) < 3:
        raise ValueError(f"flash attention takes Q (..., heads, n, d) and K, V (..., kv_heads, m, d) with a heads "
                         f"dimension; got {tuple(q.shape)}, {tuple(k.shape)}, {tuple(v.shape)} (add one with unsqueeze(-3))")
    leading = broadcast_shapes(q.shape[:-3], k.shape[:-3], v.shape[:-3])
    q4, k4, v4 = (t.expand(*leading, *t.shape[-3:]).reshape(-1, *t.shape[-3:]) for t in (q, k, v))
    out = FlashAttentionTriton.apply(q4, k4, v4, causal)
    return out.reshape(*leading, *out.shape[-3:])
