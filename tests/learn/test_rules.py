"""seqlab.learn.child.rules in this process: what enter() forbids, what call() counts and refuses, what leave()
puts back. (The runner's child uses the same three functions around a student's file.)"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from seqlab.learn.child import rules
from seqlab.learn.child.rules import RuleBroken

ALL = {"forbid": sorted(rules.GROUPS)}
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def under():
    """enter(rules) for the test, leave() after it, whatever happens."""
    def start(given=ALL):
        rules.enter(given)
        return given
    yield start
    rules.leave()


def _raises(function, *args, **kwargs) -> str:
    with pytest.raises(RuleBroken) as caught:
        rules.call(function, args, kwargs, ALL)
    return str(caught.value)


def test_forbidden_functions_raise_naming_the_rule_and_what_to_write_instead(under):
    under()
    import torch.nn.functional as F
    from torch.nn.functional import softmax        # imported after enter(), as a student's file is
    x = torch.randn(3, 4, dtype=torch.float64)
    text = _raises(lambda: F.softmax(x, dim=-1))
    assert "torch.nn.functional.softmax" in text and '"no torch.nn.functional"' in text
    assert "x.amax(dim, keepdim=True)" in text
    rules.leave()
    under()
    assert "torch.nn.functional.softmax" in _raises(softmax, x)
    rules.leave()
    under()
    assert "a * torch.sigmoid(a)" in _raises(F.silu, x)
    for function in (lambda: x.softmax(-1), lambda: torch.softmax(x, -1), lambda: torch.log_softmax(x, -1),
                     lambda: torch.special.softmax(x, -1)):
        rules.leave()
        under()
        assert "no torch.softmax or Tensor.softmax" in _raises(function)


def test_aten_operations_behind_the_forbidden_functions_are_refused_too(under):
    under()
    x = torch.randn(2, 3, 4, dtype=torch.float64)
    cases = {"_softmax": lambda: torch._C._VariableFunctions.softmax(x, -1),
             "silu": lambda: torch.ops.aten.silu.default(x),
             "nll_loss_forward": lambda: torch.ops.aten.nll_loss_forward.default(
                 x.reshape(6, 4), torch.zeros(6, dtype=torch.long), None, 1, -100),
             "_": lambda: torch._C._nn.scaled_dot_product_attention(x, x, x)}
    for op, function in cases.items():
        rules.leave()
        under()
        text = _raises(function)
        assert f"aten::{op}" in text and "breaks this exercise's rule" in text
    assert '"no torch.nn.functional.scaled_dot_product_attention"' in text and "masked_fill" in text


def test_a_breach_the_student_s_code_catches_is_still_reported(under):
    under()
    import torch.nn.functional as F

    def sly(x):
        try:
            return F.softmax(x, -1)
        except Exception:  # noqa: BLE001 - what a student's fallback might do
            e = (x - x.amax(-1, keepdim=True)).exp()
            return e / e.sum(-1, keepdim=True)
    assert "torch.nn.functional.softmax" in _raises(sly, torch.randn(2, 3))
    # and the next call of the same job says it again
    assert "torch.nn.functional.softmax" in _raises(lambda: torch.zeros(1))


def test_layers_and_optimizers_cannot_be_made_but_seqlab_s_own_modules_run(under):
    for made, said in ((lambda: torch.nn.Linear(3, 4), '"no torch.nn layers"'),
                       (lambda: torch.nn.modules.linear.Linear(3, 4), "x @ weight.T"),
                       (lambda: torch.optim.AdamW([torch.zeros(2, requires_grad=True)]), '"no torch.optim"')):
        under()
        assert said in _raises(made)
        rules.leave()
    under()
    assert not isinstance(torch.zeros(1), torch.nn.Linear)     # isinstance still works
    from seqlab.model import MultiHeadAttention
    from seqlab.training import AdamW
    layer = MultiHeadAttention(8, 2, attention="reference", dtype=torch.float64)
    out, extra = rules.call(layer, (torch.randn(1, 3, 8, dtype=torch.float64),), {}, ALL)
    assert out.shape == (1, 3, 8) and extra["ops"] > 0
    param = torch.nn.Parameter(torch.ones(2))
    param.grad = torch.ones(2)
    _, extra = rules.call(AdamW([param], lr=0.1).step, (), {}, ALL)
    assert param.detach().tolist() == pytest.approx([0.899, 0.899]) and extra["ops"] > 0


def test_leave_puts_everything_back():
    import torch.nn.functional as F
    before = (F.softmax, F.silu, torch.softmax, torch.nn.Linear, torch.nn.modules.linear.Linear, torch.optim.AdamW,
              torch.rms_norm)
    assert "softmax" not in vars(torch.Tensor)
    rules.enter(ALL)
    try:
        assert F.softmax is not before[0] and torch.nn.Linear is not before[3] and "softmax" in vars(torch.Tensor)
    finally:
        rules.leave()
    assert (F.softmax, F.silu, torch.softmax, torch.nn.Linear, torch.nn.modules.linear.Linear, torch.optim.AdamW,
            torch.rms_norm) == before
    assert "softmax" not in vars(torch.Tensor) and torch.randn(2, 3).softmax(-1).shape == (2, 3)
    assert rules.call(lambda: torch.nn.functional.softmax(torch.zeros(2), 0), (), {}, None)[1] == {}


def test_unknown_rule_groups_are_named():
    with pytest.raises(ValueError, match="unknown rule group.*'functionl'"):
        rules.enter({"forbid": ["functionl"]})


def _heads(x, num_heads, loop):
    """Causal self-attention of x (batch, seq, d) without projections: heads batched or in a Python loop."""
    batch, seq, d = x.shape
    w = d // num_heads
    visible = torch.ones(seq, seq, dtype=torch.bool).tril()

    def attend(q):
        scores = (q @ q.transpose(-2, -1) / math.sqrt(w)).masked_fill(~visible, float("-inf"))
        e = (scores - scores.amax(-1, keepdim=True)).exp()
        return e / e.sum(-1, keepdim=True) @ q
    if loop:
        return torch.cat([attend(x[..., h * w:(h + 1) * w]) for h in range(num_heads)], dim=-1)
    q = x.view(batch, seq, num_heads, w).transpose(1, 2)
    return attend(q).transpose(1, 2).reshape(batch, seq, d)


def test_the_op_count_grows_with_the_heads_only_for_a_loop_over_heads():
    x = torch.randn(2, 5, 16, dtype=torch.float64)
    ops = {}
    rules.enter({"forbid": []})
    try:
        for loop in (False, True):
            for heads in (2, 8):
                out, extra = rules.call(_heads, (x, heads, loop), {}, {"forbid": []})
                ops[loop, heads] = extra["ops"]
                if heads == 8:                 # the job's previous call is the one with 2 heads
                    assert extra["ops_before"] == ops[loop, 2]
                assert torch.allclose(out, _heads(x, heads, False))
        with pytest.raises(ZeroDivisionError):
            rules.call(lambda: 1 / 0, (), {}, {"forbid": []})
        assert rules.call(_heads, (x, 2, False), {}, {"forbid": []})[1]["ops_before"] is None
    finally:
        rules.leave()
    assert ops[False, 2] == ops[False, 8]
    assert ops[True, 8] > ops[True, 2] + 5


def test_entering_the_rules_imports_neither_torch_dynamo_nor_prints_warnings():
    code = ("import sys, torch\nfrom seqlab.learn.child import rules\n"
            "rules.enter({'forbid': sorted(rules.GROUPS)})\n"
            "print(rules.call(lambda x: x.exp().sum(), (torch.ones(3),), {}, {'forbid': []})[1])\n"
            "rules.leave()\nprint('torch._dynamo' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.split("\n")[:2] == ["{'ops': 2, 'ops_before': None}", "False"] and done.stderr == ""


def test_each_torch_exercise_forbids_what_its_text_forbids():
    """The stub's rules sentence and the exercise's rules name the same groups, and every group is known."""
    from seqlab.learn.catalog import all_exercises
    EXERCISES = [e for e in all_exercises() if e.kind == "torch"]
    said = {"no torch.nn.functional": "functional", "no torch.nn layers": "layers", "no torch.optim": "optim",
            "no torch.softmax": "softmax", "no torch.rms_norm": "rms_norm"}
    for ex in EXERCISES:
        groups = rules.check_rules(ex.rules or {})
        text = " ".join(ex.doc.split())
        assert {g for phrase, g in said.items() if phrase in text} == {g for g in groups if g in said.values()}, ex.name
        # the aten nets behind a forbidden torch.nn.functional function, where the exercise is that function
        for subject, group in (("silu", "silu"), ("cross_entropy", "cross_entropy"), ("scaled_dot_product", "attention")):
            if subject in ex.name or f"{subject} included" in text:
                assert group in groups, (ex.name, group)


def test_the_rules_words_say_the_child_s_english_to_the_letter_and_read_its_messages_back():
    """words.toml's rules.* say each rule and each way to write it instead in the child's own English (the
    child cannot read them); every message the child can make reads back as words said later, its English
    to the letter and its Chinese with no English sentence; a message it does not know stays as it is."""
    import re

    from seqlab.learn.static_rules import broken_rule_words
    from seqlab.learn.words import Said, render, table
    from tests.learn.students import english_sentences
    words = table()["rules"]
    assert {g.rule for g in rules.GROUPS.values()} == {t["en"] for t in words["rule"].values()}
    assert all(rules.GROUPS[key].rule == t["en"] for key, t in words["rule"].items())
    insteads = {**{k: g.instead for k, g in rules.GROUPS.items()}, **rules.INSTEAD}
    assert all(insteads[key] == t["en"] for key, t in words["instead"].items())
    prose = {t for t in insteads.values() if re.search(r"\b[a-z]{2,} [a-z]{2,}\b", t)}
    assert prose == {t["en"] for t in words["instead"].values()}, prose - {t["en"] for t in words["instead"].values()}
    for key, group in rules.GROUPS.items():
        used = [*group.names, *(rules.underneath(op) for op in group.aten), "torch.nn.functional.softmax"]
        for instead in {group.instead, *rules.INSTEAD.values()}:
            for thing in used:
                text = rules.message(group.rule, thing, instead)
                said = broken_rule_words(text)
                assert isinstance(said, Said) and str(said) == text, text
                zh = render(said, "zh")
                assert "breaks" not in zh and not english_sentences(zh), (zh, english_sentences(zh))
    assert broken_rule_words("torch.softmax is not allowed here") == "torch.softmax is not allowed here"
