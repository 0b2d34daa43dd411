"""Claims of the attention and Transformer lessons (steps 23-44) that are sentences, not printed numbers
(those are the numbers: lines, tests/learn/test_lessons.py): each is checked here against seqlab's
code or torch, so that a lesson corrected once (issue 47) stays correct."""

from __future__ import annotations

import math

import pytest

from seqlab.learn import views
from seqlab.learn.catalog import exercise, mutant, reference
from seqlab.learn.path import STEPS

torch = pytest.importorskip("torch")

SECOND_HALF = [s.id for s in STEPS[22:44]]


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("step", SECOND_HALF)
def test_every_mistake_has_a_paragraph_of_its_own(step, lang):
    """No two mistakes of a step share one explanation (lr_cosine_schedule's seven did)."""
    paragraphs = [views.blocks_text(m["blocks"], step, lang) for m in views.mistake_records(step, lang)]
    shared = {p for p in paragraphs if paragraphs.count(p) > 1}
    assert not shared, shared


def test_the_identity_output_projection_hides_only_the_missing_projection():
    """causal_multihead_self_attention's question: of the catalogue's coded mistakes, only the missing
    output projection gives the worked example's output (its W_o is the identity)."""
    from seqlab.learn.figures.transformer import mhsa_example
    name = "causal_multihead_self_attention"
    right = reference(name)(*mhsa_example())
    blind = []
    for m in exercise(name).mistakes:
        try:
            wrong = mutant(name, m.id)
        except KeyError:
            continue                                  # recognised from the evidence, no code of its own
        if torch.allclose(wrong(*mhsa_example()).double(), right.double()):
            blind.append(m.id)
    assert blind == ["no_output_projection"]


def test_the_warm_up_is_below_the_floor_and_the_cosine_never_is():
    """lr_cosine_schedule's Derive question: from T_w on the rate stays in [min, max]; before, it may not."""
    rate = reference("lr_cosine_schedule")
    high, low, warmup, cycle = 1.0, 0.1, 4, 12
    assert all(low <= rate(it, high, low, warmup, cycle) <= high for it in range(warmup, 3 * cycle))
    assert [it for it in range(warmup) if rate(it, high, low, warmup, cycle) < low] == [0]


def test_torchs_two_boolean_mask_conventions():
    """scaled_dot_product_attention's and causal_mask's words: True = may attend in
    F.scaled_dot_product_attention, True = not allowed in nn.MultiheadAttention's attn_mask and
    key_padding_mask."""
    q = torch.eye(2).unsqueeze(0)
    values = torch.tensor([[[1.0], [3.0]]])
    mask = torch.tensor([[True, False], [True, True]])
    out = torch.nn.functional.scaled_dot_product_attention(q, q, values, attn_mask=mask)
    assert out[0, 0, 0].item() == pytest.approx(1.0)               # query 0 reads key 0 only: True = may attend
    layer = torch.nn.MultiheadAttention(2, 1, bias=False, batch_first=True)
    with torch.no_grad():
        layer.in_proj_weight.copy_(torch.cat([torch.eye(2)] * 3))
        layer.out_proj.weight.copy_(torch.eye(2))
    _, weights = layer(q, q, q, attn_mask=mask)
    assert weights[0, 0].tolist() == [0.0, 1.0]                     # query 0 reads key 1 only: True = hidden
    _, weights = layer(q, q, q, key_padding_mask=torch.tensor([[False, True]]))
    assert weights[0, :, 1].tolist() == [0.0, 0.0]                  # key 1 hidden from every query


def test_the_papers_decay_is_torchs_when_its_lambda_is_torchs_times_the_peak_rate():
    """adamw_step's lesson: torch's decay lr * weight_decay and the paper's eta_t * lambda agree when
    lambda_paper = alpha * lambda_torch (alpha the peak rate, eta_t the schedule's multiplier)."""
    step = reference("adamw_step")
    p = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    grad = torch.tensor([0.5, -3.0, 0.25], dtype=torch.float64)
    m, v = torch.zeros(3, dtype=torch.float64), torch.zeros(3, dtype=torch.float64)
    alpha, eta, decay = 0.01, 0.3, 0.1                              # peak rate, schedule multiplier, torch's lambda
    torch_form, _, _ = step(p, grad, m, v, 1, alpha * eta, weight_decay=decay)
    u = grad / (grad.abs() + 1e-8)                                  # the first step's m_hat / (sqrt(v_hat) + eps)
    paper_form = p - eta * (alpha * u + (alpha * decay) * p)
    assert torch.allclose(torch_form, paper_form, rtol=0, atol=1e-15)
    assert not math.isclose(float((p - eta * (alpha * u + decay * p))[0]), float(torch_form[0]))


def _recipe(lang: str) -> str:
    """The code of transformer_block's Extend question on dropout, in ``lang``'s lesson."""
    from seqlab.learn import lessons
    question = next(q for q in lessons.lesson("transformer_block", lang).questions if q.name == "dropout-measured")
    return next(b.text for b in lessons.body_blocks(question.text) if b.kind == "code")


def test_the_dropout_recipe_is_one_program_in_both_languages():
    """Only its comments are translated; it compiles (tests/learn/test_dropout_recipe.py, marked slow, runs it)."""
    import re
    code = [re.sub(r"\s*#.*$", "", line) for line in _recipe("en").splitlines()]
    assert code == [re.sub(r"\s*#.*$", "", line) for line in _recipe("zh").splitlines()]
    compile(_recipe("en"), "dropout.py", "exec")
