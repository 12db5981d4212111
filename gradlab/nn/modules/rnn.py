"""Recurrent layers: RNN, LSTM and GRU over whole sequences, and their one-step cells.

A recurrent layer reads a sequence one step at a time, carrying a hidden state h (and, for the
LSTM, a cell state c) from each step to the next. The input's contribution to every step is one
large matrix product computed up front; only h @ W_hhᵀ and the gates run step by step. Weight
names, shapes, gate order (LSTM: i, f, g, o; GRU: r, z, n) and initialisation are PyTorch's, so a
PyTorch state_dict loads as it is.
"""

from __future__ import annotations

import math
import numbers
import warnings

from ...creation import empty
from ...ops._common import shape_str
from ...ops.shape import cat, stack
from .. import init
from ..functional.dropout import dropout as _dropout
from ..functional.linear import linear
from ..parameter import Parameter
from .module import Module

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


# --- one time step of each kind (shared by the layers and the cells) -------------------------------

def _input_bias(mode, b_ih, b_hh):
    """The bias added to the input projection: both biases, except in a GRU where b_hh stays inside r ⊙ (…)."""
    if b_ih is None or mode == "GRU":
        return b_ih
    return b_ih + b_hh


def _rnn_step(mode, x_proj, state, w_hh, b_hh, w_hr):
    """One step: x_proj is the input's projection (biases included, but a GRU's b_hh); returns the new state."""
    if mode == "LSTM":
        h, c = state
        i, f, g, o = (x_proj + linear(h, w_hh)).chunk(4, -1)
        c = f.sigmoid() * c + i.sigmoid() * g.tanh()
        h = o.sigmoid() * c.tanh()
        return (h if w_hr is None else linear(h, w_hr)), c
    if mode == "GRU":
        x_rz, x_n = x_proj.split((2 * state.shape[-1], state.shape[-1]), -1)
        h_rz, h_n = linear(state, w_hh, b_hh).split((2 * state.shape[-1], state.shape[-1]), -1)
        r, z = (x_rz + h_rz).sigmoid().chunk(2, -1)
        n = (x_n + r * h_n).tanh()
        return n + z * (state - n)
    pre = x_proj + linear(state, w_hh)
    return pre.tanh() if mode == "RNN_TANH" else pre.relu()


# --- whole-sequence layers -------------------------------------------------------------------------

class RNNBase(Module):
    """What RNN, LSTM and GRU share: the stacked, optionally bidirectional weights and the time loop."""

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        name = type(self).__name__
        if not isinstance(dropout, numbers.Number) or isinstance(dropout, bool) or not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an element "
                             f"being zeroed, got {dropout!r}")
        if dropout > 0 and num_layers == 1:
            warnings.warn("dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
                          f"num_layers greater than 1, but got dropout={dropout} and num_layers={num_layers}",
                          stacklevel=2)
        for arg, value in (("bias", bias), ("batch_first", batch_first)):
            if not isinstance(value, bool):
                raise TypeError(f"{name}: {arg} should be of type bool, got: {type(value).__name__}")
        for arg, value in (("input_size", input_size), ("hidden_size", hidden_size), ("num_layers", num_layers)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise TypeError(f"{name}: {arg} should be of type int, got: {type(value).__name__}")
            if value <= 0:
                raise ValueError(f"{name}: {arg} must be greater than zero, got {value}")
        if proj_size < 0:
            raise ValueError("proj_size should be a positive integer or zero to disable projections")
        if proj_size >= hidden_size:
            raise ValueError(f"proj_size has to be smaller than hidden_size (got proj_size={proj_size}, "
                             f"hidden_size={hidden_size})")
        if mode not in _GATES:
            raise ValueError(f"Unrecognized RNN mode: {mode}")
        self.mode, self.input_size, self.hidden_size, self.num_layers = mode, input_size, hidden_size, num_layers
        self.bias, self.batch_first, self.dropout = bias, batch_first, float(dropout)
        self.bidirectional, self.proj_size = bidirectional, proj_size
        gate_size = _GATES[mode] * hidden_size
        real_hidden = proj_size if proj_size > 0 else hidden_size
        directions = 2 if bidirectional else 1
        self._all_weights = []
        for layer in range(num_layers):
            layer_input = input_size if layer == 0 else real_hidden * directions
            for direction in range(directions):
                suffix = f"_l{layer}" + ("_reverse" if direction else "")
                shapes = [("weight_ih", (gate_size, layer_input)), ("weight_hh", (gate_size, real_hidden))]
                if bias:
                    shapes += [("bias_ih", (gate_size,)), ("bias_hh", (gate_size,))]
                if proj_size > 0:
                    shapes.append(("weight_hr", (proj_size, hidden_size)))
                for key, shape in shapes:
                    setattr(self, key + suffix, Parameter(empty(shape, dtype=dtype, device=device)))
                self._all_weights.append([key + suffix for key, _ in shapes])
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch does."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    @property
    def _flat_weights_names(self) -> list:
        return [name for names in self._all_weights for name in names]

    @property
    def _flat_weights(self) -> list:
        return [getattr(self, name) for name in self._flat_weights_names]

    @property
    def all_weights(self) -> list:
        """The parameters grouped per layer and direction: [[weight_ih_l0, weight_hh_l0, ...], ...]."""
        return [[getattr(self, name) for name in names] for names in self._all_weights]

    def flatten_parameters(self) -> None:
        """A cuDNN memory-layout hint in PyTorch; the weights here are already used as they are."""

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.proj_size != 0:
            s += f", proj_size={self.proj_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if self.batch_first is not False:
            s += f", batch_first={self.batch_first}"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional is not False:
            s += f", bidirectional={self.bidirectional}"
        return s

    def _describe(self) -> str:
        return f"{type(self).__name__}({self.extra_repr()})"

    # --- forward ---------------------------------------------------------------------------------

    def _check_input(self, input):
        if input.ndim not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.ndim}D tensor "
                             f"instead (shape {shape_str(input.shape)}); expected (L, N, H_in), (N, L, H_in) with "
                             "batch_first=True, or unbatched (L, H_in)")
        if input.shape[-1] != self.input_size:
            layout = "(N, L, H_in)" if self.batch_first and input.ndim == 3 else \
                "(L, N, H_in)" if input.ndim == 3 else "(L, H_in)"
            raise RuntimeError(f"{self._describe()}: expected input with {self.input_size} features in the last "
                               f"dimension {layout}, got input of shape {shape_str(input.shape)} "
                               f"(input.size(-1) must be equal to input_size)")
        weight = self.weight_ih_l0
        if input.dtype is not weight.dtype:
            raise ValueError(f"{type(self).__name__}: input dtype ({input.dtype.name}) does not match weight dtype "
                             f"({weight.dtype.name}). Convert input: input.to({weight.dtype.name}), or convert model: "
                             f"model.to({input.dtype.name})")

    def _initial_state(self, input, hx, batched, name, size):
        """hx as (layers * directions, N, size) — zeros when not given — after checking its shape."""
        directions = 2 if self.bidirectional else 1
        batch = input.shape[0 if self.batch_first else 1] if batched else 1
        expected = (self.num_layers * directions, batch, size)
        if hx is None:
            return input.new_zeros(expected)
        want = 3 if batched else 2
        if hx.ndim != want:
            kind = "batched 3-D" if batched else "unbatched 2-D"
            raise RuntimeError(f"{self._describe()}: For {kind} input, {name} should also be {want}-D but got "
                               f"{hx.ndim}-D tensor of shape {shape_str(hx.shape)}")
        if not batched:
            hx = hx.unsqueeze(1)
        if tuple(hx.shape) != expected:
            raise RuntimeError(f"{self._describe()}: Expected {name} size {shape_str(expected)} "
                               f"(num_layers * num_directions, batch, {'proj_size' if size != self.hidden_size else 'hidden_size'}), "
                               f"got {shape_str(hx.shape)} for input of shape {shape_str(input.shape)}")
        return hx

    def _run(self, input, states):
        """The stacked, possibly bidirectional recurrence. states: tuple of (layers * dirs, N, ·) tensors."""
        time_dim = 1 if self.batch_first else 0
        directions = 2 if self.bidirectional else 1
        x = input
        finals = [[] for _ in states]
        for layer in range(self.num_layers):
            outputs = []
            for direction in range(directions):
                index = layer * directions + direction
                w_ih, w_hh, *rest = self.all_weights[index]
                b_ih, b_hh = (rest[0], rest[1]) if self.bias else (None, None)
                w_hr = rest[-1] if self.proj_size > 0 else None
                steps = linear(x, w_ih, _input_bias(self.mode, b_ih, b_hh)).unbind(time_dim)
                state = tuple(s[index] for s in states)
                state = state if len(state) > 1 else state[0]
                hs = []
                for x_proj in (reversed(steps) if direction else steps):
                    state = _rnn_step(self.mode, x_proj, state, w_hh, b_hh, w_hr)
                    hs.append(state[0] if isinstance(state, tuple) else state)
                outputs.append(stack(hs[::-1] if direction else hs, time_dim))
                for final, s in zip(finals, state if isinstance(state, tuple) else (state,)):
                    final.append(s)
            x = outputs[0] if directions == 1 else cat(outputs, -1)
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = _dropout(x, self.dropout, training=True)
        return x, tuple(stack(final, 0) for final in finals)

    def forward(self, input, hx=None):
        self._check_input(input)
        batched = input.ndim == 3
        if not batched:
            input = input.unsqueeze(0 if self.batch_first else 1)
        real_hidden = self.proj_size if self.proj_size > 0 else self.hidden_size
        if self.mode == "LSTM":
            if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
                raise TypeError(f"{self._describe()}: hx must be a tuple (h_0, c_0) of two tensors, "
                                f"got {type(hx).__name__}")
            h0, c0 = hx if hx is not None else (None, None)
            states = (self._initial_state(input, h0, batched, "hx", real_hidden),
                      self._initial_state(input, c0, batched, "cx", self.hidden_size))
        else:
            states = (self._initial_state(input, hx, batched, "hx", real_hidden),)
        output, finals = self._run(input, states)
        if not batched:
            output = output.squeeze(0 if self.batch_first else 1)
            finals = tuple(f.squeeze(1) for f in finals)
        return (output, finals) if self.mode == "LSTM" else (output, finals[0])


class RNN(RNNBase):
    """An Elman RNN: h_t = tanh(x_t W_ihᵀ + b_ih + h_{t-1} W_hhᵀ + b_hh) (or relu), stacked num_layers deep.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True, batch_first=False,
    dropout=0.0, bidirectional=False)``; forward(input, h_0=None) returns (output, h_n).
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        if len(args) > 3:
            nonlinearity, args = args[3], args[:3] + args[4:]
        else:
            nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)

    def _describe(self) -> str:
        extra = f", nonlinearity='{self.nonlinearity}'" if self.nonlinearity != "tanh" else ""
        return f"RNN({self.extra_repr()}{extra})"


class LSTM(RNNBase):
    """Long short-term memory: gates i, f, g, o decide what the cell state c forgets, adds and shows.

    c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g),  h_t = σ(o) ⊙ tanh(c_t)  (then h_t W_hrᵀ when proj_size > 0).
    ``LSTM(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False, proj_size=0)``; forward(input, (h_0, c_0)=None) returns (output, (h_n, c_n)).
    """

    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    """Gated recurrent unit: a reset gate r and an update gate z blend the old state with a candidate n.

    n = tanh(x W_inᵀ + b_in + r ⊙ (h W_hnᵀ + b_hn)),  h_t = (1 − z) ⊙ n + z ⊙ h_{t-1}.
    ``GRU(input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
    bidirectional=False)``; forward(input, h_0=None) returns (output, h_n).
    """

    def __init__(self, *args, **kwargs):
        if "proj_size" in kwargs:
            raise ValueError("proj_size argument is only supported for LSTM, not RNN or GRU")
        super().__init__("GRU", *args, **kwargs)


# --- one-step cells --------------------------------------------------------------------------------

class RNNCellBase(Module):
    """What the cells share: weight_ih (gates * hidden, input), weight_hh (gates * hidden, hidden), the biases."""

    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size, self.hidden_size, self.bias = input_size, hidden_size, bias
        self.weight_ih = Parameter(empty((num_chunks * hidden_size, input_size), dtype=dtype, device=device))
        self.weight_hh = Parameter(empty((num_chunks * hidden_size, hidden_size), dtype=dtype, device=device))
        if bias:
            self.bias_ih = Parameter(empty((num_chunks * hidden_size,), dtype=dtype, device=device))
            self.bias_hh = Parameter(empty((num_chunks * hidden_size,), dtype=dtype, device=device))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def extra_repr(self) -> str:
        s = f"{self.input_size}, {self.hidden_size}"
        if self.bias is not True:
            s += f", bias={self.bias}"
        if getattr(self, "nonlinearity", "tanh") != "tanh":
            s += f", nonlinearity={self.nonlinearity}"
        return s

    def reset_parameters(self) -> None:
        """Every weight and bias from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)), as PyTorch does."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for weight in self.parameters():
            init.uniform_(weight, -bound, bound)

    def _step(self, mode, input, hx):
        """Check shapes, add a batch dim to unbatched (1-D) inputs, run one step, remove it again."""
        name = type(self).__name__
        states = hx if isinstance(hx, tuple) else (hx,)
        if input.ndim not in (1, 2):
            raise ValueError(f"{name}: Expected input to be 1D or 2D, got {input.ndim}D instead "
                             f"(shape {shape_str(input.shape)}); expected (N, {self.input_size}) or ({self.input_size},)")
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"{name}({self.input_size}, {self.hidden_size}): expected input with "
                               f"{self.input_size} features in the last dimension, got input of shape "
                               f"{shape_str(input.shape)}")
        batched = input.ndim == 2
        if not batched:
            input = input.unsqueeze(0)
        expected = (input.shape[0], self.hidden_size)
        checked = []
        for i, s in enumerate(states):
            label = "hidden" if len(states) == 1 else f"hx[{i}]"
            if s is None:
                checked.append(input.new_zeros(expected))
                continue
            if s.ndim not in (1, 2):
                raise ValueError(f"{name}: Expected {label} to be 1D or 2D, got {s.ndim}D instead")
            s = s if batched else s.unsqueeze(0)
            if tuple(s.shape) != expected:
                raise RuntimeError(f"{name}({self.input_size}, {self.hidden_size}): expected {label} of shape "
                                   f"{shape_str(expected if batched else expected[1:])} for input of shape "
                                   f"{shape_str(input.shape if batched else input.shape[1:])}, got "
                                   f"{shape_str(s.shape if batched else s.shape[1:])}")
            checked.append(s)
        x_proj = linear(input, self.weight_ih, _input_bias(mode, self.bias_ih, self.bias_hh))
        out = _rnn_step(mode, x_proj, tuple(checked) if len(checked) > 1 else checked[0], self.weight_hh,
                        self.bias_hh, None)
        if batched:
            return out
        return tuple(o.squeeze(0) for o in out) if isinstance(out, tuple) else out.squeeze(0)


class RNNCell(RNNCellBase):
    """One step of an Elman RNN: h' = tanh(x W_ihᵀ + b_ih + h W_hhᵀ + b_hh) (or relu)."""

    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        super().__init__(input_size, hidden_size, bias, num_chunks=1, device=device, dtype=dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        return self._step("RNN_TANH" if self.nonlinearity == "tanh" else "RNN_RELU", input, hx)


class LSTMCell(RNNCellBase):
    """One LSTM step: returns (h', c') from input and (h, c) (zeros when not given)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=4, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        if hx is not None and (not isinstance(hx, (tuple, list)) or len(hx) != 2):
            raise TypeError(f"LSTMCell: hx must be a tuple (h, c) of two tensors, got {type(hx).__name__}")
        return self._step("LSTM", input, tuple(hx) if hx is not None else (None, None))


class GRUCell(RNNCellBase):
    """One GRU step: returns h' from input and h (zeros when not given)."""

    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, num_chunks=3, device=device, dtype=dtype)

    def forward(self, input, hx=None):
        return self._step("GRU", input, hx)
