"""Every in-place ``_`` variant of the pointwise ops, made from one table.

``x.exp_()`` is ``exp(x)`` computed out of place and written back into x's memory by
``Tensor._inplace`` (which keeps the graph right and bumps the version counter). So one line per
name is all an in-place op needs: which functional form it writes back. PyTorch also has some of
them as functions (``torch.relu_(x)``); those are generated here too.
"""

from __future__ import annotations

from . import bitwise, comparison, pointwise, special, trigonometric
from .activations import relu, sigmoid
from .arithmetic import div, mul, sub
from .elementwise import (abs, ceil, clamp, clamp_max, clamp_min, cos, erf, exp, expm1, floor, log, log1p,
                          logical_not, reciprocal, round, rsqrt, sign, sin, sqrt, square, tan, tanh, trunc)
from ._common import describe, in_place


def _float_power(input, exponent):
    """float_power_ computes in float64, so only a float64 tensor can hold its result (PyTorch checks first)."""
    if input.dtype.name != "float64":
        raise RuntimeError(f"float_power_: the base given to float_power_ has dtype {input.dtype.name} but the "
                           f"operation's result requires dtype float64 ({describe(input)}); call .double() first")
    return pointwise.float_power(input, exponent)


# name of the in-place method (without the trailing _) -> the functional form it writes back
INPLACE = {
    # elementwise maths
    "exp": exp, "log": log, "log1p": log1p, "expm1": expm1, "sqrt": sqrt, "rsqrt": rsqrt, "reciprocal": reciprocal,
    "sin": sin, "cos": cos, "tan": tan, "tanh": tanh, "erf": erf, "abs": abs, "absolute": abs, "square": square,
    "sign": sign, "sgn": sign, "floor": floor, "ceil": ceil, "trunc": trunc, "fix": trunc, "round": round,
    "negative": pointwise.negative, "clamp": clamp, "clip": clamp, "clamp_min": clamp_min, "clamp_max": clamp_max,
    "sigmoid": sigmoid, "relu": relu,
    "log2": pointwise.log2, "log10": pointwise.log10, "exp2": pointwise.exp2, "frac": pointwise.frac,
    "nan_to_num": pointwise.nan_to_num,
    # trigonometric and hyperbolic
    "asin": trigonometric.asin, "acos": trigonometric.acos, "atan": trigonometric.atan,
    "arcsin": trigonometric.asin, "arccos": trigonometric.acos, "arctan": trigonometric.atan,
    "sinh": trigonometric.sinh, "cosh": trigonometric.cosh, "asinh": trigonometric.asinh,
    "acosh": trigonometric.acosh, "atanh": trigonometric.atanh, "arcsinh": trigonometric.asinh,
    "arccosh": trigonometric.acosh, "arctanh": trigonometric.atanh, "sinc": trigonometric.sinc,
    "deg2rad": trigonometric.deg2rad, "rad2deg": trigonometric.rad2deg, "atan2": trigonometric.atan2,
    "arctan2": trigonometric.atan2, "hypot": trigonometric.hypot,
    # special functions
    "lgamma": special.lgamma, "digamma": special.digamma, "erfc": special.erfc, "erfinv": special.erfinv,
    "i0": special.i0, "logit": special.logit, "xlogy": special.xlogy, "mvlgamma": special.mvlgamma,
    "polygamma": lambda input, n: special.polygamma(n, input), "igamma": special.igamma, "igammac": special.igammac,
    # two inputs
    "multiply": mul, "divide": div, "true_divide": div, "subtract": sub, "copysign": pointwise.copysign,
    "fmod": pointwise.fmod, "remainder": pointwise.remainder, "floor_divide": pointwise.floor_divide,
    "heaviside": pointwise.heaviside, "gcd": pointwise.gcd, "lcm": pointwise.lcm, "ldexp": pointwise.ldexp,
    "nextafter": pointwise.nextafter, "float_power": _float_power, "lerp": pointwise.lerp,
    "addcmul": pointwise.addcmul, "addcdiv": pointwise.addcdiv,
    # comparisons and logic: the bool result is written back in the tensor's own dtype (1 and 0)
    "eq": comparison.eq, "ne": comparison.ne, "lt": comparison.lt, "le": comparison.le, "gt": comparison.gt,
    "ge": comparison.ge, "greater": comparison.gt, "greater_equal": comparison.ge, "less": comparison.lt,
    "less_equal": comparison.le, "not_equal": comparison.ne,
    "logical_not": logical_not, "logical_and": bitwise.logical_and, "logical_or": bitwise.logical_or,
    "logical_xor": bitwise.logical_xor,
    "bitwise_and": bitwise.bitwise_and, "bitwise_or": bitwise.bitwise_or, "bitwise_xor": bitwise.bitwise_xor,
    "bitwise_not": bitwise.bitwise_not, "bitwise_left_shift": bitwise.bitwise_left_shift,
    "bitwise_right_shift": bitwise.bitwise_right_shift,
}

# the in-place names PyTorch also has as functions of the torch module (torch.exp_(x))
TORCH_FUNCTIONS = ("abs acos acosh arccos arccosh arcsin arcsinh arctan arctanh asin asinh atan atanh ceil clamp "
                   "clamp_max clamp_min clip cos cosh deg2rad erf erfc exp exp2 expm1 fix floor frac gcd i0 lcm "
                   "ldexp log log10 log1p log2 logit nan_to_num neg negative rad2deg reciprocal relu round rsqrt "
                   "sigmoid sin sinc sinh sqrt square tan tanh trunc xlogy zero fill").split()


def _torch_function(name: str):
    """torch.exp_(x) is x.exp_()."""
    def function(input, *args, **kwargs):
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"{name}(input, ...) is input.{name}(...), in place."
    return function


def _python_map(op: str, function):
    """apply_ / map_ / map2_: a Python function called on each element (or each broadcast pair or triple)."""
    def method(self, *others_and_callable):
        *others, callable_ = others_and_callable
        if self.requires_grad or any(o.requires_grad for o in others):
            raise RuntimeError(f"Can't call {op}() on Variable that requires grad. Use var.detach().{op}() instead.")
        shape = self.shape
        columns = [self.reshape(-1).tolist()] + [o.expand(shape).reshape(-1).tolist() for o in others]
        values = [callable_(*items) for items in zip(*columns)]
        return self._inplace(op, lambda x: x.new_tensor(values).reshape(shape))

    method.__name__ = method.__qualname__ = op
    method.__doc__ = function
    return method


InPlaceMethods = type("InPlaceMethods", (), {
    "__slots__": (), "__module__": __name__,
    "__doc__": "Tensor's in-place pointwise methods, one per entry of INPLACE (mixed into gradlab.Tensor).",
    **{name + "_": in_place(name + "_", function) for name, function in INPLACE.items()},
    "apply_": _python_map("apply_", "x.apply_(f): every element replaced by f(element), in Python (slow: for small "
                                    "tensors and tests)."),
    "map_": _python_map("map_", "x.map_(y, f): every element replaced by f(x_i, y_i), y broadcast to x's shape."),
    "map2_": _python_map("map2_", "x.map2_(y, z, f): every element replaced by f(x_i, y_i, z_i)."),
})

TORCH_INPLACE = {name + "_": _torch_function(name + "_") for name in TORCH_FUNCTIONS}
__all__ = list(TORCH_INPLACE)
globals().update(TORCH_INPLACE)
