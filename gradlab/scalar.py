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

At the edges a Scalar gives what a float64 tensor gives (IEEE 754 arithmetic), where plain Python
would raise: 1 / 0 is inf, log(0) is -inf, sqrt(-1) and sin(inf) are nan, exp(1000) is inf.
"""
import math
import numbers
import sys

from .autograd.engine import BackwardStep


# --- float maths as the tensor ops do it: inf and nan where Python raises ------------------------

def _div(x, y):
    """x / y; dividing by 0 gives ±inf (nan for 0 / 0), as a float64 tensor does."""
    if y != 0:
        return x / y
    if x == 0 or math.isnan(x):
        return math.nan
    return math.copysign(math.inf, x) * math.copysign(1.0, y)


def _pow(base, exponent):
    """base ** exponent as C's pow (numpy's): ±inf past the largest float or for 0 to a negative
    power, nan for a negative base to a fractional power."""
    try:
        return math.pow(base, exponent)
    except OverflowError:
        return -math.inf if base < 0 and _odd_integer(exponent) else math.inf
    except ValueError:  # 0 to a negative power, or a negative base to a fractional one
        if base == 0:
            return math.copysign(math.inf, base) if _odd_integer(exponent) else math.inf
        return math.nan


def _odd_integer(y):
    return y.is_integer() and y % 2 == 1


def _exp(x):
    try:
        return math.exp(x)
    except OverflowError:  # x > 709.78...: beyond the largest float
        return math.inf


def _log(x):
    if x > 0 or math.isnan(x):
        return math.log(x)
    return -math.inf if x == 0 else math.nan


def _sin(x):
    return math.nan if math.isinf(x) else math.sin(x)


def _cos(x):
    return math.nan if math.isinf(x) else math.cos(x)


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
    """x / y: d/dx = 1/y and d/dy = -x/y**2 (x / 0 is ±inf, as for tensors)."""
    op = "/"
    derivative = "∂L/∂x = g / y;  ∂L/∂y = −g · x / y²"
    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return _div(x, y)
    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_values
        return _div(grad, y), _div(-grad * x, y * y)


class Pow(ScalarFunction):
    """x ** y: d/dx = y * x**(y-1) and d/dy = x**y * log(x).

    As for tensors: where y = 0 the base gets 0 (even at x = 0, not 0 · inf), and where x = 0 with
    y ≥ 0 the exponent gets 0; a negative base to a fractional power is nan.
    """
    op = "**"
    derivative = "∂L/∂base = g · exponent · base^(exponent − 1);  ∂L/∂exponent = g · out · log(base)"
    @staticmethod
    def forward(ctx, base, exponent):
        if exponent == 0.5 and not ctx.needs_input_grad[1]:  # x ** 0.5 is sqrt(x) for tensors (numpy's and
            out = math.nan if base < 0 else math.sqrt(base)  # PyTorch's shortcut): nan at -inf, -0 at -0
        else:
            out = _pow(base, exponent)
        ctx.save_for_backward(base, exponent, out)
        return out
    @staticmethod
    def backward(ctx, grad):
        base, exponent, out = ctx.saved_values
        wants_base, wants_exponent = ctx.needs_input_grad
        d_base = d_exponent = None
        if wants_base:
            d_base = grad * 0.0 if exponent == 0 else grad * exponent * _pow(base, exponent - 1)
        if wants_exponent:
            d_exponent = grad * out * (0.0 if base == 0 and exponent >= 0 else _log(base))
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
        out = _exp(x)
        ctx.save_for_backward(out)
        return out
    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_values
        return grad * out


class Log(ScalarFunction):
    """log(x) (natural log): d/dx = 1/x. log(0) is -inf and log of a negative number nan."""
    op = "log"
    derivative = "∂L/∂x = g / x"
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _log(x)
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_values
        return _div(grad, x)


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
        out = 1 / (1 + _exp(-x))  # exp(-x) = inf gives exactly 0, as the tensor kernel computes it
        ctx.save_for_backward(out)
        return out
    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_values
        return grad * out * (1 - out)


class ReLU(ScalarFunction):
    """relu(x) = max(0, x): the gradient passes where x > 0 and stops elsewhere (relu(nan) is nan)."""
    op = "relu"
    derivative = "∂L/∂x = g where x > 0, else 0"
    @staticmethod
    def forward(ctx, x):
        out = x if x > 0 or math.isnan(x) else 0.0
        ctx.save_for_backward(out)
        return out
    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_values
        return grad * (out > 0)


class Sin(ScalarFunction):
    """sin(x): d/dx = cos(x)."""
    op = "sin"
    derivative = "∂L/∂x = g · cos(x)"
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _sin(x)
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_values
        return grad * _cos(x)


class Cos(ScalarFunction):
    """cos(x): d/dx = -sin(x)."""
    op = "cos"
    derivative = "∂L/∂x = −g · sin(x)"
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _cos(x)
    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_values
        return -grad * _sin(x)


class Sqrt(ScalarFunction):
    """sqrt(x): d/dx = 1 / (2 * sqrt(x)), written in terms of the output: inf at 0 (0 / 0 = nan for
    an incoming gradient of 0, as for tensors and in PyTorch); sqrt of a negative number is nan."""
    op = "sqrt"
    derivative = "∂L/∂x = g / (2 · out)"
    @staticmethod
    def forward(ctx, x):
        out = math.nan if x < 0 else math.sqrt(x)
        ctx.save_for_backward(out)
        return out
    @staticmethod
    def backward(ctx, grad):
        (out,) = ctx.saved_values
        return _div(grad, out * 2)


def _float(number, where):
    """A real number as a float; an int too big for one is refused by name (not a bare OverflowError)."""
    try:
        return float(number)
    except OverflowError:
        raise OverflowError(f"{where}: an int of {len(str(abs(int(number))))} digits is too large for a float "
                            f"(the largest is about {sys.float_info.max:.3e})") from None


def _operand(other, method):
    """Let plain numbers into an operation as constants; refuse anything else."""
    if isinstance(other, Scalar):
        return other
    if isinstance(other, numbers.Real):
        return _float(other, f"Scalar.{method}")
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
        self.data = _float(data, "Scalar")
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

    def backward_steps(self, gradient=1.0):
        """Backpropagate ``gradient`` (d loss / d self) from this Scalar one node at a time, yielding a
        BackwardStep each.

        Nodes are visited outputs first, so a node's gradient is complete before it is passed on;
        the steps are the tensor engine's: ``grads_in`` is ``(grad,)``, ``grads_out`` has one
        gradient per parent (``targets``: the parents), and ``leaf`` is the node when it is an input. ``backward()`` is exactly
        this generator run to the end.
        """
        pending = {self: float(gradient)}  # gradient gathered so far in this pass, per node
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
            yield BackwardStep(index, node, (grad,), grads_out, node if node.grad_fn is None else None, node.parents)

    def backward(self, gradient=1.0):
        """Add gradient · d(self)/d(node) into ``node.grad`` for every node in the graph (as
        ``tensor.backward(gradient)``: the gradient of a loss with respect to self, 1 when self is it)."""
        for _ in self.backward_steps(gradient):
            pass

    def zero_grad(self):
        """Reset ``grad`` to 0.0 on every node in this Scalar's graph."""
        for node in self.topological_order():
            node.grad = 0.0
