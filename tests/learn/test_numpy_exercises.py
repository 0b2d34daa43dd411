"""Every NumPy exercise: the stub fails with "not implemented yet", the reference passes, every
catalogued mistake fails with its own diagnosis, and loop-style implementations written here pass."""

from __future__ import annotations

import pytest

from seqlab.learn.catalog import NUMPY_NAMES, all_exercises, exercise
from seqlab.learn.judge import run_checks as check
from tests.learn.numpy_students import BESIDE, CORRECT, LOOPS, WRONG
from tests.learn.students import check_batch, mutant_test, mutants, write_student

EXERCISES = [e for e in all_exercises() if e.kind == "numpy"]


def test_the_catalog_names_every_numpy_exercise_once():
    assert sorted(e.name for e in EXERCISES) == sorted(NUMPY_NAMES)
    assert all(exercise(n).name == n for n in NUMPY_NAMES)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Every student file of this module checked in one child process (the cost is its start)."""
    sources = {"loops": LOOPS}
    for name, styles in CORRECT.items():
        for style, source in styles.items():
            sources.setdefault(f"correct {style}", {})[name] = {f"{name}.py": source, **BESIDE.get((style, name), {})}
    for name, wrong in WRONG.items():
        for label, _, source in wrong:
            sources.setdefault(f"wrong {label}", {})[name] = source
    return check_batch(tmp_path_factory.mktemp("batch"), EXERCISES, sources)


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_the_stub_fails_with_not_implemented_yet(batch, name):
    ex = exercise(name)
    report = batch["stub", name]
    text = open(report.file).read()
    assert text.count("raise NotImplementedError") == 1
    assert f"def {ex.signature}:" in text
    assert not report.passed
    assert report.checks[-1]["name"] == "runs" and "not implemented yet" in report.checks[-1]["message"]


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_the_reference_passes_every_check(batch, name):
    ex = exercise(name)
    report = batch["reference", name]
    assert report.passed, report.checks
    names = [c["name"] for c in report.checks]
    assert {"runs", "inputs unchanged", "shapes and types", "values (worked example)", "values (random inputs)"} <= set(names)
    if ex.gradients is not None:
        assert "gradients vs finite differences" in names


MUTANTS = mutants(EXERCISES)
test_each_catalogued_mistake_fails_with_its_own_diagnosis = mutant_test(EXERCISES)


def test_the_issue_s_mistakes_are_catalogued():
    ids = set(MUTANTS)
    for expected in [("rnn_bptt", "no_future_gradient"), ("rnn_bptt", "shared_weights_not_summed"),
                     ("truncated_bptt", "divided_by_T_twice"), ("softmax_cross_entropy", "divided_twice"),
                     ("attention", "softmax_over_queries"), ("attention", "missing_scale"),
                     ("causal_mask", "current_position_excluded"), ("causal_mask", "one_future_position_included"),
                     ("clip_global_norm", "coordinatewise"), ("gru_cell_forward", "update_gate_other_convention"),
                     ("train_bpe", "merges_across_special_tokens"), ("train_bpe", "no_pretokenization"),
                     ("attention", "mask_ignored"), ("truncated_bptt", "h0_gradient_from_every_chunk")]:
        assert expected in ids


def test_an_unknown_mistake_shows_the_first_differing_element(tmp_path):
    path = write_student(tmp_path, "rnn_step", """
        import numpy as np
        def rnn_step(params, x, h_prev):
            h = np.tanh(params["Wh"] @ h_prev + params["Wx"] @ x + params["b"])
            h[2] += 0.5          # a mistake the catalogue does not know
            return h
    """)
    report = check(exercise("rnn_step"), path)
    assert not report.passed and report.diagnosis["mistake"] is None
    assert "output[2]" in report.diagnosis["explanation"] and "expected" in report.diagnosis["explanation"]


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_an_independent_loop_style_implementation_passes(batch, name):
    report = batch["loops", name]
    assert report.passed, (report.checks, report.diagnosis)


# Student versions written from the stubs (tests/learn/numpy_students.py): the correct ones pass, each
# wrong one fails with the diagnosis of its mistake, and every sentence of every contract is what
# some wrong version fails.
CORRECT_VERSIONS = [(name, style) for name, styles in CORRECT.items() for style in styles]
WRONG_VERSIONS = [(name, label, mistake) for name, wrong in WRONG.items() for label, mistake, _ in wrong]


@pytest.mark.parametrize(("name", "style"), CORRECT_VERSIONS, ids=[f"{n}-{s}" for n, s in CORRECT_VERSIONS])
def test_a_correct_student_version_passes(batch, name, style):
    report = batch[f"correct {style}", name]
    assert report.passed, (report.checks, report.diagnosis)


@pytest.mark.parametrize(("name", "label", "mistake"), WRONG_VERSIONS,
                         ids=[f"{n}-{label}" for n, label, _ in WRONG_VERSIONS])
def test_a_wrong_student_version_fails_with_the_diagnosis_of_its_mistake(batch, name, label, mistake):
    report = batch[f"wrong {label}", name]
    assert not report.passed
    d = report.diagnosis
    assert d is not None and d["mistake"] == mistake, (d, [c for c in report.checks if not c["passed"]])
    assert d["read"]["step"] == exercise(name).step and d["read"]["widget"] == exercise(name).widget
    assert d["read"]["anchor"] in ("", f"mistake-{mistake}")
    assert d["where"] and d["explanation"]


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_each_exercise_has_two_correct_and_four_wrong_versions_and_each_sentence_is_failed_by_one(batch, name):
    ex = exercise(name)
    assert len(CORRECT.get(name, {})) + (name in LOOPS) >= 2
    wrong = WRONG.get(name, [])
    assert len(wrong) >= 4
    failed = {c["name"] for label, _, _ in wrong for c in batch[f"wrong {label}", name].checks if not c["passed"]}
    for spec in ex.spec:
        assert spec.id in failed, f"no wrong version of {name} fails {spec.id!r}: {spec.sentence}"


def test_a_convention_the_stub_allows_passes_with_a_note(batch):
    accepted = [(e.name, m) for e in EXERCISES for m in e.mistakes if m.accepted]
    assert ("attention", "masked_scores_as_inf") in [(n, m.id) for n, m in accepted]
    for name, m in accepted:
        report = batch["mutant", name, m.id]
        assert report.passed and report.notes and m.title in report.notes[0], (report.checks, report.notes)
    einsum = batch["correct einsum with -inf scores", "attention"]
    assert einsum.passed and "masked scores returned as -inf" in einsum.notes[0]


def test_every_wrong_student_version_ends_in_a_specific_diagnosis(batch):
    named = [(n, label) for n, label, _ in WRONG_VERSIONS
             if (batch[f"wrong {label}", n].diagnosis or {}).get("mistake") is not None]
    print(f"\n{len(named)} of {len(WRONG_VERSIONS)} wrong NumPy versions end in a specific diagnosis")
    assert len(named) == len(WRONG_VERSIONS)


def test_every_mistake_is_written_for_the_lesson_in_both_languages_with_the_glossary_s_words():
    import re

    from seqlab.learn.exercise import GENERIC_MISTAKES
    for owner, mistakes in [*((e.name, e.mistakes) for e in EXERCISES), ("generic", GENERIC_MISTAKES)]:
        ids = [m.id for m in mistakes]
        assert len(ids) == len(set(ids)), owner                  # one anchor mistake-<id> each
        for m in mistakes:
            assert m.title and m.explanation and m.title_zh and m.explanation_zh, (owner, m.id)
            en, zh = m.why
            assert len(en) > 60 and len(zh) > 30, (owner, m.id)
            for text in (m.title_zh, m.explanation_zh, zh):
                assert re.search(r"[\u4e00-\u9fff]", text), (owner, m.id, text)
                bare = re.sub(r"nn\.LSTM|BasicLSTMCell|nn\.GRU", "", text)
                assert not re.search(r"\bBPTT\b|\bLSTM\b|\bGRU\b", bare), (owner, m.id, text)   # 随时间反向传播, 长短期记忆, 门控循环单元
            if m.convention and not m.accepted:
                assert "this exercise uses" in m.explanation and "本练习使用" in m.explanation_zh, (owner, m.id)


@pytest.mark.parametrize("name", NUMPY_NAMES)
def test_each_sentence_of_the_contract_is_in_the_stub_and_is_a_check_of_the_reference(batch, name):
    ex = exercise(name)
    stub = " ".join(open(batch["stub", name].file, encoding="utf-8").read().split())
    checks = {c["name"] for c in batch["reference", name].checks}
    assert ex.spec
    for spec in ex.spec:
        assert " ".join(spec.sentence.split()) in stub, spec.sentence
        assert spec.id in checks or spec.id in ("values (worked example)", "runs"), spec.id


def test_train_bpe_without_pre_tokenization_is_not_told_it_merged_across_a_special_token(batch):
    d = batch["wrong whole pieces counted", "train_bpe"].diagnosis
    assert d["mistake"] == "no_pretokenization" and "spans two pre-tokens" in d["where"]
    assert batch["wrong special tokens not split off", "train_bpe"].diagnosis["mistake"] == "merges_across_special_tokens"


def test_a_backward_pass_s_diagnosis_says_which_gradients_are_right_and_which_steps_differ(batch):
    no_future = batch["wrong no future term", "rnn_bptt"].diagnosis
    assert no_future["mistake"] == "no_future_gradient"
    assert "the gradient from step t+1 is missing: output['xs'] as that mistake gives them" in no_future["where"]
    assert "right: Wy, by; wrong: Wx, Wh, b, xs, h0" in no_future["where"]
    last_only = batch["wrong weights from the last step only", "rnn_bptt"].diagnosis
    assert last_only["mistake"] == "shared_weights_not_summed"
    assert "only the last step's contribution" in last_only["where"] and "right: xs, h0" in last_only["where"]
    overwritten = batch["wrong weights overwritten", "rnn_bptt"].diagnosis
    assert "only the first step's contribution" in overwritten["where"]
    twice = batch["wrong divided by T twice", "truncated_bptt"].diagnosis
    assert twice["mistake"] == "divided_by_T_twice" and "the reference times 1/T" in twice["where"]
    a_last = batch["wrong a from the last step only", "scalar_recurrence_backward"].diagnosis
    assert "the gradient of a: output['a'] hold only the last step's contribution" in a_last["where"]


def test_a_forward_pass_s_diagnosis_names_the_structure_of_the_difference(batch):
    scale = batch["wrong divided by d", "attention"].diagnosis
    assert scale["mistake"] == "divided_by_d" and "the reference times 1/sqrt(d_k)" in scale["where"]
    axis = batch["wrong softmax down the columns", "attention"].diagnosis
    assert axis["mistake"] == "softmax_over_queries"
    window = batch["wrong strict inequality", "causal_mask"].diagnosis
    assert "False on the diagonal j = i" in window["where"]
    ahead = batch["wrong one step ahead", "causal_mask"].diagnosis
    assert "True on the diagonal j = i + 1" in ahead["where"]
    late = batch["wrong y from the state before", "rnn_forward"].diagnosis
    assert "shifted by one time step" in late["where"]
    heads = batch["wrong heads stacked last first", "multihead_attention"].diagnosis
    assert heads["mistake"] == "heads_reversed"
    assert "concat's column blocks hold the reference's heads in the order the worked example: [1, 0]; random inputs 1: " \
        "[2, 1, 0]; random inputs 2: [3, 2, 1, 0]" in heads["where"]
    sign = batch["wrong onehot minus probs", "softmax_cross_entropy"].diagnosis
    assert sign["mistake"] == "gradient_sign" and "times -1" in sign["where"]
    gru = batch["wrong z for the new state", "gru_cell_forward"].diagnosis
    assert gru["convention"] and "this exercise uses" in gru["explanation"]
