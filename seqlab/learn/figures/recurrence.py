"""Figures of the recurrence lessons: unrolled recurrences, the RNN, BPTT's paths, truncation."""

from __future__ import annotations

from seqlab.learn.figures.svg import ACCENT, MUTED, Drawing


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


FIGURES = {"unrolled_scalar_recurrence": unrolled_scalar_recurrence}
