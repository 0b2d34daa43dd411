"""Figures of the gradient-clipping and gated-cell lessons: two clipping rules, the LSTM cell and its
two backward paths, the GRU's mix and reset gate, and stacked and bidirectional recurrence.

Every number drawn comes from seqlab's labs (``seqlab.labs.clipping``, ``lstm``, ``gru``,
``recurrence``), so a figure cannot drift from the lessons' worked examples.
"""

from __future__ import annotations

import math

from seqlab.learn.figures.svg import ACCENT, INK, MUTED, SOFT, WARN, Drawing, number
from seqlab.learn.words import say

WARN_FILL = "#fee2e2"
KEEP, KEEP_FILL = "#059669", "#d1fae5"      # the kept (old state / memory) path
NEW, NEW_FILL = "#d97706", "#fef3c7"        # the new content (candidate / written part)



def _vec(values) -> str:
    return "[" + ", ".join(number(v) for v in values) + "]"


def _power(e: int) -> str:
    """10 to the power e with superscript digits: 10⁻⁴."""
    return "10" + str(e).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


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
        (INK, say("figures.gates.the_gradient", lang),
         say("figures.gates.gradient_norm_angle", lang, g=_vec(g), norm=number(norm), angle=f"{angle(g):.2f}")),
        (ACCENT, say("figures.gates.global_rule", lang),
         f"× min(1, 2 / {number(norm)}) = × {number(threshold / norm)} → {_vec(glob)}"),
        (ACCENT, "", say("figures.gates.direction_kept", lang, norm=number(np.linalg.norm(glob)),
                         angle=f"{angle(glob):.2f}")),
        (WARN, say("figures.gates.coordinate_rule", lang), say("figures.gates.clamped", lang, coord=_vec(coord))),
        (WARN, "", say("figures.gates.direction_bent", lang, norm=number(np.linalg.norm(coord)),
                       angle=f"{angle(coord):.2f}")),
    ]
    y = 60
    for color, head, body in rows:
        if head:
            y += 14
            d.text(left, y, head, size=13, color=color, anchor="start", bold=True)
            y += 22
        d.text(left + 12, y, body, size=12, color=color, anchor="start")
        y += 22
    return d.svg(say("figures.gates.clip_two_rules", lang))


def _cells(d: Drawing, x: float, y: float, rows, *, cw: float = 40, ch: float = 28, fill=SOFT, stroke=ACCENT,
           size: int = 12) -> None:
    """A small matrix of numbers, ``rows[i][j]`` printed in its cell."""
    for i, row in enumerate(rows):
        for j, value in enumerate(row):
            d.box(x + j * cw, y + i * ch, cw, ch, number(value), fill=fill, stroke=stroke, radius=0, size=size)


def _two_arrays():
    """The implement lesson's gradients: g1 (2, 2) with norm 3 and g2 (1,) with norm 4, global norm 5."""
    import numpy as np
    return [np.array([[1.0, 2.0], [2.0, 0.0]]), np.array([4.0])]


# --- clip_global_norm -------------------------------------------------------------------------------------
def clip_many_arrays(lang: str) -> str:
    """Two gradient arrays, one norm over all their entries, one factor for both; and the wrong, per-array rule."""
    import numpy as np

    from seqlab.labs.clipping import clip_global_norm, global_norm
    from seqlab.learn.catalog import mutant
    grads, threshold = _two_arrays(), 2.0
    clipped, norm = clip_global_norm(grads, threshold)
    own, _ = mutant("clip_global_norm", "each_array_its_own_norm")(grads, threshold)
    d = Drawing(700, 300)
    d.text(60, 22, "g₁  (2, 2)", size=12, color=MUTED)
    _cells(d, 20, 36, grads[0])
    d.text(60, 118, "g₂  (1,)", size=12, color=MUTED)
    _cells(d, 40, 132, [grads[1]])
    flat = np.concatenate([g.ravel() for g in grads])
    d.arrow(110, 100, 150, 100, color=MUTED)
    d.text(250, 22, say("figures.gates.all_entries", lang), size=12, color=MUTED)
    _cells(d, 155, 56, [flat], cw=38)
    d.text(250, 108, say("figures.gates.squares", lang, terms=" + ".join(number(v * v) for v in flat),
                         total=number(norm ** 2)), size=12)
    d.text(250, 132, f"‖g‖ = √{number(norm ** 2)} = {number(norm)}", size=13, bold=True)
    d.text(250, 156, say("figures.gates.factor", lang, norm=number(norm), factor=number(threshold / norm)), size=13,
           color=ACCENT, bold=True)
    d.arrow(352, 100, 410, 100, f"× {number(threshold / norm)}", color=ACCENT)
    d.text(515, 22, say("figures.gates.clipped_same_shapes", lang), size=12, color=MUTED)
    _cells(d, 440, 36, clipped[0], cw=46)
    _cells(d, 463, 132, [clipped[1]], cw=46)
    d.text(600, 64, "g₁", size=12, color=MUTED, anchor="start")
    d.text(600, 146, "g₂", size=12, color=MUTED, anchor="start")
    d.text(640, 105, say("figures.gates.norm", lang, norm=number(global_norm(clipped))), size=12, color=ACCENT)
    d.line(20, 190, 680, 190, color=MUTED, width=1, dashed=True)
    d.text(20, 212, say("figures.gates.wrong_each_own", lang), size=13, color=WARN, anchor="start", bold=True)
    parts = [(f"‖g₁‖ = {number(global_norm(grads[0]))}", f"× {number(threshold / global_norm(grads[0]))}"),
             (f"‖g₂‖ = {number(global_norm(grads[1]))}", f"× {number(threshold / global_norm(grads[1]))}")]
    d.text(40, 240, f"{parts[0][0]}  →  {parts[0][1]}", size=12, color=WARN, anchor="start")
    d.text(40, 264, f"{parts[1][0]}  →  {parts[1][1]}", size=12, color=WARN, anchor="start")
    _cells(d, 250, 226, own[0], cw=72, ch=22, fill=WARN_FILL, stroke=WARN, size=11)
    _cells(d, 410, 226, [own[1]], cw=46, ch=22, fill=WARN_FILL, stroke=WARN, size=11)
    d.text(470, 248, say("figures.gates.total_norm_over", lang, norm=number(global_norm(own))), size=12, color=WARN,
           anchor="start")
    d.text(470, 270, say("figures.gates.direction_changed", lang), size=12, color=WARN, anchor="start")
    return d.svg(say("figures.gates.clip_many_arrays", lang))


# --- explain_clipping -------------------------------------------------------------------------------------
def clip_norm_curve(lang: str) -> str:
    """The norm after global-norm clipping against the norm before, both on log axes, threshold 2."""
    import numpy as np

    from seqlab.labs.clipping import clip_global_norm, global_norm
    from seqlab.labs.recurrence import repeated_factor
    threshold = 2.0
    d = Drawing(700, 300)
    left, right, top, bottom = 90.0, 470.0, 30.0, 250.0
    lo, hi = -4.0, 4.0                                    # log10 range of both axes
    X = lambda v: left + (math.log10(v) - lo) / (hi - lo) * (right - left)
    Y = lambda v: bottom - (math.log10(v) - lo) / (hi - lo) * (bottom - top)
    d.line(left, bottom, right, bottom, color=MUTED, width=1)
    d.line(left, bottom, left, top, color=MUTED, width=1)
    for e in range(-4, 5, 2):
        d.line(X(10.0 ** e), bottom, X(10.0 ** e), bottom + 4, color=MUTED, width=1)
        d.text(X(10.0 ** e), bottom + 15, _power(e), size=10, color=MUTED)
        d.line(left - 4, Y(10.0 ** e), left, Y(10.0 ** e), color=MUTED, width=1)
        d.text(left - 8, Y(10.0 ** e), _power(e), size=10, color=MUTED, anchor="end")
    d.text((left + right) / 2, bottom + 36, say("figures.gates.norm_before", lang), size=12)
    d.text(24, (top + bottom) / 2 - 40, say("figures.gates.norm_after", lang), size=12)
    d.line(X(1e-4), Y(1e-4), X(1e4), Y(1e4), color=MUTED, width=1, dashed=True)
    norms = [10.0 ** e for e in np.linspace(lo, hi, 81)]
    after = [global_norm(clip_global_norm(np.array([n]), threshold)[0]) for n in norms]
    for a, b, ya, yb in zip(norms, norms[1:], after, after[1:]):
        d.line(X(a), Y(ya), X(b), Y(yb), color=ACCENT, width=2.5)
    d.line(X(threshold), Y(threshold), X(threshold), bottom, color=ACCENT, width=1, dashed=True)
    d.text(X(threshold) + 4, bottom - 10, say("figures.gates.threshold", lang), size=11, color=ACCENT, anchor="start")
    vanished = repeated_factor(0.5, 10)
    for value, color in ((vanished, KEEP), (5.0, WARN), (repeated_factor(2.0, 10), WARN)):
        out = global_norm(clip_global_norm(np.array([value]), threshold)[0])
        d.circle(X(value), Y(out), 4, fill=color, stroke=color)
    d.text(X(vanished) + 8, Y(vanished) + 12, f"{number(vanished)} → {number(vanished)}", size=11, color=KEEP,
           anchor="start")
    d.text(X(5.0), Y(threshold) - 14, "5 → 2", size=11, color=WARN)
    d.text(X(1024.0), Y(threshold) - 14, "1024 → 2", size=11, color=WARN)
    notes = [(KEEP, say("figures.gates.left_of_threshold", lang), say("figures.gates.untouched", lang)),
             (KEEP, "", say("figures.gates.stays_vanished", lang)),
             (WARN, say("figures.gates.right_of_threshold", lang), say("figures.gates.becomes_threshold", lang)),
             (WARN, "", say("figures.gates.explosion_size", lang)), (WARN, "", say("figures.gates.is_forgotten", lang))]
    y = 70
    for color, head, body in notes:
        if head:
            y += 12
            d.text(500, y, head, size=12, color=color, anchor="start", bold=True)
            y += 20
        d.text(500, y, body, size=12, color=color, anchor="start")
        y += 20
    return d.svg(say("figures.gates.clip_norm_curve", lang))


def clip_detach_reset(lang: str) -> str:
    """Four states with a chunk boundary between h2 and h3: clipping, detaching and resetting compared."""
    d = Drawing(700, 300)
    xs = [200, 315, 430, 545]
    rows = [(say("figures.gates.clip", lang), say("figures.gates.clip_flows", lang),
             say("figures.gates.clip_scales", lang)),
            (say("figures.gates.detach", lang), say("figures.gates.detach_value_crosses", lang),
             say("figures.gates.detach_gradient_stops", lang)),
            (say("figures.gates.reset", lang), say("figures.gates.reset_neither_crosses", lang),
             say("figures.gates.reset_starts_from_zero", lang))]
    boundary = (xs[1] + 50 + xs[2]) / 2
    d.line(boundary, 28, boundary, 290, color=MUTED, width=1, dashed=True)
    d.text(boundary, 18, say("figures.gates.chunk_boundary", lang), size=11, color=MUTED)
    for r, (name, line1, line2) in enumerate(rows):
        y = 70 + r * 82
        d.text(12, y - 12, name, size=14, anchor="start", bold=True)
        d.text(12, y + 8, line1, size=11, color=MUTED, anchor="start")
        d.text(12, y + 24, line2, size=11, color=MUTED, anchor="start")
        for t, x in enumerate(xs):
            d.box(x, y - 16, 50, 32, f"h{'₁₂₃₄'[t]}")
        for t in range(3):
            x1, x2 = xs[t] + 50, xs[t + 1]
            crossing = t == 1
            if not (crossing and r == 2):
                d.arrow(x1 + 2, y - 8, x2 - 2, y - 8)
            if not (crossing and r >= 1):
                d.arrow(x2 - 2, y + 8, x1 + 2, y + 8, color=ACCENT, dashed=True)
            else:
                d.text((x1 + x2) / 2, y + 9, "✕", size=13, color=WARN)
        if r == 2:
            d.box(xs[2] - 44, y - 34, 22, 18, "0", size=11, fill="#ffffff", stroke=WARN)
            d.arrow(xs[2] - 22, y - 25, xs[2] - 2, y - 12, color=WARN)
        if r == 0:
            d.text(xs[0] - 6, y + 26, "∇ × min(1, τ / ‖∇‖)", size=11,
                   color=ACCENT, anchor="start")
    d.text(600, 40, say("figures.gates.legend_value", lang), size=11, anchor="start")
    d.text(600, 56, say("figures.gates.legend_gradient", lang), size=11, color=ACCENT, anchor="start")
    return d.svg(say("figures.gates.clip_detach_reset", lang))


# --- trace_lstm_cell --------------------------------------------------------------------------------------
def _lstm_worked() -> dict:
    """The lecture's LSTM component: c_prev = 1, f = 0.8, i = 0.25, g = 0.4, o = 0.5."""
    from seqlab.labs.lstm import lstm_gate_step
    gates = {"c_prev": 1.0, "f": 0.8, "i": 0.25, "g": 0.4, "o": 0.5}
    return {**gates, **lstm_gate_step(gates["c_prev"], gates["f"], gates["i"], gates["g"], gates["o"])}


def lstm_cell_path(lang: str) -> str:
    """The cell path c_prev -> x f -> + i g -> c -> tanh -> x o -> h, with the worked numbers on it."""
    w = _lstm_worked()
    d = Drawing(700, 320)
    y = 60
    d.box(20, y - 20, 90, 40, f"c_prev = {number(w['c_prev'])}", fill=KEEP_FILL, stroke=KEEP)
    d.arrow(110, y, 183, y, color=KEEP, width=2)
    d.circle(200, y, 16, "×")
    d.arrow(216, y, 313, y, number(w["retained"]), color=KEEP, width=2)
    d.circle(330, y, 16, "+")
    d.arrow(346, y, 420, y, color=KEEP, width=2)
    d.box(420, y - 20, 100, 40, f"c = {number(w['c'])}", fill=KEEP_FILL, stroke=KEEP)
    d.arrow(520, y, 680, y, say("figures.gates.c_to_next_step", lang), color=KEEP, width=2)
    d.text(40, 100, say("figures.gates.cell_path", lang), size=12, color=KEEP, anchor="start", bold=True)
    d.arrow(470, 80, 470, 118)
    d.box(435, 118, 70, 30, "tanh")
    d.arrow(470, 148, 470, 193, number(math.tanh(w["c"])), offset=-34)
    d.circle(470, 210, 16, "×")
    d.arrow(486, 210, 560, 210)
    d.box(560, 190, 120, 40, f"h = {number(w['h'])}", fill=NEW_FILL, stroke=NEW)
    d.text(620, 246, say("figures.gates.output_next_gates", lang), size=11, color=MUTED)
    gates = [("f", "σ", 170), ("i", "σ", 255), ("g", "tanh", 340), ("o", "σ", 425)]
    for name, act, x in gates:
        d.box(x, 250, 75, 32, f"{name} = {number(w[name])}", size=12)
        d.arrow(x + 37, 310, x + 37, 283, color=MUTED, width=1)
        d.text(x + 42, 300, act, size=10, color=MUTED, anchor="start")
    d.box(20, 250, 110, 32, "[h_prev, x]", fill="#ffffff", stroke=INK)
    d.line(75, 282, 75, 310, color=MUTED, width=1)
    d.line(75, 310, 462, 310, color=MUTED, width=1)
    d.arrow(207, 250, 200, 77)
    d.circle(330, 165, 14, "×")
    d.arrow(292, 250, 322, 178)
    d.arrow(377, 250, 338, 178)
    d.arrow(330, 151, 330, 77, f"i·g = {number(w['written'])}", offset=-40)
    d.arrow(462, 250, 468, 227)
    return d.svg(say("figures.gates.lstm_cell_path", lang))


# --- lstm_cell_forward, gru_cell_forward ------------------------------------------------------------------
BLOCK_COLOURS = [(SOFT, ACCENT), (KEEP_FILL, KEEP), (NEW_FILL, NEW), ("#ede9fe", "#7c3aed")]


def _column(d: Drawing, x: float, y: float, rows: int, *, cell: float = 11, blocks: int = 1, cols: int = 1,
            plain: bool = False) -> None:
    """A rows x cols matrix as small cells; with ``blocks`` > 1 the row blocks take the gate colours."""
    per = rows // blocks
    for r in range(rows):
        fill, stroke = ("#ffffff", INK) if plain else BLOCK_COLOURS[(r // per) % len(BLOCK_COLOURS)]
        for c in range(cols):
            d.box(x + c * cell, y + r * cell, cell, cell, fill=fill, stroke=stroke, radius=0)


def _gate_stack(lang: str, names, acts, caption: str) -> str:
    """Wx (kH, D) x + Wh (kH, H) h_prev + bx + bh = the (kH,) pre-activation, cut into k blocks of H rows;
    ``caption``: the key of the figure's caption in words.toml."""
    k, H, D, cell = len(names), 3, 3, 12
    rows = k * H
    d = Drawing(700, 60 + rows * cell + 40)
    top = 40
    items = [("Wx", D, f"({k}H, D)"), ("x", 1, "(D,)"), ("Wh", H, f"({k}H, H)"), ("h_prev", 1, "(H,)"),
             ("bx", 1, f"({k}H,)"), ("bh", 1, f"({k}H,)")]
    x = 20
    signs = ["·", "+", "·", "+", "+", "="]
    for (name, cols, shape), sign in zip(items, signs):
        short = name in ("x", "h_prev")
        if short:
            _column(d, x, top + (rows - D) * cell / 2, D if name == "x" else H, cols=1, plain=True)
        else:
            _column(d, x, top, rows, blocks=k, cols=cols)
        width = cols * cell
        d.text(x + width / 2, top - 24, name, size=12, bold=True)
        d.text(x + width / 2, top - 10, shape, size=10, color=MUTED)
        x += max(width, 34) + 8
        d.text(x + 6, top + rows * cell / 2, sign, size=16)
        x += 22
    _column(d, x, top, rows, blocks=k)
    d.text(x + cell / 2 + 10, top - 24, say("figures.gates.pre_activation", lang), size=12, bold=True)
    d.text(x + cell / 2, top - 10, f"({k}H,)", size=10, color=MUTED)
    x += cell + 14
    for b, (name, act) in enumerate(zip(names, acts)):
        y = top + b * H * cell + H * cell / 2
        fill, stroke = BLOCK_COLOURS[b]
        d.text(x, y, f"[{b}H:{b + 1}H]" if b else "[0:H]", size=10, color=MUTED, anchor="start")
        d.arrow(x + 52, y, x + 86, y, act, color=stroke, size=11)
        d.box(x + 88, y - 12, 90, 24, f"{name}  (H,)", fill=fill, stroke=stroke, size=12)
    d.text(350, top + rows * cell + 24, say(caption, lang), size=12, color=MUTED)
    return d.svg(say(caption, lang))


def lstm_gate_stack(lang: str) -> str:
    """The LSTM's four affine maps stacked row-wise in the order i, f, g, o (here H = D = 3)."""
    return _gate_stack(lang, ["i", "f", "g", "o"], ["σ", "σ", "tanh", "σ"], "figures.gates.lstm_gate_stack")


# --- lstm_bptt --------------------------------------------------------------------------------------------
def lstm_two_paths(lang: str) -> str:
    """The two routes by which step t + 1 sends gradient back to step t: along the cell (× f) and through h_t."""
    d = Drawing(700, 330)
    xs = {"prev": 20, "t": 290, "next": 560}
    cy, hy = 60, 250
    sub = {"prev": "ₜ₋₁", "t": "ₜ", "next": "ₜ₊₁"}
    for key, x in xs.items():
        d.box(x, cy - 20, 90, 40, f"c{sub[key]}", fill=KEEP_FILL, stroke=KEEP)
        d.box(x, hy - 20, 90, 40, f"h{sub[key]}", fill=NEW_FILL, stroke=NEW)
    for a, b in (("prev", "t"), ("t", "next")):
        x1, x2 = xs[a] + 90, xs[b]
        d.arrow(x1, cy - 6, x2, cy - 6, f"× f{sub[b]},  + i{sub[b]}g{sub[b]}", color=KEEP)
        d.arrow(x2, cy + 8, x1, cy + 8, f"× f{sub[b]}", color=ACCENT, dashed=True, offset=14)
    gx = 440
    d.box(gx, hy - 18, 80, 36, say("figures.gates.next_gates", lang), size=12)
    d.arrow(xs["t"] + 90, hy - 8, gx, hy - 8, "W_h", color=NEW)
    d.arrow(gx, hy + 10, xs["t"] + 90, hy + 10, "W_hᵀ daₜ₊₁", color=ACCENT, dashed=True, offset=14)
    d.arrow(gx + 80, hy, xs["next"], hy, color=MUTED)
    d.arrow(gx + 60, hy - 18, xs["next"] + 20, cy + 20, color=MUTED)
    x = xs["t"] + 45
    d.arrow(x - 12, cy + 20, x - 12, hy - 20, "tanh, × oₜ", color=NEW, offset=-40)
    d.arrow(x + 12, hy - 20, x + 12, cy + 20, "oₜ (1 − tanh² cₜ)", color=ACCENT, dashed=True, offset=-60)
    d.arrow(x, hy + 62, x, hy + 20, "dhs[t]", color=ACCENT, offset=-26)
    d.text(20, 130, say("figures.gates.route_cell", lang), size=12, color=KEEP, anchor="start", bold=True)
    d.text(20, 148, say("figures.gates.route_cell_factor", lang), size=12, color=KEEP, anchor="start")
    d.text(20, 180, say("figures.gates.route_hidden", lang), size=12, color=NEW, anchor="start", bold=True)
    d.text(20, 198, say("figures.gates.route_hidden_gates", lang), size=12, color=NEW, anchor="start")
    d.text(570, 300, say("figures.gates.legend_forward", lang), size=11, anchor="start")
    d.text(570, 318, say("figures.gates.legend_gradient", lang), size=11, color=ACCENT, anchor="start")
    return d.svg(say("figures.gates.lstm_two_paths", lang))


# --- explain_lstm_memory ----------------------------------------------------------------------------------
def lstm_cell_products(lang: str) -> str:
    """What survives of a gradient after k steps: along the cell (f = 1, 0.95, 0.8) and through an RNN (0.5)."""
    from seqlab.labs.recurrence import repeated_factor
    d = Drawing(700, 300)
    left, right, top, bottom = 70.0, 470.0, 24.0, 250.0
    steps, lo = 20, -7.0
    X = lambda k: left + k / steps * (right - left)
    Y = lambda v: top + (0.0 - math.log10(v)) / (0.0 - lo) * (bottom - top)
    d.line(left, bottom, right, bottom, color=MUTED, width=1)
    d.line(left, bottom, left, top, color=MUTED, width=1)
    for k in range(0, steps + 1, 5):
        d.line(X(k), bottom, X(k), bottom + 4, color=MUTED, width=1)
        d.text(X(k), bottom + 15, str(k), size=10, color=MUTED)
    for e in range(0, -8, -1):
        d.line(left - 4, Y(10.0 ** e), left, Y(10.0 ** e), color=MUTED, width=1)
        d.text(left - 8, Y(10.0 ** e), _power(e), size=10, color=MUTED, anchor="end")
    d.text((left + right) / 2, bottom + 36, say("figures.gates.steps_back", lang), size=12)
    series = [(1.0, KEEP, "cell_forget"), (0.95, KEEP, "cell_forget"), (0.8, NEW, "cell_forget"),
              (0.5, WARN, "rnn_factor")]
    for factor, color, key in series:
        label = say(f"figures.gates.{key}", lang, f=number(factor))
        values = [repeated_factor(factor, k) for k in range(steps + 1)]
        for k in range(steps):
            d.line(X(k), Y(values[k]), X(k + 1), Y(values[k + 1]), color=color, width=2.5,
                   dashed=factor == 0.95)
        d.text(X(steps) + 8, Y(values[-1]), f"{label} → {number(values[-1]) if values[-1] > 1e-4 else f'{values[-1]:.8f}'.rstrip('0')}",
               size=12, color=color, anchor="start")
    return d.svg(say("figures.gates.lstm_cell_products", lang))


# --- trace_gru_mix ----------------------------------------------------------------------------------------
def gru_mix_line(lang: str) -> str:
    """h = z h_prev + (1 - z) candidate on a number line: h_prev = 0.6, candidate = -0.2, z = 0.75 -> 0.4."""
    from seqlab.labs.gru import gru_gate_step
    h_prev, z, cand = 0.6, 0.75, -0.2
    h = gru_gate_step(h_prev, z, cand)
    d = Drawing(700, 250)
    left, right, y = 60.0, 640.0, 120.0
    X = lambda v: left + (v + 1.0) / 2.0 * (right - left)
    d.line(left, y, right, y, color=MUTED, width=1.5)
    for v in (-1.0, -0.5, 0.0, 0.5, 1.0):
        d.line(X(v), y - 5, X(v), y + 5, color=MUTED, width=1)
        d.text(X(v), y + 20, number(v), size=11, color=MUTED)
    d.line(X(cand), y, X(h_prev), y, color=ACCENT, width=5)
    d.circle(X(h_prev), y, 7, fill=KEEP, stroke=KEEP)
    d.text(X(h_prev), y - 42, f"h_prev = {number(h_prev)}", size=13, color=KEEP, bold=True)
    d.text(X(h_prev), y - 24, say("figures.gates.weight_z", lang, z=number(z)), size=12, color=KEEP)
    d.circle(X(cand), y, 7, fill=NEW, stroke=NEW)
    d.text(X(cand), y - 42, say("figures.gates.candidate_value", lang, cand=number(cand)), size=13, color=NEW, bold=True)
    d.text(X(cand), y - 24, say("figures.gates.weight_one_minus_z", lang, weight=number(1 - z)), size=12, color=NEW)
    d.circle(X(h), y, 8, fill=ACCENT, stroke=ACCENT)
    d.arrow(X(h), y + 62, X(h), y + 12, color=ACCENT)
    d.text(X(h), y + 74, f"h = {number(z)} · {number(h_prev)} + {number(1 - z)} · ({number(cand)}) = {number(h)}", size=13,
           color=ACCENT, bold=True)
    d.text(X(h), y + 94, say("figures.gates.quarter_way", lang), size=12, color=ACCENT)
    return d.svg(say("figures.gates.gru_mix_line", lang))


# --- gru_cell_forward, gru_bptt ---------------------------------------------------------------------------
def gru_worked_params():
    """The GRU lessons' one-unit cell (D = H = 1, x = 1, h_prev = 0.6): r = 0.5, z = 0.75, and a bias
    bh_n = 0.4 on the candidate's recurrent map, so that the reset placements give different candidates."""
    import numpy as np
    return {"Wx": np.array([[0.0], [0.0], [-0.5]]), "Wh": np.array([[1.0], [1.0], [1.0]]),
            "bx": np.array([-0.6, math.log(3.0) - 0.6, 0.0]), "bh": np.array([0.0, 0.0, 0.4])}


def gru_reset_placement(lang: str) -> str:
    """The candidate's pre-activation with the reset gate before the recurrent matmul (the paper's, this
    course's) and after it (PyTorch's), on the worked one-unit cell."""
    import numpy as np

    from seqlab.labs.gru import gru_cell_forward
    p = gru_worked_params()
    x, h_prev = np.array([1.0]), np.array([0.6])
    Wn, bn, input_n = p["Wh"][2, 0], p["bh"][2], p["Wx"][2, 0] * x[0] + p["bx"][2]
    _, paper = gru_cell_forward(p, x, h_prev, "paper")
    _, torch_ = gru_cell_forward(p, x, h_prev, "pytorch")
    r = float(paper["r"][0])
    rows = [
        (say("figures.gates.reset_paper", lang), ACCENT,
         [(f"h_prev = {number(h_prev[0])}", None), (number(r * h_prev[0]), f"× r = {number(r)}"),
          (number(Wn * r * h_prev[0]), f"× W_hn = {number(Wn)}"), (number(Wn * r * h_prev[0] + bn), f"+ b_hn = {number(bn)}"),
          (number(Wn * r * h_prev[0] + bn + input_n), f"+ W_xn x + b_xn = {number(input_n)}"),
          (f"n = {number(paper['n'][0])}", "tanh")]),
        (say("figures.gates.reset_pytorch", lang), NEW,
         [(f"h_prev = {number(h_prev[0])}", None), (number(Wn * h_prev[0]), f"× W_hn = {number(Wn)}"),
          (number(Wn * h_prev[0] + bn), f"+ b_hn = {number(bn)}"), (number(r * (Wn * h_prev[0] + bn)), f"× r = {number(r)}"),
          (number(r * (Wn * h_prev[0] + bn) + input_n), f"+ W_xn x + b_xn = {number(input_n)}"),
          (f"n = {number(torch_['n'][0])}", "tanh")]),
    ]
    d = Drawing(700, 250)
    for k, (title, color, chain) in enumerate(rows):
        y = 40 + k * 120
        d.text(14, y, title, size=13, color=color, anchor="start", bold=True)
        bx = 14
        for j, (value, op) in enumerate(chain):
            w = 92 if j in (0, len(chain) - 1) else 48
            if op is not None:
                d.arrow(bx, y + 48, bx + 54, y + 48, color=color)
                d.text(bx + 27, y + (28 if j % 2 else 76), op, size=11, color=color)
                bx += 56
            last = j == len(chain) - 1
            d.box(bx, y + 32, w, 32, value, size=12, fill=(NEW_FILL if k else SOFT) if last else "#ffffff",
                  stroke=color)
            bx += w
    return d.svg(say("figures.gates.gru_reset_placement", lang))


def gru_backward_routes(lang: str) -> str:
    """The four routes from h back to h_prev in one GRU step, with the worked cell's numbers (dh = 1)."""
    import numpy as np

    from seqlab.labs.gru import gru_cell_forward
    p = gru_worked_params()
    x, h_prev = np.array([1.0]), np.array([0.6])
    _, c = gru_cell_forward(p, x, h_prev)
    r, z, n = float(c["r"][0]), float(c["z"][0]), float(c["n"][0])
    Wr, Wz, Wn = (float(p["Wh"][k, 0]) for k in range(3))
    da_n = (1 - z) * (1 - n * n)
    routes = [
        (KEEP, say("figures.gates.route_copy", lang), z), (NEW, say("figures.gates.route_candidate", lang),
         da_n * Wn * r),
        (ACCENT, say("figures.gates.route_r", lang), da_n * Wn * float(h_prev[0]) * r * (1 - r) * Wr),
        ("#7c3aed", say("figures.gates.route_z", lang), (float(h_prev[0]) - n) * z * (1 - z) * Wz),
    ]
    d = Drawing(700, 290)
    d.box(20, 115, 90, 40, "h_prev", fill=NEW_FILL, stroke=NEW)
    d.box(590, 115, 90, 40, "h", fill=NEW_FILL, stroke=NEW)
    d.text(635, 175, "dh = 1", size=12, color=ACCENT)
    for k, (color, label, value) in enumerate(routes):
        y = 40 + k * 64
        d.line(590, 135, 520, y, color=color, width=1.5, dashed=True)
        d.line(520, y, 190, y, color=color, width=1.5, dashed=True)
        d.arrow(190, y, 110, 135, color=color, dashed=True)
        d.text(355, y - 11, label, size=12, color=color)
        d.text(355, y + 12, number(value), size=12, color=color, bold=True)
    total = sum(v for _, _, v in routes)
    d.text(65, 190, f"Σ = {number(total)}", size=13, color=ACCENT, bold=True)
    d.text(65, 210, "= dh_prev", size=12, color=ACCENT)
    return d.svg(say("figures.gates.gru_backward_routes", lang))


# --- stacked ----------------------------------------------------------------------------------------------
_SUB = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
_SUP = str.maketrans("0123456789()", "⁰¹²³⁴⁵⁶⁷⁸⁹⁽⁾")


def stacked_grid(lang: str) -> str:
    """A two-layer RNN over four steps as a grid: time to the right, depth upwards; one path from x₁ to the
    top state at t = 4 is highlighted (every such path passes T + L − 1 = 5 tanh's)."""
    T, L = 4, 2
    d = Drawing(700, 300)
    x0, dx = 120, 120
    rows = {1: 150, 2: 70}                                    # layer -> y of its centre
    y_in = 240
    path = {(1, 1), (1, 2), (1, 3), (1, 4), (2, 4)}          # (layer, time) on the highlighted path
    for l, y in rows.items():
        for t in range(1, T + 1):
            x = x0 + (t - 1) * dx
            on = (l, t) in path
            d.box(x, y - 18, 70, 36, f"h{f'({l})'.translate(_SUP)}{str(t).translate(_SUB)}",
                  fill=SOFT if on else "#ffffff", stroke=ACCENT if on else INK)
            if t < T:
                both = on and (l, t + 1) in path
                d.arrow(x + 70, y, x + dx, y, color=ACCENT if both else INK, width=2 if both else 1.5)
            if l > 1:
                both = on and (l - 1, t) in path
                d.arrow(x + 35, rows[l - 1] - 18, x + 35, y + 18, color=ACCENT if both else INK,
                        width=2 if both else 1.5)
    for t in range(1, T + 1):
        x = x0 + (t - 1) * dx
        on = (1, t) in path and t == 1
        d.text(x + 35, y_in + 10, f"x{str(t).translate(_SUB)}", size=13, color=MUTED)
        d.arrow(x + 35, y_in - 4, x + 35, rows[1] + 18, color=ACCENT if on else INK, width=2 if on else 1.5)
    d.arrow(x0, 284, x0 + (T - 1) * dx + 70, 284, say("figures.gates.time", lang), color=MUTED, offset=-12)
    d.arrow(60, 230, 60, 40, say("figures.gates.depth", lang), color=MUTED, offset=18)
    d.text(575, 200, say("figures.gates.highlighted_path", lang), size=11, color=ACCENT, anchor="start")
    d.text(575, 218, say("figures.gates.highlighted_tanhs", lang), size=11, color=ACCENT, anchor="start")
    return d.svg(say("figures.gates.stacked_grid", lang))


def bidirectional_reads(lang: str) -> str:
    """A bidirectional RNN over four steps: the forward row reads left to right, the backward row right to
    left, and the state at t = 2 is their concatenation; what each half has read is marked."""
    T, t_mark = 4, 2
    d = Drawing(700, 270)
    x0, dx = 120, 130
    yc, yf, yx, yb = 32, 104, 164, 224
    for t in range(1, T + 1):
        x = x0 + (t - 1) * dx
        sub = str(t).translate(_SUB)
        d.box(x, yf - 18, 70, 36, f"→h{sub}", fill=SOFT if t <= t_mark else "#ffffff",
              stroke=ACCENT if t <= t_mark else MUTED)
        d.box(x, yb - 18, 70, 36, f"←h{sub}", fill=NEW_FILL if t >= t_mark else "#ffffff",
              stroke=NEW if t >= t_mark else MUTED)
        d.text(x + 35, yx, f"x{sub}", size=13, bold=t == t_mark)
        d.arrow(x + 35, yx - 10, x + 35, yf + 18, color=MUTED, width=1)
        d.arrow(x + 35, yx + 10, x + 35, yb - 18, color=MUTED, width=1)
        if t < T:
            d.arrow(x + 70, yf, x + dx, yf, color=ACCENT if t < t_mark else MUTED)
            d.arrow(x + dx, yb, x + 70, yb, color=NEW if t >= t_mark else MUTED)
        if t == t_mark:
            d.box(x - 15, yc - 16, 100, 32, f"[→h{sub}; ←h{sub}]", size=12)
            d.arrow(x + 45, yf - 18, x + 45, yc + 16, color=ACCENT)
            d.curve(x - 2, yb - 8, x + 5, yc + 16, -80, color=NEW)
    d.text(x0 - 12, yf, say("figures.gates.forward_row", lang), size=12, color=ACCENT, anchor="end")
    d.text(x0 - 12, yb, say("figures.gates.backward_row", lang), size=12, color=NEW, anchor="end")
    d.text(x0 + dx + 100, yc - 8, say("figures.gates.read_forward", lang), size=12, color=ACCENT, anchor="start")
    d.text(x0 + dx + 100, yc + 12, say("figures.gates.read_backward", lang), size=12, color=NEW, anchor="start")
    return d.svg(say("figures.gates.bidirectional_reads", lang))

FIGURES = {
    "clip_two_rules": clip_two_rules,
    "clip_many_arrays": clip_many_arrays,
    "clip_norm_curve": clip_norm_curve,
    "clip_detach_reset": clip_detach_reset,
    "lstm_cell_path": lstm_cell_path,
    "lstm_gate_stack": lstm_gate_stack,
    "lstm_two_paths": lstm_two_paths,
    "lstm_cell_products": lstm_cell_products,
    "gru_mix_line": gru_mix_line,
    "gru_reset_placement": gru_reset_placement,
    "gru_backward_routes": gru_backward_routes,
    "stacked_grid": stacked_grid,
    "bidirectional_reads": bidirectional_reads,
}
