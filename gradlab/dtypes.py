"""Data types, named as in PyTorch, and the rule that picks a result's dtype.

A dtype here is a small named object; each backend maps it to its own array dtype. Type promotion
follows PyTorch: bool < integers < floats, a Python number never widens a tensor within its
category, and a 0-d tensor only decides the result when it is of a higher category.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


class DType:
    """One element type: its PyTorch name, its size in bytes and its category."""

    __slots__ = ("name", "itemsize", "category", "rank", "is_floating_point", "is_signed")
    is_complex = False  # gradlab has no complex dtypes

    def __init__(self, name: str, itemsize: int, category: int, rank: int, signed: bool = True):
        self.name = name
        self.itemsize = itemsize
        self.category = category  # 0 bool, 1 integer, 2 floating point
        self.rank = rank  # order within a category: the wider wins
        self.is_floating_point = category == 2  # a plain attribute: every recorded op reads it
        self.is_signed = signed and category != 0

    def to_real(self) -> "DType":
        return self

    def __repr__(self) -> str:
        return f"gradlab.{self.name}"

    def __reduce__(self):
        return (_by_name, (self.name,))


bool_ = DType("bool", 1, 0, 0)
uint8 = DType("uint8", 1, 1, 0, signed=False)
int8 = DType("int8", 1, 1, 0)
int16 = DType("int16", 2, 1, 1)
int32 = DType("int32", 4, 1, 2)
int64 = DType("int64", 8, 1, 3)
uint16 = DType("uint16", 2, 1, 1, signed=False)  # PyTorch's "shell" dtypes: storage, casts and
uint32 = DType("uint32", 4, 1, 2, signed=False)  # printing, but no promotion with other integer types
uint64 = DType("uint64", 8, 1, 3, signed=False)
float16 = DType("float16", 2, 2, 0)
bfloat16 = DType("bfloat16", 2, 2, 0)  # float32's exponent with 8 bits of mantissa (numpy's via ml_dtypes)
float32 = DType("float32", 4, 2, 1)
float64 = DType("float64", 8, 2, 2)

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, uint16, uint32, uint64, float16, bfloat16, float32, float64)
FLOAT_DTYPES = (float16, bfloat16, float32, float64)
HALF_DTYPES = (float16, bfloat16)  # computed in float32 where PyTorch accumulates: sums, products, softmax
_SHELL_DTYPES = (uint16, uint32, uint64)

_NAMES = {d.name: d for d in ALL_DTYPES}
NUMPY_NAMES = frozenset(_NAMES)  # numpy arrays of these dtypes become tensors of the same dtype
_NAMES.update({"float": float32, "double": float64, "half": float16, "int": int32, "long": int64, "short": int16})


def numpy_bfloat16():
    """numpy's bfloat16 array dtype, which the ml_dtypes package provides (imported on first use)."""
    try:
        import ml_dtypes
    except ImportError:
        raise ImportError('bfloat16 tensors need the ml_dtypes package, which gives numpy a bfloat16 type: '
                          'pip install "gradlab[bfloat16]" (or pip install ml_dtypes)') from None
    return np.dtype(ml_dtypes.bfloat16)


def accumulation_dtype(dtype: DType) -> DType:
    """The dtype a reduction or matrix product computes in: float32 for the 16-bit floats, as in PyTorch."""
    return float32 if dtype in HALF_DTYPES else dtype


NATIVE_TO_DTYPE: dict = {}  # every loaded backend's array dtype -> DType, read by Tensor.dtype


FLOATING_NATIVES: set = set()  # the array dtypes that can carry gradients, read on every recorded op


def register_native_dtypes(mapping: dict) -> None:
    """A backend declares which of its array dtypes stands for which DType."""
    NATIVE_TO_DTYPE.update({native: dtype for dtype, native in mapping.items()})
    FLOATING_NATIVES.update(native for dtype, native in mapping.items() if dtype.is_floating_point)


def check_int_fits(op: str, value, dtype: DType) -> None:
    """A Python int bound for an integer dtype must be in its range: numpy would fail obscurely or wrap it."""
    if dtype.category == 1 and isinstance(value, int) and not isinstance(value, bool):
        limits = np.iinfo(dtype.name)
        if not limits.min <= value <= limits.max:
            raise RuntimeError(f"{op}: the Python int {value} does not fit in {dtype.name} (its range is {limits.min} "
                               f"to {limits.max}); ask for a wider dtype, or dtype=gradlab.float64 for its magnitude")


def _by_name(name: str) -> DType:
    return _NAMES[name]


class _DefaultDType:
    value = float32


def get_default_dtype() -> DType:
    """The dtype of floating-point tensors made from Python floats (float32 unless changed)."""
    return _DefaultDType.value


def set_default_dtype(d: DType) -> None:
    """Change the default floating-point dtype, as ``torch.set_default_dtype`` does."""
    dtype = as_dtype(d)
    if not dtype.is_floating_point:
        raise TypeError(f"set_default_dtype: only floating-point dtypes can be the default, got {dtype}")
    _DefaultDType.value = dtype


def as_dtype(dtype) -> DType:
    """Accept a DType, its name ('float32'), a Python type (float, int, bool) or a numpy dtype.

    As in PyTorch, the Python types name the widest dtype of their kind: float is float64.
    """
    if isinstance(dtype, DType):
        return dtype
    if dtype is float:
        return float64
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    name = getattr(dtype, "name", None) if not isinstance(dtype, str) else dtype
    if name is None and isinstance(dtype, type):
        name = dtype.__name__
    if name in _NAMES:
        return _NAMES[name]
    supported = ", ".join(d.name for d in ALL_DTYPES)
    raise TypeError(f"unsupported dtype {dtype!r}; gradlab supports {supported}")


def scalar_dtype(value) -> DType:
    """The category a Python (or numpy) number belongs to, at its default width."""
    if isinstance(value, (bool, np.bool_)):
        return bool_
    if isinstance(value, numbers.Integral):
        return int64
    return get_default_dtype()


def promote(a: DType, b: DType) -> DType:
    """The wider of two tensor dtypes: a higher category wins, then the higher rank.

    Two exceptions, as in PyTorch: float16 with bfloat16 (neither holds the other) gives float32,
    and uint8 with int8 gives int16. uint16/32/64 promote only to floating point.
    """
    if a is b:
        return a
    if a in _SHELL_DTYPES or b in _SHELL_DTYPES:
        if a.category != 2 and b.category != 2:
            raise RuntimeError(f"Promotion for uint16, uint32, uint64 types is not supported, attempted to promote "
                               f"{a.name} and {b.name}; convert one of them first (e.g. .long() or .float())")
    if a.category != b.category:
        return a if a.category > b.category else b
    if a.rank == b.rank and a is not b:
        return float32 if a.category == 2 else int16  # float16 + bfloat16; uint8 + int8
    if a is uint8 or b is uint8:
        return b if a is uint8 else a  # uint8 with a wider signed int: the signed one holds it
    return a if a.rank >= b.rank else b


def result_dtype(a: DType, a_dim: int, b: DType, b_dim: int) -> DType:
    """PyTorch's rule for two tensors: a 0-d tensor only decides if its category is higher."""
    if a is b:
        return a
    if (a_dim == 0) == (b_dim == 0):
        return promote(a, b)
    zero_d, shaped = (a, b) if a_dim == 0 else (b, a)
    return zero_d if zero_d.category > shaped.category else shaped


def result_dtype_with_scalar(a: DType, value) -> DType:
    """A tensor combined with a Python number keeps its dtype unless the number is of a higher category."""
    s = scalar_dtype(value)
    if s.category > a.category:
        return get_default_dtype() if s.category == 2 else s
    return a


def promote_types(type1, type2) -> DType:
    """The smallest dtype that both can be converted to without losing their category (torch.promote_types)."""
    return promote(as_dtype(type1), as_dtype(type2))


def result_type(tensor1, tensor2) -> DType:
    """The dtype an arithmetic op on these two operands (tensors or Python numbers) returns (torch.result_type)."""
    def operand(x):
        return (x.dtype, x.ndim) if hasattr(x, "dtype") and hasattr(x, "ndim") else None

    a, b = operand(tensor1), operand(tensor2)
    if a and b:
        return result_dtype(a[0], a[1], b[0], b[1])
    if a or b:
        (dtype, _), scalar = (a, tensor2) if a else (b, tensor1)
        return result_dtype_with_scalar(dtype, scalar)
    return promote(scalar_dtype(tensor1), scalar_dtype(tensor2))


def can_cast(from_, to) -> bool:
    """Whether PyTorch's ops may cast ``from_`` to ``to`` implicitly: never to a lower category (float to int)."""
    return as_dtype(from_).category <= as_dtype(to).category


class finfo:
    """The limits of a floating-point dtype (torch.finfo): eps, max, min, tiny, resolution, bits."""

    def __init__(self, type=None):
        dtype = as_dtype(type) if type is not None else get_default_dtype()
        if not dtype.is_floating_point:
            raise TypeError(f"gradlab.finfo() requires a floating point input type, got {dtype}; "
                            "use gradlab.iinfo for integer types")
        if dtype is bfloat16:
            import ml_dtypes  # numpy_bfloat16() above says how to install it

            numpy_bfloat16()
            info = ml_dtypes.finfo(ml_dtypes.bfloat16)
        else:
            info = np.finfo(np.dtype(dtype.name))
        self.bits, self.dtype = dtype.itemsize * 8, dtype.name
        self.eps, self.max, self.min = float(info.eps), float(info.max), float(info.min)
        self.tiny = self.smallest_normal = float(info.smallest_normal)
        self.resolution = 10.0 ** -math.floor(-math.log10(self.eps))  # 10^-(decimal digits it keeps)

    def __repr__(self) -> str:
        return (f"finfo(resolution={self.resolution:g}, min={self.min:g}, max={self.max:g}, eps={self.eps:g}, "
                f"smallest_normal={self.smallest_normal:g}, tiny={self.tiny:g}, dtype={self.dtype})")


class iinfo:
    """The limits of an integer dtype (torch.iinfo): min, max, bits."""

    def __init__(self, type):
        dtype = as_dtype(type)
        if dtype.is_floating_point:
            raise TypeError(f"gradlab.iinfo() requires an integer input type, got {dtype}; "
                            "use gradlab.finfo for floating point types")
        if dtype is bool_:
            self.min, self.max = 0, 1
        else:
            info = np.iinfo(np.dtype(dtype.name))
            self.min, self.max = int(info.min), int(info.max)
        self.bits, self.dtype = dtype.itemsize * 8, dtype.name

    def __repr__(self) -> str:
        return f"iinfo(min={self.min}, max={self.max}, dtype={self.dtype})"
