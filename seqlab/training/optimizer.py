"""AdamW: Adam with decoupled weight decay (Loshchilov & Hutter, 2019)."""

from __future__ import annotations

import math

import torch


class AdamW(torch.optim.Optimizer):
    """Per parameter p with gradient g at step t (1-based):

        p <- p - lr * weight_decay * p                       (decoupled decay, not in the gradient)
        m <- beta1 m + (1 - beta1) g ;  v <- beta2 v + (1 - beta2) g^2
        p <- p - lr / (1 - beta1^t) * m / (sqrt(v / (1 - beta2^t)) + eps)

    State per parameter: "step" (int), "exp_avg" (m), "exp_avg_sq" (v); it round-trips through
    state_dict()/load_state_dict() like any torch optimizer.
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8, weight_decay: float = 0.01):
        if lr < 0:
            raise ValueError(f"invalid learning rate {lr}")
        if not (0.0 <= betas[0] < 1.0 and 0.0 <= betas[1] < 1.0):
            raise ValueError(f"invalid betas {betas}; each must be in [0, 1)")
        if eps < 0:
            raise ValueError(f"invalid eps {eps}")
        if weight_decay < 0:
            raise ValueError(f"invalid weight_decay {weight_decay}")
        super().__init__(params, dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay))

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, (beta1, beta2) = group["lr"], group["betas"]
            eps, weight_decay = group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                grad = p.grad
                if grad.is_sparse:
                    raise RuntimeError("AdamW does not support sparse gradients")
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                state["step"] = step = int(state["step"]) + 1
                exp_avg, exp_avg_sq = state["exp_avg"], state["exp_avg_sq"]

                p.mul_(1 - lr * weight_decay)
                exp_avg.lerp_(grad, 1 - beta1)
                exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                bias_correction1 = 1 - beta1**step
                bias_root2 = math.sqrt(1 - beta2**step)
                # m_hat / (sqrt(v_hat) + eps) = m / bc1 * bc2^0.5 / (sqrt(v) + eps * bc2^0.5):
                # scaling eps instead of v saves one pass over the parameters
                denom = exp_avg_sq.sqrt().add_(eps * bias_root2)
                p.addcdiv_(exp_avg, denom, value=-lr * bias_root2 / bias_correction1)
        return loss


def weight_decay_groups(model: torch.nn.Module) -> list[dict]:
    """Parameter groups with weight decay on matrices only (1-D norm gains are not decayed)."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [{"params": [p for p in params if p.dim() >= 2]},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]
