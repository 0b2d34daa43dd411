"""The unseen wrong versions (tests/learn/unseen_students.py), written in other styles than round 5's and
independently of the course's mutants, checked in one child process: each exercise's correct version
passes; each wrong version fails with its mistake's title, or with "no catalogued mistake matches" where
the catalogue does not know it, never with another mistake's title; the look-alike pairs get titles of
their own; a mistake that explains only part of the values is never the title, only the closest.

    python -m pytest tests/learn/test_unseen_wrong_versions.py -s     # prints named right / unnamed / named wrong
"""

from __future__ import annotations

import pytest

from seqlab.learn.catalog import all_exercises, exercise
from seqlab.learn.judge import check_many
from seqlab.learn.feedback import report_lines
from tests.learn.students import write_student
from tests.learn.unseen_students import CORRECT, LOOK_ALIKES, PARTIAL, WRONG

NO_MISTAKE = "no catalogued mistake matches"
VERSIONS = [(name, label, mistake) for name, versions in WRONG.items() for label, mistake, _ in versions]


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("unseen")
    items, keys = [], []
    for name, source in CORRECT.items():
        items.append((exercise(name), write_student(root / "correct", name, source)))
        keys.append(("correct", name))
    for k, (name, label, _) in enumerate(VERSIONS):
        source = next(s for l, _, s in WRONG[name] if l == label)
        items.append((exercise(name), write_student(root / f"wrong-{k}", name, source)))
        keys.append((name, label))
    return dict(zip(keys, check_many(items)))


def _title(name: str, mistake: str | None) -> str:
    if mistake is None:
        return NO_MISTAKE
    return next(m.title for m in exercise(name).mistakes if m.id == mistake)


def test_every_exercise_has_a_correct_version_and_three_wrong_ones():
    names = sorted(e.name for e in all_exercises())
    assert len(names) == 30
    assert sorted(CORRECT) == names
    assert all(len(WRONG.get(name, [])) >= 3 for name in names), {n: len(WRONG.get(n, [])) for n in names}
    labels = [(name, label) for name, label, _ in VERSIONS]
    assert len(labels) == len(set(labels))


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_the_correct_version_in_another_style_passes(batch, name):
    report = batch["correct", name]
    assert report.passed, (report.checks, report.diagnosis)


@pytest.mark.parametrize(("name", "label", "mistake"), VERSIONS, ids=[f"{n}-{label}" for n, label, _ in VERSIONS])
def test_a_wrong_version_gets_its_mistake_s_title_and_no_other(batch, name, label, mistake):
    report = batch[name, label]
    assert not report.passed
    d = report.diagnosis
    assert d is not None and d["mistake"] == mistake, (d, [c for c in report.checks if not c["passed"]])
    assert d["title"] == _title(name, mistake)
    assert d["where"]


def test_the_count_named_right_unnamed_named_wrong(batch):
    counts = {"named right": 0, "unnamed": 0, "named wrong": 0}
    for name, label, mistake in VERSIONS:
        got = batch[name, label].diagnosis["mistake"]
        counts["named wrong" if got != mistake else "unnamed" if got is None else "named right"] += 1
    print(f"\n{len(VERSIONS)} wrong versions of {len(WRONG)} exercises: " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    assert counts["named wrong"] == 0
    assert counts["named right"] + counts["unnamed"] == len(VERSIONS)


@pytest.mark.parametrize(("one", "other"), LOOK_ALIKES, ids=[f"{a[0]}: {a[1]} / {b[1]}" for a, b in LOOK_ALIKES])
def test_look_alikes_are_told_apart_by_their_titles(batch, one, other):
    first, second = batch[one].diagnosis, batch[other].diagnosis
    assert first["mistake"] and second["mistake"]
    assert first["title"] != second["title"], (first["title"], second["title"])


@pytest.mark.parametrize(("name", "label", "closest"), PARTIAL, ids=[f"{n}-{label}" for n, label, _ in PARTIAL])
def test_a_partial_match_is_never_the_headline(batch, name, label, closest):
    """The mistake explains part of the values (the hidden states, the cell) and a slip of the student's own the
    rest: no mistake is named; the closest is said under "no catalogued mistake matches", in both languages."""
    report = batch[name, label]
    d = report.diagnosis
    assert d["mistake"] is None and d["title"] == NO_MISTAKE
    assert d["closest"]["mistake"] == closest
    agree, total = d["closest"]["explains"]
    assert 0 < agree < total
    en = " ".join(" ".join(report_lines(report)).split())
    assert f"diagnosis: {NO_MISTAKE}" in en
    assert f"closest: {_title(name, closest)}, explains {agree} of {total} checked values" in en
    zh = "".join("".join(report_lines(report, "zh")).split())
    mistake = next(m for m in exercise(name).mistakes if m.id == closest)
    assert f"最接近的：{''.join(mistake.title_zh.split())}，解释了{total}个检查值中的{agree}个" in zh


# Each recogniser added with these versions, with the function in the step's check.py that shows its mistake (its mutant,
# or the variant it is there to recognise): with every mutant set aside, checking that function names the
# mistake by the recogniser alone.
RECOGNISED = [
    ("rnn_bptt", "no_future_gradient", "no_future_gradient"),
    ("rnn_bptt", "future_not_transposed", "future_not_transposed"),
    ("rnn_bptt", "future_term_without_tanh_derivative", "future_term_without_tanh_derivative"),
    ("gru_bptt", "no_future_gradient", "no_future_gradient"),
    ("gru_bptt", "reset_path_missing", "reset_path_missing"),
    ("gru_bptt", "direct_path_missing", "direct_path_missing"),
    ("multihead_attention", "heads_split_interleaved", "split_interleaved_merged_in_blocks"),
    ("multihead_attention", "heads_reversed", "heads_reversed"),
    ("multihead_attention", "softmax_over_queries", "softmax_over_queries"),
    ("multihead_attention", "weights_transposed", "weights_transposed"),
    ("attention", "mask_inverted", "mask_inverted_without_a_mask_too"),
    ("attention", "mask_ignored", "mask_ignored"),
    ("truncated_bptt", "gradient_crosses_chunks", "gradient_crosses_chunks"),
    ("softmax_cross_entropy", "not_averaged", "not_averaged"),
    ("softmax_cross_entropy", "gradient_not_divided", "gradient_not_divided"),
    ("rnn_forward", "bias_left_out", "output_bias_left_out"),
    ("rnn_forward", "bias_left_out", "both_biases_left_out"),
    ("lstm_cell_forward", "bias_left_out", "both_biases_left_out"),
    ("lstm_cell_forward", "sigmoid_instead_of_tanh", "sigmoid_of_the_cell"),
    ("lstm_cell_forward", "sigmoid_instead_of_tanh", "sigmoid_in_both"),
    ("gru_cell_forward", "bias_left_out", "recurrent_bias_left_out"),
    ("gru_cell_forward", "bias_left_out", "both_biases_left_out"),
    ("swiglu", "weights_transposed", "weights_transposed"),
    ("softmax", "max_not_subtracted", "max_not_subtracted"),
    ("softmax", "max_of_the_whole_tensor", "max_of_the_whole_tensor"),
    ("clip_global_norm", "always_rescaled", "always_rescaled"),
    ("choose_merge", "concatenation_compared", "concatenation_compared"),
    ("attention_backward", "softmax_jacobian_diagonal_only", "jacobian_diagonal"),
    ("cross_entropy", "log_of_softmax", "log_of_softmax"),
]


@pytest.fixture(scope="module")
def recognised(tmp_path_factory):
    import dataclasses
    root = tmp_path_factory.mktemp("recognised")
    stripped = {}
    for name in {n for n, _, _ in RECOGNISED}:
        ex = exercise(name)
        stripped[name] = dataclasses.replace(ex, mistakes=tuple(dataclasses.replace(m, implementation=None)
                                                                for m in ex.mistakes))
    from seqlab.learn.courses import builtin
    from tests.learn.bundle import bundle
    items = []
    for k, (name, _, function) in enumerate(RECOGNISED):        # self-contained: seqlab is not importable
        source = bundle(getattr(builtin().folder(name).module(), function), name)
        items.append((stripped[name], write_student(root / str(k), name, source)))
    return dict(zip(RECOGNISED, check_many(items)))


@pytest.mark.parametrize(("name", "mistake", "function"), RECOGNISED, ids=[f"{n}-{f}" for n, _, f in RECOGNISED])
def test_a_new_recogniser_names_its_mistake_with_the_mutants_set_aside(recognised, name, mistake, function):
    d = recognised[name, mistake, function].diagnosis
    assert d is not None and d["mistake"] == mistake and not d["exact"], d
