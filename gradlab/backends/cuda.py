"""``gradlab.backends.cuda``: PyTorch's CUDA matmul and attention switches, kept so scripts run unchanged.

``gradlab.backends.cuda.matmul.allow_tf32 = True`` and ``enable_flash_sdp(False)`` are accepted,
remembered and read back. None of them has any effect on the numpy CPU backend: its float32
products are full float32, and attention is always the plain ("math") formula.
"""

from __future__ import annotations

import contextlib
import enum
import importlib.util


class _MatmulFlags:
    """``backends.cuda.matmul``: the reduced-precision switches of CUDA matrix products."""

    __slots__ = ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction")

    def __init__(self):
        self.allow_tf32 = False
        self.allow_fp16_reduced_precision_reduction = True
        self.allow_bf16_reduced_precision_reduction = True

    def __setattr__(self, name, value):
        if name not in self.__slots__:
            raise AttributeError(f"Unknown attribute {name}: backends.cuda.matmul has {', '.join(self.__slots__)}")
        object.__setattr__(self, name, value)

    def __repr__(self):
        return "matmul(" + ", ".join(f"{name}={getattr(self, name)}" for name in self.__slots__) + ")"


matmul = _MatmulFlags()


def is_built() -> bool:
    """Whether this gradlab has a CUDA backend to load (``pip install "gradlab[cuda]"``)."""
    return importlib.util.find_spec("gradlab.backends.cuda_backend") is not None


# --- scaled_dot_product_attention kernels ----------------------------------------------------------

_sdp = {"flash": True, "mem_efficient": True, "math": True, "cudnn": True}


def _switch(kind):
    def enable(enabled: bool) -> None:
        _sdp[kind] = bool(enabled)

    def is_enabled() -> bool:
        return _sdp[kind]

    enable.__doc__ = f"Allow or forbid the {kind} attention kernel (no effect: gradlab always computes the math form)."
    is_enabled.__doc__ = f"Whether the {kind} attention kernel is allowed."
    return enable, is_enabled


enable_flash_sdp, flash_sdp_enabled = _switch("flash")
enable_mem_efficient_sdp, mem_efficient_sdp_enabled = _switch("mem_efficient")
enable_math_sdp, math_sdp_enabled = _switch("math")
enable_cudnn_sdp, cudnn_sdp_enabled = _switch("cudnn")


def is_flash_attention_available() -> bool:
    """False: gradlab has no flash-attention kernel."""
    return False


@contextlib.contextmanager
def sdp_kernel(enable_flash=True, enable_math=True, enable_mem_efficient=True, enable_cudnn=True):
    """Allow only some attention kernels inside a ``with`` block (PyTorch's older form of sdpa_kernel)."""
    saved = dict(_sdp)
    _sdp.update(flash=bool(enable_flash), math=bool(enable_math), mem_efficient=bool(enable_mem_efficient),
                cudnn=bool(enable_cudnn))
    try:
        yield
    finally:
        _sdp.update(saved)


# --- library preferences -----------------------------------------------------------------------------


class LinalgBackend(enum.Enum):
    Default = "default"
    Cusolver = "cusolver"
    Magma = "magma"


class BlasBackend(enum.Enum):
    Cublas = "cublas"
    Cublaslt = "cublaslt"
    Ck = "ck"


_preferred = {LinalgBackend: LinalgBackend.Default, BlasBackend: BlasBackend.Cublas}


def _prefer(kind, backend):
    if backend is None:
        return _preferred[kind]
    if isinstance(backend, str):
        by_name = {member.value: member for member in kind}
        if backend.lower() not in by_name:
            raise RuntimeError(f"Unknown input value. Choose from: {', '.join(by_name)}.")
        backend = by_name[backend.lower()]
    elif not isinstance(backend, kind):
        raise RuntimeError(f"Unknown input value type: expected a string or {kind.__name__}, got {backend!r}")
    _preferred[kind] = backend
    return backend


def preferred_linalg_library(backend=None) -> LinalgBackend:
    """Read, or set ('default', 'cusolver', 'magma'), the CUDA linear-algebra library; no effect on CPU."""
    return _prefer(LinalgBackend, backend)


def preferred_blas_library(backend=None) -> BlasBackend:
    """Read, or set ('cublas', 'cublaslt', 'ck'), the CUDA BLAS library; no effect on CPU."""
    return _prefer(BlasBackend, backend)
