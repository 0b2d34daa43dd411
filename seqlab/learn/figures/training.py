"""Figures of the training and seq2seq lessons: log-sum-exp row by row, the cosine schedule, AdamW's
bias correction and decay, random batch windows, the training loop, the encoder-decoder with and
without attention, teacher forcing, and how many steps separate an output from a source position.

The numbers drawn come from seqlab's own code (the exercises' references, the catalogued mistakes' mutants
where a figure shows what a mistake computes), so a figure cannot drift from the lessons' worked
examples. The ``*_example`` functions return the lessons' worked inputs; the lessons' ``numbers`` lines
call them too.
"""

from __future__ import annotations

import functools
import math

from seqlab.learn.figures.svg import ACCENT, INK, MUTED, SOFT, WARN, Drawing, number
from seqlab.learn.words import say

TARGET_FILL, TARGET = "#fef3c7", "#d97706"     # targets (shifted), the target entry of a row
WRONG_FILL = "#fee2e2"
GRID = "#e5e7eb"



def _polyline(d: Drawing, points, *, color: str = ACCENT, width: float = 2.0, dashed: bool = False) -> None:
    """A line through ``points`` (the svg builder draws straight segments one at a time)."""
    dash = ' stroke-dasharray="5 4"' if dashed else ""
    coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    d.parts.append(f'<polyline points="{coords}" fill="none" stroke="{color}" stroke-width="{width}"'
                   f' stroke-linejoin="round"{dash}/>')


def _dot(d: Drawing, x: float, y: float, *, color: str = ACCENT, r: float = 4.0) -> None:
    d.circle(x, y, r, fill=color, stroke=color)


def _reference(name: str):
    from seqlab.learn.catalog import reference
    return reference(name)


# --- the lessons' worked inputs -------------------------------------------------------------------------------
def ce_example():
    """cross_entropy's worked example (the exercise's first case): two rows of three logits, targets 0 and 1."""
    import torch
    logits = torch.tensor([[2.0, 1.0, 0.1], [0.5, 2.5, 0.3]], dtype=torch.float64)
    return logits, torch.tensor([0, 1])


def ce_underflow_example():
    """One float32 row whose target's probability is below the smallest float32: logits [0, 200], target 0."""
    import torch
    return torch.tensor([[0.0, 200.0]]), torch.tensor([0])


def adamw_example():
    """adamw_step's worked example, step 1: p = [1, -2], grad = [0.5, -3], m = v = 0 (lr 0.1, weight decay 0.1)."""
    import torch
    p = torch.tensor([1.0, -2.0], dtype=torch.float64)
    grad = torch.tensor([0.5, -3.0], dtype=torch.float64)
    return p, grad, torch.zeros(2, dtype=torch.float64), torch.zeros(2, dtype=torch.float64)


ADAMW_LR, ADAMW_DECAY = 0.1, 0.1


def adamw_second_grad():
    """The gradient of the worked example's second step: the first entry's is unchanged, the second's flips sign."""
    import torch
    return torch.tensor([0.5, 1.0], dtype=torch.float64)


def adamw_two_steps():
    """(p, m, v) after step 1 and after step 2 of the worked example, from the exercise's reference."""
    step = _reference("adamw_step")
    p, grad, m, v = adamw_example()
    first = step(p, grad, m, v, 1, ADAMW_LR, weight_decay=ADAMW_DECAY)
    second = step(*first[:1], adamw_second_grad(), *first[1:], 2, ADAMW_LR, weight_decay=ADAMW_DECAY)
    return first, second


def adamw_update_then_decay():
    """The other order (CS336's handout): the Adam update of the worked example's step 1, then the decay
    of the updated parameter. The update is the reference's with weight_decay = 0."""
    p, grad, m, v = adamw_example()
    updated = _reference("adamw_step")(p, grad, m, v, 1, ADAMW_LR, weight_decay=0.0)[0]
    return updated * (1 - ADAMW_LR * ADAMW_DECAY)


def constant_gradient_steps(steps: int = 30, *, corrected: bool = True) -> list[float]:
    """How far one AdamW step moves p (lr 1, no decay) at steps 1..``steps`` when every gradient is 1:
    the reference (bias-corrected), or the catalogued mistake without the correction."""
    import torch

    from seqlab.learn.catalog import mutant
    update = _reference("adamw_step") if corrected else mutant("adamw_step", "no_bias_correction")
    p, m, v = (torch.zeros(1, dtype=torch.float64) for _ in range(3))
    grad = torch.ones(1, dtype=torch.float64)
    moves = []
    for t in range(1, steps + 1):
        new_p, m, v = update(p, grad, m, v, t, 1.0, weight_decay=0.0)
        moves.append(float(p - new_p))
        p = new_p
    return moves


def decay_alone(steps: int = 10, *, l2: bool = False) -> list[float]:
    """p after each of ``steps`` updates of a parameter p = 1 whose gradient is always 0 (lr 0.1, weight decay
    0.1): AdamW's decoupled decay (the reference), or the catalogued mistake that adds the decay to the
    gradient (Adam + L2)."""
    import torch

    from seqlab.learn.catalog import mutant
    update = mutant("adamw_step", "decay_on_the_moment") if l2 else _reference("adamw_step")
    p = torch.ones(1, dtype=torch.float64)
    m, v, grad = (torch.zeros(1, dtype=torch.float64) for _ in range(3))
    values = []
    for t in range(1, steps + 1):
        p, m, v = update(p, grad, m, v, t, ADAMW_LR, weight_decay=ADAMW_DECAY)
        values.append(float(p))
    return values


@functools.lru_cache(maxsize=None)
def dates_parameters(arch: str = "rnn-attention", max_steps: int = 200) -> dict[str, int]:
    """Parameter counts by part of the model ``seqlab seq2seq train --task dates --arch ARCH`` builds, with
    the command's own vocabularies and defaults (built on the meta device: no weights are made)."""
    from seqlab.seq2seq.build import build_model
    from seqlab.seq2seq.data import build_vocabs, load_pairs
    from seqlab.seq2seq.settings import Seq2SeqTrainConfig
    cfg = Seq2SeqTrainConfig(task="dates", arch=arch, max_steps=max_steps)
    src_vocab, tgt_vocab = build_vocabs(cfg, load_pairs(cfg)[0])
    model = build_model(cfg.model_config(src_vocab.size, tgt_vocab.size, 64), device="meta")
    counts = {name: sum(p.numel() for p in module.parameters()) for name, module in model.named_children()}
    counts["src_vocab"], counts["tgt_vocab"] = src_vocab.size, tgt_vocab.size
    counts["total"] = sum(p.numel() for p in model.parameters())
    return dict(counts)


def path_length(arch: str, source: int, output: int, source_length: int) -> int:
    """Steps on the shortest path from source position ``source`` to output ``output`` (both 1-based),
    counting each recurrent step and each attention read as one. "rnn": through the encoder to its final
    state (source_length - source steps), then ``output`` decoder steps; "rnn-attention" and
    "transformer": one attention read of the position itself."""
    if not (1 <= source <= source_length and output >= 1):
        raise ValueError(f"positions are 1-based: source {source} of {source_length}, output {output}")
    if arch == "rnn":
        return (source_length - source) + output
    if arch in ("rnn-attention", "transformer"):
        return 1
    raise ValueError(f"unknown architecture {arch!r}; expected rnn, rnn-attention or transformer")


# --- cross_entropy --------------------------------------------------------------------------------------------
def _cells(d: Drawing, x: float, y: float, values, *, w: float = 46, h: float = 26, mark: int | None = None,
           decimals: int = 3, fill: str = SOFT, stroke: str = ACCENT, fixed: bool = False) -> float:
    """A row vector as boxes; ``mark`` outlines one entry (the target); ``fixed`` keeps trailing zeros.
    Returns the width drawn."""
    for j, value in enumerate(values):
        marked = j == mark
        d.box(x + j * w, y, w, h, fill=TARGET_FILL if marked else fill, stroke=TARGET if marked else stroke, radius=0)
        label = f"{float(value):.{decimals}f}".replace("-", "−") if fixed else number(value, decimals)
        d.text(x + j * w + w / 2, y + h / 2, label, size=11)
    return len(values) * w


def logsumexp_rows(lang: str) -> str:
    """Both rows of the worked example through the stable loss: shift by the max, exp, sum, log, minus the target."""
    logits, targets = ce_example()
    loss = float(_reference("cross_entropy")(logits, targets))
    d = Drawing(700, 300)
    heads = [(102, say("figures.training.logits_head", lang)), (234, "z − max z"),
             (378, "exp(z − max z)"), (478, "Σ"), (560, "log-sum-exp"), (650, say("figures.training.loss", lang))]
    for x, label in heads:
        d.text(x, 22, label, size=12, color=MUTED)
    for i, (row, target) in enumerate(zip(logits.tolist(), targets.tolist())):
        y = 48 + 82 * i
        top = max(row)
        shifted = [z - top for z in row]
        exps = [math.exp(z) for z in shifted]
        total = sum(exps)
        lse = top + math.log(total)
        d.text(4, y + 13, say("figures.training.row", lang, n=i + 1), size=12, anchor="start", bold=True)
        _cells(d, 48, y, row, w=36, mark=target, decimals=1)
        d.arrow(158, y + 13, 172, y + 13)
        _cells(d, 174, y, shifted, w=40, mark=target, decimals=1)
        d.arrow(296, y + 13, 310, y + 13)
        _cells(d, 312, y, exps, w=44, decimals=3, fixed=True)
        d.arrow(446, y + 13, 458, y + 13)
        d.text(462, y + 13, f"{total:.3f}", size=12, anchor="start")
        d.text(560, y + 13, f"{number(top, 1)} + ln {total:.3f}", size=11)
        d.text(560, y + 33, f"= {lse:.3f}", size=11)
        d.text(650, y + 13, f"{lse:.3f} − {number(row[target], 1)}", size=11)
        d.text(650, y + 33, f"= {lse - row[target]:.3f}", size=12, bold=True)
        d.text(102, y + 42, say("figures.training.target_outlined", lang, target=target), size=11, color=TARGET)
    d.line(20, 214, 680, 214, color=GRID)
    d.text(350, 236, say("figures.training.mean_loss", lang, loss=f"{loss:.6f}"), size=13, bold=True)
    d.text(350, 266, say("figures.training.shift_invariance", lang), size=12, color=MUTED)
    return d.svg(say("figures.training.logsumexp_rows", lang))


# --- lr_cosine_schedule ---------------------------------------------------------------------------------------
SCHEDULE = (1.0, 0.1, 4, 12)    # max, min, warm-up iterations, cosine cycle iterations: the exercise's worked example


def cosine_schedule_curve(lang: str) -> str:
    """lr_cosine_schedule(it, 1.0, 0.1, 4, 12) for it = 0..20, the checked iterations marked, and the full-period
    mistake dashed."""
    from seqlab.learn.catalog import mutant
    schedule = _reference("lr_cosine_schedule")
    wrong = mutant("lr_cosine_schedule", "full_cosine_period")
    top, bottom, left, right, last = 56, 226, 70, 650, 20
    d = Drawing(700, 290)

    def xy(it, lr):
        return left + (right - left) * it / last, bottom - (bottom - top) * lr / SCHEDULE[0]

    for lr in (0.0, 0.1, 0.5, 1.0):
        _, y = xy(0, lr)
        d.line(left, y, right, y, color=GRID, width=1)
        d.text(left - 8, y, number(lr), size=11, color=MUTED, anchor="end")
    for it in range(0, last + 1, 2):
        x, _ = xy(it, 0)
        d.text(x, bottom + 16, str(it), size=11, color=MUTED)
    d.text((left + right) / 2, bottom + 38, say("figures.training.iteration", lang), size=12, color=MUTED)
    d.text(left - 8, top - 26, "lr", size=12, color=MUTED, anchor="end")
    for it_a, it_b, label in ((0, 4, say("figures.training.warm_up", lang)),
                              (4, 12, say("figures.training.half_cosine", lang)),
                              (12, 20, say("figures.training.floor", lang))):
        xa, _ = xy(it_a, 0)
        xb, _ = xy(it_b, 0)
        d.text((xa + xb) / 2, 18, label, size=12, bold=True)
        if it_a:
            d.line(xa, 30, xa, bottom, color=MUTED, width=1, dashed=True)
    fine = [i / 10 for i in range(0, 10 * last + 1)]
    _polyline(d, [xy(i, wrong(i, *SCHEDULE)) for i in fine if 4 <= i <= 12], color=WARN, width=1.5, dashed=True)
    _polyline(d, [xy(i, schedule(i, *SCHEDULE)) for i in fine])
    wx, wy = xy(12, 0.8)
    d.text(wx + 8, wy, say("figures.training.full_period_wrong", lang), size=11, color=WARN, anchor="start")
    # (it, label offset x, offset y, anchor)
    places = {2: (-8, -4, "end"), 4: (-8, -6, "end"), 6: (8, -8, "start"), 8: (8, -8, "start"),
              10: (8, -8, "start"), 12: (8, 13, "start"), 20: (0, 14, "middle")}
    for it, (dx, dy, anchor) in places.items():
        lr = schedule(it, *SCHEDULE)
        x, y = xy(it, lr)
        _dot(d, x, y)
        d.text(x + dx, y + dy, number(lr), size=11, anchor=anchor)
    _dot(d, *xy(0, 0.0))
    return d.svg(say("figures.training.cosine_schedule_curve", lang))


# --- adamw_step -----------------------------------------------------------------------------------------------
def adamw_bias_correction(lang: str) -> str:
    """With every gradient 1: the raw moments m and √v (left) and the step they give, with and without the
    bias correction (right)."""
    beta1, beta2, steps = 0.9, 0.999, 30
    corrected = constant_gradient_steps(steps)
    uncorrected = constant_gradient_steps(steps, corrected=False)
    d = Drawing(700, 300)
    panels = ((40, say("figures.training.moments_title", lang), 1.0),
              (380, say("figures.training.step_size_title", lang), 7.0))
    top, bottom, width = 50, 240, 280
    for x0, title, ymax in panels:
        d.text(x0 + width / 2, 22, title, size=13, bold=True)
        for frac in (0.0, 0.5, 1.0):
            y = bottom - (bottom - top) * frac
            d.line(x0, y, x0 + width, y, color=GRID, width=1)
            d.text(x0 - 6, y, number(ymax * frac), size=11, color=MUTED, anchor="end")
        for t in (1, 10, 20, 30):
            d.text(x0 + width * (t - 1) / (steps - 1), bottom + 15, str(t), size=11, color=MUTED)
        d.text(x0 + width / 2, bottom + 34, say("figures.training.step_t", lang), size=12, color=MUTED)

    def series(x0, ymax, values):
        return [(x0 + width * i / (steps - 1), bottom - (bottom - top) * v / ymax) for i, v in enumerate(values)]

    ts = range(1, steps + 1)
    m_raw = [1 - beta1 ** t for t in ts]
    v_root = [math.sqrt(1 - beta2 ** t) for t in ts]
    _polyline(d, series(40, 1.0, [1.0] * steps), color=INK, width=1.5)
    _polyline(d, series(40, 1.0, m_raw), color=ACCENT)
    _polyline(d, series(40, 1.0, v_root), color=TARGET)
    d.text(45, top - 9, say("figures.training.corrected_moments", lang), size=11, anchor="start")
    d.text(200, 122, "m = 1 − 0.9ᵗ", size=12, color=ACCENT)
    d.text(200, 186, "√v = √(1 − 0.999ᵗ)", size=12, color=TARGET)
    _polyline(d, series(380, 7.0, corrected), color=INK, width=1.5)
    _polyline(d, series(380, 7.0, uncorrected), color=WARN)
    peak = max(range(steps), key=lambda i: uncorrected[i])
    for i in (0, peak):
        x, y = series(380, 7.0, uncorrected)[i]
        _dot(d, x, y, color=WARN)
        d.text(x + 8, y - 10, f"t = {i + 1}: {uncorrected[i]:.2f}", size=11, color=WARN, anchor="start")
    x, y = series(380, 7.0, corrected)[-1]
    d.text(x, y - 11, say("figures.training.with_correction", lang), size=11, anchor="end")
    d.text(520, 160, say("figures.training.without_correction", lang), size=12, color=WARN)
    return d.svg(say("figures.training.adamw_bias_correction", lang))


def adamw_decay_orders(lang: str) -> str:
    """Where p = 1 lands after the worked example's first step under four updates: decay first (this exercise),
    the Adam update then the decay (CS336's order), L2 in the gradient, no decay."""
    from seqlab.learn.catalog import mutant
    p, grad, m, v = adamw_example()
    args = (p, grad, m, v, 1, ADAMW_LR)
    points = [
        (float(_reference("adamw_step")(*args, weight_decay=ADAMW_DECAY)[0][0]),
         say("figures.training.decay_first", lang), ACCENT),
        (float(adamw_update_then_decay()[0]), say("figures.training.decay_after", lang), TARGET),
        (float(mutant("adamw_step", "decay_on_the_moment")(*args, weight_decay=ADAMW_DECAY)[0][0]),
         say("figures.training.decay_in_gradient", lang), WARN),
    ]
    lo, hi, left, right = 0.8775, 0.9025, 60, 640
    d = Drawing(700, 230)

    def x_of(value):
        return left + (right - left) * (value - lo) / (hi - lo)

    d.line(left, 150, right, 150, color=INK)
    for k in range(5):
        value = 0.88 + 0.005 * k
        d.line(x_of(value), 145, x_of(value), 155, color=INK)
        d.text(x_of(value), 170, number(value, 3), size=11, color=MUTED)
    for (value, label, color), y, anchor in zip(points, (92, 92, 36), ("end", "start", "end")):
        x = x_of(value)
        d.line(x, y - 8, x, 150, color=color, dashed=True)
        _dot(d, x, 150, color=color, r=5)
        d.text(x + (7 if anchor == "start" else -7), y, label, size=11, color=color, anchor=anchor)
        d.text(x + (7 if anchor == "start" else -7), y + 18, number(value), size=12, color=color, anchor=anchor, bold=True)
    d.text(350, 200, say("figures.training.decay_setting", lang), size=12, color=MUTED)
    return d.svg(say("figures.training.adamw_decay_orders", lang))


# --- get_batch ------------------------------------------------------------------------------------------------
def batch_windows(lang: str) -> str:
    """The worked example: tokens 10..19, four windows of 3 at the starts the generator draws, targets one later."""
    import numpy as np
    dataset, batch, context = np.arange(10, 20), 4, 3
    inputs, targets = _reference("get_batch")(dataset, batch, context, "cpu", generator=np.random.default_rng(0))
    starts = [int(row[0]) - 10 for row in inputs.tolist()]
    cw, x0 = 44, 150
    d = Drawing(700, 396)
    d.text(x0 - 12, 42, say("figures.training.dataset", lang), size=12, anchor="end", bold=True)
    for j, token in enumerate(dataset.tolist()):
        start_ok = j <= len(dataset) - context - 1
        d.box(x0 + j * cw, 28, cw, 28, fill="#ffffff", stroke=INK, radius=0)
        d.text(x0 + j * cw + cw / 2, 42, str(token), size=12)
        d.text(x0 + j * cw + cw / 2, 68, str(j), size=11, color=ACCENT if start_ok else MUTED)
    d.text(x0 - 12, 68, say("figures.training.index", lang), size=11, anchor="end", color=MUTED)
    last = len(dataset) - context - 1
    d.line(x0 + 6, 82, x0 + last * cw + cw - 6, 82, color=ACCENT)
    d.text(x0 + (last + 1) * cw / 2, 96, say("figures.training.possible_starts", lang, last=last, count=last + 1),
           size=11, color=ACCENT)
    for i, (start, row_in, row_out) in enumerate(zip(starts, inputs.tolist(), targets.tolist())):
        y = 120 + 62 * i
        d.text(x0 - 12, y + 12, say("figures.training.row_start", lang, i=i, start=start), size=12, anchor="end")
        _cells(d, x0 + start * cw, y, row_in, w=cw, h=24, decimals=0)
        _cells(d, x0 + (start + 1) * cw, y + 28, row_out, w=cw, h=24, decimals=0, fill=TARGET_FILL, stroke=TARGET)
    d.box(560, 120, 16, 14, fill=SOFT, stroke=ACCENT, radius=0)
    d.text(582, 127, say("figures.training.inputs_shape", lang), size=11, anchor="start")
    d.box(560, 142, 16, 14, fill=TARGET_FILL, stroke=TARGET, radius=0)
    d.text(582, 149, say("figures.training.targets_shape", lang), size=11, anchor="start")
    d.text(350, 382, say("figures.training.targets_shifted", lang), size=12, color=MUTED)
    return d.svg(say("figures.training.batch_windows", lang))


# --- train_small ----------------------------------------------------------------------------------------------
def training_loop(lang: str) -> str:
    """One optimizer step of seqlab's engine, as a loop of boxes with the shapes between them."""
    d = Drawing(700, 330)
    w, h = 170, 58
    boxes = [
        (30, 40, "get_batch", say("figures.training.batch_shapes", lang)),
        (265, 40, say("figures.common.forward_pass", lang), "logits (B, T, V)"),
        (500, 40, "cross_entropy", say("figures.training.loss_shape", lang)),
        (500, 190, say("figures.training.backward", lang), say("figures.training.gradient_per_parameter", lang)),
        (265, 190, say("figures.training.clip_global_norm", lang), "‖g‖ ≤ 1.0"),
        (30, 190, say("figures.training.adamw_step", lang), say("figures.training.zero_gradients", lang)),
    ]
    for x, y, title, shape in boxes:
        d.box(x, y, w, h)
        d.text(x + w / 2, y + 20, title, size=13, bold=True)
        d.text(x + w / 2, y + 40, shape, size=11, color=MUTED)
    d.arrow(200, 69, 265, 69)
    d.arrow(435, 69, 500, 69)
    d.arrow(585, 98, 585, 190)
    d.arrow(500, 219, 435, 219)
    d.arrow(265, 219, 200, 219)
    d.arrow(115, 190, 115, 98, say("figures.training.next_step", lang), color=ACCENT, offset=-34)
    d.box(30, 282, w, 36, "lr_cosine_schedule", fill="#ffffff", stroke=TARGET, size=12)
    d.arrow(115, 282, 115, 248, "lr", color=TARGET, offset=-14)
    d.text(440, 292, say("figures.training.gradient_shapes", lang), size=11, color=MUTED)
    d.text(440, 310, say("figures.training.weights_not_batch", lang), size=11, color=MUTED)
    return d.svg(say("figures.training.training_loop", lang))


# --- seq2seq --------------------------------------------------------------------------------------------------
def seq2seq_bottleneck(lang: str) -> str:
    """Top: the decoder sees the source only through the encoder's final state. Bottom: each decoder step also
    reads every encoder state (drawn for one step)."""
    d = Drawing(700, 420)
    src, out = 5, 4
    for panel, (y0, title) in enumerate(((14, say("figures.training.rnn_title", lang)),
                                         (222, say("figures.training.rnn_attention_title", lang)))):
        d.text(350, y0 + 4, title, size=13, bold=True)
        row = y0 + 66
        enc_x = [30 + 62 * s for s in range(src)]
        dec_x = [420 + 66 * t for t in range(out)]
        for s, x in enumerate(enc_x):
            d.box(x, row, 44, 34, f"h{'₁₂₃₄₅'[s]}", size=12)
            d.arrow(x + 22, row - 26, x + 22, row)
            d.text(x + 22, row - 34, f"x{'₁₂₃₄₅'[s]}", size=12, color=MUTED)
            if s:
                d.arrow(x - 18, row + 17, x, row + 17, color=ACCENT)
        for t, x in enumerate(dec_x):
            d.box(x, row, 44, 34, f"s{'₁₂₃₄'[t]}", size=12, fill=TARGET_FILL, stroke=TARGET)
            d.arrow(x + 22, row, x + 22, row - 26)
            d.text(x + 22, row - 34, f"y{'₁₂₃₄'[t]}", size=12, color=MUTED)
            if t:
                d.arrow(x - 22, row + 17, x, row + 17, color=TARGET)
        last = enc_x[-1] + 44
        if panel == 0:
            d.box(last + 22, row - 4, 58, 42, "", fill="#ffffff", stroke=WARN)
            d.text(last + 51, row + 10, say("figures.training.last_state_only", lang), size=11, color=WARN)
            d.text(last + 51, row + 26, "(H,)", size=11, color=WARN)
            d.arrow(last, row + 17, last + 22, row + 17, color=WARN)
            d.arrow(last + 80, row + 17, dec_x[0], row + 17, color=WARN)
            d.text(350, y0 + 140, say("figures.training.rnn_path", lang), size=12, color=MUTED)
        else:
            d.arrow(last, row + 17, dec_x[0], row + 17, color=MUTED, dashed=True)
            target = dec_x[2] + 22
            for x in enc_x:
                d.curve(x + 22, row + 34, target, row + 34, 30 + (target - x) * 0.1, color=ACCENT)
            d.text(350, y0 + 186, say("figures.training.attention_path", lang), size=12, color=MUTED)
    return d.svg(say("figures.training.seq2seq_bottleneck", lang))


def teacher_forcing_shift(lang: str) -> str:
    """Training reads BOS + target and predicts target + EOS at every position at once; generation feeds back."""
    from seqlab.seq2seq.builtin_tasks import make_pairs
    source, target = make_pairs("dates", 1, seed=1)[0]
    chars = list(target)
    cw, x0 = 44, 150
    d = Drawing(700, 300)
    d.text(350, 20, say("figures.training.source_target", lang, source=source, target=target), size=13, bold=True)
    rows = ((say("figures.training.decoder_reads", lang), ["BOS", *chars], SOFT, ACCENT, 50),
            (say("figures.training.learns_to_predict", lang), [*chars, "EOS"], TARGET_FILL, TARGET, 118))
    for label, tokens, fill, stroke, y in rows:
        d.text(x0 - 10, y + 14, label, size=12, anchor="end")
        for j, token in enumerate(tokens):
            d.box(x0 + j * cw, y, cw, 28, fill=fill, stroke=stroke, radius=0)
            d.text(x0 + j * cw + cw / 2, y + 14, token, size=11 if len(token) > 1 else 13)
    for j in range(len(chars) + 1):
        d.arrow(x0 + j * cw + cw / 2, 80, x0 + j * cw + cw / 2, 116, color=MUTED)
    d.text(x0 - 10, 98, say("figures.training.position_t", lang), size=11, anchor="end", color=MUTED)
    d.text(350, 170, say("figures.training.training_parallel", lang, n=len(chars) + 1), size=12)
    d.text(350, 196, say("figures.training.predictions_per_pair", lang), size=12, color=MUTED)
    d.line(30, 214, 670, 214, color=GRID)
    d.text(350, 236, say("figures.training.generation", lang), size=12)
    d.text(350, 262, say("figures.training.reads_own_outputs", lang), size=12, color=MUTED)
    return d.svg(say("figures.training.teacher_forcing_shift", lang))


# --- paths ----------------------------------------------------------------------------------------------------
def path_lengths(lang: str) -> str:
    """For a source of 6 and 6 outputs: the steps between source position s and output t, per architecture;
    the cells reverse needs outlined."""
    size = 6
    archs = (("rnn", "rnn"), ("rnn-attention", "rnn-attention"), ("transformer", "transformer"))
    cw = 30
    d = Drawing(700, 330)
    for a, (arch, title) in enumerate(archs):
        x0 = 52 + a * 225
        y0 = 62
        d.text(x0 + size * cw / 2, 22, title, size=13, bold=True)
        for t in range(1, size + 1):
            for s in range(1, size + 1):
                steps = path_length(arch, s, t, size)
                shade = min(1.0, (steps - 1) / (2 * size - 2))
                fill = _mix("#ffffff", "#2563eb", 0.12 + 0.7 * shade)
                needed = s == size + 1 - t
                d.box(x0 + (s - 1) * cw, y0 + (t - 1) * cw, cw, cw, fill=fill, stroke=WARN if needed else "#ffffff",
                      radius=0)
                d.text(x0 + (s - 1) * cw + cw / 2, y0 + (t - 1) * cw + cw / 2, str(steps), size=11,
                       color="#ffffff" if shade > 0.55 else INK)
            d.text(x0 - 6, y0 + (t - 1) * cw + cw / 2, f"y{_SUB[t]}", size=12, anchor="end", color=MUTED)
        for s in range(1, size + 1):
            d.text(x0 + (s - 1) * cw + cw / 2, y0 - 10, f"x{_SUB[s]}", size=12, color=MUTED)
    d.text(350, 264, say("figures.training.cell_number", lang), size=12, color=MUTED)
    d.text(350, 288, say("figures.training.outlined_source", lang), size=12, color=WARN)
    d.text(350, 312, say("figures.training.counted_not_measured", lang), size=12, color=MUTED)
    return d.svg(say("figures.training.path_lengths", lang))


_SUB = "₀₁₂₃₄₅₆₇₈₉"


def _mix(a: str, b: str, share: float) -> str:
    """The colour ``share`` of the way from ``a`` to ``b`` (hex)."""
    ca = [int(a[i:i + 2], 16) for i in (1, 3, 5)]
    cb = [int(b[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(x + (y - x) * share):02x}" for x, y in zip(ca, cb))


def course_through_line(lang: str) -> str:
    """The course in four pictures of information flow: a chain, a bottleneck, shortcuts, parallel attention."""
    d = Drawing(700, 300)
    panels = (say("figures.training.rnn_chain", lang), say("figures.training.seq2seq_vector", lang),
              say("figures.training.attention_shortcuts", lang), say("figures.training.transformer_at_once", lang))
    for p, title in enumerate(panels):
        x0 = 14 + p * 172
        d.box(x0, 34, 160, 200, fill="#ffffff", stroke=GRID, radius=8)
        d.text(x0 + 80, 20, title, size=12, bold=True)
        xs = [x0 + 22 + 38 * k for k in range(4)]
        if p == 0:
            for k, x in enumerate(xs):
                d.circle(x, 150, 13, f"h{'₁₂₃₄'[k]}", size=11)
                d.arrow(x, 210, x, 164, color=MUTED)
                if k:
                    d.arrow(x - 24, 150, x - 14, 150, color=ACCENT)
            d.text(x0 + 80, 70, say("figures.training.state_fixed", lang), size=11, color=MUTED)
            d.text(x0 + 80, 88, say("figures.training.updated_stepwise", lang), size=11, color=MUTED)
        elif p == 1:
            for k, x in enumerate(xs[:3]):
                d.circle(x, 190, 12, "", size=11)
                if k:
                    d.arrow(x - 24, 190, x - 13, 190, color=ACCENT)
            d.circle(x0 + 124, 190, 12, "c", size=11, stroke=WARN)
            d.arrow(xs[2] + 12, 190, x0 + 112, 190, color=WARN)
            for k in range(3):
                d.circle(xs[k] + 19, 100, 12, "", size=11, fill=TARGET_FILL, stroke=TARGET)
                if k:
                    d.arrow(xs[k - 1] + 31, 100, xs[k] + 7, 100, color=TARGET)
            d.arrow(x0 + 124, 178, xs[0] + 27, 110, color=WARN)
            d.text(x0 + 80, 60, say("figures.training.encoder_c_decoder", lang), size=11, color=MUTED)
        elif p == 2:
            for k, x in enumerate(xs[:3]):
                d.circle(x, 190, 12, "", size=11)
                if k:
                    d.arrow(x - 24, 190, x - 13, 190, color=ACCENT)
            for k in range(3):
                d.circle(xs[k] + 19, 100, 12, "", size=11, fill=TARGET_FILL, stroke=TARGET)
            for x in xs[:3]:
                d.arrow(x, 178, xs[2] + 17, 112, color=ACCENT)
            d.text(x0 + 80, 60, say("figures.training.read_by_content", lang), size=11, color=MUTED)
        else:
            for k, x in enumerate(xs):
                d.circle(x, 100, 12, "", size=11, fill=TARGET_FILL, stroke=TARGET)
                d.circle(x, 190, 12, "", size=11)
            for k, x in enumerate(xs):
                for j in range(k + 1):
                    d.line(xs[j], 178, x, 112, color=ACCENT, width=1)
            d.text(x0 + 80, 60, say("figures.training.positions_masks", lang), size=11, color=MUTED)
            d.text(x0 + 80, 78, say("figures.training.no_recurrence", lang), size=11, color=MUTED)
    d.text(350, 262, say("figures.training.compare_paths", lang), size=12, color=MUTED)
    return d.svg(say("figures.training.course_through_line", lang))


FIGURES = {
    "logsumexp_rows": logsumexp_rows,
    "cosine_schedule_curve": cosine_schedule_curve,
    "adamw_bias_correction": adamw_bias_correction,
    "adamw_decay_orders": adamw_decay_orders,
    "batch_windows": batch_windows,
    "training_loop": training_loop,
    "seq2seq_bottleneck": seq2seq_bottleneck,
    "teacher_forcing_shift": teacher_forcing_shift,
    "path_lengths": path_lengths,
    "course_through_line": course_through_line,
}
