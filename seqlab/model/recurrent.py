"""Recurrent cells (RNN, GRU, LSTM) in torch with PyTorch's parameter layout, and a stacked layer.

Each cell holds weight_ih (G*H, D), weight_hh (G*H, H), bias_ih, bias_hh as in torch.nn.*Cell, so
weights copy one to one, with G gate blocks in PyTorch's order: RNN G = 1; GRU G = 3 (r, z, n),
reset="after" (PyTorch) or "before" (Cho et al. 2014, d2l); LSTM G = 4 (i, f, g, o).
`RecurrentLayer` computes the input projection W_ih x + b_ih for all time steps in one matmul and
loops over time only for the recurrent part.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from seqlab.model.taps import or_none

State = torch.Tensor | tuple[torch.Tensor, torch.Tensor]

CELL_GATES = {"rnn": 1, "gru": 3, "lstm": 4}


class _RecurrentCell(nn.Module):
    """Parameters and the shared step interface; subclasses define `gates` and `recur`."""

    gates = 1

    def __init__(self, input_size: int, hidden_size: int, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size = input_size, hidden_size
        rows = self.gates * hidden_size
        self.weight_ih = nn.Parameter(torch.empty(rows, input_size, device=device, dtype=dtype))
        self.weight_hh = nn.Parameter(torch.empty(rows, hidden_size, device=device, dtype=dtype))
        self.bias_ih = nn.Parameter(torch.empty(rows, device=device, dtype=dtype))
        self.bias_hh = nn.Parameter(torch.empty(rows, device=device, dtype=dtype))
        # PyTorch's init: every entry uniform in [-1/sqrt(H), 1/sqrt(H)]
        bound = 1.0 / math.sqrt(hidden_size)
        with torch.no_grad():
            for p in self.parameters():
                p.uniform_(-bound, bound)

    def project_input(self, x: torch.Tensor) -> torch.Tensor:
        """(..., D) -> (..., G*H): W_ih x + b_ih, the part of every gate that ignores the state."""
        if x.shape[-1] != self.input_size:
            raise ValueError(f"{type(self).__name__} expects inputs of size {self.input_size}, got shape "
                             f"{tuple(x.shape)}")
        return x @ self.weight_ih.t() + self.bias_ih

    def zero_state(self, batch: int, device=None, dtype=None) -> State:
        return torch.zeros(batch, self.hidden_size, device=device, dtype=dtype)

    @staticmethod
    def hidden(state: State) -> torch.Tensor:
        """The state's output part h (the LSTM's state is (h, c))."""
        return state[0] if isinstance(state, tuple) else state

    def recur(self, gx: torch.Tensor, state: State) -> State:
        raise NotImplementedError

    def forward(self, x: torch.Tensor, state: State | None = None) -> State:
        """One step: x (B, D), state (B, H) (LSTM: a pair) or None for zeros -> the new state."""
        if state is None:
            state = self.zero_state(x.shape[0], x.device, x.dtype)
        return self.recur(self.project_input(x), state)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}"


class RNNCell(_RecurrentCell):
    """Elman cell: h = tanh(W_ih x + b_ih + W_hh h_prev + b_hh)."""

    gates = 1

    def recur(self, gx: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        return torch.tanh(gx + state @ self.weight_hh.t() + self.bias_hh)


class GRUCell(_RecurrentCell):
    """Gated recurrent unit; reset="after" (PyTorch) or "before" (paper/d2l) the recurrent matmul."""

    gates = 3

    def __init__(self, input_size: int, hidden_size: int, reset: str = "after", device=None, dtype=None):
        if reset not in ("after", "before"):
            raise ValueError(f"GRUCell reset must be 'after' (PyTorch) or 'before' (paper/d2l), got {reset!r}")
        super().__init__(input_size, hidden_size, device=device, dtype=dtype)
        self.reset = reset

    def recur(self, gx: torch.Tensor, state: torch.Tensor) -> torch.Tensor:
        H = self.hidden_size
        x_r, x_z, x_n = gx.split(H, dim=-1)
        if self.reset == "after":
            gh = state @ self.weight_hh.t() + self.bias_hh
            h_r, h_z, h_n = gh.split(H, dim=-1)
            r = torch.sigmoid(x_r + h_r)
            n = torch.tanh(x_n + r * h_n)
        else:
            gh = state @ self.weight_hh[: 2 * H].t() + self.bias_hh[: 2 * H]
            h_r, h_z = gh.split(H, dim=-1)
            r = torch.sigmoid(x_r + h_r)
            n = torch.tanh(x_n + (r * state) @ self.weight_hh[2 * H:].t() + self.bias_hh[2 * H:])
        z = torch.sigmoid(x_z + h_z)
        return n + z * (state - n)  # = (1 - z) n + z h_prev

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, reset={self.reset!r}"


class LSTMCell(_RecurrentCell):
    """Long short-term memory; the state is the pair (h, c)."""

    gates = 4

    def zero_state(self, batch: int, device=None, dtype=None) -> tuple[torch.Tensor, torch.Tensor]:
        zeros = torch.zeros(batch, self.hidden_size, device=device, dtype=dtype)
        return zeros, zeros.clone()

    def recur(self, gx: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        h_prev, c_prev = state
        a = gx + h_prev @ self.weight_hh.t() + self.bias_hh
        i, f, g, o = a.chunk(4, dim=-1)
        c = torch.sigmoid(f) * c_prev + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


def make_cell(kind: str, input_size: int, hidden_size: int, *, reset: str = "after",
              device=None, dtype=None) -> _RecurrentCell:
    """"rnn" | "gru" | "lstm" -> the cell (reset applies to the GRU only)."""
    if kind == "rnn":
        return RNNCell(input_size, hidden_size, device=device, dtype=dtype)
    if kind == "gru":
        return GRUCell(input_size, hidden_size, reset=reset, device=device, dtype=dtype)
    if kind == "lstm":
        return LSTMCell(input_size, hidden_size, device=device, dtype=dtype)
    raise ValueError(f"unknown recurrent cell {kind!r}; expected one of {sorted(CELL_GATES)}")


def _keep_where(mask: torch.Tensor, new: State, old: State) -> State:
    """Per row: the new state where mask (B, 1) is True, the old one where it is padding."""
    if isinstance(new, tuple):
        return tuple(torch.where(mask, n, o) for n, o in zip(new, old))
    return torch.where(mask, new, old)


def _tap_state(taps, state: State, step: int) -> State:
    """Offer a layer's state after one step: h as ``state`` (and the LSTM's c as ``cell``)."""
    if isinstance(state, tuple):
        return taps.tap("state", state[0], step), taps.tap("cell", state[1], step)
    return taps.tap("state", state, step)


class RecurrentLayer(nn.Module):
    """`num_layers` stacked cells run over a padded batch; submodules `cells.{i}`.

    forward(x (B, T, D), padding_mask (B, T) bool True = real, initial_state) returns
      outputs (B, T, H): the top layer's h at every step, zero at padded steps;
      final_state: per layer the state after each row's last real step, stacked as in nn.GRU:
        (num_layers, B, H), or for the LSTM the pair (h, c) of such tensors.
    At a padded step a row's state is carried over unchanged, so a padded batch gives the same
    results as running each sequence alone (tested). Padding may sit anywhere, not only at the end.
    """

    def __init__(self, cell: str, input_size: int, hidden_size: int, num_layers: int = 1, *,
                 reset: str = "after", device=None, dtype=None):
        super().__init__()
        self.cell_kind, self.hidden_size, self.num_layers = cell, hidden_size, num_layers
        self.cells = nn.ModuleList(
            make_cell(cell, input_size if i == 0 else hidden_size, hidden_size, reset=reset,
                      device=device, dtype=dtype)
            for i in range(num_layers)
        )

    def zero_state(self, batch: int, device=None, dtype=None) -> State:
        zeros = torch.zeros(self.num_layers, batch, self.hidden_size, device=device, dtype=dtype)
        return (zeros, zeros.clone()) if self.cell_kind == "lstm" else zeros

    def _layer_state(self, state: State, i: int) -> State:
        return (state[0][i], state[1][i]) if isinstance(state, tuple) else state[i]

    def _stack(self, states: list[State]) -> State:
        if isinstance(states[0], tuple):
            return torch.stack([s[0] for s in states]), torch.stack([s[1] for s in states])
        return torch.stack(states)

    def forward(self, x: torch.Tensor, padding_mask: torch.Tensor | None = None,
                initial_state: State | None = None, *, lengths: torch.Tensor | None = None,
                taps=None) -> tuple[torch.Tensor, State]:
        """lengths (B,) ints: the same as padding_mask = [t < lengths[b]] (give one or the other).

        taps (a seqlab.model.taps scope, e.g. the encoder's): layer i's state after each step,
        ``layers.{i}.state`` (h; the LSTM's cell c is ``layers.{i}.cell``), offered at every step
        (``point.step`` = t), so a state replaced at step t is the one step t + 1 reads; kept as
        (B, T, H). At a padded step the state offered is the one carried over."""
        if x.dim() != 3:
            raise ValueError(f"RecurrentLayer expects inputs of shape (batch, time, features), got {tuple(x.shape)}")
        batch, steps, _ = x.shape
        if lengths is not None:
            if padding_mask is not None:
                raise ValueError("give padding_mask or lengths, not both")
            if tuple(lengths.shape) != (batch,):
                raise ValueError(f"lengths must have shape (batch,) = ({batch},), got {tuple(lengths.shape)}")
            padding_mask = torch.arange(steps, device=x.device)[None, :] < lengths.to(x.device)[:, None]
        if padding_mask is not None and tuple(padding_mask.shape) != (batch, steps):
            raise ValueError(f"padding_mask must have shape (batch, time) = {(batch, steps)}, got "
                             f"{tuple(padding_mask.shape)}")
        if initial_state is None:
            initial_state = self.zero_state(batch, x.device, x.dtype)
        taps = or_none(taps)
        mask = None if padding_mask is None else padding_mask.to(torch.bool)[..., None]  # (B, T, 1)
        layer_input, finals = x, []
        for i, cell in enumerate(self.cells):
            gx = cell.project_input(layer_input)  # (B, T, G*H) for every step at once
            state = self._layer_state(initial_state, i)
            scope = taps.scope(f"layers.{i}")
            outputs = []
            for t in range(steps):
                new = cell.recur(gx[:, t], state)
                state = new if mask is None else _keep_where(mask[:, t], new, state)
                state = _tap_state(scope, state, t)
                outputs.append(cell.hidden(state))  # at a padded step the kept state, zeroed below
            layer_input = torch.stack(outputs, dim=1) if steps else x.new_zeros(batch, 0, self.hidden_size)
            if mask is not None:
                layer_input = layer_input * mask
            finals.append(state)
        return layer_input, self._stack(finals)

    def extra_repr(self) -> str:
        return f"cell={self.cell_kind!r}, hidden_size={self.hidden_size}, num_layers={self.num_layers}"
