"""The runs the explorer shows: directories written by ``seqlab train`` / ``seqlab demo`` (language
models) and ``seqlab seq2seq train`` (seq2seq models), loaded on first use.

A run directory is recognised by the kind its config.json names (older runs: by their files),
without loading anything:

    LM run       checkpoints/latest.pt, tokenizer/ (vocab.json, merges.txt), config.json, log.jsonl
    seq2seq run  checkpoints/latest.pt, vocab.json, config.json

Problems (a missing directory, a damaged checkpoint, a seq2seq run asked for an LM panel) become a
:class:`RequestError` with a code the page translates, so a panel always shows what went wrong and
how to fix it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqlab.explorer.validation import RequestError

MAKE_ONE = "make one with `seqlab demo --fast` (writes demo_out/run) or `seqlab train`, then run `seqlab explore --run DIR`"


@dataclass
class Run:
    """One --run directory as given on the command line (``id``) and what its files say it is."""

    id: str
    path: Path
    kind: str  # "lm", "seq2seq" or "invalid"
    problem: RequestError | None = None
    ids_only: bool = False  # a language model trained on token ids, without a tokenizer (seqlab induction)
    experiment: str | None = None  # the experiment folder (--paths, --induction) the run came from, if any
    example: dict[str, str] | None = None  # the information-flow section's worked example for this run

    def summary(self) -> dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "error": None if self.problem is None else self.problem.body(),
                "tokens": "ids" if self.ids_only else "text", "example": self.example}


def describe_run(run_id: str) -> Run:
    """Classify a run directory by its config.json's kind, or failing that its files (nothing is
    loaded; see :func:`seqlab.runs.kinds.run_kind`)."""
    from seqlab.runs.kinds import run_kind

    path = Path(run_id).expanduser()
    if path.exists() and not path.is_dir():
        return Run(run_id, path, "invalid", RequestError(
            f"{run_id} is a file, not a run directory: give the folder that `seqlab train`, `seqlab demo` or "
            "`seqlab seq2seq train` wrote", "run_missing", run=run_id))
    if not path.is_dir():
        from seqlab.runs.kinds import how_to_make

        return Run(run_id, path, "invalid", RequestError(
            f"run directory {run_id} does not exist; {how_to_make(run_id)}, then run `seqlab explore --run "
            f"{run_id}`", "run_missing", run=run_id))
    kind = run_kind(path) if (path / "checkpoints" / "latest.pt").is_file() else None
    if kind == "lm" and (path / "tokenizer").is_dir():
        return Run(run_id, path, "lm")
    if kind == "seq2seq" and (path / "vocab.json").is_file() and (path / "config.json").is_file():
        return Run(run_id, path, "seq2seq")
    return Run(run_id, path, "invalid", RequestError(
        f"{run_id} is not a seqlab run: expected checkpoints/latest.pt with tokenizer/ (a language model "
        f"from `seqlab train`) or with vocab.json (a model from `seqlab seq2seq train`)", "run_not_run", run=run_id))


def expand_sweeps(run_ids: list[str] | tuple[str, ...]) -> list[str]:
    """``run_ids`` with each sweep directory (``seqlab sweep --out DIR``, as ``seqlab compare``
    takes them) replaced by its runs that have a checkpoint, e.g. ["sweeps/lr"] ->
    ["sweeps/lr/lr=0.001", "sweeps/lr/lr=0.003"]. A sweep with no trained run yet stays as given
    (its panels then say what is wrong)."""
    from seqlab.sweep.records import sweep_runs

    expanded = []
    for run_id in run_ids:
        path = Path(run_id).expanduser()
        try:
            runs = None if (path / "checkpoints").is_dir() else sweep_runs(path)
        except ValueError:
            runs = None  # a damaged sweep.json: describe_run names the folder
        trained = [str(Path(run_id) / name) for name, run in runs or [] if (run / "checkpoints" / "latest.pt").is_file()]
        expanded += trained or [run_id]
    return expanded


@dataclass
class ExplorerLM:
    """A language-model run, ready to use: the model (eval mode, CPU), its tokenizer and files."""

    run: Run
    model: Any
    tokenizer: Any
    config: dict[str, Any]
    log: list[dict[str, Any]] = field(default_factory=list)
    step: int = 0  # the checkpoint's training step


class IdTokenizer:
    """Token ids written as numbers, "3 14 7 3": the tokenizer of a language model trained on ids
    (the models of ``seqlab induction``), so the explorer's panels read them like text."""

    def __init__(self, vocab_size: int):
        self.vocab_size = vocab_size
        self.vocab = {i: str(i).encode() for i in range(vocab_size)}  # a token shows as its number

    def encode(self, text: str) -> list[int]:
        ids = []
        for word in text.replace(",", " ").split():
            if not word.isdigit() or int(word) >= self.vocab_size:
                raise RequestError(f"{word!r} is not a token of this model: it reads token ids 0..{self.vocab_size - 1} "
                                   "written as numbers, e.g. \"3 14 7 3\"", "ids_text", word=word[:20],
                                   last=self.vocab_size - 1)
            ids.append(int(word))
        return ids

    def decode(self, ids) -> str:
        return "".join(f" {int(i)}" for i in ids).strip()


def induction_run(directory: str | Path) -> Run | None:
    """The 2-layer attention-only model of ``seqlab induction --out DIR`` (DIR/runs/attn2), whose heads
    have roles (a previous-token head, an induction head), as an LM run read in token ids with its
    worked example: half random ids, then their first half - 1 again, so the next token is a copy."""
    import random

    from seqlab.runs.config import read_run_config

    path = Path(directory) / "runs" / "attn2"
    if not (path / "checkpoints" / "latest.pt").is_file():
        return None
    try:
        model = read_run_config(path).model
        vocab, half = int(model["vocab_size"]), int(model["context_length"]) // 2
    except (OSError, ValueError, KeyError, TypeError):
        return None
    generator = random.Random(7)
    tokens = generator.sample(range(vocab), min(vocab, half))
    clean = tokens + tokens[:-1]
    swapped = list(tokens)
    swapped[-1] = next(t for t in range(vocab) if t not in tokens) if vocab > len(tokens) else (tokens[-1] + 1) % vocab
    corrupt = swapped + tokens[:-1]
    words = lambda ids: " ".join(str(i) for i in ids)
    return Run(str(path), path, "lm", ids_only=True, example={"clean": words(clean), "corrupt": words(corrupt)},
               experiment=str(directory))


def load_lm(run: Run) -> ExplorerLM:
    """Load the model, tokenizer, config.json and log.jsonl of an LM run; errors name the file."""
    from seqlab.lm.loading import check_vocabularies, load_model
    from seqlab.runs.log import read_jsonl

    try:
        model, tokenizer, payload = load_model(run=run.path, device="cpu")
    except (OSError, ValueError, RuntimeError, KeyError, TypeError) as exc:
        raise RequestError(f"run {run.id}: cannot load {run.path / 'checkpoints' / 'latest.pt'} or its tokenizer: "
                           f"{exc}. Retrain it or pick another run", "run_damaged", run=run.id, detail=str(exc)) from None
    from seqlab.runs.config import read_run_config

    try:  # the training settings of config.json, whichever seqlab wrote it
        config = read_run_config(run.path).settings if (run.path / "config.json").is_file() else {}
        log_path = run.path / "log.jsonl"
        log = read_jsonl(log_path) if log_path.is_file() else []
    except (OSError, ValueError) as exc:
        raise RequestError(f"run {run.id}: {exc}", "run_damaged", run=run.id, detail=str(exc)) from None
    if run.ids_only:
        tokenizer = IdTokenizer(model.config.vocab_size)
    try:  # a smaller tokenizer could not decode some sampled ids; a larger one gives ids the model lacks
        check_vocabularies(tokenizer.vocab_size, model.config.vocab_size,
                           f"use the tokenizer the model was trained with ({run.path / 'tokenizer'})")
    except ValueError as exc:
        raise RequestError(f"run {run.id}: {exc}", "run_damaged", run=run.id, detail=str(exc)) from None
    return ExplorerLM(run, model, tokenizer, config, log, int(payload.get("iteration", 0)))


def load_seq2seq(run: Run) -> Any:
    """A seq2seq run through ``seqlab.seq2seq.loading.load_run`` (model in eval mode on the CPU,
    source and target vocabularies); errors name the run and file."""
    try:
        from seqlab.seq2seq.loading import load_run
    except ImportError:
        raise RequestError("this version of seqlab has no seq2seq models (seqlab.seq2seq); update it to "
                           "translate with a seq2seq run", "s2s_missing") from None
    try:
        return load_run(run.path, device="cpu")
    except (FileNotFoundError, ValueError, RuntimeError, KeyError, TypeError) as exc:
        raise RequestError(f"run {run.id}: cannot load it: {exc}. Retrain it or pick another run",
                           "run_damaged", run=run.id, detail=str(exc)) from None


def read_paths_results(directory: str) -> dict[str, Any]:
    """``DIR/results.json`` of ``seqlab paths --out DIR`` as the chart draws it
    (:func:`seqlab.seq2seq.paths.chart.chart_data`: per task, each architecture's exact match at
    every source length, the points the small-sample rule keeps with their Wilson intervals, the
    architectures' styles, coinciding lines). Errors name the file and how to make it."""
    from seqlab.seq2seq.paths.chart import chart_data
    from seqlab.seq2seq.paths.results import read_results

    path = Path(directory) / "results.json"
    try:
        results = read_results(directory)
        data = None if results is None else chart_data(results)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise RequestError(f"{path} is not a `seqlab paths` results file ({type(exc).__name__}: {exc}); "
                           f"run `seqlab paths --out {directory}` again", "paths_bad", path=str(path)) from None
    if data is None:
        raise RequestError(f"{path} does not exist; run `seqlab paths --out {directory}` first (about 30 s with "
                           "--fast)", "paths_missing", path=str(path), dir=directory)
    return data


def checkpoint_signature(path: Path) -> tuple[int, int, int] | None:
    """(inode, size, mtime in ns) of RUN/checkpoints/latest.pt, None when it is missing: one stat,
    cheap enough for every request. Training saves by writing a new file and renaming it over the
    old one, so a new checkpoint always changes the inode."""
    try:
        info = (path / "checkpoints" / "latest.pt").stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


class RunRegistry:
    """The runs given to ``seqlab explore``; each model is loaded on first use (thread-safe) and
    loaded again when its checkpoint changes on disk (a run trained further while the explorer
    serves it), so no panel shows a stale model."""

    def __init__(self, run_ids: list[str] | tuple[str, ...] = (), paths_dir: str | None = None,
                 induction_dir: str | None = None):
        self.runs = [describe_run(run_id) for run_id in dict.fromkeys(expand_sweeps(run_ids))]
        self.paths_dir = paths_dir
        if paths_dir is not None:  # the experiment's own runs: one question asked of every architecture
            given = {run.path.resolve() for run in self.runs}
            for path in sorted(Path(paths_dir).glob("runs/*")):
                if (path / "checkpoints" / "latest.pt").is_file() and path.resolve() not in given:
                    run = describe_run(str(path))
                    run.experiment = str(paths_dir)
                    self.runs.append(run)
        self._induction_dir = None
        self.induction_dir = induction_dir
        self.interpret_limit: float | None = None  # seconds an interpret request may need (None: the default)
        self._loaded: dict[str, Any] = {}
        self._lock = threading.Lock()

    @property
    def induction_dir(self) -> str | None:
        """``seqlab explore --induction DIR``: its results draw the induction section, and its 2-layer
        model (whose heads have roles) joins the runs as the information-flow section's default."""
        return self._induction_dir

    @induction_dir.setter
    def induction_dir(self, directory: str | None) -> None:
        self._induction_dir = directory
        self.runs = [run for run in self.runs if not run.ids_only]
        found = induction_run(directory) if directory else None
        if found is not None:
            self.runs.append(found)

    def summary(self) -> list[dict[str, Any]]:
        return [run.summary() for run in self.runs]

    def find(self, run_id: str | None, kind: str) -> Run:
        """The run named ``run_id`` (default: the first run of ``kind``), checked to be of that kind."""
        if run_id is None:
            # runs of that kind; for the LM panels (the default kind) also a run that could not be
            # classified, so its problem is what the panels show
            # (not a model read in token ids: the panels' default texts are prose)
            candidates = [run for run in self.runs if (run.kind == kind and not run.ids_only)
                          or (kind == "lm" and run.kind == "invalid")]
            if not candidates:
                if kind == "lm":
                    raise RequestError(f"no language-model run to show; {MAKE_ONE}", "no_lm_run")
                raise RequestError("no seq2seq run to show; train one with `seqlab seq2seq train --out DIR`, "
                                   "then run `seqlab explore --run DIR`", "no_s2s_run")
            run = candidates[0]
        else:
            matches = [run for run in self.runs if run.id == run_id]
            if not matches:
                known = ", ".join(run.id for run in self.runs) or "none"
                raise RequestError(f"unknown run {run_id!r}; the explorer was started with: {known}",
                                   "unknown_run", run=run_id, known=known)
            run = matches[0]
        if run.problem is not None:
            raise run.problem
        if run.kind != kind:
            wanted = "a language model" if kind == "lm" else "a seq2seq model"
            raise RequestError(f"run {run.id} is not {wanted} (it is a {run.kind} run)", "run_kind", run=run.id)
        return run

    def _load(self, run: Run, loader) -> Any:
        signature = checkpoint_signature(run.path)
        with self._lock:
            cached = self._loaded.get(run.id)
            if cached is None or cached[0] != signature:
                self._loaded[run.id] = (signature, loader(run))
            return self._loaded[run.id][1]

    def lm(self, run_id: str | None = None) -> ExplorerLM:
        return self._load(self.find(run_id, "lm"), load_lm)

    def seq2seq(self, run_id: str | None = None) -> Any:
        """A ``seqlab.seq2seq.loading.Seq2SeqRun`` (model, src_vocab, tgt_vocab, train_config, step)."""
        return self._load(self.find(run_id, "seq2seq"), load_seq2seq)
