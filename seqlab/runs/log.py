"""RUN/log.jsonl: one JSON record per line, appended as a run trains, read back by the explorer,
the plots and a resumed run.

Every record has ``step`` and ``wallclock`` (seconds of training, continued across resumes); train
records add ``train_loss``, ``lr``, ``grad_norm``, ``tokens`` and ``tokens_per_second``; eval
records add ``val_loss`` and the task's other metrics (seq2seq: ``val_exact_match``, ...). Every value
is a number; a loss that became NaN or infinite is written, as the project writes one
(:mod:`seqlab.jsonfile`: the string "NaN", "inf" or "-inf"), and read back as the float.

A new run that replaces an old one (``--overwrite``) writes its records to a temporary file beside
log.jsonl (``staged=True``) and renames it over log.jsonl only at its first checkpoint
(:meth:`JsonlLog.commit`), so a new run that dies early leaves the old run's log whole.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

from seqlab.jsonfile import dumps, from_json, parse_json


def read_jsonl(path: str | Path, *, drop_torn_last_line: bool = False) -> list[dict[str, Any]]:
    """The records of a JSONL file; a line that is not JSON raises ValueError naming it.

    With ``drop_torn_last_line`` an unparseable *last* line (an append cut short) is left out with
    a warning instead; an unparseable line followed by others still raises.
    """
    with Path(path).open(encoding="utf-8") as fh:
        lines = [(number, line) for number, line in enumerate(fh, 1) if line.strip()]
    records = []
    for index, (number, line) in enumerate(lines):
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            if drop_torn_last_line and index == len(lines) - 1:
                warnings.warn(f"{path}, line {number}: the last line is incomplete JSON (a write cut short by "
                              "a kill or a full disk); dropped it", RuntimeWarning, stacklevel=2)
                break
            raise ValueError(f"{path}, line {number}: invalid JSON ({exc})") from None
        except RecursionError:
            parse_json(line, path, line=number)  # raises its "too deeply nested" error
        if not isinstance(record, dict):
            raise ValueError(f"{path}, line {number}: expected a JSON object (a log record), found "
                             f"{type(record).__name__}")
        records.append(from_json(record))
    return records


class JsonlLog:
    """Append-only JSONL log that survives resumes without duplicated steps.

    ``resume_step``: keep the records up to that step and append after them. ``staged``: leave
    the file at ``path`` alone and write to a temporary file beside it until :meth:`commit`.
    """

    def __init__(self, path: str | Path, *, resume_step: int | None = None, staged: bool = False):
        from seqlab.atomic import _temporary_name

        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.records: list[dict[str, Any]] = []  # what this file holds (kept records, then new ones)
        self.staged_path = _temporary_name(self.path) if staged else None
        if staged:
            self.staged_path.write_text("")
        elif resume_step is None:
            self.path.write_text("")
        else:
            self._truncate_after(resume_step)
        self._fh = (self.staged_path or self.path).open("a", encoding="utf-8")

    def _truncate_after(self, step: int) -> None:
        """Drop records written after the checkpoint we resume from (they will be redone).

        A run killed (or out of disk) in the middle of an append leaves a torn last line such as
        ``{"step": 40, "wallc``; it is dropped with a warning. A bad line elsewhere still raises."""
        from seqlab.atomic import atomic_write_text

        records = read_jsonl(self.path, drop_torn_last_line=True) if self.path.exists() else []
        self.records = [r for r in records if r.get("step", 0) <= step]
        atomic_write_text(self.path, "".join(dumps(r) + "\n" for r in self.records))

    @property
    def staged(self) -> bool:
        """Whether the records still wait in the temporary file (see :meth:`commit`)."""
        return self.staged_path is not None

    def write(self, record: dict[str, Any]) -> None:
        """Append ``record``; a non-finite value is written too (a diverging run's log is kept)."""
        self._fh.write(dumps(record) + "\n")
        self._fh.flush()
        self.records.append(record)

    def commit(self) -> None:
        """Make the staged records the log: rename the temporary file over ``path`` (atomic); later
        records go on into the same file, now under its real name."""
        if self.staged_path is not None:
            os.replace(self.staged_path, self.path)
            self.staged_path = None

    def close(self) -> None:
        self._fh.close()
        if self.staged_path is not None:  # never committed: the old log stays as it was
            self.staged_path.unlink(missing_ok=True)
            self.staged_path = None
