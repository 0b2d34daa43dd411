"""Full-batch gradient descent: the training loop of the XOR MLP and the character LM."""

from __future__ import annotations

from typing import Callable

import numpy as np


def gradient_descent(loss_and_grads: Callable[[dict[str, np.ndarray]], tuple[float, dict[str, np.ndarray]]],
                     params: dict[str, np.ndarray], steps: int, lr: float) -> list[float]:
    """Update ``params`` in place, ``steps`` times, by p -= lr * dLoss/dp for every array in it.

    loss_and_grads(params) -> (loss, {name: gradient shaped like params[name]}).
    Returns the loss before each update, then the final loss (steps + 1 values).
    """
    trace = []
    for _ in range(steps):
        loss, grads = loss_and_grads(params)
        trace.append(loss)
        for name, value in params.items():
            value -= lr * grads[name]
    trace.append(loss_and_grads(params)[0])
    return trace
