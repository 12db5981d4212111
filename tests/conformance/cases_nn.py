"""Layer, loss and optimizer cases: modules built once on the host from one seed, then moved to the device.

A module's parameters are initialised on 'cpu' and moved with ``.to(device)``, so every backend starts
from the same numbers; the case returns the output, the input's gradient and every parameter's gradient.
"""

from __future__ import annotations

import numpy as np

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F

from .harness import case, forward_backward, host, leaf, module_results, on

F32 = gl.float32


def _built(make, dev, seed=0):
    gl.manual_seed(seed)
    return make().to(dev)


# --- layers -----------------------------------------------------------------------------------------


@case(F32, tol=10)
def linear_layer(dev, sz, dtype):
    layer = _built(lambda: nn.Linear(sz.inner, sz.cols), dev)
    x = leaf(dev, (sz.batch, 3, sz.inner), 70, dtype)
    return module_results(layer, layer(x), [x])


@case(F32, tol=10)
def conv2d_layer(dev, sz, dtype):
    layer = _built(lambda: nn.Conv2d(sz.channels, 5, 3, stride=2, padding=1), dev)
    x = leaf(dev, (sz.batch, sz.channels, sz.image, sz.image), 71, dtype)
    return module_results(layer, layer(x), [x])


@case(F32, tol=10)
def layer_norm_layer(dev, sz, dtype):
    layer = _built(lambda: nn.LayerNorm(sz.cols), dev)
    with gl.no_grad():  # not the identity affine map, so weight and bias matter in the output
        layer.weight.mul_(on(dev, host((sz.cols,), 72, 0.5, 1.5), dtype)).requires_grad_()
        layer.bias.add_(on(dev, host((sz.cols,), 73), dtype))
    x = leaf(dev, (sz.batch, sz.seq, sz.cols), 74, dtype)
    return module_results(layer, layer(x), [x])


@case(F32, tol=10)
def batch_norm_layer(dev, sz, dtype):
    """A training step updates the running statistics (buffers on the device too); eval then reads them."""
    layer = _built(lambda: nn.BatchNorm2d(sz.channels), dev)
    x = leaf(dev, (sz.batch, sz.channels, sz.image, sz.image), 75, dtype)
    results = module_results(layer, layer(x), [x])
    layer.eval()
    with gl.no_grad():
        evaluated = layer(x)
    return dict(results, running_mean=layer.running_mean, running_var=layer.running_var,
                batches=layer.num_batches_tracked, eval=evaluated)


@case(F32)
def embedding_layer(dev, sz, dtype):
    layer = _built(lambda: nn.Embedding(11, sz.cols, padding_idx=0), dev)
    ids = on(dev, np.random.default_rng(76).integers(0, 11, (sz.batch, sz.seq)))
    return module_results(layer, layer(ids))


@case(F32, tol=10)
def multihead_attention_layer(dev, sz, dtype):
    layer = _built(lambda: nn.MultiheadAttention(8, 2, batch_first=True), dev)
    q = leaf(dev, (sz.batch, sz.seq, 8), 77, dtype)
    kv = leaf(dev, (sz.batch, sz.seq + 1, 8), 78, dtype)
    mask = on(dev, host((sz.batch, sz.seq + 1), 79) > 1.2)  # padded keys
    out, weights = layer(q, kv, kv, key_padding_mask=mask)
    results = module_results(layer, out, [q, kv])
    return dict(results, weights=weights)


@case(F32, tol=20)
def transformer_encoder_layer(dev, sz, dtype):
    layer = _built(lambda: nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, dropout=0.0, batch_first=True), dev)
    x = leaf(dev, (sz.batch, sz.seq, 8), 80, dtype)
    causal = nn.Transformer.generate_square_subsequent_mask(sz.seq).to(dev)
    return module_results(layer, layer(x, src_mask=causal), [x])


@case(F32, tol=20)
def lstm_layer(dev, sz, dtype):
    layer = _built(lambda: nn.LSTM(3, 5, num_layers=2, batch_first=True), dev)
    x = leaf(dev, (sz.batch, sz.seq, 3), 81, dtype)
    out, (h, c) = layer(x)
    results = module_results(layer, out + h[-1].unsqueeze(1) + c[-1].unsqueeze(1), [x])
    return dict(results, h=h, c=c)


@case(F32, tol=20)
def gru_layer(dev, sz, dtype):
    layer = _built(lambda: nn.GRU(3, 4, bidirectional=True), dev)
    x = leaf(dev, (sz.seq, sz.batch, 3), 82, dtype)
    out, h = layer(x)
    return dict(module_results(layer, out, [x]), h=h)


# --- losses -------------------------------------------------------------------------------------------

CLASSES = 5


def _logits_and_targets(dev, sz, dtype, seed):
    logits = leaf(dev, (sz.batch * 3, CLASSES), seed, dtype, -3, 3)
    targets = np.random.default_rng(seed + 1).integers(0, CLASSES, sz.batch * 3)
    targets[1] = 2  # ignore_index below: at least one row is ignored
    return logits, on(dev, targets)


@case(F32, gl.float64)
def cross_entropy_forms(dev, sz, dtype):
    logits, targets = _logits_and_targets(dev, sz, dtype, 83)
    weight = on(dev, host((CLASSES,), 84, 0.5, 2), dtype)
    soft = F.softmax(on(dev, host((sz.batch * 3, CLASSES), 85), dtype), 1)
    return forward_backward(lambda z: {
        "plain": F.cross_entropy(z, targets),
        "weighted": F.cross_entropy(z, targets, weight=weight),
        "ignore_index": F.cross_entropy(z, targets, ignore_index=2),
        "smoothing": F.cross_entropy(z, targets, label_smoothing=0.1, weight=weight),
        "sum": F.cross_entropy(z, targets, reduction="sum"),
        "none": F.cross_entropy(z, targets, reduction="none", ignore_index=2),
        "probabilities": F.cross_entropy(z, soft),
        "spatial": F.cross_entropy(z.t().reshape(1, CLASSES, -1), targets.reshape(1, -1))}, logits)


@case(F32, gl.float64)
def nll_loss_forms(dev, sz, dtype):
    logits, targets = _logits_and_targets(dev, sz, dtype, 86)
    weight = on(dev, host((CLASSES,), 87, 0.5, 2), dtype)
    return forward_backward(lambda z: {"plain": F.nll_loss(F.log_softmax(z, 1), targets),
                                       "weighted": F.nll_loss(F.log_softmax(z, 1), targets, weight=weight,
                                                              ignore_index=2),
                                       "none": F.nll_loss(z, targets, reduction="none")}, logits)


@case(F32, gl.float64)
def regression_and_binary_losses(dev, sz, dtype):
    x = leaf(dev, (sz.batch, sz.cols), 88, dtype)
    y = on(dev, host((sz.batch, sz.cols), 89), dtype)
    labels = on(dev, host((sz.batch, sz.cols), 90) > 0, dtype)
    pos_weight = on(dev, host((sz.cols,), 91, 0.5, 3), dtype)
    return forward_backward(lambda x: {
        "mse": F.mse_loss(x, y), "mse_sum": F.mse_loss(x, y, reduction="sum"),
        "bce_with_logits": F.binary_cross_entropy_with_logits(x * 5, labels),
        "bce_pos_weight": F.binary_cross_entropy_with_logits(x, labels, pos_weight=pos_weight),
        "smooth_l1": F.smooth_l1_loss(x, y), "smooth_l1_beta": F.smooth_l1_loss(x, y, beta=0.3, reduction="none"),
        "l1": F.l1_loss(x, y), "huber": F.huber_loss(x, y, delta=0.5)}, x)


# --- optimizers ---------------------------------------------------------------------------------------

OPTIMIZERS = {
    "sgd": lambda p: gl.optim.SGD(p, lr=0.1),
    "sgd_momentum_nesterov_decay": lambda p: gl.optim.SGD(p, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-2),
    "sgd_momentum_dampening": lambda p: gl.optim.SGD(p, lr=0.05, momentum=0.8, dampening=0.1),
    "adam": lambda p: gl.optim.Adam(p, lr=0.01),
    "adam_amsgrad_decay": lambda p: gl.optim.Adam(p, lr=0.01, amsgrad=True, weight_decay=1e-2),
    "adamw": lambda p: gl.optim.AdamW(p, lr=0.01, weight_decay=0.1),
    "rmsprop": lambda p: gl.optim.RMSprop(p, lr=0.01),
    "rmsprop_centered_momentum": lambda p: gl.optim.RMSprop(p, lr=0.01, momentum=0.9, centered=True),
}


def _optimizer_case(name):
    make = OPTIMIZERS[name]

    def optimizer(dev, sz, dtype):
        """Three steps of a small regression from the same parameters give the same parameters."""
        model = _built(lambda: nn.Sequential(nn.Linear(4, sz.cols), nn.Tanh(), nn.Linear(sz.cols, 2)), dev)
        opt = make(model.parameters())
        x = on(dev, host((sz.batch * 2, 4), 92), F32)
        y = on(dev, host((sz.batch * 2, 2), 93), F32)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        state = {f"state {i} {key}": value for i, s in enumerate(opt.state.values())
                 for key, value in s.items() if isinstance(value, gl.Tensor) and value.ndim > 0}
        return dict({f"param {n}": p for n, p in model.named_parameters()}, losses=on(dev, np.array(losses), F32), **state)

    optimizer.__name__ = f"optimizer_{name}"
    return optimizer


for _name in OPTIMIZERS:
    case(F32, tol=10)(_optimizer_case(_name))
