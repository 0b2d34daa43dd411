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
