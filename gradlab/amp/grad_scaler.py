"""``GradScaler``: multiply the loss by a large factor so small float16 gradients do not flush to zero.

``scaler.scale(loss).backward()`` makes every gradient ``scale`` times larger; ``scaler.step(opt)``
divides them back (``unscale_``) and steps only if all are finite; ``scaler.update()`` halves the
scale after a step with an inf/NaN and doubles it after ``growth_interval`` clean steps in a row.
The arithmetic is PyTorch's to the bit: the scale is a float32, its inverse float32(1 / float64(scale)).
"""

from __future__ import annotations

import enum
import warnings
from collections import defaultdict

import numpy as np

from .. import cuda
from .. import dtypes as dt
from ..autograd.function import TrackedTensor
from ..creation import full
from ..autograd.grad_mode import no_grad


class OptState(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


def _refresh_per_optimizer_state() -> dict:
    return {"stage": OptState.READY, "found_inf": None}


class GradScaler:
    """Dynamic loss scaling, as ``torch.amp.GradScaler``; ``enabled=False`` makes every method a pass-through.

    ``device="cuda"`` without a GPU warns and disables itself, as PyTorch does; use ``device="cpu"``
    to scale on the CPU (with float16 gradients the scaling is what keeps them from underflowing).
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000, enabled: bool = True):
        self._device = device
        self._enabled = enabled
        if device == "cuda" and enabled and not cuda.is_available():
            warnings.warn("gradlab.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.",
                          stacklevel=2)
            self._enabled = False
        if self._enabled:
            if growth_factor <= 1.0:
                raise AssertionError("The growth factor must be > 1.0.")
            if backoff_factor >= 1.0:
                raise AssertionError("The backoff factor must be < 1.0.")
            self._init_scale = init_scale
            self._scale = None  # a float32 once the first scale() runs
            self._growth_factor = growth_factor
            self._backoff_factor = backoff_factor
            self._growth_interval = growth_interval
            self._init_growth_tracker = 0
            self._growth_tracker = None
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _check_started(self, funcname: str) -> None:
        if self._scale is None:
            raise AssertionError(f"Attempted {funcname} but _scale is None.  This may indicate your script did not "
                                 "use scaler.scale(loss or outputs) earlier in the iteration.")

    def scale(self, outputs):
        """``outputs * scale`` for a tensor, or for each tensor in a list/tuple (nested); as-is when disabled."""
        if not self._enabled:
            return outputs
        if isinstance(outputs, TrackedTensor):
            return self._times_scale(outputs)
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(item) for item in outputs)
        if hasattr(outputs, "__iter__"):
            return map(self.scale, outputs)
        raise ValueError("outputs must be a Tensor or an iterable of Tensors")

    def _times_scale(self, output):
        if self._scale is None:
            self._scale = np.float32(self._init_scale)
            self._growth_tracker = self._init_growth_tracker
        return output * full((), float(self._scale), dtype=dt.float32, device=output.device)

    def _unscale_grads_(self, optimizer, inv_scale: float, allow_fp16: bool) -> bool:
        """Multiply every gradient by ``inv_scale`` in place; True if any held an inf or NaN."""
        found_inf = False
        with no_grad():
            for group in optimizer.param_groups:
                for param in group["params"]:
                    grad = param.grad
                    if grad is None:
                        continue
                    if not allow_fp16 and grad.dtype is dt.float16:
                        raise ValueError("Attempting to unscale FP16 gradients.")
                    if not bool(grad.isfinite().all()):
                        found_inf = True
                    if inv_scale != 1.0:
                        grad.mul_(inv_scale)
        return found_inf

    def unscale_(self, optimizer) -> None:
        """Divide the optimizer's gradients by the scale now (e.g. before clipping); once per step."""
        if not self._enabled:
            return
        self._check_started("unscale_")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.UNSCALED:
            raise RuntimeError("unscale_() has already been called on this optimizer since the last update().")
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        inv_scale = float(np.float32(1.0 / np.float64(self._scale)))
        optimizer_state["found_inf"] = self._unscale_grads_(optimizer, inv_scale, allow_fp16=False)
        optimizer_state["stage"] = OptState.UNSCALED

    def step(self, optimizer, *args, **kwargs):
        """Unscale (unless done already) and call ``optimizer.step()`` if every gradient is finite; returns
        what it returned, or None when the step was skipped."""
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        if "closure" in kwargs:
            raise RuntimeError("Closure use is not currently supported if GradScaler is enabled.")
        self._check_started("step")
        optimizer_state = self._per_optimizer_states[id(optimizer)]
        if optimizer_state["stage"] is OptState.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if optimizer_state["stage"] is OptState.READY:
            self.unscale_(optimizer)
        retval = None if optimizer_state["found_inf"] else optimizer.step(*args, **kwargs)
        optimizer_state["stage"] = OptState.STEPPED
        return retval

    def update(self, new_scale=None) -> None:
        """Back off after a skipped step, grow after ``growth_interval`` clean ones, or set ``new_scale``."""
        if not self._enabled:
            return
        self._check_started("update")
        if new_scale is not None:
            if isinstance(new_scale, TrackedTensor):
                reason = "new_scale should be a float or a 1-element gradlab.Tensor with requires_grad=False."
                if new_scale.numel() != 1 or new_scale.requires_grad:
                    raise AssertionError(reason)
                new_scale = new_scale.item()
            self._scale = np.float32(new_scale)
        else:
            found = [state["found_inf"] for state in self._per_optimizer_states.values()
                     if state["found_inf"] is not None]
            if not found:
                raise AssertionError("No inf checks were recorded prior to update.")
            self._update_scale(any(found))
        self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)

    def _update_scale(self, found_inf: bool) -> None:
        """PyTorch's _amp_update_scale_: float32 scale times a float64 factor, stored as float32."""
        if found_inf:
            self._scale = np.float32(np.float64(self._scale) * self._backoff_factor)
            self._growth_tracker = 0
            return
        successful = self._growth_tracker + 1
        if successful == self._growth_interval:
            grown = np.float32(np.float64(self._scale) * self._growth_factor)
            if np.isfinite(grown):
                self._scale = grown
            self._growth_tracker = 0
        else:
            self._growth_tracker = successful

    def get_scale(self) -> float:
        """The current scale as a Python float (1.0 when disabled)."""
        if not self._enabled:
            return 1.0
        return float(self._init_scale if self._scale is None else self._scale)

    def get_growth_factor(self) -> float:
        return self._growth_factor

    def set_growth_factor(self, new_factor: float) -> None:
        self._growth_factor = new_factor

    def get_backoff_factor(self) -> float:
        return self._backoff_factor

    def set_backoff_factor(self, new_factor: float) -> None:
        self._backoff_factor = new_factor

    def get_growth_interval(self) -> int:
        return self._growth_interval

    def set_growth_interval(self, new_interval: int) -> None:
        self._growth_interval = new_interval

    def _get_growth_tracker(self) -> int:
        if not self._enabled:
            return 0
        return self._init_growth_tracker if self._growth_tracker is None else self._growth_tracker

    def is_enabled(self) -> bool:
        return self._enabled

    def state_dict(self) -> dict:
        """scale, growth_factor, backoff_factor, growth_interval and _growth_tracker ({} when disabled)."""
        if not self._enabled:
            return {}
        return {"scale": self.get_scale(), "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor, "growth_interval": self._growth_interval,
                "_growth_tracker": self._get_growth_tracker()}

    def load_state_dict(self, state_dict: dict) -> None:
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved from a disabled "
                               "instance of GradScaler.")
        missing = [key for key in ("scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker")
                   if key not in state_dict]
        if missing:
            raise KeyError(f"GradScaler.load_state_dict: the state dict lacks {', '.join(missing)}")
        self._init_scale = float(state_dict["scale"])
        if self._scale is not None:
            self._scale = np.float32(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._init_growth_tracker = int(state_dict["_growth_tracker"])
        if self._growth_tracker is not None:
            self._growth_tracker = self._init_growth_tracker

    def __getstate__(self):
        state = self.__dict__.copy()
        if self._enabled:
            if len(self._per_optimizer_states) != 0:
                raise AssertionError("A GradScaler instance may only be pickled at the beginning of an iteration, "
                                     "or at the end after scaler.update().")
            state["_init_scale"] = self.get_scale()
            state["_init_growth_tracker"] = self._get_growth_tracker()
            state["_scale"] = None
            state["_growth_tracker"] = None
            state["_per_optimizer_states"] = None
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        if self._enabled:
            self._per_optimizer_states = defaultdict(_refresh_per_optimizer_state)
