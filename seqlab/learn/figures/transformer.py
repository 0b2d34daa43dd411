"""Figures of the Transformer LM lessons: BPE merges and special tokens, softmax's overflow, RMSNorm,
SwiGLU, RoPE, batched attention with masks, the pre-norm block and the LM as a stack of shapes.

Every number drawn comes from seqlab's own code (seqlab.tokenizer, seqlab.model, the exercises'
references, or a catalogued mistake's mutant where a figure shows what a mistake computes: both through
seqlab.learn.catalog). The lessons' worked inputs live here too
(``*_example`` functions), so a figure and the numbers its lesson prints cannot drift apart.
"""

from __future__ import annotations

from seqlab.learn.figures.attention import BLOCKED, _grid   # the attention lessons' matrix of cells
from seqlab.learn.figures.svg import ACCENT, INK, MUTED, SOFT, WARN, Drawing, number
from seqlab.learn.words import say

GATE_FILL, GATE = "#fef3c7", "#d97706"     # a second colour: the gate branch, a second head, the stream
WRONG_FILL = "#fee2e2"
WHITE = "#ffffff"

# The CS336 handout's word counts, the lessons' BPE example (also the explorer's BPE widget default)
HANDOUT_WORDS = {"low": 5, "lower": 2, "widest": 3, "newest": 6}



def _tensor(rows, dtype=None):
    import torch
    return torch.tensor(rows, dtype=dtype or torch.float64)


# --- choose_merge ---------------------------------------------------------------------------------------------
def bpe_first_merge(lang: str) -> str:
    """The handout's four words split into bytes, the counts of every adjacent pair (bars), the two tied
    pairs at the top and the one the rule merges."""
    from seqlab.tokenizer import merge_trace
    step = merge_trace(HANDOUT_WORDS, 1)[0]
    d = Drawing(700, 330)
    d.text(120, 18, say("figures.transformer.words_in_bytes", lang), size=12, color=MUTED)
    for k, (word, count) in enumerate(HANDOUT_WORDS.items()):
        y = 48 + k * 44
        for j, ch in enumerate(word):
            d.box(20 + j * 26, y, 24, 28, ch, fill=WHITE, stroke=INK, radius=3)
        d.text(20 + len(word) * 26 + 8, y + 14, f"× {count}", size=13, anchor="start", bold=True)
    d.text(120, 240, say("figures.transformer.pair_count", lang), size=11, color=MUTED)
    d.text(120, 258, say("figures.transformer.pair_count_summed", lang), size=11, color=MUTED)
    d.text(120, 276, "newest: n e, e w, w e, e s, s t", size=11, color=MUTED)
    x0, scale = 360, 20
    d.text(x0 + 120, 18, say("figures.transformer.pair_counts_title", lang), size=12, color=MUTED)
    tied = {tuple(p) for p in step["tied"]}
    chosen = tuple(step["chosen"])
    for k, (left, right, count) in enumerate(step["pair_counts"]):
        y = 36 + k * 24
        top = (left, right) in tied
        fill, stroke = (SOFT, ACCENT) if top else (BLOCKED, MUTED)
        d.text(x0 + 26, y + 10, f"{left} {right}", size=13, anchor="end", bold=(left, right) == chosen)
        d.box(x0 + 34, y, count * scale, 20, fill=fill, stroke=stroke, radius=2)
        d.text(x0 + 40 + count * scale, y + 10, str(count), size=12, anchor="start")
    d.text(x0 + 34 + 9 * scale + 26, 46, say("figures.transformer.merged", lang), size=12, color=ACCENT, anchor="start",
           bold=True)
    d.text(x0 + 34 + 9 * scale + 26, 70, say("figures.transformer.tied_smaller", lang), size=11, color=MUTED,
           anchor="start")
    d.text(350, 318, say("figures.transformer.tie_rule", lang), size=12)
    return d.svg(say("figures.transformer.bpe_first_merge", lang))


# --- train_bpe ------------------------------------------------------------------------------------------------
SPECIAL = "<|endoftext|>"


def bpe_corpus_counts():
    """Pre-token counts of the train_bpe exercise's worked corpus: split on the special token, then GPT-2's
    regex (seqlab's own functions, as the trainer calls them)."""
    from seqlab.learn.courses import builtin
    from seqlab.tokenizer.pretokenize import count_pretokens, gpt2_pretokenize, special_tokens_regex
    corpus = builtin().folder("train_bpe").module().CORPUS
    return count_pretokens(corpus, special_tokens_regex([SPECIAL]), gpt2_pretokenize)


def bpe_worked_vocab():
    """(vocab, merges) of the reference train_bpe on the exercise's worked case (vocab_size 269)."""
    from seqlab.learn.courses import builtin
    from seqlab.learn.catalog import reference
    return reference("train_bpe")(*builtin().folder("train_bpe").module().cases()[0].args)


def _shown(token: bytes | str) -> str:
    text = token.decode("utf-8", "replace") if isinstance(token, bytes) else token
    return text.replace(" ", "␣")


def bpe_training_pipeline(lang: str) -> str:
    """The worked corpus cut at its special tokens, its pre-tokens with their counts, and the vocabulary
    the merges build: the special token first, then the 256 bytes, then one token per merge."""
    from seqlab.tokenizer.trainer import train_bpe_from_counts
    counts = bpe_corpus_counts()
    # the merge loop of seqlab's trainer on those counts: train_bpe without the file (the lesson's numbers
    # come from the exercise's reference on the file itself, bpe_worked_vocab)
    vocab, merges = train_bpe_from_counts(counts, 256 + 1 + 12, [SPECIAL])
    d = Drawing(700, 360)
    d.text(350, 16, say("figures.transformer.pipeline_cut", lang), size=12, color=MUTED)
    pieces = [("low low … lower … widest … newest", False), (SPECIAL, True), ("…", False), (SPECIAL, True),
              ("ab", False), (SPECIAL, True), ("cd0", False), (SPECIAL, True), ("…", False)]
    widths = [200, 86, 24, 86, 32, 86, 38, 86, 24]
    x = (700 - sum(widths)) / 2
    for (label, special), w in zip(pieces, widths):
        if special:
            d.box(x, 34, w - 2, 28, label, fill=BLOCKED, stroke=MUTED, size=10, radius=2, dashed=True)
            d.line(x, 28, x, 68, color=WARN)
            d.line(x + w - 2, 28, x + w - 2, 68, color=WARN)
        else:
            d.box(x, 34, w - 2, 28, label, fill=WHITE, stroke=INK, size=11, radius=2)
        x += w
    d.text(350, 84, say("figures.transformer.specials_aside", lang), size=11, color=WARN)
    d.text(350, 112, say("figures.transformer.pipeline_pretokens", lang), size=12, color=MUTED)
    order = sorted(counts, key=lambda k: (-counts[k], k))
    x = 8
    for token in order:
        label = f"{_shown(token)} ×{counts[token]}"
        w = 14 + 7.2 * len(label)
        d.box(x, 128, w, 26, label, fill=SOFT, stroke=ACCENT, size=11, radius=10)
        x += w + 6
    d.text(350, 180, say("figures.transformer.pipeline_no_crossing", lang), size=12, color=MUTED)
    d.text(350, 212, say("figures.transformer.pipeline_vocab", lang), size=12, color=MUTED)
    n_special = len(vocab) - 256 - len(merges)
    d.box(10, 228, 110, 40, "", fill=BLOCKED, stroke=MUTED, radius=2)
    d.text(65, 240, "0" if n_special == 1 else f"0 … {n_special - 1}", size=11, color=MUTED)
    d.text(65, 256, SPECIAL, size=10)
    d.box(124, 228, 190, 40, "", fill=WHITE, stroke=INK, radius=2)
    d.text(219, 240, f"{n_special} … {n_special + 255}", size=11, color=MUTED)
    d.text(219, 256, say("figures.transformer.single_bytes", lang), size=11)
    first = n_special + 256
    d.box(318, 228, 372, 40, "", fill=GATE_FILL, stroke=GATE, radius=2)
    d.text(504, 240, f"{first} … {len(vocab) - 1}: " + say("figures.transformer.merges_in_order", lang, n=len(merges)),
           size=11, color=MUTED)
    d.text(504, 256, " ".join(_shown(a + b) for a, b in merges), size=10)
    d.text(350, 296, f"vocab_size = {n_special} + 256 + {len(merges)} = {len(vocab)}", size=13, bold=True)
    d.text(350, 322, say("figures.transformer.merges_from_counts", lang), size=11, color=MUTED)
    return d.svg(say("figures.transformer.bpe_training_pipeline", lang))


# --- softmax -------------------------------------------------------------------------------------------------
def softmax_example():
    """The softmax exercise's worked example: two rows, the second with logits near 1000."""
    return _tensor([[1.0, 2.0, 3.0], [1000.0, 1000.0, 1001.0]])


def softmax_overflow(lang: str) -> str:
    """Row [1000, 1000, 1001]: exp straight away overflows to inf and inf/inf is NaN; with the maximum
    subtracted first the exponentials are at most 1 and the result is the softmax of [−1, −1, 0]."""
    from seqlab.learn.catalog import mutant, reference
    x = softmax_example()
    row = x[1]
    good = reference("softmax")(x)[1]
    bad = mutant("softmax", "max_not_subtracted")(x)[1]
    shifted = row - row.max()
    d = Drawing(700, 300)
    cw = 72

    def values(y, label, vals, *, fill=WHITE, stroke=INK, fmt=number, note=""):
        d.text(x0 - 10, y + 14, label, size=12, anchor="end")
        for j, v in enumerate(vals):
            v = float(v)
            text = "inf" if v == float("inf") else ("NaN" if v != v else fmt(v))
            d.box(x0 + j * cw, y, cw - 6, 28, text, fill=fill, stroke=stroke, size=12, radius=2)
        if note:
            d.text(x0 + 3 * cw + 4, y + 14, note, size=11, color=MUTED, anchor="start")

    for p, title in enumerate((say("figures.transformer.exp_first", lang), say("figures.transformer.max_first", lang))):
        x0 = 80 + p * 390
        d.text(x0 + 105, 18, title, size=13, bold=True, color=WARN if p == 0 else INK)
        values(36, "x", row, fmt=lambda v: f"{v:g}".replace("-", "−"))
        if p == 0:
            values(96, "exp(x)", row.exp(), fill=WRONG_FILL, stroke=WARN)
            values(156, "Σ", [row.exp().sum()], fill=WRONG_FILL, stroke=WARN)
            values(216, "÷ Σ", bad, fill=WRONG_FILL, stroke=WARN)
        else:
            values(76, "x − m", shifted, fmt=lambda v: f"{v:g}".replace("-", "−"))
            values(126, "exp", shifted.exp())
            values(176, "Σ", [shifted.exp().sum()])
            values(226, "÷ Σ", good, fill=SOFT, stroke=ACCENT)
    d.line(375, 30, 375, 260, color=MUTED, dashed=True)
    d.text(350, 284, say("figures.transformer.overflow_limits", lang), size=11, color=MUTED)
    return d.svg(say("figures.transformer.softmax_overflow", lang))


# --- rms_norm --------------------------------------------------------------------------------------------------
def rms_norm_example():
    """The rms_norm exercise's worked example: rows [3, 4] and [0.001, −0.001], gain [1, 2], eps 1e-5."""
    return _tensor([[3.0, 4.0], [1e-3, -1e-3]]), _tensor([1.0, 2.0]), 1e-5


def rmsnorm_vs_layernorm(lang: str) -> str:
    """Left: x = [3, 4] in the plane; RMSNorm keeps its direction and puts it on the circle of radius √2
    (mean square 1), centring first (LayerNorm without gain) turns it into [−1, 1]. Right: the tiny row
    [0.001, −0.001] with eps inside and outside the root."""
    import math

    import torch

    from seqlab.learn.catalog import mutant, reference
    x, weight, eps = rms_norm_example()
    ones = torch.ones_like(weight)
    rms = reference("rms_norm")(x, ones, eps)[0]
    centred = mutant("rms_norm", "mean_subtracted")(x, ones, eps)[0]
    d = Drawing(700, 300)
    ox, oy, unit = 150, 215, 40
    d.line(ox - 3 * unit, oy, ox + 4.6 * unit, oy, color=MUTED, width=1)
    d.line(ox, oy + 1.8 * unit, ox, oy - 4.6 * unit, color=MUTED, width=1)
    r = math.sqrt(2) * unit
    d.parts.append(f'<circle cx="{ox}" cy="{oy}" r="{r:.1f}" fill="none" stroke="{MUTED}" stroke-width="1" '
                   f'stroke-dasharray="3 3"/>')
    d.text(ox + r * 0.72 + 4, oy + r * 0.72 + 10, say("figures.transformer.radius_note", lang),
           size=11, color=MUTED, anchor="start")

    def point(v, label, color, anchor="start", dx=6, dy=-8):
        px, py = ox + float(v[0]) * unit, oy - float(v[1]) * unit
        d.arrow(ox, oy, px, py, color=color, width=2)
        d.text(px + dx, py + dy, label, size=12, color=color, anchor=anchor)

    point(x[0], "x = [3, 4]", INK)
    point(rms, f"RMSNorm: [{number(rms[0])}, {number(rms[1])}]", ACCENT, dx=8, dy=8)
    c0, c1 = (number(v, 2).replace("-", "−") for v in centred)
    point(centred, say("figures.transformer.centred_first", lang, c0=c0, c1=c1), WARN, anchor="start", dx=-80, dy=-30)
    d.text(ox + 40, 20, say("figures.transformer.same_direction", lang), size=12, color=ACCENT)
    # right: eps inside against outside the root on the tiny row
    tiny = x[1:]
    inside = reference("rms_norm")(tiny, weight, eps)[0]
    outside = mutant("rms_norm", "eps_outside_the_root")(tiny, weight, eps)[0]
    x0 = 400
    d.text(x0 + 140, 20, say("figures.transformer.tiny_row", lang), size=12, bold=True)
    output = "   " + say("figures.common.output", lang)
    rows = [("mean(x²)", f"{float((tiny ** 2).mean()):.0e}".replace("-0", "−"), INK),
            (say("figures.transformer.eps_inside", lang), number(math.sqrt(float((tiny ** 2).mean()) + eps)), ACCENT),
            (output, f"[{number(inside[0])}, {number(inside[1])}]".replace("-", "−"), ACCENT),
            (say("figures.transformer.eps_outside", lang), number(math.sqrt(float((tiny ** 2).mean())) + eps), WARN),
            (output, f"[{number(outside[0])}, {number(outside[1])}]".replace("-", "−"), WARN)]
    for k, (label, value, color) in enumerate(rows):
        y = 60 + k * 34
        d.text(x0, y, label, size=12, anchor="start", color=color)
        d.text(x0 + 290, y, value, size=12, anchor="end", color=color, bold=True)
    d.text(x0 + 140, 240, say("figures.transformer.eps_note", lang), size=11, color=MUTED)
    d.text(x0 + 140, 258, say("figures.transformer.eps_note_placement", lang), size=11, color=MUTED)
    return d.svg(say("figures.transformer.rmsnorm_vs_layernorm", lang))


# --- swiglu ---------------------------------------------------------------------------------------------------
def swiglu_example():
    """The swiglu lesson's example in torch's (out, in) layout: x = [1, 2] (d_model 2), d_ff 3, chosen so
    that w1 x = [2, −1, 0] and w3 x = [1, 3, 5]. Returns (x, w1_weight, w2_weight, w3_weight)."""
    x = _tensor([1.0, 2.0])
    w1 = _tensor([[2.0, 0.0], [1.0, -1.0], [2.0, -1.0]])
    w3 = _tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
    w2 = _tensor([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])
    return x, w1, w2, w3


def _polyline(d: Drawing, points, *, color: str = INK, width: float = 2, dashed: bool = False) -> None:
    dash = ' stroke-dasharray="4 3"' if dashed else ""
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    d.parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="{width}"{dash}/>')


def swiglu_block(lang: str) -> str:
    """Left: the SwiGLU feed-forward with every shape: two projections up to d_ff, SiLU on one, an
    elementwise product, the projection down. Right: SiLU(a) = a·σ(a) against ReLU."""
    import torch

    from seqlab.model.activations import silu
    d = Drawing(700, 300)
    d.box(20, 125, 96, 40, "x  (…, d_model)", fill=WHITE, stroke=INK, size=11)
    d.arrow(116, 135, 160, 85)
    d.arrow(116, 155, 160, 205)
    d.box(160, 62, 96, 40, "a = x·w1ᵀ", size=12)
    d.text(208, 114, "(…, d_ff)", size=11, color=MUTED)
    d.box(160, 185, 96, 40, "b = x·w3ᵀ", size=12)
    d.text(208, 237, "(…, d_ff)", size=11, color=MUTED)
    d.arrow(256, 82, 280, 82)
    d.box(280, 62, 70, 40, "SiLU(a)", fill=GATE_FILL, stroke=GATE, size=12)
    d.arrow(350, 82, 372, 133)
    d.arrow(256, 205, 372, 157)
    d.circle(385, 145, 15, "⊙", size=15)
    d.text(390, 188, "h  (…, d_ff)", size=11, color=MUTED)
    d.arrow(400, 145, 420, 145)
    d.box(420, 125, 72, 40, "h·w2ᵀ", size=12)
    d.text(456, 112, "(…, d_model)", size=11, color=MUTED)
    d.text(160, 30, say("figures.transformer.gate_branch", lang), size=12, color=GATE, anchor="start")
    d.text(160, 262, say("figures.transformer.linear_branch", lang), size=12, color=ACCENT, anchor="start")
    d.text(250, 288, say("figures.transformer.weight_shapes", lang), size=11, color=MUTED)
    # right: SiLU against ReLU on [-4, 3]
    ox, oy, unit = 575, 190, 26
    d.line(ox - 4.2 * unit, oy, ox + 3.7 * unit, oy, color=MUTED, width=1)
    d.line(ox, oy + 1.2 * unit, ox, oy - 3.6 * unit, color=MUTED, width=1)
    grid = torch.linspace(-4.0, 3.0, 71, dtype=torch.float64)
    _polyline(d, [(ox + float(a) * unit, oy - float(max(a, 0.0)) * unit) for a in grid], color=MUTED, dashed=True)
    _polyline(d, [(ox + float(a) * unit, oy - float(v) * unit) for a, v in zip(grid, silu(grid))], color=GATE)
    for a in (2.0, -1.0):
        v = float(silu(torch.tensor(a, dtype=torch.float64)))
        d.circle(ox + a * unit, oy - v * unit, 3, fill=GATE, stroke=GATE)
        d.text(ox + a * unit - 8, oy - v * unit + (-6 if a > 0 else 14),
               f"({a:g}, {number(v)})".replace("-", "−"), size=10, anchor="end")
    d.text(ox, 24, "SiLU(a) = a·σ(a)", size=12, color=GATE, bold=True)
    d.text(ox, 42, say("figures.transformer.dashed_relu", lang), size=11, color=MUTED)
    d.text(ox + 3.7 * unit, oy + 14, "a", size=11, color=MUTED)
    return d.svg(say("figures.transformer.swiglu_block", lang))


# --- rotate_pairs ---------------------------------------------------------------------------------------------
def rope_example():
    """The rotate_pairs exercise's worked example: x = [1, 0, 0, 1] at positions 0, 1, 2 (d = 4,
    theta = 10000), with the check's own cos/sin tables (3, 2). Returns (x, cos, sin)."""
    from seqlab.learn.courses import builtin
    return builtin().folder("rotate_pairs").module().cases()[0].args


def rope_rotation(lang: str) -> str:
    """Left: pair 0 of x rotated by 1 radian per position, pair 1 by 0.01. Right: the dot products of the
    rotated rows, equal along each diagonal: they depend on the offset i − j only."""
    import math

    from seqlab.learn.catalog import reference
    x, cos, sin = rope_example()
    y = reference("rotate_pairs")(x, cos, sin)
    dots = y @ y.T
    d = Drawing(700, 300)
    colours = (INK, ACCENT, GATE)
    for p, (cx, title) in enumerate(((120, say("figures.transformer.pair_fast", lang)),
                                     (330, say("figures.transformer.pair_slow", lang)))):
        cy, r = 160, 70
        d.text(cx, 28, title, size=12, bold=True)
        d.parts.append(f'<circle cx="{cx}" cy="{cy}" r="{r}" fill="none" stroke="{MUTED}" stroke-width="1" '
                       f'stroke-dasharray="3 3"/>')
        d.line(cx - r - 10, cy, cx + r + 10, cy, color=MUTED, width=1)
        d.line(cx, cy + r + 10, cx, cy - r - 10, color=MUTED, width=1)
        for i in range(3):
            a, b = float(y[i, 2 * p]), float(y[i, 2 * p + 1])
            d.arrow(cx, cy, cx + a * r, cy - b * r, color=colours[i], width=2)
            if p == 0:
                d.text(cx + a * (r + 16), cy - b * (r + 16), f"i = {i}", size=11, color=colours[i])
        if p == 1:
            d.text(cx + 14, cy - r - 18, "i = 0, 1, 2", size=11, color=MUTED, anchor="start")
        angle = math.atan2(float(sin[1, p]), float(cos[1, p]))
        d.text(cx, cy + r + 30, say("figures.transformer.angle_per_position", lang, angle=f"{angle:g}"), size=11,
               color=MUTED)
    x0, y0, cw = 500, 90, 58
    d.text(x0 + 1.5 * cw, 28, say("figures.transformer.rope_scores", lang), size=12, bold=True)
    fills = {0: (SOFT, ACCENT), 1: (GATE_FILL, GATE), 2: ("#dcfce7", "#16a34a")}
    cells = [[(number(dots[i, j]), *fills[abs(i - j)]) for j in range(3)] for i in range(3)]
    _grid(d, x0, y0, cells, cw=cw, ch=32, rows=("i = 0", "1", "2"), cols=("j = 0", "1", "2"), size=11)
    d.text(x0 + 1.5 * cw, y0 + 3 * 32 + 24, say("figures.transformer.equal_diagonals", lang), size=11, color=MUTED)
    d.text(x0 + 1.5 * cw, y0 + 3 * 32 + 42, say("figures.transformer.offset_only", lang), size=11, color=MUTED)
    return d.svg(say("figures.transformer.rope_rotation", lang))


# --- scaled_dot_product_attention ----------------------------------------------------------------------------
def sdpa_example():
    """The check's worked example: Q = K = the 2x2 identity, V = [[1, 2], [3, 4]] (use causal=True)."""
    from seqlab.learn.courses import builtin
    return builtin().folder("scaled_dot_product_attention").module().cases()[0].args


def _stack(d: Drawing, x: float, y: float, w: float, h: float, label: str, shape: str, *, layers: int = 3,
           fill: str = SOFT, stroke: str = ACCENT) -> None:
    """A tensor with leading (batch, head) dimensions drawn as a few offset sheets; the front one is labelled."""
    for k in reversed(range(layers)):
        d.box(x + 6 * k, y - 6 * k, w, h, fill=fill if k == 0 else WHITE, stroke=stroke, radius=2)
    d.text(x + w / 2, y + h / 2, label, size=13, bold=True)
    d.text(x + w / 2 + 6, y + h + 16, shape, size=11, color=MUTED)


def batched_attention(lang: str) -> str:
    """Q, K, V with leading dims (…) = (batch, heads); scores (…, n, m); one boolean (n, m) mask broadcast
    over the leading dims; the softmax along the keys; weights times V -> (…, n, d_v)."""
    d = Drawing(700, 330)
    _stack(d, 14, 60, 56, 70, "Q", "(…, n, d_k)")
    _stack(d, 14, 190, 56, 56, "K", "(…, m, d_k)")
    d.arrow(84, 95, 146, 115)
    d.arrow(84, 215, 146, 135)
    d.text(122, 66, "Q·Kᵀ/√d_k", size=11, color=MUTED)
    _stack(d, 150, 90, 70, 70, "S", "(…, n, m)")
    d.arrow(232, 125, 330, 125, "where(M, S, −∞)", size=11, color=WARN, offset=12)
    mask = [[j <= i for j in range(4)] for i in range(4)]
    cells = [[("", SOFT if mask[i][j] else BLOCKED, ACCENT if mask[i][j] else MUTED) for j in range(4)]
             for i in range(4)]
    _grid(d, 253, 200, cells, cw=14, ch=14, label_size=10)
    d.arrow(281, 196, 281, 132, color=WARN, dashed=True)
    d.text(281, 274, say("figures.transformer.mask_shape", lang), size=11, color=MUTED)
    d.text(281, 292, say("figures.transformer.mask_broadcast", lang), size=11, color=MUTED)
    _stack(d, 336, 90, 70, 70, "A", "(…, n, m)")
    d.text(377, 58, say("figures.transformer.softmax_keys", lang), size=11, color=ACCENT)
    _stack(d, 470, 200, 56, 56, "V", "(…, m, d_v)", fill=GATE_FILL, stroke=GATE)
    d.arrow(418, 125, 560, 125, "A·V", size=11)
    d.arrow(510, 190, 560, 140)
    _stack(d, 566, 90, 56, 70, "O", "(…, n, d_v)")
    d.text(350, 318, say("figures.transformer.leading_dims", lang), size=12, color=MUTED)
    return d.svg(say("figures.transformer.batched_attention", lang))


# --- causal_multihead_self_attention -------------------------------------------------------------------------
def mhsa_example():
    """The multi-head lesson's example in torch's (out, in) layout: x (1, 2, 4) = [[1, 0, 1, 1], [0, 1, 1, 1]],
    W_q = W_k = W_o = I, v_weight chosen so that V = [[2, 0, 2, 0], [0, 10, 0, 10]], two heads.
    Returns the exercise's arguments (x, q_weight, k_weight, v_weight, o_weight, num_heads)."""
    import torch
    x = _tensor([[[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 1.0]]])
    eye = torch.eye(4, dtype=torch.float64)
    v = _tensor([[2.0, 0.0, 0.0, 0.0], [0.0, 10.0, 0.0, 0.0], [2.0, 0.0, 0.0, 0.0], [0.0, 10.0, 0.0, 0.0]])
    return x, eye, eye.clone(), v, eye.clone(), 2


def mhsa_heads_view(lang: str) -> str:
    """The causal multi-head layer as tensor shapes: projections, a view that splits d_model into H
    contiguous blocks, the head axis moved next to the batch, one batched causal attention, and back."""
    d = Drawing(700, 320)
    stages_top = [("x", "(B, n, d)"), ("Q, K, V", "(B, n, d)"), ("view", "(B, n, H, w)"), ("transpose", "(B, H, n, w)")]
    ops_top = ["·W_qᵀ, W_kᵀ, W_vᵀ", ".view(…, H, w)", ".transpose(−3, −2)"]
    stages_bottom = [(say("figures.transformer.attention", lang), "(B, H, n, w)"), ("transpose", "(B, n, H, w)"),
                     (say("figures.common.concat", lang), "(B, n, d)"),
                     (say("figures.common.output", lang), "(B, n, d)")]
    ops_bottom = [".transpose(−3, −2)", ".reshape(…, d)", "·W_oᵀ"]
    xs = (20, 200, 380, 560)
    for row, (stages, ops, y) in enumerate(((stages_top, ops_top, 40), (stages_bottom, ops_bottom, 170))):
        for k, ((name, shape), x) in enumerate(zip(stages, xs)):
            special = row == 1 and k == 0
            d.box(x, y, 120, 44, name, fill=GATE_FILL if special else SOFT, stroke=GATE if special else ACCENT,
                  size=12)
            d.text(x + 60, y + 60, shape, size=12, color=MUTED)
            if k < 3:
                d.arrow(x + 120, y + 22, xs[k + 1], y + 22)
                d.text((x + 120 + xs[k + 1]) / 2, y - 8, ops[k], size=11, color=MUTED)
    d.arrow(620, 118, 620, 140, color=INK)
    d.line(620, 140, 80, 140, color=INK)
    d.arrow(80, 140, 80, 168, color=INK)
    d.text(350, 132, say("figures.transformer.one_batched_attention", lang), size=11, color=GATE)
    # the split of d into H contiguous blocks
    d.text(160, 277, say("figures.transformer.head_columns", lang), size=12, anchor="end")
    for j in range(8):
        second = j >= 4
        d.box(170 + j * 22, 265, 22, 22, fill=GATE_FILL if second else SOFT, stroke=GATE if second else ACCENT,
              radius=0)
    d.text(214, 301, say("figures.transformer.head_n", lang, n=1), size=11, color=ACCENT)
    d.text(302, 301, say("figures.transformer.head_n", lang, n=2), size=11, color=GATE)
    d.text(360, 277, say("figures.transformer.head_blocks", lang), size=11, color=MUTED, anchor="start")
    return d.svg(say("figures.transformer.mhsa_heads_view", lang))


# --- transformer_block ----------------------------------------------------------------------------------------
def block_example(tokens: int = 1, zero_outputs: bool = False):
    """The block lesson's example: d_model 2, one head, d_ff 2, every weight the identity (gains 1); the
    sequence [3, 4] (tokens=1) or [3, 4], [0, 1] (tokens=2). zero_outputs sets W_o and w2 to zero.
    Returns the exercise's arguments (x, weights, num_heads)."""
    import torch
    eye = torch.eye(2, dtype=torch.float64)
    names = ("attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight", "attn.output_proj.weight",
             "ffn.w1.weight", "ffn.w2.weight", "ffn.w3.weight")
    weights = {"ln1.weight": _tensor([1.0, 1.0]), "ln2.weight": _tensor([1.0, 1.0])}
    for name in names:
        weights[name] = eye * (0.0 if zero_outputs and name in ("attn.output_proj.weight", "ffn.w2.weight") else 1.0)
    rows = [[3.0, 4.0], [0.0, 1.0]][:tokens]
    return _tensor([rows]), weights, 1


def block_steps() -> dict:
    """The one-token block example step by step, with seqlab's own rms_norm and silu: h1, z, rms(z), h2,
    sigmoid(h2), silu(h2), f (each a (2,) tensor; rms_z a 0-d tensor). Attention over one token returns
    its own value, W_o W_v h1 = h1 with identity weights."""
    from seqlab.model.activations import silu
    from seqlab.model.rmsnorm import rms_norm
    x, weights, _ = block_example()
    x = x[0, 0]
    h1 = rms_norm(x, weights["ln1.weight"])
    z = x + h1
    h2 = rms_norm(z, weights["ln2.weight"])
    return {"h1": h1, "z": z, "rms_z": ((z ** 2).mean() + 1e-5).sqrt(), "h2": h2, "sigmoid": h2.sigmoid(),
            "silu": silu(h2), "f": silu(h2) * h2}


def prenorm_block(lang: str) -> str:
    """The pre-norm block as a residual stream: x -> + attention(RMSNorm(x)) -> z -> + SwiGLU(RMSNorm(z)) -> y,
    every tensor (B, n, d); beneath, the post-norm order for contrast."""
    attention = say("figures.transformer.attention", lang)
    d = Drawing(700, 350)
    y0 = 150
    d.text(350, 18, say("figures.transformer.pre_norm_title", lang), size=12, bold=True)
    d.line(20, y0, 672, y0, color=GATE, width=4)
    d.arrow(670, y0, 692, y0, color=GATE, width=3)
    d.text(24, y0 + 22, "x (B, n, d)", size=12, anchor="start")
    d.text(345, y0 + 22, "z (B, n, d)", size=12)
    d.text(694, y0 + 22, "y", size=12, anchor="end")
    for k, (x0, norm, layer, sub) in enumerate(((50, "RMSNorm ln1", say("figures.transformer.causal_attention", lang),
                                                 say("figures.transformer.rope_heads", lang)),
                                                (370, "RMSNorm ln2", "SwiGLU", "d → d_ff → d"))):
        plus = x0 + 270
        d.line(x0, y0, x0, 80, color=INK)
        d.arrow(x0, 80, x0 + 14, 80)
        d.box(x0 + 14, 60, 90, 40, norm, size=11)
        d.arrow(x0 + 104, 80, x0 + 120, 80)
        d.box(x0 + 120, 52, 130, 56, "", fill=GATE_FILL if k else SOFT, stroke=GATE if k else ACCENT)
        d.text(x0 + 185, 72, layer, size=12, bold=True)
        d.text(x0 + 185, 92, sub, size=10, color=MUTED)
        d.line(x0 + 250, 80, plus, 80, color=INK)
        d.arrow(plus, 80, plus, y0 - 12)
        d.circle(plus, y0, 12, "+", size=14)
        d.text(x0 + 59, 118, "(B, n, d)", size=10, color=MUTED)
    d.text(180, 196, f"z = x + {attention}(RMSNorm(x))", size=12)
    d.text(510, 196, "y = z + SwiGLU(RMSNorm(z))", size=12)
    # post-norm for contrast
    y1 = 295
    d.text(350, 236, say("figures.transformer.post_norm_title", lang), size=12, color=MUTED, bold=True)
    d.line(20, y1, 672, y1, color=MUTED, width=2)
    d.arrow(670, y1, 692, y1, color=MUTED, width=2)
    for x0, layer in ((50, attention), (370, "FFN")):
        d.box(x0 + 20, y1 - 46, 90, 28, layer, fill=WHITE, stroke=MUTED, size=11)
        d.line(x0, y1, x0, y1 - 32, color=MUTED)
        d.arrow(x0, y1 - 32, x0 + 20, y1 - 32, color=MUTED)
        d.arrow(x0 + 110, y1 - 32, x0 + 134, y1 - 12, color=MUTED)
        d.circle(x0 + 140, y1, 11, "+", size=13, stroke=MUTED)
        d.box(x0 + 170, y1 - 14, 80, 28, "Norm", fill=WRONG_FILL, stroke=WARN, size=11)
    d.text(180, y1 + 34, f"z = Norm(x + {attention}(x))", size=12, color=MUTED)
    d.text(510, y1 + 34, "y = Norm(z + FFN(z))", size=12, color=MUTED)
    return d.svg(say("figures.transformer.prenorm_block", lang))


# --- transformer_lm -------------------------------------------------------------------------------------------
def lm_example(ids=((0, 2),)):
    """A vocabulary-3 LM around the block lesson's example: embeddings [[3, 4], [1, 0], [0, 1]] (so ids 0, 2
    embed to the block example's tokens), that block, ln_final = 1 and an untied lm_head [[1, 0], [0, 1], [1, 1]].
    Returns the exercise's arguments (ids, weights, num_layers, num_heads)."""
    import torch
    _, block, heads = block_example()
    weights = {"token_embeddings.weight": _tensor([[3.0, 4.0], [1.0, 0.0], [0.0, 1.0]])}
    weights.update({f"layers.0.{name}": value for name, value in block.items()})
    weights["ln_final.weight"] = _tensor([1.0, 1.0])
    weights["lm_head.weight"] = _tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    return torch.tensor([list(row) for row in ids]), weights, 1, heads


def lm_stack(lang: str) -> str:
    """The LM as a chain of shapes for the tinystories preset: ids -> embeddings -> L blocks -> final norm ->
    lm_head -> logits, with each stage's parameters (seqlab.accounting)."""
    from seqlab.accounting.costs import count_parameters
    from seqlab.accounting.presets import PRESETS
    config = PRESETS["tinystories"]
    counts = count_parameters(config)
    n, width, vocab, layers = config["context_length"], config["d_model"], config["vocab_size"], config["num_layers"]
    per_block = (counts["attention"] + counts["ffn"] + counts["norms"] - width) // layers

    def millions(count):
        return f"{count / 1e6:.2f} M"

    stages = [("ids", f"(B, {n})", "", WHITE, INK),
              (say("figures.transformer.embedding", lang), f"(B, {n}, {width})", millions(counts["token_embeddings"]),
               SOFT, ACCENT),
              (say("figures.transformer.blocks", lang, layers=layers), f"(B, {n}, {width})",
               f"{layers} × {millions(per_block)}", GATE_FILL, GATE),
              ("RMSNorm", f"(B, {n}, {width})", f"{width}", SOFT, ACCENT),
              ("lm_head", f"(B, {n}, {vocab})", millions(counts["lm_head"]), SOFT, ACCENT),
              ("logits", f"(B, {n}, {vocab})", "", WHITE, INK)]
    d = Drawing(700, 250)
    d.text(350, 20, say("figures.transformer.preset_title", lang, vocab=vocab, n=n, width=width, layers=layers),
           size=12, bold=True)
    x = 12
    for k, (name, shape, params, fill, stroke) in enumerate(stages):
        d.box(x, 70, 96, 48, name, fill=fill, stroke=stroke, size=12)
        d.text(x + 48, 138, shape, size=11)
        if params:
            d.text(x + 48, 158, params, size=11, color=MUTED)
        if k < len(stages) - 1:
            d.arrow(x + 96, 94, x + 116, 94)
        x += 116
    d.text(350, 196, say("figures.transformer.parameters_note", lang, total=millions(counts['total'])), size=12)
    d.text(350, 222, say("figures.transformer.parameters_gray", lang), size=11, color=MUTED)
    return d.svg(say("figures.transformer.lm_stack", lang))


FIGURES = {
    "bpe_first_merge": bpe_first_merge,
    "bpe_training_pipeline": bpe_training_pipeline,
    "softmax_overflow": softmax_overflow,
    "rmsnorm_vs_layernorm": rmsnorm_vs_layernorm,
    "swiglu_block": swiglu_block,
    "rope_rotation": rope_rotation,
    "batched_attention": batched_attention,
    "mhsa_heads_view": mhsa_heads_view,
    "prenorm_block": prenorm_block,
    "lm_stack": lm_stack,
}
