"""Self-contained student files made from seqlab's own functions: the tests' and the grading
benchmark's correct students (a reference) and wrong ones (a catalogued mistake's mutant).

Inside the sandbox seqlab is not importable, and the static rules refuse ``import seqlab``, so a file
``from seqlab.labs.rnn import rnn_step`` no longer stands for a correct student. :func:`bundle` writes
the function's source with everything it uses from seqlab copied in (functions, classes, constants,
found with ``symtable`` and followed through module attributes such as ``_rnn.rnn_forward``), and
the imports of everything else (numpy, torch, the standard library) as the seqlab modules wrote
them; docstrings and annotations are left out. A name two seqlab modules both define gets a suffix.

    bundle(seqlab.learn.course.rnn_step.check.no_tanh, "rnn_step")  # -> "import numpy as np\\n...\\nrnn_step = ..."
    student_source("rnn_step")                                      # the reference, bundled
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib
import inspect
import symtable
import sys
import types

_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _ours(module_name: str) -> bool:
    return module_name == "seqlab" or module_name.startswith("seqlab.")


@functools.cache
def _tree(module_name: str) -> ast.Module:
    return ast.parse(inspect.getsource(sys.modules[module_name]))


def _statement(module_name: str, name: str) -> ast.stmt:
    """The top-level statement of the module that defines ``name`` (the last one, as at run time)."""
    found = None
    for node in _tree(module_name).body:
        if isinstance(node, _DEFINITIONS) and node.name == name:
            found = node
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                found = node
            for t in targets:                       # A, B = 1, 2: the one name's own value
                if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple) and len(t.elts) == len(node.value.elts):
                    for target, value in zip(t.elts, node.value.elts):
                        if isinstance(target, ast.Name) and target.id == name:
                            found = ast.Assign([ast.Name(name, ast.Store())], value, lineno=node.lineno)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                found = node
    if found is None:
        raise LookupError(f"{module_name} has no top-level statement that defines {name}")
    return found


class _Plain(ast.NodeTransformer):
    """Without docstrings and annotations (a class's fields keep theirs, as strings: dataclasses read them)."""

    def _body(self, node):
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:] or [ast.Pass()]
        node.body = body
        return node

    def visit_FunctionDef(self, node):
        self.generic_visit(node)
        node.returns = None
        for a in node.args.args + node.args.posonlyargs + node.args.kwonlyargs + \
                [x for x in (node.args.vararg, node.args.kwarg) if x]:
            a.annotation = None
        return self._body(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        for statement in node.body:               # a dataclass's fields: their annotations as strings
            if isinstance(statement, ast.AnnAssign):
                statement.annotation = ast.Constant(ast.unparse(statement.annotation))
        self.generic_visit(node)
        return self._body(node)

    def visit_AnnAssign(self, node):
        if isinstance(node.annotation, ast.Constant):
            return node                           # a class's field, kept above
        if node.value is None:
            return None                           # a bare annotation binds nothing
        return ast.Assign([node.target], node.value, lineno=node.lineno)


def _free_names(source: str) -> set[str]:
    """The global names a snippet of top-level code uses and does not itself define."""
    top = symtable.symtable(source, "<bundle>", "exec")
    names, defined = set(), {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}

    def walk(table):
        for symbol in table.get_symbols():
            if symbol.is_referenced() and (table is top or symbol.is_global()):
                names.add(symbol.get_name())
        for child in table.get_children():
            walk(child)
    walk(top)
    return {n for n in names - defined if not hasattr(builtins, n)}


class _Bundle:
    def __init__(self):
        self.names: dict[tuple[str, str], str] = {}        # (module, name) -> its name in the bundle
        self.parts: list[str] = []                          # definitions, dependencies first
        self.imports: dict[str, None] = {}
        self.taken: set[str] = set()

    def add(self, module_name: str, name: str) -> str:
        """Copy ``module_name.name`` in (with what it uses); its name in the bundle."""
        key = (module_name, name)
        if key in self.names:
            return self.names[key]
        value = getattr(sys.modules[module_name], name)
        home = getattr(value, "__module__", None)
        qualname = getattr(value, "__qualname__", "")
        if isinstance(value, (types.FunctionType, type)) and home and _ours(home) and (home, qualname) != key \
                and "." not in qualname and "<" not in qualname:
            self.names[key] = self.add(home, qualname)               # defined in another seqlab module
            return self.names[key]
        statement = _statement(module_name, name)
        if isinstance(statement, (ast.Import, ast.ImportFrom)):
            if isinstance(statement, ast.ImportFrom) and _ours(statement.module or ""):
                alias = next(a for a in statement.names if (a.asname or a.name) == name)
                self.names[key] = self.add(statement.module, alias.name)
                return self.names[key]
            raise LookupError(f"{module_name}.{name} is imported from outside seqlab: import it instead")
        new = name
        n = 2
        while new in self.taken:
            new, n = f"{name}_{n}", n + 1
        self.taken.add(new)
        self.names[key] = new
        node = _Plain().visit(ast.parse(ast.unparse(statement)).body[0])
        local = _LocalImports(self)
        node = local.visit(node)
        renames: dict[str, str] = {} if new == name else {name: new}
        module = sys.modules[module_name]
        snippet = ast.unparse(node)
        for free in sorted(_free_names(snippet) - local.introduced):
            target = getattr(module, free, _MISSING)
            if target is _MISSING:
                raise LookupError(f"{module_name}: {free} is not defined there")
            if isinstance(target, types.ModuleType) and _ours(target.__name__):
                node = _Attributes(free, target.__name__, self).visit(node)
            elif self._imported_from_outside(module_name, free):
                continue
            else:
                renamed = self.add(module_name, free)
                if renamed != free:
                    renames[free] = renamed
        if renames:
            _check_not_local(ast.unparse(node), renames)
            node = _Rename(renames).visit(node)
        self.parts.append(ast.unparse(node))
        return new

    def namespace(self, module_name: str) -> str:
        """A class standing for the seqlab module: each function it defines, as a static method."""
        key = (module_name, "<module>")
        if key in self.names:
            return self.names[key]
        module = sys.modules[module_name]
        new = module_name.rsplit(".", 1)[-1] + "_module"
        self.taken.add(new)
        self.names[key] = new
        members = [(n, self.add(module_name, n)) for n, v in vars(module).items()
                   if isinstance(v, types.FunctionType) and v.__module__ == module_name]
        body = "\n".join(f"    {n} = staticmethod({m})" for n, m in members) or "    pass"
        self.parts.append(f"class {new}:\n{body}")
        return new

    def _imported_from_outside(self, module_name: str, name: str) -> bool:
        """When ``name`` of the module is an import of a module outside seqlab: add that import."""
        try:
            statement = _statement(module_name, name)
        except LookupError:
            return False
        if isinstance(statement, ast.Import):
            alias = next(a for a in statement.names if (a.asname or a.name.split(".")[0]) == name)
            if not _ours(alias.name):
                self.imports[ast.unparse(ast.Import([alias]))] = None
                return True
        elif isinstance(statement, ast.ImportFrom) and not _ours(statement.module or "") and not statement.level:
            alias = next(a for a in statement.names if (a.asname or a.name) == name)
            self.imports[ast.unparse(ast.ImportFrom(statement.module, [alias], 0))] = None
            return True
        return False


_MISSING = object()


class _LocalImports(ast.NodeTransformer):
    """``from seqlab.x import a`` inside a function -> ``a = <a, bundled>``; a module imported so
    becomes a class of its functions (``recurrence.scalar_recurrence(...)`` keeps working)."""

    def __init__(self, bundle: _Bundle):
        self.bundle = bundle
        self.introduced: set[str] = set()       # the bundle's names this put in

    def visit_ImportFrom(self, node):
        if not _ours(node.module or ""):
            return node
        importlib.import_module(node.module)
        out = []
        for alias in node.names:
            value = getattr(sys.modules[node.module], alias.name)
            if isinstance(value, types.ModuleType):
                new = self.bundle.namespace(value.__name__)
                self.introduced.add(new)
            else:
                new = self.bundle.add(node.module, alias.name)
            self.introduced.add(new)
            if new != (alias.asname or alias.name):
                out.append(ast.Assign([ast.Name(alias.asname or alias.name, ast.Store())], ast.Name(new, ast.Load()),
                                      lineno=node.lineno))
        return out or ast.Pass()

    def visit_Import(self, node):
        if any(_ours(a.name) for a in node.names):
            raise LookupError(f"import {', '.join(a.name for a in node.names)} inside a function cannot be bundled")
        return node


class _Attributes(ast.NodeTransformer):
    """``alias.name`` (a seqlab module's function) -> the name it has in the bundle."""

    def __init__(self, alias: str, module_name: str, bundle: _Bundle):
        self.alias, self.module_name, self.bundle = alias, module_name, bundle

    def visit_Attribute(self, node):
        if isinstance(node.value, ast.Name) and node.value.id == self.alias:
            return ast.copy_location(ast.Name(self.bundle.add(self.module_name, node.attr), node.ctx), node)
        return self.generic_visit(node)

    def visit_Name(self, node):
        if node.id == self.alias:
            raise LookupError(f"the module {self.module_name} is used as a value ({self.alias}), not only as "
                              "module.name: it cannot be bundled")
        return node


class _Rename(ast.NodeTransformer):
    def __init__(self, renames: dict[str, str]):
        self.renames = renames

    def visit_Name(self, node):
        if node.id in self.renames:
            node.id = self.renames[node.id]
        return node

    def visit_FunctionDef(self, node):
        if node.name in self.renames:
            node.name = self.renames[node.name]
        self.generic_visit(node)
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node):
        if node.name in self.renames:
            node.name = self.renames[node.name]
        self.generic_visit(node)
        return node


def _check_not_local(source: str, renames: dict[str, str]) -> None:
    """Renaming a global is safe only where no function of the snippet has a local of that name."""
    def walk(table):
        for symbol in table.get_symbols():
            if symbol.get_name() in renames and table.get_type() != "module" and (symbol.is_local() or symbol.is_parameter()):
                raise LookupError(f"{symbol.get_name()} is both a global to rename and a local of {table.get_name()}")
        for child in table.get_children():
            walk(child)
    walk(symtable.symtable(source, "<bundle>", "exec"))


def bundle(function, name: str) -> str:
    """Source that defines ``name`` as ``function`` (a function of a seqlab module) does, self-contained."""
    module_name = function.__module__
    importlib.import_module(module_name)
    b = _Bundle()
    if function.__name__ != name:
        b.taken.add(name)                                 # kept for the last line: name = the function
    new = b.add(module_name, function.__name__)
    head = f'"""{name}: seqlab\'s {module_name}.{function.__name__}, with what it uses copied in."""\n\n'
    tail = "" if new == name else f"\n\n{name} = {new}\n"
    return head + "\n".join(b.imports) + "\n\n\n" + "\n\n\n".join(b.parts) + "\n" + tail


def _static_refusal(ex, name: str, source: str) -> str | None:
    import tempfile
    from pathlib import Path

    from seqlab.learn.static_rules import refusal
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.py"
        path.write_text(source, encoding="utf-8")
        job = ex.job(path, [])
        return refusal(path, name, job.rules, job.packages, tuple(job.helpers))


@functools.cache
def student_source(name: str, mistake: str | None = None) -> str:
    """The self-contained file of a correct student (the exercise's reference) or of a wrong one (the
    mutant of the catalogued ``mistake``). Where seqlab's function cannot stand alone or breaks a
    static rule (the LM references use the model's attention backends, train_bpe's use gc and a worker
    pool, cross_entropy's torch._assert_async), it is the version written in the tests from the stub
    (tests/learn/numpy_students.py, torch_students.py) for the same exercise and mistake."""
    from seqlab.learn.catalog import exercise
    ex = exercise(name)
    if mistake is None:
        function = ex.reference()
    else:
        function = mutant(ex, mistake)
    try:
        source = bundle(function, name)
        if _static_refusal(ex, name, source) is None:
            return source
    except (LookupError, AttributeError):      # a module used as a value, a name made at run time
        pass
    return written(ex, mistake)


def mutant(ex, mistake: str):
    """The function of the catalogued ``mistake`` (its step folder's check.py)."""
    return next(m for m in ex.mistakes if m.id == mistake).implementation


def written(ex, mistake: str | None) -> str:
    """The tests' own version of the exercise: a correct one, or the wrong one with that mistake."""
    import textwrap

    from tests.learn import numpy_students, torch_students
    if ex.kind == "torch":
        if mistake is None:
            return textwrap.dedent(torch_students.CORRECT["vectorised"][ex.name])
        return textwrap.dedent(next(source for source, found in torch_students.WRONG[ex.name].values()
                                    if found == mistake))
    if mistake is None:
        return textwrap.dedent(next(iter(numpy_students.CORRECT[ex.name].values())))
    return textwrap.dedent(next(source for _, found, source in numpy_students.WRONG[ex.name] if found == mistake))
