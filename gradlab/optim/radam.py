"""RAdam: Adam whose adaptive step is switched on only once the variance estimate is trustworthy."""

from __future__ import annotations

from .optimizer import (Optimizer, _advance, _average_square_, _check_betas, _check_nonnegative, _kernel_switches,
                        _lerp_, _new_step, _zeros_like)

__all__ = ["RAdam"]


class RAdam(Optimizer):
    """While the length of the approximated moving average rho_t <= 5, take plain momentum steps
    lr * m̂; after that, Adam's step lr * m̂ / (√v̂ + eps) times the rectification term r_t.
    """

    _state_keys = ("step", "exp_avg", "exp_avg_sq")

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, decoupled_weight_decay=False, *,
                 maximize=False, foreach=None, capturable=False, differentiable=False):
        _check_nonnegative(lr=lr, eps=eps)
        _check_betas(betas)
        _check_nonnegative(weight_decay=weight_decay)
        defaults = dict(lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize)
        defaults.update(_kernel_switches(foreach=foreach, capturable=capturable, differentiable=differentiable))
        super().__init__(params, defaults)

    def _init_state(self, p, group) -> dict:
        return dict(step=_new_step(), exp_avg=_zeros_like(p), exp_avg_sq=_zeros_like(p))

    def _delta(self, p, grad, group):
        b = p.device.backend
        state = self.state[p]
        beta1, beta2 = group["betas"]
        step = _advance(state)
        exp_avg = _lerp_(state["exp_avg"], grad, 1 - beta1)
        exp_avg_sq = _average_square_(state["exp_avg_sq"], grad, beta2)
        bias_correction2 = 1 - beta2 ** step
        rho_inf = 2 / (1 - beta2) - 1
        rho_t = rho_inf - 2 * step * (beta2 ** step) / bias_correction2
        step_size = group["lr"] / (1 - beta1 ** step)
        if rho_t <= 5.0:
            return b.mul(exp_avg, step_size)
        rect = ((rho_t - 4) * (rho_t - 2) * rho_inf / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
        adaptive = b.div(bias_correction2 ** 0.5, b.add(b.sqrt(exp_avg_sq), group["eps"]))
        return b.mul(b.mul(exp_avg, adaptive), step_size * rect)
