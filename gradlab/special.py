"""``gradlab.special``: the special functions under ``torch.special``'s names.

The same Functions as ``gradlab.lgamma``, ``gradlab.erfinv`` ..., some under the names SciPy made
familiar (``gammaln``, ``psi``, ``expit``); see ``gradlab/ops/special.py`` for how each is computed.
"""

from .ops.activations import log_softmax, sigmoid as expit, softmax
from .ops.elementwise import erf, expm1, log1p, round
from .ops.numpy_spellings import accept_numpy_spellings
from .ops.pointwise import exp2
from .ops.reductions import logsumexp
from .ops.special import (digamma, entr, erfc, erfcx, erfinv, i0, i0e, i1, i1e, igamma as gammainc,
                          igammac as gammaincc, lgamma as gammaln, log_ndtr, logit, multigammaln, ndtr, ndtri, polygamma,
                          xlog1py, xlogy, zeta)
from .ops.trigonometric import sinc

psi = digamma

__all__ = ["digamma", "entr", "erf", "erfc", "erfcx", "erfinv", "exp2", "expit", "expm1", "gammainc", "gammaincc",
           "gammaln", "i0", "i0e", "i1", "i1e", "log1p", "log_ndtr", "log_softmax", "logit", "logsumexp", "multigammaln",
           "ndtr", "ndtri", "polygamma", "psi", "round", "sinc", "softmax", "xlog1py", "xlogy", "zeta"]

accept_numpy_spellings(globals())  # special.logsumexp(x, 1, keepdims=True), as torch.special takes it
