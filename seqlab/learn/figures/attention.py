"""Figures of the attention lessons: a query scoring keys and mixing values, attention maps and their
masks, the softmax Jacobian, self- against cross-attention, the split into heads and the n² cost.

Every number drawn comes from ``seqlab.labs.attention`` (or the catalogued mistakes of
the catalogued mistakes' mutants where a figure shows what a mistake computes), so a figure cannot drift
from the lessons' worked examples.
"""

from __future__ import annotations

from seqlab.learn.figures.svg import ACCENT, INK, MUTED, SOFT, WARN, Drawing, number
from seqlab.learn.words import say

BLOCKED = "#f3f4f6"               # a masked (invisible) cell
HEAD2_FILL, HEAD2 = "#fef3c7", "#d97706"   # the second head's colour (the first is SOFT / ACCENT)
WRONG_FILL = "#fee2e2"



def _lab():
    from seqlab.labs import attention
    return attention


def _worked():
    """The lessons' worked example: q = [1, 0], keys = the 2x2 identity, values [2, 10]."""
    import numpy as np
    return np.array([1.0, 0.0]), np.eye(2), np.array([2.0, 10.0])


def _grid(d: Drawing, x: float, y: float, cells, *, cw: float = 34, ch: float = 26, rows=(), cols=(),
          size: int = 11, label_size: int = 12) -> None:
    """A matrix of cells; ``cells[i][j]`` is (label, fill, stroke). Row labels go left, column labels above."""
    for i, row in enumerate(cells):
        for j, (label, fill, stroke) in enumerate(row):
            d.box(x + j * cw, y + i * ch, cw, ch, fill=fill, stroke=stroke, radius=0)
            if label:
                d.text(x + j * cw + cw / 2, y + i * ch + ch / 2, label, size=size,
                       color=MUTED if fill == BLOCKED else INK)
    for i, label in enumerate(rows):
        d.text(x - 6, y + i * ch + ch / 2, label, size=label_size, anchor="end")
    for j, label in enumerate(cols):
        d.text(x + j * cw + cw / 2, y - 10, label, size=label_size)


def _shape(d: Drawing, x: float, y: float, rows: int, cols: int, *, cell: float = 13, fill=SOFT, stroke=ACCENT,
           blocks: int = 1) -> tuple[float, float]:
    """A rows x cols matrix drawn as a grid of small cells (its shape, not its numbers); ``blocks`` > 1
    colours contiguous column blocks alternately (the heads). Returns the width and height drawn."""
    width = cols // blocks if blocks > 1 else cols
    for i in range(rows):
        for j in range(cols):
            second = blocks > 1 and (j // width) % 2 == 1
            d.box(x + j * cell, y + i * cell, cell, cell, fill=HEAD2_FILL if second else fill,
                  stroke=HEAD2 if second else stroke, radius=0)
    return cols * cell, rows * cell


# --- trace_attention_weights ------------------------------------------------------------------------------
def attention_two_keys(lang: str) -> str:
    """One query, two keys, two values: the scores, the weights and the mixture of the worked example."""
    q, keys, values = _worked()
    out = _lab().attention(q, keys, values)
    d = Drawing(700, 220)
    heads = [(45, say("figures.attention.query", lang)), (145, say("figures.attention.keys", lang)),
             (270, say("figures.attention.scores_scaled", lang)), (407, say("figures.attention.weights", lang)),
             (515, say("figures.attention.values", lang)), (645, say("figures.common.output", lang))]
    for x, label in heads:
        d.text(x, 18, label, size=12, color=MUTED)
    d.text(340, 200, "softmax", size=12, color=ACCENT)
    d.box(10, 95, 70, 40, "q = [1, 0]", size=12)
    for j, cy in enumerate((65, 165)):
        sub = "₁₂"[j]
        score = out["scores"][j]
        d.arrow(80, 115, 110, cy, color=MUTED)
        d.box(110, cy - 20, 70, 40, f"k{sub} = [{keys[j][0]:g}, {keys[j][1]:g}]", size=12)
        d.arrow(180, cy, 215, cy)
        d.box(215, cy - 20, 110, 40, f"s{sub} = {number(score)}", size=12)
        d.arrow(325, cy, 355, cy, color=ACCENT)
        d.box(355, cy - 20, 105, 40, f"a{sub} = {out['weights'][j]:.6f}", size=12)
        d.arrow(460, cy, 485, cy)
        d.box(485, cy - 20, 60, 40, f"v{sub} = {values[j]:g}", size=12)
        d.arrow(545, cy, 571, 115 + (cy - 115) * 0.25, f"×a{sub}", size=11, offset=-10 if j else 10)
    d.circle(586, 115, 16, "Σ")
    d.arrow(602, 115, 614, 115)
    d.text(618, 115, f"{out['output']:.6f}", size=12, anchor="start", bold=True)
    return d.svg(say("figures.attention.attention_two_keys", lang))


# --- attention ---------------------------------------------------------------------------------------------
def mask_before_softmax(lang: str) -> str:
    """Two queries, two keys, three maps: no mask; key 2 masked before the softmax; masked after it (wrong)."""
    import numpy as np

    from seqlab.learn.catalog import mutant
    att = _lab()
    Q, K, V = np.eye(2), np.eye(2), np.array([2.0, 10.0])
    pad = np.array([True, False])
    panels = [(say("figures.attention.no_mask", lang), att.attention(Q, K, V), None),
              (say("figures.attention.masked_before", lang), att.attention(Q, K, V, pad), pad),
              (say("figures.attention.masked_after", lang),
               mutant("attention", "mask_after_softmax")(Q, K, V, pad), pad)]
    d = Drawing(700, 215)
    for p, (title, out, mask) in enumerate(panels):
        x = 45 + p * 222
        wrong = p == 2
        d.text(x + 64, 20, title, size=12, color=WARN if wrong else INK, bold=True)
        ink = WARN if wrong else ACCENT
        cells = [[(number(out["weights"][i][j]), BLOCKED, MUTED) if mask is not None and not mask[j]
                  else (number(out["weights"][i][j]), WRONG_FILL if wrong else SOFT, ink) for j in range(2)]
                 for i in range(2)]
        _grid(d, x, 62, cells, cw=64, ch=30, rows=("q₁", "q₂"), cols=("k₁", "k₂"))
        sums = out["weights"].sum(axis=1)
        for i in range(2):
            d.text(x + 133, 77 + 30 * i, f"Σ {number(sums[i])}", size=11,
                   color=WARN if wrong else MUTED, anchor="start")
        d.text(x + 64, 150, say("figures.attention.outputs_of_values", lang), size=11, color=MUTED)
        for i in range(2):
            d.text(x + 64, 172 + 20 * i, f"o{'₁₂'[i]} = {number(out['output'][i])}", size=12,
                   color=WARN if wrong else INK)
    return d.svg(say("figures.attention.mask_before_softmax", lang))


def attention_map_shapes(lang: str) -> str:
    """Queries (n, d) against keys (m, d): the (n, m) map, one row per query, then (n, m) x (m, dv)."""
    d = Drawing(700, 190)
    cell = 16
    _shape(d, 20, 60, 3, 2, cell=cell)
    d.text(36, 134, "Q  n×d", size=12)
    _shape(d, 85, 52, 4, 2, cell=cell)
    d.text(101, 134, "K  m×d", size=12)
    d.arrow(130, 84, 200, 84, "QKᵀ/√d", size=11)
    _shape(d, 205, 60, 3, 4, cell=cell)
    d.text(237, 134, "S  n×m", size=12)
    d.arrow(280, 84, 360, 84, "softmax", size=11, color=ACCENT)
    _shape(d, 365, 60, 3, 4, cell=cell)
    d.text(397, 134, "A  n×m", size=12)
    _shape(d, 455, 52, 4, 3, cell=cell, fill=HEAD2_FILL, stroke=HEAD2)
    d.text(479, 134, "V  m×dᵥ", size=12)
    d.arrow(515, 84, 585, 84, "A·V", size=11)
    _shape(d, 590, 60, 3, 3, cell=cell)
    d.text(614, 134, "O  n×dᵥ", size=12)
    d.text(350, 168, say("figures.attention.row_of_a", lang), size=12, color=MUTED)
    return d.svg(say("figures.attention.attention_map_shapes", lang))


# --- explain_scale -------------------------------------------------------------------------------------------
def scale_draw():
    """The explain_scale lesson's draw: one query and four keys of width 64 from a seeded generator."""
    import numpy as np
    rng = np.random.default_rng(0)
    return rng.normal(size=64), rng.normal(size=(4, 64)), np.arange(4.0)


def softmax_saturation(lang: str) -> str:
    """The same four keys scored with and without the 1/√d_k (d_k = 64): a saturated and a spread softmax."""
    from seqlab.learn.catalog import mutant
    q, keys, values = scale_draw()
    panels = [(say("figures.attention.without_scale", lang),
               mutant("attention", "missing_scale")(q, keys, values), WARN, WRONG_FILL),
              (say("figures.attention.with_scale", lang), _lab().attention(q, keys, values), ACCENT, SOFT)]
    d = Drawing(700, 250)
    base, tall = 190, 130
    for p, (title, out, stroke, fill) in enumerate(panels):
        x0 = 40 + p * 340
        d.text(x0 + 135, 20, title, size=13, bold=True)
        d.line(x0, base, x0 + 270, base, color=MUTED)
        for j in range(4):
            w = float(out["weights"][j])
            x = x0 + 15 + j * 65
            h = max(tall * w, 1.0)
            d.box(x, base - h, 40, h, fill=fill, stroke=stroke, radius=0)
            d.text(x + 20, base - h - 10, f"{w:.3f}", size=11)
            d.text(x + 20, base + 14, f"k{'₁₂₃₄'[j]}", size=12)
            d.text(x + 20, base + 34, f"{float(out['scores'][j]):.2f}", size=11, color=MUTED)
        d.text(x0 - 8, base + 34, say("figures.attention.scores_row", lang), size=11, color=MUTED, anchor="end")
    return d.svg(say("figures.attention.softmax_saturation", lang))


# --- attention_backward --------------------------------------------------------------------------------------
def softmax_jacobian(lang: str) -> str:
    """The Jacobian of the worked example's softmax as its two terms: diag(a) - a aᵀ."""
    q, keys, values = _worked()
    a = _lab().attention(q, keys, values)["weights"]
    d = Drawing(700, 180)
    mats = [("diag(a)", [[a[0], 0.0], [0.0, a[1]]], SOFT, ACCENT),
            ("a aᵀ", [[a[0] * a[0], a[0] * a[1]], [a[1] * a[0], a[1] * a[1]]], HEAD2_FILL, HEAD2),
            ("J = ∂a/∂s", [[a[0] - a[0] * a[0], -a[0] * a[1]], [-a[1] * a[0], a[1] - a[1] * a[1]]], SOFT, INK)]
    xs = (40, 275, 510)
    for (title, m, fill, stroke), x in zip(mats, xs):
        d.text(x + 75, 28, title, size=13, bold=True)
        cells = [[(number(v), fill, stroke) for v in row] for row in m]
        _grid(d, x, 65, cells, cw=75, ch=32, rows=("a₁", "a₂"), cols=("s₁", "s₂"), size=12)
    d.text(245, 97, "−", size=22)
    d.text(480, 97, "=", size=22)
    d.text(350, 160, say("figures.attention.jacobian_rows_sum", lang), size=12, color=MUTED)
    return d.svg(say("figures.attention.softmax_jacobian", lang))


def attention_backward_flow(lang: str) -> str:
    """Forward S -> A -> O and, beneath, the gradient of each tensor with its shape."""
    d = Drawing(700, 250)
    d.box(20, 40, 90, 34, "Q  n×d", size=12)
    d.box(20, 110, 90, 34, "K  m×d", size=12)
    d.box(180, 75, 90, 34, "S  n×m", size=12)
    d.box(340, 75, 90, 34, "A  n×m", size=12)
    d.box(500, 75, 90, 34, "O  n×dᵥ", size=12)
    d.box(340, 10, 90, 34, "V  m×dᵥ", size=12)
    d.arrow(110, 57, 180, 86)
    d.arrow(110, 127, 180, 98)
    d.text(142, 92, "QKᵀ/√d", size=10, color=MUTED)
    d.arrow(270, 92, 340, 92, "softmax", size=11, color=ACCENT)
    d.arrow(430, 92, 500, 92, "A·V", size=11)
    d.arrow(430, 27, 500, 82)
    d.text(350, 135, say("figures.attention.backward_note", lang), size=12, color=MUTED)
    rows = [("dA = dO·Vᵀ", "n×m"), ("dV = Aᵀ·dO", "m×dᵥ"), ("dS = A ⊙ (dA − rowsum(dA ⊙ A))", "n×m"),
            ("dQ = dS·K / √d", "n×d"), ("dK = dSᵀ·Q / √d", "m×d")]
    for k, (formula, shape) in enumerate(rows):
        col, row = k % 2, k // 2
        d.text(30 + col * 340, 165 + row * 28, f"{formula}   ({shape})", size=12, anchor="start", color=WARN)
    return d.svg(say("figures.attention.attention_backward_flow", lang))


# --- trace_causal_count ---------------------------------------------------------------------------------------
def causal_grid(lang: str) -> str:
    """The 3x3 causal mask of tokens A, B, C (query rows, key columns) and who reads whom."""
    mask = _lab().causal_mask(3)
    tokens = ("A", "B", "C")
    d = Drawing(700, 250)
    d.text(130, 20, say("figures.attention.queries_by_keys", lang), size=12, color=MUTED)
    cells = [[("✓" if mask[i][j] else "−∞", SOFT if mask[i][j] else BLOCKED, ACCENT if mask[i][j] else MUTED)
              for j in range(3)] for i in range(3)]
    _grid(d, 70, 60, cells, cw=48, ch=38, rows=tokens, cols=tokens, size=13, label_size=13)
    for i in range(3):
        d.text(226, 79 + 38 * i, f"{int(mask[i].sum())}", size=13, color=ACCENT, anchor="start")
    total = int(mask.sum())
    d.text(130, 200, say("figures.attention.visible_total", lang, total=total), size=13, bold=True)
    # who reads whom: outputs above, tokens below, an arrow for each visible (query, key) pair
    d.text(500, 20, say("figures.attention.who_reads_whom", lang), size=12, color=MUTED)
    xs = (400, 500, 600)
    for i, x in enumerate(xs):
        d.box(x - 25, 50, 50, 30, f"o_{tokens[i]}", size=12)
        d.box(x - 25, 170, 50, 30, tokens[i], size=13, fill="#ffffff", stroke=INK)
    for i in range(3):
        for j in range(3):
            if mask[i][j]:
                d.arrow(xs[j] + (i - j) * 6, 170, xs[i] - (i - j) * 8, 80, color=ACCENT if i == j else INK)
    return d.svg(say("figures.attention.causal_grid", lang))


# --- causal_mask ---------------------------------------------------------------------------------------------
def self_and_cross_attention(lang: str) -> str:
    """Encoder self-attention (source x source), decoder causal self-attention (target x target) and
    cross-attention (target x source, rectangular): where queries and keys come from."""
    att = _lab()
    src, tgt = ("x₁", "x₂", "x₃", "x₄"), ("y₁", "y₂", "y₃")
    causal = att.causal_mask(3)
    panels = [(say("figures.attention.encoder_self", lang), say("figures.attention.from_source", lang),
               src, src, lambda i, j: True),
              (say("figures.attention.decoder_self", lang), say("figures.attention.from_target_causal", lang),
               tgt, tgt, lambda i, j: bool(causal[i][j])),
              (say("figures.attention.cross", lang), say("figures.attention.from_target_and_source", lang),
               tgt, src, lambda i, j: True)]
    d = Drawing(700, 225)
    xs = (45, 285, 500)
    for (title, where, rows, cols, visible), x in zip(panels, xs):
        width = 30 * len(cols)
        d.text(x + width / 2, 18, title, size=13, bold=True)
        d.text(x + width / 2, 38, where, size=11, color=MUTED)
        cells = [[("", SOFT if visible(i, j) else BLOCKED, ACCENT if visible(i, j) else MUTED)
                  for j in range(len(cols))] for i in range(len(rows))]
        _grid(d, x, 72, cells, cw=30, ch=30, rows=rows, cols=cols)
        d.text(x + width / 2, 72 + 30 * len(rows) + 18, f"{len(rows)} × {len(cols)}", size=12, color=MUTED)
    return d.svg(say("figures.attention.self_and_cross_attention", lang))


def mask_combined(lang: str) -> str:
    """causal_mask(4) AND a padding mask (3 real tokens of 4) = the mask a padded language-model batch uses."""
    att = _lab()
    causal = att.causal_mask(4)
    pad = att.padding_mask(3, 4, 4)
    both = causal & pad
    tokens = ("A", "B", "C", "pad")
    panels = [(say("figures.attention.causal", lang), causal), (say("figures.attention.padding_keys", lang), pad),
              (say("figures.attention.causal_and_padding", lang), both)]
    d = Drawing(700, 210)
    for p, (title, m) in enumerate(panels):
        x = 60 + p * 225
        d.text(x + 56, 18, title, size=13, bold=True)
        cells = [[("", SOFT if m[i][j] else BLOCKED, ACCENT if m[i][j] else MUTED) for j in range(4)] for i in range(4)]
        _grid(d, x, 56, cells, cw=28, ch=28, rows=tokens, cols=tokens, label_size=11)
        d.text(x + 56, 190, say("figures.attention.visible", lang, count=int(m.sum())), size=12, color=MUTED)
    d.text(222, 112, "∧", size=20)
    d.text(447, 112, "=", size=20)
    return d.svg(say("figures.attention.mask_combined", lang))


# --- trace_head_shapes and multihead_attention -----------------------------------------------------------------
def head_split(lang: str) -> str:
    """X (3x4) -> Q (3x4) split into two contiguous column blocks -> per head a 3x3 map and a 3x2 mixture ->
    the concatenation (3x4) -> the output projection (3x4); the shapes are measured by the lab."""
    s = _lab().multihead_shapes(3, 4, 2)
    cell = 14
    d = Drawing(700, 270)

    def label(x, y, name, shape):
        d.text(x, y, name, size=12)
        d.text(x, y + 16, f"{shape[0]}×{shape[1]}", size=11, color=MUTED)

    _shape(d, 15, 105, *s["x"], cell=cell, fill="#ffffff", stroke=INK)
    label(15 + 2 * cell, 165, "X", s["x"])
    d.arrow(75, 126, 115, 126, "·W_q", size=11)
    _shape(d, 120, 105, 3, 4, cell=cell, blocks=2)
    label(120 + 2 * cell, 165, "Q", s["concat"])
    lanes = (55, 180)
    for h, cy in enumerate(lanes):
        fill, stroke = (SOFT, ACCENT) if h == 0 else (HEAD2_FILL, HEAD2)
        sub = "₁₂"[h]
        d.arrow(178, 126, 228, cy, color=stroke)
        _shape(d, 232, cy - 21, *s["q"], cell=cell, fill=fill, stroke=stroke)
        label(232 + cell, cy + 32, f"Q{sub}", s["q"])
        d.arrow(264, cy, 306, cy, f"·K{sub}ᵀ", size=11, color=stroke)
        _shape(d, 310, cy - 21, *s["scores"], cell=cell, fill=fill, stroke=stroke)
        label(310 + 1.5 * cell, cy + 32, say("figures.attention.head_map", lang, sub=sub), s["scores"])
        d.arrow(356, cy, 398, cy, f"·V{sub}", size=11, color=stroke)
        _shape(d, 402, cy - 21, *s["head_output"], cell=cell, fill=fill, stroke=stroke)
        label(402 + cell, cy + 32, say("figures.attention.head_number", lang, n=h + 1), s["head_output"])
        d.arrow(434, cy, 480, 126, color=stroke)
    _shape(d, 484, 105, *s["concat"], cell=cell, blocks=2)
    label(484 + 2 * cell, 165, say("figures.common.concat", lang), s["concat"])
    d.arrow(542, 126, 590, 126, "·W_o", size=11)
    _shape(d, 594, 105, *s["output"], cell=cell, fill="#ffffff", stroke=INK)
    label(594 + 2 * cell, 165, say("figures.common.output", lang), s["output"])
    d.text(350, 258, say("figures.attention.kv_split_too", lang), size=12, color=MUTED)
    return d.svg(say("figures.attention.head_split", lang))


def attention_cost(lang: str) -> str:
    """Doubling n doubles the rows of the projections and quadruples the cells of every score map."""
    att = _lab()
    d = Drawing(700, 260)
    cell = 14
    for p, n in enumerate((3, 6)):
        s = att.multihead_shapes(n, 4, 2)
        x0 = 30 + p * 340
        d.text(x0 + 140, 18, f"n = {n}", size=14, bold=True)
        _shape(d, x0, 50, *s["x"], cell=cell, fill="#ffffff", stroke=INK)
        d.text(x0 + 28, 50 + n * cell + 16, f"X {n}×4", size=12)
        d.text(x0 + 28, 50 + n * cell + 34, say("figures.attention.rows_to_project", lang, n=n), size=11, color=MUTED)
        _shape(d, x0 + 130, 50, *s["scores"], cell=cell)
        cells = s["scores"][0] * s["scores"][1]
        d.text(x0 + 130 + n * cell / 2, 50 + n * cell + 16, f"{n}×{n}", size=12)
        d.text(x0 + 130 + n * cell / 2, 50 + n * cell + 34,
               say("figures.attention.scores_per_head", lang, cells=cells), size=11, color=MUTED)
    d.text(350, 245, say("figures.attention.twice_the_tokens", lang), size=12, color=MUTED)
    return d.svg(say("figures.attention.attention_cost", lang))


def kv_cache_step(lang: str) -> str:
    """Generating token 4: one new query row against the cached keys and values of tokens 1-3 plus its own."""
    d = Drawing(700, 230)
    tokens = ("A", "B", "C", "D")
    mask = _lab().causal_mask(4)
    cells = []
    for i in range(4):
        row = []
        for j in range(4):
            if i < 3:
                row.append(("" if mask[i][j] else "−∞", "#e5e7eb" if mask[i][j] else BLOCKED, MUTED))
            else:
                row.append(("", SOFT, ACCENT))
        cells.append(row)
    _grid(d, 80, 50, cells, cw=36, ch=30, rows=tokens, cols=tokens)
    d.text(300, 75, say("figures.attention.cached_rows", lang), size=12, color=MUTED, anchor="start")
    d.text(300, 155, say("figures.attention.new_row", lang), size=12, color=ACCENT, anchor="start")
    d.text(300, 175, say("figures.attention.new_row_keys", lang), size=12, color=ACCENT, anchor="start")
    d.arrow(296, 155, 230, 155, color=ACCENT)
    d.text(152, 200, say("figures.attention.kv_cache", lang), size=12, color=MUTED)
    return d.svg(say("figures.attention.kv_cache_step", lang))


FIGURES = {
    "attention_two_keys": attention_two_keys,
    "attention_map_shapes": attention_map_shapes,
    "mask_before_softmax": mask_before_softmax,
    "softmax_saturation": softmax_saturation,
    "softmax_jacobian": softmax_jacobian,
    "attention_backward_flow": attention_backward_flow,
    "causal_grid": causal_grid,
    "self_and_cross_attention": self_and_cross_attention,
    "mask_combined": mask_combined,
    "head_split": head_split,
    "attention_cost": attention_cost,
    "kv_cache_step": kv_cache_step,
}
