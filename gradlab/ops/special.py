"""Special functions: the gamma family, erfc and erfinv, Bessel I₀/I₁, xlogy, logit, entropy terms.

The forwards are the float64 kernels of ``special_kernels``; each derivative is again a special
function (d lgamma = digamma, d digamma = polygamma(1), d i0 = i1, ...), so the gradients are
Tensor formulas that can be differentiated again. ``gradlab.special`` re-exports these under
``torch.special``'s names.
"""

from __future__ import annotations

import math

from ..autograd.function import name_nodes
from ._common import describe
from .binary import binary, number_first
from .elementwise import elementwise
from . import special_kernels as kernels

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_SQRT_PI_OVER_TWO = math.sqrt(math.pi) / 2.0
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_LOG_PI = math.log(math.pi)


def _xlogy(log):
    """x · log(y) (or log1p(y)), 0 where x = 0 unless y is NaN: the convention that makes 0 · log 0 = 0."""
    def compute(b, x, y):
        if not hasattr(y, "shape"):  # a number as an array of x's dtype: where() would widen it to float64
            y = b.full((), y, b.dtype_of(x))
        zero = b.eq(x, 0)
        product = b.mul(x, getattr(b, log)(b.where(zero, 1.0, y)))  # 1 stands in where x = 0: no 0 · (−inf)
        return b.where(b.isnan(y), math.nan, b.where(zero, 0.0, product))
    return compute


def _entr(b, x):
    """−x · log(x), 0 at x = 0 and −inf for x < 0 (outside the domain of an entropy term)."""
    positive = b.where(b.gt(x, 0), x, 1.0)
    out = b.where(b.eq(x, 0), 0.0, b.neg(b.mul(positive, b.log(positive))))
    return b.where(b.lt(x, 0), -math.inf, b.where(b.isnan(x), math.nan, out))


def _logit(b, x, eps):
    """log(p / (1 − p)), p = x clamped to [eps, 1 − eps] when eps is given."""
    if eps is not None:
        x = b.minimum(b.maximum(x, eps), 1.0 - eps)
    return b.log(b.div(x, b.sub(1.0, x)))


def _logit_gradient(g, x, out, eps):
    """g / (x (1 − x)) inside [eps, 1 − eps]; 0 outside it (NaN outside [0, 1] without eps), as in PyTorch."""
    lo, hi = (0.0, 1.0) if eps is None else (eps, 1.0 - eps)
    outside = (x < lo) | (x > hi)
    return (g / (x * (1 - x))).masked_fill(outside, math.nan if eps is None else 0.0)


def _ndtr(b, x):
    """Φ(x) = erfc(−x/√2) / 2: through erfc, so the lower tail keeps its relative precision."""
    return b.mul(b.erfc(b.mul(x, -0.7071067811865476)), 0.5)


def _i1_gradient(g, x, out):
    """I₁'(x) = I₀(x) − I₁(x)/x, whose limit at 0 is 1/2."""
    safe = x.masked_fill(x == 0, 1.0)
    return g * (i0(x) - out / safe).masked_fill(x == 0, 0.5)


def _i1e_gradient(g, x, out):
    """(e^−|x| I₁)' = e^−|x| I₀ − e^−|x| I₁ · (sign(x) + 1/x), 1/2 at 0."""
    safe = x.masked_fill(x == 0, 1.0)
    return g * (i0e(x) - out * (x.sign() + 1 / safe)).masked_fill(x == 0, 0.5)


Lgamma = elementwise("lgamma", kernels.lgamma, lambda g, x, y: g * digamma(x), saves="x",
                     doc="lgamma(x) = log|Γ(x)|: the gradient is multiplied by digamma(x).",
                     derivative="∂L/∂x = g · ψ(x)")
Digamma = elementwise("digamma", kernels.digamma, lambda g, x, y: g * polygamma(1, x), saves="x",
                      doc="digamma(x) = ψ(x) = Γ'(x)/Γ(x): the gradient is multiplied by the trigamma ψ'(x).",
                      derivative="∂L/∂x = g · ψ⁽¹⁾(x)")
Polygamma = elementwise("polygamma", kernels.polygamma, lambda g, x, y, n: g * polygamma(n + 1, x), saves="x",
                        doc="polygamma(n, x) = ψ⁽ⁿ⁾(x): the gradient is multiplied by the next one, ψ⁽ⁿ⁺¹⁾(x).",
                        derivative="∂L/∂x = g · ψ⁽ⁿ⁺¹⁾(x)")
Erfc = elementwise("erfc", "erfc", lambda g, x, y: g * (-x * x).exp() * -_TWO_OVER_SQRT_PI, saves="x",
                   doc="erfc(x) = 1 − erf(x): the gradient is multiplied by −2/√π · exp(−x²).",
                   derivative="∂L/∂x = −g · 2/√π · exp(−x²)")
Erfinv = elementwise("erfinv", kernels.erfinv, lambda g, x, y: g * (y * y).exp() * _SQRT_PI_OVER_TWO, saves="out",
                     doc="erfinv(x), the inverse of erf: the gradient is multiplied by √π/2 · exp(out²).",
                     derivative="∂L/∂x = g · √π/2 · exp(out²)")
I0 = elementwise("i0", kernels.i0, lambda g, x, y: g * i1(x), saves="x",
                 doc="i0(x), the modified Bessel function I₀: the gradient is multiplied by I₁(x).",
                 derivative="∂L/∂x = g · I₁(x)")
I0e = elementwise("i0e", kernels.i0e, lambda g, x, y: g * (i1e(x) - x.sign() * y), saves="x out",
                  doc="i0e(x) = e^−|x| I₀(x): the gradient is multiplied by e^−|x| I₁(x) − sign(x) · out.",
                  derivative="∂L/∂x = g · (i1e(x) − sign(x) · out)")
I1 = elementwise("i1", kernels.i1, _i1_gradient, saves="x out",
                 doc="i1(x), the modified Bessel function I₁: the gradient is multiplied by I₀(x) − out / x.",
                 derivative="∂L/∂x = g · (I₀(x) − out / x), g / 2 at x = 0")
I1e = elementwise("i1e", kernels.i1e, _i1e_gradient, saves="x out",
                  doc="i1e(x) = e^−|x| I₁(x): the gradient is multiplied by i0e(x) − out · (sign(x) + 1/x).",
                  derivative="∂L/∂x = g · (i0e(x) − out · (sign(x) + 1/x)), g / 2 at x = 0")
Entr = elementwise("entr", _entr, lambda g, x, y: -g * (x.log() + 1), saves="x",
                   doc="entr(x) = −x log x: the gradient is multiplied by −(1 + log x).",
                   derivative="∂L/∂x = −g · (1 + log x)")
Logit = elementwise("logit", _logit, _logit_gradient, saves="x",
                    doc="logit(x) = log(x / (1 − x)): the gradient is divided by x (1 − x) (0 where eps clamps).",
                    derivative="∂L/∂x = g / (x (1 − x)) for eps ≤ x ≤ 1 − eps, else 0")
Ndtr = elementwise("ndtr", _ndtr, lambda g, x, y: g * (x * x * -0.5).exp() * _INV_SQRT_2PI, saves="x",
                   doc="ndtr(x) = Φ(x), the standard normal CDF: the gradient is multiplied by the density φ(x).",
                   derivative="∂L/∂x = g · exp(−x²/2) / √(2π)")
Erfcx = elementwise("erfcx", kernels.erfcx, lambda g, x, y: g * (x * y * 2 - _TWO_OVER_SQRT_PI), saves="x out",
                    doc="erfcx(x) = exp(x²) · erfc(x): the gradient is multiplied by 2x · out − 2/√π.",
                    derivative="∂L/∂x = g · (2x · out − 2/√π)")
Ndtri = elementwise("ndtri", kernels.ndtri, lambda g, x, y: g * (y * y * 0.5).exp() * _SQRT_2PI, saves="out",
                    doc="ndtri(p) = Φ⁻¹(p), the normal quantile: the gradient is divided by the density at the output.",
                    derivative="∂L/∂p = g · √(2π) · exp(out²/2)")
LogNdtr = elementwise("log_ndtr", kernels.log_ndtr,
                      lambda g, x, y: g * (x * x * -0.5 - y).exp() * _INV_SQRT_2PI, saves="x out",
                      doc="log_ndtr(x) = log Φ(x): the gradient is multiplied by φ(x) / Φ(x), the inverse Mills ratio.",
                      derivative="∂L/∂x = g · exp(−x²/2 − out) / √(2π)")

Xlogy = binary("xlogy", _xlogy("log"),
               lambda g, x, y, out: xlogy(g, y).masked_fill((x == 0) & (y <= 0), 0.0), lambda g, x, y, out: g * x / y,
               doc="xlogy(x, y) = x · log y (0 where x = 0): x gets g · log y, y gets g · x / y.",
               derivative="∂L/∂x = g · log y (0 where x = 0 and y ≤ 0);  ∂L/∂y = g · x / y")
Xlog1py = binary("xlog1py", _xlogy("log1p"),
                 lambda g, x, y, out: xlog1py(g, y).masked_fill((x == 0) & (y <= -1), 0.0),
                 lambda g, x, y, out: g * x / (y + 1),
                 doc="xlog1py(x, y) = x · log(1 + y) (0 where x = 0): x gets g · log(1 + y), y gets g · x / (1 + y).",
                 derivative="∂L/∂x = g · log(1 + y) (0 where x = 0 and y ≤ −1);  ∂L/∂y = g · x / (1 + y)")
Zeta = binary("zeta", kernels.hurwitz_zeta, None, lambda g, s, q, out: -g * s * zeta(s + 1, q),
              doc="zeta(s, q), the Hurwitz zeta Σ (q + k)^−s: q gets −g · s · ζ(s + 1, q) (s none, as in PyTorch).",
              derivative="∂L/∂q = −g · s · ζ(s + 1, q)")

for _function, _name in ((I0e, "SpecialI0EBackward0"), (I1, "SpecialI1Backward0"), (I1e, "SpecialI1EBackward0"),
                         (Entr, "SpecialEntrBackward0"), (Erfcx, "SpecialErfcxBackward0"),
                         (Ndtri, "SpecialNdtriBackward0"), (LogNdtr, "SpecialLogNdtrBackward0"),
                         (Xlog1py, "SpecialXlog1PyBackward0"), (Zeta, "SpecialZetaBackward0")):
    name_nodes(_function, _name)  # PyTorch's names for the torch.special ops' nodes


def _gamma_density(g, a, x, out):
    """d/dx P(a, x) = x^(a−1) e^−x / Γ(a), the gamma density."""
    return g * ((a - 1) * x.log() - x - lgamma(a)).exp()


def _no_shape_gradient(op):
    def refuse(g, a, x, out):
        raise NotImplementedError(f"{op}: the derivative with respect to input (the shape a) is not implemented, as "
                                  "in PyTorch; detach it, or pass it without requires_grad")
    return refuse


Igamma = binary("igamma", lambda b, a, x: kernels.incomplete_gamma(b, a, x, False), _no_shape_gradient("igamma"),
                _gamma_density, numbers=False,
                doc="igamma(a, x) = P(a, x), the regularized lower incomplete gamma: x gets g times the gamma density.",
                derivative="∂L/∂x = g · x^(a−1) e^−x / Γ(a)")
Igammac = binary("igammac", lambda b, a, x: kernels.incomplete_gamma(b, a, x, True), _no_shape_gradient("igammac"),
                 lambda g, a, x, out: -_gamma_density(g, a, x, out), numbers=False,
                 doc="igammac(a, x) = Q(a, x) = 1 − P(a, x): x gets minus g times the gamma density.",
                 derivative="∂L/∂x = −g · x^(a−1) e^−x / Γ(a)")


def igamma(input, other):
    """The regularized lower incomplete gamma function P(input, other) = γ(a, x) / Γ(a)."""
    return Igamma.apply(input, other)


def igammac(input, other):
    """The regularized upper incomplete gamma function Q(input, other) = 1 − P(input, other)."""
    return Igammac.apply(input, other)


def _binary_any_side(function, op):
    """A two-argument special function that takes a Python number on either side (as torch.xlogy)."""
    def call(input, other):
        if not hasattr(input, "dtype"):
            input = number_first(op, input, other)
        return function.apply(input, other)
    call.__name__ = call.__qualname__ = op
    return call


xlogy = _binary_any_side(Xlogy, "xlogy")
xlogy.__doc__ = "input · log(other), and 0 where input is 0 (so 0 · log 0 = 0); NaN where other is NaN."
xlog1py = _binary_any_side(Xlog1py, "xlog1py")
xlog1py.__doc__ = "input · log1p(other), and 0 where input is 0."
zeta = _binary_any_side(Zeta, "zeta")
zeta.__doc__ = "The Hurwitz zeta function ζ(input, other) = Σ_k (other + k)^−input."


def lgamma(input):
    """log|Γ(x)|, the log of the gamma function's absolute value."""
    return Lgamma.apply(input)


def digamma(input):
    """ψ(x), the derivative of lgamma."""
    return Digamma.apply(input)


def polygamma(n, input):
    """ψ⁽ⁿ⁾(x), the n-th derivative of digamma (n = 0 is digamma itself)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise RuntimeError(f"polygamma(n, x) does not support negative n or a non-integer n (got n={n!r}); "
                           "n counts derivatives of digamma: 0, 1, 2, ...")
    return Polygamma.apply(input, n)


def mvlgamma(input, p):
    """The multivariate log-gamma of dimension p: Σᵢ lgamma(x − i/2) + p(p − 1)/4 · log π."""
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        raise RuntimeError(f"mvlgamma: p has to be greater than or equal to 1, got p={p!r}")
    x = input if input.dtype.is_floating_point else input.float()
    if not bool((x > (p - 1) / 2).all()):
        raise RuntimeError(f"mvlgamma: All elements must be greater than (p-1)/2 = {(p - 1) / 2} for p={p} "
                           f"({describe(input)}); the function is only defined there")
    total = lgamma(x)
    for i in range(1, p):
        total = total + lgamma(x - i / 2)
    return total + p * (p - 1) / 4 * _LOG_PI


def erfc(input):
    """1 − erf(x), accurate where erf is close to 1."""
    return Erfc.apply(input)


def erfinv(input):
    """The inverse error function: erfinv(erf(y)) = y, ±inf at ±1, NaN outside [−1, 1]."""
    return Erfinv.apply(input)


def i0(input):
    """I₀(x), the modified Bessel function of the first kind of order 0."""
    return I0.apply(input)


def i0e(input):
    return I0e.apply(input)


def i1(input):
    return I1.apply(input)


def i1e(input):
    return I1e.apply(input)


def entr(input):
    return Entr.apply(input)


def ndtr(input):
    return Ndtr.apply(input)


def erfcx(input):
    """exp(x²) · erfc(x), without the underflow of erfc for large x."""
    return Erfcx.apply(input)


def ndtri(input):
    """The inverse of ndtr: the x with Φ(x) = p."""
    return Ndtri.apply(input)


def log_ndtr(input):
    """log Φ(x), finite far into the lower tail where Φ itself underflows."""
    return LogNdtr.apply(input)


def logit(input, eps=None):
    """log(p / (1 − p)), the inverse of sigmoid; eps clamps p to [eps, 1 − eps] first."""
    return Logit.apply(input, eps)


def multigammaln(input, p):
    """torch.special.multigammaln: mvlgamma(input, p)."""
    return mvlgamma(input, p)


class SpecialMethods:
    """Tensor's special-function methods (mixed into gradlab.Tensor)."""

    __slots__ = ()

    lgamma, digamma, erfc, erfinv, i0, logit = lgamma, digamma, erfc, erfinv, i0, logit
    xlogy, mvlgamma = xlogy, mvlgamma
    igamma, igammac = igamma, igammac

    def polygamma(self, n):
        """x.polygamma(n) is polygamma(n, x)."""
        return polygamma(n, self)
