"""get_batch: the cases, the checks of its sentences, its mutants and recognisers (the words are in step.toml)."""

from __future__ import annotations

import numpy as np

from seqlab.learn import diagnosis as D
from seqlab.learn.exercise import Case, Check
from seqlab.learn.kit import rng
from seqlab.learn.kit_torch import same_dtype_and_values
from seqlab.learn.words import said, speaker

say = speaker(__file__)


def cases() -> list[Case]:
    worked = np.arange(10, 20, dtype=np.int64)
    return [Case(said("cases.worked"), (worked, 4, 3, "cpu"), {"generator": rng(0)}),
            Case(said("cases.random", k=1), (rng(1).integers(0, 50, 40), 8, 5, "cpu"),
                 {"generator": rng(2)}),
            Case(said("cases.random", k=2), (np.arange(60, dtype=np.int64) * 7 % 23, 6, 4, "cpu"),
                 {"generator": rng(3)})]


def _dataset(dtype: str, size: int, seed: int):
    return rng(seed).integers(0, 60000, size).astype(dtype)


def _case(label, dataset, batch_size, context_length, seed):
    return Case(label, (dataset, batch_size, context_length, "cpu"), {"generator": rng(seed)})


CHECKS = {
    "int64": Check(lambda: [_case(say("case_uint16"), _dataset("uint16", 30, 130), 4, 5, 131),
                            _case(say("case_int32"), _dataset("int32", 20, 132), 3, 4, 133)],
                   same_dtype_and_values),
    "shortest dataset": Check(lambda: [_case(say("case_shortest"), _dataset("int64", 6, 134), 3, 5, 135)]),
}
axes = {0: ("row", "position"), 1: ("row", "position")}


# --- mistakes -----------------------------------------------------------------------------------------
def _windows(dataset, batch_size, context_length, generator, *, extra_start=0, shift=1, same=False):
    import torch
    starts = generator.integers(0, len(dataset) - context_length + extra_start, size=batch_size)
    if same:
        starts = starts[:1].repeat(batch_size)             # one window for every row
    rows = np.stack([np.asarray(dataset[s:s + context_length + 1], dtype=np.int64) for s in starts])
    rows = torch.from_numpy(rows)
    return rows[:, :context_length], rows[:, shift:shift + context_length]


def targets_not_shifted(dataset, batch_size, context_length, device, *, generator=None):
    return _windows(dataset, batch_size, context_length, generator, shift=0)


def one_start_too_many(dataset, batch_size, context_length, device, *, generator=None):
    return _windows(dataset, batch_size, context_length, generator, extra_start=1)


def inputs_and_targets_swapped(dataset, batch_size, context_length, device, *, generator=None):
    inputs, targets = _windows(dataset, batch_size, context_length, generator)
    return targets, inputs


def one_window_for_every_row(dataset, batch_size, context_length, device, *, generator=None):
    return _windows(dataset, batch_size, context_length, generator, same=True)


def _windows_at_other_starts(ev):
    """Every row is a window of the dataset with its next tokens as targets, but not at the reference's starts."""
    if not ev.usable() or not any(ev.wrong(i, ()) for i in ev.usable()):
        return None
    for i in ev.usable():
        inputs, targets = (np.asarray(t) for t in ev.outputs[i])
        data = np.asarray(ev.cases[i].args[0]).astype(np.int64)
        length = inputs.shape[1]
        windows = np.lib.stride_tricks.sliding_window_view(data, length + 1)
        for row, target in zip(inputs, targets):
            full = np.concatenate([row, target[-1:]])
            if not (target[:-1] == row[1:]).all() or not (windows == full).all(1).any():
                return None
    return say("other_starts")


def _targets_shifted_by(ev):
    """The inputs are right on every own case, and on each one every row's targets are the dataset's tokens
    k positions after that row's inputs, for one k other than 0 and 1 (those have their own mistakes)."""
    shifts, seen = set(), []
    for i in ev.usable():
        if not ev.wrong(i, ()):
            continue
        if ev.wrong(i, (0,)):
            return None
        inputs, targets = (np.asarray(t) for t in ev.outputs[i])
        data = np.asarray(ev.cases[i].args[0]).astype(np.int64)
        length = inputs.shape[1]
        windows = np.lib.stride_tricks.sliding_window_view(data, length)
        for row, target in zip(inputs, targets):
            starts = np.flatnonzero((windows == row).all(1))
            found = {int(t - s) for s in starts for t in np.flatnonzero((windows == target).all(1))}
            shifts = found if not seen and not shifts else shifts & found
            if not shifts:
                return None
        seen.append(ev.cases[i].label)
    shifts -= {0, 1}
    if len(shifts) != 1 or not seen:
        return None
    return say("shifted_by", k=shifts.pop(), cases=D.listed(seen))


def _not_tensors(ev):
    message = ev.failed.get("shapes and types", "")
    return (ev.failed_said.get("shapes and types") or message) if "torch.Tensor" in message else None


MUTANTS = {"targets_not_shifted": targets_not_shifted, "one_start_too_many": one_start_too_many,
           "inputs_and_targets_swapped": inputs_and_targets_swapped, "one_window_for_every_row": one_window_for_every_row}
RECOGNISERS = {"targets_shifted_too_far": _targets_shifted_by,
               "starts_drawn_otherwise": _windows_at_other_starts, "not_tensors": _not_tensors,
               "int64": D.failed_check("int64", raises=True),
               "shortest_dataset": D.failed_check("shortest dataset", raises=True)}
