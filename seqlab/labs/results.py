"""Run every lab and collect its worked values, comparisons with the lecture and gradient checks.

`collect(only=None)` returns a `LabRun`: `results` is the JSON-ready nested dict written by
`seqlab labs --output DIR` (e.g. results["recurrence"]["states"]); `comparisons` lists each worked
value against the lecture's number; `gradient_checks` maps check name -> {parameter: error}.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from seqlab.labs import attention as att
from seqlab.labs import (
    char_lm,
    checks,
    clipping,
    conv,
    gru,
    lstm,
    mlp,
    recurrence,
    rnn,
    stacked,
)
from seqlab.jsonfile import to_json
from seqlab.labs.gradcheck import TOLERANCE, passed

WORKED_TOLERANCE = 1e-9


@dataclass
class Comparison:
    section: str
    label: str
    value: Any
    expected: Any
    ok: bool


@dataclass
class LabRun:
    results: dict[str, Any] = field(default_factory=dict)
    comparisons: list[Comparison] = field(default_factory=list)
    gradient_checks: dict[str, dict[str, float]] = field(default_factory=dict)
    check_sections: dict[str, str] = field(default_factory=dict)     # check name -> section
    curves: dict[str, list[float]] = field(default_factory=dict)     # model name -> loss trace

    def expect(self, section: str, label: str, value, expected, tolerance: float = WORKED_TOLERANCE):
        if isinstance(expected, str):
            ok = value == expected
        else:
            ok = bool(np.shape(value) == np.shape(expected) and np.allclose(
                np.asarray(value, dtype=np.float64), np.asarray(expected, dtype=np.float64),
                rtol=0.0, atol=tolerance))
        self.comparisons.append(Comparison(section, label, to_json(value), to_json(expected), ok))

    def require(self, section: str, label: str, value, ok: bool, expected: str):
        self.comparisons.append(Comparison(section, label, to_json(value), expected, bool(ok)))

    def run_checks(self, section: str, names: list[str]):
        for name in names:
            self.gradient_checks[name] = checks.GRADIENT_CHECKS[name]()
            self.check_sections[name] = section

    @property
    def failures(self) -> list[str]:
        failed = [f"{c.section}: {c.label}" for c in self.comparisons if not c.ok]
        failed += [f"gradient check {name}" for name, errs in self.gradient_checks.items()
                   if not all(passed(e) for e in errs.values())]
        return failed


def _recurrence(run: LabRun):
    states = recurrence.scalar_recurrence(0.5, [1.0, 0.0, -1.0])
    reversed_states = recurrence.scalar_recurrence(0.5, [-1.0, 0.0, 1.0])
    half, double = recurrence.repeated_factor(0.5, 10), recurrence.repeated_factor(2.0, 10)
    run.results["recurrence"] = {"a": 0.5, "inputs": [1.0, 0.0, -1.0], "states": states,
                                 "reversed_inputs": [-1.0, 0.0, 1.0], "reversed_states": reversed_states}
    run.results["jacobian_products"] = {"half_pow_10": half, "two_pow_10": double}
    run.expect("recurrence", "h = tanh(0.5 h + x), x = [1, 0, -1]", states, [0.761594156, 0.363399484, -0.674143676])
    run.expect("recurrence", "reversed inputs, final state", reversed_states[-1], 0.674143676)
    run.expect("recurrence", "0.5^10 (ten vanishing factors)", half, 0.0009765625)
    run.expect("recurrence", "2^10 (ten exploding factors)", double, 1024.0)
    run.run_checks("recurrence", ["recurrence"])


def _clipping(run: LabRun):
    clipped, norm = clipping.clip_global_norm(np.array([3.0, 4.0]), 2.0)
    coordinatewise = clipping.clip_coordinatewise(np.array([3.0, 4.0]), 2.0)
    run.results["clipping"] = {"gradient": [3.0, 4.0], "threshold": 2.0, "clipped": clipped, "norm": norm,
                               "coordinatewise": coordinatewise}
    run.expect("clipping", "global-norm clip of [3, 4] to 2", clipped, [1.2, 1.6])
    run.expect("clipping", "norm before clipping", norm, 5.0)
    run.expect("clipping", "coordinate-wise clip (a different rule)", coordinatewise, [2.0, 2.0])


def _mlp(run: LabRun):
    result = mlp.train_xor()
    run.results["xor"] = {"final_loss": result.final_loss, "loss_trace": result.loss_trace,
                          "predictions": result.predictions, "activation": result.config.activation,
                          "steps": result.config.steps, "lr": result.config.lr, "seed": result.config.seed}
    run.curves["XOR MLP (tanh, sigmoid output)"] = result.loss_trace
    run.expect("mlp", "XOR predictions after training", result.predictions, [0, 1, 1, 0])
    run.require("mlp", "XOR final loss", result.final_loss, result.final_loss < 0.01, "< 0.01")
    run.run_checks("mlp", ["mlp_tanh_sigmoid", "mlp_tanh_softmax", "mlp_relu_sigmoid"])


def _conv(run: LabRun):
    rng = np.random.default_rng(0)
    x, w, dout = rng.normal(size=(1, 6)), rng.normal(size=(1, 1, 3)), rng.normal(size=(1, 4))
    per_position = conv.filter_gradient_contributions_1d(x, dout, 3)
    dw = conv.conv1d_backward(x, w, dout)["w"]
    run.results["conv"] = {"filter_gradient": dw[0, 0], "per_position_contributions": per_position[:, 0, 0],
                           "positions": int(per_position.shape[0])}
    run.expect("conv", "shared filter gradient = sum over its 4 positions", dw[0, 0], per_position.sum(axis=0)[0, 0],
               tolerance=1e-15)
    run.run_checks("conv", ["conv1d", "conv2d"])


def _rnn(run: LabRun):
    rng = np.random.default_rng(0)
    params = rnn.init_rnn_params(3, 4, 5, rng, scale=1.0)
    xs, targets = rng.normal(size=(6, 3)), rng.integers(0, 5, 6)
    full_loss, full = rnn.rnn_loss_and_grads(params, xs, targets)
    trunc_loss, trunc, _ = rnn.truncated_bptt(params, xs, targets, chunk_length=3)
    reset_loss, reset, _ = rnn.truncated_bptt(params, xs, targets, chunk_length=3, carry_state=False)
    run.results["rnn"] = {
        "full_loss": full_loss, "truncated_loss": trunc_loss, "reset_loss": reset_loss,
        "truncated_vs_full_Wh_gradient_difference": float(np.abs(trunc["Wh"] - full["Wh"]).max()),
        "reset_vs_truncated_Wh_gradient_difference": float(np.abs(reset["Wh"] - trunc["Wh"]).max()),
        "truncated_reach": {"num_steps": 6, "chunk_length": 3, "loss_step": 4,
                            "steps": rnn.truncated_bptt_reach(6, 3, 4)},
    }
    run.expect("rnn", "truncated BPTT carries the state: same loss as full", trunc_loss, full_loss, 1e-12)
    run.require("rnn", "truncated gradient differs from full BPTT",
                run.results["rnn"]["truncated_vs_full_Wh_gradient_difference"],
                run.results["rnn"]["truncated_vs_full_Wh_gradient_difference"] > 1e-6, "> 1e-6")
    run.require("rnn", "state reset changes the loss", reset_loss, abs(reset_loss - full_loss) > 1e-6,
                f"!= {full_loss:.6f}")
    run.run_checks("rnn", ["rnn_bptt", "truncated_bptt"])


def _lstm(run: LabRun):
    step = lstm.lstm_gate_step(1.0, f=0.8, i=0.25, g=0.4, o=0.5)
    kept = lstm.lstm_gate_step(1.0, f=1.0, i=0.0, g=0.4, o=0.5)
    run.results["lstm_step"] = {**step, "kept_c": kept["c"],
                                "parameter_count_D10_H20": lstm.lstm_parameter_count(10, 20)}
    run.expect("lstm", "c = 0.8*1 + 0.25*0.4", step["c"], 0.9)
    run.expect("lstm", "h = 0.5 * tanh(0.9)", step["h"], 0.3581489351)
    run.expect("lstm", "f=1, i=0 keeps c", kept["c"], 1.0)
    run.run_checks("lstm", ["lstm"])


def _gru(run: LabRun):
    h = gru.gru_gate_step(0.6, 0.75, -0.2)
    run.results["gru_step"] = {"h_prev": 0.6, "z": 0.75, "candidate": -0.2, "h": h,
                               "parameter_count_D10_H20": gru.gru_parameter_count(10, 20)}
    run.expect("gru", "h = 0.75*0.6 + 0.25*(-0.2)", h, 0.4)
    run.expect("gru", "parameters: GRU/LSTM = 3/4 (D=10, H=20)",
               gru.gru_parameter_count(10, 20) / lstm.lstm_parameter_count(10, 20), 0.75)
    run.run_checks("gru", ["gru_paper", "gru_pytorch", "gru_before_complement", "gru_after_complement"])


def _stacked(run: LabRun):
    rng = np.random.default_rng(0)
    layers = stacked.init_stacked_params(3, 4, 2, rng)
    xs = rng.normal(size=(5, 3))
    states = stacked.stacked_rnn_forward(layers, xs)["states"]
    fp, bp = rnn.init_rnn_params(3, 4, None, rng), rnn.init_rnn_params(3, 4, None, rng)
    bi = stacked.bidirectional_rnn_forward(fp, bp, xs)
    changed = xs.copy()
    changed[-1] += 1.0
    bi_changed = stacked.bidirectional_rnn_forward(fp, bp, changed)
    backward_moves = float(np.abs(bi_changed["backward"][0] - bi["backward"][0]).max())
    run.results["stacked"] = {"states_shape": list(states.shape), "bidirectional_shape": list(bi["states"].shape),
                              "first_backward_state_change_when_last_input_changes": backward_moves}
    run.expect("stacked", "states (layers, time, hidden)", list(states.shape), [2, 5, 4])
    run.expect("stacked", "layer 2 = an RNN over layer 1's states", states[1],
               rnn.rnn_hidden_forward(layers[1], states[0]), 0.0)
    run.expect("stacked", "bidirectional states (time, 2 * hidden)", list(bi["states"].shape), [5, 8])
    run.require("stacked", "backward state at t=0 moves when x_T changes", backward_moves, backward_moves > 0, "> 0")
    run.expect("stacked", "forward state at t=0 does not", bi_changed["forward"][0], bi["forward"][0], 0.0)
    run.run_checks("stacked", ["stacked_rnn", "bidirectional_rnn"])


def _attention(run: LabRun):
    keys, values = [[1.0, 0.0], [0.0, 1.0]], [2.0, 10.0]
    basic = att.attention([1.0, 0.0], keys, values)
    equal = att.attention([1.0, 1.0], keys, values)
    causal = att.attention([[1.0, 0.0], [0.0, 1.0]], keys, values, att.causal_mask(2))
    visible = int(att.causal_mask(3).sum())
    shapes = att.multihead_shapes(3, 4, 2)
    run.results["attention"] = {
        "q": [1.0, 0.0], "keys": keys, "values": values,
        "scores": basic["scores"], "weights": basic["weights"], "output": basic["output"],
        "equal_scores_output": equal["output"],
        "causal_first_weights": causal["weights"][0], "causal_first_output": causal["output"][0],
    }
    run.results["causal_mask"] = {"n": 3, "mask": att.causal_mask(3), "visible": visible}
    run.results["multihead_shapes"] = {"n": 3, "d_model": 4, "num_heads": 2, **shapes}
    run.expect("attention", "scores q.k/sqrt(2)", basic["scores"], [0.7071067812, 0.0], 1e-10)
    run.expect("attention", "softmax weights", basic["weights"], [0.6697615493, 0.3302384507], 1e-10)
    run.expect("attention", "output", basic["output"], 4.6419076054)
    run.expect("attention", "equal scores -> average of values", equal["output"], 6.0)
    run.expect("attention", "causal: first position weights", causal["weights"][0], [1.0, 0.0])
    run.expect("attention", "causal: first position output", causal["output"][0], 2.0)
    run.expect("attention", "visible entries of a 3x3 causal mask", visible, 6)
    for name, expected in (("q", [3, 2]), ("scores", [3, 3]), ("head_output", [3, 2]), ("concat", [3, 4])):
        run.expect("attention", f"multi-head shape of {name} (n=3, d_model=4, 2 heads)", shapes[name], expected)
    run.run_checks("attention", ["attention", "attention_masked", "multihead_self_attention", "cross_attention"])


def _char_lm(run: LabRun):
    result = char_lm.train_char_lm()
    reset = char_lm.train_char_lm(reset_state=True)
    run.results["char_lm"] = {
        "vocab": list(char_lm.VOCAB), "inputs": "hell", "targets": "ello",
        "parameters": result.parameters, "final_loss": result.final_loss, "loss_trace": result.loss_trace,
        "distributions": result.distributions, "greedy": result.greedy, "generated": result.generated,
        "reset_state": {"final_loss": reset.final_loss, "distributions": reset.distributions,
                        "greedy": reset.greedy},
    }
    run.curves["char LM on 'hello'"] = result.loss_trace
    run.expect("char_lm", "parameters (hidden 4, both biases)", result.parameters, 56)
    run.require("char_lm", "final loss after 600 steps", result.final_loss, result.final_loss < 0.01, "< 0.01")
    run.expect("char_lm", "greedy predictions, teacher forcing on 'hell'", result.greedy, "ello")
    run.expect("char_lm", "free-running generation from 'h'", result.generated, "ello")
    run.expect("char_lm", "reset_state: both 'l' positions, same distribution",
               reset.distributions[2], reset.distributions[3], 0.0)
    run.run_checks("char_lm", ["char_lm", "char_lm_reset_state"])


SECTIONS: dict[str, Callable[[LabRun], None]] = {
    "recurrence": _recurrence, "clipping": _clipping, "mlp": _mlp, "conv": _conv, "rnn": _rnn,
    "lstm": _lstm, "gru": _gru, "stacked": _stacked, "attention": _attention, "char_lm": _char_lm,
}


def collect(only: str | None = None) -> LabRun:
    if only is not None and only not in SECTIONS:
        raise KeyError(f"unknown lab {only!r}; choose from {', '.join(SECTIONS)}")
    run = LabRun()
    for name, section in SECTIONS.items():
        if only is None or name == only:
            section(run)
    run.results["gradient_checks"] = {name: max(errs.values()) for name, errs in run.gradient_checks.items()}
    run.results["gradient_check_details"] = run.gradient_checks
    run.results["tolerance"] = TOLERANCE
    run.results["failures"] = run.failures
    run.results = to_json(run.results)
    return run
