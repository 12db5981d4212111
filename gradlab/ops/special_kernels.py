"""Gamma-family and Bessel kernels composed from backend primitives, in float64.

NumPy has no lgamma, digamma, polygamma, erfinv or i1, so they are built here the classical way:
a recurrence shifts the argument up to where an asymptotic (Stirling / Euler–Maclaurin) series
is accurate to float64, a reflection formula handles negative arguments, and erfinv polishes a
rational first guess with Newton steps on erf (erfc in the tails). Each takes and returns a
backend array; narrower floats are computed in float64 and rounded once at the end.
"""

from __future__ import annotations

import math

from ..dtypes import float64

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_STIRLING = (1 / 12, -1 / 360, 1 / 1260, -1 / 1680, 1 / 1188, -691 / 360360, 1 / 156)  # x^-1, x^-3, ...
_DIGAMMA = (1 / 12, -1 / 120, 1 / 252, -1 / 240, 1 / 132, -691 / 32760, 1 / 12)  # B_2k / 2k: x^-2, x^-4, ...
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510, 43867 / 798,
              -174611 / 330, 854513 / 138, -236364091 / 2730)  # B_2, B_4, ..., B_24
_SHIFT = 10.0  # the asymptotic series start here: their next terms are below 1e-16 of the result


def in_float64(kernel):
    """Run a float64 kernel on an array of any float dtype, returning that dtype."""
    def run(backend, a, *params):
        dtype = backend.dtype_of(a)
        out = kernel(backend, a if dtype is float64 else backend.astype(a, float64), *params)
        return out if dtype is float64 else backend.astype(out, dtype)

    run.__name__, run.__doc__ = kernel.__name__, kernel.__doc__
    return run


def _shift_up(b, x):
    """(z, product): z = x + n ≥ 10 for 0 < x, and the product x (x + 1) ... (x + n − 1) (the recurrence)."""
    z, product = x, b.ones(x.shape, float64)
    for _ in range(int(_SHIFT)):
        low = b.lt(z, _SHIFT)
        product = b.where(low, b.mul(product, z), product)
        z = b.where(low, b.add(z, 1.0), z)
    return z, product


def _polynomial(b, coefficients, v):
    """Σ c_k v^k for k = 0, 1, ... (Horner's rule)."""
    out = b.full(v.shape, coefficients[-1], float64)
    for c in coefficients[-2::-1]:
        out = b.add(b.mul(out, v), c)
    return out


def _sin_pi(b, x):
    """sin(πx) with the argument reduced first, so large x keep their digits (exact zeros at integers)."""
    r = b.sub(x, b.mul(b.round(b.mul(x, 0.5)), 2.0))  # x mod 2 in [-1, 1], exact
    return b.where(b.eq(r, b.round(r)), 0.0, b.sin(b.mul(r, math.pi)))


def _tan_pi(b, x):
    """tan(πx) from x mod 1 (tan has period π), NaN at integers where PyTorch's digamma is NaN."""
    r = b.sub(x, b.floor(x))
    return b.where(b.eq(r, 0), math.nan, b.tan(b.mul(r, math.pi)))


@in_float64
def lgamma(b, x):
    """log|Γ(x)|: shift to x ≥ 10, Stirling's series there, reflection log(π / |sin πx|) − lgamma(1 − x) for x < 0."""
    negative = b.lt(x, 0)
    y = b.where(negative, b.sub(1.0, x), x)  # 1 − x > 1 where x < 0
    z, product = _shift_up(b, b.where(b.isinf(y), _SHIFT, y))
    inv = b.div(1.0, z)
    series = b.mul(_polynomial(b, _STIRLING, b.mul(inv, inv)), inv)
    stirling = b.add(b.sub(b.mul(b.sub(z, 0.5), b.log(z)), z), b.add(series, _HALF_LOG_2PI))
    positive = b.where(b.isinf(y), math.inf, b.sub(stirling, b.log(product)))
    reflect = b.logical_and(negative, b.logical_not(b.isinf(x)))  # the other elements get harmless stand-ins
    sin_pi = b.abs(_sin_pi(b, b.where(reflect, x, 0.5)))
    reflected = b.sub(b.sub(math.log(math.pi), b.log(sin_pi)), b.where(reflect, positive, 0.0))
    out = b.where(negative, b.where(b.isinf(x), math.inf, reflected), positive)
    return b.where(b.logical_or(b.eq(x, 1.0), b.eq(x, 2.0)), 0.0, out)  # Γ(1) = Γ(2) = 1 exactly


@in_float64
def digamma(b, x):
    """ψ(x) = d/dx log Γ(x): ψ(x) = ψ(x + n) − Σ 1/(x + k), the asymptotic series at x + n ≥ 10,
    reflection for x < 0."""
    negative = b.lt(x, 0)
    y = b.where(negative, b.sub(1.0, x), x)
    z, shifted = y, b.zeros(x.shape, float64)
    for _ in range(int(_SHIFT)):
        low = b.lt(z, _SHIFT)
        shifted = b.where(low, b.add(shifted, b.div(1.0, b.where(low, z, 1.0))), shifted)
        z = b.where(low, b.add(z, 1.0), z)
    inv = b.div(1.0, z)
    inv2 = b.mul(inv, inv)
    series = b.sub(b.sub(b.log(z), b.mul(inv, 0.5)), b.mul(_polynomial(b, _DIGAMMA, inv2), inv2))
    positive = b.sub(series, shifted)
    finite_negative = b.logical_and(negative, b.logical_not(b.isinf(x)))
    reflected = b.sub(positive, b.div(math.pi, _tan_pi(b, b.where(finite_negative, x, 0.5))))
    out = b.where(negative, reflected, positive)
    out = b.where(b.eq(x, math.inf), math.inf, b.where(b.eq(x, -math.inf), math.nan, out))
    # ψ has a pole at 0; PyTorch signs it as −∞ at +0 and +∞ at −0
    return b.where(b.eq(x, 0), b.copysign(math.inf, b.neg(x)), out)


_DIRECT_LIMIT = 1e4  # q below −10⁴ would need that many direct terms: NaN there instead


def _hurwitz_zeta(b, s, q):
    """ζ(s, q) = Σ_k (q + k)^−s by Euler–Maclaurin (as Cephes does it): direct terms until q + n ≥ 10,
    then the integral, half the last term and the Bernoulli corrections. s and q are arrays or
    numbers (broadcast); q < 0 works for integer s, where the terms are defined."""
    s = b.add(b.zeros(getattr(q, "shape", ()), float64), s)  # both float64 arrays in the broadcast shape
    q = b.add(b.zeros(s.shape, float64), q)
    pole = b.logical_or(b.eq(s, 1.0), b.logical_and(b.le(q, 0), b.eq(q, b.floor(q))))
    undefined = b.logical_or(b.logical_or(b.lt(s, 1.0), b.isnan(b.add(s, q))),
                             b.logical_or(b.lt(q, -_DIRECT_LIMIT), b.logical_and(b.lt(q, 0), b.ne(s, b.floor(s)))))
    special = b.logical_or(b.logical_or(pole, undefined), b.logical_or(b.isinf(s), b.isinf(q)))
    s, q = b.where(special, 2.0, s), b.where(special, 1.0, q)  # stand-ins, replaced below
    minus_s = b.neg(s)
    a, total = q, b.zeros(q.shape, float64)
    for _ in range(int(_SHIFT)):
        total = b.add(total, b.pow(a, minus_s))
        a = b.add(a, 1.0)
    while b.any_true(b.lt(a, _SHIFT)):  # negative q need more direct terms
        low = b.lt(a, _SHIFT)
        total = b.where(low, b.add(total, b.pow(a, minus_s)), total)
        a = b.where(low, b.add(a, 1.0), a)
    tail = b.add(b.div(b.pow(a, b.sub(1.0, s)), b.sub(s, 1.0)), b.mul(b.pow(a, minus_s), 0.5))
    power, rising, factorial = b.pow(a, b.sub(minus_s, 1.0)), s, 2.0
    inv = b.div(1.0, a)
    inv2 = b.mul(inv, inv)
    for k, bernoulli in enumerate(_BERNOULLI, start=1):
        tail = b.add(tail, b.mul(b.mul(power, rising), bernoulli / factorial))
        power = b.mul(power, inv2)
        rising = b.mul(rising, b.mul(b.add(s, 2 * k - 1), b.add(s, 2 * k)))
        factorial *= (2 * k + 1) * (2 * k + 2)
    out = b.where(special, 0.0, b.add(total, tail))  # q = +inf or s = +inf (with q > 1): every term is 0
    return b.where(undefined, math.nan, b.where(pole, math.inf, out))


@in_float64
def polygamma(b, x, n: int):
    """ψ⁽ⁿ⁾(x) = (−1)ⁿ⁺¹ n! ζ(n + 1, x) for n ≥ 1; ψ itself for n = 0."""
    if n == 0:
        return digamma(b, x)
    sign = 1.0 if n % 2 else -1.0
    return b.mul(_hurwitz_zeta(b, float(n + 1), x), sign * math.factorial(n))


def hurwitz_zeta(b, x, q):
    """ζ(x, q), the Hurwitz zeta function, for arrays (or a number and an array) of one float dtype."""
    dtype = b.dtype_of(x if hasattr(x, "shape") else q)
    out = _hurwitz_zeta(b, x, q)
    return out if dtype is float64 else b.astype(out, dtype)


# Giles (2010), "Approximating the erfinv function": a float32-accurate first guess, w = −log(1 − x²)
_GILES_CENTRAL = (1.50140941, 0.246640727, -0.00417768164, -0.00125372503, 0.00021858087, -4.39150654e-06,
                  -3.5233877e-06, 3.43273939e-07, 2.81022636e-08)  # in w − 2.5, for w < 5
_GILES_TAIL = (2.83297682, 1.00167406, 0.00943887047, -0.0076224613, 0.00573950773, -0.00367342844,
               0.00134934322, 0.000100950558, -0.000200214257)  # in √w − 3
_TWO_OVER_SQRT_PI = 2 / math.sqrt(math.pi)


@in_float64
def erfinv(b, x):
    """erf⁻¹(x): Giles' guess, then Newton steps on erf(y) = |x| (on log erfc(y) = log(1 − |x|) for
    |x| > 1/2, where 1 − |x| is exact), so the result is accurate to float64 even near ±1."""
    s = b.abs(x)
    inside = b.lt(s, 1.0)  # NaN compares false, so it is not inside either
    t = b.where(inside, s, 0.5)
    w = b.neg(b.log(b.mul(b.sub(1.0, t), b.add(1.0, t))))
    central = _polynomial(b, _GILES_CENTRAL, b.sub(w, 2.5))
    tail = _polynomial(b, _GILES_TAIL, b.sub(b.sqrt(w), 3.0))
    y = b.mul(b.where(b.lt(w, 5.0), central, tail), t)
    upper = b.gt(t, 0.5)
    log_complement = b.log(b.sub(1.0, t))
    for _ in range(4):
        slope = b.mul(b.exp(b.neg(b.mul(y, y))), _TWO_OVER_SQRT_PI)
        central_step = b.div(b.sub(b.erf(y), t), slope)
        erfc = b.erfc(y)  # in the tails Newton works on log erfc(y) = log(1 − |x|), which is nearly quadratic
        tail_step = b.div(b.mul(b.sub(log_complement, b.log(erfc)), erfc), slope)
        y = b.sub(y, b.where(upper, tail_step, central_step))
    y = b.copysign(y, x)
    out = b.where(inside, y, b.where(b.eq(s, 1.0), b.copysign(math.inf, x), math.nan))
    return out


def _bessel_series(b, x, nu: int, terms: int = 60):
    """I_ν(x) = Σ (x/2)^(2k+ν) / (k! (k+ν)!) for 0 ≤ x ≤ 30: positive terms, no cancellation."""
    half = b.mul(x, 0.5)
    quarter = b.mul(half, half)
    term = half if nu == 1 else b.ones(x.shape, float64)
    total = term
    for k in range(1, terms):
        term = b.mul(term, b.div(quarter, float(k * (k + nu))))
        total = b.add(total, term)
    return total


def _bessel_asymptotic(b, x, nu: int, terms: int = 25):
    """e^−x I_ν(x) ≈ Σ (−1)^k a_k(ν) / x^k / √(2πx) for x ≥ 30 (Hankel's expansion)."""
    inv = b.div(1.0, x)
    total, coefficient, power = b.ones(x.shape, float64), 1.0, b.ones(x.shape, float64)
    for k in range(1, terms):
        coefficient *= (4 * nu * nu - (2 * k - 1) ** 2) / (k * 8)
        power = b.mul(power, inv)
        total = b.add(total, b.mul(power, (-1) ** k * coefficient))
    return b.div(total, b.sqrt(b.mul(x, 2 * math.pi)))


_BESSEL_SWITCH = 30.0


def _scaled_bessel(b, x, nu: int):
    """(e^−|x| I_ν(|x|), |x| with infinities replaced): the series below 30, the asymptotic expansion above."""
    s = b.abs(b.where(b.isinf(x), _BESSEL_SWITCH, x))
    near = b.mul(_bessel_series(b, b.minimum(s, _BESSEL_SWITCH), nu), b.exp(b.neg(b.minimum(s, _BESSEL_SWITCH))))
    far = _bessel_asymptotic(b, b.maximum(s, _BESSEL_SWITCH), nu)
    return b.where(b.isinf(x), 0.0, b.where(b.lt(s, _BESSEL_SWITCH), near, far)), s


def _unscaled(b, scaled, s, x):
    """I_ν(x) = e^|x| · the scaled value; +inf at ±inf."""
    return b.where(b.isinf(x), math.inf, b.mul(scaled, b.exp(s)))


def _odd(b, value, x):
    """I_1 is odd: the value computed at |x| takes the sign of x."""
    return b.where(b.lt(x, 0), b.neg(value), value)


@in_float64
def i0e(b, x):
    """e^−|x| I₀(x), the exponentially scaled modified Bessel function of order 0."""
    return _scaled_bessel(b, x, 0)[0]


@in_float64
def i0(b, x):
    """I₀(x), the modified Bessel function of the first kind of order 0 (even in x)."""
    scaled, s = _scaled_bessel(b, x, 0)
    return _unscaled(b, scaled, s, x)


@in_float64
def i1e(b, x):
    """e^−|x| I₁(x), the exponentially scaled modified Bessel function of order 1 (odd in x)."""
    return _odd(b, _scaled_bessel(b, x, 1)[0], x)


@in_float64
def i1(b, x):
    """I₁(x), the modified Bessel function of the first kind of order 1 (odd in x)."""
    scaled, s = _scaled_bessel(b, x, 1)
    return _odd(b, _unscaled(b, scaled, s, x), x)


_EPSILON = 2.220446049250313e-16
_MAX_TERMS = 10000


def _series_lower(b, a, x, log_prefix):
    """P(a, x) = e^−x x^a / Γ(a + 1) · Σ_n x^n / ((a + 1) ... (a + n)), the series for x < a + 1."""
    term, total, n = b.ones(x.shape, float64), b.ones(x.shape, float64), 0
    while n < _MAX_TERMS:
        n += 1
        term = b.mul(term, b.div(x, b.add(a, float(n))))
        total = b.add(total, term)
        if not b.any_true(b.gt(term, b.mul(total, _EPSILON))):
            break
    return b.mul(total, b.exp(b.sub(log_prefix, b.log(a))))


def _fraction_upper(b, a, x, log_prefix):
    """Q(a, x) = e^−x x^a / Γ(a) · 1 / (x + 1 − a − 1·(1 − a) / (x + 3 − a − ...)), Lentz's continued fraction
    for x ≥ a + 1."""
    tiny = 1e-300
    base = b.sub(b.add(x, 1.0), a)
    c, d = b.full(x.shape, 1.0 / tiny, float64), b.div(1.0, base)
    h, i = d, 0
    while i < _MAX_TERMS:
        i += 1
        an = b.mul(b.sub(a, float(i)), float(i))  # −i (i − a)
        base = b.add(base, 2.0)
        d = b.add(b.mul(an, d), base)
        d = b.div(1.0, b.where(b.lt(b.abs(d), tiny), tiny, d))
        c = b.add(base, b.div(an, c))
        c = b.where(b.lt(b.abs(c), tiny), tiny, c)
        delta = b.mul(c, d)
        h = b.mul(h, delta)
        if not b.any_true(b.gt(b.abs(b.sub(delta, 1.0)), _EPSILON)):
            break
    return b.mul(h, b.exp(log_prefix))


def _incomplete_gamma(b, a, x, upper: bool):
    """P(a, x) (or Q = 1 − P when upper): the series below x = a + 1, the continued fraction above
    (Numerical Recipes' gammp/gammq), with PyTorch's values at the edges of the domain."""
    a = b.add(b.zeros(getattr(x, "shape", ()), float64), a)  # both float64 arrays in the broadcast shape
    x = b.add(b.zeros(a.shape, float64), x)
    nan = b.logical_or(b.logical_or(b.lt(x, 0), b.lt(a, 0)), b.isnan(b.add(a, x)))
    nan = b.logical_or(nan, b.logical_or(b.logical_and(b.eq(a, 0), b.eq(x, 0)),
                                         b.logical_and(b.isinf(a), b.isinf(x))))
    one = b.logical_or(b.logical_and(b.eq(a, 0), b.gt(x, 0)), b.isinf(x))  # P = 1 there
    zero = b.logical_or(b.eq(x, 0), b.isinf(a))  # P = 0 there
    edge = b.logical_or(nan, b.logical_or(one, zero))
    a, x = b.where(edge, 1.0, a), b.where(edge, 1.0, x)  # stand-ins, replaced below
    log_prefix = b.sub(b.sub(b.mul(a, b.log(x)), x), lgamma(b, a))  # log(e^−x x^a / Γ(a))
    below = b.lt(x, b.add(a, 1.0))
    p = _series_lower(b, b.where(below, a, 1.0), b.where(below, x, 0.5), b.where(below, log_prefix, 0.0))
    q = _fraction_upper(b, b.where(below, 1.0, a), b.where(below, 3.0, x), b.where(below, 0.0, log_prefix))
    out = b.where(below, b.sub(1.0, p), q) if upper else b.where(below, p, b.sub(1.0, q))
    out = b.where(one, 0.0 if upper else 1.0, b.where(zero, 1.0 if upper else 0.0, out))
    return b.where(nan, math.nan, out)


def incomplete_gamma(b, a, x, upper: bool):
    """The regularized incomplete gamma function P(a, x), or Q(a, x) when upper, in a's and x's dtype."""
    dtype = b.dtype_of(a if hasattr(a, "shape") else x)
    out = _incomplete_gamma(b, a, x, upper)
    return out if dtype is float64 else b.astype(out, dtype)


_ERFCX_ASYMPTOTIC = 25.0  # above: the asymptotic series (erfc itself would underflow soon after)


@in_float64
def erfcx(b, x):
    """exp(x²) · erfc(x), the scaled complementary error function: directly below x = 25, and
    1/(x√π) · Σ (−1)^k (2k − 1)!! / (2x²)^k above (where the direct product would be 0 · inf)."""
    near = b.minimum(x, _ERFCX_ASYMPTOTIC)
    direct = b.mul(b.exp(b.mul(near, near)), b.erfc(near))
    far = b.maximum(x, _ERFCX_ASYMPTOTIC)
    inv_2x2 = b.div(0.5, b.mul(far, far))
    total, term = b.ones(x.shape, float64), b.ones(x.shape, float64)
    for k in range(1, 13):
        term = b.mul(term, b.mul(inv_2x2, -(2.0 * k - 1)))
        total = b.add(total, term)
    asymptotic = b.div(total, b.mul(far, math.sqrt(math.pi)))
    return b.where(b.gt(x, _ERFCX_ASYMPTOTIC), asymptotic, direct)


def _log_erfc(b, y):
    """log erfc(y) = log erfcx(y) − y², which never underflows (erfc(30) is below float64's range)."""
    return b.sub(b.log(erfcx(b, y)), b.mul(y, y))


@in_float64
def erfcinv(b, c):
    """erfc⁻¹(c) for c in [0, 2]: erfinv(1 − c) near c = 1; elsewhere Newton's method on log erfc(y) = log c
    (erfc⁻¹(c) = −erfc⁻¹(2 − c) above 1) from Giles' guess or, for tiny c, the asymptotic root of
    y² + log(y√π) = −log c."""
    upper = b.gt(c, 1.0)
    inside = b.logical_and(b.gt(c, 0.0), b.lt(c, 2.0))
    t = b.where(inside, b.where(upper, b.sub(2.0, c), c), 0.5)  # in (0, 1]
    w = b.neg(b.log(b.mul(t, b.sub(2.0, t))))  # −log(1 − x²) for x = 1 − t
    giles = b.mul(b.where(b.lt(w, 5.0), _polynomial(b, _GILES_CENTRAL, b.sub(w, 2.5)),
                          _polynomial(b, _GILES_TAIL, b.sub(b.sqrt(w), 3.0))), b.sub(1.0, t))
    minus_log_t = b.neg(b.log(t))
    rough = b.sqrt(b.maximum(b.sub(minus_log_t, b.log(b.mul(b.sqrt(minus_log_t), math.sqrt(math.pi)))), 0.0))
    y = b.where(b.gt(t, 1e-6), giles, rough)
    log_t = b.log(t)
    for _ in range(6):
        scaled = erfcx(b, y)
        residual = b.sub(b.sub(b.log(scaled), b.mul(y, y)), log_t)
        y = b.add(y, b.mul(b.mul(residual, scaled), math.sqrt(math.pi) / 2))
    y = b.where(upper, b.neg(y), y)
    central = b.le(b.abs(b.sub(1.0, c)), 0.5)  # there 1 − c is exact and erfinv keeps the digits of small results
    y = b.where(central, erfinv(b, b.where(central, b.sub(1.0, c), 0.0)), y)
    edges = b.where(b.eq(c, 0.0), math.inf, b.where(b.eq(c, 2.0), -math.inf, math.nan))
    return b.where(inside, y, edges)


@in_float64
def ndtri(b, p):
    """Φ⁻¹(p), the standard normal quantile: −√2 · erfc⁻¹(2p) (accurate for tiny p too)."""
    return b.mul(erfcinv(b, b.mul(p, 2.0)), -math.sqrt(2.0))


@in_float64
def log_ndtr(b, x):
    """log Φ(x): log1p(−erfc(x/√2)/2) above 0, and log erfcx(−x/√2) − x²/2 − log 2 below, which
    stays finite far into the lower tail."""
    scaled = b.mul(x, 0.7071067811865476)
    upper = b.log1p(b.mul(b.erfc(b.maximum(scaled, 0.0)), -0.5))
    below = b.minimum(scaled, 0.0)
    lower = b.sub(b.sub(b.log(erfcx(b, b.neg(below))), b.mul(below, below)), math.log(2.0))
    return b.where(b.gt(x, 0), upper, lower)
