"""Every lab's analytic gradients checked against central differences, as one registry.

Each check builds a small fixed-seed problem, computes the hand-written gradients and returns
{parameter name: max relative error}. A check whose loss is a sum of outputs uses
loss = sum(R * outputs) with a fixed random R, so every output entry gets a distinct gradient.
The CLI (`seqlab labs`) and the tests run this same registry.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from seqlab.labs import attention as att
from seqlab.labs import char_lm, conv, gru, lstm, mlp, recurrence, rnn, stacked
from seqlab.labs.gradcheck import check_gradients


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def check_recurrence() -> dict[str, float]:
    a, xs = np.array([0.9]), np.array([0.5, -0.3, 0.8, 0.1])
    analytic = recurrence.scalar_recurrence_backward(float(a[0]), xs)
    final = lambda: recurrence.scalar_recurrence(float(a[0]), xs)[-1]
    return check_gradients(final, {"a": a, "xs": xs}, {"a": np.array([analytic["a"]]), "xs": analytic["xs"]})


def check_mlp(activation: str, output: str = "sigmoid") -> dict[str, float]:
    params = mlp.init_mlp_params(4, _rng(1), output)
    if activation == "relu":
        params = mlp.shift_to_active(params)   # every pre-activation >= 0.1: away from the kink
    _, grads = mlp.mlp_loss_and_grads(params, activation=activation)
    return check_gradients(lambda: mlp.mlp_loss_and_grads(params, activation=activation)[0], params, grads)


def check_conv1d() -> dict[str, float]:
    rng = _rng(2)
    p = {"x": rng.normal(size=(2, 7)), "w": rng.normal(size=(3, 2, 3)), "b": rng.normal(size=3)}
    R = rng.normal(size=(3, 5))
    g = conv.conv1d_backward(p["x"], p["w"], R)
    return check_gradients(lambda: np.sum(R * conv.conv1d(p["x"], p["w"], p["b"])), p, g)


def check_conv2d() -> dict[str, float]:
    rng = _rng(3)
    p = {"x": rng.normal(size=(2, 5, 6)), "w": rng.normal(size=(3, 2, 2, 3)), "b": rng.normal(size=3)}
    R = rng.normal(size=(3, 4, 4))
    g = conv.conv2d_backward(p["x"], p["w"], R)
    return check_gradients(lambda: np.sum(R * conv.conv2d(p["x"], p["w"], p["b"])), p, g)


def _rnn_problem(seed=4, T=6, D=3, H=4, O=5):
    rng = _rng(seed)
    params = rnn.init_rnn_params(D, H, O, rng, scale=1.0)
    return params, rng.normal(size=(T, D)), rng.normal(0, 0.5, H), rng.integers(0, O, T)


def check_rnn_bptt() -> dict[str, float]:
    params, xs, h0, targets = _rnn_problem()
    _, grads = rnn.rnn_loss_and_grads(params, xs, targets, h0)
    checked = {**params, "xs": xs, "h0": h0}
    return check_gradients(lambda: rnn.rnn_loss_and_grads(params, xs, targets, h0)[0], checked, grads)


def check_truncated_bptt(chunk_length: int = 2) -> dict[str, float]:
    """Truncated BPTT is the exact gradient of the loss in which every chunk's starting state is a
    constant (the carried value): check it against finite differences of that function."""
    params, xs, h0, targets = _rnn_problem()
    _, grads, starts = rnn.truncated_bptt(params, xs, targets, h0, chunk_length)
    T = len(xs)

    def loss_with_frozen_starts():
        total = 0.0
        for k, start in enumerate(range(0, T, chunk_length)):
            stop = min(start + chunk_length, T)
            start_state = h0 if start == 0 else starts[k]   # constant: no path back to earlier chunks
            ys = rnn.rnn_forward(params, xs[start:stop], start_state)["ys"]
            total += rnn.softmax_cross_entropy(ys, targets[start:stop], normalizer=T)[0]
        return total
    return check_gradients(loss_with_frozen_starts, {**params, "xs": xs, "h0": h0}, grads)


def check_lstm() -> dict[str, float]:
    rng = _rng(5)
    params = lstm.init_lstm_params(3, 4, rng, scale=1.0)
    xs, h0, c0 = rng.normal(size=(5, 3)), rng.normal(0, 0.5, 4), rng.normal(0, 0.5, 4)
    R, Rc = rng.normal(size=(5, 4)), rng.normal(size=(5, 4))
    grads = lstm.lstm_bptt(params, xs, R, h0, c0, dcs=Rc)

    def loss():
        out = lstm.lstm_forward(params, xs, h0, c0)
        return np.sum(R * out["hs"]) + np.sum(Rc * out["cs"])
    return check_gradients(loss, {**params, "xs": xs, "h0": h0, "c0": c0}, grads)


def check_gru(convention) -> dict[str, float]:
    rng = _rng(6)
    params = gru.init_gru_params(3, 4, rng, scale=1.0)
    xs, h0, R = rng.normal(size=(5, 3)), rng.normal(0, 0.5, 4), rng.normal(size=(5, 4))
    grads = gru.gru_bptt(params, xs, R, h0, convention)
    loss = lambda: np.sum(R * gru.gru_forward(params, xs, h0, convention)["hs"])
    return check_gradients(loss, {**params, "xs": xs, "h0": h0}, grads)


def check_stacked() -> dict[str, float]:
    rng = _rng(7)
    layers = stacked.init_stacked_params(3, 4, 3, rng)
    xs, R = rng.normal(size=(5, 3)), rng.normal(size=(3, 5, 4))
    g = stacked.stacked_rnn_backward(layers, xs, R)
    loss = lambda: np.sum(R * stacked.stacked_rnn_forward(layers, xs)["states"])
    params = {f"layer{l}.{k}": v for l, p in enumerate(layers) for k, v in p.items()}
    analytic = {f"layer{l}.{k}": v for l, p in enumerate(g["layers"]) for k, v in p.items()}
    return check_gradients(loss, {**params, "xs": xs}, {**analytic, "xs": g["xs"]})


def check_bidirectional() -> dict[str, float]:
    rng = _rng(8)
    fp, bp = rnn.init_rnn_params(3, 4, None, rng), rnn.init_rnn_params(3, 4, None, rng)
    xs, R = rng.normal(size=(5, 3)), rng.normal(size=(5, 8))
    g = stacked.bidirectional_rnn_backward(fp, bp, xs, R)
    loss = lambda: np.sum(R * stacked.bidirectional_rnn_forward(fp, bp, xs)["states"])
    params = {**{f"forward.{k}": v for k, v in fp.items()}, **{f"backward.{k}": v for k, v in bp.items()}}
    analytic = {**{f"forward.{k}": v for k, v in g["forward"].items()},
                **{f"backward.{k}": v for k, v in g["backward"].items()}}
    return check_gradients(loss, {**params, "xs": xs}, {**analytic, "xs": g["xs"]})


def check_attention(masked: bool) -> dict[str, float]:
    """Scaled dot-product attention; masked=True adds a causal mask and a fully masked row."""
    rng = _rng(9)
    p = {"q": rng.normal(size=(4, 3)), "keys": rng.normal(size=(4, 3)), "values": rng.normal(size=(4, 2))}
    R = rng.normal(size=(4, 2))
    mask = None
    if masked:
        mask = att.causal_mask(4)
        mask[2] = False          # a query with nothing to attend to: zero output, zero gradient
    g = att.attention_backward(p["q"], p["keys"], p["values"], R, mask)
    loss = lambda: np.sum(R * att.attention(p["q"], p["keys"], p["values"], mask)["output"])
    return check_gradients(loss, p, g)


def check_multihead(cross: bool) -> dict[str, float]:
    """Self-attention (x attends to itself, causal) or cross-attention (3 targets over 5 sources)."""
    rng = _rng(10)
    d_model, heads = 4, 2
    params = att.init_multihead_params(d_model, rng)
    x_q = rng.normal(size=(3, d_model))
    x_kv = rng.normal(size=(5, d_model)) if cross else x_q
    mask = np.array([True, True, True, True, False]) if cross else att.causal_mask(3)
    R = rng.normal(size=(3, d_model))
    g = att.multihead_attention_backward(x_q, x_kv, params, heads, R, mask)
    loss = lambda: np.sum(R * att.multihead_attention(x_q, x_kv, params, heads, mask)["output"])
    if cross:
        checked, analytic = {**params, "x_q": x_q, "x_kv": x_kv}, g
    else:   # x is used as queries AND keys/values: its gradient is the sum of both paths
        checked, analytic = {**params, "x": x_q}, {**g, "x": g["x_q"] + g["x_kv"]}
    return check_gradients(loss, checked, analytic)


def check_char_lm(reset_state: bool = False) -> dict[str, float]:
    params = char_lm.init_char_lm_params(char_lm.CharLMConfig())
    _, grads = char_lm.loss_and_grads(params, reset_state=reset_state)
    return check_gradients(lambda: char_lm.loss_and_grads(params, reset_state=reset_state)[0], params, grads)


GRADIENT_CHECKS: dict[str, Callable[[], dict[str, float]]] = {
    "recurrence": check_recurrence,
    "mlp_tanh_sigmoid": lambda: check_mlp("tanh", "sigmoid"),
    "mlp_tanh_softmax": lambda: check_mlp("tanh", "softmax"),
    "mlp_relu_sigmoid": lambda: check_mlp("relu", "sigmoid"),
    "conv1d": check_conv1d,
    "conv2d": check_conv2d,
    "rnn_bptt": check_rnn_bptt,
    "truncated_bptt": check_truncated_bptt,
    "lstm": check_lstm,
    "gru_paper": lambda: check_gru(gru.GRUConvention("before", True)),
    "gru_pytorch": lambda: check_gru(gru.GRUConvention("after", True)),
    "gru_before_complement": lambda: check_gru(gru.GRUConvention("before", False)),
    "gru_after_complement": lambda: check_gru(gru.GRUConvention("after", False)),
    "stacked_rnn": check_stacked,
    "bidirectional_rnn": check_bidirectional,
    "attention": lambda: check_attention(False),
    "attention_masked": lambda: check_attention(True),
    "multihead_self_attention": lambda: check_multihead(False),
    "cross_attention": lambda: check_multihead(True),
    "char_lm": check_char_lm,
    "char_lm_reset_state": lambda: check_char_lm(True),
}
