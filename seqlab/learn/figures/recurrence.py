"""Figures of the recurrence lessons: unrolled recurrences, the RNN, BPTT's paths, truncation."""

from __future__ import annotations

from seqlab.learn.figures.svg import ACCENT, INK, MUTED, WARN, Drawing
from seqlab.learn.words import say


def unrolled_scalar_recurrence(lang: str) -> str:
    """h_0 -> h_1 -> h_2 -> h_3 with x_t entering from below and the lesson's worked values above."""
    from seqlab.labs.recurrence import scalar_recurrence
    xs = [1.0, 0.0, -1.0]
    hs = scalar_recurrence(0.5, xs)
    d = Drawing(520, 170)
    d.box(10, 60, 70, 40, "h₀ = 0")
    for t, (x, h) in enumerate(zip(xs, hs), 1):
        left = 10 + 135 * t
        d.arrow(left - 45 if t > 1 else 80, 80, left, 80, "×0.5", color=ACCENT)
        d.box(left, 60, 90, 40, f"h{_sub(t)} = tanh(·)")
        d.text(left + 45, 40, f"{h:.6f}", size=12)
        d.arrow(left + 45, 150, left + 45, 100)
        d.text(left + 45, 160, f"x{_sub(t)} = {x:g}", size=12, color=MUTED)
    title = say("figures.recurrence.unrolled_scalar_recurrence", lang)
    return d.svg(title)


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
    d.text(105, 22, say("figures.recurrence.loop_title", lang), bold=True)
    d.box(30, 95, 150, 44, "h ← tanh(a·h + xₜ)")
    d.curve(150, 95, 60, 95, 55, "a · h", color=ACCENT)
    d.arrow(105, 195, 105, 139)
    d.text(105, 210, "xₜ  (t = 1 … T)", size=12, color=MUTED)
    d.text(105, 232, say("figures.recurrence.h_starts", lang), size=12, color=MUTED)
    d.text(222, 117, "=", size=26, color=MUTED)
    # the same loop, unrolled
    d.text(436, 22, say("figures.recurrence.unrolled_title", lang), bold=True)
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
    d.text(476, 56, say("figures.recurrence.returned", lang), size=12)
    d.text(278, 160, say("figures.recurrence.not_returned", lang), size=11, color=MUTED)
    title = say("figures.recurrence.recurrence_loop", lang)
    return d.svg(title)



def input_influence(lang: str) -> str:
    """Which input reaches h₃ along which path, and how strongly: ∂h₃/∂x_k from the backward lab."""
    from seqlab.labs.recurrence import scalar_recurrence, scalar_recurrence_backward
    xs = [1.0, 0.0, -1.0]
    hs = scalar_recurrence(0.5, xs)
    influence = scalar_recurrence_backward(0.5, xs)["xs"]
    d = Drawing(660, 250)
    d.text(170, 20, say("figures.recurrence.paths_into_h3", lang), bold=True)
    for t, (x, h) in enumerate(zip(xs, hs), 1):
        cx = 60 + 105 * (t - 1)
        d.box(cx - 38, 60, 76, 40, f"h{_sub(t)} = {h:.3f}", size=12)
        d.box(cx - 30, 170, 60, 34, f"x{_sub(t)} = {x:g}", size=12, fill="#ffffff", stroke=MUTED)
        d.arrow(cx, 170, cx, 100)
        if t > 1:
            d.arrow(cx - 67, 80, cx - 38, 80, color=ACCENT)
        factors = 3 - t
        d.text(cx, 224, say("figures.recurrence.factor_counts", lang, factors=factors, tanhs=factors + 1),
               size=11, color=MUTED)
    d.text(170, 244, say("figures.recurrence.factors_between", lang), size=11, color=MUTED)
    # the bar chart of the sensitivities
    d.text(505, 20, say("figures.recurrence.sensitivity_title", lang), bold=True)
    scale = 170 / max(influence)
    for k, value in enumerate(influence):
        y = 60 + 52 * k
        d.text(392, y + 12, f"∂h₃/∂x{_sub(k + 1)}", size=12, anchor="end")
        d.box(400, y, max(value * scale, 2), 24, "", radius=2)
        d.text(400 + value * scale + 6, y + 12, f"{value:.6f}", size=12, anchor="start")
    d.text(505, 224, say("figures.recurrence.oldest_weakest", lang), size=12, color=MUTED)
    title = say("figures.recurrence.input_influence", lang)
    return d.svg(title)


def state_collision(lang: str) -> str:
    """Two different histories that end in the same state, after which no input can tell them apart."""
    import math

    from seqlab.labs.recurrence import scalar_recurrence
    first = [1.0, 0.0]
    second = [0.0, 0.5 * math.tanh(1.0)]
    a_states, b_states = scalar_recurrence(0.5, first), scalar_recurrence(0.5, second)
    d = Drawing(640, 230)
    for row, (name, xs, hs) in enumerate((("A", first, a_states), ("B", second, b_states))):
        label = say("figures.recurrence.history", lang, name=name)
        y = 30 + 130 * row
        d.text(40, y + 20, label, bold=True)
        d.box(90, y, 60, 40, "h₀ = 0", size=12, fill="#ffffff", stroke=MUTED)
        d.arrow(150, y + 20, 200, y + 20, color=ACCENT)
        d.text(175, y + (-8 if row == 0 else 50), f"x₁ = {xs[0]:g}", size=12, color=MUTED)
        d.box(200, y, 100, 40, f"h₁ = {hs[0]:.6f}" if hs[0] else "h₁ = 0", size=12)
        d.arrow(300, y + 20, 390, 105 + (0 if row == 0 else 10), color=ACCENT)
        d.text(345, y + (-2 if row == 0 else 52), f"x₂ = {xs[1]:.6f}" if row else f"x₂ = {xs[1]:g}",
               size=12, color=MUTED)
    d.box(390, 90, 110, 40, f"h₂ = {a_states[1]:.6f}", size=12, fill="#fee2e2", stroke=WARN)
    d.arrow(500, 110, 580, 110, "x₃, x₄, …", color=INK, offset=10)
    d.text(545, 135, say("figures.recurrence.same_future", lang), size=12, color=WARN)
    title = say("figures.recurrence.state_collision", lang)
    return d.svg(title)

def _vec(values, digits: int = 3) -> str:
    """[1, 0.5, -0.75]: each entry rounded to ``digits`` decimals, trailing zeros dropped."""
    return "[" + ", ".join(f"{v:.{digits}f}".rstrip("0").rstrip(".") if v else "0" for v in values) + "]"


def rnn_cell_shapes(lang: str) -> str:
    """One RNN step with every tensor's shape, and the lesson's worked example (H = 2, D = 3) beneath."""
    import numpy as np

    from seqlab.labs.rnn import rnn_step
    params = {"Wx": np.array([[1.0, 0.5, 0.0], [0.0, -1.0, 2.0]]), "Wh": np.array([[0.5, -0.5], [0.0, 0.5]]),
              "b": np.array([0.25, 0.0])}
    x, h_prev = np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.5])
    h = rnn_step(params, x, h_prev)
    z = params["Wh"] @ h_prev + params["Wx"] @ x + params["b"]
    d = Drawing(660, 270)
    d.box(20, 95, 110, 40, "hₜ₋₁ : (H,)")
    d.text(75, 150, _vec(h_prev), size=12, color=MUTED)
    d.arrow(130, 115, 170, 115)
    d.box(170, 95, 110, 40, "W_h : (H, H)")
    d.text(225, 150, "W_h hₜ₋₁ = " + _vec(params["Wh"] @ h_prev), size=12, color=MUTED)
    d.arrow(280, 115, 342, 115, "(H,)", size=11)
    d.box(20, 195, 110, 40, "xₜ : (D,)", fill="#ffffff", stroke=MUTED)
    d.text(75, 250, _vec(x), size=12, color=MUTED)
    d.arrow(130, 215, 170, 215)
    d.box(170, 195, 110, 40, "W_x : (H, D)")
    d.text(225, 250, "W_x xₜ = " + _vec(params["Wx"] @ x), size=12, color=MUTED)
    d.arrow(280, 215, 348, 128, "(H,)", size=11, offset=-12)
    d.box(320, 18, 80, 34, "b : (H,)")
    d.text(445, 35, _vec(params["b"]), size=12, color=MUTED)
    d.arrow(360, 52, 360, 97)
    d.circle(360, 115, 18, "+")
    d.text(465, 150, "z = " + _vec(z), size=12, color=MUTED)
    d.arrow(378, 115, 430, 115, "(H,)", size=11)
    d.box(430, 95, 70, 40, "tanh")
    d.arrow(500, 115, 540, 115)
    d.box(540, 95, 105, 40, "hₜ : (H,)")
    d.text(592, 150, _vec(h), size=12, color=MUTED)
    d.text(592, 170, say("figures.recurrence.to_next_step", lang), size=12, color=ACCENT)
    title = say("figures.recurrence.rnn_cell_shapes", lang)
    return d.svg(title)


def hello_lm(lang: str) -> str:
    """The "hello" character model unrolled: one-hot inputs h e l l, states, logits, targets e l l o."""
    from seqlab.labs.char_lm import VOCAB, WORD
    inputs, targets = WORD[:-1], WORD[1:]
    d = Drawing(640, 350)
    rows = ((50, say("figures.recurrence.targets", lang)), (95, "logits yₜ : (4,)"),
            (168, say("figures.recurrence.states_row", lang)), (275, say("figures.recurrence.inputs_row", lang)),
            (291, say("figures.recurrence.one_hot", lang)))
    for y, label in rows:
        d.text(8, y, label, size=12, anchor="start", color=MUTED)
    d.text(150, 168, "h₀ = 0", size=12, color=MUTED)
    right = 176
    for t, (ch, target) in enumerate(zip(inputs, targets), 1):
        cx = 250 + 110 * (t - 1)
        d.arrow(right, 168, cx - 35, 168, "W_h", color=ACCENT, size=11)
        d.box(cx - 35, 150, 70, 36, f"h{_sub(t)}")
        right = cx + 35
        for k, letter in enumerate(VOCAB):
            y = 240 + 15 * k
            hot = letter == ch
            d.box(cx - 9, y, 18, 14, "1" if hot else "0", size=10, radius=1,
                  fill="#93c5fd" if hot else "#ffffff", stroke=ACCENT if hot else MUTED)
            if t == 1:
                d.text(cx - 20, y + 7, letter, size=10, color=MUTED)
        d.arrow(cx, 238, cx, 186, "W_x", size=11, offset=-16)
        d.text(cx, 318, f"“{ch}”", size=13, bold=True)
        d.box(cx - 35, 80, 70, 30, f"y{_sub(t)}", size=12)
        d.arrow(cx, 150, cx, 110, "W_y", size=11, offset=-16)
        d.text(cx, 50, f"“{target}”", size=14, bold=True, color=ACCENT)
        d.line(cx, 62, cx, 78, color=MUTED, dashed=True)
    d.text(415, 340, say("figures.recurrence.shared_parameters", lang), size=12, color=MUTED)
    title = say("figures.recurrence.hello_lm", lang)
    return d.svg(title)


def hello_distributions(lang: str) -> str:
    """The untrained "hello" model's next-character distributions, the target's probability and its -ln p."""
    import math

    import numpy as np

    from seqlab.labs import char_lm
    params = char_lm.init_char_lm_params(char_lm.CharLMConfig())
    probs = char_lm.next_char_distributions(params)
    inputs, targets = char_lm.WORD[:-1], char_lm.WORD[1:]
    d = Drawing(660, 310)
    losses = []
    for k, (ch, target) in enumerate(zip(inputs, targets)):
        left = 30 + 158 * k
        d.text(left + 62, 24, say("figures.recurrence.input_target", lang, ch=ch, target=target), size=12, bold=True)
        d.line(left, 200, left + 128, 200, color=MUTED)
        for j, letter in enumerate(char_lm.VOCAB):
            x = left + 6 + 31 * j
            height = probs[k, j] * 300
            hit = letter == target
            d.box(x, 200 - height, 24, height, "", radius=1, fill="#93c5fd" if hit else "#eef2f7",
                  stroke=ACCENT if hit else MUTED)
            d.text(x + 12, 192 - height, f"{probs[k, j]:.2f}", size=10, color=ACCENT if hit else MUTED)
            d.text(x + 12, 213, letter, size=12, bold=hit, color=ACCENT if hit else INK)
        p = float(probs[k, char_lm.VOCAB.index(target)])
        losses.append(-math.log(p))
        d.text(left + 62, 240, f"p = {p:.6f}", size=12)
        d.text(left + 62, 258, f"−ln p = {-math.log(p):.6f}", size=12)
    d.text(330, 292, say("figures.recurrence.mean_loss", lang, loss=f"{np.mean(losses):.6f}",
                         uniform=f"{math.log(4):.6f}"), size=13, bold=True)
    title = say("figures.recurrence.hello_distributions", lang)
    return d.svg(title)


def repeated_factors(lang: str) -> str:
    """|factor|^t for 0.5, 1 and 2 over ten steps, on a log scale: vanishing, steady, exploding."""
    import math

    from seqlab.labs.recurrence import repeated_factor
    d = Drawing(640, 310)
    x0, x1, y_top, y_bottom, low, high = 80, 400, 30, 250, -3.3, 3.3

    def px(t):
        return x0 + (x1 - x0) * t / 10

    def py(value):
        return y_bottom - (y_bottom - y_top) * (math.log10(value) - low) / (high - low)

    d.line(x0, y_top, x0, y_bottom, color=MUTED)
    d.line(x0, y_bottom, x1, y_bottom, color=MUTED)
    for power in range(-3, 4):
        y = py(10.0 ** power)
        d.line(x0 - 4, y, x1, y, color="#e5e7eb", width=1)
        label = "1" if power == 0 else "10" + str(power).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
        d.text(x0 - 8, y, label, size=11, anchor="end", color=MUTED)
    for t in range(0, 11, 2):
        d.text(px(t), y_bottom + 14, str(t), size=11, color=MUTED)
    d.text((x0 + x1) / 2, y_bottom + 34, say("figures.recurrence.steps_back", lang), size=12, color=MUTED)
    d.text(24, (y_top + y_bottom) / 2, say("figures.recurrence.size", lang), size=12, color=MUTED)
    for factor, color, label in ((2.0, WARN, "2¹⁰ = "), (1.0, MUTED, "1¹⁰ = "), (0.5, ACCENT, "0.5¹⁰ = ")):
        points = [(px(t), py(repeated_factor(factor, t))) for t in range(11)]
        for (xa, ya), (xb, yb) in zip(points, points[1:]):
            d.line(xa, ya, xb, yb, color=color, width=2)
        for x, y in points:
            d.circle(x, y, 3, fill=color, stroke=color)
        end = repeated_factor(factor, 10)
        d.text(x1 + 12, points[-1][1], f"{label}{end:.10g}", size=12, anchor="start", color=color, bold=True)
    d.text(x1 + 12, py(1024) + 18, say("figures.recurrence.explodes", lang), size=11, anchor="start", color=WARN)
    d.text(x1 + 12, py(0.0009765625) + 18, say("figures.recurrence.vanishes", lang), size=11, anchor="start",
           color=ACCENT)
    title = say("figures.recurrence.repeated_factors", lang)
    return d.svg(title)


def scalar_backward(lang: str) -> str:
    """The backward walk through the one-number recurrence: ∂h₃/∂hₜ shrinking right to left, and per step
    the input's gradient and the term added to ∂h₃/∂a."""
    from seqlab.labs.recurrence import scalar_recurrence, scalar_recurrence_backward
    a, xs = 0.5, [1.0, 0.0, -1.0]
    hs = [0.0, *scalar_recurrence(a, xs)]
    grads = scalar_recurrence_backward(a, xs)
    dh = [grads["h0"], grads["xs"][1] * a, grads["xs"][2] * a, 1.0]      # ∂h₃/∂h_t for t = 0..3
    d = Drawing(660, 300)
    centers = [115 + 150 * t for t in range(4)]
    d.text(8, 70, say("figures.common.forward_pass", lang), size=12, anchor="start", color=MUTED)
    d.text(8, 132, "∂h₃/∂hₜ", size=12, anchor="start", color=WARN)
    for t, cx in enumerate(centers):
        d.box(cx - 48, 50, 96, 40, f"h{_sub(t)} = {hs[t]:.6f}" if t else "h₀ = 0", size=12)
        d.text(cx, 132, f"{dh[t]:.6f}" if t < 3 else "1", size=13, bold=True, color=WARN)
        if t:
            d.arrow(centers[t - 1] + 48, 70, cx - 48, 70)
            factor = a * (1 - hs[t] ** 2)
            d.arrow(cx - (12 if t == 3 else 38), 132, centers[t - 1] + 38, 132, f"× {factor:.6f}", color=WARN, size=11, offset=-13)
            d.line(cx, 142, cx, 180, color=MUTED, dashed=True)
            d.text(cx, 194, f"∂h₃/∂x{_sub(t)} = {grads['xs'][t - 1]:.6f}", size=12)
            d.text(cx, 214, f"a: + {grads['xs'][t - 1]:.6f} · {hs[t - 1]:.6f}" if t > 1
                   else f"a: + {grads['xs'][0]:.6f} · 0", size=11, color=MUTED)
    d.text(330, 246, say("figures.recurrence.step_factor_note", lang), size=12, color=MUTED)
    d.text(330, 272, f"∂h₃/∂a = {grads['a']:.6f}", size=14, bold=True)
    title = say("figures.recurrence.scalar_backward", lang)
    return d.svg(title)


def bptt_two_paths(lang: str) -> str:
    """h_t feeds its own output and the next state; backward, the two gradients add, then pass tanh'."""
    d = Drawing(660, 330)
    d.box(40, 130, 90, 44, "hₜ₋₁")
    d.box(280, 130, 90, 44, "hₜ")
    d.box(520, 130, 90, 44, "hₜ₊₁")
    d.box(280, 30, 90, 40, "yₜ")
    d.text(575, 95, say("figures.recurrence.later_outputs", lang), size=12, color=MUTED)
    d.text(575, 111, "ℓₜ₊₁, ℓₜ₊₂, …", size=12, color=MUTED)
    d.arrow(565, 130, 565, 121, color=MUTED)
    d.text(325, 12, "ℓₜ", size=13, color=MUTED)
    # forward
    d.arrow(130, 142, 280, 142, "W_h", offset=9)
    d.arrow(370, 142, 520, 142, "W_h", offset=9)
    d.arrow(310, 130, 310, 70, "W_y", offset=14)
    d.arrow(325, 30, 325, 20, color=MUTED)
    # backward
    d.arrow(340, 70, 340, 130, color=WARN, width=2)
    d.text(350, 100, say("figures.recurrence.local_term", lang), size=12, anchor="start", color=WARN)
    d.arrow(520, 164, 370, 164, color=WARN, width=2)
    d.text(445, 180, say("figures.recurrence.future_term", lang), size=12, color=WARN)
    d.arrow(280, 164, 130, 164, color=WARN, width=2)
    d.text(205, 180, "W_hᵀ dzₜ", size=12, color=WARN)
    d.text(325, 212, "dL/dhₜ = W_yᵀ dyₜ + W_hᵀ dzₜ₊₁", size=13, bold=True, color=WARN)
    d.text(325, 236, "dzₜ = dL/dhₜ ⊙ (1 − hₜ²)", size=13, color=WARN)
    for y in (212, 236):
        d.text(470, y, "(H,)", size=12, anchor="start", color=MUTED)
    d.text(325, 268, say("figures.recurrence.shared_sums", lang), size=12, color=INK)
    for x, y, formula in ((150, 292, "dW_h += dzₜ hₜ₋₁ᵀ  (H, H)"), (340, 292, "dW_x += dzₜ xₜᵀ  (H, D)"),
                          (510, 292, "db += dzₜ  (H,)"), (230, 316, "dW_y += dyₜ hₜᵀ  (O, H)"),
                          (430, 316, "db_y += dyₜ  (O,)")):
        d.text(x, y, formula, size=12)
    title = say("figures.recurrence.bptt_two_paths", lang)
    return d.svg(title)


def _delay_line():
    """The rnn_bptt lesson's worked example: unit 2 reads unit 1's previous value; the loss reads unit 2 at t = 2."""
    import numpy as np
    params = {"Wx": np.array([[1.0], [0.0]]), "Wh": np.array([[0.0, 0.0], [1.0, 0.0]]), "b": np.zeros(2),
              "Wy": np.array([[0.0, 1.0]]), "by": np.zeros(1)}
    return params, np.array([[1.0], [0.0]]), np.zeros(2), np.array([[0.0], [1.0]])


def delay_line_bptt(lang: str) -> str:
    """Two units, two steps: the only road from x₁ to the loss at step 2 runs through the future term."""
    from seqlab.labs.rnn import rnn_bptt, rnn_forward
    params, xs, h0, dys = _delay_line()
    hs = rnn_forward(params, xs, h0)["hs"]
    grads = rnn_bptt(params, xs, h0, dys)
    dz1 = grads["xs"][0, 0]
    dz2 = grads["b"][1]
    d = Drawing(660, 320)
    cols, rows = (200, 420), (200, 110)                  # x of t = 1, 2; y of unit 1, unit 2
    d.text(cols[0], 20, "t = 1", bold=True)
    d.text(cols[1], 20, "t = 2", bold=True)
    for t, cx in enumerate(cols):
        for u, cy in enumerate(rows):
            d.circle(cx, cy, 30, f"{hs[t, u]:.6f}".rstrip("0").rstrip(".") if hs[t, u] else "0", size=11)
            d.text(cx - 44, cy, f"u{_sub(u + 1)}", size=12, anchor="end", color=MUTED)
        d.box(cx - 30, 265, 60, 30, f"x{_sub(t + 1)} = {xs[t, 0]:g}", size=12, fill="#ffffff", stroke=MUTED)
        d.arrow(cx, 265, cx, 230, "W_x", size=11, offset=-16)
    d.arrow(cols[0] + 30, rows[0] - 10, cols[1] - 26, rows[1] + 16, "W_h[2, 1] = 1",
            size=11)
    d.box(540, 92, 80, 36, "y₂", size=13)
    d.arrow(cols[1] + 30, rows[1], 540, rows[1], "W_y", size=11)
    d.text(580, 70, say("figures.recurrence.loss_is_y2", lang), size=12, color=MUTED)
    # the backward road
    d.curve(545, 128, cols[1] + 24, rows[1] + 20, -25, color=WARN)
    d.text(515, 160, f"dz₂ = {dz2:.6f}", size=12, color=WARN)
    d.curve(cols[1] - 22, rows[1] + 22, cols[0] + 30, rows[0] + 6, -45, color=WARN)
    d.text(318, 238, f"W_hᵀ dz₂ → dz₁ = {dz1:.6f}", size=12, color=WARN)
    d.text(cols[0] - 120, 250, f"dW_x[1] = {grads['Wx'][0, 0]:.6f}", size=12, color=WARN, bold=True)
    d.text(cols[0] - 120, 268, say("figures.recurrence.only_future_term", lang), size=11, color=WARN)
    title = say("figures.recurrence.delay_line_bptt", lang)
    return d.svg(title)


def truncated_chunks(lang: str) -> str:
    """Six steps in chunks of three: truncation carries the state's value across the boundary and cuts the
    gradient there; a reset restarts the forward pass from h₀. The loss at step 5 reaches steps 4 and 5."""
    from seqlab.labs.rnn import truncated_bptt_reach
    steps, chunk, loss_step = 6, 3, 4
    reach = truncated_bptt_reach(steps, chunk, loss_step)
    d = Drawing(660, 330)
    rows = ((70, say("figures.recurrence.truncated_title", lang), True),
            (230, say("figures.recurrence.reset_title", lang), False))
    for y, label, carry in rows:
        d.text(20, y - 45, label, size=13, anchor="start", bold=True)
        for k in range(steps // chunk):
            d.box(72 + 270 * k, y - 26, 258, 74, "", fill="#f8fafc", stroke=MUTED, dashed=True, radius=8)
        d.text(44, y + 10, "h₀", size=13)
        for t in range(steps):
            cx = 110 + 90 * t
            hit = carry and t in reach
            d.box(cx - 26, y - 6, 52, 34, f"h{_sub(t + 1)}", fill="#93c5fd" if hit else "#dbeafe")
            if t == 0 or (t % chunk == 0 and not carry):
                start = 56 if t == 0 else cx - 62
                if t % chunk == 0 and t and not carry:
                    d.text(cx - 50, y + 10, "h₀", size=13, color=WARN)
                    start = cx - 40
                d.arrow(start, y + 11, cx - 26, y + 11)
            elif t % chunk == 0:
                d.arrow(cx - 64, y + 11, cx - 26, y + 11, color=ACCENT, width=2.5)
                d.text(cx - 45, y + 62, say("figures.recurrence.value_only", lang), size=11, color=ACCENT)
            else:
                d.arrow(cx - 64, y + 11, cx - 26, y + 11)
            if carry and t % chunk and t <= loss_step and t in reach[1:]:
                d.curve(cx - 26, y + 24, cx - 64, y + 24, -14, color=WARN)
        if carry:
            boundary = 110 + 90 * chunk - 45
            d.curve(boundary + 19, y + 24, boundary + 4, y + 34, -6, color=WARN, dashed=True)
            d.text(boundary - 4, y + 38, "✕", size=16, color=WARN, bold=True)
            cx = 110 + 90 * loss_step
            d.arrow(cx, y - 6, cx, y - 20, color=WARN)
            d.text(cx + 8, y - 33, say("figures.recurrence.loss_at_step", lang, step=loss_step + 1),
                   size=11, anchor="start", color=WARN)
    d.text(330, 318, say("figures.recurrence.reach_note", lang, step=loss_step + 1, first=reach[0] + 1,
                         last=reach[-1] + 1), size=12, color=MUTED)
    title = say("figures.recurrence.truncated_chunks", lang)
    return d.svg(title)



FIGURES = {
    "unrolled_scalar_recurrence": unrolled_scalar_recurrence,
    "recurrence_loop": recurrence_loop,
    "input_influence": input_influence,
    "state_collision": state_collision,
    "rnn_cell_shapes": rnn_cell_shapes,
    "hello_lm": hello_lm,
    "hello_distributions": hello_distributions,
    "repeated_factors": repeated_factors,
    "scalar_backward": scalar_backward,
    "bptt_two_paths": bptt_two_paths,
    "delay_line_bptt": delay_line_bptt,
    "truncated_chunks": truncated_chunks,
}
