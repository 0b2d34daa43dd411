"""Figures of the gradient-clipping and gated-cell lessons: two clipping rules, the LSTM cell and its
two backward paths, the GRU's mix and reset gate, and stacked and bidirectional recurrence.

Every number drawn comes from seqlab's labs (``seqlab.labs.clipping``, ``lstm``, ``gru``,
``recurrence``), so a figure cannot drift from the lessons' worked examples.
"""

from __future__ import annotations

import math

from seqlab.learn.figures.svg import ACCENT, INK, MUTED, SOFT, WARN, Drawing

WARN_FILL = "#fee2e2"
KEEP, KEEP_FILL = "#059669", "#d1fae5"      # the kept (old state / memory) path
NEW, NEW_FILL = "#d97706", "#fef3c7"        # the new content (candidate / written part)


def _t(lang: str, en: str, zh: str) -> str:
    return zh if lang == "zh" else en


def _num(value: float) -> str:
    """A number as the lessons print it: six decimals, trailing zeros dropped (1, 0.4, 0.358149)."""
    text = f"{float(value):.6f}".rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def _vec(values) -> str:
    return "[" + ", ".join(_num(v) for v in values) + "]"


def _ring(d: Drawing, cx: float, cy: float, r: float, *, color: str, dashed: bool = False) -> None:
    """An unfilled circle (the threshold's circle)."""
    dash = ' stroke-dasharray="4 3"' if dashed else ""
    d.parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r:.1f}" fill="none" stroke="{color}" '
                   f'stroke-width="1.5"{dash}/>')


# --- trace_clipping, explain_clipping ---------------------------------------------------------------------
def clip_two_rules(lang: str) -> str:
    """[3, 4] clipped at 2 by global norm (same direction) and coordinate-wise (bent), in the plane."""
    import numpy as np

    from seqlab.labs.clipping import clip_coordinatewise, clip_global_norm
    g = np.array([3.0, 4.0])
    threshold = 2.0
    glob, norm = clip_global_norm(g, threshold)
    coord = clip_coordinatewise(g, threshold)
    d = Drawing(700, 320)
    s, ox, oy = 40.0, 110.0, 220.0            # pixels per unit, the origin
    px = lambda v: (ox + s * v[0], oy - s * v[1])
    d.arrow(ox - 2.3 * s, oy, ox + 4.6 * s, oy, color=MUTED, width=1)
    d.arrow(ox, oy + 2.3 * s, ox, oy - 4.6 * s, color=MUTED, width=1)
    for k in (1, 2, 3, 4):
        d.line(ox + k * s, oy - 3, ox + k * s, oy + 3, color=MUTED, width=1)
        d.text(ox + k * s, oy + 13, str(k), size=10, color=MUTED)
        d.line(ox - 3, oy - k * s, ox + 3, oy - k * s, color=MUTED, width=1)
        d.text(ox - 10, oy - k * s, str(k), size=10, color=MUTED)
    _ring(d, ox, oy, threshold * s, color=ACCENT, dashed=True)
    d.box(ox - threshold * s, oy - threshold * s, 2 * threshold * s, 2 * threshold * s, fill="none", stroke=WARN,
          radius=0, dashed=True)
    for v, color in ((g, INK), (coord, WARN), (glob, ACCENT)):
        x, y = px(v)
        d.arrow(ox, oy, x, y, color=color, width=2)
    x, y = px(g)
    d.text(x + 8, y, f"g = {_vec(g)}", size=12, anchor="start", bold=True)
    x, y = px(coord)
    d.text(x + 8, y - 4, _vec(coord), size=12, color=WARN, anchor="start")
    x, y = px(glob)
    d.line(ox - 1.1 * s, oy - 3.05 * s, x - 3, y - 3, color=ACCENT, width=1)
    d.text(ox - 1.1 * s, oy - 3.3 * s, _vec(glob), size=12, color=ACCENT)
    left = 330
    angle = lambda v: math.degrees(math.atan2(v[1], v[0]))
    rows = [
        (INK, _t(lang, "the gradient", "梯度"), _t(lang, f"g = {_vec(g)}, norm {_num(norm)}, angle {angle(g):.2f}°",
                                                         f"g = {_vec(g)}，范数 {_num(norm)}，角度 {angle(g):.2f}°")),
        (ACCENT, _t(lang, "global-norm clipping (circle)", "全局范数裁剪（圆）"),
         f"× min(1, 2 / {_num(norm)}) = × {_num(threshold / norm)} → {_vec(glob)}"),
        (ACCENT, "", _t(lang, f"norm {_num(np.linalg.norm(glob))}, angle {angle(glob):.2f}°: direction kept",
                        f"范数 {_num(np.linalg.norm(glob))}，角度 {angle(glob):.2f}°：方向不变")),
        (WARN, _t(lang, "coordinate-wise clipping (square)", "逐坐标裁剪（正方形）"),
         _t(lang, f"each entry clamped to [−2, 2] → {_vec(coord)}", f"每个分量截断到 [−2, 2] → {_vec(coord)}")),
        (WARN, "", _t(lang, f"norm {_num(np.linalg.norm(coord))}, angle {angle(coord):.2f}°: direction bent",
                      f"范数 {_num(np.linalg.norm(coord))}，角度 {angle(coord):.2f}°：方向被掰弯")),
    ]
    y = 60
    for color, head, body in rows:
        if head:
            y += 14
            d.text(left, y, head, size=13, color=color, anchor="start", bold=True)
            y += 22
        d.text(left + 12, y, body, size=12, color=color, anchor="start")
        y += 22
    return d.svg(_t(lang, "Clipping [3, 4] at threshold 2: global-norm clipping shrinks it onto the circle along "
                          "its own direction; coordinate-wise clipping clamps it into the square and turns it.",
                    "把 [3, 4] 裁剪到阈值 2：全局范数裁剪沿原方向把它缩到圆上；逐坐标裁剪把它截进正方形，方向随之改变。"))


def _cells(d: Drawing, x: float, y: float, rows, *, cw: float = 40, ch: float = 28, fill=SOFT, stroke=ACCENT,
           size: int = 12) -> None:
    """A small matrix of numbers, ``rows[i][j]`` printed in its cell."""
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            d.box(x + j * cw, y + i * ch, cw, ch, _num(value), fill=fill, stroke=stroke, radius=0, size=size)


def _two_arrays():
    """The implement lesson's gradients: g1 (2, 2) with norm 3 and g2 (1,) with norm 4, global norm 5."""
    import numpy as np
    return [np.array([[1.0, 2.0], [2.0, 0.0]]), np.array([4.0])]


# --- clip_global_norm -------------------------------------------------------------------------------------
def clip_many_arrays(lang: str) -> str:
    """Two gradient arrays, one norm over all their entries, one factor for both; and the wrong, per-array rule."""
    import numpy as np

    from seqlab.labs.clipping import clip_global_norm, global_norm
    from seqlab.learn.mistakes import clip_global_norm__each_array_its_own_norm
    grads, threshold = _two_arrays(), 2.0
    clipped, norm = clip_global_norm(grads, threshold)
    own, _ = clip_global_norm__each_array_its_own_norm(grads, threshold)
    d = Drawing(700, 300)
    d.text(60, 22, "g₁  (2, 2)", size=12, color=MUTED)
    _cells(d, 20, 36, grads[0])
    d.text(60, 118, "g₂  (1,)", size=12, color=MUTED)
    _cells(d, 40, 132, [grads[1]])
    flat = np.concatenate([g.ravel() for g in grads])
    d.arrow(110, 100, 150, 100, color=MUTED)
    d.text(250, 22, _t(lang, "all entries, end to end  (5,)", "所有分量首尾相接  (5,)"), size=12, color=MUTED)
    _cells(d, 155, 56, [flat], cw=38)
    d.text(250, 108, _t(lang, "squares: " + " + ".join(_num(v * v) for v in flat) + f" = {_num(norm ** 2)}",
                        "平方：" + " + ".join(_num(v * v) for v in flat) + f" = {_num(norm ** 2)}"), size=12)
    d.text(250, 132, f"‖g‖ = √{_num(norm ** 2)} = {_num(norm)}", size=13, bold=True)
    d.text(250, 156, _t(lang, f"factor = min(1, 2 / {_num(norm)}) = {_num(threshold / norm)}",
                        f"系数 = min(1, 2 / {_num(norm)}) = {_num(threshold / norm)}"), size=13, color=ACCENT, bold=True)
    d.arrow(352, 100, 410, 100, f"× {_num(threshold / norm)}", color=ACCENT)
    d.text(515, 22, _t(lang, "clipped, same shapes", "裁剪后，形状不变"), size=12, color=MUTED)
    _cells(d, 440, 36, clipped[0], cw=46)
    _cells(d, 463, 132, [clipped[1]], cw=46)
    d.text(600, 64, "g₁", size=12, color=MUTED, anchor="start")
    d.text(600, 146, "g₂", size=12, color=MUTED, anchor="start")
    d.text(640, 105, _t(lang, f"norm {_num(global_norm(clipped))}", f"范数 {_num(global_norm(clipped))}"),
           size=12, color=ACCENT)
    d.line(20, 190, 680, 190, color=MUTED, width=1, dashed=True)
    d.text(20, 212, _t(lang, "Wrong: each array clipped by its own norm", "错误：每个数组按自己的范数裁剪"),
           size=13, color=WARN, anchor="start", bold=True)
    parts = [(f"‖g₁‖ = {_num(global_norm(grads[0]))}", f"× {_num(threshold / global_norm(grads[0]))}"),
             (f"‖g₂‖ = {_num(global_norm(grads[1]))}", f"× {_num(threshold / global_norm(grads[1]))}")]
    d.text(40, 240, f"{parts[0][0]}  →  {parts[0][1]}", size=12, color=WARN, anchor="start")
    d.text(40, 264, f"{parts[1][0]}  →  {parts[1][1]}", size=12, color=WARN, anchor="start")
    _cells(d, 250, 226, own[0], cw=72, ch=22, fill=WARN_FILL, stroke=WARN, size=11)
    _cells(d, 410, 226, [own[1]], cw=46, ch=22, fill=WARN_FILL, stroke=WARN, size=11)
    d.text(470, 248, _t(lang, f"total norm {_num(global_norm(own))} > 2",
                        f"总范数 {_num(global_norm(own))} > 2"), size=12, color=WARN, anchor="start")
    d.text(470, 270, _t(lang, "and the direction changed", "而且方向改变了"), size=12, color=WARN, anchor="start")
    return d.svg(_t(lang, "Global-norm clipping of two arrays: one norm over every entry, one factor for both. "
                          "Clipping each array by its own norm uses two factors and breaks the direction.",
                    "两个数组的全局范数裁剪：所有分量只有一个范数，两个数组只乘一个系数。各自按自己的范数裁剪会用两个"
                    "系数，方向被破坏。"))


FIGURES = {
    "clip_two_rules": clip_two_rules,
    "clip_many_arrays": clip_many_arrays,
}
