"""seqlab: from a one-number RNN to a trained Transformer language model, every step verified.

Subpackages
-----------
labs        NumPy reference labs with hand-written gradients (no autograd).
tokenizer   Byte-level BPE trainer and tokenizer.
model       Transformer LM components written from scratch in PyTorch.
training    Loss, optimizer, schedule, data, checkpoints and the training loop.
explorer    Local web app that drives the labs interactively.
"""

__version__ = "0.1.0"
