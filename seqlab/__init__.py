"""seqlab: from a one-number RNN to a trained Transformer language model, every step verified.

Subpackages
-----------
labs        NumPy reference labs with hand-written gradients (no autograd).
tokenizer   Byte-level BPE trainer and tokenizer.
model       Transformer LM components (and the cross-entropy loss) written from scratch in PyTorch.
training    Optimizer, schedule, data, checkpoints and the training loop.
inference   Sampling (KV cache), perplexity, loading models from runs and checkpoints.
accounting  Parameters, FLOPs, memory and training time from a model config.
demo        The whole pipeline on built-in data (``seqlab demo``).
explorer    Local web app that drives the labs interactively.

Modules: ``runtime`` (device, precision, compile, GPU peaks), ``atomic`` (write-then-rename),
``lazy`` (package names that load on first use), ``cli`` (the ``seqlab`` command).
"""

__version__ = "0.2.0"
