"""The explorer's "yours" panels (``seqlab explore --workspace DIR``): the student's own function of
an Implement exercise (``DIR/NAME.py``, see ``seqlab learn``) on the inputs a lab widget has now,
beside the reference, with every differing element named.

    POST /api/learn/workspace {}  ->  {"workspace": "seqlab-learn" | null, "widgets": {widget: [NAME, ...]},
                                       "exercises": {NAME: {"present", "stub", "file", "title"}}}
    POST /api/learn/yours {"widget": "attention", "exercise": "attention", "inputs": {...}}
                                  ->  seqlab.learn.side_by_side.yours_and_reference(...), "labels", and
                                      "check": the full check's diagnosis when yours differs (full_check)

``inputs`` is the body the widget itself sends to ``/api/<widget>``; it is validated with the same
limits, then mapped to the exercise function's arguments (the widget's LSTM gates become the biases
of a one-unit cell with zero weights, so the cell's gates are exactly the sliders). The student's
code runs in a child process with a time limit (``seqlab.learn.runner``): a crash, an endless loop
or a wrong shape is a message in the answer, and the server stays up. When the student's function
differs from the reference (or raises) on the widget's inputs, the exercise's full check runs too,
as `seqlab learn check` runs it (``seqlab.learn.checking.check_file``: the same runner and trust
boundary, recorded in progress.json), once per version of the file (keyed by its hash), and its
diagnosis comes with the answer: the title, where, and the lesson's mistake to read.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from seqlab.explorer import api
from seqlab.explorer.course_api import CHECKING, COURSE_ENDPOINTS
from seqlab.explorer.validation import Payload, RequestError

TIME_LIMIT = 4.0   # seconds for one widget's call of the student's code (numpy's import included)
# A page opening asks for every panel at once: at most this many child processes run together.
_RUNNING = threading.BoundedSemaphore(3)

def widget_exercises() -> dict[str, tuple[str, ...]]:
    """widget (its /api/<name>) -> the exercises whose "yours" it shows, in the path's order: found from
    each exercise's step.toml (``panels``), not kept here."""
    from seqlab.learn.courses import active
    course = active()
    found: dict[str, list[str]] = {}
    for name in course.order:
        for widget in course.folder(name).record.get("panels", ()):
            found.setdefault(widget, []).append(name)
    return {widget: tuple(names) for widget, names in found.items()}

Calls = list[tuple[tuple, dict]]


# --- widget inputs -> the exercise's calls ---------------------------------------------------------
def _recurrence(p: Payload, name: str) -> tuple[Calls, list[str]]:
    d = api.DEFAULTS["recurrence"]
    a = p.number("a", d["a"], -10, 10)
    h0 = p.number("h0", d["h0"], -1, 1)
    xs = np.array(p.vector("xs", d["xs"], 1, api.MAX_SEQUENCE, -api.MAX_VALUE, api.MAX_VALUE))
    p.finish()
    return [((a, xs), {"h0": h0})], [""]


def _clipping(p: Payload, name: str) -> tuple[Calls, list[str]]:
    d = api.DEFAULTS["clipping"]
    vector = np.array(p.vector("vector", d["vector"], 1, api.MAX_DIM, -api.MAX_VALUE, api.MAX_VALUE))
    threshold = p.number("threshold", d["threshold"], 1e-6, api.MAX_VALUE)
    p.finish()
    return [((vector, threshold), {})], [""]


def _logit(p: float) -> float:
    p = min(max(p, 1e-12), 1 - 1e-12)   # a gate of exactly 0 or 1 needs an infinite bias
    return math.log(p / (1 - p))


def _atanh(x: float) -> float:
    return math.atanh(min(max(x, -1 + 1e-12), 1 - 1e-12))


def _lstm(p: Payload, name: str) -> tuple[Calls, list[str]]:
    d = api.DEFAULTS["lstm"]
    c_prev = p.number("c_prev", d["c_prev"], -api.MAX_VALUE, api.MAX_VALUE)
    f, i, g, o = (p.number("f", d["f"], 0, 1), p.number("i", d["i"], 0, 1),
                  p.number("g", d["g"], -1, 1), p.number("o", d["o"], 0, 1))
    p.finish()
    # one unit, zero weights: the gate pre-activations are the biases, stacked (i, f, g, o)
    params = {"Wx": np.zeros((4, 1)), "Wh": np.zeros((4, 1)), "bh": np.zeros(4),
              "bx": np.array([_logit(i), _logit(f), _atanh(g), _logit(o)])}
    return [((params, np.zeros(1), np.zeros(1), np.array([c_prev])), {})], [""]


def _gru(p: Payload, name: str) -> tuple[Calls, list[str]]:
    d = api.DEFAULTS["gru"]
    h_prev = p.number("h_prev", d["h_prev"], -api.MAX_VALUE, api.MAX_VALUE)
    z = p.number("z", d["z"], 0, 1)
    candidate = p.number("candidate", d["candidate"], -1, 1)
    convention = p.choice("convention", d["convention"], api.GRU_CONVENTIONS)
    p.finish()
    keep_old = z if convention == "keep_old" else 1.0 - z   # the exercise's z keeps the OLD state
    # one unit, zero weights: r (irrelevant then), z and the candidate n come from the biases (r, z, n)
    params = {"Wx": np.zeros((3, 1)), "Wh": np.zeros((3, 1)), "bh": np.zeros(3),
              "bx": np.array([0.0, _logit(keep_old), _atanh(candidate)])}
    return [((params, np.zeros(1), np.array([h_prev])), {})], [""]


def _attention(p: Payload, name: str, cross: bool = False) -> tuple[Calls, list[str]]:
    d = api.DEFAULTS["cross_attention" if cross else "attention"]
    queries, keys, values = api._attention_inputs(p, d)
    causal = False if cross else p.boolean("causal", d["causal"])
    reverse_mask = False if cross else p.boolean("reverse_mask", d["reverse_mask"])
    padding = p.boolean("padding", d["padding"])
    valid_length = p.integer("valid_length", d["valid_length"], 0, api.MAX_TOKENS)
    p.finish()
    mask = api._attention_mask(len(queries), len(keys), causal, reverse_mask, padding, valid_length)
    return [((queries, keys, values), {} if mask is None else {"mask": np.asarray(mask, dtype=bool)})], [""]


def _causal_mask(p: Payload, name: str) -> tuple[Calls, list[str]]:
    tokens = p.strings("tokens", api.DEFAULTS["causal_mask"]["tokens"], 1, api.MAX_TOKENS, 12)
    p.finish()
    return [((len(tokens),), {})], [""]


MULTIHEAD_SEED = 0


def _multihead(p: Payload, name: str) -> tuple[Calls, list[str]]:
    from seqlab.labs.attention import init_multihead_params

    n, d_model, num_heads = api.multihead_sizes(p)
    # the widget traces shapes; the functions need numbers: seeded random X and weights of those shapes
    rng = np.random.default_rng(MULTIHEAD_SEED)
    params = init_multihead_params(d_model, rng)
    x = rng.normal(size=(n, d_model))
    return [((x, x.copy(), params, num_heads), {})], [""]


def _bpe(p: Payload, name: str) -> tuple[Calls, list[str]]:
    from seqlab.tokenizer import merge_trace

    d = api.DEFAULTS["bpe"]
    word_counts = p.word_counts("word_counts", d["word_counts"], 12, 24, 10_000)
    num_merges = p.integer("num_merges", d["num_merges"], 1, 40)
    p.finish()
    calls, labels = [], []
    for k, step in enumerate(merge_trace(word_counts, num_merges), 1):
        # the step's pieces get ids 0, 1, ... in order of appearance; token_bytes[id] is the piece's bytes
        pieces: list[str] = []
        for left, right, _ in step["pair_counts"]:
            pieces += [s for s in (left, right) if s not in pieces]
        ids = {s: i for i, s in enumerate(pieces)}
        counts = {(ids[left], ids[right]): int(count) for left, right, count in step["pair_counts"]}
        calls.append(((counts, [s.encode("utf-8") for s in pieces]), {}))
        labels.append(f"merge {k}")
    return calls, labels


def _bpe_shown(result: dict, calls: Calls) -> None:
    """Pairs of ids as the pieces they name ("s", "t"), in the values and the messages."""
    for entry, ((_, token_bytes), _) in zip(result["calls"], calls):
        def text(pair, token_bytes=token_bytes):
            if not isinstance(pair, list):
                return pair
            return [token_bytes[i].decode("utf-8", "replace") if isinstance(i, int) and 0 <= i < len(token_bytes)
                    else i for i in pair]
        entry["reference"], entry["yours"] = text(entry["reference"]), text(entry["yours"])
        if entry["difference"] and entry["yours"] is not None:
            expected, got = (" ".join(map(str, v)) for v in (entry["reference"], entry["yours"]))
            entry["difference"]["message"] = f"the chosen pair: expected “{expected}”, got “{got}”"


MAPPINGS: dict[str, Callable[[Payload, str], tuple[Calls, list[str]]]] = {
    "recurrence": _recurrence, "clipping": _clipping, "lstm": _lstm, "gru": _gru,
    "attention": _attention, "cross_attention": lambda p, name: _attention(p, name, cross=True),
    "causal_mask": _causal_mask, "multihead": _multihead, "bpe": _bpe,
}
SHOWN = {"bpe": _bpe_shown}


# --- the full check's diagnosis, once per version of a file -------------------------------------------------
_CHECKED: dict[tuple[str, str, str], dict] = {}      # (workspace, exercise, file sha256) -> full_check's answer
_CHECKED_KEPT = 64
_CHECKED_LOCK = threading.Lock()
_FILE_LOCKS: dict[tuple[str, str], threading.Lock] = {}   # one check of a file at a time (two panels show it)


def _panel_check(check: dict, name: str) -> dict:
    """What a panel shows of a check's summary: passed, the failed checks, the diagnosis in both
    languages (title, where, explanation, and what to read: the step and the mistake's anchor)."""
    from seqlab.learn.feedback import diagnosis_words
    out = {"passed": bool(check.get("passed")),
           "failed": [c["name"] for c in check.get("checks", []) if not c.get("passed")], "diagnosis": None}
    d = check.get("diagnosis")
    if d:
        en, zh = diagnosis_words(d, name, "en"), diagnosis_words(d, name, "zh")
        read = d.get("read") or {}
        out["diagnosis"] = {"mistake": d.get("mistake"), "title": [en[0], zh[0]], "explanation": [en[1], zh[1]],
                            "where": str(d.get("where") or ""),
                            "read": {"step": read.get("step") or name, "anchor": read.get("anchor") or "",
                                     "widget": read.get("widget") or ""}}
    return out


def full_check(folder: str, name: str) -> dict | None:
    """The full check of FOLDER/NAME.py, as `seqlab learn check` runs it (check_file: the same runner,
    trust boundary and progress record), once per version of the file: the latest recorded check when
    it was of this version, else a check run now (a few at a time, course_api.CHECKING). Returns
    :func:`_panel_check`'s answer, or None when the file cannot be checked (gone, outside the workspace)."""
    from seqlab.learn.checking import check_file, latest_check, summary
    from seqlab.learn.workspace import WorkspaceError, exercise_file, file_sha256
    workspace = str(Path(folder).resolve())
    with _CHECKED_LOCK:
        lock = _FILE_LOCKS.setdefault((workspace, name), threading.Lock())
    with lock:
        try:
            digest = file_sha256(exercise_file(folder, name))
        except (OSError, WorkspaceError):
            return None
        with _CHECKED_LOCK:
            known = _CHECKED.get((workspace, name, digest))
        if known is not None:
            return known
        recorded = latest_check(Path(folder), name)
        if recorded is None or recorded.get("sha256") != digest:
            with CHECKING:
                try:
                    report, unsaved = check_file(Path(folder), name)
                except (OSError, WorkspaceError):
                    return None
            recorded = None if unsaved else latest_check(Path(folder), name)    # with the hash of what was checked
            if recorded is None or not recorded.get("sha256"):
                recorded = summary(report, digest)
        answer = _panel_check(recorded, name)
        with _CHECKED_LOCK:
            _CHECKED[(workspace, name, recorded["sha256"])] = answer      # the version that was checked
            while len(_CHECKED) > _CHECKED_KEPT:
                _CHECKED.pop(next(iter(_CHECKED)))
        return answer


# --- endpoints -----------------------------------------------------------------------------------------
def _no_workspace() -> RequestError:
    return RequestError("no workspace is open: start the explorer with `seqlab explore --workspace DIR` "
                        "(DIR holds your exercises, e.g. seqlab-learn)", "learn_no_workspace")


def workspace(data: dict[str, Any], folder: str | None) -> dict:
    """Which exercises the widgets can show, and which of them the workspace has a file for."""
    Payload(data).finish()
    from seqlab.learn.catalog import exercise

    from seqlab.learn.workspace import WorkspaceError, exercise_file

    names = sorted({name for names in widget_exercises().values() for name in names})
    exercises = {}
    for name in names:
        ex = exercise(name)
        path = Path(folder) / f"{name}.py" if folder else None
        try:
            present = bool(path and exercise_file(folder, name).is_file())
        except WorkspaceError:       # a link outside the workspace: not shown
            present = False
        stub = False
        if present:
            try:
                stub = f'raise NotImplementedError("{name}: write this function")' in path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                stub = False
        exercises[name] = {"present": present, "stub": stub, "file": str(path) if path else None,
                           "title": [ex.title, ex.title_zh]}
    return {"workspace": folder, "widgets": {w: list(n) for w, n in widget_exercises().items()},
            "exercises": exercises}


def yours(data: dict[str, Any], folder: str | None) -> dict:
    """The student's function and the reference on one widget's inputs (see the module's docstring)."""
    from seqlab.learn.side_by_side import yours_and_reference

    unknown = sorted(set(data) - {"widget", "exercise", "inputs"})
    if unknown:
        raise RequestError(f"unknown field(s): {', '.join(unknown)}; expected widget, exercise, inputs")
    name = data.get("exercise")
    if not isinstance(name, str):
        raise RequestError("exercise must be the name of an exercise, e.g. \"attention\"")
    shown_by = [w for w, names in widget_exercises().items() if name in names]
    if not shown_by:
        known = sorted({n for names in widget_exercises().values() for n in names})
        raise RequestError(f"no widget shows the exercise {name[:40]!r}; the explorer shows: {', '.join(known)}")
    widget = data.get("widget", shown_by[0])
    if widget not in shown_by:
        raise RequestError(f"the widget {str(widget)[:40]!r} does not show {name}; it is shown by {', '.join(shown_by)}")
    inputs = data.get("inputs", {})
    if not isinstance(inputs, dict):
        raise RequestError(f"inputs must be an object (the body the {widget} widget sends), "
                           f"got {type(inputs).__name__}")
    if folder is None:
        raise _no_workspace()
    calls, labels = MAPPINGS[widget](Payload(inputs), name)
    with _RUNNING:
        try:
            result = yours_and_reference(folder, name, calls, time_limit=TIME_LIMIT)
        except ValueError as exc:   # the reference rejects these inputs, with a message naming them
            raise RequestError(str(exc)) from None
    if widget in SHOWN:
        SHOWN[widget](result, calls)
    differs = any(call["difference"] or call["error"] for call in result["calls"])
    result.update(exercise=name, widget=widget, file=str(Path(folder) / f"{name}.py"), labels=labels,
                  start=f"seqlab learn start {name} --workspace {folder}",
                  check=full_check(folder, name) if differs and result["implemented"] and not result["timed_out"] else None)
    return result


LEARN_ENDPOINTS: dict[str, Callable[[dict[str, Any], str | None], dict]] = {
    "learn/workspace": workspace,
    "learn/yours": yours,
    **COURSE_ENDPOINTS,   # the course as the home page: path, lesson, answer, card, check (course_api.py)
}

