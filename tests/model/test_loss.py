"""cross_entropy against torch.nn.functional.cross_entropy."""

import pytest
import torch
import torch.nn.functional as F

from seqlab.training import cross_entropy


def test_matches_functional_over_leading_dims():
    torch.manual_seed(0)
    logits = torch.randn(3, 5, 11) * 4
    targets = torch.randint(0, 11, (3, 5))
    torch.testing.assert_close(cross_entropy(logits, targets), F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1)))
    torch.testing.assert_close(cross_entropy(logits[0, 0], targets[0, 0]), F.cross_entropy(logits[0, 0], targets[0, 0]))


def test_gradient_matches_functional_and_gradcheck():
    torch.manual_seed(1)
    logits = torch.randn(4, 6, 9, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 9, (4, 6))
    cross_entropy(logits, targets).backward()
    oracle = logits.detach().clone().requires_grad_()
    F.cross_entropy(oracle.reshape(-1, 9), targets.reshape(-1)).backward()
    torch.testing.assert_close(logits.grad, oracle.grad)
    assert torch.autograd.gradcheck(lambda x: cross_entropy(x, targets), (logits.detach().requires_grad_(),))


def test_stable_for_huge_logits():
    logits = torch.tensor([[1e4, 0.0, -1e4], [5e3, 5e3, 5e3]])
    targets = torch.tensor([1, 2])
    loss = cross_entropy(logits, targets)
    assert torch.isfinite(loss)
    torch.testing.assert_close(loss, F.cross_entropy(logits.double(), targets).float())


def test_errors_name_the_problem():
    with pytest.raises(ValueError, match="disagree"):
        cross_entropy(torch.randn(2, 3, 5), torch.zeros(2, 4, dtype=torch.long))
    with pytest.raises(ValueError, match=r"target id 5 at index \(1,\)"):
        cross_entropy(torch.randn(2, 5), torch.tensor([0, 5]))


def test_blocked_computation_matches_functional(monkeypatch):
    import seqlab.model.loss as loss_module

    monkeypatch.setattr(loss_module, "CHUNK_VALUES", 20)  # 2 rows of 9 logits per block, 7 blocks
    torch.manual_seed(2)
    logits = torch.randn(13, 9, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 9, (13,))
    loss = cross_entropy(logits, targets)
    (grad,) = torch.autograd.grad(loss * 3.0, logits)
    oracle = logits.detach().clone().requires_grad_()
    ref = F.cross_entropy(oracle, targets)
    (ref_grad,) = torch.autograd.grad(ref * 3.0, oracle)
    torch.testing.assert_close(loss, ref)
    torch.testing.assert_close(grad, ref_grad)


@pytest.mark.parametrize("shape", [(6, 11), (3, 5, 11)])
def test_ignore_index_matches_functional_values_and_gradients(shape):
    """ignored targets (a seq2seq batch's padding) count neither in the mean nor in the gradient."""
    torch.manual_seed(0)
    logits = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, shape[-1], shape[:-1])
    targets.view(-1)[::3] = 0  # every third position is padding (id 0)
    ours = cross_entropy(logits, targets, ignore_index=0)
    (grad,) = torch.autograd.grad(ours, logits)
    reference_logits = logits.detach().clone().requires_grad_()
    reference = F.cross_entropy(reference_logits.reshape(-1, shape[-1]), targets.reshape(-1), ignore_index=0)
    reference.backward()
    torch.testing.assert_close(ours, reference)
    torch.testing.assert_close(grad, reference_logits.grad)
    assert torch.all(grad.reshape(-1, shape[-1])[targets.reshape(-1) == 0] == 0)


def test_ignore_index_with_every_target_ignored_is_zero_not_nan():
    logits = torch.randn(4, 7, requires_grad=True)
    loss = cross_entropy(logits, torch.zeros(4, dtype=torch.long), ignore_index=0)
    loss.backward()
    assert loss.item() == 0.0 and torch.all(logits.grad == 0)
