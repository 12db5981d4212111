"""AdaptiveLogSoftmaxWithLoss: a softmax over a huge vocabulary that spends little on rare words (Grave et al.).

The frequent classes (below cutoffs[0]) share a "head" softmax with one extra entry per cluster of rarer
classes; a rare class's log-probability is its cluster's head entry plus its log-probability inside the
cluster, computed by a small low-rank "tail" network (in_features // div_value^(i+1) hidden units).
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from ...dtypes import int64
from ...ops._common import shape_str
from ...ops.functional import cat
from ..functional.activation import log_softmax
from .container import ModuleList, Sequential
from .linear import Linear
from .module import Module

__all__ = ["AdaptiveLogSoftmaxWithLoss"]

_ASMoutput = namedtuple("_ASMoutput", ["output", "loss"])


class AdaptiveLogSoftmaxWithLoss(Module):
    """forward(input (N, in_features), target (N)) → (output: the target's log-probability per row, loss: their
    negative mean); log_prob(input) gives every class's, predict(input) the most likely class."""

    def __init__(self, in_features, n_classes, cutoffs, div_value=4.0, head_bias=False, device=None, dtype=None):
        super().__init__()
        cutoffs = list(cutoffs)
        if len(cutoffs) == 0:
            raise ValueError("cutoffs should be a sequence of length larger than 0")
        if (cutoffs != sorted(cutoffs) or min(cutoffs) <= 0 or max(cutoffs) > n_classes - 1
                or len(set(cutoffs)) != len(cutoffs) or any(int(c) != c for c in cutoffs)):
            raise ValueError(f"cutoffs should be a sequence of unique, positive integers sorted in an increasing "
                             f"order, where each value is between 1 and n_classes-1 (got cutoffs={cutoffs} for "
                             f"n_classes={n_classes})")
        factory = {"device": device, "dtype": dtype}
        self.in_features = in_features
        self.n_classes = n_classes
        self.cutoffs = cutoffs + [n_classes]
        self.div_value = div_value
        self.head_bias = head_bias
        self.shortlist_size = self.cutoffs[0]
        self.n_clusters = len(self.cutoffs) - 1
        self.head_size = self.shortlist_size + self.n_clusters
        self.head = Linear(in_features, self.head_size, bias=head_bias, **factory)
        self.tail = ModuleList()
        for i in range(self.n_clusters):
            hidden = int(in_features // (div_value ** (i + 1)))
            size = self.cutoffs[i + 1] - self.cutoffs[i]
            self.tail.append(Sequential(Linear(in_features, hidden, bias=False, **factory),
                                        Linear(hidden, size, bias=False, **factory)))

    def reset_parameters(self) -> None:
        self.head.reset_parameters()
        for to_hidden, to_output in self.tail:
            to_hidden.reset_parameters()
            to_output.reset_parameters()

    def forward(self, input_, target_):
        if target_.ndim == 1:
            if input_.shape[0] != target_.shape[0]:
                raise RuntimeError(f"Input and target should have the same size in the batch dimension (input of "
                                   f"shape {shape_str(input_.shape)}, target of shape {shape_str(target_.shape)}).")
            if input_.ndim != 2:
                raise RuntimeError(f"1D target tensor expects 2D input tensors, but found inputs with size "
                                   f"{shape_str(input_.shape)}")
        elif target_.ndim == 0:
            if input_.ndim != 1:
                raise RuntimeError(f"0D target tensor expects 1D input tensors, but found inputs with size "
                                   f"{shape_str(input_.shape)}")
        else:
            raise RuntimeError("0D or 1D target tensor expected, multi-target not supported")
        batched = target_.ndim > 0
        input = input_ if batched else input_.unsqueeze(0)
        target = target_ if batched else target_.unsqueeze(0)
        labels = target.device.backend.to_numpy(target.array).astype(np.int64)
        if labels.size and (labels.min() < 0 or labels.max() >= self.n_classes):
            raise RuntimeError(f"Target values should be in [0, {self.n_classes - 1}], but values in range "
                               f"[{labels.min()}, {labels.max()}] were found. ")
        head_index = labels.copy()  # the head entry each row reads: its class, or its cluster's entry
        output = input.new_zeros(labels.shape[0])
        for i, (low, high) in enumerate(zip(self.cutoffs[:-1], self.cutoffs[1:])):
            rows = np.nonzero((labels >= low) & (labels < high))[0]
            if not len(rows):
                continue
            head_index[rows] = self.shortlist_size + i
            row_index = target.new_tensor(rows)
            inside = log_softmax(self.tail[i](input.index_select(0, row_index)), dim=1)
            local = inside.gather(1, target.new_tensor(labels[rows] - low).unsqueeze(1)).squeeze(1)
            output = output.scatter(0, row_index, local)
        head = log_softmax(self.head(input), dim=1)
        output = output + head.gather(1, target.new_tensor(head_index).unsqueeze(1)).squeeze(1)
        loss = (-output).mean()
        return _ASMoutput(output if batched else output.squeeze(0), loss)

    def _get_full_log_prob(self, input, head_output):
        head = log_softmax(head_output, dim=1)
        pieces = [head[:, :self.shortlist_size]]
        for i in range(self.n_clusters):
            inside = log_softmax(self.tail[i](input), dim=1)
            pieces.append(inside + head[:, self.shortlist_size + i].unsqueeze(1))
        return cat(pieces, 1)

    def log_prob(self, input):
        """The log-probability of every class, (N, n_classes)."""
        batched = input.ndim > 1
        x = input if batched else input.unsqueeze(0)
        out = self._get_full_log_prob(x, self.head(x))
        return out if batched else out.squeeze(0)

    def predict(self, input):
        """The most likely class of every row: the head decides unless its best entry is a cluster."""
        batched = input.ndim > 1
        x = input if batched else input.unsqueeze(0)
        head_output = self.head(x)
        best = head_output.argmax(1)
        rare = np.nonzero(best.device.backend.to_numpy(best.array) >= self.shortlist_size)[0]
        if len(rare):
            rows = best.new_tensor(rare, dtype=int64)
            full = self._get_full_log_prob(x.index_select(0, rows), head_output.index_select(0, rows))
            best = best.scatter(0, rows, full.argmax(1))
        return best if batched else best.squeeze(0)
