"""What a measurement costs, known before it runs: rows x positions x layers, and the floating-point
operations and seconds that follow.

    cost = estimate(model, "patch", seq=512)
    cost.words()      # '2,048 rows x 256 positions x 2.5 layers: about 310 GFLOP, about 31 s on 2 CPU cores'
    check_cost(cost, limit_seconds=10, command="seqlab interpret patch --run ...")   # CostLimitError

Rows are the batch rows the measurement runs (one per patch or cut edge), positions the tokens a
row carries on average, layers the blocks it passes on average. FLOPs count the matrix products
(2 per multiply-add) of the blocks' weights, attention's scores and weighted sums, and the
unembedding where a measurement reads every row's logits. Seconds divide by FLOPS_2_CORES, a
deliberately low throughput of seqlab's eager float32 forward on 2 CPU cores (small models spend
much of their time in Python and memory traffic), so that an estimate errs on the slow side.

The explorer refuses a request whose estimate is over its limit (``seqlab explore
--interpret-limit``, default LIMIT_SECONDS) with the estimate and the command that runs it from
the terminal, where ``seqlab interpret`` shows a progress bar.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqlab.runs import unwrap_model

FLOPS_2_CORES = 10e9   # floating-point operations per second assumed on 2 CPU cores
LIMIT_SECONDS = 10.0   # the explorer's default limit per request


class CostLimitError(ValueError):
    """A request over the cost limit; ``cost`` says how much, ``command`` how to run it anyway."""

    def __init__(self, message: str, cost: "Cost", limit_seconds: float, command: str):
        super().__init__(message)
        self.cost, self.limit_seconds, self.command = cost, limit_seconds, command


@dataclass(frozen=True)
class Cost:
    rows: int
    positions: float
    layers: float
    flops: float

    @property
    def seconds(self) -> float:
        return self.flops / FLOPS_2_CORES

    def words(self) -> str:
        return (f"{self.rows:,} rows x {self.positions:,.0f} positions x {self.layers:g} layers: about "
                f"{self.flops / 1e9:,.1f} GFLOP, about {self.seconds:,.1f} s on 2 CPU cores")

    def as_json(self) -> dict:
        return {"rows": self.rows, "positions": self.positions, "layers": self.layers, "flops": self.flops,
                "seconds": self.seconds}


def _block_flops(layer, keys: float) -> float:
    """FLOPs of one token through one block: 2 per weight, plus attention over ``keys`` keys."""
    weights = sum(p.numel() for p in layer.parameters() if p.dim() >= 2)
    d = max((p.shape[-1] for p in layer.parameters() if p.dim() >= 2), default=1)
    return 2.0 * weights + 4.0 * d * keys


def estimate(model, analysis: str, *, seq: int = 1, position: int | None = None, heads_rows: bool = False,
             batches: int = 8, source: int = 1, steps: int = 1, patches: int = 1) -> Cost:
    """The cost of ``analysis`` on ``model`` (module docstring).

    Language model: ``seq`` prompt tokens (``position``: the predicted one, for knockout);
    ``heads_rows`` for patching every head; ``batches`` x ``seq`` tokens for head roles.
    Encoder-decoder: ``source`` and ``steps`` (decoder positions), ``patches`` rows for patching.
    """
    model = unwrap_model(model)
    from seqlab.model import TransformerLM

    if isinstance(model, TransformerLM):
        return _lm(model, analysis, seq, position, heads_rows, batches)
    return _seq2seq(model, analysis, source, steps, patches)


def _lm(model, analysis: str, seq: int, position: int | None, heads_rows: bool, batches: int) -> Cost:
    cfg = model.config
    L = len(model.layers)
    block = _block_flops(model.layers[0], seq / 2)
    unembed = 2.0 * cfg.d_model * cfg.vocab_size
    forward = seq * (L * block + unembed)
    if analysis == "lens":
        return Cost(1, seq, L, forward + (L + 1) * seq * unembed)
    if analysis in ("attribute",):
        return Cost(1, seq, L, forward)
    if analysis == "depends":
        return Cost(1, seq, L, 3 * forward)
    if analysis == "heads":
        return Cost(batches, seq, L, batches * seq * L * block)
    if analysis == "patch":
        rows = L * seq * (cfg.num_heads if heads_rows else 1)
        positions, layers = seq / 2 + max(1, seq // 8) / 2, (L + 1) / 2
        return Cost(rows, positions, layers, 2 * forward + rows * positions * layers * _block_flops(model.layers[0], seq))
    if analysis == "knockout":
        n = seq if position is None else position + 1
        rows = L * n
        return Cost(rows, 1, (L + 1) / 2, forward + rows * ((L + 1) / 2 * _block_flops(model.layers[0], n) + unembed))
    raise ValueError(f"no cost model for the analysis {analysis!r}")


def _seq2seq(model, analysis: str, source: int, steps: int, patches: int) -> Cost:
    cfg = model.config
    weights = sum(p.numel() for name, p in model.named_parameters() if p.dim() >= 2 and "embeddings" not in name)
    layers = cfg.num_encoder_layers + cfg.num_decoder_layers
    tokens = source + steps
    forward = tokens * (2.0 * weights / max(1, layers)) * layers + 4.0 * cfg.d_model * source * steps * layers \
        + steps * 2.0 * cfg.d_model * cfg.tgt_vocab_size
    if analysis == "depends":  # a row per step, each differentiating its predicted token's log-probability
        return Cost(steps, tokens, layers, 3 * steps * forward)
    if analysis == "patch":
        return Cost(patches, tokens, layers, (patches + 2) * forward)
    if analysis == "knockout":
        rows = cfg.num_decoder_layers * source if cfg.arch == "transformer" else source
        return Cost(rows, tokens, layers, (rows + 1) * forward)
    if analysis in ("lens", "attribute"):
        return Cost(1, tokens, layers, (cfg.num_decoder_layers + 2) * forward)
    raise ValueError(f"no cost model for the analysis {analysis!r}")


def check_cost(cost: Cost, limit_seconds: float, command: str) -> None:
    """A CostLimitError when ``cost`` is over ``limit_seconds``, naming the estimate and ``command``."""
    if cost.seconds > limit_seconds:
        raise CostLimitError(f"this request needs {cost.words()}, over this explorer's limit of {limit_seconds:g} s "
                             f"per request; run it from the terminal, which shows a progress bar: {command}",
                             cost, limit_seconds, command)
