"""The functional forms of the ops, re-exported by ``gradlab`` (``gradlab.exp(x)`` as ``torch.exp(x)``)."""

from .arithmetic import add, div, mul, neg, pow, sub

__all__ = ["add", "div", "mul", "neg", "pow", "sub"]
