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


FIGURES = {
    "clip_two_rules": clip_two_rules,
}
