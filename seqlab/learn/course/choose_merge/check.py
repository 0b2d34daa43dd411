"""choose_merge: the cases, the checks of its sentences, its mutants and recognisers (the words are in
step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check
from seqlab.learn.kit import SINGLE_BYTES, rng
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    o = ord
    worked = {(o("e"), o("s")): 9, (o("s"), o("t")): 9, (o("l"), o("o")): 7, (o("o"), o("w")): 7, (o("w"), o("e")): 8}
    r = rng(5)
    made = [Case(said("cases.worked"), (worked, SINGLE_BYTES))]
    for k in (1, 2):
        letters = [o(c) for c in "abcdefgh"]
        counts = {}
        for _ in range(12):
            pair = (int(r.choice(letters)), int(r.choice(letters)))
            counts[pair] = int(r.integers(1, 4))
        made.append(Case(said("cases.random", k=k), (counts, SINGLE_BYTES)))
    return made


def _tie_cases():
    o = ord
    return [Case(say("tie_right"), ({(o("a"), o("b")): 3, (o("a"), o("c")): 3, (o("b"), o("a")): 2}, SINGLE_BYTES)),
            Case(say("tie_left"), ({(o("z"), o("a")): 5, (o("b"), o("z")): 5, (o("y"), o("y")): 5}, SINGLE_BYTES))]


def _longer_cases():
    o = ord
    extended = SINGLE_BYTES + [b"ab", b"bc", b"a", b"aa"]   # 256..259 (258: a longer id for a short token)
    return [Case(say("high_id"), ({(258, o("z")): 4, (o("y"), o("z")): 4}, extended)),
            Case(say("same_joined"), ({(o("a"), 257): 3, (256, o("c")): 3}, extended)),
            # the pair (aa, a) is the greater, the joined bytes b"az" are: whatever order the tie is met in
            Case(say("disagree"), ({(o("a"), o("z")): 2, (259, o("a")): 2}, extended))]


def _dict_cases():
    o = ord
    some = {o("b"): b"b", o("x"): b"x", o("e"): b"e", 300: b"a", 301: b"zz"}     # only the ids that occur
    return [Case(say("dict"), ({(300, o("x")): 2, (o("b"), o("x")): 2, (o("e"), 301): 1}, some))]


def _a_tuple_of_ints(case, out, ref, extra):
    if type(out) is not tuple or len(out) != 2 or not all(isinstance(i, (int, np.integer)) for i in out):
        return say("not_tuple", out=repr(out), kind=type(out).__name__)
    return None


def compared(out):
    return tuple(int(i) for i in out)


CHECKS = {"token_bytes a dict": Check(_dict_cases), "ties": Check(_tie_cases), "longer tokens": Check(_longer_cases),
          "a tuple": Check(verify=_a_tuple_of_ints)}


# --- mistakes -----------------------------------------------------------------------------------------
def tie_to_smaller_pair(pair_counts, token_bytes):
    return max(pair_counts, key=lambda p: (pair_counts[p], [-b for b in token_bytes[p[0]]] + [1],
                                           [-b for b in token_bytes[p[1]]] + [1]))


def tie_to_first_counted(pair_counts, token_bytes):
    return max(pair_counts, key=lambda p: pair_counts[p])


def ids_compared(pair_counts, token_bytes):
    return max(pair_counts, key=lambda p: (pair_counts[p], p))


def concatenation_compared(pair_counts, token_bytes):
    return max(pair_counts, key=lambda p: (pair_counts[p], token_bytes[p[0]] + token_bytes[p[1]]))


MUTANTS = {"tie_to_smaller_pair": tie_to_smaller_pair, "tie_to_first_counted": tie_to_first_counted,
           "ids_compared": ids_compared, "concatenation_compared": concatenation_compared}
def _greatest_joined(ev):
    """On every case the pair chosen is one of the most frequent pairs with the greatest joined bytes (ties
    among equal joined bytes broken any way), and on one case at least that is not the reference's pair."""
    wrong = []
    for i in ev.usable("all"):
        counts, token_bytes = ev.cases[i].args
        top = max(counts.values())
        joined = {p: bytes(token_bytes[p[0]]) + bytes(token_bytes[p[1]]) for p, c in counts.items() if c == top}
        best = max(joined.values())
        if tuple(ev.outputs[i]) not in {p for p, j in joined.items() if j == best}:
            return None
        if ev.wrong(i, ()):
            wrong.append(ev.cases[i].label)
    return say("greatest_joined", cases=D.listed(wrong)) if wrong else None


RECOGNISERS = {"concatenation_compared": _greatest_joined, "not_a_tuple": D.failed_check("a tuple", alone=False),
               "token_bytes_as_a_list_only": D.failed_check("token_bytes a dict", raises=True)}
