"""seqlab.learn.flags: what the teacher is told to look at, never a grade changed. Renaming variables hides
no copy; short files are not compared; a file like seqlab's published solution gets a softer note."""

from __future__ import annotations

import inspect
import textwrap

from seqlab.learn.catalog import exercise
from seqlab.learn.flags import MIN_TOKENS, NEAR, alike, flag_grades, tokens
from seqlab.learn.gradebook import Grade
from tests.learn.students import write_student

BPTT = """
    import numpy as np
    def rnn_bptt(params, xs, h0, dys, dh_last=None):
        Wx, Wh, b = params["Wx"], params["Wh"], params["b"]
        hs, h = [], h0
        for x in xs:
            h = np.tanh(Wx @ x + Wh @ h + b)
            hs.append(h)
        grads = {"Wx": np.zeros_like(Wx), "Wh": np.zeros_like(Wh), "b": np.zeros_like(b), "xs": np.zeros_like(xs)}
        dh_next = np.zeros_like(h0) if dh_last is None else dh_last
        for t in reversed(range(len(xs))):
            dh = dys[t] + dh_next
            da = dh * (1 - hs[t] ** 2)
            prev = hs[t - 1] if t > 0 else h0
            grads["Wx"] += np.outer(da, xs[t])
            grads["Wh"] += np.outer(da, prev)
            grads["b"] += da
            grads["xs"][t] = Wx.T @ da
            dh_next = Wh.T @ da
        grads["h0"] = dh_next
        return grads

    def test_rnn_bptt():
        assert True
    """


def _renamed(source: str) -> str:
    for old, new in (("params", "p"), ("xs", "inputs"), ("dh_next", "carry"), ("da", "pre"), ("grads", "out"),
                     ("hs", "states"), ("prev", "before")):
        source = source.replace(old, new)
    return source.replace("def test_rnn_bptt():\n        assert True", "def test_mine():\n        pass")


def _grade(student: str, name: str, path) -> Grade:
    return Grade(student, name, True, [], file=str(path))


def test_a_copy_with_other_names_is_flagged_for_both_and_no_grade_changes(tmp_path):
    ann = write_student(tmp_path / "ann", "rnn_bptt", BPTT)
    ben = write_student(tmp_path / "ben", "rnn_bptt", _renamed(BPTT))
    own = write_student(tmp_path / "cal", "rnn_bptt", BPTT.replace("for t in reversed(range(len(xs))):",
                                                                   "t = len(xs)\n        while t > 0:\n            t -= 1")
                        .replace("            dh = dys[t]", "            dh = dys[t]"))
    grades = [_grade("ann", "rnn_bptt", ann), _grade("ben", "rnn_bptt", ben), _grade("cal", "rnn_bptt", own)]
    flag_grades(grades, [exercise("rnn_bptt")])
    assert "the same as ben's file, names aside" in grades[0].flags
    assert "the same as ann's file, names aside" in grades[1].flags
    assert all(g.passed for g in grades)                                       # a flag changes no grade
    assert len(tokens(ann.read_text(), "rnn_bptt")) >= MIN_TOKENS
    share = alike(tokens(ann.read_text(), "rnn_bptt"), tokens(own.read_text(), "rnn_bptt"))
    near = [f for f in grades[2].flags if "ann's" in f]
    assert (share >= NEAR) == bool(near) and (not near or "alike, names aside" in near[0])


def test_short_files_are_not_compared_and_the_student_s_tests_do_not_count(tmp_path):
    mask = "import numpy as np\ndef causal_mask(n):\n    return np.tril(np.ones((n, n), dtype=bool))\n"
    a = write_student(tmp_path / "a", "causal_mask", mask)
    b = write_student(tmp_path / "b", "causal_mask", mask)
    grades = [_grade("a", "causal_mask", a), _grade("b", "causal_mask", b)]
    flag_grades(grades, [exercise("causal_mask")])
    assert grades[0].flags == grades[1].flags == []
    long_test = "\n".join(f"    x{k} = {k}" for k in range(200))
    same_tests = [write_student(tmp_path / s, "rnn_bptt", textwrap.dedent(f"""
        def rnn_bptt(params, xs, h0, dys, dh_last=None):
            return {k}
        def test_rnn_bptt():
        """) + long_test + "\n") for k, s in enumerate(("c", "d"))]
    grades = [_grade(s, "rnn_bptt", p) for s, p in zip("cd", same_tests)]
    flag_grades(grades, [exercise("rnn_bptt")])
    assert grades[0].flags == grades[1].flags == []                          # alike only in their own tests


def test_importing_seqlab_and_the_published_solution_are_said(tmp_path):
    from seqlab.learn.catalog import reference
    published = textwrap.dedent(inspect.getsource(reference("rnn_bptt")))
    module = inspect.getmodule(reference("rnn_bptt"))
    copied = write_student(tmp_path / "eve", "rnn_bptt", "import numpy as np\n" + published)
    importer = write_student(tmp_path / "mal", "rnn_bptt", "from seqlab.labs.rnn import rnn_bptt\n")
    grades = [_grade("eve", "rnn_bptt", copied), _grade("mal", "rnn_bptt", importer)]
    flag_grades(grades, [exercise("rnn_bptt")])
    assert any(f.startswith("like seqlab's published solution (seqlab learn solution rnn_bptt)") for f in grades[0].flags), \
        (grades[0].flags, module.__name__)
    assert grades[1].flags == ["imports seqlab (line 1: seqlab.labs.rnn.rnn_bptt)"]
