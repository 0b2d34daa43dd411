"""Trace questions (a number to compute by hand, checked with a tolerance) and Explain/Derive cards.

Every answer is computed by the lab code itself when asked, so a question cannot drift from the
reference. A wrong answer gets its hint; the worked solution is shown only on request.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable


@dataclasses.dataclass(frozen=True)
class Question:
    id: str
    title: tuple[str, str]                 # (English, 中文)
    text: tuple[str, str]
    answer: Callable[[], list[float]]      # the expected numbers, from the labs
    hint: tuple[str, str]
    solution: tuple[str, str]
    tolerance: float = 1e-3                # absolute, per number


@dataclasses.dataclass(frozen=True)
class Card:
    id: str
    kind: str                              # "explain" or "derive"
    title: tuple[str, str]
    question: tuple[str, str]
    answer: tuple[str, str]


def _labs(module):
    import importlib
    return importlib.import_module(f"seqlab.labs.{module}")


def _recurrence():
    return [float(_labs("recurrence").scalar_recurrence(0.5, [1.0, 0.0, -1.0])[-1])]


def _clip_factor():
    import numpy as np
    clipped, _ = _labs("clipping").clip_global_norm(np.array([3.0, 4.0]), 2.0)
    return [float(clipped[0] / 3.0)]


def _lstm():
    step = _labs("lstm").lstm_gate_step(1.0, 0.8, 0.25, 0.4, 0.5)
    return [step["c"], step["h"]]


def _gru():
    return [_labs("gru").gru_gate_step(0.6, 0.75, -0.2)]


def _attention_weights():
    import numpy as np
    out = _labs("attention").attention(np.array([1.0, 0.0]), np.eye(2), np.array([2.0, 10.0]))
    return [float(w) for w in out["weights"]]


def _mask_count():
    return [float(_labs("attention").causal_mask(3).sum())]


def _head_shapes():
    shapes = _labs("attention").multihead_shapes(3, 4, 2)
    return [float(v) for v in shapes["q"] + shapes["scores"] + shapes["concat"]]


def _vanishing():
    rec = _labs("recurrence")
    return [rec.repeated_factor(0.5, 10), rec.repeated_factor(2.0, 10)]


def _perplexity():
    return [math.exp(1.0)]


QUESTIONS: tuple[Question, ...] = (
    Question("trace_perplexity", ("Loss and perplexity", "损失与困惑度"),
             ("`seqlab eval` reports a validation loss of 1.0 (mean cross-entropy in nats per token). What is the "
              "perplexity?", "`seqlab eval` 报告验证损失为 1.0（每个词元的平均交叉熵，单位为奈特）。困惑度是多少？"),
             _perplexity, ("Perplexity is exp(mean cross-entropy).", "困惑度 = exp(平均交叉熵)。"),
             ("exp(1.0) = 2.718: the model is as unsure as a uniform choice among e tokens.",
              "exp(1.0) = 2.718：模型的不确定程度相当于在 e 个词元中均匀选择。")),
    Question("trace_recurrence", ("Trace the recurrence", "追踪循环递推"),
             ("h_t = tanh(a h_{t-1} + x_t) with a = 0.5, h0 = 0 and inputs 1, 0, -1. What is h_3?",
              "h_t = tanh(a h_{t-1} + x_t)，a = 0.5，h0 = 0，输入 1, 0, -1。h_3 是多少？"),
             _recurrence,
             ("Step by step: h_1 = tanh(1), h_2 = tanh(0.5 h_1), h_3 = tanh(0.5 h_2 - 1).",
              "逐步计算：h_1 = tanh(1)，h_2 = tanh(0.5 h_1)，h_3 = tanh(0.5 h_2 - 1)。"),
             ("h_1 = tanh(1) = 0.7616; h_2 = tanh(0.3808) = 0.3634; h_3 = tanh(0.1817 - 1) = -0.6741, "
              "computed exactly by seqlab.labs.recurrence.scalar_recurrence.",
              "h_1 = tanh(1) = 0.7616；h_2 = tanh(0.3808) = 0.3634；h_3 = tanh(0.1817 - 1) = -0.6741，"
              "由 seqlab.labs.recurrence.scalar_recurrence 精确计算。")),
    Question("trace_vanishing", ("Vanishing and exploding products", "梯度消失与梯度爆炸的乘积"),
             ("A gradient passes 10 identical Jacobian factors. What is it after 10 factors of 0.5, and after 10 of 2? "
              "(two numbers)", "梯度经过 10 个相同的雅可比因子。因子为 0.5 时是多少？因子为 2 时呢？（两个数）"),
             _vanishing, ("Multiply the factor into itself 10 times: factor ** 10.", "把因子连乘 10 次：factor ** 10。"),
             ("0.5^10 = 0.0009765625 (vanishes), 2^10 = 1024 (explodes).", "0.5^10 = 0.0009765625（消失），2^10 = 1024（爆炸）。"),
             tolerance=1e-6),
    Question("trace_clipping", ("The clipping factor", "裁剪系数"),
             ("Global-norm clipping of the gradient [3, 4] at threshold 2: by what factor is every entry multiplied?",
              "按全局范数把梯度 [3, 4] 裁剪到阈值 2：每个分量乘以多少？"),
             _clip_factor, ("The norm of [3, 4] is 5; the factor is min(1, threshold / norm).",
                            "[3, 4] 的范数是 5；系数为 min(1, 阈值 / 范数)。"),
             ("min(1, 2 / 5) = 0.4, so [3, 4] becomes [1.2, 1.6]: same direction, norm 2.",
              "min(1, 2 / 5) = 0.4，[3, 4] 变为 [1.2, 1.6]：方向不变，范数为 2。")),
    Question("trace_lstm_cell", ("The LSTM cell", "LSTM 细胞状态"),
             ("c_prev = 1, f = 0.8, i = 0.25, g = 0.4, o = 0.5. What are c and h? (two numbers)",
              "c_prev = 1，f = 0.8，i = 0.25，g = 0.4，o = 0.5。c 和 h 是多少？（两个数）"),
             _lstm, ("c = f c_prev + i g; h = o tanh(c).", "c = f c_prev + i g；h = o tanh(c)。"),
             ("c = 0.8 * 1 + 0.25 * 0.4 = 0.9; h = 0.5 * tanh(0.9) = 0.3581.",
              "c = 0.8 * 1 + 0.25 * 0.4 = 0.9；h = 0.5 * tanh(0.9) = 0.3581。")),
    Question("trace_gru_mix", ("The GRU mix", "GRU 的插值"),
             ("h_prev = 0.6, update gate z = 0.75 (the fraction of the old state kept), candidate -0.2. What is h?",
              "h_prev = 0.6，更新门 z = 0.75（保留旧状态的比例），候选值 -0.2。h 是多少？"),
             _gru, ("h = z h_prev + (1 - z) candidate.", "h = z h_prev + (1 - z) × 候选值。"),
             ("0.75 * 0.6 + 0.25 * (-0.2) = 0.45 - 0.05 = 0.4.", "0.75 × 0.6 + 0.25 × (-0.2) = 0.45 - 0.05 = 0.4。")),
    Question("trace_attention_weights", ("Attention weights", "注意力权重"),
             ("q = [1, 0], keys [1, 0] and [0, 1] (d = 2). What are the two attention weights?",
              "q = [1, 0]，键为 [1, 0] 和 [0, 1]（d = 2）。两个注意力权重是多少？"),
             _attention_weights, ("Scores are q·k / sqrt(2) = [0.7071, 0]; then softmax.",
                                  "得分为 q·k / sqrt(2) = [0.7071, 0]；再做 softmax。"),
             ("softmax([0.7071, 0]) = [e^0.7071, 1] / (e^0.7071 + 1) = [0.6698, 0.3302].",
              "softmax([0.7071, 0]) = [e^0.7071, 1] / (e^0.7071 + 1) = [0.6698, 0.3302]。")),
    Question("trace_causal_count", ("Counting the causal mask", "数一数因果掩码"),
             ("How many entries of the causal mask of 3 tokens are visible (True)?",
              "3 个词元的因果掩码中有多少个可见（True）位置？"),
             _mask_count, ("Query i sees keys 0..i: count each row.", "查询 i 能看到键 0..i：逐行计数。"),
             ("1 + 2 + 3 = 6 = n(n+1)/2.", "1 + 2 + 3 = 6 = n(n+1)/2。"), tolerance=0.0),
    Question("trace_head_shapes", ("Multi-head shapes", "多头形状"),
             ("Self-attention over n = 3 tokens, d_model = 4, 2 heads. Give the shapes of one head's Q, its score "
              "map and the concatenation, as six numbers (rows, cols each).",
              "n = 3 个词元的自注意力，d_model = 4，2 个头。给出一个头的 Q、得分图和拼接结果的形状，共六个数（每个为行、列）。"),
             _head_shapes, ("Each head has width d_model / heads; scores are (queries, keys).",
                            "每个头的宽度为 d_model / 头数；得分图为（查询数，键数）。"),
             ("Q_h 3 x 2, scores 3 x 3, concat 3 x 4.", "Q_h 3 × 2，得分图 3 × 3，拼接 3 × 4。"), tolerance=0.0),
)

CARDS: tuple[Card, ...] = (
    Card("explain_bidirectional", "explain", ("Bidirectional RNNs", "双向循环神经网络"),
         ("A bidirectional RNN reads the sequence both ways. Why can it encode a source sentence but not be a "
          "language model?", "双向循环神经网络从两个方向读取序列。为什么它可以编码源句子，却不能作为语言模型？"),
         ("Its backward direction has read the future tokens: predicting the next token from it would be "
          "cheating. An encoder sees the whole source anyway, so there it helps.",
          "它的反向部分已经读过未来的词元：用它预测下一个词元等于作弊。编码器本来就能看到整个源序列，所以在那里有用。")),
    Card("explain_order", "explain", ("Why order matters", "为什么顺序重要"),
         ("Recurrence with a = 0.5, h0 = 0: why do inputs 1, 0, -1 and -1, 0, 1 end in different h_3?",
          "a = 0.5、h0 = 0 的循环：为什么输入 1, 0, -1 与 -1, 0, 1 得到的 h_3 不同？"),
         ("Each state reads the previous one: the early inputs are squeezed through more tanh and a factors, so "
          "the same inputs in another order give another state (here of opposite sign).",
          "每个状态读取上一个状态：早先的输入经过更多次 tanh 和系数 a 的压缩，所以同样的输入换个顺序得到不同的状态（这里符号相反）。")),
    Card("derive_bptt", "derive", ("Derive BPTT's two terms", "推导 BPTT 的两项"),
         ("Write dL/dh_t for the RNN. Which two terms reach h_t, and why are the shared weights' gradients sums?",
          "写出 RNN 的 dL/dh_t。哪两项到达 h_t？为什么共享权重的梯度是求和？"),
         ("dL/dh_t = Wy^T dy_t (the output at t) + Wh^T [(1 - h_{t+1}^2) * dL/dh_{t+1}] (the future). Wx, Wh, b "
          "are used at every step, so dL/dW = sum_t of each step's outer product.",
          "dL/dh_t = Wy^T dy_t（t 时刻的输出）+ Wh^T [(1 - h_{t+1}^2) * dL/dh_{t+1}]（来自未来）。Wx、Wh、b 在每一步都被使用，"
          "所以 dL/dW 是各步外积之和。")),
    Card("explain_clipping", "explain", ("Two clipping rules", "两种裁剪规则"),
         ("Why does global-norm clipping keep the update's direction and coordinate-wise clipping not?",
          "为什么按全局范数裁剪保持更新方向，而逐坐标裁剪不保持？"),
         ("Global-norm clipping multiplies every entry by one factor; coordinate-wise clamps large entries more "
          "than small ones: [3, 4] at 2 gives [1.2, 1.6] vs [2, 2].",
          "全局范数裁剪把每个分量乘以同一个系数；逐坐标裁剪对大分量压缩得更多：[3, 4] 在阈值 2 下分别得到 [1.2, 1.6] 与 [2, 2]。")),
    Card("explain_lstm_memory", "explain", ("The LSTM's memory path", "LSTM 的记忆通路"),
         ("Why can the LSTM keep a value for many steps when the RNN cannot?",
          "为什么 LSTM 能把一个值保留很多步，而 RNN 不能？"),
         ("c_t = f c_{t-1} + i g: along the cell state the gradient is multiplied only by f, no tanh' and no "
          "weight matrix; f = 1, i = 0 keeps c exactly.",
          "c_t = f c_{t-1} + i g：沿细胞状态，梯度只乘以 f，没有 tanh' 也没有权重矩阵；f = 1、i = 0 时 c 完全保持。")),
    Card("explain_scale", "explain", ("Why 1/sqrt(d_k)", "为什么除以 sqrt(d_k)"),
         ("Why are the attention scores divided by sqrt(d_k)?", "为什么注意力得分要除以 sqrt(d_k)？"),
         ("For random q, k with unit-variance entries, q·k has variance d_k; dividing by sqrt(d_k) keeps the "
          "scores near unit variance, so the softmax is not saturated and its gradient does not vanish.",
          "q、k 的分量方差为 1 时，q·k 的方差为 d_k；除以 sqrt(d_k) 让得分方差保持在 1 附近，softmax 不会饱和，梯度不会消失。")),
    Card("explain_bottleneck", "explain", ("The seq2seq bottleneck", "seq2seq 的瓶颈"),
         ("Why does a seq2seq RNN without attention lose accuracy on long inputs, and what does attention change?",
          "为什么不带注意力的 seq2seq RNN 在长输入上准确率下降？注意力改变了什么？"),
         ("The whole source must pass through one fixed-size final state; attention lets every decoder step read "
          "every encoder state directly, a path of length one.",
          "整个源序列必须挤进一个固定大小的最终状态；注意力让解码器的每一步都直接读取所有编码器状态，路径长度为一。")),
)


def parse_numbers(text: str) -> list[float]:
    """"0.4" / "0.6698, 0.3302" / "3 x 2" -> floats; ValueError naming the part that is not a number."""
    parts = [p for p in text.replace("×", " ").replace("x", " ").replace(",", " ").replace(";", " ").split() if p]
    values = []
    for part in parts:
        try:
            values.append(float(part))
        except ValueError:
            raise ValueError(f"{part!r} is not a number; answer with numbers separated by commas") from None
    if not values:
        raise ValueError("no number given; answer with numbers separated by commas")
    return values


def grade(question: Question, given: list[float]) -> tuple[bool, str]:
    """(correct, what is wrong) of an answer: the count of numbers, then each within the tolerance."""
    expected = question.answer()
    if len(given) != len(expected):
        return False, f"expected {len(expected)} number(s), got {len(given)}"
    tolerance = max(question.tolerance, 1e-12)
    for k, (g, e) in enumerate(zip(given, expected)):
        if not math.isclose(g, e, abs_tol=tolerance, rel_tol=0.0):
            return False, f"number {k + 1} ({g:g}) is not right"
    return True, ""


QUESTION_BY_ID = {q.id: q for q in QUESTIONS}
CARD_BY_ID = {c.id: c for c in CARDS}
