"""Every label the page uses exists in English and 中文, and the glossary has the issue's terms."""

from __future__ import annotations

import json
import re

from seqlab.explorer.api import run_endpoint
from seqlab.explorer.server import STATIC_DIR
from seqlab.lm.inspection import trace_forward
from seqlab.model import TransformerLM


def _strings() -> dict[str, list[str]]:
    source = (STATIC_DIR / "i18n.js").read_text(encoding="utf-8")
    block = source[source.index("const STRINGS = {") + len("const STRINGS = ") : source.index("\n};\n") + 2]
    # the table is JSON apart from trailing commas
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", block))


def _glossary() -> list[list[str]]:
    source = (STATIC_DIR / "i18n.js").read_text(encoding="utf-8")
    block = source[source.index("const GLOSSARY = [") + len("const GLOSSARY = ") :]
    block = block[: block.index("\n];\n") + 2]
    return json.loads(re.sub(r",(\s*[}\]])", r"\1", block))


def test_every_label_has_english_and_chinese():
    strings = _strings()
    for key, pair in strings.items():
        assert len(pair) == 2 and all(pair), key
        # both languages take the same placeholders
        assert sorted(re.findall(r"\{(\w+)\}", pair[0])) == sorted(re.findall(r"\{(\w+)\}", pair[1])), key


def test_every_key_the_page_uses_is_defined():
    strings = _strings()
    html = (STATIC_DIR / "index.html").read_text(encoding="utf-8")
    app = (STATIC_DIR / "app.js").read_text(encoding="utf-8")
    used = set(re.findall(r'data-i18n="([\w.]+)"', html))
    used |= set(re.findall(r'\bt\("([\w.]+\w)"', app))  # t("mh." + name) is covered below
    used |= set(re.findall(r'"([a-z]+\.[a-z_]+)"', app)) & {k for k in strings if k.startswith(("lm.", "gru.", "att."))}
    cards = re.findall(r'^  \["(\w+)", \(a\) =>', app, flags=re.M)
    assert len(cards) == 10
    used |= {f"sc.{part}.{name}" for name in cards for part in ("q", "a")}
    used |= {f"mh.{name}" for name, _ in run_endpoint("multihead", {})["shapes"]}
    # the model panels (model.js): t("...") calls, and the label lists it loops over
    model = (STATIC_DIR / "model.js").read_text(encoding="utf-8")
    model_used = set(re.findall(r'\bt\("([\w.]+\w)"', model)) | set(re.findall(r'"(model\.[a-z_]+)"', model))
    model_used |= {f"mshape.{name}" for name, _ in trace_forward(TransformerLM(10, 4, 4, 1, 2), [1, 2]).shapes}
    assert len(model_used) > 40
    used |= model_used
    # section 14 (paths.js)
    paths_used = set(re.findall(r'\bt\("([\w.]+\w)"', (STATIC_DIR / "paths.js").read_text(encoding="utf-8")))
    assert {"paths.coincide", "paths.left_out", "paths.interval", "paths.longer"} <= paths_used
    used |= paths_used
    # the course (course.js): its t("...") calls and the labels it builds from a state or a kind
    course = (STATIC_DIR / "course.js").read_text(encoding="utf-8")
    course_used = set(re.findall(r'\bt\("([\w.]+\w)"', course)) | set(re.findall(r'"(course\.[a-z_]+)"', course))
    course_used |= {f"course.state.{s}" for s in ("todo", "started", "passed", "changed", "unconfirmed")}
    course_used |= {f"course.kind.{k}" for k in ("trace", "implement", "card", "command")}
    course_used |= {f"course.qkind.{k}" for k in ("predict", "explain", "derive", "trace", "extend")}
    assert {"course.hint", "course.right", "course.diagnosis", "course.read_mistake"} <= course_used
    used |= course_used
    missing = sorted(used - set(strings))
    assert not missing, missing
    assert len(used) > 200


def test_glossary_has_the_issue_terms():
    glossary = dict(_glossary())
    required = {"hidden state": "隐藏状态", "BPTT (backpropagation through time)": "随时间反向传播",
                "gradient clipping": "梯度裁剪", "LSTM (long short-term memory)": "长短期记忆",
                "GRU (gated recurrent unit)": "门控循环单元", "query": "查询", "key": "键", "value": "值",
                "causal mask": "因果掩码", "positional encoding": "位置编码"}
    for english, chinese in required.items():
        assert glossary[english] == chinese


def _request_error_codes() -> set[str]:
    """Every code a RequestError is raised with in the explorer's Python (read with ast)."""
    import ast

    codes = set()
    for path in (STATIC_DIR.parent).glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "RequestError" and len(node.args) > 1:
                code = node.args[1]
                if isinstance(code, ast.Constant):
                    codes.add(code.value)
                else:  # f"{name}_range" in model_api._index, used for layer and head
                    assert isinstance(code, ast.JoinedStr) and code.values[-1].value == "_range", ast.dump(code)
                    codes |= {"layer_range", "head_range"}
    return codes


def test_every_error_code_has_a_translation():
    codes = _request_error_codes()
    assert {"text_empty", "run_missing", "run_damaged", "temperature", "no_paths", "s2s_missing"} <= codes
    missing = sorted(f"err.{code}" for code in codes if f"err.{code}" not in _strings())
    assert not missing, missing
