"""The Implement exercises of the NumPy labs: one per lab function, in the order of the course.

Each stub's docstring is the exercise's contract, and each sentence of it is a check (``Spec``): the
exercise's own cases (the lesson's worked example, random inputs) check the values, backward passes
are checked against central finite differences of the loss they differentiate, and each sentence
that asks for more (an option, an edge case, a dtype, a shape) brings cases of its own. Mistakes
(seqlab.learn.mistakes holds their mutants) are recognised by their outputs or, as a family, by the
structure of the difference (seqlab.learn.diagnosis).
"""

from __future__ import annotations

import numpy as np

from seqlab.learn import diagnosis as D
from seqlab.learn import mistakes as M
from seqlab.learn.exercise import (
    Case,
    Exercise,
    Mistake,
    Spec,
    central_differences,
    numbered_cases,
    same_dtypes,
    same_values,
    shared_mistake,
)
from seqlab.learn.kit import copy_arrays
from seqlab.learn.kit import float32 as _float32
from seqlab.learn.kit import not_float64, square_only, states_none
from seqlab.learn.kit import rng as _rng
from seqlab.learn.kit import rnn_params as _rnn_params
from seqlab.learn.kit import same as _same
from seqlab.learn.kit import seeded_cases as _seeded_cases
from seqlab.learn.references import helper, reference


def _ref(name):
    return lambda: reference(name)


def _m(target, title, explanation, title_zh, explanation_zh, why, why_zh, recognise=None, convention=None,
       accepted=False) -> Mistake:
    """A Mistake: ``target`` is its mutant in seqlab.learn.mistakes (EXERCISE__ID), or its id when a
    recogniser alone knows it. ``why`` and ``why_zh``: the teacher's paragraph for the lesson."""
    mistake_id, implementation = (target.__name__.split("__", 1)[1], target) if callable(target) else (target, None)
    return Mistake(mistake_id, title, explanation, implementation, recognise, title_zh, explanation_zh,
                   (why, why_zh), convention, accepted)






def _not_float64(check="float64"):
    return shared_mistake("not_float64", not_float64(check))


def _square_only(check="non-square"):
    return shared_mistake("square_only", square_only(check))


def _states_none(check="h0 None", mistake_id="h0_none_not_handled"):
    return shared_mistake(mistake_id, states_none(check))




def _one_more_row(part, text: str):
    """Recognises an output with one row too many whose rows after the first are the reference's
    (the initial state kept in front)."""
    path = part if isinstance(part, tuple) else (part,)

    def recognise(ev):
        seen = []
        for i in ev.own():
            raw = ev.raw[i]
            if raw is None:
                continue
            try:
                got = np.asarray(D.pick(raw, path), dtype=np.float64)
            except (KeyError, IndexError, TypeError, ValueError):
                return None
            want = np.asarray(D.pick(ev.expected[i], path), dtype=np.float64)
            if got.shape[:1] != (want.shape[0] + 1,) or not D.close(want, got[1:], ev.rtol, ev.atol):
                return None
            seen.append(i)
        return f"{text}: {D.leaf_name(path)} has one row more than the reference's (on {ev.cases[seen[0]].label}); " \
               "its rows after the first are the reference's" if seen else None
    return recognise


# Mistakes several exercises share, said once ----------------------------------------------------------------------











# --- the one-number recurrence --------------------------------------------------------------------------
def _recurrence_cases():
    rng = _rng(1)
    return [Case("the worked example", (0.5, np.array([1.0, 0.0, -1.0])), {"h0": 0.0}, gradcheck=True),
            Case("random inputs 1", (1.3, rng.normal(size=6)), {"h0": 0.4}, gradcheck=True),
            Case("random inputs 2", (-0.7, rng.normal(size=4)), {"h0": -0.2}, gradcheck=True)]


def _recurrence_dtype_cases():
    return [Case("xs of dtype float32", (0.5, np.array([1.0, 0.0, -1.0], dtype=np.float32)), {"h0": 0.0}),
            Case("xs of integers", (0.9, np.array([2, -1, 0, 1])), {"h0": 0.5}),
            Case("xs a list", (0.3, [0.5, -0.25]), {"h0": 0.1})]


def _recurrence_empty_cases():
    return [Case("an empty sequence (T = 0)", (0.5, np.zeros(0)), {"h0": 0.3})]


def _recurrence_default_cases():
    return [Case("h0 left out", (0.8, np.array([0.5, -1.0, 2.0, 0.1])))]


def _recurrence_gradients(case):
    a, xs = case.args
    params = {"a": np.array(float(a)), "xs": np.array(xs, dtype=np.float64), "h0": np.array(float(case.kwargs["h0"]))}
    run = helper("seqlab.labs.recurrence", "scalar_recurrence")
    numeric = central_differences(lambda: float(run(float(params["a"]), params["xs"], float(params["h0"]))[-1]), params)
    return numeric, _same


def _recurrence_terms(case):
    """d h_T / d a, step by step: step t's own term (1 - h_t^2) h_{t-1}, times d h_T / d h_t."""
    a, xs = case.args
    xs, h0 = np.asarray(xs, dtype=np.float64), float(case.kwargs.get("h0", 0.0))
    forward = helper("seqlab.labs.recurrence", "scalar_recurrence")
    backward = helper("seqlab.labs.recurrence", "scalar_recurrence_backward")
    hs = np.concatenate([[h0], forward(a, xs, h0)])
    return {"a": np.array([backward(a, xs[t + 1:], hs[t + 1])["h0"] * backward(a, xs[t:t + 1], hs[t])["a"]
                           for t in range(len(xs))])}


SCALAR_RECURRENCE = Exercise(
    "scalar_recurrence", "The recurrence h_t = tanh(a h_{t-1} + x_t)", "循环递推 h_t = tanh(a h_{t-1} + x_t)",
    "scalar_recurrence(a, xs, h0=0.0)",
    """States h_1..h_T of the one-number RNN.

    a: float; xs: (T,) inputs, an ndarray or a list; h0: float, the state before x_1.
    h_t = tanh(a * h_{t-1} + x_t) for t = 1..T, starting from h0.
    Returns an ndarray of shape (T,): h_1, ..., h_T, not h0.
    The result is float64 whatever the dtype of xs.
    An empty xs (T = 0) gives an empty array.
    h0 defaults to 0.0.
    xs is left unchanged.
    Worked example: a=0.5, xs=[1, 0, -1] -> [0.7616, 0.3634, -0.6741].""",
    _ref("scalar_recurrence"), _recurrence_cases,
    (_m(M.scalar_recurrence__no_tanh, "the tanh is missing",
        "each state is a*h + x without the tanh, so states leave (-1, 1): apply np.tanh to the sum",
        "缺少 tanh", "每个隐藏状态都是没有 tanh 的 a*h + x，所以隐藏状态会超出 (-1, 1)：对和取 np.tanh",
        "Without the squashing nonlinearity the recurrence is linear: the state grows like a^t and the "
        "network can only compute weighted sums of its inputs. The tanh keeps every state in (-1, 1) and is "
        "what makes the factor tanh'(.) appear in every backward step.",
        "没有压缩型非线性，递推就是线性的：隐藏状态按 a^t 增长，网络只能计算输入的加权和。tanh 让每个隐藏状态都留在 "
        "(-1, 1) 内，也正是它让每一步反向传播都出现因子 tanh'(.)。"),
     _m(M.scalar_recurrence__states_shifted, "the states are shifted by one step",
        "the list holds h_0..h_{T-1}: append the new state after the update, not the old one before it",
        "隐藏状态错位了一步", "列表里存的是 h_0..h_{T-1}：应在更新之后追加新隐藏状态，而不是在更新之前追加旧隐藏状态",
        "h_t is the state AFTER reading x_t. Recording the state before the update returns the state each "
        "step started from, so the answer for step t is the one for step t-1, and the last state, the one "
        "the next chunk or the output layer needs, is never returned.",
        "h_t 是读入 x_t 之后的隐藏状态。在更新之前记录，返回的是每一步开始时的隐藏状态，于是第 t 步的答案其实是第 t-1 步的，"
        "而最后一个隐藏状态（下一段或输出层需要的那个）从未被返回。",
        recognise=D.shifted((), axis_name="time step")),
     _m("includes_h0", "h0 returned with the states",
        "the output holds h0, h_1, ..., h_T (T + 1 values): return the T states after h0 only",
        "把 h0 也一起返回了", "输出包含 h0, h_1, ..., h_T（T + 1 个值）：只返回 h0 之后的 T 个隐藏状态",
        "The function is asked for one state per input: T inputs give T states. Keeping h0 in front "
        "misaligns every later use, where h_t must sit beside x_t and y_t.",
        "函数要求每个输入对应一个隐藏状态：T 个输入产生 T 个隐藏状态。把 h0 放在最前面会让后面的每次使用都错位，因为 h_t "
        "必须与 x_t 和 y_t 对齐。",
        recognise=_one_more_row((), "h0 kept in front")),
     _m(M.scalar_recurrence__h0_ignored, "h0 is ignored",
        "the recurrence always starts from 0: start from the h0 argument",
        "忽略了 h0", "递推总是从 0 开始：应从参数 h0 开始",
        "h0 carries what came before this sequence (the previous chunk, an encoder's summary). Starting "
        "from zero throws that context away; the first states are wrong and the error fades only slowly.",
        "h0 携带着这段序列之前的信息（上一段、编码器的概括）。从零开始就丢掉了这些上下文；最初几个隐藏状态是错的，"
        "误差只会慢慢消退。"),
     _not_float64(),
     _m("empty_sequence_fails", "an empty sequence is not handled",
        "with T = 0 there is nothing to compute: return an empty float64 array, without reading xs[0]",
        "没有处理空序列", "T = 0 时无需计算：返回一个空的 float64 数组，不要读取 xs[0]",
        "Edge cases appear in real data: a batch can hold an empty document, and chunked code calls the "
        "function on what is left over. A loop over the inputs handles T = 0 by itself; special-casing "
        "the first step is what breaks it.",
        "真实数据里会出现边界情况：一个批次可能含有空文档，分块的代码也会对剩下的部分调用函数。对输入循环的写法"
        "自然能处理 T = 0；单独处理第一步才会出错。",
        recognise=D.failed_check("empty sequence", raises=True)),
     _m("h0_default", "h0 has no default of 0.0",
        "keep the signature's default h0=0.0, so that scalar_recurrence(a, xs) starts from zero",
        "h0 没有默认值 0.0", "保留签名中的默认值 h0=0.0，使 scalar_recurrence(a, xs) 从零开始",
        "The signature is part of the contract: callers that leave h0 out rely on the documented default, "
        "and a default of None without a check turns their call into a TypeError deep inside the loop.",
        "函数签名也是约定的一部分：省略 h0 的调用者依赖文档中写明的默认值；如果默认值是 None 又不加检查，"
        "他们的调用就会在循环深处变成一个 TypeError。",
        recognise=D.failed_check("h0 default", raises=True))),
    returns="an ndarray of shape (T,)",
    stub_test="    out = scalar_recurrence(0.5, np.array([1.0, 0.0, -1.0]))\n"
              "    assert np.allclose(out, [0.7615941559557649, 0.36339948438905245, -0.6741436761583508])\n",
    spec=(Spec("values (random inputs)", "h_t = tanh(a * h_{t-1} + x_t) for t = 1..T, starting from h0."),
          Spec("shapes and types", "Returns an ndarray of shape (T,): h_1, ..., h_T, not h0."),
          Spec("float64", "The result is float64 whatever the dtype of xs.", _recurrence_dtype_cases, same_dtypes()),
          Spec("empty sequence", "An empty xs (T = 0) gives an empty array.", _recurrence_empty_cases),
          Spec("h0 default", "h0 defaults to 0.0.", _recurrence_default_cases),
          Spec("inputs unchanged", "xs is left unchanged.")),
    axes={"": ("time step",)})


def _backward_dtype_cases():
    return [Case("xs of dtype float32", (0.5, np.array([1.0, 0.0, -1.0], dtype=np.float32)), {"h0": 0.0}),
            Case("xs of integers", (0.9, np.array([2, -1, 0, 1])), {"h0": 0.5})]


SCALAR_RECURRENCE_BACKWARD = Exercise(
    "scalar_recurrence_backward", "Backward through the one-number recurrence", "单数字循环的反向传播",
    "scalar_recurrence_backward(a, xs, h0=0.0)",
    """Gradients of the final state h_T of h_t = tanh(a * h_{t-1} + x_t) (see scalar_recurrence).

    Returns {"a": d h_T / d a, "xs": (T,) d h_T / d x_t, "h0": d h_T / d h0}.
    Walk backward keeping dh = d h_T / d h_t; each step multiplies it by tanh'(pre_t) * a = (1 - h_t^2) * a.
    The same a is used at every step, so its gradient is a SUM over time: step t adds (1 - h_t^2) * dh * h_{t-1}.
    "a" and "h0" are numbers; "xs" is a float64 array whatever the dtype of xs.
    xs is left unchanged.""",
    _ref("scalar_recurrence_backward"), _recurrence_cases,
    (_m(M.scalar_recurrence_backward__a_not_summed, "the gradient of a is not summed over time",
        "a is shared by every step: add each step's term (da += ...) instead of overwriting it",
        "a 的梯度没有对时间求和", "每一步都共用同一个 a：把每一步的项加起来（da += ...），不要覆盖",
        "One parameter used at T steps is like T copies of it whose effects add up: the chain rule gives "
        "the SUM of the T contributions. Keeping only one step's term is the gradient of a model in which "
        "a acts at that single step.",
        "一个参数在 T 步中被使用，相当于它的 T 个副本的效果叠加：链式法则给出这 T 个贡献的和。只保留某一步的项，"
        "得到的是“a 只在那一步起作用”的模型的梯度。",
        recognise=D.summed_over_time(("a",), "the gradient of a")),
     _m(M.scalar_recurrence_backward__no_tanh_derivative, "tanh' is missing",
        "each step must multiply by (1 - h_t^2), the derivative of tanh at that step",
        "缺少 tanh'", "每一步都必须乘以 (1 - h_t^2)，即 tanh 在该步的导数",
        "Every step of the forward pass goes through tanh, so every step of the backward pass multiplies by "
        "its derivative. Without it the gradients are those of a linear recurrence and they neither vanish "
        "nor saturate the way the real ones do.",
        "前向传播的每一步都经过 tanh，所以反向传播的每一步都要乘以它的导数。没有它，得到的是线性递推的梯度，"
        "既不会像真实梯度那样消失，也不会饱和。"),
     _m(M.scalar_recurrence_backward__tanh_derivative_of_previous_state, "tanh' taken at the previous state",
        "tanh'(pre_t) = 1 - h_t^2 uses the state the step produced, h_t, not h_{t-1}",
        "tanh' 用了上一步的隐藏状态", "tanh'(pre_t) = 1 - h_t^2 用的是这一步产生的隐藏状态 h_t，而不是 h_{t-1}",
        "The derivative of tanh is read off its OUTPUT: if h = tanh(pre) then dh/dpre = 1 - h^2 with the "
        "same h. The state before the step is the input of the step, not the output of its tanh.",
        "tanh 的导数由它的输出得到：若 h = tanh(pre)，则 dh/dpre = 1 - h^2，其中的 h 是同一个。这一步之前的隐藏状态是"
        "这一步的输入，而不是它的 tanh 的输出。"),
     _m(M.scalar_recurrence_backward__a_term_uses_h_t, "a's term uses h_t instead of h_{t-1}",
        "step t computes a * h_{t-1}: its term in d h_T / d a is dpre_t * h_{t-1}, the state a multiplied",
        "a 的项用了 h_t 而不是 h_{t-1}", "第 t 步计算的是 a * h_{t-1}：它在 d h_T / d a 中的项是 dpre_t * h_{t-1}，即 a 所乘的那个隐藏状态",
        "The gradient of a product with respect to one factor is the other factor: a meets h_{t-1} at "
        "step t, so that is what multiplies the step's gradient.",
        "乘积对其中一个因子的梯度就是另一个因子：第 t 步中 a 与 h_{t-1} 相乘，所以乘到这一步梯度上的是 h_{t-1}。"),
     _m(M.scalar_recurrence_backward__h0_without_last_factor, "the gradient of h0 misses the last factor a",
        "h_1 = tanh(a h0 + x_1): after dpre_1 comes one more factor a for h0; return dpre_1 * a",
        "h0 的梯度少了最后一个因子 a", "h_1 = tanh(a h0 + x_1)：得到 dpre_1 之后，h0 还要再乘一个 a；应返回 dpre_1 * a",
        "h0 enters the first step exactly as every later state enters the next one, multiplied by a. The "
        "walk back therefore ends with the same multiplication as every other step.",
        "h0 进入第一步的方式和后面每个隐藏状态进入下一步的方式完全一样：乘以 a。所以反向的最后一步也和其他每一步一样要乘以 a。",
        recognise=D.factor_of(("h0",), lambda case: {"1/a": 1 / case.args[0]}, "the gradient of h0")),
     _not_float64()),
    returns='a dict {"a", "xs", "h0"}', gradients=_recurrence_gradients, step_terms=_recurrence_terms,
    spec=(Spec("gradients vs finite differences",
               'Returns {"a": d h_T / d a, "xs": (T,) d h_T / d x_t, "h0": d h_T / d h0}.'),
          Spec("backward through tanh", "Walk backward keeping dh = d h_T / d h_t; each step multiplies it by "
               "tanh'(pre_t) * a = (1 - h_t^2) * a.", verify=same_values("xs", "h0")),
          Spec("a summed over time", "The same a is used at every step, so its gradient is a SUM over time: "
               "step t adds (1 - h_t^2) * dh * h_{t-1}.", verify=same_values("a")),
          Spec("float64", '"a" and "h0" are numbers; "xs" is a float64 array whatever the dtype of xs.',
               _backward_dtype_cases, same_dtypes()),
          Spec("inputs unchanged", "xs is left unchanged.")),
    axes={"xs": ("time step",)})


# --- the RNN ------------------------------------------------------------------------------------------------


def _rnn_seq_cases(backward=False, settings=((0, 3, 3, 3, 3), (7, 5, 3, 4, 2), (8, 4, 2, 3, 5)), h0=True,
                   dh_last=False, float32=False):
    """Sequences (seed, T, D, H, O): rnn_forward's (params, xs) with h0, or rnn_bptt's (params, xs, h0, dys)."""
    def make(k, rng, T, D, H, O):
        p = _rnn_params(rng, D, H, O)
        xs, first = rng.normal(size=(T, D)), rng.normal(size=H) * 0.5
        if float32:
            xs = xs.astype(np.float32)
        if not backward:
            return (p, xs), ({"h0": first} if h0 else {})
        dys = rng.normal(size=(T, O))
        return (p, xs, first, dys), ({"dh_last": rng.normal(size=H)} if dh_last else {})
    return _seeded_cases(make, settings, gradcheck=backward)


RNN_FORWARD = Exercise(
    "rnn_forward", "The RNN forward pass", "RNN 前向传播", "rnn_forward(params, xs, h0=None)",
    """Run the RNN over a sequence.

    params: Wx (H, D), Wh (H, H), b (H,), Wy (O, H), by (O,); xs: (T, D); h0: (H,).
    h_t = tanh(Wh h_{t-1} + Wx x_t + b) and y_t = Wy h_t + by for t = 1..T, starting from h0.
    Each step starts from the state the previous step produced.
    y_t is read from the new state h_t.
    Returns {"hs": (T, H), "ys": (T, O)}.
    D, H and O may all differ.
    h0 may be None: the state starts at zeros.
    hs and ys are float64 arrays, also when xs is float32.
    xs, h0 and params are left unchanged.""",
    _ref("rnn_forward"), _rnn_seq_cases,
    (_m(M.rnn_forward__state_not_carried, "the state is not carried from step to step",
        "every step starts from h0: feed each step's new h into the next step",
        "隐藏状态没有在步与步之间传递", "每一步都从 h0 开始：应把每一步的新 h 传给下一步",
        "The hidden state is the network's memory: step t must start from h_{t-1}. Restarting from h0 "
        "makes every step see only its own input, a feed-forward network applied T times.",
        "隐藏状态是网络的记忆：第 t 步必须从 h_{t-1} 开始。每步都从 h0 重新开始，就让每一步只看见自己的输入，"
        "等于把一个前馈网络应用 T 次。",
        recognise=D.matches(M.rnn_forward__state_not_carried, ("hs",), "own",
                            "every step starts from h0")),
     _m(M.rnn_forward__output_from_previous_state, "y_t is read from h_{t-1}",
        "the output at step t is Wy h_t + by, computed from the NEW state",
        "y_t 用了 h_{t-1}", "第 t 步的输出是 Wy h_t + by，要用新的隐藏状态来算",
        "y_t is the prediction after reading x_t; computed from h_{t-1} it has not seen x_t yet, and for "
        "a language model it predicts the token it was just given rather than the next one.",
        "y_t 是读入 x_t 之后的预测；如果用 h_{t-1} 计算，它还没看到 x_t，对语言模型来说就是在预测刚刚给它的词元，"
        "而不是下一个。",
        recognise=D.shifted("ys", axis_name="time step", text="ys is one step late")),
     _m(M.rnn_forward__recurrent_weight_transposed, "Wh is transposed",
        "h_t = tanh(Wh h_{t-1} + ...): rows of Wh produce the new state; Wh.T @ h mixes the units the other way",
        "Wh 被转置了", "h_t = tanh(Wh h_{t-1} + ...)：Wh 的行产生新隐藏状态；Wh.T @ h 把单元按相反方向混合",
        "Wh is square, so the transposed product runs and gives states of the right shape: only the "
        "values betray it. Keep one convention, column vectors, for every weight of the lab.",
        "Wh 是方阵，所以转置后照样能运行，形状也对：只有数值会暴露问题。整个实验请对所有权重使用同一个约定：列向量。"),
     _m("states_include_h0", "hs starts with h0",
        "hs holds the T states after each input, h_1..h_T; h0 is not one of them",
        "hs 以 h0 开头", "hs 保存的是每个输入之后的 T 个隐藏状态 h_1..h_T；h0 不在其中",
        "One state per input keeps hs[t] beside xs[t] and ys[t]; with h0 in front every index is off by one.",
        "每个输入对应一个隐藏状态，hs[t] 才能和 xs[t]、ys[t] 对齐；把 h0 放在最前面，每个下标都会差一。",
        recognise=_one_more_row("hs", "h0 kept in front")),
     _square_only(),
     _states_none(),
     _not_float64()),
    returns='a dict {"hs": (T, H), "ys": (T, O)}',
    spec=(Spec("values (random inputs)", "h_t = tanh(Wh h_{t-1} + Wx x_t + b) and y_t = Wy h_t + by for t = 1..T, "
               "starting from h0."),
          Spec("state carried", "Each step starts from the state the previous step produced.", verify=same_values("hs")),
          Spec("output from the new state", "y_t is read from the new state h_t.", verify=same_values("ys")),
          Spec("shapes and types", 'Returns {"hs": (T, H), "ys": (T, O)}.'),
          Spec("non-square", "D, H and O may all differ.",
               lambda: _rnn_seq_cases(settings=((21, 4, 2, 5, 3), (22, 3, 6, 2, 4)))),
          Spec("h0 None", "h0 may be None: the state starts at zeros.",
               lambda: [*_rnn_seq_cases(settings=((23, 3, 3, 4, 2),), h0=False),
                        *[Case("h0=None", c.args, {"h0": None}) for c in _rnn_seq_cases(settings=((24, 2, 2, 3, 2),), h0=False)]]),
          Spec("float64", "hs and ys are float64 arrays, also when xs is float32.",
               lambda: _rnn_seq_cases(settings=((25, 3, 3, 4, 2),), float32=True), same_dtypes()),
          Spec("inputs unchanged", "xs, h0 and params are left unchanged.")),
    axes={"hs": ("time step", "hidden unit"), "ys": ("time step", "output")})


def _rnn_bptt_gradients(case):
    params, xs, h0, dys = (copy_arrays(a) for a in case.args)
    dh_last = case.kwargs.get("dh_last")
    forward = helper("seqlab.labs.rnn", "rnn_forward")

    def loss():
        out = forward(params, xs, h0)
        extra = 0.0 if dh_last is None else float(dh_last @ out["hs"][-1])
        return float(np.sum(dys * out["ys"])) + extra

    return central_differences(loss, {**params, "xs": xs, "h0": h0}), _same


def _rnn_bptt_terms(case):
    """Each step's term of the shared weights' gradients: the lab's backward through that step alone,
    with the gradient the later steps send it."""
    params, xs, h0, dys = (copy_arrays(a) for a in case.args)
    hs = helper("seqlab.labs.rnn", "rnn_hidden_forward")(params, xs, h0)
    backward = helper("seqlab.labs.rnn", "rnn_hidden_backward")
    T = len(xs)
    terms = {k: [None] * T for k in ("Wx", "Wh", "b", "Wy", "by")}
    dh_future = case.kwargs.get("dh_last")
    for t in reversed(range(T)):
        prev = hs[t - 1] if t else h0
        step = backward(params, xs[t:t + 1], prev, hs[t:t + 1], dys[t:t + 1] @ params["Wy"], dh_future)
        for k in ("Wx", "Wh", "b"):
            terms[k][t] = step[k]
        terms["Wy"][t], terms["by"][t] = np.outer(dys[t], hs[t]), dys[t]
        dh_future = step["h0"]
    return {k: np.array(v) for k, v in terms.items()}


RNN_BPTT = Exercise(
    "rnn_bptt", "Backpropagation through time", "随时间反向传播（BPTT）", "rnn_bptt(params, xs, h0, dys, dh_last=None)",
    """Full BPTT of the RNN (see rnn_forward) given dys (T, O) = dLoss/dy_t.

    params: Wx (H, D), Wh (H, H), b (H,), Wy (O, H), by (O,); xs: (T, D); h0: (H,).
    Returns the gradients of sum_t dys[t] . y_t (+ dh_last . h_T) as a dict with the shapes of their arrays: "Wx", "Wh", "b", "Wy", "by", "xs" (T, D) and "h0" (H,).
    The gradient reaching h_t is the local term Wy^T dy_t PLUS the term from the future through h_{t+1}; both pass through tanh' = 1 - h_t^2.
    The weights are shared by every step: their gradients are SUMS over t.
    dh_last (H,) is an extra gradient on the final state h_T; None means none.
    D, H and O may all differ.
    Every gradient is a float64 array, also when xs is float32.
    The inputs are left unchanged.""",
    _ref("rnn_bptt"), lambda: _rnn_seq_cases(backward=True),
    (_m(M.rnn_bptt__no_future_gradient, "BPTT without the gradient from the future state",
        "only the local term Wy^T dy_t reaches h_t; add the term Wh^T dpre_{t+1} that flows back from "
        "step t+1 (the gradients of the early steps are too small)",
        "随时间反向传播时缺少来自未来隐藏状态的梯度",
        "到达 h_t 的只有局部项 Wy^T dy_t；还要加上从第 t+1 步流回来的 Wh^T dpre_{t+1}（前面各步的梯度因此偏小）",
        "h_t influences the loss twice: through its own output y_t and through every later state. The "
        "second path is the whole point of a recurrent network, the one that lets an early input matter "
        "for a late prediction; dropping it trains the network as if it had no memory.",
        "h_t 通过两条路径影响损失：它自己的输出 y_t，以及之后的每一个隐藏状态。第二条路径正是循环网络的意义所在，"
        "它让早期的输入能影响后面的预测；丢掉它，网络就像没有记忆一样被训练。",
        recognise=D.any_of(D.right_only_at_last_step("xs", "the gradient from step t+1 is missing"),
                           D.matches(M.rnn_bptt__no_future_gradient, ("xs",), "own",
                                     "the gradient from step t+1 is missing"))),
     _m(M.rnn_bptt__shared_weights_not_summed, "shared-weight gradients not summed over time",
        "Wx, Wh, b, Wy, by are used at every step: their gradient is the SUM of every step's term, "
        "use += instead of =",
        "共享权重的梯度没有对时间求和", "Wx、Wh、b、Wy、by 在每一步都被使用：它们的梯度是每一步的项之和，用 += 而不是 =",
        "The same matrix is applied at every step, so the loss depends on it through T uses, and the "
        "chain rule adds their T contributions. Keeping one step's term (the first or the last one the "
        "loop visits) is the gradient of a model that shares nothing.",
        "同一个矩阵在每一步都被使用，损失通过这 T 次使用依赖于它，链式法则把 T 个贡献加起来。只保留一步的项"
        "（循环最先或最后访问的那一步）得到的是一个不共享参数的模型的梯度。",
        recognise=D.summed_over_time(("Wx", "Wh", "b", "Wy", "by"), "not summed over time")),
     _m(M.rnn_bptt__tanh_derivative_of_previous_state, "tanh' taken at the previous state",
        "tanh'(pre_t) = 1 - h_t^2 uses the state the step produced, h_t, not h_{t-1}",
        "tanh' 用了上一步的隐藏状态", "tanh'(pre_t) = 1 - h_t^2 用的是这一步产生的隐藏状态 h_t，而不是 h_{t-1}",
        "h_t = tanh(pre_t), so d h_t / d pre_t = 1 - h_t^2 with the step's own output. h_{t-1} is the "
        "step's input; its tanh belongs to the step before.",
        "h_t = tanh(pre_t)，所以 d h_t / d pre_t = 1 - h_t^2，用的是这一步自己的输出。h_{t-1} 是这一步的输入，"
        "它的 tanh 属于上一步。"),
     _m(M.rnn_bptt__dh_last_ignored, "dh_last is ignored",
        "dh_last is a gradient arriving at h_T from outside (the next chunk, a layer above): start the "
        "walk back with dh_future = dh_last",
        "忽略了 dh_last", "dh_last 是从外部（下一段、上面一层）到达 h_T 的梯度：反向传播开始时令 dh_future = dh_last",
        "The final state is often used after the sequence: by the next chunk in truncated BPTT, by a "
        "decoder, by a layer above. Its gradient enters where the walk back starts, exactly like the "
        "term from a future step.",
        "最后的隐藏状态常常在序列之后还被使用：截断的随时间反向传播 中的下一段、解码器、上面的一层。它的梯度在反向传播的起点进入，"
        "和来自未来一步的项完全一样。",
        recognise=D.failed_check("dh_last")),
     _m(M.rnn_bptt__Wy_gradient_transposed, "the gradient of Wy is transposed",
        "Wy is (O, H): its gradient is sum_t outer(dy_t, h_t) = dys.T @ hs, of shape (O, H)",
        "Wy 的梯度被转置了", "Wy 的形状是 (O, H)：它的梯度是 sum_t outer(dy_t, h_t) = dys.T @ hs，形状为 (O, H)",
        "A gradient has the shape of the array it belongs to. y = Wy h gives dWy = dy h^T: the output "
        "index first, as in Wy itself.",
        "梯度的形状与它所属的数组相同。y = Wy h 给出 dWy = dy h^T：输出的下标在前，与 Wy 本身一致。",
        recognise=D.transposed("Wy")),
     _square_only(), _not_float64()),
    returns="a dict of gradients", gradients=_rnn_bptt_gradients, step_terms=_rnn_bptt_terms,
    spec=(Spec("gradients vs finite differences", "Returns the gradients of sum_t dys[t] . y_t (+ dh_last . h_T) as "
               'a dict with the shapes of their arrays: "Wx", "Wh", "b", "Wy", "by", "xs" (T, D) and "h0" (H,).'),
          Spec("future term", "The gradient reaching h_t is the local term Wy^T dy_t PLUS the term from the future "
               "through h_{t+1}; both pass through tanh' = 1 - h_t^2.", verify=same_values("xs", "h0")),
          Spec("summed over time", "The weights are shared by every step: their gradients are SUMS over t.",
               verify=same_values("Wx", "Wh", "b", "Wy", "by")),
          Spec("dh_last", "dh_last (H,) is an extra gradient on the final state h_T; None means none.",
               lambda: _rnn_seq_cases(True, ((31, 4, 3, 4, 2), (32, 1, 2, 3, 2)), dh_last=True)),
          Spec("non-square", "D, H and O may all differ.",
               lambda: _rnn_seq_cases(True, ((33, 4, 2, 5, 3), (34, 3, 6, 2, 4)))),
          Spec("float64", "Every gradient is a float64 array, also when xs is float32.",
               lambda: _rnn_seq_cases(True, ((35, 3, 3, 4, 2),), float32=True), same_dtypes()),
          Spec("inputs unchanged", "The inputs are left unchanged.")),
    axes={"xs": ("time step", "input"), "Wx": ("hidden unit", "input"), "Wh": ("hidden unit", "hidden unit"),
          "Wy": ("output", "hidden unit"), "b": ("hidden unit",), "by": ("output",), "h0": ("hidden unit",)})


# --- cross-entropy -------------------------------------------------------------------------------------------
def _ce_cases():
    cases = [Case("the worked example", (np.array([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]]), np.array([0, 1])), {},
                  gradcheck=True)]
    for k, (seed, T, O) in enumerate(((2, 5, 5), (3, 6, 4)), 1):
        rng = _rng(seed)
        cases.append(Case(f"random inputs {k}", (rng.normal(size=(T, O)) * 2, rng.integers(0, O, T)), {},
                          gradcheck=True))
    return cases


def _ce_normalizer_cases():
    rng = _rng(41)
    logits, targets = rng.normal(size=(4, 3)), rng.integers(0, 3, 4)
    return [Case("normalizer=7", (logits, targets), {"normalizer": 7}),
            Case("normalizer=1 (a sum)", (logits, targets), {"normalizer": 1}),
            Case("normalizer=None (the mean)", (logits, targets), {"normalizer": None})]


def _ce_large_cases():
    return [Case("logits near 1000 and -1000", (np.array([[1000.0, 999.0, 998.0], [-1000.0, -1001.0, -999.0]]),
                                                np.array([1, 2])))]


def _ce_gradients(case):
    logits, targets = np.array(case.args[0], dtype=np.float64), case.args[1]
    ce = helper("seqlab.labs.rnn", "softmax_cross_entropy")
    numeric = central_differences(lambda: ce(logits, targets, case.kwargs.get("normalizer"))[0], {"dlogits": logits})
    return numeric, lambda out: {"dlogits": out[1]}


def _ce_normalizer(case):
    n = case.kwargs.get("normalizer")
    return len(case.args[0]) if n is None else n


SOFTMAX_CROSS_ENTROPY = Exercise(
    "softmax_cross_entropy", "Softmax cross-entropy and its gradient", "softmax 交叉熵及其梯度",
    "softmax_cross_entropy(logits, targets, normalizer=None)",
    """Cross-entropy of each row's softmax against its target, summed over rows, divided by normalizer.

    logits (T, O) floats; targets (T,) integer class ids.
    probs is the softmax of each row, over the O classes.
    loss = -sum_t log probs[t, targets[t]] / normalizer, a float.
    dlogits = (probs - onehot(targets)) / normalizer, the gradient of loss.
    normalizer=None means T, the number of rows (the mean); any other number divides instead of T.
    Logits as large as 1000 give finite results: subtract each row's maximum before exp.
    Returns (loss, dlogits (T, O), probs (T, O)).
    dlogits and probs are float64 arrays, also for float32 logits.
    logits and targets are left unchanged.""",
    _ref("softmax_cross_entropy"), _ce_cases,
    (_m(M.softmax_cross_entropy__divided_twice, "dividing by T twice",
        "dlogits is (probs - onehot) / T once; dividing the already-averaged gradient again makes it T times too small",
        "除以了两次 T", "dlogits 只需除以一次 T：(probs - onehot) / T；对已经平均过的梯度再除一次，会让它小 T 倍",
        "The 1/T of the mean is part of the loss, so it appears once in its gradient. Dividing again is "
        "the same as training with a learning rate T times smaller, which a gradient check catches and "
        "a training curve only shows as slow progress.",
        "平均值中的 1/T 是损失的一部分，所以它在梯度中只出现一次。再除一次，相当于用小 T 倍的学习率训练："
        "梯度检验能发现它，训练曲线上只会表现为进展缓慢。",
        recognise=D.factor_of((1,), lambda c: {"1/normalizer": 1 / _ce_normalizer(c)}, "dlogits divided twice")),
     _m(M.softmax_cross_entropy__wrong_softmax_axis, "softmax over the wrong axis",
        "each ROW (one time step, axis=-1) is a distribution over the classes; normalize over axis=-1, not axis=0",
        "softmax 的轴用错了", "每一行（一个时间步，axis=-1）是类别上的一个分布；应沿 axis=-1 归一化，而不是 axis=0",
        "Each row is one prediction: a distribution over the O classes. Normalising down a column makes "
        "each CLASS sum to 1 over the time steps, which mixes different positions and means nothing.",
        "每一行是一个预测：O 个类别上的分布。沿列归一化会让每个类别在各时间步上的和为 1，把不同位置混在一起，"
        "没有任何意义。",
        recognise=D.normalised_along(2, 0, "column (over the rows)", "probs normalised over the wrong axis")),
     _m(M.softmax_cross_entropy__not_averaged, "the loss is not averaged",
        "divide the summed loss and its gradient by the normalizer (default T)",
        "损失没有取平均", "把求和得到的损失和它的梯度除以 normalizer（默认 T）",
        "A summed loss grows with the length of the batch, so the step size would depend on how many "
        "tokens happen to be in it; the mean keeps the loss and its gradient on one scale.",
        "求和的损失随批次长度增长，步长就会取决于批次里碰巧有多少词元；取平均能让损失和梯度保持在同一尺度上。",
        recognise=D.factor_of((0, 1), lambda c: {"normalizer": _ce_normalizer(c)}, "loss and dlogits summed")),
     _m(M.softmax_cross_entropy__gradient_sign, "dlogits has the wrong sign",
        "d loss / d logits = probs - onehot(targets); onehot - probs is the direction that DEcreases the loss",
        "dlogits 的符号错了", "d loss / d logits = probs - onehot(targets)；onehot - probs 是让损失减小的方向",
        "The gradient points uphill: raising the target's logit lowers the loss, so its gradient entry is "
        "negative (p - 1). Gradient descent then subtracts it. Returning the downhill direction makes "
        "descent climb.",
        "梯度指向上坡方向：提高目标的 logit 会降低损失，所以它的梯度分量是负的（p - 1），梯度下降再把它减去。"
        "返回下坡方向会让梯度下降往上爬。",
        recognise=D.factor_of((1,), lambda c: {"-1": -1.0}, "dlogits")),
     _m("normalizer_ignored", "the normalizer argument is ignored",
        "divide by normalizer when it is given, by T only when it is None",
        "忽略了 normalizer 参数", "给定 normalizer 时除以它，只有为 None 时才除以 T",
        "Truncated BPTT cuts a sequence into chunks but wants the mean over the WHOLE sequence: each chunk "
        "divides by the full T, which is what normalizer is for.",
        "截断的随时间反向传播 把序列切成若干段，但需要的是整条序列上的平均：每一段都要除以完整的 T，这正是 normalizer 的用途。",
        recognise=D.failed_check("normalizer")),
     _m("max_not_subtracted", "the maximum is not subtracted",
        "exp(1000) overflows to inf and inf/inf is NaN: subtract each row's maximum (axis=-1, keepdims=True) first",
        "没有减去最大值", "exp(1000) 会溢出为 inf，inf/inf 是 NaN：先减去每一行的最大值（axis=-1, keepdims=True）",
        "softmax(z) = softmax(z - c) for any constant c, so subtracting the row's maximum changes nothing "
        "mathematically and keeps every exponent <= 0, where exp cannot overflow. Trained models produce "
        "logits of hundreds; the shift is what keeps them finite.",
        "对任意常数 c 都有 softmax(z) = softmax(z - c)，所以减去该行最大值在数学上不改变结果，又让每个指数都 <= 0，"
        "exp 不会溢出。训练好的模型会产生上百的 logits；正是这个平移让结果保持有限。",
        recognise=D.failed_check("large logits", raises=True)),
     _not_float64()),
    returns="a tuple (loss, dlogits, probs)", gradients=_ce_gradients,
    spec=(Spec("probabilities", "probs is the softmax of each row, over the O classes.", verify=same_values(2)),
          Spec("loss", "loss = -sum_t log probs[t, targets[t]] / normalizer, a float.", verify=same_values(0)),
          Spec("gradients vs finite differences", "dlogits = (probs - onehot(targets)) / normalizer, the gradient of loss."),
          Spec("normalizer", "normalizer=None means T, the number of rows (the mean); any other number divides "
               "instead of T.", _ce_normalizer_cases),
          Spec("large logits", "Logits as large as 1000 give finite results: subtract each row's maximum before exp.",
               _ce_large_cases),
          Spec("shapes and types", "Returns (loss, dlogits (T, O), probs (T, O))."),
          Spec("float64", "dlogits and probs are float64 arrays, also for float32 logits.",
               lambda: [Case("float32 logits", _float32(_ce_cases()[1].args, 0))], same_dtypes()),
          Spec("inputs unchanged", "logits and targets are left unchanged.")),
    axes={1: ("row", "class"), 2: ("row", "class")})


# --- truncated BPTT ------------------------------------------------------------------------------------------
def _tbptt_cases(settings=((0, 6, 2, {}), (4, 6, 3, {}), (9, 8, 4, {})), h0=True):
    return _seeded_cases(lambda k, rng, T, chunk, extra: (
        (_rnn_params(rng, O=3), rng.normal(size=(T, 3)), rng.integers(0, 3, T)),
        {**({"h0": rng.normal(size=4) * 0.5} if h0 else {}), "chunk_length": chunk, **extra}), settings)


def _tbptt_grads(out):
    return out[1]


def _tbptt_T(case):
    return len(case.args[1])


TRUNCATED_BPTT = Exercise(
    "truncated_bptt", "Truncated BPTT", "截断的随时间反向传播",
    "truncated_bptt(params, xs, targets, h0=None, chunk_length=2, carry_state=True, loss_steps=None)",
    """Truncated BPTT over chunks of chunk_length steps; the loss is the mean cross-entropy over all T steps.

    params as in rnn_bptt, with Wy (O, H); xs (T, D); targets (T,) ints in 0..O-1; h0 (H,).
    Each chunk's backward pass stops at its start state: no gradient flows into it (the history is detached).
    carry_state=True: chunk k starts from the final state VALUE of chunk k-1.
    carry_state=False: every chunk restarts from h0.
    chunk_length need not divide T: the last chunk is shorter.
    loss_steps: only these steps' losses count (still divided by T); None means all.
    h0 may be None (zeros).
    Returns (loss: float, grads: dict like rnn_bptt's, summed over the chunks, starts: the list of each chunk's start state (H,)).
    grads["xs"] is (T, D); grads["h0"] is the first chunk's gradient of its start state, h0.
    The inputs are left unchanged.
    You may use your own rnn_forward / rnn_bptt / softmax_cross_entropy (softmax_cross_entropy(...,
    normalizer=T) divides by the whole T).""",
    _ref("truncated_bptt"), _tbptt_cases,
    (_m(M.truncated_bptt__divided_by_T_twice, "dividing by T twice",
        "each chunk's loss is already divided by the whole T; dividing the total by T again makes loss and gradients T times too small",
        "除以了两次 T", "每一段的损失已经除以了完整的 T；再把总和除以 T，会让损失和梯度都小 T 倍",
        "The mean over T steps divides once. When each chunk already divides by the full T (normalizer=T), "
        "the chunks' sum IS the mean; a second division shrinks every gradient by T.",
        "对 T 步取平均只需除一次。如果每一段已经除以了完整的 T（normalizer=T），各段之和就是平均值；"
        "再除一次会把每个梯度缩小 T 倍。",
        recognise=D.factor_of((0, (1, "Wx"), (1, "Wh"), (1, "b"), (1, "Wy"), (1, "by"), (1, "xs"), (1, "h0")),
                              lambda c: {"1/T": 1 / _tbptt_T(c)}, "loss and gradients")),
     _m(M.truncated_bptt__gradient_crosses_chunks, "the gradient crosses the chunk boundaries",
        "these are full-BPTT gradients: start each chunk's backward pass from its own start state, treated as a constant",
        "梯度越过了段的边界", "这是完整的随时间反向传播 的梯度：每一段的反向传播应从它自己的起始隐藏状态开始，并把起始隐藏状态当作常数",
        "Truncation is the whole point: the memory and time of the backward pass grow with the chunk, not "
        "with the sequence, because no gradient goes back into the carried state. Backpropagating through "
        "the whole history is full BPTT with extra steps.",
        "截断正是目的所在：因为梯度不会回传进携带的隐藏状态，反向传播的内存和时间随段长而不是序列长度增长。"
        "穿过整个历史反向传播，只是绕了远路的完整的随时间反向传播。"),
     _m(M.truncated_bptt__state_reset_each_chunk, "the state is reset at every chunk",
        "with carry_state=True a chunk starts from the previous chunk's final state value, not from h0",
        "每一段都重置了隐藏状态", "carry_state=True 时，一段从上一段最终隐藏状态的值开始，而不是从 h0 开始",
        "Detaching the history stops the GRADIENT, not the VALUE: the forward pass still runs through the "
        "whole sequence, so the model keeps its memory across chunks. Resetting the state makes every chunk "
        "a separate short sequence.",
        "截断历史阻断的是梯度，不是数值：前向传播仍然贯穿整条序列，所以模型跨段保持记忆。重置隐藏状态则让每一段都成为"
        "独立的短序列。",
        recognise=D.matches(M.truncated_bptt__state_reset_each_chunk, (2,), "own", "each chunk starts from h0")),
     _m(M.truncated_bptt__h0_gradient_from_every_chunk, "grads[\"h0\"] summed over every chunk",
        "only the first chunk starts from h0; the later chunks start from carried states, constants whose "
        "gradients are dropped",
        "grads[\"h0\"] 对每一段都求和了", "只有第一段从 h0 开始；后面各段从携带的隐藏状态开始，那些隐藏状态是常数，它们的梯度被丢弃",
        "The later chunks' start states are values computed from h0, but the truncation treats them as "
        "constants. Their gradients are exactly what truncation throws away, so they are not h0's.",
        "后面各段的起始隐藏状态是由 h0 计算出来的值，但截断把它们当作常数。它们的梯度正是截断要丢掉的部分，不属于 h0。",
        recognise=D.matches(M.truncated_bptt__h0_gradient_from_every_chunk, ((1, "h0"),), "own")),
     _m("carry_state_ignored", "carry_state=False is ignored",
        "with carry_state=False every chunk starts again from h0 (a reset), also in the forward pass",
        "忽略了 carry_state=False", "carry_state=False 时每一段都重新从 h0 开始（重置），前向传播也是如此",
        "Some tasks are sets of independent sequences, where carrying a state across a boundary leaks "
        "information between them: the flag says whether the chunks belong together.",
        "有些任务由相互独立的序列组成，跨边界携带隐藏状态会在它们之间泄露信息：这个标志说明各段是否属于同一序列。",
        recognise=D.failed_check("carry_state=False")),
     _m("uneven_chunks", "the last, shorter chunk is dropped or broken",
        "range(0, T, chunk_length) and xs[start:start + chunk_length] give a shorter last chunk by themselves",
        "丢掉或弄错了最后较短的一段", "range(0, T, chunk_length) 和 xs[start:start + chunk_length] 本身就会产生较短的最后一段",
        "Sequence lengths are rarely multiples of the chunk length; the steps of a short last chunk count "
        "towards the loss like any other, and dropping them silently trains on less of every sequence.",
        "序列长度很少恰好是段长的整数倍；较短的最后一段中的各步和其他步一样计入损失，悄悄丢掉它们等于每条序列都少训练了一部分。",
        recognise=D.failed_check("uneven chunks", raises=True)),
     _m("loss_steps_ignored", "loss_steps is ignored",
        "only the steps in loss_steps contribute to the loss and send gradient back (their dys); the others' dys are 0, "
        "and the division is still by T",
        "忽略了 loss_steps", "只有 loss_steps 中的步贡献损失并回传梯度（它们的 dys）；其余步的 dys 为 0，仍然除以 T",
        "Selecting the steps that count is how the lab shows which inputs one prediction can reach under "
        "truncation: a step's loss sends gradient only back to the start of its chunk.",
        "选择计入的步，正是实验用来展示截断下一个预测能影响哪些输入的办法：一步的损失只把梯度送回到它所在段的开头。",
        recognise=D.failed_check("loss_steps")),
     _states_none()),
    returns="a tuple (loss, grads, starts)", compared=lambda out: (out[0], out[1], list(out[2])),
    spec=(Spec("detached", "Each chunk's backward pass stops at its start state: no gradient flows into it (the "
               "history is detached).", verify=same_values(1, part=lambda out: (out[0], out[1]))),
          Spec("carry_state=True", "carry_state=True: chunk k starts from the final state VALUE of chunk k-1.",
               verify=same_values(0, 2, part=lambda out: (out[0], out[1], list(out[2])))),
          Spec("carry_state=False", "carry_state=False: every chunk restarts from h0.",
               lambda: _tbptt_cases(((51, 6, 2, {"carry_state": False}), (52, 6, 3, {"carry_state": False})))),
          Spec("uneven chunks", "chunk_length need not divide T: the last chunk is shorter.",
               lambda: _tbptt_cases(((53, 7, 3, {}), (54, 5, 2, {}), (55, 3, 5, {})))),
          Spec("loss_steps", "loss_steps: only these steps' losses count (still divided by T); None means all.",
               lambda: _tbptt_cases(((56, 8, 2, {"loss_steps": [1, 4, 6]}), (57, 4, 2, {"loss_steps": [0]})))),
          Spec("h0 None", "h0 may be None (zeros).", lambda: _tbptt_cases(((58, 6, 2, {}),), h0=False)),
          Spec("shapes and types", "Returns (loss: float, grads: dict like rnn_bptt's, summed over the chunks, "
               "starts: the list of each chunk's start state (H,))."),
          Spec("h0 gradient", 'grads["xs"] is (T, D); grads["h0"] is the first chunk\'s gradient of its start state, h0.',
               verify=same_values("xs", "h0", part=_tbptt_grads)),
          Spec("inputs unchanged", "The inputs are left unchanged.")),
    axes={"xs": ("time step", "input"), "Wx": ("hidden unit", "input"), "Wh": ("hidden unit", "hidden unit")})


# --- clipping ------------------------------------------------------------------------------------------------
def _clip_cases():
    rng = _rng(3)
    return [Case("the worked example", (np.array([3.0, 4.0]), 2.0)),
            Case("random inputs 1", ([rng.normal(size=(3, 2)) * 4, rng.normal(size=5) * 4], 1.5)),
            Case("random inputs 2", ([np.array([10.0, 0.1]), np.array([0.2, -0.3])], 1.0))]


def _clip_below_cases():
    rng = _rng(61)
    return [Case("a list under the threshold", ([rng.normal(size=4) * 0.1, rng.normal(size=(2, 2)) * 0.1], 5.0)),
            Case("an array exactly at the threshold", (np.array([0.6, 0.8]), 1.0))]


def _clip_form_cases():
    rng = _rng(62)
    return [Case("one 2-D array", (rng.normal(size=(3, 4)) * 3, 2.0)),
            Case("a list of one array", ([rng.normal(size=3) * 3], 1.0)),
            Case("a list of three arrays", ([rng.normal(size=2), rng.normal(size=(2, 3)), rng.normal(size=1)], 0.5))]


def _clip_zero_cases():
    return [Case("all-zero gradients", ([np.zeros(3), np.zeros((2, 2))], 1.0)),
            Case("an all-zero array", (np.zeros(4), 0.5))]


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
    """Rescale ALL gradients by one factor min(1, threshold / ||g||), where ||g|| is the L2 norm over every entry of every array.

    grads: an ndarray or a list of ndarrays (any shapes); threshold > 0.
    Gradients whose global norm is at most threshold come back unchanged.
    Returns (clipped, norm).
    clipped has the input's form: an array for an array, a list of arrays of the same shapes for a list.
    norm is the global norm BEFORE clipping, a float.
    All-zero gradients (norm 0) come back as zeros, never NaN.
    grads is left unchanged: the clipped arrays are new ones.
    [3, 4] with threshold 2 -> ([1.2, 1.6], 5.0).""",
    _ref("clip_global_norm"), _clip_cases,
    (_m(M.clip_global_norm__coordinatewise, "coordinate-wise instead of global-norm clipping",
        "clamping each entry to [-threshold, threshold] changes the direction; rescale everything by one factor",
        "逐坐标裁剪而不是全局范数裁剪", "把每个分量截断到 [-threshold, threshold] 会改变方向；应把所有梯度乘以同一个系数",
        "Clamping entries one by one shrinks the large ones and keeps the small ones, so the update points "
        "somewhere else. Global-norm clipping only shortens the step: the direction the gradient found is kept.",
        "逐个截断分量会缩小大的分量、保留小的分量，更新方向就变了。全局范数裁剪只缩短步长：梯度找到的方向保持不变。"),
     _m(M.clip_global_norm__each_array_its_own_norm, "each array clipped by its own norm",
        "the norm is GLOBAL: one norm over every array together, one factor for all",
        "每个数组按自己的范数裁剪", "范数是全局的：所有数组放在一起算一个范数，所有数组用同一个系数",
        "The arrays together are one gradient vector of the whole model. Clipping each piece on its own "
        "rescales the pieces by different factors, which again changes the direction.",
        "这些数组合起来是整个模型的一个梯度向量。分别裁剪每一块会让各块乘上不同的系数，同样改变了方向。"),
     _m(M.clip_global_norm__always_rescaled, "small gradients are scaled up",
        "the factor is min(1, threshold / norm): gradients already under the threshold stay as they are",
        "小梯度被放大了", "系数是 min(1, threshold / norm)：已经低于阈值的梯度保持原样",
        "Clipping is a safety limit, not a normalisation: a gradient under the threshold is left alone, "
        "or every step would have the same length and the optimizer could never take a small step.",
        "裁剪是安全上限，不是归一化：低于阈值的梯度不动，否则每一步长度都相同，优化器永远迈不出小步。"),
     _m(M.clip_global_norm__norm_after_clipping, "the norm returned is the one after clipping",
        "return the norm measured BEFORE clipping (it is what a training log reports)",
        "返回的是裁剪之后的范数", "应返回裁剪之前测得的范数（训练日志记录的就是它）",
        "The norm before clipping is the diagnostic: it shows spikes and how often clipping acted. After "
        "clipping it is never above the threshold and says nothing.",
        "裁剪前的范数才有诊断价值：它显示尖峰以及裁剪起作用的频率。裁剪后的范数从不超过阈值，不提供任何信息。",
        recognise=D.matches(M.clip_global_norm__norm_after_clipping, (1,), "own")),
     _m("nan_for_zero_gradients", "all-zero gradients give NaN",
        "with norm 0 the factor threshold / norm is undefined: keep the gradients as they are (factor 1)",
        "全零梯度得到 NaN", "范数为 0 时 threshold / norm 没有定义：保持梯度不变（系数为 1）",
        "A zero gradient happens (a frozen layer, a batch where nothing is learned) and must not poison "
        "the parameters with NaN: one NaN update ruins the whole model.",
        "零梯度会出现（冻结的层、什么都学不到的批次），不能让 NaN 污染参数：一次 NaN 更新就会毁掉整个模型。",
        recognise=D.failed_check("zero gradients", raises=True)),
     _m("form_changed", "the output has another form than the input",
        "return an array for an array and a list of arrays (each of its input's shape) for a list",
        "输出的形式与输入不同", "输入是数组就返回数组，输入是列表就返回由数组组成的列表（每个数组保持原来的形状）",
        "The caller zips the clipped gradients back onto its parameters, one array per parameter: "
        "flattening them or changing an array into a list breaks that pairing.",
        "调用者会把裁剪后的梯度逐个对应回它的参数，每个参数一个数组：展平它们或把数组变成列表都会破坏这种对应。",
        recognise=D.failed_check("form", raises=True))),
    returns="a tuple (clipped, norm)", invariants=_clip_invariants,
    spec=(Spec("invariants", "Rescale ALL gradients by one factor min(1, threshold / ||g||), where ||g|| is the L2 "
               "norm over every entry of every array."),
          Spec("below the threshold", "Gradients whose global norm is at most threshold come back unchanged.",
               _clip_below_cases),
          Spec("form", "clipped has the input's form: an array for an array, a list of arrays of the same shapes "
               "for a list.", _clip_form_cases),
          Spec("norm before clipping", "norm is the global norm BEFORE clipping, a float.", verify=same_values(1)),
          Spec("zero gradients", "All-zero gradients (norm 0) come back as zeros, never NaN.", _clip_zero_cases),
          Spec("inputs unchanged", "grads is left unchanged: the clipped arrays are new ones.")))


EXERCISES: tuple[Exercise, ...] = (
    SCALAR_RECURRENCE, SCALAR_RECURRENCE_BACKWARD, RNN_FORWARD, RNN_BPTT, SOFTMAX_CROSS_ENTROPY,
    TRUNCATED_BPTT, CLIP_GLOBAL_NORM,
)
