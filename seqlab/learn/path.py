"""The learning path: the course's steps in order, each with what to read, what to look at and what to do.

The order and every step's words come from the course's folders (``seqlab.learn.courses``:
``path.toml`` and each step's ``step.toml``); this module gives them as records.

A step's ``do`` is an Implement exercise (``implement``), a Trace question (``trace``), an Explain or
Derive card (``card``) or a command to run followed by a question (``command``). Titles and texts
are (English, Chinese) pairs, with the explorer glossary's terms. ``look`` is the explorer widget's
anchor (``seqlab explore``, then ``#w-...``).

The path falls into parts (:data:`PARTS`: recurrence, gated cells, attention, the Transformer LM,
training, seq2seq), each a run of consecutive steps; the notebooks (``seqlab learn notebook``) and
the explorer group the steps by them.
"""

from __future__ import annotations

import dataclasses

from seqlab.learn.courses import active


@dataclasses.dataclass(frozen=True)
class Step:
    id: str                       # the exercise, question or card name
    kind: str                     # implement | trace | card | command
    title: tuple[str, str]
    read: tuple[str, str]
    look: str = ""                # explorer anchor
    command: str = ""             # for kind "command": what to run first
    then: str = ""                # for kind "command": the trace question or card to answer after it


def _pair(value: dict) -> tuple[str, str]:
    return (value.get("en", ""), value.get("zh") or value.get("en", ""))


def _step(folder) -> Step:
    r = folder.record
    return Step(folder.id, r["kind"], _pair(r["title"]), _pair(r.get("read", {})), r.get("widget", ""),
                r.get("command", ""), r.get("then", ""))


_COURSE = active()
STEPS: tuple[Step, ...] = tuple(_step(_COURSE.folder(s)) for s in _COURSE.order)
STEP_BY_ID = {s.id: s for s in STEPS}


@dataclasses.dataclass(frozen=True)
class Part:
    """A run of consecutive steps, from ``first`` to the step before the next part's first."""
    id: str
    title: tuple[str, str]
    first: str

    @property
    def steps(self) -> tuple[Step, ...]:
        return _PART_STEPS[self.id]


PARTS: tuple[Part, ...] = tuple(Part(p.id, _pair(p.title), p.steps[0]) for p in _COURSE.parts)
PART_BY_ID = {p.id: p for p in PARTS}


def _part_steps() -> dict[str, tuple[Step, ...]]:
    starts = [next(k for k, s in enumerate(STEPS) if s.id == p.first) for p in PARTS]
    ends = starts[1:] + [len(STEPS)]
    return {p.id: STEPS[a:b] for p, a, b in zip(PARTS, starts, ends)}


_PART_STEPS = _part_steps()
PART_OF = {s.id: p for p in PARTS for s in p.steps}
