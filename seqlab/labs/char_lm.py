"""A character-level RNN language model that learns "hello".

Vocabulary [h, e, l, o]; inputs h e l l -> targets e l l o as one-hot vectors; hidden width 4 with
both biases: Wx (4x4) + Wh (4x4) + b (4) + Wy (4x4) + by (4) = 56 parameters. Loss: mean
cross-entropy over the 4 transitions; 600 full-batch gradient steps at learning rate 0.5 from seed 7.

The two "l" inputs need different next characters (l, then o): only the hidden state, which
remembers what came before, can tell them apart. With `reset_state=True` the state is reset before
every character, both "l" positions see the same input and the same zero state, and the best the
model can do is a mixed distribution for both.

Two data flows:
- teacher forcing (`teacher_forced_predict`): every step is fed the TRUE previous character;
- free running (`free_running_generate`): every step is fed the model's OWN previous prediction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from seqlab.labs.descent import gradient_descent
from seqlab.labs.rnn import (
    RNN_PARAMS,
    init_rnn_params,
    rnn_bptt,
    rnn_forward,
    softmax,
    softmax_cross_entropy,
)

VOCAB = ("h", "e", "l", "o")
WORD = "hello"


@dataclass
class CharLMConfig:
    steps: int = 600
    lr: float = 0.5
    seed: int = 7
    hidden_size: int = 4
    init_scale: float = 1.0
    reset_state: bool = False


@dataclass
class CharLMResult:
    loss_trace: list[float]               # loss before each of the `steps` updates, then the final loss
    distributions: list[list[float]]      # (4, 4): next-char probabilities at each input position
    greedy: str                           # teacher-forced argmax predictions, "ello" once trained
    generated: str                        # free-running generation from "h"
    parameters: int                       # 56
    final_loss: float
    params: dict[str, np.ndarray] = field(repr=False)
    vocab: tuple[str, ...] = VOCAB
    reset_state: bool = False


def one_hot(text: str, vocab=VOCAB) -> np.ndarray:
    """'hell' -> (4, len(vocab)) one-hot rows."""
    unknown = sorted(set(text) - set(vocab))
    if unknown:
        raise ValueError(f"char_lm: characters {unknown} are not in the vocabulary {list(vocab)}")
    eye = np.eye(len(vocab))
    return eye[[vocab.index(ch) for ch in text]]


def _logits_per_position(params, xs, reset_state: bool) -> np.ndarray:
    """(T, V) logits. reset_state: each character is run as its own length-1 sequence from h = 0."""
    if reset_state:
        return np.concatenate([rnn_forward(params, x[None, :])["ys"] for x in xs])
    return rnn_forward(params, xs)["ys"]


def loss_and_grads(params, inputs: str = WORD[:-1], targets: str = WORD[1:], reset_state: bool = False):
    """Mean CE over the transitions and its gradients (full BPTT, or per-character with resets)."""
    xs = one_hot(inputs)
    target_ids = np.array([VOCAB.index(ch) for ch in targets])
    logits = _logits_per_position(params, xs, reset_state)
    loss, dys, _ = softmax_cross_entropy(logits, target_ids)
    if reset_state:
        grads = {name: np.zeros_like(params[name]) for name in RNN_PARAMS}
        for t in range(len(xs)):   # independent length-1 sequences: gradients add up
            g = rnn_bptt(params, xs[t:t + 1], None, dys[t:t + 1])
            for name in RNN_PARAMS:
                grads[name] += g[name]
    else:
        grads = rnn_bptt(params, xs, None, dys)
    return loss, grads


def next_char_distributions(params, inputs: str = WORD[:-1], reset_state: bool = False) -> np.ndarray:
    """(T, V) next-character probabilities at each position, given the true inputs."""
    return softmax(_logits_per_position(params, one_hot(inputs), reset_state))


def teacher_forced_predict(params, inputs: str = WORD[:-1], reset_state: bool = False) -> str:
    """Teacher forcing: the whole TRUE input string goes in; read off the argmax at every position.
    No prediction is ever fed back."""
    probs = next_char_distributions(params, inputs, reset_state)
    return "".join(VOCAB[i] for i in probs.argmax(axis=1))


def free_running_generate(params, start: str = "h", length: int = 4, reset_state: bool = False) -> str:
    """Free running: feed `start`, then feed back the model's OWN argmax, one character at a time,
    carrying the hidden state. Returns the `length` generated characters."""
    hidden = params["Wh"].shape[0]
    h = np.zeros(hidden)
    current = start
    generated = []
    for _ in range(length):
        out = rnn_forward(params, one_hot(current), None if reset_state else h)
        h = out["hs"][-1]
        current = VOCAB[int(np.argmax(out["ys"][-1]))]   # the prediction becomes the next input
        generated.append(current)
    return "".join(generated)


def parameter_count(params) -> int:
    return int(sum(p.size for p in params.values()))


def init_char_lm_params(config: CharLMConfig) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(config.seed)
    V = len(VOCAB)
    return init_rnn_params(V, config.hidden_size, V, rng, scale=config.init_scale)


def train_char_lm(steps: int = 600, lr: float = 0.5, seed: int = 7, reset_state: bool = False) -> CharLMResult:
    """Full-batch gradient descent on "hello". Deterministic for a given seed."""
    config = CharLMConfig(steps=steps, lr=lr, seed=seed, reset_state=reset_state)
    params = init_char_lm_params(config)
    trace = gradient_descent(lambda p: loss_and_grads(p, reset_state=config.reset_state), params,
                             config.steps, config.lr)
    final_loss = trace[-1]
    return CharLMResult(
        loss_trace=trace,
        distributions=next_char_distributions(params, reset_state=reset_state).tolist(),
        greedy=teacher_forced_predict(params, reset_state=reset_state),
        generated=free_running_generate(params, "h", 4, reset_state=reset_state),
        parameters=parameter_count(params),
        final_loss=final_loss,
        params=params,
        reset_state=reset_state,
    )
