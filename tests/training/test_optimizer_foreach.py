"""AdamW(foreach=True) against the per-parameter loop and torch.optim.AdamW over 20 steps, state_dict
round trips across the two forms, and an operation count that does not grow with the parameters."""

import copy

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from benchmarks.instruments.op_count import OpCounter
from seqlab.model import TransformerLM, gpu_path_forced
from seqlab.training import AdamW
from seqlab.training.optimizer import weight_decay_groups

HYPER = dict(lr=0.02, betas=(0.85, 0.98), eps=1e-6, weight_decay=0.1)
# the CS336 TinyStories shape ("17M" without the embeddings; 22.7M tensors' entries, 39 tensors at 4 layers)
TINYSTORIES = dict(vocab_size=10_000, context_length=256, d_model=512, num_heads=16, d_ff=1344)


def make_params(seed=0):
    """Matrices, vectors and a float64 tensor (its own device/dtype bucket)."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(5, 3), (4,), (2, 3, 2), (7,)]
    params = [torch.nn.Parameter(torch.randn(s, generator=g)) for s in shapes]
    params.append(torch.nn.Parameter(torch.randn(3, 3, generator=g, dtype=torch.float64)))
    return params


def groups(params):
    """Two groups: decayed matrices and undecayed vectors with their own learning rate."""
    return [{"params": [p for p in params if p.dim() >= 2]},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0, "lr": 0.05}]


def run_steps(optimizer, params, steps, seed=1, late=None):
    """`steps` steps of random gradients; parameter `late` gets its first gradient at step 3."""
    g = torch.Generator().manual_seed(seed)
    for i in range(steps):
        for j, p in enumerate(params):
            grad = torch.randn(p.shape, generator=g, dtype=p.dtype)
            p.grad = None if (j == late and i < 3) else grad
        optimizer.step()


@pytest.mark.parametrize("late", [None, 1])
def test_foreach_equals_the_loop_and_torch_over_20_steps(late):
    runs = {}
    for name, make_opt in {
        "loop": lambda ps: AdamW(groups(ps), **HYPER, foreach=False),
        "foreach": lambda ps: AdamW(groups(ps), **HYPER, foreach=True),
        "torch": lambda ps: torch.optim.AdamW(groups(ps), **HYPER),
    }.items():
        params = make_params()
        run_steps(make_opt(params), params, 20, late=late)
        runs[name] = params
    for a, b, c in zip(runs["foreach"], runs["loop"], runs["torch"]):
        assert torch.equal(a, b)  # the same operations in the same order: the same bits
        torch.testing.assert_close(a, c)


@pytest.mark.parametrize("save_with, load_into", [(True, False), (False, True)])
def test_state_dict_saved_by_one_form_continues_identically_in_the_other(save_with, load_into):
    params = make_params()
    opt = AdamW(groups(params), **HYPER, foreach=save_with)
    run_steps(opt, params, 10)
    saved = copy.deepcopy(opt.state_dict())
    saved_params = [p.detach().clone() for p in params]
    assert "foreach" not in saved["param_groups"][0] and saved["state"][0]["step"] == 10
    run_steps(opt, params, 10, seed=5)

    restored = [torch.nn.Parameter(t.clone()) for t in saved_params]
    opt2 = AdamW(groups(restored), **HYPER, foreach=load_into)
    opt2.load_state_dict(saved)
    run_steps(opt2, restored, 10, seed=5)
    for a, b in zip(params, restored):
        assert torch.equal(a, b)


def test_default_is_the_loop_on_cpu_and_foreach_on_the_gpu_path(monkeypatch):
    calls = []
    monkeypatch.setattr(AdamW, "_update_foreach", lambda self, group, ps: calls.append("foreach"))
    monkeypatch.setattr(AdamW, "_update_one", lambda self, group, p: calls.append("loop"))
    params = make_params()
    for p in params:
        p.grad = torch.ones_like(p)
    opt = AdamW(params)
    opt.step()
    assert calls == ["loop"] * len(params)
    calls.clear()
    with gpu_path_forced():
        opt.step()
    assert calls == ["foreach"]
    with pytest.raises(ValueError, match="foreach must be None, True or False"):
        AdamW(params, foreach="yes")


def optimizer_ops(num_layers, foreach, device="meta"):
    """aten operations (and syncs) of the second AdamW step (the first creates the state)."""
    model = TransformerLM(num_layers=num_layers, **TINYSTORIES, device=device)
    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:
        p.grad = torch.zeros_like(p)
    opt = AdamW(weight_decay_groups(model), lr=1e-3, foreach=foreach)
    opt.step()
    with OpCounter() as counter:
        opt.step()
    return counter, len(params)


def test_foreach_step_of_the_tinystories_model_is_a_few_operations():
    counter, tensors = optimizer_ops(4, True)
    loop, _ = optimizer_ops(4, False)
    assert tensors > 30  # the loop pays per tensor ...
    assert loop.total >= 6 * tensors
    assert counter.total <= 20 and counter.syncs == 0  # ... foreach per group: 7 + 6 operations
    kernels = {name for name in counter.ops if name.startswith("aten.")}  # (the others: profiler marks)
    assert sum(counter.ops[name] for name in kernels) == 13
    assert kernels == {"aten._foreach_mul_", "aten._foreach_lerp_", "aten._foreach_addcmul_",
                                "aten._foreach_sqrt", "aten._foreach_add_", "aten._foreach_addcdiv_"}


def test_foreach_operation_count_is_the_same_for_2_and_8_layers():
    two, tensors_two = optimizer_ops(2, True)
    eight, tensors_eight = optimizer_ops(8, True)
    assert tensors_eight > tensors_two and two.total == eight.total


def test_foreach_on_real_cpu_tensors_of_the_model_matches_torch():
    torch.manual_seed(0)
    ours, theirs = (TransformerLM(num_layers=1, vocab_size=64, context_length=8, d_model=16, num_heads=2)
                    for _ in range(2))
    theirs.load_state_dict(ours.state_dict())
    opt_ours = AdamW(weight_decay_groups(ours), **HYPER, foreach=True)
    opt_theirs = torch.optim.AdamW(weight_decay_groups(theirs), **HYPER, foreach=False)
    ids = torch.randint(0, 64, (2, 8))
    for _ in range(20):
        for model, opt in ((ours, opt_ours), (theirs, opt_theirs)):
            model(ids).square().mean().backward()
            opt.step()
            opt.zero_grad()
    for (name, a), b in zip(ours.named_parameters(), theirs.parameters()):
        torch.testing.assert_close(a, b, msg=name)


class _SqrtOutputs(TorchDispatchMode):
    """Where each sqrt writes: the storage of its out= tensor, or None for a new tensor."""

    def __init__(self):
        super().__init__()
        self.storages = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func._opname == "sqrt":
            out = kwargs.get("out")
            self.storages.append(None if out is None else out.untyped_storage().data_ptr())
        return func(*args, **kwargs)


def test_the_loop_reuses_one_denominator_buffer_and_a_copy_of_the_optimizer_steps_alike():
    """The per-parameter loop writes sqrt(v) into one buffer per device and dtype (a new tensor per
    parameter and step is a fresh allocation each time); the numbers stay torch's AdamW's, and a deep
    copy (torch's Optimizer copies defaults, state and param_groups only) keeps foreach and steps."""
    torch.manual_seed(0)
    mine = [torch.nn.Parameter(torch.randn(shape)) for shape in ((40, 30), (30,), (7, 3))]
    theirs = [torch.nn.Parameter(p.detach().clone()) for p in mine]
    opt_mine = AdamW(mine, **HYPER, foreach=False)
    opt_theirs = torch.optim.AdamW(theirs, **HYPER, foreach=False)
    for _ in range(3):
        for a, b in zip(mine, theirs):
            a.grad = torch.randn_like(a)
            b.grad = a.grad.clone()
        with _SqrtOutputs() as sqrt_outputs:
            opt_mine.step()
        opt_theirs.step()
        (buffer,) = opt_mine._scratch.values()
        assert sqrt_outputs.storages == [buffer.untyped_storage().data_ptr()] * 3
        for a, b in zip(mine, theirs):
            torch.testing.assert_close(a, b)
    assert buffer.numel() == 40 * 30  # grown to the largest parameter, shared by all
    twin = copy.deepcopy(opt_mine)
    assert twin.foreach is False
    for p in (p for group in twin.param_groups for p in group["params"]):
        p.grad = torch.ones_like(p)
    twin.step()
