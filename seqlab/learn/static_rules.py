"""Rules read from the student's source with ``ast`` before anything runs: what the checked function
can reach (its body, what it calls in its file and in the student's other files, and every
module's top level, which runs at import) may import only the allowed packages, a generous part of
the standard library (:data:`STDLIB`), the allowed helper modules and the student's own modules,
and may not name what the exercise forbids (derived from its runtime ``rules``: torch.nn.functional,
torch.nn layers, torch.optim, torch.softmax, ...) nor what could switch the runtime rules off or
reach outside the check (:data:`DENIED`: threads, processes, ctypes, importlib, torch._C, dispatch
modes, ``__import__``, exec/eval, ``__subclasses__``, ``sys.modules``, ...). The student's own
``test_*`` functions and an ``if __name__ == "__main__":`` block are not the checked code.

:func:`refusal` gives the first breach as a sentence naming the file and line, or None. These
rules hold wherever the check runs, sandboxed or not; they see only what the source says
(``getattr(torch, "ut" + "ils")`` passes them), which is why the sandbox, not they, keeps the
reference and other students out of reach. :func:`reachable` and :func:`imports` serve the
grader's flags too.

    refusal("ws/softmax.py", "softmax", {"forbid": ["functional"]}, ("numpy", "torch"))
    -> 'softmax.py, line 3: torch.nn.functional.softmax: this exercise's rule "no torch.nn.functional" ...'
"""

from __future__ import annotations

import ast
import dataclasses
import sys
from pathlib import Path

from seqlab.learn.diagnosis import listed
from seqlab.learn.words import said

# the standard library the checked code may import (and their submodules)
STDLIB = frozenset({
    "__future__", "abc", "array", "base64", "binascii", "bisect", "cmath", "codecs", "collections", "contextlib",
    "copy", "csv", "dataclasses", "datetime", "decimal", "difflib", "enum", "errno", "fractions", "functools",
    "graphlib", "hashlib", "heapq", "io", "itertools", "json", "keyword", "math", "numbers", "operator", "os",
    "pathlib", "pprint", "random", "re", "reprlib", "statistics", "string", "struct", "sys", "textwrap", "time",
    "typing", "unicodedata", "warnings", "zlib",
})

_THREADS = said("static.why.threads")
_RULES = said("static.why.rules")
_CODE = said("static.why.code")
_NATIVE = said("static.why.native")
# dotted names (a prefix of components; "os.exec*": any component that starts so) -> why refused
DENIED = {
    "threading": _THREADS, "_thread": _THREADS, "multiprocessing": _THREADS, "concurrent": _THREADS,
    "asyncio": _THREADS, "subprocess": _THREADS, "signal": _THREADS, "ctypes": _NATIVE,
    "importlib": _CODE, "builtins": _CODE, "runpy": _CODE, "pkgutil": _CODE, "zipimport": _CODE, "imp": _CODE,
    "code": _CODE, "codeop": _CODE, "pickle": _CODE, "marshal": _CODE, "shelve": _CODE, "copyreg": _CODE,
    "gc": _RULES, "inspect": _RULES, "traceback": _RULES, "types": _RULES, "__main__": _RULES,
    "sys.modules": _RULES, "sys._getframe": _RULES, "sys._current_frames": _RULES, "sys.settrace": _RULES,
    "sys.setprofile": _RULES, "sys.meta_path": _RULES, "sys.path_hooks": _RULES, "sys.path_importer_cache": _RULES,
    "sys.addaudithook": _RULES,
    "os.fork": _THREADS, "os.forkpty": _THREADS, "os.setsid": _THREADS, "os.setpgid": _THREADS,
    "os.setpgrp": _THREADS, "os.kill": _THREADS, "os.killpg": _THREADS, "os.system": _THREADS, "os.popen": _THREADS,
    "os.exec*": _THREADS, "os.spawn*": _THREADS, "os.posix_spawn*": _THREADS, "os.register_at_fork": _THREADS,
    "os.set*id": _THREADS, "os.set*uid": _THREADS, "os.set*gid": _THREADS, "os.pidfd_open": _THREADS,
    "torch.utils._python_dispatch": _RULES, "torch._C": _RULES, "torch.ops": _RULES, "torch.library": _RULES,
    "torch.overrides": _RULES, "torch.multiprocessing": _THREADS, "torch.utils.cpp_extension": _CODE,
    "torch.hub": _CODE, "torch.compile": _CODE, "torch.jit": _CODE, "numpy.ctypeslib": _NATIVE,
    "numpy.f2py": _CODE, "numpy.distutils": _CODE, "seqlab": said("static.why.seqlab"),
}
# names and attributes that reach around the rules whatever they are called on
NAMES = {name: _CODE for name in ("__import__", "exec", "eval", "compile", "breakpoint")} | {
    name: _RULES for name in ("globals", "__builtins__", "__loader__")}
ATTRIBUTES = frozenset({
    "__subclasses__", "__globals__", "__builtins__", "__code__", "__closure__", "__bases__", "__base__", "__mro__",
    "__dict__", "__getattribute__", "__reduce__", "__reduce_ex__", "__loader__", "__spec__", "__self__",
    "__func__", "__wrapped__", "__traceback__", "__defaults__", "__kwdefaults__", "tb_frame", "tb_next",
    "f_globals", "f_locals", "f_back", "f_builtins", "f_code", "gi_frame", "gi_code", "cr_frame", "ag_frame",
})
_ATTRIBUTE_FUNCTIONS = ("getattr", "setattr", "delattr", "hasattr")
# forbidden modules that may still be imported: what is used of them is refused (the student's tests may use them)
_MODULES = frozenset({"torch.nn.functional", "torch.nn.modules"})
# torch.nn names that are not layers (a from-scratch model may use them)
_NOT_LAYERS = frozenset({"Parameter", "Buffer", "UninitializedParameter", "UninitializedBuffer"})


@dataclasses.dataclass(frozen=True)
class Exercise:
    """What the rules need of an exercise (a runner Job carries each field)."""
    function: str
    rules: dict | None = None
    packages: tuple[str, ...] = ("numpy",)
    helpers: tuple[str, ...] = ()


def _forbidden(rules: dict | None) -> dict[str, tuple[str, str]]:
    """The exercise's own denied dotted names -> (its rule, how to write it instead), from its runtime
    rules. A forbidden module itself may be imported (your tests may use it); what is used of it may not."""
    if not rules:
        return {}
    from seqlab.learn.child.rules import GROUPS, check_rules
    found = {}
    for key in check_rules(rules):
        group = GROUPS[key]
        if key == "functional":
            found["torch.nn.functional"] = (group.rule, group.instead)
        elif key == "layers":
            found["torch.nn.modules"] = found["torch.nn.<Layer>"] = (group.rule, group.instead)
        elif key == "optim":
            found["torch.optim.<not Optimizer>"] = (group.rule, group.instead)
        for dotted in group.names:
            found.setdefault(dotted, (group.rule, group.instead))
    return found


def _match(dotted: str, pattern: str) -> bool:
    parts, wanted = dotted.split("."), pattern.split(".")
    if len(parts) < len(wanted):
        return False
    for part, want in zip(parts, wanted):
        if want == "<Layer>":
            if not part[:1].isupper() or part in _NOT_LAYERS or part in _allowed_modules():
                return False
        elif want == "<not Optimizer>":
            if part == "Optimizer" or part.startswith("_"):
                return False
        elif "*" in want:
            head, tail = want.split("*", 1)
            if not (part.startswith(head) and part.endswith(tail) and len(part) >= len(head) + len(tail)):
                return False
        elif part != want:
            return False
    return True


def _allowed_modules() -> frozenset:
    from seqlab.learn.child.rules import ALLOWED_MODULES
    return ALLOWED_MODULES


@dataclasses.dataclass
class _Breach(Exception):
    file: Path
    line: int
    sentence: object               # what is wrong, a sentence (words said later)
    imported: bool = False         # an import statement: the student's own tests may hold it instead


def _private(dotted: str, packages) -> bool:
    parts = dotted.split(".")
    return parts[0] in packages and any(p.startswith("_") and not (p.startswith("__") and p.endswith("__"))
                                        for p in parts[1:])


class _Checker:
    def __init__(self, folder: Path, exercise: Exercise):
        self.folder, self.exercise = folder, exercise
        self.forbidden = _forbidden(exercise.rules)
        self.packages = tuple(exercise.packages)
        self.roots: dict[Path, set[str] | None] = {}       # a student module -> the names reached (None: all)

    # -- what a dotted name is ---------------------------------------------------------------------------
    def student_module(self, dotted: str) -> Path | None:
        if dotted.split(".")[0] in sys.stdlib_module_names or dotted.split(".")[0] in self.packages:
            return None                      # the standard library and the packages come first on sys.path
        base = self.folder.joinpath(*dotted.split("."))
        for candidate in (base.with_suffix(".py"), base / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None

    def _helper(self, dotted: str, imported: bool) -> bool:
        """The helper module, a package above it, or (not imported: a name) a name in it."""
        return any(dotted == h or h.startswith(dotted + ".") or not imported and dotted.startswith(h + ".")
                   for h in self.exercise.helpers)

    def check_dotted(self, dotted: str, where: Path, line: int, imported: bool = False) -> None:
        """Refuse a denied module or name (``imported``: ``dotted`` is imported, so it must exist)."""
        if self._helper(dotted, imported):
            return
        used = f"import {dotted}" if imported else dotted
        for pattern, (rule, instead) in self.forbidden.items():
            if _match(dotted, pattern) and not (dotted == pattern and pattern in _MODULES):
                from seqlab.learn.child.rules import INSTEAD
                instead = INSTEAD.get(dotted.rsplit(".", 1)[-1].lstrip("_"), instead)
                raise _Breach(where, line, rule_words(rule, used, instead), imported)
        for pattern, why in DENIED.items():
            if _match(dotted, pattern):
                raise _Breach(where, line, said("static.not_allowed", used=used, why=why), imported)
        if _private(dotted, self.packages):
            raise _Breach(where, line, said("static.private", used=used), imported)
        if not imported:
            return
        top = dotted.split(".")[0]
        if top in self.packages or self.student_module(dotted) is not None:
            return
        if top in sys.stdlib_module_names:
            if top not in STDLIB:
                raise _Breach(where, line, said("static.not_among", used=used, top=top), True)
            return
        raise _Breach(where, line, said("static.no_module", used=used, top=top), True)

    # -- one file ---------------------------------------------------------------------------------------
    def visit(self, path: Path, roots: set[str] | None) -> None:
        """Check ``path`` (what ``roots`` reach; None: everything but test functions)."""
        known = self.roots.get(path, set())
        if path in self.roots and (known is None or roots is not None and roots <= known):
            return
        self.roots[path] = None if roots is None or known is None else known | roots
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), str(path))
        except SyntaxError:
            return                           # the import in the child says where, in Python's words
        nodes = reachable(tree, self.roots[path])
        self.check_nodes(path, nodes)

    def check_nodes(self, path: Path, nodes: list[ast.AST]) -> None:
        bound: dict[str, str] = {}
        later: list[tuple[Path, set[str] | None]] = []
        walked = [n for node in nodes for n in ast.walk(node)]
        for node in walked:                           # first the imports: what each name is bound to
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.check_dotted(alias.name, path, node.lineno, imported=True)
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        top = alias.name.split(".")[0]
                        bound[top] = top
                    student = self.student_module(alias.name)
                    if student is not None:
                        later.append((student, None))        # a module of theirs: all of it but its tests
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    raise _Breach(path, node.lineno, said("static.relative", module=f"{'.' * node.level}{node.module or ''}"))
                module = node.module or ""
                self.check_dotted(module, path, node.lineno, imported=True)
                student = self.student_module(module)
                names = set()
                for alias in node.names:
                    if alias.name == "*":
                        names = None
                        continue
                    self.check_dotted(f"{module}.{alias.name}", path, node.lineno)
                    bound[alias.asname or alias.name] = f"{module}.{alias.name}"
                    if names is not None:
                        names.add(alias.name)
                if student is not None:
                    later.append((student, names))
        for node in walked:
            if isinstance(node, ast.Name):
                if node.id in NAMES:
                    raise _Breach(path, node.lineno, said("static.not_allowed", used=node.id, why=NAMES[node.id]))
            elif isinstance(node, ast.Attribute):
                self._attribute(node.attr, node, path, bound)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _ATTRIBUTE_FUNCTIONS \
                    and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                self._attribute(node.args[1].value, ast.Attribute(node.args[0], node.args[1].value, ast.Load(),
                                                                  lineno=node.lineno), path, bound)
        for student, names in later:
            self.visit(student, names)

    def _attribute(self, attr: str, node: ast.Attribute, path: Path, bound: dict) -> None:
        if attr in ATTRIBUTES:
            raise _Breach(path, node.lineno, said("static.not_allowed", used=f".{attr}", why=_RULES))
        chain = [attr]
        base = node.value
        while isinstance(base, ast.Attribute) or _constant_getattr(base):
            if isinstance(base, ast.Attribute):
                chain.append(base.attr)
                base = base.value
            else:                                       # getattr(torch.nn, "functional").softmax
                chain.append(base.args[1].value)
                base = base.args[0]
        if isinstance(base, ast.Name) and base.id in bound:
            dotted = ".".join([bound[base.id], *reversed(chain)])
            self.check_dotted(dotted, path, node.lineno)


def _constant_getattr(node: ast.AST) -> bool:
    """``getattr(x, "name")`` with the name written out."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
        and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)


def _main_guard(node: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (its body never runs when the file is imported)."""
    test = node.test if isinstance(node, ast.If) else None
    return isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__" \
        and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant) \
        and test.comparators[0].value == "__main__"


def _at_definition(node) -> list[ast.AST]:
    """What runs when a def or class statement runs: decorators, defaults, annotations, bases, and a
    class's own body statements."""
    parts: list[ast.AST] = list(node.decorator_list)
    if isinstance(node, ast.ClassDef):
        parts += node.bases + [k.value for k in node.keywords]
        for statement in node.body:
            if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                parts += _at_definition(statement)
            else:
                parts.append(statement)
    else:
        parts += [d for d in node.args.defaults + node.args.kw_defaults if d is not None]
    return parts


def reachable(tree: ast.Module, roots: set[str] | None) -> list[ast.AST]:
    """The parts of a module that run when it is imported and when the names ``roots`` are used
    (None: every definition but the ``test_*`` functions no other reached code names)."""
    defs: dict[str, list[ast.AST]] = {}
    found: list[ast.AST] = []
    for statement in tree.body:
        if _main_guard(statement):
            continue
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs.setdefault(statement.name, []).append(statement)
            found += _at_definition(statement)
        else:
            found.append(statement)
    wanted = {n for n in defs if not n.startswith("test_")} if roots is None else set(roots)
    seen: set[str] = set()
    todo = list(wanted) + [n.id for node in found for n in ast.walk(node) if isinstance(n, ast.Name)]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        for node in defs[name]:
            found.append(node)
            todo += [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    return found


class Refusal(str):
    """:func:`refusal`'s sentence in English, with its words said later (``said``, a words.Said) for the
    student's language."""
    said = None


def _refused(words) -> Refusal:
    text = Refusal(str(words))
    text.said = words
    return text


def refusal(path, function: str, rules: dict | None = None, packages=("numpy",), helpers=()) -> Refusal | None:
    """The first static rule the file ``path`` breaks in what its function ``function`` can reach, as
    a sentence naming the file, the line and what is allowed (a :class:`Refusal`); None when it keeps
    them all."""
    path = Path(path)
    exercise = Exercise(function, rules, tuple(packages), tuple(helpers))
    checker = _Checker(path.parent, exercise)
    try:
        checker.visit(path, {function})
    except _Breach as breach:
        try:
            shown = breach.file.relative_to(path.parent)
        except ValueError:
            shown = breach.file.name
        return _refused(said("static.refusal", file=str(shown), line=breach.line, sentence=breach.sentence,
                             tests=said("static.tests_only") if breach.imported else "", allowed=allowed(exercise)))
    except (OSError, RecursionError) as error:
        return _refused(said("static.unreadable", file=path.name, error=f"{type(error).__name__}: {error}"))
    return None


def allowed(exercise: Exercise):
    """What the checked code may use, in a sentence (words said later)."""
    rules = ""
    if exercise.rules:
        from seqlab.learn.child.rules import GROUPS, check_rules
        texts = list(dict.fromkeys(GROUPS[g].rule for g in check_rules(exercise.rules)))
        rules = said("static.under_rules", rules=listed([_rule(t) for t in texts], "describe.joined"))
    helpers = "".join(f", {h}" for h in exercise.helpers)
    return said("static.allowed", packages=listed(list(exercise.packages), "rules.and"), rules=rules, helpers=helpers)


# --- the rules' message in words said later -------------------------------------------------------------
def _rule(rule: str):
    """A rule group's rule (child.rules.GROUPS) in words said later."""
    from seqlab.learn.child.rules import GROUPS
    from seqlab.learn.words import entry
    key = next((k for k, g in GROUPS.items() if g.rule == rule), None)
    try:
        return said(f"rules.rule.{key}") if entry(f"rules.rule.{key}")["en"] == rule else rule
    except KeyError:
        return rule


def _instead(instead: str):
    """How to write it instead (child.rules.INSTEAD, a group's default) in words said later; code alone as it is."""
    from seqlab.learn.child.rules import GROUPS, INSTEAD
    from seqlab.learn.words import entry
    texts = {**INSTEAD, **{k: g.instead for k, g in GROUPS.items() if k not in INSTEAD}}
    key = next((k for k, text in texts.items() if text == instead), None)
    try:
        return said(f"rules.instead.{key}") if entry(f"rules.instead.{key}")["en"] == instead else instead
    except KeyError:
        return instead


def rule_words(rule: str, used, instead: str):
    """child.rules.message(rule, used, instead) in words said later (its English to the letter; the
    message as it is where the words would say it otherwise)."""
    from seqlab.learn.child.rules import message
    words = said("rules.breaks", used=used, rule=_rule(rule), instead=_instead(instead))
    return words if str(words) == message(rule, str(used), instead) else message(rule, str(used), instead)


def broken_rule_words(text: str):
    """The message of a runtime rule the student's code broke (child.rules's RuleBroken, made in the child
    in English) in words said later, read back by the rule and what to write instead; a message it does not
    know (made by the student's own code) as it is."""
    from seqlab.learn.child.rules import _ATEN_SOURCES, GROUPS, INSTEAD, message, underneath
    insteads = dict.fromkeys([*INSTEAD.values(), *(g.instead for g in GROUPS.values())])
    for group in GROUPS.values():
        for instead in insteads:
            tail = message(group.rule, "", instead)
            if text.endswith(tail) and len(text) > len(tail):
                used = text[:-len(tail)]
                op = next((op for op in {*_ATEN_SOURCES, *(o for g in GROUPS.values() for o in g.aten)}
                           if underneath(op) == used), None)
                if op is not None:
                    source = _ATEN_SOURCES.get(op)
                    head, _, last = (source or "").rpartition(" or ")
                    used = said("rules.underneath", op=op, source=said("rules.a_forbidden_function") if source is None
                                else said("rules.or", a=head, b=last) if head else source)
                return rule_words(group.rule, used, instead)
    return text


def imports(path) -> list[tuple[int, str]]:
    """(line, dotted name) of every import in the file ``path``, anywhere in it."""
    try:
        tree = ast.parse(Path(path).read_text(encoding="utf-8", errors="replace"))
    except (SyntaxError, OSError, ValueError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found
