"""Faults a hostile probe and a newcomer found, injected one by one: a task named twice, a byte-order
mark inside a pairs file, a JSON file nested too deeply, a log line that is a list."""

from __future__ import annotations

import subprocess

import pytest

from seqlab.cli import main


def test_paths_trains_a_task_named_twice_once_and_says_so(tmp_path, capsys, monkeypatch):
    import seqlab.seq2seq.paths as paths

    asked = []

    def fake_run_paths(out, *, tasks, **kwargs):
        asked.append(tasks)
        raise ValueError("stop here")  # the tasks it would train are all this test needs

    monkeypatch.setattr(paths, "run_paths", fake_run_paths)
    assert main(["paths", "--out", str(tmp_path / "p"), "--fast", "--tasks", "copy,reverse,copy"]) == 1
    assert asked == [("copy", "reverse")]
    assert "note: --tasks names copy more than once; each task is trained once" in capsys.readouterr().err


def test_a_byte_order_mark_inside_a_pairs_file_says_how_to_remove_it(tmp_path):
    from seqlab.seq2seq.data import PairsFileError, read_pairs_tsv

    a, b = tmp_path / "a.tsv", tmp_path / "b.tsv"
    a.write_text("\ufeffGo.\tVa !\n", encoding="utf-8")
    b.write_text("\ufeffRun!\tCours !\n", encoding="utf-8")
    joined = tmp_path / "joined.tsv"
    joined.write_bytes(a.read_bytes() + b.read_bytes())
    with pytest.raises(PairsFileError) as info:
        read_pairs_tsv(joined)
    message = str(info.value)
    assert f"{joined}:2: byte-order mark (U+FEFF) at column 1" in message and "two files joined" in message
    command = message[message.index("sed -i"):].split("\n")[0]
    subprocess.run(["sh", "-c", command], check=True)  # the fix it gives works
    assert read_pairs_tsv(joined) == ([("Go.", "Va !"), ("Run!", "Cours !")], [])


DEEP = "[" * 100_000 + "]" * 100_000  # deeper than Python's recursion limit lets json parse


def test_the_json_reader_names_the_file_for_every_fault(tmp_path):
    from seqlab.jsonfile import parse_json, read_json

    for text, words in ((DEEP, "too deeply nested"), ("[1, 2]", "expected a JSON object, found list"),
                        ('{"a": 1,}', "line 1: invalid JSON"), (b"\xff{}", "not UTF-8 text")):
        path = tmp_path / "x.json"
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        with pytest.raises(ValueError) as info:
            read_json(path, expected=dict)
        assert str(info.value).startswith(f"{path}") and words in str(info.value)
    with pytest.raises(ValueError, match=r"log.jsonl, line 7: too deeply nested"):
        parse_json(DEEP, "log.jsonl", line=7)
    assert parse_json('{"a": [1]}', "f") == {"a": [1]}  # the oracle: what json itself gives
    assert parse_json("[" * 50 + "]" * 50, "f") == eval("[" * 50 + "]" * 50)


@pytest.mark.parametrize("where", ["config.json", "model.safetensors.index.json", "tokenizer.json"])
def test_deeply_nested_json_in_an_import_source_is_an_error_naming_the_file(where, tmp_path, capsys):
    src = tmp_path / "hf"
    src.mkdir()
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 300, "hidden_size": 16,
              "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
              "max_position_embeddings": 16, "rms_norm_eps": 1e-6, "rope_theta": 10000.0}
    import json

    (src / "config.json").write_text(json.dumps(config))
    (src / "tokenizer.json").write_text("{}")
    (src / "model.safetensors.index.json").write_text('{"weight_map": {}}')
    (src / where).write_text(DEEP)
    if where == "model.safetensors.index.json":  # read after tokenizer.json: ask the weights reader itself
        from seqlab.interop.safetensors_io import WeightFiles

        with pytest.raises(ValueError, match="too deeply nested") as info:
            WeightFiles(src)
        assert str(info.value).startswith(str(src / where))
        return
    assert main(["import", "--from", "hf", str(src), str(tmp_path / "run")]) == 1
    err = capsys.readouterr().err
    assert f"{src / where}: too deeply nested" in err and "Traceback" not in err


@pytest.mark.parametrize("line, words", [("[1, 2, 3]", "line 2: expected a JSON object (a log record), found list"),
                                         (DEEP, "line 2: too deeply nested")])
def test_a_log_line_that_is_a_list_or_too_deep_is_named_by_compare(line, words, tmp_path, capsys):
    from tests.test_outdir import _tiny_run

    run = _tiny_run(tmp_path / "r", [3.0, 2.0, 1.5])
    lines = (run / "log.jsonl").read_text().splitlines()
    lines[1] = line
    (run / "log.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["compare", str(run), "--out", str(tmp_path / "cmp")]) == 1
    err = capsys.readouterr().err
    assert f"{run / 'log.jsonl'}, {words}" in err and not (tmp_path / "cmp").exists()


@pytest.mark.parametrize("argv, usage, hint", [
    (["train", "--lr-rate", "3e-3"], "usage: seqlab train", "(did you mean --lr?)"),
    (["seq2seq", "train", "--batchsize", "8"], "usage: seqlab seq2seq train", "(did you mean --batch-size?)"),
    (["bpe", "export", "--to", "hf", "a", "b", "--ovewrite"], "usage: seqlab bpe export", "did you mean --overwrite?"),
    (["compare", "a", "--out", "o", "--zzzzzz"], "usage: seqlab compare", "unrecognized arguments: --zzzzzz"),
])
def test_a_wrong_flag_gets_the_subcommands_usage_and_the_closest_flag(argv, usage, hint, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.startswith(usage) and hint in err
    assert "usage: seqlab [-h]" not in err  # not the top-level usage


def test_generate_and_eval_exit_1_on_runtime_failures_and_2_on_usage_errors(tmp_path, capsys):
    import numpy as np

    from tests.test_faults_inference import write_run

    run = write_run(tmp_path, vocab_size=257)
    np.save(tmp_path / "valid.npy", np.arange(40, dtype=np.uint16))
    bad = np.arange(40, dtype=np.uint16)
    bad[3] = 999  # an id the model does not have: the data fails, not the command line
    np.save(tmp_path / "bad.npy", bad)
    cases = [
        (["generate", "--run", str(tmp_path / "missing")], 1),
        (["eval", "--run", str(tmp_path / "missing"), "--data", str(tmp_path / "valid.npy")], 1),
        (["eval", "--run", str(run), "--data", str(tmp_path / "bad.npy")], 1),
        (["eval", "--run", str(run), "--data", str(tmp_path / "nothing.npy")], 1),
        (["generate", "--run", str(run), "--temperature", "-1"], 2),
        (["generate", "--checkpoint", str(run / "checkpoints" / "latest.pt")], 2),  # needs --tokenizer
        (["eval", "--checkpoint", str(run), "--data", str(tmp_path / "valid.npy")], 2),  # a folder
        (["eval", "--run", str(run), "--data", str(tmp_path / "valid.npy")], 0),
    ]
    for argv, expected in cases:
        assert main(argv) == expected, (argv, capsys.readouterr().err)
        capsys.readouterr()


def _accounting(capsys, *argv):
    import json

    assert main(["accounting", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_accounting_tinystories_defaults_to_cs336s_token_budget(capsys):
    report = _accounting(capsys, "--preset", "tinystories")
    time = report["training_time"]
    assert time["steps"] * time["batch_size"] * 256 == 327_680_000  # CS336: 40,000 x 32 x 256 tokens
    # the oracle: (training FLOPs of 32 sequences + AdamW's 14 per parameter) x steps / (MFU x peak)
    per_step = report["training_step_flops"] * 32 + 14 * report["parameters"]
    assert time["seconds"] == pytest.approx(per_step * 40_000 / (0.5 * 19.5e12), rel=1e-9)
    assert "327.68M tokens" in report["note"]
    given = _accounting(capsys, "--preset", "tinystories", "--steps", "10")["training_time"]
    assert (given["steps"], given["batch_size"]) == (10, 32)
    other = _accounting(capsys, "--preset", "gpt2-small")["training_time"]
    assert (other["steps"], other["batch_size"]) == (400_000, 1024)


def test_batched_eval_matches_a_window_by_window_oracle_and_takes_threads(tmp_path, capsys, monkeypatch):
    import math

    import numpy as np
    import torch
    import torch.nn.functional as F

    from seqlab.lm import load_model
    from seqlab.lm.evaluation import evaluate
    from tests.test_faults_inference import write_run

    run = write_run(tmp_path, vocab_size=257)  # context 16
    model = load_model(run=run).model
    data = np.random.default_rng(1).integers(0, 257, 16 * 7 + 5).astype(np.uint16)
    total, count = 0.0, 0
    with torch.no_grad():  # the oracle: each window on its own, torch's cross-entropy summed
        for start in range(0, len(data) - 1, 16):
            ids = torch.from_numpy(data[start:start + 17].astype(np.int64))[None]
            logits = model(ids[:, :-1])
            total += float(F.cross_entropy(logits[0], ids[0, 1:], reduction="sum"))
            count += ids.shape[1] - 1
    for batch_size in (1, 3, 32):
        result = evaluate(model, data, batch_size)
        assert result.tokens == count == len(data) - 1
        assert result.loss == pytest.approx(total / count, rel=1e-5) and result.perplexity == pytest.approx(
            math.exp(total / count), rel=1e-5)
    np.save(tmp_path / "valid.npy", data)
    asked = []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (asked.append(n), real(n)))
    assert main(["eval", "--run", str(run), "--data", str(tmp_path / "valid.npy"), "--threads", "1", "--json"]) == 0
    assert asked == [1]
    import json

    assert json.loads(capsys.readouterr().out)["loss"] == pytest.approx(total / count, rel=1e-5)
