"""Scalar: automatic differentiation on single Python floats.

Every arithmetic step on a Scalar records which operation made it and from
what, so the finished expression is a graph. ``backward()`` walks that graph
from the output back to the inputs, applying the chain rule one operation at
a time. The operations follow the shape of PyTorch's ``autograd.Function``,
so what you learn here carries over to the tensor engine unchanged.

>>> x, w = Scalar(2.0, "x"), Scalar(-3.0, "w")
>>> y = (x * w + 6).tanh()
>>> y.backward()
>>> w.grad
2.0
"""
import math
import numbers

from .autograd.engine import BackwardStep


class ScalarContext:
    """What one operation remembers between its forward and backward pass.

    As in PyTorch the context doubles as the graph node: ``out.grad_fn`` is
    the context its operation filled in, holding the inputs it came from.
    """

    def __init__(self, function, inputs):
        self.function = function
        self.inputs = inputs
        self.needs_input_grad = tuple(isinstance(x, Scalar) for x in inputs)
        self.saved_values = ()

    def save_for_backward(self, *values):
        self.saved_values = values

    @property
    def parents(self):
        return tuple(x for x in self.inputs if isinstance(x, Scalar))

    def __repr__(self):
        return f"<{self.function.__name__}Backward>"


class ScalarFunction:
    """One operation, in two halves kept side by side.

    ``forward`` turns input floats into an output float; ``backward`` turns
    the gradient of the output into one gradient per input: one link of the
    chain rule. ``apply`` runs forward and records the node in the graph.
    """

    op = ""
    derivative = ""  # the local rule in plain math ("∂L/∂x = g · out"), shown by the lab

    @staticmethod
    def forward(ctx, *inputs):
        raise NotImplementedError

    @staticmethod
    def backward(ctx, grad):
        raise NotImplementedError

    @classmethod
    def apply(cls, *inputs):
        ctx = ScalarContext(cls, inputs)
        values = (x.data if isinstance(x, Scalar) else x for x in inputs)
        out = Scalar(cls.forward(ctx, *values))
        out.grad_fn = ctx
        return out


class Add(ScalarFunction):
    """x + y: the gradient passes to both inputs unchanged."""
    op = "+"
    derivative = "∂L/∂x = g;  ∂L/∂y = g"
    @staticmethod
    def forward(ctx, x, y):
        return x + y
    @staticmethod
    def backward(ctx, grad):
        return grad, grad


class Sub(ScalarFunction):
    """x - y: the gradient passes to x unchanged and to y with its sign flipped."""
    op = "-"
    derivative = "∂L/∂x = g;  ∂L/∂y = −g"
    @staticmethod
    def forward(ctx, x, y):
        return x - y
    @staticmethod
    def backward(ctx, grad):
        return grad, -grad


class Mul(ScalarFunction):
    """x * y: each input receives the gradient times the other input."""
    op = "*"
    derivative = "∂L/∂x = g · y;  ∂L/∂y = g · x"
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y
    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_values
        return grad * y, grad * x


class Div(ScalarFunction):
    """x / y: d/dx = 1/y and d/dy = -x/y**2."""
    op = "/"
    derivative = "∂L/∂x = g / y;  ∂L/∂y = −g · x / y²"
    @staticmethod
    def forward(ctx, x, y):
        if y == 0:
            raise ZeroDivisionError(f"Scalar.__truediv__: cannot divide {x} by zero")
        ctx.save_for_backward(x, y)
        return x / y
    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_values
        return grad / y, -grad * x / (y * y)


def _power(base, exponent):
    """base ** exponent, with 0 to a negative power as inf (a slope that is vertical) instead of an error."""
    return math.inf if base == 0 and exponent < 0 else base ** exponent


class Pow(ScalarFunction):
    """x ** y: d/dx = y * x**(y-1) and d/dy = x**y * log(x)."""
    op = "**"
    derivative = "∂L/∂base = g · exponent · base^(exponent − 1);  ∂L/∂exponent = g · out · log(base)"
    @staticmethod
    def forward(ctx, base, exponent):
        if base == 0 and exponent < 0:
            raise ZeroDivisionError(
                f"Scalar.__pow__: cannot raise zero to a negative power ({exponent})")
        if base < 0 and not float(exponent).is_integer():
            raise ValueError(f"Scalar.__pow__: {base} ** {exponent} is not a real number")
        out = base ** exponent
        ctx.save_for_backward(base, exponent, out)
        return out
    @staticmethod
    def backward(ctx, grad):
        base, exponent, out = ctx.saved_values
        wants_base, wants_exponent = ctx.needs_input_grad
        d_base = grad * exponent * _power(base, exponent - 1) if wants_base else None
        d_exponent = None
        if wants_exponent and base > 0:
            d_exponent = grad * out * math.log(base)
        elif wants_exponent:  # y -> x**y is flat at x = 0 and has no real slope for x < 0
            d_exponent = 0.0 if base == 0 else math.nan
        return d_base, d_exponent


class Neg(ScalarFunction):
    """-x: the gradient comes back with its sign flipped."""
    op = "neg"
    derivative = "∂L/∂x = −g"
    @staticmethod
    def forward(ctx, x):
        return -x
    @staticmethod
    def backward(ctx, grad):
        return -grad


class Exp(ScalarFunction):
    """exp(x) is its own derivative, so backward reuses the output."""
    op = "exp"
    derivative = "∂L/∂x = g · out"
    @staticmethod
    def forward(ctx, x):
        out = math.exp(x)
        ctx.save_for_backward(out)
        return out
    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_values
        return grad * out


class Log(ScalarFunction):
    """log(x) (natural log): d/dx = 1/x."""
    op = "log"
    derivative = "∂L/∂x = g / x"
    @staticmethod
    def forward(ctx, x):
        if x <= 0:
            raise ValueError(f"Scalar.log: log is only defined for positive numbers, got {x}")
        ctx.save_for_backward(x)
        return math.log(x)
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_values
        return grad / x


class Tanh(ScalarFunction):
    """tanh(x): d/dx = 1 - tanh(x)**2, written in terms of the output."""
    op = "tanh"
    derivative = "∂L/∂x = g · (1 − out²)"
    @staticmethod
    def forward(ctx, x):
        out = math.tanh(x)
        ctx.save_for_backward(out)
        return out
    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_values
        return grad * (1 - out * out)


class Sigmoid(ScalarFunction):
    """sigmoid(x) = 1 / (1 + exp(-x)): d/dx = out * (1 - out)."""
    op = "sigmoid"
    derivative = "∂L/∂x = g · out · (1 − out)"
    @staticmethod
    def forward(ctx, x):
        out = 0.5 * (1 + math.tanh(x / 2))  # same function, but exp(-x) cannot overflow
        ctx.save_for_backward(out)
        return out
    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_values
        return grad * out * (1 - out)


class ReLU(ScalarFunction):
    """relu(x) = max(0, x): the gradient passes where x > 0 and stops elsewhere."""
    op = "relu"
    derivative = "∂L/∂x = g where x > 0, else 0"
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return max(0.0, x)
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_values
        return grad if x > 0 else 0.0


class Sin(ScalarFunction):
    """sin(x): d/dx = cos(x)."""
    op = "sin"
    derivative = "∂L/∂x = g · cos(x)"
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return math.sin(x)
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_values
        return grad * math.cos(x)


class Cos(ScalarFunction):
    """cos(x): d/dx = -sin(x)."""
    op = "cos"
    derivative = "∂L/∂x = −g · sin(x)"
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return math.cos(x)
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_values
        return -grad * math.sin(x)


class Sqrt(ScalarFunction):
    """sqrt(x): d/dx = 1 / (2 * sqrt(x)), written in terms of the output."""
    op = "sqrt"
    derivative = "∂L/∂x = g / (2 · out)"
    @staticmethod
    def forward(ctx, x):
        if x < 0:
            raise ValueError(
                f"Scalar.sqrt: sqrt is only defined for non-negative numbers, got {x}")
        out = math.sqrt(x)
        ctx.save_for_backward(out)
        return out
    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_values
        return grad * math.inf if out == 0 else grad / (2 * out)  # vertical at 0, as in PyTorch


def _operand(other, method):
    """Let plain numbers into an operation as constants; refuse anything else."""
    if isinstance(other, Scalar):
        return other
    if isinstance(other, numbers.Real):
        return float(other)
    raise TypeError(f"Scalar.{method}: cannot combine Scalar with {type(other).__name__}; "
                    "use a float, an int or a Scalar")


class Scalar:
    """A float that remembers how it was computed, and collects its gradient.

    ``grad`` starts at 0.0 and ``backward()`` adds into it, so gradients
    accumulate over calls exactly as in PyTorch; ``zero_grad()`` clears them.
    """

    def __init__(self, data, label=""):
        if not isinstance(data, numbers.Real):
            raise TypeError(f"Scalar: cannot make a Scalar from {type(data).__name__}; "
                            "use a float or an int")
        self.data = float(data)
        self.grad = 0.0
        self.grad_fn = None
        self.label = label

    @property
    def op(self):
        return self.grad_fn.function.op if self.grad_fn else ""

    @property
    def parents(self):
        return self.grad_fn.parents if self.grad_fn else ()

    def __repr__(self):
        label = f", label={self.label!r}" if self.label else ""
        return f"Scalar(data={self.data:.4f}, grad={self.grad:.4f}{label})"

    def __add__(self, other):
        return Add.apply(self, _operand(other, "__add__"))
    def __radd__(self, other):
        return Add.apply(_operand(other, "__radd__"), self)
    def __sub__(self, other):
        return Sub.apply(self, _operand(other, "__sub__"))
    def __rsub__(self, other):
        return Sub.apply(_operand(other, "__rsub__"), self)
    def __mul__(self, other):
        return Mul.apply(self, _operand(other, "__mul__"))
    def __rmul__(self, other):
        return Mul.apply(_operand(other, "__rmul__"), self)
    def __truediv__(self, other):
        return Div.apply(self, _operand(other, "__truediv__"))
    def __rtruediv__(self, other):
        return Div.apply(_operand(other, "__rtruediv__"), self)
    def __pow__(self, other):
        return Pow.apply(self, _operand(other, "__pow__"))
    def __rpow__(self, other):
        return Pow.apply(_operand(other, "__rpow__"), self)
    def __neg__(self):
        return Neg.apply(self)
    def exp(self):
        return Exp.apply(self)
    def log(self):
        return Log.apply(self)
    def tanh(self):
        return Tanh.apply(self)
    def sigmoid(self):
        return Sigmoid.apply(self)
    def relu(self):
        return ReLU.apply(self)
    def sin(self):
        return Sin.apply(self)
    def cos(self):
        return Cos.apply(self)
    def sqrt(self):
        return Sqrt.apply(self)

    def topological_order(self):
        """Every node this Scalar depends on, itself last, inputs before outputs.

        A depth-first search with an explicit stack instead of recursion, so
        a chain of any length fits: a node is listed once all its parents are.
        """
        order, seen = [], set()
        stack = [(self, False)]
        while stack:
            node, parents_done = stack.pop()
            if parents_done:
                order.append(node)
            elif node not in seen:
                seen.add(node)
                stack.append((node, True))
                stack.extend((p, False) for p in node.parents if p not in seen)
        return order

    def backward_steps(self):
        """Backpropagate from this Scalar one node at a time, yielding a BackwardStep each.

        Nodes are visited outputs first, so a node's gradient is complete before it is passed on;
        the steps are the tensor engine's: ``grads_in`` is ``(grad,)``, ``grads_out`` has one
        gradient per parent, and ``leaf`` is the node when it is an input. ``backward()`` is exactly
        this generator run to the end.
        """
        pending = {self: 1.0}  # gradient gathered so far in this pass, per node
        for index, node in enumerate(reversed(self.topological_order())):
            grad = pending.pop(node, 0.0)
            node.grad += grad
            grads_out = ()
            if node.grad_fn is not None:
                grads = node.grad_fn.function.backward(node.grad_fn, grad)
                grads = grads if isinstance(grads, tuple) else (grads,)
                grads_out = tuple(g for x, g in zip(node.grad_fn.inputs, grads) if isinstance(x, Scalar))
                for parent, g in zip(node.parents, grads_out):
                    pending[parent] = pending.get(parent, 0.0) + g
            yield BackwardStep(index, node, (grad,), grads_out, node if node.grad_fn is None else None)

    def backward(self):
        """Add d(self)/d(node) into ``node.grad`` for every node in the graph."""
        for _ in self.backward_steps():
            pass

    def zero_grad(self):
        """Reset ``grad`` to 0.0 on every node in this Scalar's graph."""
        for node in self.topological_order():
            node.grad = 0.0
