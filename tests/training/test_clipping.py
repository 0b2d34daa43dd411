"""Global-norm gradient clipping against torch.nn.utils.clip_grad_norm_."""

import math

import pytest
import torch

from seqlab.training import clip_grad_norm


def make(seed, scale):
    g = torch.Generator().manual_seed(seed)
    params = [torch.nn.Parameter(torch.randn(4, 5, generator=g)) for _ in range(3)]
    params.append(torch.nn.Parameter(torch.randn(2)))  # no grad: skipped
    for p in params[:3]:
        p.grad = torch.randn(p.shape, generator=g) * scale
    return params


@pytest.mark.parametrize("scale", [0.01, 10.0])
def test_matches_torch_clip_grad_norm(scale):
    ours, theirs = make(0, scale), make(0, scale)
    norm = clip_grad_norm(ours, 1.0)
    ref = torch.nn.utils.clip_grad_norm_([p for p in theirs if p.grad is not None], 1.0)
    torch.testing.assert_close(norm, ref)
    for a, b in zip(ours, theirs):
        if b.grad is None:
            assert a.grad is None
        else:
            torch.testing.assert_close(a.grad, b.grad)


def test_clipped_norm_is_max_and_returns_pre_clip_norm():
    params = make(1, 10.0)
    expected = torch.sqrt(sum((p.grad**2).sum() for p in params if p.grad is not None))
    norm = clip_grad_norm(iter(params), 0.5)  # any iterable, e.g. model.parameters()
    torch.testing.assert_close(norm, expected)
    after = torch.sqrt(sum((p.grad**2).sum() for p in params if p.grad is not None))
    assert after == pytest.approx(0.5 * expected.item() / (expected.item() + 1e-6), rel=1e-5)


def test_no_gradients_gives_zero_norm():
    assert clip_grad_norm([torch.nn.Parameter(torch.ones(2))], 1.0).item() == 0.0


def test_infinite_limit_returns_norm_and_leaves_gradients_untouched():
    params = make(2, 10.0)
    grads = [p.grad for p in params if p.grad is not None]
    before = [(g.data_ptr(), g._version, g.clone()) for g in grads]
    expected = torch.sqrt(sum((g**2).sum() for g in grads))
    norm = clip_grad_norm(params, math.inf)
    torch.testing.assert_close(norm, expected)
    for p, (ptr, version, values) in zip(params, before):
        assert p.grad.data_ptr() == ptr  # same storage ...
        assert p.grad._version == version  # ... never written in place (mul_ by 1 would bump this)
        assert torch.equal(p.grad, values)


def make_mixed(seed, scale):
    """float32 and bfloat16 gradients (two foreach buckets) and a parameter without one."""
    params = make(seed, scale)
    g = torch.Generator().manual_seed(seed + 100)
    extra = torch.nn.Parameter(torch.randn(3, 2, generator=g).bfloat16())
    extra.grad = (torch.randn(3, 2, generator=g) * scale).bfloat16()
    return params + [extra]


@pytest.mark.parametrize("scale", [0.01, 10.0])
@pytest.mark.parametrize("max_norm", [1.0, math.inf])
@pytest.mark.parametrize("with_bfloat16", [False, True])
def test_foreach_matches_the_loop_and_torch(scale, max_norm, with_bfloat16):
    build = make_mixed if with_bfloat16 else make
    loop, fore, theirs = build(0, scale), build(0, scale), build(0, scale)
    loop_norm = clip_grad_norm(loop, max_norm, foreach=False)
    fore_norm = clip_grad_norm(fore, max_norm, foreach=True)
    ref = torch.nn.utils.clip_grad_norm_([p for p in theirs if p.grad is not None], max_norm, foreach=True)
    assert fore_norm.dtype == loop_norm.dtype == torch.float32 and fore_norm.dim() == 0
    torch.testing.assert_close(fore_norm, loop_norm)
    # torch takes a bfloat16 gradient's norm in bfloat16 (ours and the loop's: in float32)
    torch.testing.assert_close(fore_norm, ref.float(), **(dict(rtol=1e-3, atol=0) if with_bfloat16 else {}))
    for a, b, c in zip(fore, loop, theirs):
        if a.grad is None:
            assert b.grad is None and c.grad is None
            continue
        torch.testing.assert_close(a.grad, b.grad)
        torch.testing.assert_close(a.grad, c.grad)


def test_foreach_infinite_limit_leaves_gradients_untouched_and_empty_gives_zero():
    params = make_mixed(2, 10.0)
    grads = [p.grad for p in params if p.grad is not None]
    versions = [g._version for g in grads]
    clip_grad_norm(params, math.inf, foreach=True)
    assert [g._version for g in grads] == versions
    assert clip_grad_norm([torch.nn.Parameter(torch.ones(2))], 1.0, foreach=True).item() == 0.0


def test_foreach_operation_count_does_not_grow_with_the_tensors_and_never_syncs():
    from benchmarks.instruments.op_count import OpCounter
    from seqlab.model import gpu_path_forced

    counts = []
    for tensors in (4, 40):
        params = [torch.nn.Parameter(torch.randn(3, 2, device="meta")) for _ in range(tensors)]
        for p in params:
            p.grad = torch.randn(3, 2, device="meta")
        with gpu_path_forced(), OpCounter() as counter:  # foreach=None takes the foreach form here
            clip_grad_norm(params, 1.0)
        counts.append(counter)
    assert counts[0].ops == counts[1].ops and counts[0].syncs == 0
    assert counts[0].total <= 12 and counts[0].ops["aten._foreach_mul_"] == 1


def test_default_is_the_foreach_form_also_on_cpu(monkeypatch):
    import seqlab.training.clipping as clipping

    calls = []
    real = clipping._clip_foreach
    monkeypatch.setattr(clipping, "_clip_foreach", lambda grads, limit: calls.append(len(grads)) or real(grads, limit))
    clip_grad_norm(make(3, 1.0), 1.0)
    clip_grad_norm(make(3, 1.0), 1.0, foreach=False)
    assert calls == [3]
