"""What several exercises' ``check.py`` share: case makers and the recognisers of mistake families
that appear in many exercises (their words are in ``words.toml``, under ``mistakes``).

    seeded_cases(lambda k, rng, D, H: ((rnn_params(rng, D, H), rng.normal(size=D)), {}), ((0, 4, 4), (5, 3, 4)))
    RECOGNISERS = {"square_only": square_only(), "not_float64": not_float64()}
"""

from __future__ import annotations

import contextlib

import numpy as np

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import numbered_cases


def helper(module: str, name: str):
    """A lab function the checks reuse (rnn_forward, lstm_forward, ...), imported on use."""
    import importlib
    return getattr(importlib.import_module(module), name)


_CLASS_SEED: list = [None]       # grade --seed S: every case's seed is drawn again from (S, seed)


@contextlib.contextmanager
def drawn_with(seed: int | None):
    """Inside, the cases' seeds (``rng``, ``mixed``; ``kit_torch.gen``) are drawn again from ``seed``: a
    class graded with ``--seed`` meets inputs that no file written against seqlab's own cases can
    have looked up. None: the course's own seeds."""
    before, _CLASS_SEED[0] = _CLASS_SEED[0], seed
    try:
        yield
    finally:
        _CLASS_SEED[0] = before


def mixed(seed: int) -> int:
    """``seed`` itself, or inside ``drawn_with(S)`` a seed drawn from (S, seed)."""
    if _CLASS_SEED[0] is None:
        return seed
    return int(np.random.SeedSequence([_CLASS_SEED[0], seed]).generate_state(1, np.uint64)[0] >> 1)


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(mixed(seed))


def seeded_cases(make, settings, gradcheck: bool = False):
    """numbered_cases whose settings start with a seed: make(k, rng, *rest) gets default_rng(seed)."""
    return numbered_cases(lambda k, seed, *rest: make(k, rng(seed), *rest), settings, gradcheck)


def rnn_params(generator: np.random.Generator, D: int = 3, H: int = 4, O: int = 2) -> dict:
    from seqlab.labs.rnn import init_rnn_params
    return init_rnn_params(D, H, O, generator, scale=1.2)


def float32(args: tuple, *positions) -> tuple:
    """``args`` with the arrays at ``positions`` as float32 (exactly representable values kept)."""
    return tuple(np.asarray(a, dtype=np.float32) if i in positions else a for i, a in enumerate(args))


# --- recognisers of the families several exercises share ---------------------------------------------
def _same_containers(expected, actual) -> bool:
    """The same dicts (keys), tuples and lists (lengths) down to the leaves, whatever the leaves' shapes."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and set(expected) <= set(actual) and \
            all(_same_containers(expected[k], actual[k]) for k in expected)
    if isinstance(expected, (tuple, list)) and not all(isinstance(v, (int, float)) for v in expected):
        return isinstance(actual, (tuple, list)) and len(actual) == len(expected) and \
            all(_same_containers(e, a) for e, a in zip(expected, actual))
    return not isinstance(actual, (dict, tuple, list)) or isinstance(expected, (tuple, list))


def square_only(check: str = "non-square") -> D.Recogniser:
    """"right only when the sizes are equal": the check ``check`` failed while the worked example, whose
    sizes are all equal, is right (and the code returns the reference's containers everywhere)."""
    def recognise(ev):
        message = ev.failed.get(check)
        worked = [i for i in ev.own() if ev.cases[i].worked]
        if not message or not worked or ev.outputs[worked[0]] is None:
            return None
        if not all(_same_containers(ev.expected[i], ev.exercise.compared(ev.raw[i])) for i in range(len(ev.cases))
                   if ev.raw[i] is not None and not ev.cases[i].spec):
            return None
        from seqlab.learn.words import said
        return said("recognised.right_where_square", message=ev.failed_said.get(check) or message) \
            if ev.close(ev.expected[worked[0]], ev.outputs[worked[0]]) else None
    return recognise


def not_float64(check: str = "float64") -> D.Recogniser:
    """"an output that is not float64": the dtype sentence's check failed."""
    return D.failed_check(check)


def states_none(check: str = "h0 None") -> D.Recogniser:
    """"h0=None is not handled": the code raised on the sentence's case of a None state."""
    return D.failed_check(check, raises=True)


# --- case makers and gradients several exercises share --------------------------------------------------
def same(out):
    """The whole output (a gradients' part that takes all of it)."""
    return out


def copy_arrays(value):
    """float64 copies: of a dict's values, or of one array."""
    if isinstance(value, dict):
        return {k: np.array(v, dtype=np.float64) for k, v in value.items()}
    return np.array(value, dtype=np.float64)


def recurrence_cases() -> list:
    """The one-number recurrence's cases (scalar_recurrence and its backward pass): the worked example
    a=0.5, xs=[1, 0, -1], then two random ones."""
    from seqlab.learn.exercise import Case
    from seqlab.learn.words import said
    generator = rng(1)
    return [Case(said("cases.worked"), (0.5, np.array([1.0, 0.0, -1.0])), {"h0": 0.0}, gradcheck=True),
            Case(said("cases.random", k=1), (1.3, generator.normal(size=6)), {"h0": 0.4}, gradcheck=True),
            Case(said("cases.random", k=2), (-0.7, generator.normal(size=4)), {"h0": -0.2}, gradcheck=True)]


def rnn_sequence_cases(backward=False, settings=((0, 3, 3, 3, 3), (7, 5, 3, 4, 2), (8, 4, 2, 3, 5)), h0=True,
                       dh_last=False, float32=False):
    """Sequences (seed, T, D, H, O): rnn_forward's (params, xs) with h0, or rnn_bptt's (params, xs, h0, dys)."""
    def make(k, generator, T, D, H, O):
        p = rnn_params(generator, D, H, O)
        xs, first = generator.normal(size=(T, D)), generator.normal(size=H) * 0.5
        if float32:
            xs = xs.astype(np.float32)
        if not backward:
            return (p, xs), ({"h0": first} if h0 else {})
        dys = generator.normal(size=(T, O))
        return (p, xs, first, dys), ({"dh_last": generator.normal(size=H)} if dh_last else {})
    return seeded_cases(make, settings, gradcheck=backward)


def one_more_row(part, text=None) -> D.Recogniser:
    """"h0 kept in front" (or ``text``, words said later): an output with one row too many whose rows
    after the first are the reference's (on every own case that ran)."""
    from seqlab.learn.words import said
    text = said("recognised.h0_in_front") if text is None else text
    path = part if isinstance(part, tuple) else (part,)

    def recognise(ev):
        seen = []
        for i in ev.own():
            raw = ev.raw[i]
            if raw is None:
                continue
            try:
                got = np.asarray(D.pick(raw, path), dtype=np.float64)
            except (KeyError, IndexError, TypeError, ValueError):
                return None
            want = np.asarray(D.pick(ev.expected[i], path), dtype=np.float64)
            if got.shape[:1] != (want.shape[0] + 1,) or not D.close(want, got[1:], ev.rtol, ev.atol):
                return None
            seen.append(i)
        return said("recognised.lead", text=text, what=said(
            "recognised.one_more_row", leaf=D.leaf_name(path), case=ev.cases[seen[0]].label)) if seen else None
    return recognise


def lstm_params(generator: np.random.Generator, D: int = 3, H: int = 3) -> dict:
    from seqlab.labs.lstm import init_lstm_params
    return init_lstm_params(D, H, generator, scale=1.5)


def gru_params(generator: np.random.Generator, D: int = 3, H: int = 3) -> dict:
    from seqlab.labs.gru import init_gru_params
    return init_gru_params(D, H, generator, scale=1.5)


# the gated recurrences' backward passes (lstm_bptt, gru_bptt): cases (params, xs, dhs) with the initial
# states in their kwargs
GATE_AXES = {"xs": ("time step", "input"), "Wx": ("gate row", "input"), "Wh": ("gate row", "hidden unit"),
             "bx": ("gate row",), "bh": ("gate row",), "h0": ("hidden unit",), "c0": ("hidden unit",)}


def sequence_gradients(module: str, forward_name: str, states: tuple[str, ...]):
    """The gradients, by central differences, of sum(dhs * hs) (+ sum(dcs * cs) where the case has dcs)
    for a case (params, xs, dhs) whose kwargs hold the initial `states`, through the lab's forward pass."""
    from seqlab.learn.exercise import central_differences

    def gradients(case):
        params, xs, dhs = copy_arrays(case.args[0]), copy_arrays(case.args[1]), case.args[2]
        initial = {name: copy_arrays(case.kwargs[name]) for name in states}
        dcs = case.kwargs.get("dcs")
        forward = helper(module, forward_name)

        def loss():
            out = forward(params, xs, *initial.values())
            return float(np.sum(dhs * out["hs"]) + (0.0 if dcs is None else np.sum(dcs * out["cs"])))

        return central_differences(loss, {**params, "xs": xs, **initial}), same
    return gradients


def gate_terms(module: str, forward_name: str, backward_name: str, states: tuple[str, ...]):
    """Each step's term of the shared weights' gradients: the lab's backward through one cell with
    fresh gradient arrays, fed what the later steps send back."""

    def terms(case):
        params, xs, dhs = copy_arrays(case.args[0]), copy_arrays(case.args[1]), copy_arrays(case.args[2])
        initial = [copy_arrays(case.kwargs[name]) for name in states]
        caches = helper(module, forward_name)(params, xs, *initial)["caches"]
        backward = helper(module, backward_name)
        dcs = case.kwargs.get("dcs")
        T = len(xs)
        out = {k: [None] * T for k in ("Wx", "Wh", "bx", "bh")}
        carried = [np.zeros(len(initial[0])) for _ in states]
        for t in reversed(range(T)):
            fresh = {k: np.zeros_like(params[k]) for k in out}
            if len(states) == 2:
                dc = carried[1] + (0.0 if dcs is None else dcs[t])
                _, dh_prev, dc_prev = backward(params, caches[t], dhs[t] + carried[0], dc, fresh)
                carried = [dh_prev, dc_prev]
            else:
                _, dh_prev = backward(params, caches[t], dhs[t] + carried[0], fresh)
                carried = [dh_prev]
            for k in out:
                out[k][t] = fresh[k]
        return {k: np.array(v) for k, v in out.items()}
    return terms


def left_at_zero(parts: tuple | None = None) -> D.Recogniser:
    """"a gradient left at zero": on every own case, each output among ``parts`` (paths; None: every leaf)
    that differs from the reference's is all zeros where the reference's is not, and one does at least.
    Says which, so the rest of the output is right wherever it is not zero."""
    from seqlab.learn.words import said

    def recognise(ev):
        zeros = set()
        for i in ev.usable():
            paths = [p for p, _ in D.leaves(ev.expected[i])] if parts is None else \
                [p if isinstance(p, tuple) else (p,) for p in parts]
            wrong = [p for p in paths if ev.wrong(i, p)]
            if any(ev.wrong(i, p) for p, _ in D.leaves(ev.expected[i]) if p not in paths):
                return None                         # another output differs: not this family alone
            for path in wrong:
                expected, actual = (D.array(x) for x in ev.leaf(i, path))
                if expected.shape != actual.shape or np.any(actual != 0) or not np.any(expected != 0):
                    return None
                zeros.add(D.leaf_name(path))
        return said("mistakes.gradient_left_at_zero.where", names=", ".join(sorted(zeros))) if zeros else None
    return recognise


def weights_not_summed(parts: tuple[str, ...] = ("Wx", "Wh", "bx", "bh")) -> D.Recogniser:
    """"shared-weight gradients not summed over time": the gradients of ``parts`` are one step's term
    (or a few steps') instead of the sum over t."""
    from seqlab.learn.words import said
    return D.summed_over_time(parts, said("recognised.not_summed"))


# BPE (choose_merge, train_bpe): the 256 single bytes, token id = byte
SINGLE_BYTES = [bytes([b]) for b in range(256)]
