"""The student files the exercise tests check: written into a folder, and checked in one child process.

One batch per test module (the cost is the child's start): for each exercise its stub, the reference,
each catalogued mistake, and the implementations written in the test module (``sources``: a kind,
e.g. "loops", to {exercise name: source}). The reports come back keyed ("stub", name),
("reference", name), ("mutant", name, mistake id) and (kind, name). The reference and the mutants
are self-contained files (``tests.learn.bundle``): seqlab is not importable where they are checked.
"""

from __future__ import annotations

import re
import textwrap

import pytest

from seqlab.learn.judge import check_many
from seqlab.learn.workspace import start
from tests.learn.bundle import student_source


def write_student(folder, name, source):
    """``folder/NAME.py`` with ``source``; a dict {file name: source} writes the student's other files beside it."""
    folder.mkdir(parents=True, exist_ok=True)
    for file, text in (source if isinstance(source, dict) else {f"{name}.py": source}).items():
        (folder / file).write_text(textwrap.dedent(text), encoding="utf-8")
    return folder / f"{name}.py"


def student_children(pid: int, cpu_seconds: float = 0.0) -> list:
    """The processes below ``pid`` that run the student's code (the runner's child, not bwrap's own),
    each with more than ``cpu_seconds`` of CPU time. One that ends while it is looked at (a zombie: the
    sandbox's short-lived helpers) is none of them."""
    import psutil

    def running_student_code(p) -> bool:
        try:
            return p.name() != "bwrap" and "child/main.py" in " ".join(p.cmdline()) and \
                p.cpu_times().user > cpu_seconds
        except psutil.Error:
            return False
    try:
        below = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    return [p for p in below if running_student_code(p)]


def check_batch(root, exercises, sources: dict[str, dict[str, str]]) -> dict:
    items, keys = [], []

    def add(key, ex, path):
        items.append((ex, path))
        keys.append(key)

    for ex in exercises:
        path, written = start(root / "stub", ex)
        assert written, path
        add(("stub", ex.name), ex, path)
        add(("reference", ex.name), ex, write_student(root / "reference", ex.name, student_source(ex.name)))
        for m in (m for m in ex.mistakes if m.implementation is not None):
            add(("mutant", ex.name, m.id), ex, write_student(
                root / f"mutant-{m.id}", ex.name, student_source(ex.name, m.id)))
        for kind, by_name in sources.items():
            if ex.name in by_name:
                add((kind, ex.name), ex, write_student(root / kind, ex.name, by_name[ex.name]))
    return dict(zip(keys, check_many(items)))


def mutants(exercises) -> list[tuple[str, str]]:
    """(exercise name, mistake id) of every catalogued mistake with a mutant (not the conventions the stubs
    accept, which pass): the parameters of the mutant test."""
    return [(e.name, m.id) for e in exercises for m in e.mistakes if m.implementation is not None and not m.accepted]


def assert_diagnosed(report, mistake: str) -> None:
    """A catalogued mistake fails, with its own diagnosis."""
    assert not report.passed
    assert report.diagnosis is not None and report.diagnosis["mistake"] == mistake, report.diagnosis


def mutant_test(exercises):
    """The test that every catalogued mistake of `exercises` fails with its own diagnosis, one case each.
    A test module binds it to a test_ name; it reads the module's `batch` fixture."""
    pairs = mutants(exercises)

    @pytest.mark.parametrize(("name", "mistake"), pairs, ids=[f"{n}-{m}" for n, m in pairs])
    def test(batch, name, mistake):
        assert_diagnosed(batch["mutant", name, mistake], mistake)
    return test


def assert_contract_in_stub(batch, ex) -> None:
    """Each sentence of ``ex``'s contract is in its stub, word for word, and is a check of the reference's report."""
    stub = " ".join(open(batch["stub", ex.name].file, encoding="utf-8").read().split())
    checks = {c["name"] for c in batch["reference", ex.name].checks}
    assert ex.spec
    for spec in ex.spec:
        assert " ".join(spec.sentence.split()) in stub, spec.sentence
        assert spec.id in checks or spec.id in ("values (worked example)", "runs"), spec.id


_CJK = re.compile(r"[\u3000-\u303f\uff00-\uffef\u3400-\u9fff\u201c\u201d]+")
_WORD = re.compile(r"[A-Za-z][a-z]+[,.;:!?]?")
_CODE = re.compile(r"`[^`]*`|\bfrom [\w.]+ import [\w.]+|\bimport [\w.]+(?: as \w+)?|seqlab learn [^，。\n]*")


def english_sentences(text: str, words: int = 3) -> list[str]:
    """The runs of ``words`` or more English words in ``text`` outside code (`...`, imports, seqlab's commands):
    what a reader of the Chinese would meet as an English sentence. Identifiers, numbers and paths are not words
    ("x.amax(dim,", "float32", "/tmp/ws/softmax.py"), and a run of names ("Hugging Face Llama") is no sentence:
    two of its words at least are lowercase."""
    found = []
    for piece in _CJK.split(_CODE.sub(" ", str(text))):
        run: list[str] = []
        for token in [*piece.split(), ""]:
            if _WORD.fullmatch(token):
                run.append(token)
                continue
            if len(run) >= words and sum(w[0].islower() for w in run) >= 2:
                found.append(" ".join(run))
            run = []
    return found
