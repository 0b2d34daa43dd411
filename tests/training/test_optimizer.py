"""AdamW against torch.optim.AdamW over several steps, and state_dict round trips."""

import copy

import pytest
import torch

from seqlab.training import AdamW


def make_params(seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(5, 3, generator=g)), torch.nn.Parameter(torch.randn(4, generator=g))]


def run_steps(optimizer, params, steps, seed=1):
    g = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=g)
        optimizer.step()


@pytest.mark.parametrize("hyper", [
    dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01),
    dict(lr=0.1, betas=(0.8, 0.95), eps=1e-6, weight_decay=0.3),
])
def test_matches_torch_adamw_over_several_steps(hyper):
    ours, theirs = make_params(), make_params()
    run_steps(AdamW(ours, **hyper), ours, 7)
    run_steps(torch.optim.AdamW(theirs, **hyper), theirs, 7)
    for a, b in zip(ours, theirs):
        torch.testing.assert_close(a, b)


def test_is_a_torch_optimizer_with_defaults():
    params = make_params()
    opt = AdamW(params)
    assert isinstance(opt, torch.optim.Optimizer)
    assert opt.defaults == dict(lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)


def test_decoupled_weight_decay_without_gradient_signal():
    # with a zero gradient Adam's update is 0, so only the decay p *= (1 - lr * wd) acts
    p = torch.nn.Parameter(torch.full((3,), 2.0))
    opt = AdamW([p], lr=0.1, weight_decay=0.5)
    p.grad = torch.zeros(3)
    opt.step()
    torch.testing.assert_close(p.detach(), torch.full((3,), 2.0 * (1 - 0.05)))


def test_state_dict_round_trip_continues_identically():
    params = make_params()
    opt = AdamW(params, lr=0.05)
    run_steps(opt, params, 3)
    saved_params = [p.detach().clone() for p in params]
    saved_state = copy.deepcopy(opt.state_dict())
    assert saved_state["state"][0]["step"] == 3
    run_steps(opt, params, 2, seed=9)

    restored = [torch.nn.Parameter(t.clone()) for t in saved_params]
    opt2 = AdamW(restored, lr=0.05)
    opt2.load_state_dict(saved_state)
    run_steps(opt2, restored, 2, seed=9)
    for a, b in zip(params, restored):
        torch.testing.assert_close(a, b)


def test_skips_parameters_without_grad_and_respects_param_groups():
    a, b = make_params()
    opt = AdamW([{"params": [a], "lr": 0.0}, {"params": [b]}], lr=0.1)
    before_a, before_b = a.detach().clone(), b.detach().clone()
    a.grad = torch.ones_like(a)
    opt.step()  # b has no grad: untouched; a has lr 0: untouched
    torch.testing.assert_close(a.detach(), before_a)
    torch.testing.assert_close(b.detach(), before_b)
    assert b not in opt.state and opt.state[a]["step"] == 1


def test_rejects_bad_hyperparameters():
    with pytest.raises(ValueError, match="learning rate"):
        AdamW(make_params(), lr=-1)
    with pytest.raises(ValueError, match="betas"):
        AdamW(make_params(), betas=(1.0, 0.9))
