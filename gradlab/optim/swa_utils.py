"""Weight averaging, as ``torch.optim.swa_utils``: a model whose weights are an average of another's.

``AveragedModel`` keeps the running mean of a model's weights along training (stochastic weight
averaging, SWA) or, with ``get_ema_multi_avg_fn``, an exponential moving average (EMA). ``SWALR``
anneals the lr to a constant for the averaging phase; ``update_bn`` recomputes BatchNorm statistics,
which an average of weights does not keep.
"""

from __future__ import annotations

import copy
import itertools
import math

from ..autograd.grad_mode import no_grad
from ..creation import tensor
from ..dtypes import int64
from ..nn.modules.batchnorm import _BatchNorm
from ..nn.modules.module import Module
from .lr_scheduler import LRScheduler, _per_group
from .optimizer import _lerp

__all__ = ["AveragedModel", "update_bn", "SWALR", "get_ema_multi_avg_fn", "get_swa_multi_avg_fn", "get_ema_avg_fn",
           "get_swa_avg_fn"]


def _check_decay(decay) -> None:
    if decay < 0.0 or decay > 1.0:
        raise ValueError(f"Invalid decay value {decay} provided. Please provide a value in [0,1] range.")


def _lerp_into(target, end, weight: float) -> None:
    """target = lerp(target, end, weight), written into target's own memory (a parameter stays itself)."""
    b = target.device.backend
    b.setitem(target.array, Ellipsis, _lerp(b, target.array, end.array, weight))
    target._version[0] += 1


def get_ema_multi_avg_fn(decay=0.999):
    """An exponential moving average for ``AveragedModel(multi_avg_fn=...)``: ema = decay ema + (1 - decay) p."""
    _check_decay(decay)

    def ema_update(ema_params, current_params, num_averaged) -> None:
        with no_grad():
            for ema, current in zip(ema_params, current_params):
                if ema.dtype.is_floating_point:
                    _lerp_into(ema, current, 1 - decay)
                else:
                    ema.copy_(ema * decay + current * (1 - decay))

    return ema_update


def get_swa_multi_avg_fn():
    """The running mean for ``AveragedModel(multi_avg_fn=...)``: avg += (p - avg) / (n + 1)."""

    def swa_update(averaged_params, current_params, num_averaged) -> None:
        with no_grad():
            weight = float(1 / (num_averaged + 1))  # for a tensor count: in the default dtype, as in PyTorch
            for averaged, current in zip(averaged_params, current_params):
                if averaged.dtype.is_floating_point:
                    _lerp_into(averaged, current, weight)
                else:
                    averaged.copy_(averaged + (current - averaged) * weight)

    return swa_update


def get_ema_avg_fn(decay=0.999):
    """An exponential moving average, one parameter at a time (``AveragedModel(avg_fn=...)``)."""
    _check_decay(decay)

    def ema_update(ema_param, current_param, num_averaged):
        with no_grad():
            return decay * ema_param + (1 - decay) * current_param

    return ema_update


def get_swa_avg_fn():
    """The running mean, one parameter at a time: avg + (p - avg) / (n + 1)."""

    def swa_update(averaged_param, current_param, num_averaged):
        with no_grad():
            return averaged_param + (current_param - averaged_param) / (num_averaged + 1)

    return swa_update


class AveragedModel(Module):
    """A copy of ``model`` whose weights average the model's: call ``update_parameters(model)`` after
    the steps to average (the first call copies). ``forward`` runs the copy.

    Without ``avg_fn``/``multi_avg_fn`` the average is the plain mean (SWA); buffers are copied from
    the model, unless ``use_buffers=True`` averages them with the parameters.
    """

    def __init__(self, model: Module, device=None, avg_fn=None, multi_avg_fn=None, use_buffers=False):
        super().__init__()
        if avg_fn is not None and multi_avg_fn is not None:
            raise AssertionError("Only one of avg_fn and multi_avg_fn should be provided")
        self.module = copy.deepcopy(model)
        if device is not None:
            self.module = self.module.to(device)
        self.register_buffer("n_averaged", tensor(0, dtype=int64, device=device))
        self.avg_fn, self.multi_avg_fn, self.use_buffers = avg_fn, multi_avg_fn, use_buffers

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def _averaged(self, module: Module) -> list:
        tensors = itertools.chain(module.parameters(), module.buffers()) if self.use_buffers else module.parameters()
        return [t.detach() for t in tensors]

    def update_parameters(self, model: Module) -> None:
        """Fold ``model``'s current weights into the average (copy them, the first time)."""
        ours = self._averaged(self.module)
        theirs = [t.to(a.device) for a, t in zip(ours, self._averaged(model))]
        n = self.n_averaged.item()
        with no_grad():
            if n == 0:
                for averaged, current in zip(ours, theirs):
                    averaged.copy_(current)
            elif self.avg_fn is not None:
                for averaged, current in zip(ours, theirs):
                    averaged.copy_(self.avg_fn(averaged, current, self.n_averaged))
            else:
                average = self.multi_avg_fn
                if average is None:  # PyTorch's per-parameter mean, as it runs on the CPU
                    average, one_by_one = get_swa_avg_fn(), True
                else:
                    one_by_one = False
                for group in _by_dtype(ours, theirs):
                    if one_by_one:
                        for averaged, current in zip(*group):
                            averaged.copy_(average(averaged, current, self.n_averaged))
                    else:
                        average(*group, self.n_averaged)
            if not self.use_buffers:
                for ours_buffer, their_buffer in zip(self.module.buffers(), model.buffers()):
                    ours_buffer.detach().copy_(their_buffer.detach().to(ours_buffer.device))
            self.n_averaged += 1


def _by_dtype(ours: list, theirs: list) -> list:
    """Pairs of lists (averaged, current), one per dtype, in order: what PyTorch hands a multi_avg_fn."""
    groups = {}
    for averaged, current in zip(ours, theirs):
        pair = groups.setdefault((str(averaged.device), averaged.dtype.name), ([], []))
        pair[0].append(averaged)
        pair[1].append(current)
    return list(groups.values())


def update_bn(loader, model: Module, device=None) -> None:
    """Recompute every BatchNorm's running mean and variance with one pass over ``loader``.

    Their statistics are reset and gathered as a cumulative average (momentum None) over the
    batches (a batch that is a tuple or list contributes its first element); then restored.
    """
    momenta = {}
    for module in model.modules():
        if isinstance(module, _BatchNorm):
            module.reset_running_stats()
            momenta[module] = module.momentum
    if not momenta:
        return
    was_training = model.training
    model.train()
    for module in momenta:
        module.momentum = None
    with no_grad():
        for batch in loader:
            if isinstance(batch, (list, tuple)):
                batch = batch[0]
            model(batch if device is None else batch.to(device))
    for module, momentum in momenta.items():
        module.momentum = momentum
    model.train(was_training)


class SWALR(LRScheduler):
    """Anneal each group's lr from its value to ``swa_lr`` over ``anneal_epochs`` (cosine or linear),
    then hold it: the constant lr under which SWA averages the weights."""

    def __init__(self, optimizer, swa_lr, anneal_epochs=10, anneal_strategy="cos", last_epoch=-1):
        for lr, group in zip(_per_group("swa_lr", optimizer, swa_lr), optimizer.param_groups):
            group["swa_lr"] = lr
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(f"anneal_strategy must be one of 'cos' or 'linear', instead got {anneal_strategy}")
        self._set_anneal_func(anneal_strategy)
        if not isinstance(anneal_epochs, int) or anneal_epochs < 0:
            raise ValueError(f"anneal_epochs must be equal or greater than 0, got {anneal_epochs}")
        self.anneal_epochs = anneal_epochs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _linear_anneal(t):
        return t

    @staticmethod
    def _cosine_anneal(t):
        return (1 - math.cos(math.pi * t)) / 2

    @staticmethod
    def _get_initial_lr(lr, swa_lr, alpha):
        """The lr the annealing started from, recovered from the current lr and the fraction alpha done."""
        if alpha == 1:
            return swa_lr
        return (lr - alpha * swa_lr) / (1 - alpha)

    def _set_anneal_func(self, anneal_strategy) -> None:
        self._anneal_strategy = anneal_strategy
        self.anneal_func = self._cosine_anneal if anneal_strategy == "cos" else self._linear_anneal

    def get_lr(self):
        self._warn_if_outside_step()
        step = self._step_count - 1
        if self.anneal_epochs == 0:
            step = max(1, step)
        prev_alpha = self.anneal_func(max(0, min(1, (step - 1) / max(1, self.anneal_epochs))))
        prev_lrs = [self._get_initial_lr(group["lr"], group["swa_lr"], prev_alpha)
                    for group in self.optimizer.param_groups]
        alpha = self.anneal_func(max(0, min(1, step / max(1, self.anneal_epochs))))
        return [group["swa_lr"] * alpha + lr * (1 - alpha) for group, lr in zip(self.optimizer.param_groups, prev_lrs)]

    def state_dict(self) -> dict:
        return {key: value for key, value in self.__dict__.items() if key not in ("optimizer", "anneal_func")}

    def load_state_dict(self, state_dict: dict) -> None:
        self.__dict__.update(state_dict)
        self._set_anneal_func(self._anneal_strategy)
