"""The Implement exercises of the NumPy labs: one per lab function, in the order of the course.

Each exercise is checked on the lesson's worked example (where the lesson has one; otherwise a
small fixed example) and on random inputs, its backward passes against central finite differences
of the loss they differentiate, and its mistakes are recognised by their outputs (seqlab.learn.mistakes).
"""

from __future__ import annotations

import numpy as np

from seqlab.learn import mistakes as M
from seqlab.learn.exercise import Case, Exercise, Mistake, central_differences, numbered_cases
from seqlab.learn.references import helper, reference


def _ref(name):
    return lambda: reference(name)


def _mistake(function, title, explanation):
    return Mistake(function.__name__.split("__", 1)[1], title, explanation, function)


def _rng(seed):
    return np.random.default_rng(seed)


def _seeded_cases(make, settings, gradcheck=False):
    """numbered_cases whose settings start with a seed: make(k, rng, *rest) gets default_rng(seed)."""
    return numbered_cases(lambda k, seed, *rest: make(k, _rng(seed), *rest), settings, gradcheck)


def _same(out):
    return out


# --- the one-number recurrence --------------------------------------------------------------------------
def _recurrence_cases():
    rng = _rng(1)
    return [Case("the worked example", (0.5, np.array([1.0, 0.0, -1.0])), {"h0": 0.0}, gradcheck=True),
            Case("random inputs 1", (1.3, rng.normal(size=6)), {"h0": 0.4}, gradcheck=True),
            Case("random inputs 2", (-0.7, rng.normal(size=4)), {"h0": -0.2}, gradcheck=True)]


def _recurrence_gradients(case):
    a, xs = case.args
    params = {"a": np.array(float(a)), "xs": np.array(xs, dtype=np.float64), "h0": np.array(float(case.kwargs["h0"]))}
    run = helper("seqlab.labs.recurrence", "scalar_recurrence")
    numeric = central_differences(lambda: float(run(float(params["a"]), params["xs"], float(params["h0"]))[-1]), params)
    return numeric, _same


SCALAR_RECURRENCE = Exercise(
    "scalar_recurrence", "The recurrence h_t = tanh(a h_{t-1} + x_t)", "循环递推 h_t = tanh(a h_{t-1} + x_t)",
    "scalar_recurrence(a, xs, h0=0.0)",
    """States h_1..h_T of the one-number RNN h_t = tanh(a * h_{t-1} + x_t).

    a: float; xs: (T,) inputs; h0: float, the state before x_1.
    Returns an ndarray (T,): h_1, ..., h_T (not h0).
    Worked example: a=0.5, xs=[1, 0, -1] -> [0.7616, 0.3634, -0.6741].""",
    _ref("scalar_recurrence"), _recurrence_cases,
    (_mistake(M.scalar_recurrence__no_tanh, "the tanh is missing",
              "each state is a*h + x without the tanh, so states leave (-1, 1): apply np.tanh to the sum"),
     _mistake(M.scalar_recurrence__states_shifted, "the states are shifted by one step",
              "the list holds h_0..h_{T-1}: append the new state after the update, not the old one before it")),
    returns="an ndarray of shape (T,)",
    stub_test="    out = scalar_recurrence(0.5, np.array([1.0, 0.0, -1.0]))\n"
              "    assert np.allclose(out, [0.7615941559557649, 0.36339948438905245, -0.6741436761583508])\n")

SCALAR_RECURRENCE_BACKWARD = Exercise(
    "scalar_recurrence_backward", "Backward through the one-number recurrence", "单数字循环的反向传播",
    "scalar_recurrence_backward(a, xs, h0=0.0)",
    """Gradients of the final state h_T of h_t = tanh(a * h_{t-1} + x_t).

    Returns {"a": float d h_T / d a, "xs": ndarray (T,) d h_T / d x_t, "h0": float d h_T / d h0}.
    Walk backward keeping dh = d h_T / d h_t; each step multiplies by tanh'(pre_t) * a = (1 - h_t^2) * a.
    The same a is used at every step, so its gradient is a SUM over time.""",
    _ref("scalar_recurrence_backward"), _recurrence_cases,
    (_mistake(M.scalar_recurrence_backward__a_not_summed, "the gradient of a is not summed over time",
              "a is shared by every step: add each step's term (da += ...) instead of overwriting it"),
     _mistake(M.scalar_recurrence_backward__no_tanh_derivative, "tanh' is missing",
              "each step must multiply by (1 - h_t^2), the derivative of tanh at that step")),
    returns='a dict {"a", "xs", "h0"}', gradients=_recurrence_gradients)


# --- the RNN ------------------------------------------------------------------------------------------------
def _rnn_params(rng, D=3, H=4, O=2):
    return helper("seqlab.labs.rnn", "init_rnn_params")(D, H, O, rng, scale=1.2)


def _rnn_step_cases():
    return _seeded_cases(lambda k, rng: ((_rnn_params(rng), rng.normal(size=3), rng.normal(size=4)), {}), (0, 5, 6))


RNN_STEP = Exercise(
    "rnn_step", "One RNN step", "RNN 的一步", "rnn_step(params, x, h_prev)",
    """One step of the vanilla RNN: h = tanh(Wh h_prev + Wx x + b).

    params: {"Wx": (H, D), "Wh": (H, H), "b": (H,), ...} (column-vector convention).
    x: (D,), h_prev: (H,). Returns h: (H,).""",
    _ref("rnn_step"), _rnn_step_cases,
    (_mistake(M.rnn_step__no_tanh, "the tanh is missing", "apply np.tanh to the pre-activation"),
     _mistake(M.rnn_step__transposed_recurrent_weight, "Wh is transposed",
              "the lecture's convention is Wh @ h_prev (rows of Wh produce the new state), not Wh.T @ h_prev")),
    returns="an ndarray of shape (H,)")


def _rnn_seq_cases(backward=False):
    def make(k, rng, T):
        p = _rnn_params(rng)
        xs, h0 = rng.normal(size=(T, 3)), rng.normal(size=4) * 0.5
        if not backward:
            return (p, xs), ({"h0": h0} if k else {})
        dys = rng.normal(size=(T, 2))
        return (p, xs, h0, dys), ({"dh_last": rng.normal(size=4)} if k == 2 else {})
    return _seeded_cases(make, ((0, 3), (7, 5), (8, 4)), gradcheck=backward)


RNN_FORWARD = Exercise(
    "rnn_forward", "The RNN forward pass", "RNN 前向传播", "rnn_forward(params, xs, h0=None)",
    """Run the RNN over a sequence: h_t = tanh(Wh h_{t-1} + Wx x_t + b), y_t = Wy h_t + by.

    params: Wx (H, D), Wh (H, H), b (H,), Wy (O, H), by (O,). xs: (T, D); h0: (H,) or None (zeros).
    Returns {"hs": (T, H), "ys": (T, O)}.""",
    _ref("rnn_forward"), _rnn_seq_cases,
    (_mistake(M.rnn_forward__state_not_carried, "the state is not carried from step to step",
              "every step starts from h0: feed each step's new h into the next step"),
     _mistake(M.rnn_forward__output_from_previous_state, "y_t is read from h_{t-1}",
              "the output at step t is Wy h_t + by, computed from the NEW state")),
    returns='a dict {"hs": (T, H), "ys": (T, O)}')


def _rnn_bptt_gradients(case):
    params, xs, h0, dys = (copy_arrays(a) for a in case.args)
    dh_last = case.kwargs.get("dh_last")
    forward = helper("seqlab.labs.rnn", "rnn_forward")

    def loss():
        out = forward(params, xs, h0)
        extra = 0.0 if dh_last is None else float(dh_last @ out["hs"][-1])
        return float(np.sum(dys * out["ys"])) + extra

    return central_differences(loss, {**params, "xs": xs, "h0": h0}), _same


def copy_arrays(value):
    if isinstance(value, dict):
        return {k: np.array(v, dtype=np.float64) for k, v in value.items()}
    return np.array(value, dtype=np.float64)


RNN_BPTT = Exercise(
    "rnn_bptt", "Backpropagation through time", "随时间反向传播（BPTT）", "rnn_bptt(params, xs, h0, dys, dh_last=None)",
    """Full BPTT of the RNN given dys (T, O) = dLoss/dy_t.

    params: Wx (H, D), Wh (H, H), b (H,), Wy (O, H), by (O,). xs: (T, D); h0: (H,); dh_last: (H,)
    extra gradient on the final state, or None.
    Returns a dict of gradients with the shapes of their arrays: "Wx", "Wh", "b", "Wy", "by",
    "xs" (T, D) and "h0" (H,).
    The gradient reaching h_t is the local term Wy^T dy_t PLUS the term from the future through
    h_{t+1}; both pass through tanh' = 1 - h_t^2. Shared weights: sum their gradients over t.""",
    _ref("rnn_bptt"), lambda: _rnn_seq_cases(backward=True),
    (_mistake(M.rnn_bptt__no_future_gradient, "BPTT without the gradient from the future state",
              "only the local term Wy^T dy_t reaches h_t; add the term Wh^T dpre_{t+1} that flows back from "
              "step t+1 (the gradients of the early steps are too small)"),
     _mistake(M.rnn_bptt__shared_weights_not_summed, "shared-weight gradients not summed over time",
              "Wx, Wh, b, Wy, by are used at every step: their gradient is the SUM of every step's term, "
              "use += instead of ="),
     _mistake(M.rnn_bptt__tanh_derivative_of_previous_state, "tanh' taken at the previous state",
              "tanh'(pre_t) = 1 - h_t^2 uses the state the step produced, h_t, not h_{t-1}")),
    returns="a dict of gradients", gradients=_rnn_bptt_gradients)


# --- cross-entropy -------------------------------------------------------------------------------------------
def _ce_cases():
    cases = [Case("the worked example", (np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]]), np.array([0, 1])), {},
                  gradcheck=True)]
    for k, seed in enumerate((2, 3), 1):
        rng = _rng(seed)
        T = 4 + k
        cases.append(Case(f"random inputs {k}", (rng.normal(size=(T, 5)) * 2, rng.integers(0, 5, T)),
                          {"normalizer": 7} if k == 2 else {}, gradcheck=True))
    return cases


def _ce_gradients(case):
    logits, targets = np.array(case.args[0], dtype=np.float64), case.args[1]
    ce = helper("seqlab.labs.rnn", "softmax_cross_entropy")
    numeric = central_differences(lambda: ce(logits, targets, case.kwargs.get("normalizer"))[0], {"dlogits": logits})
    return numeric, lambda out: {"dlogits": out[1]}


SOFTMAX_CROSS_ENTROPY = Exercise(
    "softmax_cross_entropy", "Softmax cross-entropy and its gradient", "softmax 交叉熵及其梯度",
    "softmax_cross_entropy(logits, targets, normalizer=None)",
    """Cross-entropy summed over rows then divided by `normalizer` (default: the number of rows T).

    logits (T, O), targets (T,) ints. Returns (loss: float, dlogits: (T, O), probs: (T, O)), where
    probs is the row-wise softmax and dlogits = (probs - onehot(targets)) / normalizer.""",
    _ref("softmax_cross_entropy"), _ce_cases,
    (_mistake(M.softmax_cross_entropy__divided_twice, "dividing by T twice",
              "dlogits is (probs - onehot) / T once; dividing the already-averaged gradient again makes it T times too small"),
     _mistake(M.softmax_cross_entropy__wrong_softmax_axis, "softmax over the wrong axis",
              "each ROW (one time step, axis=-1) is a distribution over the classes; normalize over axis=-1, not axis=0"),
     _mistake(M.softmax_cross_entropy__not_averaged, "the loss is not averaged",
              "divide the summed loss and its gradient by the normalizer (default T)")),
    returns="a tuple (loss, dlogits, probs)", gradients=_ce_gradients)


# --- truncated BPTT ------------------------------------------------------------------------------------------
def _tbptt_cases():
    return _seeded_cases(lambda k, rng, T, chunk, extra: (
        (_rnn_params(rng, O=3), rng.normal(size=(T, 3)), rng.integers(0, 3, T)),
        {"h0": rng.normal(size=4) * 0.5, "chunk_length": chunk, **extra}),
        ((0, 5, 2, {}), (4, 6, 3, {}), (9, 7, 2, {"loss_steps": [1, 4, 6]})))


TRUNCATED_BPTT = Exercise(
    "truncated_bptt", "Truncated BPTT", "截断的随时间反向传播",
    "truncated_bptt(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None)",
    """Truncated BPTT over chunks of `chunk_length` steps; the loss is the mean cross-entropy over all T steps.

    params as in rnn_bptt; xs (T, D); targets (T,) ints; h0 (H,) or None.
    carry_state=True: chunk k starts from the final state VALUE of chunk k-1, but no gradient flows
    into it (history detached). carry_state=False: every chunk restarts from h0.
    loss_steps: only these steps' losses count (still divided by T); None = all.
    Returns (loss: float, grads: dict like rnn_bptt's, the sum over chunks; "h0" only from the first
    chunk, "xs" (T, D)), starts: list of each chunk's start state (H,)).
    You may use your own rnn_forward / rnn_bptt / softmax_cross_entropy (softmax_cross_entropy(...,
    normalizer=T) divides by the whole T).""",
    _ref("truncated_bptt"), _tbptt_cases,
    (_mistake(M.truncated_bptt__divided_by_T_twice, "dividing by T twice",
              "each chunk's loss is already divided by the whole T; dividing the total by T again makes loss and gradients T times too small"),
     _mistake(M.truncated_bptt__gradient_crosses_chunks, "the gradient crosses the chunk boundaries",
              "these are full-BPTT gradients: start each chunk's backward pass from its own start state, treated as a constant"),
     _mistake(M.truncated_bptt__state_reset_each_chunk, "the state is reset at every chunk",
              "with carry_state=True a chunk starts from the previous chunk's final state value, not from h0")),
    returns="a tuple (loss, grads, starts)", compared=lambda out: (out[0], out[1], list(out[2])))


# --- clipping ------------------------------------------------------------------------------------------------
def _clip_cases():
    rng = _rng(3)
    return [Case("the worked example", (np.array([3.0, 4.0]), 2.0)),
            Case("random inputs 1", ([rng.normal(size=(3, 2)) * 4, rng.normal(size=5) * 4], 1.5)),
            Case("random inputs 2", ([rng.normal(size=4) * 0.1, rng.normal(size=(2, 2)) * 0.1], 5.0)),
            Case("random inputs 3", ([np.array([10.0, 0.1]), np.array([0.2, -0.3])], 1.0))]


def _clip_invariants(case, out):
    grads, threshold = case.args
    clipped = out[0]
    arrays = [clipped] if isinstance(clipped, np.ndarray) else list(clipped)
    originals = [grads] if isinstance(grads, np.ndarray) else list(grads)
    norm = float(np.sqrt(sum(np.sum(np.asarray(a, dtype=float) ** 2) for a in arrays)))
    if norm > threshold * (1 + 1e-9):
        return f"the clipped gradients have global norm {norm:.6g} > threshold {threshold}"
    flat = np.concatenate([np.ravel(a) for a in arrays]).astype(float)
    before = np.concatenate([np.ravel(a) for a in originals]).astype(float)
    factor = float(flat @ before / (before @ before)) if before.any() else 1.0
    if not np.allclose(flat, factor * before, rtol=1e-9, atol=1e-12):
        return "the clipped gradients point in another direction: every entry must be scaled by the same factor"
    return None


CLIP_GLOBAL_NORM = Exercise(
    "clip_global_norm", "Global-norm gradient clipping", "按全局范数的梯度裁剪", "clip_global_norm(grads, threshold)",
    """Rescale ALL gradients by one factor min(1, threshold / ||g||), ||g|| the L2 norm over every entry of every array.

    grads: an ndarray or a list of ndarrays; threshold > 0.
    Returns (clipped, norm): clipped in the input's form (an array, or a list of arrays), norm the
    global norm BEFORE clipping. [3, 4] with threshold 2 -> ([1.2, 1.6], 5.0).""",
    _ref("clip_global_norm"), _clip_cases,
    (_mistake(M.clip_global_norm__coordinatewise, "coordinate-wise instead of global-norm clipping",
              "clamping each entry to [-threshold, threshold] changes the direction; rescale everything by one factor"),
     _mistake(M.clip_global_norm__each_array_its_own_norm, "each array clipped by its own norm",
              "the norm is GLOBAL: one norm over every array together, one factor for all"),
     _mistake(M.clip_global_norm__always_rescaled, "small gradients are scaled up",
              "the factor is min(1, threshold / norm): gradients already under the threshold stay as they are"),
     _mistake(M.clip_global_norm__norm_after_clipping, "the norm returned is the one after clipping",
              "return the norm measured BEFORE clipping (it is what a training log reports)")),
    returns="a tuple (clipped, norm)", invariants=_clip_invariants)


# --- LSTM ------------------------------------------------------------------------------------------------------
def _lstm_params(rng, D=3, H=3):
    return helper("seqlab.labs.lstm", "init_lstm_params")(D, H, rng, scale=1.5)


def _lstm_cell_cases():
    return _seeded_cases(lambda k, rng: ((_lstm_params(rng), rng.normal(size=3), rng.normal(size=3),
                                          rng.normal(size=3)), {}), (0, 1, 2))


LSTM_CELL_FORWARD = Exercise(
    "lstm_cell_forward", "The LSTM cell", "LSTM 单元", "lstm_cell_forward(params, x, h_prev, c_prev)",
    """One LSTM step. Gate pre-activations Wx x + bx + Wh h_prev + bh, stacked in PyTorch's order (i, f, g, o):
    Wx (4H, D), Wh (4H, H), bx (4H,), bh (4H,).
    i, f, o = sigmoid(.), g = tanh(.); c = f * c_prev + i * g; h = o * tanh(c).
    x (D,), h_prev (H,), c_prev (H,). Returns (h (H,), c (H,), cache); cache is anything you need
    for the backward pass (only h and c are checked).""",
    _ref("lstm_cell_forward"), _lstm_cell_cases,
    (_mistake(M.lstm_cell_forward__gate_order_ifog, "the gates read in the order (i, f, o, g)",
              "the rows are stacked as i, f, g, o (PyTorch's order): g is the third block, o the fourth"),
     _mistake(M.lstm_cell_forward__h_without_tanh, "h = o * c, without the tanh",
              "the output is h = o * tanh(c)"),
     _mistake(M.lstm_cell_forward__gates_swapped, "forget and input gates swapped",
              "c = f * c_prev + i * g: f scales the OLD memory, i the new content")),
    returns="a tuple (h, c, cache)", compared=lambda out: (out[0], out[1]))


def _lstm_bptt_cases():
    def make(k, rng, T):
        p = _lstm_params(rng)
        kw = {"h0": rng.normal(size=3) * 0.5, "c0": rng.normal(size=3) * 0.5}
        if k == 2:
            kw["dcs"] = rng.normal(size=(T, 3))
        return (p, rng.normal(size=(T, 3)), rng.normal(size=(T, 3))), kw
    return _seeded_cases(make, ((0, 3), (1, 4), (2, 5)), gradcheck=True)


def _sequence_gradients(module, forward_name, states):
    """The gradients, by central differences, of sum(dhs * hs) (+ sum(dcs * cs) where the case has dcs)
    for a case (params, xs, dhs) whose kwargs hold the initial `states`, through the lab's forward pass."""
    def gradients(case):
        params, xs, dhs = copy_arrays(case.args[0]), copy_arrays(case.args[1]), case.args[2]
        initial = {name: copy_arrays(case.kwargs[name]) for name in states}
        dcs = case.kwargs.get("dcs")
        forward = helper(module, forward_name)

        def loss():
            out = forward(params, xs, *initial.values())
            return float(np.sum(dhs * out["hs"]) + (0.0 if dcs is None else np.sum(dcs * out["cs"])))

        return central_differences(loss, {**params, "xs": xs, **initial}), _same
    return gradients


LSTM_BPTT = Exercise(
    "lstm_bptt", "Backward through the LSTM", "LSTM 的反向传播", "lstm_bptt(params, xs, dhs, h0=None, c0=None, dcs=None)",
    """BPTT of the LSTM (see lstm_cell_forward) given dhs (T, H) = dLoss/dh_t and optionally dcs (T, H) = dLoss/dc_t.

    xs (T, D); h0, c0 (H,) or None (zeros).
    Returns gradients {"Wx", "Wh", "bx", "bh", "xs" (T, D), "h0" (H,), "c0" (H,)}.
    Two paths reach step t from the future: through h_t and through c_t (multiplied by f_{t+1}).""",
    _ref("lstm_bptt"), _lstm_bptt_cases,
    (_mistake(M.lstm_bptt__no_cell_gradient_from_future, "no gradient through the cell state from the future",
              "c_t feeds c_{t+1} = f c_t + ...: carry dc_prev = dc_total * f back to the previous step"),
     _mistake(M.lstm_bptt__no_future_gradient, "BPTT without the gradient from the future state",
              "h_t also feeds the next step's gates: add dh_prev from step t+1 to dhs[t]"),
     _mistake(M.lstm_bptt__tanh_derivative_of_cell_missing, "tanh'(c) missing on the way from h to c",
              "h = o tanh(c): the gradient reaching c from h is dh * o * (1 - tanh(c)^2)")),
    returns="a dict of gradients", gradients=_sequence_gradients("seqlab.labs.lstm", "lstm_forward", ("h0", "c0")))


# --- GRU ------------------------------------------------------------------------------------------------------
def _gru_params(rng, D=3, H=3):
    return helper("seqlab.labs.gru", "init_gru_params")(D, H, rng, scale=1.5)


def _gru_cell_cases():
    return _seeded_cases(lambda k, rng: ((_gru_params(rng), rng.normal(size=3), rng.normal(size=3)), {}), (0, 1, 2))


_GRU_DOC = """Maps stacked in PyTorch's order (r, z, n): Wx (3H, D), Wh (3H, H), bx (3H,), bh (3H,).
    r = sigmoid(Wx_r x + bx_r + Wh_r h_prev + bh_r), z likewise,
    n = tanh(Wx_n x + bx_n + Wh_n (r * h_prev) + bh_n)   (reset BEFORE the recurrent matmul),
    h = z * h_prev + (1 - z) * n                          (z = the fraction of the OLD state kept).
    Only convention="paper" (the above) is checked."""

GRU_CELL_FORWARD = Exercise(
    "gru_cell_forward", "The GRU cell", "GRU 单元", 'gru_cell_forward(params, x, h_prev, convention="paper")',
    "One GRU step. x (D,), h_prev (H,). Returns (h (H,), cache); only h is checked.\n    " + _GRU_DOC,
    _ref("gru_cell_forward"), _gru_cell_cases,
    (_mistake(M.gru_cell_forward__update_gate_other_convention, "the update gate read in the other convention",
              "in this course z is the fraction of the OLD state kept: h = z h_prev + (1 - z) n, not (1 - z) h_prev + z n"),
     _mistake(M.gru_cell_forward__reset_after_matmul, "the reset gate applied after the recurrent matmul",
              "that is PyTorch's variant r * (Wh_n h_prev + bh_n); the paper's is Wh_n (r * h_prev) + bh_n")),
    returns="a tuple (h, cache)", compared=lambda out: out[0])


def _gru_bptt_cases():
    return _seeded_cases(lambda k, rng, T: ((_gru_params(rng), rng.normal(size=(T, 3)), rng.normal(size=(T, 3))),
                                            {"h0": rng.normal(size=3) * 0.5}), ((0, 3), (1, 4), (2, 5)), gradcheck=True)


GRU_BPTT = Exercise(
    "gru_bptt", "Backward through the GRU", "GRU 的反向传播", 'gru_bptt(params, xs, dhs, h0=None, convention="paper")',
    "BPTT of the GRU given dhs (T, H) = dLoss/dh_t; xs (T, D), h0 (H,) or None.\n    Returns gradients "
    '{"Wx", "Wh", "bx", "bh", "xs" (T, D), "h0" (H,)}.\n    ' + _GRU_DOC,
    _ref("gru_bptt"), _gru_bptt_cases,
    (_mistake(M.gru_bptt__update_gate_other_convention, "the update gate read in the other convention",
              "z keeps the OLD state here: h = z h_prev + (1 - z) n, so dh_prev gets dh * z and dn gets dh * (1 - z)"),
     _mistake(M.gru_bptt__no_future_gradient, "BPTT without the gradient from the future state",
              "add the gradient returned for h_prev by step t+1 to dhs[t] before going through step t")),
    returns="a dict of gradients", gradients=_sequence_gradients("seqlab.labs.gru", "gru_forward", ("h0",)))


# --- masks and attention ----------------------------------------------------------------------------------------
def _mask_invariants(case, out):
    n = case.args[0]
    count = int(np.asarray(out).sum())
    return None if count == n * (n + 1) // 2 else f"{count} entries visible for n={n}; a causal mask shows n(n+1)/2 = {n * (n + 1) // 2}"


CAUSAL_MASK = Exercise(
    "causal_mask", "The causal mask", "因果掩码", "causal_mask(n)",
    """(n, n) bool array, True where query i may attend key j, i.e. j <= i (itself and the past).
    causal_mask(3) has 1 + 2 + 3 = 6 True entries.""",
    _ref("causal_mask"), lambda: [Case("the worked example", (3,)), Case("random inputs 1", (1,)),
                                  Case("random inputs 2", (6,))],
    (_mistake(M.causal_mask__current_position_excluded, "causal mask off by one: the current position excluded",
              "a token may attend to itself: j <= i, not j < i (np.tril with k=0)"),
     _mistake(M.causal_mask__one_future_position_included, "causal mask off by one: the next (future) position included",
              "query i must not see key i+1: use j <= i (np.tril with k=0, not k=1)"),
     _mistake(M.causal_mask__transposed, "the mask is transposed (keys see queries)",
              "rows are queries, columns keys: row i is True for columns 0..i (lower triangle)")),
    returns="an (n, n) bool ndarray", invariants=_mask_invariants)


def _attention_cases():
    rng = _rng(4)
    n, m, d = 3, 4, 4
    cases = [Case("the worked example", (np.array([1.0, 0.0]), np.eye(2), np.array([2.0, 10.0])))]
    cases.append(Case("random inputs 1", (rng.normal(size=(n, d)) * 2, rng.normal(size=(m, d)) * 2, rng.normal(size=(m, 3)))))
    cases.append(Case("random inputs 2 (causal mask)", (rng.normal(size=(m, d)), rng.normal(size=(m, d)),
                                                        rng.normal(size=(m, 2))), {"mask": np.tril(np.ones((m, m), bool))}))
    cases.append(Case("random inputs 3 (padding mask)", (rng.normal(size=(n, d)), rng.normal(size=(m, d)),
                                                         rng.normal(size=m)), {"mask": np.array([True, True, False, True])}))
    return cases


def _attention_invariants(case, out):
    weights = np.atleast_2d(np.asarray(out["weights"], dtype=float))
    mask = case.kwargs.get("mask")
    visible = np.ones(weights.shape, bool) if mask is None else np.broadcast_to(mask, weights.shape)
    rows = weights.sum(axis=-1)
    bad = np.flatnonzero(visible.any(axis=-1) & ~np.isclose(rows, 1.0))
    if bad.size:
        return f"weights row {int(bad[0])} sums to {rows[bad[0]]:.6g}; each row of attention weights must sum to 1"
    if np.any(weights[~visible] != 0):
        i, j = map(int, np.argwhere((weights != 0) & ~visible)[0])
        return f"weights[{i}, {j}] = {weights[i, j]:.3g} but that key is masked: masked positions get weight exactly 0"
    return None


ATTENTION = Exercise(
    "attention", "Scaled dot-product attention with masks", "带掩码的缩放点积注意力", "attention(q, keys, values, mask=None)",
    """Row-vector convention: q (d,) or (n, d); keys (m, d); values (m,) or (m, dv);
    mask (m,) or (n, m) bool, True = may attend.
    scores = q keys^T / sqrt(d); weights = softmax over each row (masked scores -> -inf first);
    output = weights values. A row with every key masked gets zero weights and output 0 (never NaN).
    Returns {"scores", "weights" ((m,) / (n, m)), "output" (a float / (dv,) for one query; (n,) /
    (n, dv) otherwise), "fully_masked_rows": list of row indices with nothing to attend to}.
    q=[1,0], keys=[[1,0],[0,1]], values=[2,10] -> weights [0.6698, 0.3302], output 4.6419.""",
    _ref("attention"), _attention_cases,
    (_mistake(M.attention__softmax_over_queries, "softmax over the wrong axis",
              "each QUERY's row (axis=-1, over the keys) is a distribution; normalizing over axis 0 mixes queries"),
     _mistake(M.attention__missing_scale, "a missing 1/sqrt(d_k)",
              "scores = q k^T / sqrt(d_k); without it the softmax is too peaked for large d_k"),
     _mistake(M.attention__divided_by_d, "scores divided by d_k instead of sqrt(d_k)",
              "the scale is 1/sqrt(d_k), which keeps the scores' variance near 1"),
     _mistake(M.attention__mask_after_softmax, "the mask applied after the softmax",
              "set masked scores to -inf BEFORE the softmax; zeroing weights afterwards leaves rows that do not sum to 1"),
     _mistake(M.attention__mask_inverted, "the mask read inverted",
              "True means MAY attend: keep scores where the mask is True")),
    returns='a dict {"scores", "weights", "output", "fully_masked_rows"}', invariants=_attention_invariants,
    compared=lambda out: {k: out[k] for k in ("scores", "weights", "output", "fully_masked_rows")})


def _attention_backward_cases():
    return _seeded_cases(lambda k, rng, n, m, d, dv, masked: (
        (rng.normal(size=(n, d)), rng.normal(size=(m, d)), rng.normal(size=(m, dv)), rng.normal(size=(n, dv))),
        {"mask": np.tril(np.ones((n, m), bool))} if masked else {}),
        ((0, 2, 3, 2, 2, False), (1, 3, 4, 4, 3, False), (2, 4, 4, 3, 2, True)), gradcheck=True)


def _attention_gradients(case):
    q, k, v = (copy_arrays(a) for a in case.args[:3])
    d_out, mask = case.args[3], case.kwargs.get("mask")
    forward = helper("seqlab.labs.attention", "attention")
    return central_differences(lambda: float(np.sum(d_out * forward(q, k, v, mask)["output"])),
                               {"q": q, "keys": k, "values": v}), _same


ATTENTION_BACKWARD = Exercise(
    "attention_backward", "Backward through attention", "注意力的反向传播",
    "attention_backward(q, keys, values, d_output, mask=None)",
    """Gradients of sum(d_output * output) for 2-D inputs: q (n, d), keys (m, d), values (m, dv), d_output (n, dv).
    Returns {"q": (n, d), "keys": (m, d), "values": (m, dv)}.
    Softmax backward per row: dS = P * (dP - sum_j dP_j P_j); remember the 1/sqrt(d) scale.""",
    _ref("attention_backward"), _attention_backward_cases,
    (_mistake(M.attention_backward__missing_scale, "a missing 1/sqrt(d_k) in the gradient",
              "the scores are scaled by 1/sqrt(d); the gradients of q and keys carry the same factor"),
     _mistake(M.attention_backward__softmax_jacobian_diagonal_only, "the softmax Jacobian without its sum term",
              "dS = P * (dP - sum_j dP_j P_j): every weight depends on every score of its row")),
    returns='a dict {"q", "keys", "values"}', gradients=_attention_gradients)


def _multihead_cases():
    def make(k, rng, n, m, d_model, heads, masked):
        params = helper("seqlab.labs.attention", "init_multihead_params")(d_model, rng)
        x_q = rng.normal(size=(n, d_model))
        x_kv = x_q if n == m and k != 1 else rng.normal(size=(m, d_model))
        return (x_q, x_kv.copy(), params, heads), ({"mask": np.tril(np.ones((n, m), bool))} if masked else {})
    return _seeded_cases(make, ((0, 3, 3, 4, 2, False), (1, 4, 5, 6, 3, False), (2, 4, 4, 8, 2, True)))


MULTIHEAD_ATTENTION = Exercise(
    "multihead_attention", "Multi-head attention: split and merge heads", "多头注意力：拆分与合并头",
    "multihead_attention(x_q, x_kv, params, num_heads, mask=None)",
    """x_q (n, d_model) queries, x_kv (m, d_model) keys/values; params Wq, Wk, Wv, Wo (d_model, d_model), applied as x @ W.
    Q = x_q Wq, K = x_kv Wk, V = x_kv Wv; head h uses columns h*w:(h+1)*w, w = d_model / num_heads;
    each head: scaled dot-product attention with scale 1/sqrt(w) -> (n, w); concat the heads in order
    -> (n, d_model); output = concat Wo. Returns a dict with at least "concat" (n, d_model) and
    "output" (n, d_model).""",
    _ref("multihead_attention"), _multihead_cases,
    (_mistake(M.multihead_attention__heads_split_interleaved, "heads split as interleaved columns",
              "head h takes the CONTIGUOUS columns h*w:(h+1)*w (a reshape to (n, heads, w)), not every heads-th column"),
     _mistake(M.multihead_attention__scaled_by_d_model, "scores scaled by 1/sqrt(d_model) instead of the head width",
              "each head's d_k is its width w = d_model / num_heads")),
    returns='a dict with "concat" and "output"', compared=lambda out: {"concat": out["concat"], "output": out["output"]})


# --- BPE ----------------------------------------------------------------------------------------------------------
def _merge_cases():
    token_bytes = [bytes([b]) for b in range(256)]
    o = ord
    worked = {(o("e"), o("s")): 9, (o("s"), o("t")): 9, (o("l"), o("o")): 7, (o("o"), o("w")): 7, (o("w"), o("e")): 8}
    rng = _rng(5)
    cases = [Case("the worked example", (worked, token_bytes))]
    for k in (1, 2):
        letters = [o(c) for c in "abcdefgh"]
        counts = {}
        for _ in range(12):
            pair = (int(rng.choice(letters)), int(rng.choice(letters)))
            counts[pair] = int(rng.integers(1, 4))
        cases.append(Case(f"random inputs {k}", (counts, token_bytes)))
    extended = token_bytes + [b"ab", b"a"]
    cases.append(Case("random inputs 3 (longer tokens)", ({(256, 98): 3, (97, 98): 3, (257, 99): 3, (99, 97): 1}, extended)))
    return cases


CHOOSE_MERGE = Exercise(
    "choose_merge", "One BPE merge step: which pair to merge", "BPE 的一步：选择合并哪一对",
    "choose_merge(pair_counts, token_bytes)",
    """The pair to merge next: the most frequent adjacent pair; ties broken by the lexicographically
    GREATER pair of byte strings (compare token_bytes[left], then token_bytes[right]).
    pair_counts: {(left id, right id): count}, non-empty; token_bytes: id -> bytes (a list or dict).
    Returns the chosen (left id, right id). Worked example: ("e","s") and ("s","t") both 9 -> ("s","t").""",
    _ref("choose_merge"), _merge_cases,
    (_mistake(M.choose_merge__tie_to_smaller_pair, "ties broken towards the smaller pair",
              "among equally frequent pairs the lexicographically GREATER pair of byte strings wins"),
     _mistake(M.choose_merge__tie_to_first_counted, "ties broken by counting order",
              "max() keeps the first pair it sees; compare the pairs' bytes to break ties")),
    returns="a tuple (left id, right id)", compared=lambda out: tuple(int(i) for i in out))


_CORPUS = ("low low low low low lower lower widest widest widest newest newest newest newest newest newest"
           "<|endoftext|>") * 3 + "".join(f"ab<|endoftext|>cd{i % 3}<|endoftext|>" for i in range(20))


def _bpe_cases():
    import atexit
    import shutil
    import tempfile
    from pathlib import Path
    folder = Path(tempfile.mkdtemp(prefix="seqlab-learn-bpe-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    worked, other = folder / "worked.txt", folder / "random.txt"
    worked.write_text(_CORPUS, encoding="utf-8")
    rng = _rng(6)
    words = ["the", "cat", "sat", "on", "mat", "a", "hat"]
    other.write_text("<|endoftext|>".join(" ".join(rng.choice(words, 8)) for _ in range(30)), encoding="utf-8")
    return [Case("the worked example", (str(worked), 256 + 1 + 12, ["<|endoftext|>"])),
            Case("random inputs 1", (str(other), 256 + 1 + 15, ["<|endoftext|>"]))]


def _bpe_compared(out):
    vocab, merges = out
    specials = [vocab[i] for i in range(len(vocab) - 256 - len(merges))]
    return {"first ids (special tokens)": specials, "tokens": sorted(vocab.values()),
            "merges": [tuple(m) for m in merges]}


TRAIN_BPE = Exercise(
    "train_bpe", "Training byte-level BPE", "训练字节级 BPE", "train_bpe(input_path, vocab_size, special_tokens)",
    """Train byte-level BPE on the text file input_path.
    Split the text on the special tokens first (they are never merged and never counted), pre-tokenize
    each piece with GPT-2's regex (seqlab.tokenizer.gpt2_pretokenize may be used), count pre-tokens,
    then merge the most frequent adjacent pair (ties: lexicographically greater bytes) until the
    vocabulary has vocab_size entries.
    Returns (vocab: {id: bytes} with the special tokens first, then the 256 single bytes (any order),
    then one token per merge; merges: [(left bytes, right bytes), ...] in the order learned).""",
    _ref("train_bpe"), _bpe_cases,
    (_mistake(M.train_bpe__merges_across_special_tokens, "BPE merging across a special token",
              "the special token's text was counted and merged like ordinary text: split on special tokens first"),
     _mistake(M.train_bpe__special_tokens_after_bytes, "the special tokens do not come first",
              "ids 0..k-1 are the special tokens, then the 256 bytes, then the merges")),
    returns="a tuple (vocab, merges)", compared=_bpe_compared, time_limit=30.0)


EXERCISES: tuple[Exercise, ...] = (
    SCALAR_RECURRENCE, SCALAR_RECURRENCE_BACKWARD, RNN_STEP, RNN_FORWARD, RNN_BPTT, SOFTMAX_CROSS_ENTROPY,
    TRUNCATED_BPTT, CLIP_GLOBAL_NORM, LSTM_CELL_FORWARD, LSTM_BPTT, GRU_CELL_FORWARD, GRU_BPTT, CAUSAL_MASK,
    ATTENTION, ATTENTION_BACKWARD, MULTIHEAD_ATTENTION, CHOOSE_MERGE, TRAIN_BPE,
)
