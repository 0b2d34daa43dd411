"""Every LM-component exercise (PyTorch), all its student files checked in one child process: the stub
fails with "not implemented yet", seqlab.model's reference passes, every catalogued mistake fails with its
own diagnosis, two independent implementations in other styles pass (and a convention the text allows,
with a note), and every wrong version written in tests/learn/torch_students.py fails with a diagnosis
naming its mistake: one per sentence of each contract, the rules, and the issue's escaped cases."""

from __future__ import annotations

import re

import pytest

from seqlab.learn.catalog import TORCH_NAMES, all_exercises, exercise
from seqlab.learn.exercise import GENERIC_CHECKS
from seqlab.learn.feedback import report_lines
from seqlab.learn.workspace import stub_text
from tests.learn.students import assert_contract_in_stub, assert_diagnosed, check_batch, english_sentences
from tests.learn.torch_students import CONVENTIONS, LOOPS, VECTORISED, WRONG

EXERCISES = [e for e in all_exercises() if e.kind == "torch"]

__all__ = ["LOOPS"]                    # read by test_independent_implementations
WRONG_KEYS = [(name, version) for name, versions in WRONG.items() for version in versions]

# A rule broken while the file is imported (reached by a name the static rules cannot read, so the
# runtime rules catch it); and, in a later job of the same child, an exercise without rules using
# torch.nn.functional: the rules are put back after each job.
RULES_ACROSS_JOBS = {
    "import-time": {"softmax": """
        import torch
        F = getattr(torch.nn, "function" + "al")
        TABLE = F.softmax(torch.zeros(3), 0)
        def softmax(x, dim=-1):
            return TABLE
    """},
    "no-rules": {"get_batch": """
        import numpy as np
        import torch
        import torch.nn.functional as F
        def get_batch(dataset, batch_size, context_length, device, *, generator=None):
            starts = generator.integers(0, len(dataset) - context_length, size=batch_size)
            windows = torch.from_numpy(np.stack([np.asarray(dataset[s:s + context_length + 1], dtype=np.int64) for s in starts]))
            return F.pad(windows[:, :-1], (0, 0)), windows[:, 1:]
    """},
}


def test_a_rule_broken_at_import_fails_the_check_and_the_rules_end_with_their_job(batch):
    report = batch["import-time", "softmax"]
    assert not report.passed and report.checks[0]["name"] == "runs"
    assert "RuleBroken" in report.checks[0]["message"] and "torch.nn.functional.softmax" in report.checks[0]["message"]
    assert batch["no-rules", "get_batch"].passed, batch["no-rules", "get_batch"].checks


def _kind(name, version) -> str:
    return f"wrong-{name}-{list(WRONG[name]).index(version)}"


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    sources = {"loops": LOOPS, "vectorised": VECTORISED, "convention": CONVENTIONS, **RULES_ACROSS_JOBS}
    sources.update({_kind(name, version): {name: source} for name, versions in WRONG.items()
                    for version, (source, _) in versions.items()})
    return check_batch(tmp_path_factory.mktemp("torch-batch"), EXERCISES, sources)


def test_the_catalog_names_every_torch_exercise():
    assert sorted(e.name for e in EXERCISES) == sorted(TORCH_NAMES)


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_the_stub_fails_with_not_implemented_yet(batch, name):
    report = batch["stub", name]
    assert not report.passed and "not implemented yet" in report.checks[-1]["message"]
    assert f"def {exercise(name).signature}:" in open(report.file).read()


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_the_reference_and_two_independent_implementations_pass(batch, name):
    for kind in ("reference", "loops", "vectorised"):
        report = batch[kind, name]
        assert report.passed and not report.notes, (kind, report.checks, report.diagnosis)
        assert ("rules" in {c["name"] for c in report.checks}) == bool(exercise(name).rules)


def test_adamw_in_cs336_s_order_passes_with_a_note_naming_both_orders(batch):
    report = batch["convention", "adamw_step"]
    assert report.passed and report.diagnosis is None
    assert len(report.notes) == 1 and "CS336's order" in report.notes[0] and "decays first" in report.notes[0]


MUTANTS = [(e.name, m.id) for e in EXERCISES for m in e.mistakes if m.implementation is not None and not m.accepted]


@pytest.mark.parametrize(("name", "mistake"), MUTANTS, ids=[f"{n}-{m}" for n, m in MUTANTS])
def test_each_catalogued_mistake_fails_with_its_own_diagnosis(batch, name, mistake):
    assert_diagnosed(batch["mutant", name, mistake], mistake)


@pytest.mark.parametrize(("name", "version"), WRONG_KEYS, ids=[f"{n}-{v}" for n, v in WRONG_KEYS])
def test_each_wrong_version_fails_and_its_diagnosis_names_the_mistake(batch, name, version):
    report = batch[_kind(name, version), name]
    expected = WRONG[name][version][1]
    assert not report.passed, report.checks
    diagnosis = report.diagnosis
    assert diagnosis is not None and diagnosis["mistake"] == expected, (report.checks, diagnosis)
    assert diagnosis["where"] and diagnosis["read"]["step"] == exercise(name).step


def test_how_many_wrong_versions_end_in_a_specific_diagnosis(batch):
    """The issue's count: every wrong version fails, and its diagnosis names a mistake (not "no catalogued
    mistake matches"). Printed for the closing note (pytest -s)."""
    reports = [batch[_kind(name, version), name] for name, version in WRONG_KEYS]
    failed = sum(not r.passed for r in reports)
    named = sum(bool(r.diagnosis and r.diagnosis["mistake"]) for r in reports)
    print(f"\nPyTorch exercises: {failed} of {len(reports)} wrong versions fail; {named} end in a specific diagnosis")
    assert failed == named == len(reports)


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_every_sentence_of_the_contract_is_failed_by_a_wrong_version(batch, name):
    """Each sentence's own check fails for some wrong version; the generic sentences (inputs unchanged,
    the rules) likewise; at least two correct and four wrong versions per exercise."""
    ex = exercise(name)
    failing = {c["name"] for version in WRONG[name] for c in batch[_kind(name, version), name].checks if not c["passed"]}
    own = [s.id for s in ex.spec if s.id not in GENERIC_CHECKS]
    generic = [s.id for s in ex.spec if s.id in ("inputs unchanged", "rules")]
    missing = [i for i in own + generic if i not in failing]
    assert not missing, f"{name}: no wrong version fails the sentence(s) {missing}"
    assert len(WRONG[name]) >= 4 and name in LOOPS and name in VECTORISED


# What Python says of an error the student's code raised is quoted as it is (the student's code's words)
_PYTHON_ERROR = re.compile(r"\b\w+(?:Error|Exception|RuleBroken):\s[^（）]*")
ZH_KEYS = [(_kind(n, v), n, WRONG[n][v][1]) for n, v in WRONG_KEYS] + [("mutant", n, m) for n, m in MUTANTS]


@pytest.mark.parametrize("key", ZH_KEYS, ids=[" ".join(k) for k in ZH_KEYS])
def test_each_wrong_version_s_report_reads_in_chinese(batch, key):
    """Under --lang zh the whole report of a wrong version or a mutant (the diagnosis, where, what to do, what to
    read, every check) holds no English sentence outside code, identifiers, numbers, paths and seqlab's commands."""
    lines = [line for line in report_lines(batch[key if key[0] == "mutant" else key[:2]], "zh")
             if not line.strip().startswith(("seqlab learn ", "http://"))]
    text = _PYTHON_ERROR.sub(" ", "\n".join(lines))
    assert not english_sentences(text), (english_sentences(text), "\n".join(lines))


def test_an_english_sentence_in_a_chinese_report_is_found():
    said = "    FAIL  数据类型：在float32 的 x上：output 的 dtype 为 torch.float64，应为 torch.float32"
    error = "line 4: IndexError: index out of range"                # Python's words, quoted as they are
    assert english_sentences(said) == [] and english_sentences(error) and not english_sentences(_PYTHON_ERROR.sub(" ", error))
    assert english_sentences(said + "; the output must keep its dtype") == ["the output must keep its dtype"]


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_the_stub_the_returns_and_the_check_names_read_in_chinese(name):
    """The stub under --lang zh (its frame and the contract's sentences) has no English sentence; every sentence
    has its Chinese, every check of the exercise its Chinese name, and the form of the output its Chinese."""
    from seqlab.learn.words import render
    ex = exercise(name)
    assert not english_sentences(stub_text(ex, "zh")), english_sentences(stub_text(ex, "zh"))
    assert all(spec.sentence_zh for spec in ex.spec), name
    assert {s.id for s in ex.spec if s.id not in GENERIC_CHECKS} <= set(ex.check_names), name
    assert not english_sentences(render(ex.returns, "zh")) and render(ex.returns, "zh") != render(ex.returns, "en"), name


def test_the_issue_s_escaped_cases_are_among_the_wrong_versions():
    escaped = {(name, expected) for name, versions in WRONG.items() for version, (_, expected) in versions.items()
               if "(escaped)" in version}
    for case in (("softmax", "rule_broken"), ("swiglu", "rule_broken"), ("cross_entropy", "rule_broken"),
                 ("scaled_dot_product_attention", "rule_broken"), ("causal_multihead_self_attention", "batched"),
                 ("softmax", "dtype"), ("get_batch", "int64"), ("scaled_dot_product_attention", "nan_on_fully_masked_rows"),
                 ("cross_entropy", "max_not_subtracted"), ("softmax", "max_not_subtracted"),
                 ("scaled_dot_product_attention", "causal_ignored_with_a_mask"),
                 ("scaled_dot_product_attention", "leading_dims"), ("adamw_step", "eps_inside_the_root")):
        assert case in escaped, case


def test_a_broken_rule_says_what_to_write_instead(batch):
    softmax = batch[_kind("softmax", "torch.nn.functional.softmax (escaped)"), "softmax"]
    rules = next(c for c in softmax.checks if c["name"] == "rules")
    assert not rules["passed"] and "torch.nn.functional.softmax" in rules["message"]
    assert "x.amax(dim, keepdim=True)" in rules["message"]
    silu = batch[_kind("swiglu", "torch.nn.functional.silu (escaped)"), "swiglu"]
    assert "a * torch.sigmoid(a)" in next(c for c in silu.checks if c["name"] == "rules")["message"]


def test_a_loop_over_heads_is_caught_by_its_op_count(batch):
    report = batch[_kind("causal_multihead_self_attention", "a Python loop over heads (escaped)"), "causal_multihead_self_attention"]
    failed = {c["name"]: c["message"] for c in report.checks if not c["passed"]}
    assert list(failed) == ["batched"], failed
    assert "8 heads (4 times as many)" in failed["batched"] and "tensor operations against" in failed["batched"]
    positions = batch[_kind("causal_multihead_self_attention", "a Python loop over positions"), "causal_multihead_self_attention"]
    assert "16 positions" in next(c["message"] for c in positions.checks if c["name"] == "batched")


def test_the_references_agree_with_torch_nn_functional_on_every_case():
    """torch.nn.functional (which the library may not use) as a second oracle, here in the test process."""
    import torch
    import torch.nn.functional as F

    from seqlab.learn.judge import _call

    def sdpa(Q, K, V, mask=None, *, causal=False):
        n, m = Q.shape[-2], K.shape[-2]
        allowed = torch.ones(n, m, dtype=torch.bool)
        if mask is not None:
            allowed = allowed & mask
        if causal:
            allowed = allowed & torch.ones(n, m, dtype=torch.bool).tril(m - n)
        out = F.scaled_dot_product_attention(Q, K, V, attn_mask=allowed)
        return torch.where(allowed.any(-1, keepdim=True), out, torch.zeros_like(out))   # no visible key: 0

    def mhsa(x, q_weight, k_weight, v_weight, o_weight, num_heads):
        split = lambda t: t.unflatten(-1, (num_heads, -1)).transpose(-3, -2)   # noqa: E731
        heads = F.scaled_dot_product_attention(split(x @ q_weight.T), split(x @ k_weight.T), split(x @ v_weight.T),
                                               is_causal=True)
        return heads.transpose(-3, -2).flatten(-2) @ o_weight.T

    oracles = {"softmax": lambda x, dim=-1: F.softmax(x, dim=dim),
               "cross_entropy": lambda logits, targets: F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                                                        targets.reshape(-1).long()),
               "swiglu": lambda x, w1, w2, w3: F.linear(F.silu(F.linear(x, w1)) * F.linear(x, w3), w2),
               "scaled_dot_product_attention": sdpa, "causal_multihead_self_attention": mhsa}
    for name, oracle in oracles.items():
        ex = exercise(name)
        for case in ex.cases():
            if name == "causal_multihead_self_attention" and case.args[0].dim() == 2:
                continue                          # F's is_causal wants a batch dimension
            ours, theirs = _call(ex.reference(), case), _call(oracle, case)
            assert ours.dtype == theirs.dtype and torch.allclose(ours, theirs, rtol=1e-5, atol=1e-6), (name, case.label)


def test_the_issue_s_lm_mistakes_are_catalogued():
    ids = set(MUTANTS) | {(e.name, m.id) for e in EXERCISES for m in e.mistakes}
    assert ("rotate_pairs", "half_split_pairs") in ids and ("rms_norm", "eps_outside_the_root") in ids
    assert ("scaled_dot_product_attention", "causal_mask_excludes_current") in ids
    assert ("scaled_dot_product_attention", "causal_mask_includes_next") in ids
    assert ("adamw_step", "decay_on_the_moment") in ids


def test_adamw_step_s_reference_is_seqlab_s_adamw_against_torch_optim():
    import torch

    adamw_step = exercise("adamw_step").reference()
    p, g = torch.randn(5, dtype=torch.float64), torch.randn(5, dtype=torch.float64)
    new_p, m, v = adamw_step(p, g, torch.zeros(5, dtype=torch.float64), torch.zeros(5, dtype=torch.float64), 1, 0.1,
                             weight_decay=0.2)
    oracle = torch.nn.Parameter(p.clone())
    opt = torch.optim.AdamW([oracle], lr=0.1, weight_decay=0.2)
    oracle.grad = g.clone()
    opt.step()
    assert torch.allclose(new_p, oracle.detach()) and torch.allclose(m, opt.state[oracle]["exp_avg"])


def test_the_block_and_lm_mistakes_are_catalogued():
    ids = set(MUTANTS)
    for expected in ("post_norm", "no_attention_residual", "causal_mask_excludes_current", "causal_mask_includes_next"):
        assert ("transformer_block", expected) in ids
    for expected in ("no_final_norm", "tied_output", "rope_not_applied"):
        assert ("transformer_lm", expected) in ids


@pytest.mark.parametrize("name", ["transformer_block", "transformer_lm"])
def test_causality_is_checked_by_changing_the_last_position(batch, name):
    passed = {c["name"]: c for c in batch["reference", name].checks}
    assert passed["invariants"]["passed"]
    if name == "transformer_block":
        seen = {c["name"]: c for c in batch["mutant", name, "causal_mask_includes_next"].checks}
        assert not seen["invariants"]["passed"]
        assert "changing only the last position changed the output at position" in seen["invariants"]["message"]
    # the reference's cases hold a pair that differs in the last position only
    cases = exercise(name).cases()
    changed = [c for c in cases if str(c.label).endswith("(its last position changed)")]
    assert changed and any(c.label == str(changed[0].label).split(" (its")[0] for c in cases)



def test_adamw_step_s_reference_is_a_step_of_seqlab_s_adamw_object():
    import torch

    from seqlab.training import AdamW
    adamw_step = exercise("adamw_step").reference()
    gen = torch.Generator().manual_seed(3)
    p, g = torch.randn(3, 4, generator=gen, dtype=torch.float64), torch.randn(3, 4, generator=gen, dtype=torch.float64)
    m, v = torch.randn(3, 4, generator=gen, dtype=torch.float64) * 0.1, torch.rand(3, 4, generator=gen, dtype=torch.float64)
    new_p, new_m, new_v = adamw_step(p, g, m, v, 7, 0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.3)
    param = torch.nn.Parameter(p.clone())
    opt = AdamW([param], lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.3, foreach=False)
    opt.state[param] = {"step": 6, "exp_avg": m.clone(), "exp_avg_sq": v.clone()}
    param.grad = g.clone()
    opt.step()
    assert torch.equal(new_p, param.detach()) and torch.equal(new_m, opt.state[param]["exp_avg"])
    assert torch.equal(new_v, opt.state[param]["exp_avg_sq"]) and opt.state[param]["step"] == 7


def test_every_mistake_is_written_for_the_lesson_in_both_languages():
    import re
    for ex in EXERCISES:
        ids = [m.id for m in ex.mistakes]
        assert len(ids) == len(set(ids)), ex.name                 # one anchor mistake-<id> each
        for m in ex.mistakes:
            assert m.title and m.explanation and m.title_zh and m.explanation_zh, (ex.name, m.id)
            en, zh = m.why
            assert len(en) > 60 and len(zh) > 30, (ex.name, m.id)
            for text in (m.title_zh, m.explanation_zh, zh):
                assert re.search(r"[\u4e00-\u9fff]", text), (ex.name, m.id, text)
            assert m.implementation is not None or m.recognise is not None, (ex.name, m.id)
            if m.convention and not m.accepted:
                assert "this exercise uses" in m.explanation and "本练习使用" in m.explanation_zh, (ex.name, m.id)


@pytest.mark.parametrize("name", TORCH_NAMES)
def test_each_sentence_of_the_contract_is_in_the_stub_and_is_a_check_of_the_reference(batch, name):
    assert_contract_in_stub(batch, exercise(name))


def test_when_no_mistake_fits_the_diagnosis_names_the_positions_that_differ():
    """A block right at every position but the last, checked in this process on calls given directly."""
    from seqlab.learn.judge import Expected, _call, _report
    from seqlab.learn.runner import CallResult, StudentRun
    ex = exercise("transformer_block")
    ref = Expected(ex, ex.cases())
    calls = []
    for case in ref.cases:
        out = _call(ex.reference(), case).clone()
        out[..., -1, :] += 0.5
        calls.append(CallResult(output=out, extra={"ops": 1, "ops_before": 1}))
    report = _report(ex, "transformer_block.py", StudentRun(calls=calls), ref)
    d = report.diagnosis
    assert not report.passed and d["mistake"] is None
    assert "position 2 differs (positions 0, 1 are right)" in d["where"], d["where"]
