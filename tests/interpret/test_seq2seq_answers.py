"""What `seqlab interpret` tells a user about a seq2seq run, around the numbers: the flags it does not
read are refused, `depends` measures the predicted token's log-probability (torch.autograd here is
the oracle) and says so, the labels name what the model has, and the pictures show what they are
of. Each test failed before issue 45 changed the answers."""

from __future__ import annotations

import json

import pytest
import torch

from seqlab.cli import main
from seqlab.seq2seq.config import BOS_ID

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def loaded(s2s_run):
    from seqlab.seq2seq.loading import load_run

    return load_run(s2s_run, device="cpu")


@pytest.fixture
def figures(monkeypatch):
    """The keyword arguments of every heatmap the command draws."""
    from seqlab.interpret import figures as module

    drawn, real = [], module.heatmap
    monkeypatch.setattr(module, "heatmap", lambda **kw: (drawn.append(kw), real(**kw)))
    return drawn


@pytest.mark.parametrize("argv", [["knockout", "--text", "abca", "--position", "99"],
                                  ["depends", "--text", "abca", "--position", "2"],
                                  ["attribute", "--text", "abca", "--position", "1"]])
def test_position_on_a_seq2seq_run_is_a_usage_error_that_says_every_step_is_shown(s2s_run, capsys, argv):
    assert main(["interpret", argv[0], "--run", str(s2s_run), *argv[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"seqlab interpret {argv[0]}: error: --position") and "every output step" in err, err


def test_step_on_a_language_model_run_is_a_usage_error(byte_run, capsys):
    assert main(["interpret", "attribute", "--run", str(byte_run), "--text", "hello", "--step", "1"]) == 2
    assert "--step: a language-model run" in capsys.readouterr().err


def _log_p_dependence(model, src, tgt_in, predicted, cut=None):
    """||d log p(predicted[t]) / d e_s||_2 by torch.autograd, one backward per step: the source
    embeddings replaced by a leaf through a forward hook; ``cut`` detaches the encoder's states
    ("state") or its final state ("attention") through a hook on the encoder."""
    rows = []
    for t in range(len(tgt_in)):
        leaf = model.src_embeddings(src[None]).detach().requires_grad_(True)
        hooks = [model.src_embeddings.register_forward_hook(lambda m, a, out: leaf)]
        if cut == "state":
            hooks.append(model.encoder.register_forward_hook(lambda m, a, out: (out[0].detach(), out[1])))
        elif cut == "attention":
            hooks.append(model.encoder.register_forward_hook(lambda m, a, out: (out[0], out[1].detach())))
        try:
            logits = model(src[None], tgt_in[None])[0, t]
        finally:
            for hook in hooks:
                hook.remove()
        (grad,) = torch.autograd.grad(logits.log_softmax(-1)[predicted[t]], leaf)
        rows.append(grad[0].norm(dim=-1))
    return torch.stack(rows)


@pytest.mark.parametrize("path", ["all", "state", "attention"])
def test_depends_is_the_gradient_norm_of_the_predicted_tokens_log_probability(s2s_run, loaded, capsys, path):
    assert main(["interpret", "depends", "--run", str(s2s_run), "--text", "abca", "--target", "abca", "--path", path,
                 "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["measure"] == "||d log p(y_t) / d e_s||_2" and len(printed["predicted"]) == 5
    src = torch.tensor(loaded.src_vocab.encode("abca"))
    predicted = printed["predicted"]
    want = _log_p_dependence(loaded.model, src, torch.tensor([BOS_ID, *predicted[:-1]]), predicted,
                             None if path == "all" else path)
    torch.testing.assert_close(torch.tensor(printed["dependency"]), want, rtol=1e-4, atol=1e-6)


def test_depends_names_its_measure_in_the_help_and_the_picture(s2s_run, tmp_path, capsys, figures):
    with pytest.raises(SystemExit):
        main(["interpret", "depends", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "||d log p(y_t) / d e_s||_2" in help_text and "predicted" in help_text
    assert main(["interpret", "depends", "--run", str(s2s_run), "--text", "abca", "--out", str(tmp_path)]) == 0
    (drawn,) = figures
    assert "log p" in drawn["title"] and "||d log p(y_t) / d e_s||_2" in drawn["colorbar"]
    assert not drawn["diverging"] and "\u00b1" not in drawn["title"]  # a one-sided scale: 0 .. bound
    assert f"colour scale 0 .. {drawn['bound']:.3g}" in drawn["title"]
    assert json.loads((tmp_path / "depends.json").read_text())["measure"] == "||d log p(y_t) / d e_s||_2"


def test_the_all_logit_norm_is_an_option_equal_to_the_paths_experiments_map(s2s_run, loaded, capsys):
    from seqlab.seq2seq.inspection import dependency_map

    assert main(["interpret", "depends", "--run", str(s2s_run), "--text", "abca", "--target", "abca", "--measure",
                 "logits", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["measure"] == "||d logits_t / d e_s||_F"
    src = torch.tensor(loaded.src_vocab.encode("abca"))
    torch.testing.assert_close(torch.tensor(printed["dependency"]),
                               dependency_map(loaded.model, src, torch.tensor([BOS_ID, *printed["predicted"][:-1]])))


def test_the_rnn_with_attention_knockout_rows_name_its_one_attention(s2s_run, capsys):
    argv = ["interpret", "knockout", "--run", str(s2s_run), "--text", "abca", "--target", "abc"]
    assert main([*argv, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["layers"] == ["attention"]
    assert main(argv) == 0
    table = capsys.readouterr().out.splitlines()
    assert not any(line.startswith("L0") for line in table)
    assert [line.split()[:2] for line in table[2:]] == [["attention", step] for step in ("0:a", "1:b", "2:c", "3:</s>")]


def test_exact_zeros_print_without_a_sign(byte_run, capsys):
    """The language model's knockout at position 2: the sources after it are exactly 0."""
    assert main(["interpret", "knockout", "--run", str(byte_run), "--text", "hello", "--position", "2"]) == 0
    rows = {line.split()[0]: line.split()[1:] for line in capsys.readouterr().out.splitlines()[1:]}
    assert rows["3:l"] == rows["4:o"] == ["0.000", "0.000"]
    from seqlab.interpret.cli import number

    assert [number(v, "{:+.2f}") for v in (0.0, -0.0, -0.004, 0.5)] == ["0.00", "0.00", "-0.00", "+0.50"]


@pytest.mark.parametrize("where", ["source", "decoder"])
def test_patch_pictures_show_the_corrupted_source(s2s_run, tmp_path, capsys, figures, where):
    assert main(["interpret", "patch", "--run", str(s2s_run), "--clean", "abca", "--corrupt", "abcb", "--where",
                 where, "--step", "3", "--target", "abca", "--out", str(tmp_path)]) == 0
    (drawn,) = figures
    assert "corrupted 'abcb'" in drawn["title"] and "clean 'abca'" in drawn["title"]
    if where == "source":
        assert drawn["col_labels"] == ["0:a", "1:b", "2:c", "3:a/b"]
