"""DEVELOPERS.md's map of the code names only things that exist: every file or folder in backticks
(found from the repository root, from seqlab/, or, in a row of the package table, from that row's
package), every module a package row names, every area of the layer list (at the layer
tests/test_layout.py gives it) and every dotted ``seqlab.`` name."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

from tests.test_layout import LAYERS

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "seqlab"


def _exists(name: str, *folders: Path) -> bool:
    return any((folder / name.rstrip("/")).exists() for folder in folders)


def _dotted_exists(name: str) -> bool:
    """Whether ``seqlab.a.b`` is a module, or an attribute of the longest module prefix."""
    parts = name.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            value = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(value, attribute):
                return False
            value = getattr(value, attribute)
        return True
    return False


def _outside_parentheses(line: str) -> list[str]:
    """The backticked tokens of ``line`` that are not inside parentheses (a module, not the names
    it defines: "`task` (`Trainer`, `train`)" gives task)."""
    depth, tokens = 0, []
    for piece in re.split(r"(`[^`\n]+`)", line):
        if piece.startswith("`") and piece.endswith("`") and len(piece) > 1:
            if depth == 0:
                tokens.append(piece[1:-1])
        else:
            depth += piece.count("(") - piece.count(")")
    return tokens


def map_problems(text: str, root: Path = ROOT, layered: list[str] | None = None) -> list[str]:
    """What DEVELOPERS.md-like ``text`` names that ``root`` lacks, one line each. ``layered`` (a
    list) receives the names the layer list gives."""
    package, problems, level = root / "seqlab", [], None
    layered = [] if layered is None else layered
    for number, line in enumerate(text.splitlines(), 1):
        row = re.match(r"\| `(seqlab/[\w/]+/)` \|(.*)\|\s*$", line)
        here = [root, package] + ([root / row.group(1)] if row else [])
        for token in re.findall(r"`([^`\n]+)`", line):
            if re.fullmatch(r"[\w.\-/]+", token) and ("/" in token or re.search(r"\.(py|md|toml)$", token)):
                if not _exists(token, *here):
                    problems.append(f"DEVELOPERS.md:{number}: `{token}` does not exist")
            elif re.fullmatch(r"seqlab(\.\w+)+", token) and not _dotted_exists(token):
                problems.append(f"DEVELOPERS.md:{number}: `{token}` is no module or name")
        if row:  # a lower-case name outside parentheses is a module of the row's package (or an area)
            for token in _outside_parentheses(row.group(2)):
                if re.fullmatch(r"[a-z_][a-z0-9_]*", token) and not any(
                        _exists(token, folder) or _exists(token + ".py", folder) for folder in here[1:]):
                    problems.append(f"DEVELOPERS.md:{number}: {row.group(1)} has no module `{token}`")
        # the layer list: "    3  training, inference, accounting        one engine", continued
        # on lines indented to its names ("       induction")
        start, more = re.match(r" {4}(\d) {2}(\S.*)", line), re.match(r" {7}(\w[\w, ]*)$", line)
        if start:
            level, names = int(start.group(1)), start.group(2)
        elif more and level is not None:
            names = more.group(1)
        else:
            level = None if line.strip() == "" or not line.startswith(" ") else level
            continue
        names = re.split(r"\s{2,}", names.split("top-level modules:")[-1].strip())[0]
        for name in (n.strip().removeprefix("seqlab.") for n in names.split(",")):
            if not name or name == "seqlab/" or " " in name:
                continue
            layered.append(name)
            if not (_exists(name, package) or _exists(name + ".py", package)):
                problems.append(f"DEVELOPERS.md:{number}: layer {level} names {name}, which seqlab/ lacks")
            elif LAYERS.get(name, level) != level:
                problems.append(f"DEVELOPERS.md:{number}: {name} is in layer {level} here but "
                                f"{LAYERS[name]} in tests/test_layout.py")
    return problems


def test_every_path_the_developers_map_names_exists():
    layered: list[str] = []
    problems = map_problems((ROOT / "DEVELOPERS.md").read_text(encoding="utf-8"), layered=layered)
    assert not problems, "\n".join(problems)
    packages = {path.parent.name for path in PACKAGE.glob("*/__init__.py")}
    assert packages <= set(layered), f"the layer list was not read whole: {sorted(packages - set(layered))}"


def test_the_map_check_finds_a_moved_file_a_missing_module_and_a_wrong_layer():
    text = ("    3  training, inference, accounting        one engine\n"
            "    5  interpret,                          tools\n"
            "       lm, nothing_here\n"
            "| `seqlab/runs/` | the run directory: `kinds` (`Kind`), `lost_module` (a module that went) |\n"
            "about 100 lines, e.g. `training/lm_task.py`, `seq2seq/task.py`; `seqlab.atomic.no_such_name`\n")
    assert map_problems(text) == [
        "DEVELOPERS.md:3: lm is in layer 5 here but 4 in tests/test_layout.py",
        "DEVELOPERS.md:3: layer 5 names nothing_here, which seqlab/ lacks",
        "DEVELOPERS.md:4: seqlab/runs/ has no module `lost_module`",
        "DEVELOPERS.md:5: `training/lm_task.py` does not exist",
        "DEVELOPERS.md:5: `seqlab.atomic.no_such_name` is no module or name",
    ]
