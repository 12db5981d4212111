"""What the linear-algebra ops share: LinAlgError, PyTorch's input checks, small matrix helpers.

A factorization kernel reports failure as an ``info`` per matrix (as LAPACK does); ``raise_on_info``
turns the first failure into PyTorch's message, naming the batch element when there is a batch.
"""

from __future__ import annotations

from ..dtypes import int64
from ._common import TrackedTensor, check_same_device, describe


class LinAlgError(RuntimeError):
    """A matrix for which the operation is undefined (singular, not positive-definite), as torch.linalg.LinAlgError."""


_TORCH_NAMES = {"float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double", "int64": "Long",
                "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def torch_name(dtype) -> str:
    """The dtype as PyTorch's C++ messages spell it: float32 is 'Float', int64 is 'Long'."""
    return _TORCH_NAMES.get(dtype.name, dtype.name)


_EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52}


def eps(dtype) -> float:
    """The gap between 1 and the next representable number (torch.finfo(dtype).eps)."""
    return _EPS[dtype.name]


def default_tolerances(A, atol, rtol):
    """(atol, rtol) by PyTorch's rule for pinv and matrix_rank: rtol defaults to eps · max(m, n), or to 0
    when a non-zero atol is given; atol defaults to 0."""
    atol_given = atol is not None and (isinstance(atol, TrackedTensor) or atol != 0)
    if rtol is None:
        rtol = 0.0 if atol_given else eps(A.dtype) * max(A.shape[-2:])
    return (0.0 if atol is None else atol), rtol


def check_matrix(op: str, A, square=True, name="A"):
    """A floating-point tensor of at least 2 dims (square when asked), or PyTorch's error for it."""
    if not isinstance(A, TrackedTensor):
        raise TypeError(f"{op}: expected a gradlab Tensor as {name}, got {describe(A)}")
    check_floating(op, A)
    if A.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor {name} must have at least 2 dimensions. Got {describe(A)}")
    if square and A.shape[-1] != A.shape[-2]:
        raise RuntimeError(f"{op}: {name} must be batches of square matrices, but they are "
                           f"{A.shape[-2]} by {A.shape[-1]} matrices")
    return A


def check_floating(op: str, x):
    """Linear algebra is defined on float32 and float64: integers are refused (and half precision, as on CPU)."""
    if not x.dtype.is_floating_point:
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {torch_name(x.dtype)}; "
                           "convert it first with .double() or .float()")
    if x.dtype.name in ("float16", "bfloat16"):
        raise RuntimeError(f"{op}: Low precision dtypes not supported. Got {torch_name(x.dtype)}; convert it first "
                           "with .float()")


def check_same_dtype(op: str, A, B):
    if A.dtype is not B.dtype:
        raise RuntimeError(f"{op}: Expected A and B to have the same dtype, but found A of type "
                           f"{torch_name(A.dtype)} and B of type {torch_name(B.dtype)} instead")
    check_same_device(op, A, B)


def raise_on_info(op: str, info, message):
    """Raise LinAlgError(message(k)) for the first matrix whose info k is not 0."""
    backend = info.device.backend
    values = backend.to_numpy(info.array)
    if not values.any():
        return
    flat = values.reshape(-1)
    first = int((flat != 0).argmax())
    prefix = f"(Batch element {first}): " if info.ndim else ""
    raise LinAlgError(f"{op}: {prefix}{message(int(flat[first]))}")


# --- small matrix helpers, as Tensor operations (so their gradients are recorded) -----------------


def eye_like(x, n, m=None):
    """An n x m identity matrix of x's dtype on x's device (no gradient)."""
    backend = x.device.backend
    rows, cols = backend.arange(0, n, 1, int64), backend.arange(0, n if m is None else m, 1, int64)
    return x._wrap(backend.astype(backend.eq(backend.reshape(rows, (n, 1)), backend.reshape(cols, (1, -1))), x.dtype))


def diag_embed(v):
    """The vectors v[..., i] on the diagonals of matrices: (..., k) becomes (..., k, k)."""
    return v.unsqueeze(-1) * eye_like(v, v.shape[-1])
