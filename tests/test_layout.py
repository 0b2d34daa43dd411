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
                "seqlab.cli_types.non_negative_int", "seqlab.cli_types.file_given_as_folder"}


def modules(root: Path = PACKAGE) -> list[Path]:
    return sorted(root.rglob("*.py"))


def imported_modules(tree: ast.AST, *, lazy: bool = True) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in ``tree``; ``from a import b`` gives both a and a.b.
    A package face's lazy table (``lazy_exports(__name__, {"seqlab.x.y": (...)})``, seqlab/lazy.py)
    imports its modules on first use, so each of its modules counts as imported too (``lazy=False``:
    not)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in (
                "import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            found.append((node.lineno, node.args[0].value))      # an import by a string is an import
        elif lazy and isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == "lazy_exports":
            tables = [arg for arg in node.args[1:2] + [k.value for k in node.keywords if k.arg == "modules"]]
            for table in tables:
                assert isinstance(table, ast.Dict), f"line {node.lineno}: write lazy_exports' table as a dict literal"
                found += [(key.lineno, key.value) for key in table.keys
                          if isinstance(key, ast.Constant) and isinstance(key.value, str)]
    return found


def test_the_checker_sees_every_form_of_import():
    tree = ast.parse("import seqlab.lm.data\nfrom seqlab import training\n"
                     "def f():\n    from seqlab.lm.task import train\n"
                     "__all__, __getattr__, __dir__ = lazy_exports(__name__, {\n"
                     "    \"seqlab.runs.state\": (\"TrainState\",),\n})\n")
    names = [name for _, name in imported_modules(tree)]
    assert names.count("seqlab.training") == 1 and "seqlab.lm.data" in names
    assert "seqlab.lm.task" in names
    assert (6, "seqlab.runs.state") in imported_modules(tree)  # a lazy table's module, on its line


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


# -- one layering for the whole package ---------------------------------------------------------
# Each area of seqlab/ and the layer it sits in: a module may import its own layer and those below,
# never a higher one. A package face's lazy table (seqlab/lazy.py) counts as importing its modules.
LAYERS = {
    "seqlab": 0, "atomic": 0, "lazy": 0, "cli_types": 0, "settings": 0, "runtime": 0, "jsonfile": 0,
    "outdir": 0, "progressbar": 0,
    "labs": 1, "model": 1, "tokenizer": 1,
    "runs": 2,
    "accounting": 3, "training": 3, "inference": 3,
    "lm": 4, "seq2seq": 4,
    "interpret": 5, "learn": 5,
    "demo": 6, "sweep": 6, "interop": 6, "explorer": 6, "induction": 6,
    "cli": 7, "__main__": 7,
}


def _area(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "seqlab"
    return parts[1]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph() -> dict[str, set[str]]:
    """module -> the seqlab modules it imports (at the top or inside a function). A face's lazy table
    is left out: its names load on first use, after the face itself, so it closes no circle (a
    face naming its own modules, which import a sibling through the face, is the normal case)."""
    known = {_module_name(path) for path in modules()}
    graph = {}
    for path in modules():
        me = _module_name(path)
        graph[me] = {name for _, name in imported_modules(ast.parse(path.read_text(encoding="utf-8")), lazy=False)
                     if name in known and name != me}
    return graph


def test_every_area_has_a_layer():
    areas = {_area(_module_name(path)) for path in modules()}
    missing = sorted(areas - set(LAYERS))
    assert not missing, f"give these areas of seqlab/ a layer in tests/test_layout.py LAYERS: {missing}"


def upward_imports(root: Path = PACKAGE) -> list[str]:
    """Every import (lazy tables' included) in the package ``root`` of a module of a higher layer."""
    offenders = []
    for path in modules(root):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        me = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mine = LAYERS.get(_area(me), 0)
        for line, name in imported_modules(ast.parse(path.read_text(encoding="utf-8"))):
            if name.startswith("seqlab.") and LAYERS.get(_area(name), 0) > mine:
                offenders.append(f"{path.relative_to(root.parent)}:{line} ({_area(me)}, layer {mine}) imports "
                                 f"{name} (layer {LAYERS[_area(name)]})")
    return offenders


def test_an_upward_import_by_a_string_is_seen(tmp_path):
    """The mutant: the learn child importing the catalogue by its name (as it once did), from a module
    placed in the model's layer."""
    child = tmp_path / "seqlab" / "model" / "child.py"
    child.parent.mkdir(parents=True)
    child.write_text('import importlib\n\n\ndef cases(name):\n'
                     '    return importlib.import_module("seqlab.learn.catalog").exercise(name).cases()\n')
    assert upward_imports(tmp_path / "seqlab") == [
        "seqlab/model/child.py:5 (model, layer 1) imports seqlab.learn.catalog (layer 5)"]


def test_no_import_goes_up_a_layer():
    offenders = upward_imports()
    assert not offenders, "move the shared code down, or pass it in from above:\n" + "\n".join(offenders)


def test_an_upward_arrow_in_a_lazy_table_is_seen(tmp_path):
    """The mutant: training's face naming the language model's train lazily (as it once did)."""
    face = tmp_path / "seqlab" / "training" / "__init__.py"
    face.parent.mkdir(parents=True)
    face.write_text('from seqlab.lazy import lazy_exports\n\n__all__, __getattr__, __dir__ = lazy_exports(__name__, {\n'
                    '    "seqlab.training.engine": ("Engine",),\n    "seqlab.lm.task": ("Trainer", "train"),\n})\n')
    assert upward_imports(tmp_path / "seqlab") == [
        "seqlab/training/__init__.py:5 (training, layer 3) imports seqlab.lm.task (layer 4)"]


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of two or more modules that import each other, directly or around a circle (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def test_the_circle_finder_finds_a_circle_of_three():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert strongly_connected(graph) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    circles = strongly_connected(_import_graph())
    assert not circles, "these modules import each other (also through imports inside functions):\n" + \
        "\n".join(" <-> ".join(group) for group in circles)


# the parts every model family has, under the same file names
FAMILY_PARTS = ("settings", "task", "data", "loading", "evaluation", "inspection", "cli")


@pytest.mark.parametrize("part", FAMILY_PARTS)
def test_both_model_families_name_their_parts_alike(part):
    missing = [family for family in ("lm", "seq2seq") if not (PACKAGE / family / f"{part}.py").is_file()]
    assert not missing, f"seqlab/{{lm,seq2seq}}/{part}.py: missing in {missing}"


def _changelog_rows(title: str) -> list[tuple[str, str]]:
    text = (PACKAGE.parent / "CHANGELOG.md").read_text(encoding="utf-8")
    section = text.split(f"### {title}", 1)[1].split("\n### ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 2 and cells[0].startswith("`seqlab."):
            rows.append((cells[0], cells[1]))
    return rows


def test_every_moved_module_is_gone_from_its_old_path_and_imports_from_its_new_one():
    import importlib
    import importlib.util
    import re

    rows = _changelog_rows("Modules that moved")
    assert len(rows) >= 15
    for old, new in rows:
        for path in re.findall(r"`(seqlab\.[\w.]+)`", old):
            assert importlib.util.find_spec(path) is None, f"{path} still exists; CHANGELOG.md says it moved"
        for path in re.findall(r"`(seqlab\.[\w.]+)`", new):
            importlib.import_module(path)


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


def _docstring_problems(root: Path = PACKAGE) -> list[str]:
    import re
    reference = re.compile(r"\b[Ii]ssues? \d+|BENCHMARKS\.md")
    problems = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        doc = ast.get_docstring(ast.parse(text), clean=False)
        if doc and doc.count("\n") + 1 > 20:
            problems.append(f"{path}: module docstring of {doc.count(chr(10)) + 1} lines (at most 20)")
        for number, line in enumerate(text.splitlines(), 1):
            if reference.search(line):
                problems.append(f"{path}:{number}: issue number or BENCHMARKS.md in code: {line.strip()}")
    return problems


# module docstrings still longer than 20 lines, to be shortened (the list may only shrink)
LONG_DOCSTRINGS_LEFT: set[str] = set()


def test_docstrings_short_and_without_tracker_references():
    problems = _docstring_problems()
    left = {problem.split(": module docstring")[0] for problem in problems if ": module docstring" in problem}
    new = [problem for problem in problems if problem.split(": module docstring")[0] not in
           {str(PACKAGE / name) for name in LONG_DOCSTRINGS_LEFT}]
    assert not new, "\n".join(new)
    shortened = sorted(name for name in LONG_DOCSTRINGS_LEFT if str(PACKAGE / name) not in left)
    assert not shortened, f"these are short now: remove them from LONG_DOCSTRINGS_LEFT: {shortened}"


def test_the_docstring_check_catches_a_long_docstring_and_an_issue_number(tmp_path):
    (tmp_path / "long.py").write_text('"""' + "line\n" * 25 + '"""\n')
    (tmp_path / "short.py").write_text('"""Short."""\n# measured in BENCHMARKS.md, see issue 12\n')
    (tmp_path / "fine.py").write_text('"""Short."""\nx = 1\n')
    problems = _docstring_problems(tmp_path)
    assert len(problems) == 2
    assert "long.py: module docstring of 26 lines" in problems[0] and "short.py:2: issue number" in problems[1]


# -- one config.json writer ------------------------------------------------------------------------
# the one writer of a run's config.json, and the Hugging Face export's config.json (another format)
CONFIG_WRITERS_ALLOWED = {PACKAGE / "runs" / "config.py", PACKAGE / "interop" / "export.py"}
WRITE_CALLS = {"atomic_write_text", "write_text", "write_bytes", "dump"}


def _names_config_json(node: ast.AST, tainted: set[str]) -> bool:
    """Whether the expression ``node`` holds "config.json", CONFIG_FILE or a name bound to one."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and sub.value == "config.json":
            return True
        if isinstance(sub, (ast.Name, ast.Attribute)) and getattr(sub, "id", getattr(sub, "attr", None)) in (
                {"CONFIG_FILE"} | tainted):
            return True
    return False


def config_json_writes(text: str) -> list[int]:
    """Lines of ``text`` that write a file named config.json: atomic_write_text(PATH, ...),
    PATH.write_text(...), open(PATH, "w") / json.dump(..., open(PATH, "w")), where PATH holds
    "config.json" or CONFIG_FILE, directly or through a variable assigned from one."""
    tree, lines = ast.parse(text), []
    for scope in [tree, *(n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))]:
        tainted: set[str] = set()
        for node in ast.walk(scope):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                if _names_config_json(node.value, tainted):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    tainted |= {t.id for t in targets if isinstance(t, ast.Name)}
            if isinstance(node, ast.withitem) and node.optional_vars is not None and isinstance(
                    node.optional_vars, ast.Name) and _names_config_json(node.context_expr, tainted):
                tainted.add(node.optional_vars.id)
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            mode = [a.value for a in node.args[1:2] + [k.value for k in node.keywords if k.arg == "mode"]
                    if isinstance(a, ast.Constant)]
            if name == "open" and node.args and any("w" in str(m) or "a" in str(m) for m in mode):
                hit = _names_config_json(node.args[0], tainted)
            elif name in ("write_text", "write_bytes") and isinstance(node.func, ast.Attribute):
                hit = _names_config_json(node.func.value, tainted)
            elif name in WRITE_CALLS and node.args:
                hit = any(_names_config_json(a, tainted) for a in node.args[:2])
            else:
                continue
            if hit:
                lines.append(node.lineno)
    return sorted(set(lines))


def test_one_config_json_writer():
    found = [f"{path}:{line}" for path in modules() if path not in CONFIG_WRITERS_ALLOWED
             for line in config_json_writes(path.read_text())]
    assert not found, ("these write a run's config.json beside seqlab.runs.config.write_run_config (use it):\n"
                       + "\n".join(found))
    assert config_json_writes((PACKAGE / "runs" / "config.py").read_text()), "the one writer is no longer seen"


def test_the_config_json_writer_check_finds_a_second_writer():
    mutants = [
        'def f(run):\n    path = Path(run) / CONFIG_FILE\n    atomic_write_text(path, "{}")\n',
        'def f(run):\n    (run / "config.json").write_text("{}")\n',
        'def f(run, x):\n    with open(run / "config.json", "w") as fh:\n        json.dump(x, fh)\n',
        'def f(run, x):\n    json.dump(x, open(os.path.join(run, "config.json"), "w"))\n',
    ]
    for mutant in mutants:
        assert config_json_writes(mutant), mutant
    readers = ['def f(run):\n    return json.loads((run / "config.json").read_text())\n',
               'def f(run):\n    path = run / CONFIG_FILE\n    return open(path).read()\n',
               'def f(run):\n    atomic_write_text(run / "vocab.json", "{}")\n']
    assert not [r for r in readers if config_json_writes(r)]


# -- attention math lives in the models ------------------------------------------------------------
# interpret, the explorer and the inspection modules read attention through the models' taps
# (seqlab.model.taps); the models (seqlab/model, the seq2seq models), the labs and learn's references
# and mistakes keep their own formulas
ATTENTION_FREE = ("interpret", "explorer", "lm/inspection.py", "seq2seq/inspection.py")
ATTENTION_PARTS = {"q_proj", "k_proj", "v_proj", "output_proj", "query_proj", "key_proj", "score_vector", "rope"}
ATTENTION_FUNCTIONS = {"softmax", "weights_of", "attention_scores", "attention_weights", "scaled_dot_product_attention",
                       "sdpa_attention", "chunked_attention", "flash_attention"}
ATTENTION_MODULES = ("seqlab.model.attention", "seqlab.model.chunked_attention", "seqlab.model.sdpa_attention",
                     "seqlab.model.flash_attention", "seqlab.model.attention_inputs", "seqlab.model.rope")


def attention_math(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, what) of every piece of attention math in ``tree``: a projection or RoPE of an attention
    module, a causal triangle (triu/tril), K^T (transpose(-2, -1), .mT), a softmax or an attention
    function, or an import of the model's attention code."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ATTENTION_PARTS:
            found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.Attribute) and node.attr == "mT":
            found.append((node.lineno, ".mT"))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if name in ("triu", "tril"):
                found.append((node.lineno, f"{name}()"))
            elif name in ATTENTION_FUNCTIONS:
                found.append((node.lineno, f"{name}()"))
            elif name == "transpose" and [ast.unparse(a) for a in node.args] == ["-2", "-1"]:
                found.append((node.lineno, "transpose(-2, -1)"))
    found += [(line, f"import {name}") for line, name in imported_modules(tree)
              if any(name == m or name.startswith(m + ".") for m in ATTENTION_MODULES)]
    return found


def _attention_free_files() -> list[Path]:
    files = []
    for entry in ATTENTION_FREE:
        path = PACKAGE / entry
        files += modules(path) if path.is_dir() else [path]
    return files


def test_interpret_the_explorer_and_the_inspection_modules_hold_no_attention_math():
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line} {what}" for path in _attention_free_files()
                 for line, what in attention_math(ast.parse(path.read_text(encoding="utf-8")))]
    assert not offenders, ("read attention through the models' taps (seqlab.model.taps: ...attn.scores, "
                           "...attn.pattern, ...attn.head_out) instead of recomputing it:\n" + "\n".join(offenders))


MUTANT = '''
import math
from seqlab.model import softmax

def attention(block, x):
    attn = block.attn
    q = attn.q_proj(x).view(1, 4, 2, 8).transpose(1, 2)
    k = attn.rope(attn.k_proj(x).view(1, 4, 2, 8).transpose(1, 2))
    scores = (q / math.sqrt(8)) @ k.transpose(-2, -1)
    scores = scores.masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf"))
    return softmax(scores, dim=-1) @ attn.v_proj(x).view(1, 4, 2, 8).transpose(1, 2)
'''


def test_the_attention_rule_finds_a_copy_of_the_attention_math():
    """A mutant: interpret's old shadow attention (seqlab/interpret/cache.py before taps) is found,
    piece by piece; reading the same weights through a tap is not."""
    found = {what for _, what in attention_math(ast.parse(MUTANT))}
    assert {".q_proj", ".k_proj", ".v_proj", ".rope", "transpose(-2, -1)", "triu()", "softmax()"} <= found, found
    tapped = "def pattern(model, ids):\n    taps = Taps(read=['layers.0.attn.pattern'])\n    model(ids, taps=taps)\n" \
             "    return taps.cache['layers.0.attn.pattern']\n"
    assert attention_math(ast.parse(tapped)) == []
    assert len(_attention_free_files()) > 15  # the rule reads interpret, the explorer and both inspections
