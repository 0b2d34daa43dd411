"""Training a seq2seq model (``seqlab seq2seq train``), its run directory, and loading it back.

The loop is teacher forcing: the decoder reads ``BOS + target`` and learns to predict
``target + EOS`` (see :mod:`seqlab.seq2seq.data`); the loss is the mean cross-entropy over real
(non-PAD) target tokens. Every ``eval_interval`` steps the model *generates* the validation
targets greedily and the log records exact match, the number that matters for these tasks.

Run directory (the conventions of ``seqlab train``)::

    RUN/config.json            {"train": Seq2SeqTrainConfig fields, "model_config": Seq2SeqConfig
                                fields, "vocab": sizes and kinds}
    RUN/vocab.json             {"source": ..., "target": ...} (see seqlab.seq2seq.vocab)
    RUN/checkpoints/latest.pt  model, optimizer, step, batch-sampler and RNG state (atomic)
    RUN/log.jsonl              train records (loss, lr, grad norm, tokens/s) and eval records
    RUN/loss_curve.png         train and validation loss, redrawn at each evaluation

Ctrl-C or SIGTERM finishes the current step, saves, and returns "interrupted"; ``resume=True``
continues with exactly the batches the uninterrupted run would have drawn.
"""

from __future__ import annotations

import json
import math
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

from seqlab.atomic import atomic_write_text
from seqlab.model.loss import cross_entropy
from seqlab.seq2seq.build import build_model, count_parameters
from seqlab.seq2seq.config import PAD_ID, Seq2SeqConfig
from seqlab.seq2seq.data import (
    BatchSampler,
    Example,
    batches_in_order,
    collate,
    encode_pairs,
    pad_sequences,
    read_pairs_tsv,
    split_by_length,
)
from seqlab.seq2seq import decoding
from seqlab.seq2seq.metrics import bleu, exact_match, teacher_forced_accuracy, token_accuracy
from seqlab.seq2seq.tasks import TEXT_TASKS, make_pairs
from seqlab.seq2seq.train_config import MODEL_FIELDS, Seq2SeqTrainConfig
from seqlab.seq2seq.vocab import CharVocab, load_bpe_vocab, train_bpe_vocab, vocab_from_dict
from seqlab.runtime import resolve_device
from seqlab.training.checkpoint import (
    capture_rng_state,
    load_payload,
    read_checkpoint,
    restore_rng_state,
    save_checkpoint,
)
from seqlab.training.clipping import clip_grad_norm
from seqlab.training.interrupt import signal_name, signals_request_stop
from seqlab.training.logging_utils import RunLog
from seqlab.training.optimizer import AdamW, weight_decay_groups
from seqlab.training.run_dir import checkpoint_files, remove_old_checkpoints, remove_run_temporaries
from seqlab.training.schedule import lr_cosine_schedule

VALID_SEED_OFFSET = 1_000_003  # validation pairs come from another stream of the same generator


@dataclass
class Seq2SeqData:
    """Pairs and their ids for one run. ``dropped`` counts pairs too long for ``max_seq_len``."""

    train_pairs: list[tuple[str, str]]
    valid_pairs: list[tuple[str, str]]
    src_vocab: Any
    tgt_vocab: Any
    train_examples: list[Example]
    valid_examples: list[Example]
    max_seq_len: int
    dropped: int = 0
    problems: list[str] = field(default_factory=list)


def load_pairs(cfg: Seq2SeqTrainConfig) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[str]]:
    """(train pairs, validation pairs, problems with the pairs file) for ``cfg``, deterministic."""
    if cfg.task is not None:
        train = make_pairs(cfg.task, cfg.train_size, seed=cfg.seed, lengths=cfg.lengths)
        valid = make_pairs(cfg.task, cfg.valid_size, seed=cfg.seed + VALID_SEED_OFFSET, lengths=cfg.lengths,
                           exclude={s for s, _ in train})
        return train, valid, []
    pairs, problems = read_pairs_tsv(cfg.pairs, skip_bad_lines=cfg.skip_bad_lines, drop_duplicates=True)
    if len(pairs) < 2:
        raise ValueError(f"{cfg.pairs}: {len(pairs)} pair(s); need at least 2 (one to train, one to validate)")
    order = torch.randperm(len(pairs), generator=torch.Generator().manual_seed(cfg.seed)).tolist()
    held_out = max(1, round(cfg.valid_fraction * len(pairs)))
    valid = [pairs[i] for i in order[:held_out]]
    train = [pairs[i] for i in order[held_out:]]
    return train, valid, problems


def build_vocabs(cfg: Seq2SeqTrainConfig, train_pairs: list[tuple[str, str]]):
    """(source vocab, target vocab): characters of each side, or one BPE for both sides."""
    if cfg.tokenize == "char":
        return CharVocab.from_texts(s for s, _ in train_pairs), CharVocab.from_texts(t for _, t in train_pairs)
    if cfg.tokenizer:
        vocab = load_bpe_vocab(cfg.tokenizer)
    else:
        vocab = train_bpe_vocab([text for pair in train_pairs for text in pair], cfg.bpe_vocab_size)
    return vocab, vocab


def prepare_data(cfg: Seq2SeqTrainConfig, vocabs=None) -> Seq2SeqData:
    """Pairs, vocabularies (``vocabs`` reuses saved ones, on resume), ids, and the length filter."""
    train_pairs, valid_pairs, problems = load_pairs(cfg)
    src_vocab, tgt_vocab = vocabs if vocabs is not None else build_vocabs(cfg, train_pairs)
    train_examples = encode_pairs(train_pairs, src_vocab, tgt_vocab)
    valid_examples = encode_pairs(valid_pairs, src_vocab, tgt_vocab)
    max_seq_len = cfg.max_seq_len
    if max_seq_len is None:
        longest = max(max(len(s), len(t) + 1) for s, t in train_examples + valid_examples)
        max_seq_len = longest + 8
    fit_train, long_train = split_by_length(train_examples, max_seq_len)
    fit_valid, long_valid = split_by_length(valid_examples, max_seq_len)
    if not fit_train or not fit_valid:
        raise ValueError(f"no {'training' if not fit_train else 'validation'} pair fits max_seq_len={max_seq_len} "
                         "tokens; raise --max-seq-len")
    return Seq2SeqData(
        train_pairs=[train_pairs[i] for i in fit_train], valid_pairs=[valid_pairs[i] for i in fit_valid],
        src_vocab=src_vocab, tgt_vocab=tgt_vocab,
        train_examples=[train_examples[i] for i in fit_train], valid_examples=[valid_examples[i] for i in fit_valid],
        max_seq_len=max_seq_len, dropped=len(long_train) + len(long_valid), problems=problems)


def model_config_for(cfg: Seq2SeqTrainConfig, src_vocab_size: int, tgt_vocab_size: int,
                     max_seq_len: int) -> Seq2SeqConfig:
    return Seq2SeqConfig(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size, max_seq_len=max_seq_len,
                         num_encoder_layers=cfg.layers, num_decoder_layers=cfg.layers,
                         **{name: getattr(cfg, name) for name in MODEL_FIELDS})


# -- loss and evaluation ------------------------------------------------------------------------


def masked_cross_entropy(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean over non-PAD targets of ``logsumexp(logits) - logits[target]`` (float32 or wider).

    logits (B, T, V), targets (B, T) with PAD_ID where nothing is to be predicted."""
    return cross_entropy(logits, targets, ignore_index=PAD_ID)


def decode_limit(model, examples_or_lengths) -> int:
    """How many tokens to generate at most: twice the longest reference plus 8 (EOS included),
    capped by the model's position table."""
    longest = max(examples_or_lengths) if examples_or_lengths else 1
    limit = model.max_target_length
    wanted = 2 * longest + 8
    return min(wanted, limit) if limit is not None else wanted


@torch.no_grad()
def translate_ids(model, sources: list[list[int]], *, beam_size: int = 1, max_len: int,
                  batch_size: int = 256, device=None) -> list[list[int]]:
    """Generate a target for every source (greedy for beam_size 1), in batches, in input order.

    Sources are decoded in order of length so each batch holds similar lengths (less padding)."""
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    outputs: list[list[int]] = [[] for _ in sources]
    was_training = model.training
    model.eval()
    try:
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            src, mask = pad_sequences([sources[i] for i in rows], device=device)
            if beam_size == 1:
                hyps = decoding.greedy_decode(model, src, mask, max_len=max_len)
            else:
                hyps = decoding.beam_search(model, src, mask, beam_size=beam_size, max_len=max_len)
            for i, hyp in zip(rows, hyps):
                outputs[i] = hyp
    finally:
        model.train(was_training)
    return outputs


@dataclass
class EvalResult:
    exact_match: float
    token_accuracy: float          # on generated outputs, position by position
    bleu: float | None             # text tasks only
    hypotheses: list[str]
    references: list[str]
    sources: list[str]


def evaluate_translations(model, pairs: list[tuple[str, str]], src_vocab, tgt_vocab, *, beam_size: int = 1,
                          with_bleu: bool = False, device=None, batch_size: int = 256) -> EvalResult:
    """Generate a translation of every source and score it against its reference."""
    sources = [src_vocab.encode(s) for s, _ in pairs]
    refs_ids = [tgt_vocab.encode(t) for _, t in pairs]
    max_len = decode_limit(model, [len(r) + 1 for r in refs_ids])
    hyps_ids = translate_ids(model, sources, beam_size=beam_size, max_len=max_len, device=device,
                             batch_size=batch_size)
    hyps = [tgt_vocab.decode(h) for h in hyps_ids]
    refs = [t for _, t in pairs]
    return EvalResult(exact_match=exact_match(hyps, refs), token_accuracy=token_accuracy(hyps_ids, refs_ids),
                      bleu=bleu(hyps, refs) if with_bleu else None, hypotheses=hyps, references=refs,
                      sources=[s for s, _ in pairs])


@torch.no_grad()
def validation_loss(model, examples: list[Example], *, batch_size: int, device) -> tuple[float, float]:
    """(mean cross-entropy per target token, teacher-forced next-token accuracy) on ``examples``."""
    model.eval()
    total = torch.zeros((), dtype=torch.float64, device=device)
    count = torch.zeros((), dtype=torch.float64, device=device)
    correct = torch.zeros((), dtype=torch.float64, device=device)
    for _, chunk in batches_in_order(examples, batch_size):
        batch = collate(chunk, device=device)
        logits = model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)
        tokens = batch.tgt_mask.sum()
        total += masked_cross_entropy(logits, batch.tgt_out).double() * tokens
        hits, counted = teacher_forced_accuracy(logits, batch.tgt_out)
        count += counted
        correct += hits
    model.train()
    return float(total / count), float(correct / count)


# -- the run --------------------------------------------------------------------------------------


@dataclass
class Seq2SeqTrainResult:
    run_dir: Path
    steps: int
    status: str                         # "completed" | "target reached" | "time limit" | "interrupted"
    parameters: int = 0
    train_loss: float | None = None
    val_loss: float | None = None
    val_exact_match: float | None = None
    elapsed: float = 0.0                # training wallclock across resumes (evaluations included)
    tokens_per_second: float = 0.0      # target tokens per second of training steps
    history: list[dict[str, Any]] = field(default_factory=list)


def _write_vocabs(path: Path, src_vocab, tgt_vocab) -> None:
    atomic_write_text(path, json.dumps({"source": src_vocab.to_dict(), "target": tgt_vocab.to_dict()}) + "\n")


def read_vocabs(path: Path):
    if not path.is_file():
        raise FileNotFoundError(f"{path} does not exist: is {path.parent} a run of `seqlab seq2seq train`?")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return (vocab_from_dict(data["source"], source=str(path)), vocab_from_dict(data["target"], source=str(path)))
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{path} is not a seq2seq vocabulary file ({error})") from None


class Seq2SeqTrainer:
    """Runs (or resumes) one training run; ``step_callbacks(trainer, step)`` run after each step and
    may call :meth:`request_stop`."""

    def __init__(self, cfg: Seq2SeqTrainConfig, *, step_callbacks: list[Callable] | None = None,
                 log: Callable[[str], None] | None = None):
        self.cfg = cfg
        self.step_callbacks = list(step_callbacks or [])
        self._stop_reason: str | None = None
        self._log_message = log

    def request_stop(self, reason: str = "stop requested") -> None:
        self._stop_reason = reason

    def say(self, message: str) -> None:
        if self._log_message is not None:
            self._log_message(message)
            return
        from tqdm import tqdm

        tqdm.write(message, file=sys.stderr)

    def _setup(self) -> None:
        cfg = self.cfg
        if cfg.threads:
            torch.set_num_threads(cfg.threads)
        self.device = resolve_device(cfg.device)
        self.run_dir = Path(cfg.out_dir)
        self.ckpt = self.run_dir / "checkpoints" / "latest.pt"
        if cfg.resume and not self.ckpt.is_file():
            raise FileNotFoundError(f"--resume: {self.ckpt} does not exist (nothing to resume in {self.run_dir})")
        if not cfg.resume and self.ckpt.exists() and not cfg.overwrite:
            raise FileExistsError(f"{self.run_dir} already holds a run ({self.ckpt}); continue it with --resume, "
                                  "start over with --overwrite, or choose another --out")
        remove_run_temporaries(self.run_dir)  # what killed runs left half-written (their process is gone)
        # --overwrite: the old run's checkpoints, and the vocab.json they need, stay until this run
        # has saved its first checkpoint (a new run that fails early leaves the old one usable)
        self.old_checkpoints = checkpoint_files(self.ckpt.parent) if cfg.overwrite and not cfg.resume else []
        vocabs = read_vocabs(self.run_dir / "vocab.json") if cfg.resume else None
        self.data = prepare_data(cfg, vocabs)
        for problem in self.data.problems[:10]:
            self.say(f"skipped {problem}")
        if self.data.dropped:
            self.say(f"left out {self.data.dropped} pair(s) longer than max_seq_len={self.data.max_seq_len} tokens")
        self.model_config = model_config_for(cfg, self.data.src_vocab.size, self.data.tgt_vocab.size,
                                             self.data.max_seq_len)
        torch.manual_seed(cfg.seed)
        self.model = build_model(self.model_config, device=self.device)
        self.optimizer = AdamW(weight_decay_groups(self.model), lr=cfg.lr, betas=(0.9, 0.98),
                               weight_decay=cfg.weight_decay)
        self.sampler = BatchSampler(self.data.train_examples, cfg.batch_size, seed=cfg.seed)
        self.step, self.tokens_seen, self.elapsed_before = 0, 0, 0.0
        if cfg.resume:
            payload = read_checkpoint(self.ckpt)
            self.step = load_payload(payload, self.model, self.optimizer, source=self.ckpt)
            extra = payload["extra"]
            self.sampler.load_state(extra["sampler"])
            self.tokens_seen = int(extra.get("tokens", 0))
            self.elapsed_before = float(extra.get("wallclock", 0.0))
            if "rng" in extra:
                restore_rng_state(extra["rng"])
            self.say(f"resume: continuing from {self.ckpt} at step {self.step}")

    def learning_rate(self, step: int) -> float:
        cfg = self.cfg
        min_lr = cfg.min_lr if cfg.min_lr is not None else cfg.lr / 10
        return lr_cosine_schedule(step + 1, cfg.lr, min_lr, min(cfg.warmup_steps, cfg.steps), cfg.steps)

    def train_step(self, step: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        """One optimizer step: (loss, grad norm) as tensors (no host sync) and the target tokens."""
        lr = self.learning_rate(step)
        for group in self.optimizer.param_groups:
            group["lr"] = lr
        batch = self.sampler.next(device=self.device)
        logits = self.model(batch.src, batch.tgt_in, batch.src_mask, batch.tgt_mask)
        loss = masked_cross_entropy(logits, batch.tgt_out)
        loss.backward()
        grad_norm = clip_grad_norm(self.model.parameters(), self.cfg.grad_clip if self.cfg.grad_clip > 0 else math.inf)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach(), grad_norm, batch.target_tokens

    def evaluate(self) -> dict[str, float]:
        cfg = self.cfg
        examples = self.data.valid_examples[: cfg.eval_size]
        val_loss, val_accuracy = validation_loss(self.model, examples, batch_size=max(cfg.batch_size, 256),
                                                 device=self.device)
        result = evaluate_translations(self.model, self.data.valid_pairs[: cfg.eval_size], self.data.src_vocab,
                                       self.data.tgt_vocab, device=self.device)
        return {"val_loss": val_loss, "val_token_accuracy": val_accuracy, "val_exact_match": result.exact_match}

    def save(self) -> None:
        extra = {"config": asdict(self.cfg), "rng": capture_rng_state(), "sampler": self.sampler.state,
                 "tokens": self.tokens_seen, "wallclock": self.elapsed()}
        if self.old_checkpoints:  # --overwrite: the old vocab.json was kept for the old checkpoints until now
            _write_vocabs(self.run_dir / "vocab.json", self.data.src_vocab, self.data.tgt_vocab)
        save_checkpoint(self.model, self.optimizer, self.step, self.ckpt, extra=extra)
        remove_old_checkpoints(self.old_checkpoints, keep={self.ckpt})
        self.old_checkpoints = []

    def elapsed(self) -> float:
        return self.elapsed_before + (time.perf_counter() - self._started)

    def _write_run_files(self) -> None:
        cfg = self.cfg
        self.run_dir.mkdir(parents=True, exist_ok=True)
        info = {"train": asdict(cfg), "model_config": asdict(self.model_config),
                "vocab": {"kind": self.data.src_vocab.kind, "source_size": self.data.src_vocab.size,
                          "target_size": self.data.tgt_vocab.size},
                "data": {"train_pairs": len(self.data.train_pairs), "valid_pairs": len(self.data.valid_pairs),
                         "dropped_too_long": self.data.dropped},
                "parameters": count_parameters(self.model)}
        atomic_write_text(self.run_dir / "config.json", json.dumps(info, indent=2) + "\n")
        if not cfg.resume and not self.old_checkpoints:  # else written with the first checkpoint (save)
            _write_vocabs(self.run_dir / "vocab.json", self.data.src_vocab, self.data.tgt_vocab)

    def run(self) -> Seq2SeqTrainResult:
        self._setup()
        with signals_request_stop(self._interrupt):
            return self._loop()

    def _loop(self) -> Seq2SeqTrainResult:
        from tqdm import tqdm

        cfg = self.cfg
        self._started = time.perf_counter()
        self._write_run_files()
        params = count_parameters(self.model)
        log = RunLog(self.run_dir, asdict(cfg), resume_step=self.step if cfg.resume else None,
                     plot_title=f"{cfg.arch} on {cfg.task or Path(cfg.pairs).name}: {params:,} parameters")
        result = Seq2SeqTrainResult(self.run_dir, self.step, "completed", parameters=params)
        if self.step == 0:
            self.say(f"training {cfg.arch} ({params:,} parameters) on {cfg.task or cfg.pairs}: "
                     f"{len(self.data.train_pairs):,} training pairs, {cfg.steps} steps on {self.device}")
        bar = tqdm(total=cfg.steps, initial=self.step, desc=f"seq2seq {cfg.arch}", unit="step",
                   dynamic_ncols=True, disable=not cfg.progress, file=sys.stderr)
        step_time, session_tokens = 0.0, 0
        window: list[torch.Tensor] = []
        try:
            for step in range(self.step, cfg.steps):
                t0 = time.perf_counter()
                loss, grad_norm, tokens = self.train_step(step)
                window.append(loss)
                done = step + 1
                last = done == cfg.steps
                self.step, self.tokens_seen = done, self.tokens_seen + tokens
                evaluate = done % cfg.eval_interval == 0 or last
                if evaluate or done % 10 == 0:  # read the loss every 10 steps (one host sync)
                    mean_loss = float(torch.stack(window).mean())
                    window = []
                    if not math.isfinite(mean_loss):
                        raise FloatingPointError(f"step {done}: the training loss is {mean_loss}; try a lower --lr "
                                                 f"or more --warmup-steps (last checkpoint: {self.ckpt})")
                    dt = time.perf_counter() - t0
                    record = {"step": done, "wallclock": round(self.elapsed(), 3), "train_loss": mean_loss,
                              "lr": self.learning_rate(step), "grad_norm": float(grad_norm),
                              "tokens": self.tokens_seen}
                    step_time += dt
                    session_tokens += tokens
                    log.write(record)
                    result.train_loss = mean_loss
                    bar.set_postfix_str(f"loss {mean_loss:.3f}", refresh=False)
                else:
                    step_time += time.perf_counter() - t0
                    session_tokens += tokens
                bar.update(1)
                if evaluate:
                    metrics = self.evaluate()
                    record = {"step": done, "wallclock": round(self.elapsed(), 3), **metrics}
                    log.write_eval(record)
                    result.val_loss, result.val_exact_match = metrics["val_loss"], metrics["val_exact_match"]
                    self.say(f"step {done}: val loss {metrics['val_loss']:.4f}, exact match "
                             f"{metrics['val_exact_match']:.1%}")
                    if cfg.target_exact_match is not None and metrics["val_exact_match"] >= cfg.target_exact_match:
                        self.request_stop("target reached")
                if cfg.max_minutes is not None and self.elapsed() >= 60 * cfg.max_minutes and not last:
                    self.request_stop("time limit")
                for callback in self.step_callbacks:
                    callback(self, done)
                if done % cfg.checkpoint_interval == 0 or last or self._stop_reason is not None:
                    self.save()
                if self._stop_reason is not None and not last:
                    result.status = self._stop_reason if self._stop_reason in ("target reached", "time limit") \
                        else "interrupted"
                    self.say(f"{self._stop_reason}: saved {self.ckpt} at step {done}"
                             + ("; continue with --resume" if result.status == "interrupted" else ""))
                    break
        finally:
            bar.close()
            log.close()
        result.steps = self.step
        result.elapsed = self.elapsed()
        result.tokens_per_second = session_tokens / step_time if step_time else 0.0
        result.history = log.history
        return result

    def _interrupt(self, signum: int) -> bool:
        """A signal asks for a stop after this step; False when one was already asked for (then
        seqlab.training.interrupt quits at once)."""
        if self._stop_reason is not None:
            return False
        name = signal_name(signum)
        self._stop_reason = f"interrupted ({name})"
        self.say(f"{name}: saving a checkpoint after this step (send it again to quit without saving)")
        return True


def train(cfg: Seq2SeqTrainConfig, *, step_callbacks: list[Callable] | None = None,
          log: Callable[[str], None] | None = None) -> Seq2SeqTrainResult:
    """Train (or resume) the run described by ``cfg``; see :class:`Seq2SeqTrainer`."""
    return Seq2SeqTrainer(cfg, step_callbacks=step_callbacks, log=log).run()


# -- loading a run back -------------------------------------------------------------------------


@dataclass
class LoadedRun:
    model: Any
    src_vocab: Any
    tgt_vocab: Any
    train_config: Seq2SeqTrainConfig
    step: int
    run_dir: Path


def load_run(run_dir: str | Path, *, device=None) -> LoadedRun:
    """The trained model (eval mode) and vocabularies of a run directory."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise FileNotFoundError(f"run directory {run_dir} does not exist")
    ckpt = run_dir / "checkpoints" / "latest.pt"
    payload = read_checkpoint(ckpt)
    if not payload.get("model_config"):
        raise ValueError(f"{ckpt} has no model_config: it is not a seq2seq checkpoint")
    try:
        model_config = Seq2SeqConfig(**payload["model_config"])
    except TypeError as error:
        raise ValueError(f"{ckpt}: model_config does not describe a seq2seq model ({error})") from None
    src_vocab, tgt_vocab = read_vocabs(run_dir / "vocab.json")
    if (src_vocab.size, tgt_vocab.size) != (model_config.src_vocab_size, model_config.tgt_vocab_size):
        raise ValueError(f"{run_dir / 'vocab.json'} has {src_vocab.size}/{tgt_vocab.size} source/target ids but the "
                         f"checkpoint's model has {model_config.src_vocab_size}/{model_config.tgt_vocab_size}")
    model = build_model(model_config, device=resolve_device(device or "auto"))
    step = load_payload(payload, model, source=ckpt)
    model.eval()
    train_config = Seq2SeqTrainConfig.from_dict(payload["extra"]["config"], source=str(ckpt))
    return LoadedRun(model, src_vocab, tgt_vocab, train_config, step, run_dir)


def is_text_task(cfg: Seq2SeqTrainConfig) -> bool:
    """BLEU is reported for natural-language data: the text tasks and --pairs files."""
    return cfg.task in TEXT_TASKS or cfg.pairs is not None
