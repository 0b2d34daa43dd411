"""Issue 22: honest translations (what a run covers: seqlab.seq2seq.coverage, the grammar and date
formats of seqlab.seq2seq.builtin_tasks, `seqlab seq2seq vocab`) and the word-level alignment of character
models (seqlab.seq2seq.alignment), each against an oracle written here."""

from __future__ import annotations

import datetime
import json

import pytest
import torch

from seqlab.cli import main
from seqlab.seq2seq.alignment import word_alignment
from seqlab.seq2seq.builtin_tasks import (
    ADJECTIVES,
    NOUNS,
    date_formats,
    date_in_task,
    fr_en_translation,
    fr_en_words,
    french_words,
    make_pairs,
)
from seqlab.seq2seq.coverage import check_input, example_source
from seqlab.seq2seq.settings import Seq2SeqTrainConfig
from seqlab.seq2seq.vocab import CharVocab

pytestmark = pytest.mark.usefixtures("one_thread")


# -- the grammar and the date formats: one source of truth with the generators ---------------------

def test_every_generated_fr_en_pair_is_recognised_with_its_own_translation():
    for source, target in make_pairs("fr-en", 3000, seed=11):
        assert fr_en_translation(source) == target
        assert all(word in fr_en_words() for word in french_words(source))


@pytest.mark.parametrize("sentence", [
    "le petit chien mange",          # the example: "petit" is no word of the grammar
    "le chien noire dort",           # adjective agreement
    "les chiens dort",               # verb agreement
    "le chien dort un chat",         # an object after an intransitive verb
    "le chien voit",                 # a transitive verb without its object
    "chien le dort",                 # word order
    "le noir chien dort",            # adjective before the noun
])
def test_sentences_outside_the_grammar_are_not_recognised(sentence):
    assert fr_en_translation(sentence) is None


def test_every_generated_date_is_in_the_task_and_others_are_not():
    for source, target in make_pairs("dates", 5000, seed=4):
        assert date_in_task(source) == datetime.date.fromisoformat(target)
    for outside in ("2026-11-29", "Monday 29th of November 2026", "29 November 1850", "Nov 29 26",
                    "29th November 2026", "november 29, 2026", "31/11/2026", "tomorrow"):
        assert date_in_task(outside) is None, outside
    assert date_in_task("Nov 29, 75") == datetime.date(2075, 11, 29)  # two-digit years are 2000-2099
    assert len(date_formats()) == 14 and "Sunday 29th of November 2026" in date_formats()


def test_grammar_words_cover_every_form():
    words = fr_en_words()
    for fr_sg, fr_pl, _, en_sg, en_pl in NOUNS:
        assert en_sg in words[fr_sg] and en_pl in words[fr_pl]
    for *forms, english in ADJECTIVES:
        assert all(words[form] == english for form in forms)
    assert french_words("l'oiseau a mangé") == ["l'", "oiseau", "a", "mangé"]


# -- check_input --------------------------------------------------------------------------------

def _codes(text, vocab, **config):
    return [note.code for note in check_input(text, vocab, Seq2SeqTrainConfig(**config))]


def test_input_notes_per_task():
    letters = CharVocab.from_texts(["abcdefghij"])
    assert _codes("abc", letters, task="reverse", min_len=2, max_len=5) == []
    assert _codes("abcdefg", letters, task="reverse", min_len=2, max_len=5) == ["length_outside"]
    assert _codes("abz", letters, task="reverse", min_len=2, max_len=5) == ["unknown_chars"]
    french = CharVocab.from_texts([s for s, _ in make_pairs("fr-en", 500, seed=0)])
    assert _codes("le chien dort", french, task="fr-en") == []
    notes = check_input("le petit chien mange", french, Seq2SeqTrainConfig(task="fr-en"))
    assert [n.code for n in notes] == ["unknown_words"] and notes[0].params == {"words": "petit"}
    assert _codes("la chien dort", french, task="fr-en") == ["not_in_grammar"]
    dates = CharVocab.from_texts([s for s, _ in make_pairs("dates", 2000, seed=0)])
    assert _codes("29/11/2026", dates, task="dates") == []
    assert _codes("29.13.2026", dates, task="dates") == ["not_a_task_date"]  # month 13
    assert _codes("29-11-2026", dates, task="dates") == ["unknown_chars", "not_a_task_date"]


def test_pairs_runs_report_unknown_characters_and_open_on_the_first_source(tmp_path):
    pairs = tmp_path / "p.tsv"
    pairs.write_text("\ufeffGo.\tVa !\nHi.\tSalut !\n", encoding="utf-8")
    cfg = Seq2SeqTrainConfig(task=None, pairs=str(pairs))
    vocab = CharVocab.from_texts(["Go.", "Hi."])
    notes = check_input("Go?", vocab, cfg)
    assert [(n.code, n.params) for n in notes] == [("unknown_chars", {"chars": "?"})]
    assert example_source(cfg) == "Go."
    assert example_source(Seq2SeqTrainConfig(task="sort", min_len=2, max_len=3)) == "cad"
    assert example_source(Seq2SeqTrainConfig(task="fr-en")) == "la vache blanche a vu un chien"


# -- seqlab seq2seq vocab and translate's warnings ---------------------------------------------------

def test_vocab_lists_the_grammar_and_the_runs_characters(tiny_fr_en_run, capsys):
    assert main(["seq2seq", "vocab", "--run", str(tiny_fr_en_run), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    vocab = json.loads((tiny_fr_en_run / "vocab.json").read_text())
    assert info["source_chars"] == vocab["source"]["chars"] and info["words"] == fr_en_words()
    assert main(["seq2seq", "vocab", "--run", str(tiny_fr_en_run)]) == 0
    text = capsys.readouterr().out
    assert "the fr-en grammar: 95 French words" in text
    assert all(any(line.split() == [word, *english.split()] for line in text.splitlines())
               for word, english in fr_en_words().items())


def test_vocab_lists_the_date_formats(tmp_path, capsys):
    from seqlab.runs.directory import write_vocab_json

    run = tmp_path / "run"
    run.mkdir()
    (run / "config.json").write_text(json.dumps({"train": {"task": "dates"}, "model_config": {}}))
    vocab = CharVocab.from_texts(["2026-11-29"])
    write_vocab_json(run, {"source": vocab.to_dict(), "target": vocab.to_dict()})
    assert main(["seq2seq", "vocab", "--run", str(run)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.strip() for line in lines[-14:]] == date_formats()
    assert "dates from 1900 to 2099" in "\n".join(lines)


def test_translate_says_when_the_input_is_outside_the_training(tiny_fr_en_run, capsys):
    """ "le petit chien mange" became "the fast dog eats" with no word."""
    assert main(["seq2seq", "translate", "--run", str(tiny_fr_en_run), "le petit chien mange", "le chien dort"]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.splitlines()) == 2
    warnings = captured.err.splitlines()
    assert warnings == ["warning: TEXT 1: 'petit' is not a word of the fr-en grammar the model learnt "
                        "(`seqlab seq2seq vocab` lists them); its translation is a guess"]


def test_vocab_on_a_language_model_run(tmp_path, capsys):
    (tmp_path / "tokenizer").mkdir()
    assert main(["seq2seq", "vocab", "--run", str(tmp_path)]) == 2
    assert "is a language-model run (written by `seqlab train`)" in capsys.readouterr().err


# -- word-level alignment -------------------------------------------------------------------------

def naive_word_alignment(weights, source, output):
    """Loops over words and characters: sum over the source word's characters, mean over the output
    word's characters; "</s>" is the last row."""
    def words(text):
        spans, start = [], None
        for i, c in enumerate(text + " "):
            if not c.isspace() and start is None:
                start = i
            elif c.isspace() and start is not None:
                spans.append((start, i))
                start = None
        return spans

    out_spans = words(output) + [(len(output), len(output) + 1)]
    table = []
    for a, b in out_spans:
        row = []
        for c, d in words(source):
            row.append(sum(float(weights[r][k]) for r in range(a, b) for k in range(c, d)) / (b - a))
        table.append(row)
    return table


@pytest.mark.parametrize("source, output", [("le chat noir dort", "the black cat sleeps"),
                                            ("  l'oiseau  ", "a"), ("x", ""), ("ab cd", "  ")])
def test_word_alignment_against_loops(source, output):
    g = torch.Generator().manual_seed(len(source) + len(output))
    weights = torch.softmax(torch.randn(2, 3, len(output) + 1, len(source), generator=g), dim=-1)
    aligned = word_alignment(weights, source, output)
    assert aligned.source == source.split() and aligned.output == output.split() + ["</s>"]
    for layer in range(2):
        for head in range(3):
            expected = torch.tensor(naive_word_alignment(weights[layer, head], source, output))
            torch.testing.assert_close(aligned.weights[layer, head], expected.float(), atol=1e-6, rtol=1e-6)
    # each output word's row sums to 1 minus the weight its characters put on the source's spaces
    not_space = torch.tensor([not c.isspace() for c in source], dtype=weights.dtype)
    for row, word in enumerate(output.split()):
        start = output.index(word) if row == 0 else output.index(word, output.index(output.split()[row - 1]) + 1)
        chars = weights[..., start:start + len(word), :]
        torch.testing.assert_close(aligned.weights[..., row, :].sum(-1), (chars * not_space).sum(-1).mean(-1),
                                   atol=1e-6, rtol=0)


def test_word_alignment_refuses_token_maps_that_are_not_characters():
    with pytest.raises(ValueError, match="must be"):
        word_alignment(torch.ones(3, 2), "abc", "xy")
    assert word_alignment(torch.ones(1, 2) / 2, "  ", "") is None


def test_the_readme_lists_the_grammar_and_the_date_formats():
    """The guide's table of what fr-en and dates cover (docs/seq2seq.md) must not drift from the task code."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[2] / "docs" / "seq2seq.md").read_text(encoding="utf-8")
    table = page[page.index("| fr-en | words (English) |"):]
    listed = set(re.findall(r"[\w'éçèà]+", table.split("A sentence is")[0]))
    missing = sorted(word for word in fr_en_words() if word not in listed)
    assert not missing, missing
    example = re.search(r'object: "([^"]+)"', table).group(1)
    assert fr_en_translation(example) is not None
    flat = " ".join(table.split())
    assert all(spelling in flat for spelling in date_formats())
    assert f"in {len(date_formats())} formats" in flat
