"""Seq2seq training: the loss against torch's, tiny runs that learn, resume = uninterrupted, run files."""

from __future__ import annotations

import json
import os

import pytest
import torch
import torch.nn.functional as F

from seqlab.runs.log import read_jsonl
from seqlab.runs.status import Status
from seqlab.seq2seq.config import PAD_ID
from seqlab.seq2seq.data import build_vocabs, load_pairs
from seqlab.seq2seq.evaluation import evaluate_translations, masked_cross_entropy
from seqlab.seq2seq.loading import load_run
from seqlab.seq2seq.settings import Seq2SeqTrainConfig
from seqlab.seq2seq.task import train

pytestmark = pytest.mark.usefixtures("one_thread")


def tiny(tmp_path, name="run", **overrides) -> Seq2SeqTrainConfig:
    settings = dict(out_dir=str(tmp_path / name), task="reverse", min_len=2, max_len=5, train_size=2000,
                    valid_size=100, eval_batches=4, arch="rnn-attention", d_model=32, num_layers=1, max_steps=40,
                    batch_size=32, eval_interval=20, checkpoint_interval=20, warmup_steps=5, progress=False)
    settings.update(overrides)
    return Seq2SeqTrainConfig(**settings)


def test_masked_cross_entropy_equals_torch_ignore_index():
    torch.manual_seed(0)
    logits = torch.randn(3, 6, 11, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(3, 11, (3, 6))
    targets[0, 4:] = PAD_ID
    targets[2, 1:] = PAD_ID
    ours = masked_cross_entropy(logits, targets)
    oracle = F.cross_entropy(logits.reshape(-1, 11), targets.reshape(-1), ignore_index=PAD_ID)
    torch.testing.assert_close(ours, oracle)
    (g1,) = torch.autograd.grad(ours, logits)
    (g2,) = torch.autograd.grad(oracle, logits)
    torch.testing.assert_close(g1, g2)


def test_tiny_run_learns_and_writes_the_run_directory(tmp_path):
    cfg = tiny(tmp_path, max_steps=200, eval_interval=100, checkpoint_interval=100, lr=1e-2)
    result = train(cfg, say=lambda message: None)
    run = tmp_path / "run"
    assert result.status == "completed" and result.steps == 200
    for name in ("config.json", "vocab.json", "log.jsonl", "loss_curve.png", "checkpoints/latest.pt"):
        assert (run / name).is_file(), name
    info = json.loads((run / "config.json").read_text())
    assert info["settings"]["task"] == "reverse" and info["model"]["arch"] == "rnn-attention"
    assert info["settings"]["parameters"] == result.parameters > 0
    records = read_jsonl(run / "log.jsonl")
    losses = [r["train_loss"] for r in records if "train_loss" in r]
    assert losses[-1] < 0.6 * losses[0]
    evals = [r for r in records if "val_exact_match" in r]
    assert [r["step"] for r in evals] == [100, 200]
    # the logged exact match is what decoding the validation pairs gives
    loaded = load_run(run, device="cpu")
    valid = load_pairs(loaded.train_config)[1]
    scored = evaluate_translations(loaded.model, valid, loaded.src_vocab, loaded.tgt_vocab)
    assert scored.exact_match == pytest.approx(evals[-1]["val_exact_match"])
    assert scored.exact_match == sum(h == r for h, r in zip(scored.hypotheses, scored.references)) / len(valid)
    assert scored.exact_match > 0.1  # far above chance for reversing 2..5 of 10 symbols


def test_resume_equals_an_uninterrupted_run(tmp_path):
    whole = train(tiny(tmp_path, "whole"), say=lambda m: None)

    def stop_at_13(trainer, step):
        if step == 13:
            trainer.request_stop()

    first = train(tiny(tmp_path, "parts"), step_callbacks=[stop_at_13], say=lambda m: None)
    assert first.status == "interrupted" and first.steps == 13
    second = train(tiny(tmp_path, "parts", resume=True), say=lambda m: None)
    assert second.status == "completed" and second.steps == 40
    a = torch.load(tmp_path / "whole/checkpoints/latest.pt", weights_only=True)["model"]
    b = torch.load(tmp_path / "parts/checkpoints/latest.pt", weights_only=True)["model"]
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=0, msg=key)
    steps = [r["step"] for r in read_jsonl(tmp_path / "parts/log.jsonl") if "train_loss" in r]
    assert steps == sorted(set(steps))  # no step logged twice
    assert whole.train_loss == pytest.approx(second.train_loss)


def test_run_directory_guards(tmp_path):
    train(tiny(tmp_path, max_steps=2, eval_interval=2), say=lambda m: None)
    with pytest.raises(FileExistsError, match="--resume.*--overwrite"):
        train(tiny(tmp_path, max_steps=2), say=lambda m: None)
    with pytest.raises(FileNotFoundError, match="nothing to resume"):
        train(tiny(tmp_path, "empty", resume=True), say=lambda m: None)
    assert train(tiny(tmp_path, max_steps=2, eval_interval=2, overwrite=True), say=lambda m: None).steps == 2
    (tmp_path / "run" / "vocab.json").write_text(json.dumps({"source": {"kind": "char", "chars": ["a"]},
                                                              "target": {"kind": "char", "chars": ["a"]}}))
    with pytest.raises(ValueError, match="vocab.json has 5/5 source/target ids"):
        load_run(tmp_path / "run", device="cpu")


def test_overwrite_keeps_the_old_run_until_the_new_one_saves(tmp_path):
    run = tmp_path / "run"
    train(tiny(tmp_path, max_steps=2, eval_interval=2), say=lambda m: None)
    old_vocab = (run / "vocab.json").read_bytes()
    (run / "checkpoints" / "step_0000001.pt").write_bytes(b"an older checkpoint file")

    def fail_at_step_1(trainer, step):
        raise RuntimeError("new run failed (simulated)")

    dates = dict(task="dates", min_len=None, max_len=None, train_size=200, valid_size=20, eval_batches=1,
                 overwrite=True)
    with pytest.raises(RuntimeError, match="simulated"):
        train(tiny(tmp_path, **dates), step_callbacks=[fail_at_step_1], say=lambda m: None)
    # the old run survives whole: its checkpoints and the vocabulary they were trained with
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["latest.pt", "step_0000001.pt"]
    assert (run / "vocab.json").read_bytes() == old_vocab
    old = load_run(run, device="cpu")
    assert (old.step, old.train_config.task) == (2, "reverse")

    train(tiny(tmp_path, **dates, max_steps=3, eval_interval=3), say=lambda m: None)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["latest.pt"]
    new = load_run(run, device="cpu")
    assert (new.step, new.train_config.task) == (3, "dates")
    assert (run / "vocab.json").read_bytes() != old_vocab


def test_temporaries_of_dead_runs_are_removed_at_start(tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    dead, alive = 2**31 - 1, os.getppid()  # no process has an id above Linux's pid_max (at most 2**22)
    (run / f".loss_curve.tmp{dead}.png").write_bytes(b"")
    (run / "checkpoints" / f".latest.tmp{dead}.pt").write_bytes(b"half a checkpoint")
    (run / f".log.tmp{alive}.jsonl").write_bytes(b"")  # a live process's file: kept
    train(tiny(tmp_path, max_steps=2, eval_interval=2), say=lambda m: None)
    left = sorted(p.name for p in run.rglob(".*"))
    assert left == [f".log.tmp{alive}.jsonl"]


def test_config_errors_name_the_setting():
    with pytest.raises(ValueError, match="exactly one data source"):
        Seq2SeqTrainConfig(task="dates", pairs="x.tsv")
    with pytest.raises(ValueError, match="min-len/--max-len apply to the symbol tasks"):
        Seq2SeqTrainConfig(task="dates", max_len=4)
    with pytest.raises(ValueError, match="max_steps=0: must be >= 1"):
        Seq2SeqTrainConfig(max_steps=0)
    with pytest.raises(ValueError, match="unknown key"):
        Seq2SeqTrainConfig.from_dict({"stepz": 3})


def test_tsv_pairs_with_bpe(tmp_path):
    from seqlab.seq2seq.builtin_tasks import make_pairs

    path = tmp_path / "pairs.tsv"
    pairs = make_pairs("fr-en", 300, seed=0)
    path.write_text("".join(f"{s}\t{t}\n" for s, t in pairs), encoding="utf-8")
    distinct = len(set(pairs))  # repeated pairs are kept once (issue 21), so none is on both sides
    assert distinct < 300
    cfg = tiny(tmp_path, task=None, min_len=None, max_len=None, pairs=str(path), tokenize="bpe",
               bpe_vocab_size=300, max_steps=4, eval_interval=4, eval_batches=1)
    result = train(cfg, say=lambda m: None)
    info = json.loads((tmp_path / "run/config.json").read_text())
    assert info["data"]["vocab"] == {"kind": "bpe", "source_size": 300, "target_size": 300}
    assert info["data"]["train_pairs"] + info["data"]["valid_pairs"] == distinct
    assert info["data"]["valid_pairs"] == round(0.05 * distinct)  # valid_fraction 0.05
    assert result.steps == 4


@pytest.mark.slow
def test_transformer_learns_dates_to_99_percent(tmp_path):
    """The settings of benchmarks/seq2seq_dates.py, stopping at 99.5% on 1000 validation dates (a
    margin over 99%); scored on 1000 dates never seen in training or in that validation set."""
    from seqlab.seq2seq.builtin_tasks import make_pairs

    cfg = Seq2SeqTrainConfig(out_dir=str(tmp_path / "dates"), task="dates", arch="transformer", d_model=64,
                             num_layers=2, num_heads=4, max_steps=3000, batch_size=64, lr=3e-3, warmup_steps=100,
                             eval_interval=100, valid_size=1000, eval_batches=16, target_exact_match=0.995,
                             progress=False)
    result = train(cfg, say=lambda m: None)
    assert (result.status, result.stopped_by) == (Status.TARGET_REACHED, "target reached"), result.metrics
    run = load_run(tmp_path / "dates", device="cpu")
    seen = {s for part in load_pairs(cfg)[:2] for s, _ in part}
    test = make_pairs("dates", 1000, seed=7_000_001, exclude=seen)
    scored = evaluate_translations(run.model, test, run.src_vocab, run.tgt_vocab)
    assert scored.exact_match >= 0.99


def test_tsv_pairs_with_a_saved_tokenizer(tmp_path):
    from seqlab.tokenizer import Tokenizer, train_bpe

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the black cat sleeps\nle chat noir dort\n" * 10, encoding="utf-8")
    tokenizer = Tokenizer(*train_bpe(corpus, 280, ["<|endoftext|>"]), ["<|endoftext|>"])
    tokenizer.save(tmp_path / "tok")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("le chat noir dort\tthe black cat sleeps\n", encoding="utf-8")
    cfg = Seq2SeqTrainConfig(task=None, pairs=str(pairs), tokenize="bpe", tokenizer=str(tmp_path / "tok"))
    src, tgt = build_vocabs(cfg, [("le chat noir dort", "the black cat sleeps")])
    assert src is tgt and src.size == tokenizer.vocab_size + 4  # shifted past PAD, BOS, EOS, UNK
    assert src.encode("le chat") == [i + 4 for i in tokenizer.encode("le chat")]
