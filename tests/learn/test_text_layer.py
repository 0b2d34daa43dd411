"""One text layer: no Chinese characters in seqlab's Python, outside the words' data files (words.toml and
each step's step.toml and lessons), and every key the code says exists in both languages."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from seqlab.learn import words

ROOT = Path(__file__).resolve().parents[2]
HAN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")


def chinese_in_python(root: Path) -> dict[str, int]:
    """{file relative to ``root``: lines holding a Chinese character} of every .py file under root/seqlab."""
    found = {}
    for path in sorted((root / "seqlab").rglob("*.py")):
        lines = sum(1 for line in path.read_text(encoding="utf-8").splitlines() if HAN.search(line))
        if lines:
            found[path.relative_to(root).as_posix()] = lines
    return found


def test_no_chinese_in_seqlab_s_python_outside_the_text_layer():
    found = chinese_in_python(ROOT)
    assert not found, f"move these files' Chinese into the text layer (words.toml, a step's step.toml): {found}"


def test_a_chinese_line_added_to_python_is_found(tmp_path):
    (tmp_path / "seqlab" / "learn").mkdir(parents=True)
    (tmp_path / "seqlab" / "learn" / "ok.py").write_text('print("right.")\n', encoding="utf-8")
    assert chinese_in_python(tmp_path) == {}
    (tmp_path / "seqlab" / "learn" / "bad.py").write_text('print("right." if en else "\u6b63\u786e\u3002")\n',
                                                          encoding="utf-8")
    assert chinese_in_python(tmp_path) == {"seqlab/learn/bad.py": 1}


def _texts(node, key=""):
    if isinstance(node, dict) and "en" in node and all(isinstance(v, str) for v in node.values()):
        yield key, node
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from _texts(v, f"{key}.{k}" if key else k)


@pytest.mark.parametrize("key,text", [(k, t) for k, t in _texts(words.table()) if k.split(".")[0] != "glossary"],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_every_text_of_words_toml_is_in_both_languages_with_the_same_names(key, text):
    assert text.get("zh"), f"{key} has no Chinese"
    names = lambda s: sorted(re.findall(r"\{(\w+)\}", s))     # noqa: E731
    assert names(text["zh"]) == names(text["en"]), key


def test_words_said_later_render_in_each_language_and_name_a_missing_key():
    said = words.said("mistakes.dtype.title", what="V's")
    assert str(said) == "the output's dtype is not V's"
    assert words.render(said, "zh") == words.pair("mistakes.dtype.title", what="V's")[1] == "输出的数据类型不是V's"
    assert words.render(words.from_json(said.as_json()), "en") == str(said)
    with pytest.raises(KeyError, match="no words 'feedback.nothing_here'"):
        words.render(words.said("feedback.nothing_here"), "en")
