"""A two-layer MLP that learns XOR, with a hand-written backward pass.

    hidden = act(W1 x + b1)          act: tanh or ReLU;     W1 (H, 2), b1 (H,)
    sigmoid output: p = sigmoid(W2 hidden + b2), W2 (1, H), b2 (1,), binary cross-entropy
    softmax output: p = softmax(W2 hidden + b2), W2 (2, H), b2 (2,), cross-entropy over 2 classes

Losses are means over the 4 XOR points. XOR is not linearly separable, so the hidden layer is needed.
ReLU is not differentiable at 0: its gradient check uses points where every hidden pre-activation is
positive, away from the kink, where finite differences and the analytic derivative agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from seqlab.labs.descent import gradient_descent
from seqlab.labs.lstm import sigmoid
from seqlab.labs.rnn import softmax_cross_entropy

XOR_INPUTS = np.array([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
XOR_TARGETS = np.array([0, 1, 1, 0])


def _activation(name: str):
    if name == "tanh":
        return np.tanh, lambda pre, act: 1.0 - act ** 2
    if name == "relu":
        return lambda pre: np.maximum(pre, 0.0), lambda pre, act: (pre > 0).astype(np.float64)
    raise ValueError(f"mlp: unknown activation {name!r}; use 'tanh' or 'relu'")


def init_mlp_params(hidden: int, rng: np.random.Generator, output: str = "sigmoid") -> dict[str, np.ndarray]:
    """W1 (H, 2), b1 (H,), W2 (O, H), b2 (O,) with O = 1 (sigmoid) or 2 (softmax) outputs."""
    outputs = {"sigmoid": 1, "softmax": 2}
    if output not in outputs:
        raise ValueError(f"mlp: unknown output {output!r}; use 'sigmoid' or 'softmax'")
    return {
        "W1": rng.normal(0.0, 1.0, (hidden, 2)),
        "b1": rng.normal(0.0, 0.1, hidden),
        "W2": rng.normal(0.0, 1.0 / np.sqrt(hidden), (outputs[output], hidden)),
        "b2": np.zeros(outputs[output]),
    }


def mlp_forward(params, X, activation: str = "tanh") -> dict[str, np.ndarray]:
    """X (N, 2) -> {"pre": (N, H), "hidden": (N, H), "logits": (N, 1 or 2)}."""
    act, _ = _activation(activation)
    pre = np.asarray(X, dtype=np.float64) @ params["W1"].T + params["b1"]
    hidden = act(pre)
    return {"pre": pre, "hidden": hidden, "logits": hidden @ params["W2"].T + params["b2"]}


def mlp_loss_and_grads(params, X=XOR_INPUTS, y=XOR_TARGETS, activation: str = "tanh"):
    """Mean loss over the N points and gradients of W1, b1, W2, b2."""
    X = np.asarray(X, dtype=np.float64)
    fwd = mlp_forward(params, X, activation)
    logits = fwd["logits"]
    if logits.shape[1] == 1:   # sigmoid + binary cross-entropy; dL/dlogit = (p - y) / N
        p = sigmoid(logits[:, 0])
        loss = -np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))
        dlogits = ((p - y) / len(y))[:, None]
    else:
        loss, dlogits, _ = softmax_cross_entropy(logits, y)
    _, act_grad = _activation(activation)
    dhidden = dlogits @ params["W2"]
    dpre = dhidden * act_grad(fwd["pre"], fwd["hidden"])
    grads = {"W2": dlogits.T @ fwd["hidden"], "b2": dlogits.sum(axis=0),
             "W1": dpre.T @ X, "b1": dpre.sum(axis=0)}
    return float(loss), grads


def mlp_predict(params, X=XOR_INPUTS, activation: str = "tanh") -> np.ndarray:
    """X (N, 2) -> (N,) predicted classes 0/1."""
    logits = mlp_forward(params, X, activation)["logits"]
    return (logits[:, 0] > 0).astype(int) if logits.shape[1] == 1 else logits.argmax(axis=1)


def shift_to_active(params, X=XOR_INPUTS, margin: float = 0.1) -> dict[str, np.ndarray]:
    """Copy of params whose b1 is raised so every hidden pre-activation at X is >= margin: the
    points used for a ReLU gradient check, away from the kink at 0."""
    shifted = {k: v.copy() for k, v in params.items()}
    lowest = (np.asarray(X, dtype=np.float64) @ params["W1"].T + params["b1"]).min(axis=0)
    shifted["b1"] += np.maximum(0.0, margin - lowest)
    return shifted


@dataclass
class XORConfig:
    hidden: int = 4
    activation: str = "tanh"
    output: str = "sigmoid"
    steps: int = 2000
    lr: float = 1.0
    seed: int = 0


@dataclass
class XORResult:
    loss_trace: list[float]
    final_loss: float
    predictions: list[int]
    params: dict[str, np.ndarray] = field(repr=False)
    config: XORConfig = field(default_factory=XORConfig)


def train_xor(config: XORConfig | None = None) -> XORResult:
    """Full-batch gradient descent on the 4 XOR points. Deterministic for a given seed."""
    config = config or XORConfig()
    params = init_mlp_params(config.hidden, np.random.default_rng(config.seed), config.output)
    trace = gradient_descent(lambda p: mlp_loss_and_grads(p, activation=config.activation), params,
                             config.steps, config.lr)
    return XORResult(trace, trace[-1], mlp_predict(params, activation=config.activation).tolist(), params, config)
