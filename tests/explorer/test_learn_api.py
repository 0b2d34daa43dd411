"""`seqlab explore --workspace DIR`: the student's exercise on a widget's inputs beside the reference
(POST /api/learn/yours, /api/learn/workspace), against NumPy computed here."""

from __future__ import annotations

import re
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from seqlab.cli import build_parser
from seqlab.explorer.learn_api import TIME_LIMIT, widget_exercises
from seqlab.explorer.server import STATIC_DIR
from tests.learn.bundle import student_source
from tests.explorer.conftest import client_for, serving

# an attention written here, in loops, with the 1/sqrt(d) scale forgotten
NO_SCALE = """
import numpy as np

def attention(q, keys, values, mask=None):
    q, keys, values = np.atleast_2d(q), np.asarray(keys), np.asarray(values)
    n, m = len(q), len(keys)
    scores = np.zeros((n, m))
    for i in range(n):
        for j in range(m):
            scores[i, j] = sum(q[i, k] * keys[j, k] for k in range(q.shape[1]))
    visible = np.ones((n, m), bool) if mask is None else np.broadcast_to(mask, (n, m))
    weights = np.zeros((n, m))
    for i in range(n):
        e = [np.exp(scores[i, j]) if visible[i, j] else 0.0 for j in range(m)]
        weights[i] = np.array(e) / sum(e)
    return {"scores": scores, "weights": weights, "output": weights @ values, "fully_masked_rows": []}
"""


def _write(ws: Path, name: str, body: str) -> Path:
    ws.mkdir(parents=True, exist_ok=True)
    path = ws / f"{name}.py"
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def _reference_file(ws: Path, name: str) -> Path:
    """The reference solution as the student's file."""
    return _write(ws, name, student_source(name))


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("learn") / "ws"


@pytest.fixture(scope="module")
def learn(ws):
    ws.mkdir(parents=True, exist_ok=True)
    with serving() as server:
        server.workspace = str(ws)
        yield client_for(server)


def _softmax_rows(s):
    e = np.exp(s - s.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


INPUTS = {"queries": [[1.0, 0.5], [0.0, 2.0], [-1.0, 1.0]], "keys": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
          "values": [[2.0, 1.0], [10.0, -1.0], [4.0, 0.0]], "causal": True, "reverse_mask": False,
          "padding": False, "valid_length": 3}


def _oracle(scale: bool):
    q, k, v = (np.array(INPUTS[n]) for n in ("queries", "keys", "values"))
    scores = q @ k.T / (np.sqrt(q.shape[1]) if scale else 1.0)
    visible = np.tril(np.ones((3, 3), bool))
    weights = _softmax_rows(np.where(visible, scores, -np.inf))
    return {"scores": scores, "weights": weights, "output": weights @ v}


def test_the_reference_as_yours_has_no_difference(learn, ws):
    _reference_file(ws, "attention")
    data = learn.ok("learn/yours", {"widget": "attention", "exercise": "attention", "inputs": INPUTS})
    (call,) = data["calls"]
    assert data["implemented"] and data["failure"] is None and call["error"] is None
    assert call["difference"] is None and call["marks"] == []
    assert call["yours"] == call["reference"]
    expected = _oracle(scale=True)
    assert np.allclose(call["reference"]["weights"], expected["weights"])
    assert np.allclose(call["reference"]["output"], expected["output"])
    assert data["file"] == str(ws / "attention.py") and data["labels"] == [""]


def test_a_missing_scale_is_named_element_by_element(learn, ws):
    _write(ws, "attention", NO_SCALE)
    data = learn.ok("learn/yours", {"widget": "attention", "exercise": "attention", "inputs": INPUTS})
    (call,) = data["calls"]
    right, wrong = _oracle(scale=True), _oracle(scale=False)
    # the first difference: the first score that is not 0, expected value = the scaled one computed here
    assert call["difference"]["where"] == "output['scores'][0, 0]"
    assert call["difference"]["expected"] == pytest.approx(right["scores"][0, 0])
    assert call["difference"]["actual"] == pytest.approx(wrong["scores"][0, 0])
    assert re.fullmatch(r"output\['scores'\]\[0, 0\]: expected 0\.7071\d*, got 1", call["difference"]["message"])
    # every differing element is marked, and only those
    marks = {tuple(m) for m in call["marks"]}
    for key in ("scores", "weights", "output"):
        bad = ~np.isclose(wrong[key], right[key], rtol=1e-6, atol=1e-8)
        assert {(key, *map(int, i)) for i in np.argwhere(bad)} == {m for m in marks if m[0] == key}, key
    assert ("weights", 0, 0) not in marks and ("weights", 2, 1) in marks   # row 0 sees one key: weight 1 either way
    assert np.allclose(call["yours"]["weights"], wrong["weights"])


def test_cross_attention_widget_uses_the_same_exercise(learn, ws):
    _reference_file(ws, "attention")
    inputs = {"queries": [[1.0, 0.0]], "keys": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], "values": [[2.0], [10.0], [4.0]],
              "padding": True, "valid_length": 2}
    data = learn.ok("learn/yours", {"widget": "cross_attention", "exercise": "attention", "inputs": inputs})
    weights = data["calls"][0]["reference"]["weights"][0]
    expected = _softmax_rows(np.array([[1.0, 0.0]]) / np.sqrt(2))[0]
    assert np.allclose(weights, [*expected, 0.0]) and data["calls"][0]["difference"] is None


def test_an_endless_loop_hits_the_time_limit_and_the_server_stays_up(learn, ws):
    _write(ws, "causal_mask", "def causal_mask(n):\n    while True:\n        pass\n")
    start = time.monotonic()
    status, data = learn.post("learn/yours", {"widget": "causal_mask", "exercise": "causal_mask",
                                              "inputs": {"tokens": ["A", "B"]}}, timeout=120)
    # a clock, as the time limit is one: the loop never ends, so only the limit ends the request; 4x
    # the limit is room for starting the child on a loaded machine, far below never
    assert status == 200 and time.monotonic() - start < 4 * TIME_LIMIT, data
    assert data["timed_out"] and not data["implemented"]
    assert f"did not finish within {TIME_LIMIT:g} s" in data["failure"]
    assert learn.ok("causal_mask", {"tokens": ["A", "B"]})["visible"] == 3   # the next request is answered


def test_code_that_raises_or_returns_another_shape_gets_its_message(learn, ws):
    _write(ws, "clip_global_norm", "def clip_global_norm(grads, threshold):\n    return grads / 0 + undefined_name\n")
    data = learn.ok("learn/yours", {"widget": "clipping", "exercise": "clip_global_norm", "inputs": {}})
    error = data["calls"][0]["error"]
    assert "clip_global_norm.py, line 2: NameError" in error and "undefined_name" in error
    _write(ws, "clip_global_norm", "import numpy as np\ndef clip_global_norm(grads, threshold):\n"
                                   "    return np.array([1.0, 2.0, 3.0]), 5.0\n")
    data = learn.ok("learn/yours", {"widget": "clipping", "exercise": "clip_global_norm",
                                    "inputs": {"vector": [3.0, 4.0], "threshold": 2.0}})
    difference = data["calls"][0]["difference"]
    assert difference["message"] == "output[0] has shape (3,), expected (2,)"
    # coordinate-wise clipping (a catalogued mistake): the clipped vector differs, the norm does not
    _write(ws, "clip_global_norm", "import numpy as np\ndef clip_global_norm(grads, threshold):\n"
                                   "    return np.clip(grads, -threshold, threshold), float(np.linalg.norm(grads))\n")
    data = learn.ok("learn/yours", {"widget": "clipping", "exercise": "clip_global_norm",
                                    "inputs": {"vector": [3.0, 4.0], "threshold": 2.0}})
    call = data["calls"][0]
    assert np.allclose(call["reference"][0], [1.2, 1.6]) and call["reference"][1] == pytest.approx(5.0)
    assert call["marks"] == [[0, 0], [0, 1]]
    assert call["difference"]["message"] == "output[0][0]: expected 1.2, got 2"
    assert data["check"]["diagnosis"]["mistake"] == "coordinatewise" and not data["check"]["passed"]


def test_when_yours_differs_the_full_check_s_diagnosis_comes_once_per_edit(learn, ws, monkeypatch):
    import seqlab.learn.checking as checking
    from seqlab.explorer import learn_api
    from seqlab.learn.catalog import exercise
    from seqlab.learn.checking import latest_check
    from seqlab.learn.workspace import file_sha256

    ran = []
    real = checking.check_file
    monkeypatch.setattr(checking, "check_file", lambda *a, **k: ran.append(a[1]) or real(*a, **k))
    path = _write(ws, "attention", NO_SCALE + "# a version of the file no test has checked yet\n")
    data = learn.ok("learn/yours", {"widget": "attention", "exercise": "attention", "inputs": INPUTS})
    check = data["check"]
    mistake = next(m for m in exercise("attention").mistakes if m.id == "missing_scale")
    assert ran == ["attention"] and not check["passed"] and "scores" in check["failed"]
    d = check["diagnosis"]
    assert d["mistake"] == "missing_scale" and d["title"] == [mistake.title, mistake.title_zh]
    assert d["explanation"] == [mistake.explanation, mistake.explanation_zh]
    assert "sqrt(d_k)" in d["where"]
    assert d["read"] == {"step": "attention", "anchor": "mistake-missing_scale", "widget": "w-attention"}
    # the check is the one `seqlab learn check` records, with the hash of the file it checked
    recorded = latest_check(ws, "attention")
    assert recorded["sha256"] == file_sha256(path) and recorded["diagnosis"]["mistake"] == "missing_scale"
    # other inputs, the other widget of the exercise: the same file is not checked again
    other = learn.ok("learn/yours", {"widget": "cross_attention", "exercise": "attention",
                                     "inputs": {"queries": [[1.0, 1.0]], "keys": [[1.0, 0.0], [0.0, 2.0]],
                                                "values": [[1.0], [2.0]]}})
    assert other["calls"][0]["difference"] and other["check"] == check and ran == ["attention"]
    learn_api._CHECKED.clear()           # a new server: the check recorded in progress.json is of this version
    assert learn.ok("learn/yours", {"widget": "attention", "exercise": "attention", "inputs": INPUTS})["check"] == check
    assert ran == ["attention"]
    # an edit is checked again; yours equal to the reference on these inputs: no check at all
    _write(ws, "attention", NO_SCALE + "# edited again\n")
    assert learn.ok("learn/yours", {"widget": "attention", "exercise": "attention", "inputs": INPUTS})["check"] == check
    assert ran == ["attention"] * 2
    zero = dict(INPUTS, queries=[[0.0, 0.0]] * 3)
    assert learn.ok("learn/yours", {"widget": "attention", "exercise": "attention", "inputs": zero})["check"] is None
    _reference_file(ws, "attention")
    assert learn.ok("learn/yours", {"widget": "attention", "exercise": "attention", "inputs": INPUTS})["check"] is None
    assert ran == ["attention"] * 2


def test_a_stub_says_not_implemented_yet(learn, ws):
    from seqlab.learn.catalog import exercise
    from seqlab.learn.workspace import start

    path, written = start(ws, exercise("gru_cell_forward"))
    assert written
    data = learn.ok("learn/yours", {"widget": "gru", "exercise": "gru_cell_forward", "inputs": {}})
    assert data["not_implemented"] and not data["implemented"] and "NotImplementedError" in data["calls"][0]["error"]
    listing = learn.ok("learn/workspace", {})
    assert listing["workspace"] == str(ws)
    assert listing["exercises"]["gru_cell_forward"] == {"present": True, "stub": True, "file": str(path),
                                                      "title": ["Implement the GRU cell", "实现 GRU 单元"]}
    assert listing["exercises"]["lstm_cell_forward"]["present"] is False
    assert listing["widgets"]["attention"] == ["attention"]


def test_the_gate_widgets_map_to_the_cells_exactly(learn, ws):
    """The LSTM and GRU sliders become a one-unit cell whose gates are the sliders' values."""
    _reference_file(ws, "lstm_cell_forward")
    gates = {"c_prev": 1.5, "f": 0.3, "i": 1.0, "g": -0.6, "o": 0.0}
    (call,) = learn.ok("learn/yours", {"widget": "lstm", "exercise": "lstm_cell_forward", "inputs": gates})["calls"]
    c = 0.3 * 1.5 + 1.0 * -0.6
    assert np.allclose(call["reference"], [[0.0 * np.tanh(c)], [c]], atol=1e-9) and call["difference"] is None
    _reference_file(ws, "gru_cell_forward")
    for convention, z_old in (("keep_old", 0.25), ("keep_new", 0.75)):
        inputs = {"h_prev": 0.8, "z": 0.25, "candidate": -0.5, "convention": convention}
        (call,) = learn.ok("learn/yours", {"widget": "gru", "exercise": "gru_cell_forward", "inputs": inputs})["calls"]
        assert call["reference"] == pytest.approx([z_old * 0.8 + (1 - z_old) * -0.5]), convention


def test_bptt_of_the_recurrence_on_the_widgets_inputs(learn, ws):
    _write(ws, "scalar_recurrence_backward", """
        import numpy as np
        def scalar_recurrence_backward(a, xs, h0=0.0):
            hs, h = [], h0
            for x in xs:
                h = np.tanh(a * h + x)
                hs.append(h)
            dh, da, dxs = 1.0, 0.0, np.zeros(len(xs))
            for t in reversed(range(len(xs))):
                local = dh * (1 - hs[t] ** 2)
                dxs[t] = local
                da = local * (hs[t - 1] if t else h0)     # overwritten, not summed: a mistake
                dh = local * a
            return {"a": da, "xs": dxs, "h0": dh}
        """)
    inputs = {"a": 0.9, "h0": 0.2, "xs": [0.5, -1.0, 0.3, 0.8]}
    data = learn.ok("learn/yours", {"widget": "recurrence", "exercise": "scalar_recurrence_backward", "inputs": inputs})
    (call,) = data["calls"]

    def final_state(a, xs, h0):
        h = h0
        for x in xs:
            h = np.tanh(a * h + x)
        return h
    eps = 1e-6
    da = (final_state(0.9 + eps, inputs["xs"], 0.2) - final_state(0.9 - eps, inputs["xs"], 0.2)) / (2 * eps)
    assert call["reference"]["a"] == pytest.approx(da, rel=1e-6)
    assert call["marks"] == [["a"]] and call["difference"]["expected"] == pytest.approx(da, rel=1e-6)
    assert np.allclose(call["yours"]["xs"], call["reference"]["xs"])


def test_bpe_merges_are_shown_as_pieces(learn, ws):
    _write(ws, "choose_merge", """
        def choose_merge(pair_counts, token_bytes):
            best = max(pair_counts.values())
            tied = [p for p, c in pair_counts.items() if c == best]
            return min(tied, key=lambda p: (token_bytes[p[0]], token_bytes[p[1]]))   # ties to the smaller: a mistake
        """)
    inputs = {"word_counts": {"low": 5, "lower": 2, "widest": 3, "newest": 6}, "num_merges": 2}
    data = learn.ok("learn/yours", {"widget": "bpe", "exercise": "choose_merge", "inputs": inputs})
    assert data["labels"] == ["merge 1", "merge 2"]
    first = data["calls"][0]
    # "e s" and "s t" both occur 9 times: the greater pair of bytes, "s t", wins
    assert first["reference"] == ["s", "t"] and first["yours"] == ["e", "s"]
    assert first["difference"]["message"] == "the chosen pair: expected “s t”, got “e s”"


def test_every_widget_runs_the_reference_without_a_difference(learn, ws):
    names = sorted({n for ns in widget_exercises().values() for n in ns})
    assert len(widget_exercises()) >= 5 and {"attention", "scalar_recurrence_backward"} <= set(names)
    for name in ("multihead_attention", "scalar_recurrence", "causal_mask"):
        _reference_file(ws, name)
    for widget, name in (("multihead", "multihead_attention"), ("recurrence", "scalar_recurrence"),
                         ("causal_mask", "causal_mask")):
        data = learn.ok("learn/yours", {"widget": widget, "exercise": name, "inputs": {}})
        assert data["implemented"] and [c["difference"] for c in data["calls"]] == [None], widget
    mask = learn.ok("learn/yours", {"widget": "causal_mask", "exercise": "causal_mask",
                                    "inputs": {"tokens": list("ABCD")}})["calls"][0]["reference"]
    assert mask == np.tril(np.ones((4, 4), bool)).tolist()


def test_bad_requests_are_400_with_a_message(learn):
    cases = [
        ({"exercise": "attention", "inputs": {"queries": [[1.0, 0.0, 2.0]]}}, "queries have width 3 but keys have width 2"),
        ({"exercise": "attention", "inputs": {"queries": "1 0"}}, "queries must be a list of rows"),
        ({"exercise": "attention", "inputs": {"temperature": 2}}, "unknown field(s): temperature"),
        ({"exercise": "attention", "inputs": [1, 2]}, "inputs must be an object"),
        ({"exercise": "no_such"}, "no widget shows the exercise 'no_such'"),
        ({"exercise": "attention", "widget": "lstm"}, "does not show attention; it is shown by attention, cross_attention"),
        ({"exercise": 3}, "exercise must be the name of an exercise"),
        ({"exercise": "attention", "extra": 1}, "unknown field(s): extra"),
        ({"exercise": "multihead_attention", "inputs": {"d_model": 6, "num_heads": 4}}, "must split evenly"),
    ]
    for payload, message in cases:
        status, body = learn.post("learn/yours", payload)
        assert status == 400 and message in body["error"], (payload, body)
    status, body = learn.post("learn/yours", raw=b'{"exercise": ')
    assert status == 400 and "malformed JSON" in body["error"]
    status, body = learn.post("learn/workspace", {"x": 1})
    assert status == 400 and "unknown field(s): x" in body["error"]


def test_without_a_workspace_the_endpoints_say_so(client):
    assert client.ok("learn/workspace", {})["workspace"] is None
    status, body = client.post("learn/yours", {"exercise": "attention", "inputs": {}})
    assert status == 400 and body["code"] == "learn_no_workspace" and "--workspace DIR" in body["error"]
    status, _, _ = client.request("GET", "/api/learn/yours")
    assert status == 405


def test_explore_takes_a_workspace_and_every_label_of_the_panel_exists():
    assert build_parser().parse_args(["explore"]).workspace is None
    assert build_parser().parse_args(["explore", "--workspace", "seqlab-learn"]).workspace == "seqlab-learn"
    from tests.explorer.test_i18n import _strings

    used = set(re.findall(r'\bt\("([\w.]+\w)"', (STATIC_DIR / "learn.js").read_text(encoding="utf-8")))
    assert len(used) >= 9 and used <= set(_strings())


def test_a_child_that_dies_is_reported_and_the_server_answers(learn, ws):
    _write(ws, "lstm_cell_forward", "import os\nos._exit(3)\n")
    data = learn.ok("learn/yours", {"widget": "lstm", "exercise": "lstm_cell_forward", "inputs": {}})
    assert "died (exit status 3)" in data["failure"] and not data["implemented"]
    assert learn.ok("learn/workspace", {})["exercises"]["lstm_cell_forward"]["present"]


def test_explore_keeps_the_workspace_on_the_server(monkeypatch, capsys, tmp_path):
    from seqlab.explorer import server as server_module

    seen = []
    monkeypatch.setattr(server_module.ExplorerServer, "serve_forever", lambda self: seen.append(self.workspace))
    missing = tmp_path / "not-made-yet"
    args = build_parser().parse_args(["explore", "--port", "0", "--no-browser", "--workspace", str(missing)])
    assert args.func(args) == 0 and seen == [str(missing)]
    assert f"warning: --workspace {missing} is not a directory" in capsys.readouterr().err
    args = build_parser().parse_args(["explore", "--port", "0", "--no-browser"])
    assert args.func(args) == 0 and seen[-1] == "seqlab-learn"     # the workspace of `seqlab learn`'s default
    assert "warning: --workspace" not in capsys.readouterr().err


def test_nan_and_infinity_in_yours_come_back_as_json(learn, ws):
    _write(ws, "clip_global_norm", "import numpy as np\ndef clip_global_norm(grads, threshold):\n"
                                   "    return grads * np.array([np.nan, np.inf]), -np.inf\n")
    status, data = learn.post("learn/yours", {"widget": "clipping", "exercise": "clip_global_norm",
                                              "inputs": {"vector": [3.0, 4.0], "threshold": 2.0}})
    assert status == 200
    (call,) = data["calls"]
    assert call["yours"] == [["NaN", "inf"], "-inf"] and call["marks"] == [[0, 0], [0, 1], [1]]
    assert call["difference"]["message"] == "output[0][0]: expected 1.2, got nan"
