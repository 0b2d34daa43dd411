"""truncated_bptt: the cases, the checks of its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.labs import rnn as _rnn
from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check, same_values
from seqlab.learn.kit import left_at_zero, rnn_params, seeded_cases, states_none
from seqlab.learn.words import speaker

say = speaker(__file__)


def cases() -> list[Case]:
    return _made(((0, 6, 2, {}), (4, 6, 3, {}), (9, 8, 4, {})))


def _made(settings, h0=True) -> list[Case]:
    """(seed, T, chunk_length, other keyword arguments): D = 3, H = 4, O = 3."""
    return seeded_cases(lambda k, rng, T, chunk, extra: (
        (rnn_params(rng, O=3), rng.normal(size=(T, 3)), rng.integers(0, 3, T)),
        {**({"h0": rng.normal(size=4) * 0.5} if h0 else {}), "chunk_length": chunk, **extra}), settings)


def compared(out):
    return out[0], out[1], list(out[2])


CHECKS = {
    "detached": Check(verify=same_values(1, part=lambda out: (out[0], out[1]))),
    "carry_state=True": Check(verify=same_values(0, 2, part=compared)),
    "carry_state=False": Check(lambda: _made(((51, 6, 2, {"carry_state": False}),
                                              (52, 6, 3, {"carry_state": False})))),
    "uneven chunks": Check(lambda: _made(((53, 7, 3, {}), (54, 5, 2, {}), (55, 3, 5, {})))),
    "loss_steps": Check(lambda: _made(((56, 8, 2, {"loss_steps": [1, 4, 6]}), (57, 4, 2, {"loss_steps": [0]})))),
    "h0 None": Check(lambda: _made(((58, 6, 2, {}),), h0=False)),
    "h0 gradient": Check(verify=same_values("xs", "h0", part=lambda out: out[1]))}


# --- mistakes -----------------------------------------------------------------------------------------
def divided_by_T_twice(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None):
    loss, grads, starts = _rnn.truncated_bptt(params, xs, targets, h0, chunk_length, carry_state, loss_steps)
    T = len(xs)
    return loss / T, {k: v / T for k, v in grads.items()}, starts


def _counted(T, loss_steps):
    return np.ones(T) if loss_steps is None else np.isin(np.arange(T), list(loss_steps)).astype(float)


def gradient_crosses_chunks(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None):
    loss, _, starts = _rnn.truncated_bptt(params, xs, targets, h0, chunk_length, carry_state, loss_steps)
    counted = _counted(len(xs), loss_steps)
    out = _rnn.rnn_forward(params, xs, h0)
    _, dys, _ = _rnn.softmax_cross_entropy(out["ys"], targets)
    return loss, _rnn.rnn_bptt(params, xs, h0, dys * counted[:, None]), starts


def state_reset_each_chunk(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None):
    return _rnn.truncated_bptt(params, xs, targets, h0, chunk_length, False, loss_steps)


def h0_gradient_from_every_chunk(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None):
    loss, grads, starts = _rnn.truncated_bptt(params, xs, targets, h0, chunk_length, carry_state, loss_steps)
    T = len(xs)
    counted = _counted(T, loss_steps)
    total = np.zeros_like(grads["h0"])
    for k, start in enumerate(range(0, T, chunk_length)):
        stop = min(start + chunk_length, T)
        out = _rnn.rnn_forward(params, xs[start:stop], starts[k])
        _, dys, _ = _rnn.softmax_cross_entropy(out["ys"], np.asarray(targets)[start:stop], normalizer=T)
        total += _rnn.rnn_bptt(params, xs[start:stop], starts[k], dys * counted[start:stop, None])["h0"]
    return loss, {**grads, "h0": total}, starts


def h0_ignored(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None):
    return _rnn.truncated_bptt(params, xs, targets, None, chunk_length, carry_state, loss_steps)


MUTANTS = {"h0_ignored": h0_ignored, "divided_by_T_twice": divided_by_T_twice, "gradient_crosses_chunks": gradient_crosses_chunks,
           "state_reset_each_chunk": state_reset_each_chunk,
           "h0_gradient_from_every_chunk": h0_gradient_from_every_chunk}
RECOGNISERS = {
    "divided_by_T_twice": D.factor_of((0, (1, "Wx"), (1, "Wh"), (1, "b"), (1, "Wy"), (1, "by"), (1, "xs"), (1, "h0")),
                                      lambda c: {"1/T": 1 / len(c.args[1])}, say("loss_and_gradients")),
    "gradient_crosses_chunks": D.matches(gradient_crosses_chunks, tuple((1, k) for k in ("Wx", "Wh", "b", "xs", "h0")),
                                         "all", say("full_backward")),
    "state_reset_each_chunk": D.matches(state_reset_each_chunk, (2,), "own", say("chunks_from_h0")),
    "h0_gradient_from_every_chunk": D.matches(h0_gradient_from_every_chunk, ((1, "h0"),), "own"),
    "carry_state_ignored": D.failed_check("carry_state=False"),
    "uneven_chunks": D.failed_check("uneven chunks", raises=True),
    "loss_steps_ignored": D.failed_check("loss_steps"),
    "gradient_left_at_zero": left_at_zero(tuple((1, k) for k in ("Wx", "Wh", "b", "Wy", "by", "xs", "h0"))),
    "h0_none_not_handled": states_none()}
axes = {"xs": ("time step", "input"), "Wx": ("hidden unit", "input"), "Wh": ("hidden unit", "hidden unit")}
