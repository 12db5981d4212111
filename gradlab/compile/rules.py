"""Rules: hot ops lowered to array instructions of their own, instead of running as they are.

``RULES[FunctionClass] = rule``. A rule is called as ``rule(op, b, args, needs, wrap)`` with the
tape op, the program Builder, the op's arguments (``Ref(slot)`` for values, constants as they
are) and which arguments need a gradient. It emits the forward instructions and returns
``(output slots, emit_backward)``, where ``emit_backward(grad slots per output)`` emits the
backward and returns one gradient slot per argument (None where none is needed), each already
in its argument's shape. A rule may return None to leave the op to the generic path.

The built-in rules live beside this file, one family per file: rules_elementwise (+ − × ÷, ReLU,
GELU), rules_activation (sigmoid, tanh; split, unbind and stack, an LSTM's other ops), rules_reduce
(sum, mean), rules_linear, rules_loss (cross-entropy), rules_conv, rules_pool (max-pool), rules_norm
(layer norm); rules_fuse is the pass that runs elementwise chains as one numba kernel. Each keeps
a table of its own, merged here (so none of them imports this module).
"""

from __future__ import annotations

from .rules_elementwise import registrar

RULES: dict = {}
rule = registrar(RULES)  # @rule(MyFunction) registers a rule of your own for MyFunction


def _gather():
    """The built-in rules: each rules_*.py keeps a table of its own; they are merged here."""
    from . import (rules_activation, rules_conv, rules_elementwise, rules_linear, rules_loss, rules_norm, rules_pool,
                   rules_reduce)

    for module in (rules_elementwise, rules_activation, rules_reduce, rules_linear, rules_loss, rules_conv, rules_pool,
                   rules_norm):
        RULES.update(module.RULES)


_gather()
