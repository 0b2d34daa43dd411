"""The ``--out`` folder of an experiment run on the campaign loop (``seqlab paths``, ``seqlab
induction``): its results file, which folders it may continue, and what ``--overwrite`` deletes.
Standard library only at the top (the explorer reads results through it, without torch).

OUT holds OUT/results.json ``{"settings": {...}, "fast": bool, "seed": int, ...}`` and the files
the experiment writes. A rerun continues it when the settings, ``--fast`` and the seed are the
same; a file, a non-empty folder without results.json, a damaged results.json and other settings
are refused, each saying what to do, unless ``overwrite`` (then :meth:`ExperimentOut.start_over`
deletes what the experiment owns, nothing else)::

    OUT = ExperimentOut("seqlab induction", collections=("models",), owns=("results.json", "runs/attn1"),
                        owned_text="its runs/ and results.json")
    saved = OUT.check(out, settings.to_json(), seed=0, fast=False, overwrite=False)  # None: a new one
"""

from __future__ import annotations

import os
import platform
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqlab.jsonfile import check_shape, from_json
from seqlab.runs.directory import read_json_object
from seqlab.settings import added_defaults
from seqlab.runs.status import Status


@dataclass(frozen=True)
class ExperimentOut:
    """The rule of one command's OUT. ``collections``: the JSON objects results.json must hold
    beside "settings"; ``owns``: the files and folders (relative to OUT) the experiment writes,
    the only ones ``overwrite`` deletes, as ``owned_text`` names them in the refusal;
    ``rerun_text``: what a rerun with the saved settings does; ``settings_class``: the settings'
    dataclass, whose settings added later at their default equal their absence in an older
    results.json (:func:`seqlab.settings.added_defaults`); ``shape``: what else results.json must
    hold for its readers (the report, the figures, the explorer), in the form of
    :func:`seqlab.jsonfile.check_shape`: a file without it is refused naming what is missing."""

    command: str
    collections: tuple[str, ...]
    owns: tuple[str, ...]
    owned_text: str
    rerun_text: str = "resume it"
    results_file: str = "results.json"
    settings_class: type | None = None
    shape: dict[str, Any] | None = None

    def read(self, out: str | Path) -> dict[str, Any] | None:
        """OUT/results.json, None when it is missing; invalid JSON or another shape raises
        ValueError naming the file (and the line, or what is missing: 'models.attn1 has no "curve"')."""
        path = Path(out) / self.results_file
        data = read_json_object(path, f"the results of `{self.command}`")
        if data is None:
            return None
        data = from_json(data)  # its non-finite numbers, written as "NaN", "inf", "-inf" (seqlab.jsonfile)
        keys = ("settings", *self.collections)
        if not all(isinstance(data.get(key), dict) for key in keys):
            expected = " and ".join(f'"{key}"' for key in keys)
            raise ValueError(f"{path}: not the results of `{self.command}` (expected a JSON object with {expected})")
        check_shape(data, self.shape, path)
        return data

    def check(self, out: Path, settings: dict[str, Any], *, seed: int, fast: bool,
              overwrite: bool) -> dict[str, Any] | None:
        """The results of the experiment already in ``out`` (to continue), or None when a new one
        starts there; refuses a file, a foreign non-empty folder, a damaged results file and
        other ``settings`` (a JSON dict), ``fast`` or ``seed`` (``overwrite`` starts over instead)."""
        if out.exists() and not out.is_dir():
            raise NotADirectoryError(f"--out {out} is a file; give a directory for the experiment (created if missing)")
        if not out.is_dir():
            return None
        try:
            saved = self.read(out)
        except ValueError as error:
            if overwrite:
                return None
            raise ValueError(f"{error}; give another --out, or --overwrite to start the experiment over there") from None
        if saved is None:
            present = sorted(name for name in os.listdir(out) if not name.startswith("."))
            if present and not overwrite:
                shown = ", ".join(present[:5]) + (" ..." if len(present) > 5 else "")
                raise FileExistsError(f"--out {out} already holds files ({shown}) and no {self.results_file}, so it is "
                                      f"not a `{self.command}` experiment's folder; give a new or empty directory, or "
                                      f"--overwrite to write the experiment there ({self.owned_text} are replaced, "
                                      "other files are left alone)")
            return None
        added = added_defaults(self.settings_class) if self.settings_class is not None else {}
        differences = settings_differences(saved, settings, seed=seed, fast=fast, added=added)
        if not differences:
            return saved
        if overwrite:
            return None
        shown = "; ".join(differences[:6]) + (f"; {len(differences) - 6} more" if len(differences) > 6 else "")
        raise FileExistsError(f"--out {out} holds a `{self.command}` experiment with other settings ({shown}); rerun "
                              f"it with its own settings to {self.rerun_text}, give another --out, or --overwrite to "
                              "delete its results and runs and start over")

    def start_over(self, out: Path) -> None:
        """``overwrite``: delete what the experiment owns in ``out``, nothing else."""
        for name in self.owns:
            path = out / name
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)


def settings_differences(saved: dict[str, Any], settings: dict[str, Any], *, seed: int, fast: bool,
                         added: dict[str, Any] | None = None) -> list[str]:
    """How the saved results' settings, --fast and --seed differ from these, one phrase each
    ("--fast there, not now", "steps 800 there, 300 now", "--seed 0 there, 1 now"). ``added``:
    {setting: default} of settings added later, which equal their absence on either side."""
    theirs, settings = {**(added or {}), **saved.get("settings", {})}, {**(added or {}), **settings}
    differences = []
    if bool(saved.get("fast")) != fast:
        differences.append("--fast there, not now" if saved.get("fast") else "not --fast there, --fast now")
    shown = lambda values, key: repr(values[key]) if key in values else "absent"  # noqa: E731
    differences += [f"{key} {shown(theirs, key)} there, {shown(settings, key)} now"
                    for key in sorted(set(settings) | set(theirs)) if theirs.get(key, ...) != settings.get(key, ...)]
    if saved.get("seed") != seed:
        differences.append(f"--seed {saved.get('seed')!r} there, {seed!r} now")
    return differences


class ExperimentResults:
    """The results document of one invocation of an experiment, as ``write(results)`` saves it:
    :meth:`begin` takes the saved results to continue (or a new document), :meth:`save` stamps the
    status and the seconds summed over every invocation."""

    def __init__(self, write: Callable[[dict[str, Any]], None]) -> None:
        self.results: dict[str, Any] = {}
        self._write = write
        self._started, self._earlier = time.perf_counter(), 0.0

    def begin(self, saved: dict[str, Any] | None, new: dict[str, Any], *, threads: int) -> dict[str, Any]:
        """Start (``new``) or continue (``saved``) the document: status running, this machine."""
        import torch

        self.results.update(saved or new)
        self.results.update(status=Status.RUNNING.value, stop_signal=None, machine={
            "processor": platform.processor() or platform.machine(), "threads": threads, "torch": torch.__version__})
        self._earlier = float(self.results.get("total_seconds") or 0.0)
        return self.results

    def save(self, status: Status | None = None) -> None:
        if status is not None:
            self.results["status"] = status.value
        self.results["total_seconds"] = round(self._earlier + time.perf_counter() - self._started, 1)
        self._write(self.results)
