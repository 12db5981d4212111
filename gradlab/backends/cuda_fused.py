"""The CUDA backend's fused and heavy kernels, kept apart from the primitives in ``cuda_backend.py``.

``CudaBackend`` inherits this mixin, so a learner reads the primitives (one small kernel each) in one
file and the kernels that fuse many steps into one launch (matmul, softmax, layer norm, im2col, the
random generator) in this one.
"""

from __future__ import annotations


class CudaFusedKernels:
    """Fused kernels for device arrays; each overrides a composed fallback of ``contract.Backend``."""

    __slots__ = ()
