"""Figures of the recurrence lessons: unrolled recurrences, the RNN, BPTT's paths, truncation."""

from __future__ import annotations

from seqlab.learn.figures.svg import ACCENT, INK, MUTED, WARN, Drawing


def unrolled_scalar_recurrence(lang: str) -> str:
    """h_0 -> h_1 -> h_2 -> h_3 with x_t entering from below and the lesson's worked values above."""
    from seqlab.labs.recurrence import scalar_recurrence
    xs = [1.0, 0.0, -1.0]
    hs = scalar_recurrence(0.5, xs)
    d = Drawing(470, 170)
    d.box(10, 60, 70, 40, "h₀ = 0")
    for t, (x, h) in enumerate(zip(xs, hs), 1):
        left = 10 + 115 * t
        d.arrow(left - 35, 80, left, 80, "×0.5" if t else "", color=ACCENT)
        d.box(left, 60, 80, 40, f"h{'₀₁₂₃'[t]} = tanh(·)")
        d.text(left + 40, 40, f"{h:.6f}", size=12)
        d.arrow(left + 40, 150, left + 40, 100)
        d.text(left + 40, 160, f"x{'₀₁₂₃'[t]} = {x:g}", size=12, color=MUTED)
    title = ("The one-number recurrence unrolled over three steps: each state reads the one before it."
             if lang == "en" else "单个数字的循环展开三步：每个状态读取前一个状态。")
    return d.svg(title)


def _t(lang: str, en: str, zh: str) -> str:
    return en if lang == "en" else zh


SUB = str.maketrans("0123456789tT-", "₀₁₂₃₄₅₆₇₈₉ₜₜ₋")


def _sub(text) -> str:
    """h_3 -> h₃: subscripts for the figures' labels."""
    return str(text).translate(SUB)


def recurrence_loop(lang: str) -> str:
    """The loop of the code (one variable h, overwritten) beside its unrolled form (a list of states)."""
    from seqlab.labs.recurrence import scalar_recurrence
    xs = [1.0, 0.0, -1.0]
    hs = scalar_recurrence(0.5, xs)
    d = Drawing(640, 250)
    # the loop, folded
    d.text(105, 22, _t(lang, "the loop: one variable h", "循环：一个变量 h"), bold=True)
    d.box(30, 95, 150, 44, "h ← tanh(a·h + xₜ)")
    d.curve(150, 95, 60, 95, 55, "a · h", color=ACCENT)
    d.arrow(105, 195, 105, 139)
    d.text(105, 210, "xₜ  (t = 1 … T)", size=12, color=MUTED)
    d.text(105, 232, _t(lang, "h starts as h₀", "h 的初值为 h₀"), size=12, color=MUTED)
    d.text(222, 117, "=", size=26, color=MUTED)
    # the same loop, unrolled
    d.text(436, 22, _t(lang, "unrolled: the same step T times", "展开：同一步骤重复 T 次"), bold=True)
    d.box(252, 97, 52, 40, "h₀", dashed=True, fill="#ffffff")
    right = 304
    for t, (x, h) in enumerate(zip(xs, hs), 1):
        left = 230 + 103 * t
        d.arrow(right, 117, left, 117, "a", color=ACCENT)
        d.box(left, 97, 80, 40, f"h{_sub(t)} = {h:.3f}", size=12)
        d.arrow(left + 40, 180, left + 40, 137)
        d.text(left + 40, 192, f"x{_sub(t)} = {x:g}", size=12, color=MUTED)
        right = left + 80
    d.line(333, 70, 619, 70, color=INK)
    for x in (333, 619):
        d.line(x, 70, x, 80, color=INK)
    d.text(476, 56, _t(lang, "returned: h₁, h₂, h₃ (shape (T,))", "返回 h₁, h₂, h₃（形状 (T,)）"), size=12)
    d.text(278, 160, _t(lang, "not returned", "不返回"), size=11, color=MUTED)
    title = _t(lang, "The loop in code keeps one variable h; unrolled, it is a chain of states, and the function "
                     "returns every state after h₀.",
               "代码中的循环只保留一个变量 h；展开后是一串状态，函数返回 h₀ 之后的每一个状态。")
    return d.svg(title)


FIGURES = {"unrolled_scalar_recurrence": unrolled_scalar_recurrence, "recurrence_loop": recurrence_loop}
