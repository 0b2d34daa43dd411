"""The package layout rules of DEVELOPERS.md, checked on the source (ast) and in a subprocess."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "seqlab"
# these areas know nothing of training (inference loads checkpoints through the run format)
TRAINING_FREE = ("model", "tokenizer", "inference", "runs", "explorer")
# the run format sits below training and inference, the explorer and the seq2seq tasks
RUN_FORMAT_FORBIDDEN = ("seqlab.training", "seqlab.inference", "seqlab.seq2seq", "seqlab.explorer",
                        "seqlab.demo")
ARGPARSE_CALLS = {"ArgumentParser", "add_argument", "add_parser", "add_subparsers", "add_argument_group",
                  "add_mutually_exclusive_group"}
# settings classes build their flags from their dataclass metadata (seqlab.settings)
ARGPARSE_ALLOWED = {PACKAGE / "lm" / "settings.py", PACKAGE / "settings.py"}
# seqlab modules that themselves import only the standard library (a cli.py may import them at the top)
LIGHT_SEQLAB = {"seqlab", "seqlab.__version__", "seqlab.atomic", "seqlab.atomic.atomic_path", "seqlab.cli_types",
                "seqlab.cli_types.finite_float", "seqlab.cli_types.check_text", "seqlab.cli_types.positive_int",
                "seqlab.cli_types.non_negative_int"}


def modules(root: Path = PACKAGE) -> list[Path]:
    return sorted(root.rglob("*.py"))


def imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in ``tree``; ``from a import b`` gives both a and a.b."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def test_the_checker_sees_every_form_of_import():
    tree = ast.parse("import seqlab.lm.data\nfrom seqlab import training\n"
                     "def f():\n    from seqlab.lm.task import train\n")
    names = [name for _, name in imported_modules(tree)]
    assert names.count("seqlab.training") == 1 and "seqlab.lm.data" in names
    assert "seqlab.lm.task" in names


@pytest.mark.parametrize("area", TRAINING_FREE)
def test_model_tokenizer_and_inference_never_import_training(area):
    offenders = []
    for path in modules(PACKAGE / area):
        for line, name in imported_modules(ast.parse(path.read_text(encoding="utf-8"))):
            if name == "seqlab.training" or name.startswith("seqlab.training."):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}")
    assert not offenders, "move the shared code out of seqlab/training:\n" + "\n".join(offenders)


def _imports_of(area: str, forbidden: tuple[str, ...]) -> list[str]:
    offenders = []
    for path in modules(PACKAGE / area):
        for line, name in imported_modules(ast.parse(path.read_text(encoding="utf-8"))):
            if any(name == f or name.startswith(f + ".") for f in forbidden):
                offenders.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}")
    return offenders


def test_the_run_format_imports_no_area_above_it():
    offenders = _imports_of("runs", RUN_FORMAT_FORBIDDEN)
    assert not offenders, "seqlab.runs must stay below training, inference and the apps:\n" + "\n".join(offenders)


def test_training_never_imports_inference():
    offenders = _imports_of("training", ("seqlab.inference",))
    assert not offenders, "read and write runs through seqlab.runs instead:\n" + "\n".join(offenders)


def test_only_cli_modules_build_argument_parsers():
    offenders = []
    for path in modules():
        if path.name == "cli.py" or path in ARGPARSE_ALLOWED:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
                if name in ARGPARSE_CALLS:
                    offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} calls {name}")
    assert not offenders, "argparse code belongs in the area's cli.py:\n" + "\n".join(offenders)


def test_cli_modules_import_only_the_standard_library_at_the_top():
    offenders = []
    for path in modules():
        if path.name != "cli.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:  # top level only; handlers import what they need
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for _, name in imported_modules(node):
                    top = name.split(".")[0]
                    if top not in sys.stdlib_module_names | {"__future__"} and name not in LIGHT_SEQLAB:
                        offenders.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} imports {name}")
    assert not offenders, "\n".join(offenders)


def test_seqlab_help_imports_neither_torch_nor_numpy():
    code = ("import runpy, sys\nsys.argv = ['seqlab', '--help']\n"
            "try:\n    runpy.run_module('seqlab', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "heavy = sorted(m for m in ('torch', 'numpy', 'tqdm') if m in sys.modules)\n"
            "print('HEAVY', heavy)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "train" in result.stdout and "generate" in result.stdout  # the help was printed
    assert "HEAVY []" in result.stdout, result.stdout[-300:]


TRANSLATE_ONLY = """
import sys
from seqlab.seq2seq import load_run, translate
from seqlab.seq2seq.evaluation import evaluate_translations
from seqlab.explorer.runs import RunRegistry

run = load_run(sys.argv[1], device="cpu")
print("OUT", translate(run, ["abc"], beam_size=2))
RunRegistry([sys.argv[1]]).seq2seq()
training = sorted(m for m in sys.modules if m.startswith("seqlab.training") or m in
                  ("seqlab.seq2seq.task", "seqlab.seq2seq.train"))
print("TRAINING", training)
"""


def test_code_that_only_translates_imports_no_training_module(tmp_path):
    """Loading a seq2seq run and translating (the CLI's translate, the explorer) stays clear of the
    training engine and the seq2seq task: the process that does only that never imports them."""
    from seqlab.seq2seq.settings import Seq2SeqTrainConfig
    from seqlab.seq2seq.task import train

    train(Seq2SeqTrainConfig(out_dir=str(tmp_path / "run"), task="copy", min_len=1, max_len=3, train_size=50,
                             valid_size=5, arch="rnn", d_model=8, num_layers=1, max_steps=1, batch_size=4,
                             progress=False, threads=1), say=lambda message: None)
    env = {"PYTHONPATH": str(PACKAGE.parent), "PATH": "/usr/bin:/bin"}
    result = subprocess.run([sys.executable, "-c", TRANSLATE_ONLY, str(tmp_path / "run")], capture_output=True,
                            text=True, env=env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "OUT [" in result.stdout  # it did translate
    assert "TRAINING []" in result.stdout, result.stdout


def test_the_engine_reads_no_attribute_by_name():
    """Every attribute of the engine is set in its constructor; no getattr(self, ...) guesses one,
    and the engine reads no task attribute by name (getattr(task / config, "..."))."""
    found = []
    for path in modules(PACKAGE / "training"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                    and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id == "self":
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
                    and len(node.args) > 1 and isinstance(node.args[1], ast.Constant) \
                    and isinstance(node.args[0], ast.Name) and node.args[0].id in ("task", "config", "cfg"):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno} getattr(..., {node.args[1].value!r})")
    assert not found, found


def test_the_task_interface_holds_no_presentation_strings():
    """The words about a run come from seqlab.runs.kinds.KINDS, filled with Task.facts()."""
    from seqlab.lm.task import LanguageModelTask
    from seqlab.seq2seq.task import Seq2SeqTask
    from seqlab.training.task import Task

    removed = ("command", "out_flag", "progress_label", "describe", "plot_title", "start_details",
               "tokens_per_step_text", "forward_hidden", "pin_memory")
    for cls in (Task, LanguageModelTask, Seq2SeqTask):
        assert [name for name in removed if hasattr(cls, name)] == [], cls
    assert "facts" in Task.__abstractmethods__ and "forward" in Task.__abstractmethods__


def test_callers_never_reach_into_the_engine_setup():
    root = PACKAGE.parent
    files = [*modules(PACKAGE), *sorted((root / "benchmarks").rglob("*.py")), *sorted((root / "tests").rglob("*.py"))]
    found = [str(path.relative_to(root)) for path in files
             if path.name != "test_layout.py" and "._setup()" in path.read_text()]
    assert found == []
