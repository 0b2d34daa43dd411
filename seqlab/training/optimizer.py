"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter, 2019), per parameter or multi-tensor."""

from __future__ import annotations

import math

import torch

from seqlab.training.foreach import by_device_and_dtype, use_foreach


class AdamW(torch.optim.Optimizer):
    """Per parameter p with gradient g at step t (1-based):

        p <- p - lr * weight_decay * p                       (decoupled decay, not in the gradient)
        m <- beta1 m + (1 - beta1) g ;  v <- beta2 v + (1 - beta2) g^2
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v / (1 - beta2^t)) + eps)

    State per parameter: "step" (int), "exp_avg" (m), "exp_avg_sq" (v); it round-trips through
    state_dict()/load_state_dict() like any torch optimizer, and the state is the same whichever
    form ran, so a state saved by one form loads into the other.

    foreach: True runs the update as a few torch._foreach_* calls over all parameters of a group
    that share a device and dtype (about 7 operations per group, whatever the number of parameter
    tensors); False runs the readable per-parameter loop (`_update_one`, 6-7 operations per
    tensor); None (default) picks foreach on CUDA and on the forced GPU path, the loop on a CPU.
    Both compute the same numbers in the same order (tested equal). `foreach` is a property of the
    optimizer object, not of its state: it is not in `defaults` or the state_dict.

    Example: one step from m = v = 0 moves every entry by lr * sign(g) (bias correction makes
    m_hat = g and sqrt(v_hat) = |g|), before the decay:

        >>> p = torch.nn.Parameter(torch.tensor([1.0, -2.0])); opt = AdamW([p], lr=0.1, weight_decay=0.0)
        >>> p.grad = torch.tensor([0.5, -3.0]); opt.step(); p.detach()
        tensor([ 0.9000, -1.9000])
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01, *, foreach: bool | None = None):
        if lr < 0:
            raise ValueError(f"invalid learning rate {lr}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"invalid betas {betas}; each must be in [0, 1)")
        if eps < 0:
            raise ValueError(f"invalid eps {eps}")
        if weight_decay < 0:
            raise ValueError(f"invalid weight_decay {weight_decay}")
        if foreach not in (None, True, False):
            raise ValueError(f"foreach must be None, True or False, got {foreach!r}")
        self.foreach = foreach
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    def __getstate__(self) -> dict:
        """torch's Optimizer pickles (and deep-copies) only defaults, state and param_groups: keep
        ``foreach`` too; the scratch buffer is made again."""
        return {**super().__getstate__(), "foreach": self.foreach}

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        self.foreach = state.pop("foreach", None)
        super().__setstate__(state)

    def _denominator_buffer(self, p: torch.Tensor) -> torch.Tensor:
        """A tensor of p's shape for sqrt(v) + eps, in one buffer per device and dtype that the
        parameters take turns in (grown to the largest). A new tensor for each would be a fresh
        allocation every step: for an embedding of 5 M floats, pages the system must zero first,
        which took as long as the sqrt itself. Not state: it is not saved (nor copied), and an
        optimizer made without __init__ (the adamw_step exercise's reference) gets one on first use."""
        scratch: dict[tuple[torch.device, torch.dtype], torch.Tensor] = self.__dict__.setdefault("_scratch", {})
        key = (p.device, p.dtype)
        buffer = scratch.get(key)
        if buffer is None or buffer.numel() < p.numel():
            buffer = scratch[key] = torch.empty(p.numel(), device=p.device, dtype=p.dtype)
        return buffer[:p.numel()].view(p.shape)

    def _state_of(self, p: torch.Tensor) -> dict:
        """p's state, created (step 0, m = v = 0) on its first update."""
        state = self.state[p]
        if not state:
            state["step"] = 0
            state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
            state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
        return state

    @staticmethod
    def _step_scalars(lr: float, beta1: float, beta2: float, eps: float, step: int) -> tuple[float, float]:
        """(eps', step size) of step `step`: p += step_size * m / (sqrt(v) + eps').

        m_hat / (sqrt(v_hat) + eps) = m / bc1 * bc2^0.5 / (sqrt(v) + eps * bc2^0.5): scaling eps
        instead of v saves one pass over the parameters.
        """
        bias_correction1 = 1 - beta1**step
        bias_root2 = math.sqrt(1 - beta2**step)
        return eps * bias_root2, -lr * bias_root2 / bias_correction1

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            params = [p for p in group["params"] if p.grad is not None]
            for p in params:
                if p.grad.is_sparse:
                    raise RuntimeError("AdamW does not support sparse gradients")
            if not params:
                continue
            if use_foreach(self.foreach, params[0]):
                self._update_foreach(group, params)
            else:
                for p in params:
                    self._update_one(group, p)
        return loss

    def _update_one(self, group: dict, p: torch.Tensor) -> None:
        """The readable form: one parameter tensor's update."""
        lr, (beta1, beta2) = group["lr"], group["betas"]
        state = self._state_of(p)
        state["step"] = step = int(state["step"]) + 1
        eps, step_size = self._step_scalars(lr, beta1, beta2, group["eps"], step)
        exp_avg, exp_avg_sq, grad = state["exp_avg"], state["exp_avg_sq"], p.grad
        p.mul_(1 - lr * group["weight_decay"])
        exp_avg.lerp_(grad, 1 - beta1)
        exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
        denom = torch.sqrt(exp_avg_sq, out=self._denominator_buffer(p)).add_(eps)
        p.addcdiv_(exp_avg, denom, value=step_size)

    def _update_foreach(self, group: dict, params: list[torch.Tensor]) -> None:
        """The same update, each line one torch._foreach_* call per (device, dtype) bucket."""
        lr, (beta1, beta2), weight_decay = group["lr"], group["betas"], group["weight_decay"]
        states = [self._state_of(p) for p in params]
        for state in states:
            state["step"] = int(state["step"]) + 1
        buckets = by_device_and_dtype(params, [p.grad for p in params], states)
        for ps, grads, sts in buckets.values():
            exp_avgs, exp_avg_sqs = [s["exp_avg"] for s in sts], [s["exp_avg_sq"] for s in sts]
            # parameters that joined later (first gradient at a later step) have their own step
            eps, step_size = zip(*(self._step_scalars(lr, beta1, beta2, group["eps"], s["step"]) for s in sts))
            if weight_decay != 0:  # x * 1.0 == x exactly, so skipping it changes no bit
                torch._foreach_mul_(ps, 1 - lr * weight_decay)
            torch._foreach_lerp_(exp_avgs, grads, 1 - beta1)
            torch._foreach_mul_(exp_avg_sqs, beta2)
            torch._foreach_addcmul_(exp_avg_sqs, grads, grads, value=1 - beta2)
            denoms = torch._foreach_sqrt(exp_avg_sqs)
            torch._foreach_add_(denoms, list(eps))
            torch._foreach_addcdiv_(ps, exp_avgs, denoms, list(step_size))


def weight_decay_groups(model: torch.nn.Module) -> list[dict]:
    """Parameter groups with weight decay on matrices only (1-D norm gains are not decayed)."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [{"params": [p for p in params if p.dim() >= 2]},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
