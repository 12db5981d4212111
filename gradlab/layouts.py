"""``gradlab.strided`` and the memory formats: PyTorch's layout keywords, accepted so factory calls run as written.

Every gradlab tensor is dense and strided, so ``layout=gradlab.strided`` is the one layout; sparse
layouts are refused (sparse tensors are out of gradlab's scope). ``memory_format=channels_last`` is
accepted as a hint and has no effect: the numpy backend keeps its own (row-major) layout and every
op gives the same values whatever the strides. ``pin_memory`` pins host memory for fast copies to a
GPU; without a GPU there is nothing to pin for, and ``pin_memory=True`` is refused as in PyTorch.
"""

from __future__ import annotations


class layout:
    """How a tensor's elements are stored (``gradlab.strided``: a dense block addressed by strides)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"gradlab.{self.name}"

    def __reduce__(self):
        return self.name  # pickled as the module attribute of that name


class memory_format:
    """The order of a tensor's dimensions in memory (``gradlab.contiguous_format``, ``channels_last`` ...)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self):
        return f"gradlab.{self.name}"

    def __reduce__(self):
        return self.name


strided = layout("strided")
sparse_coo = layout("sparse_coo")
sparse_csr = layout("sparse_csr")
contiguous_format = memory_format("contiguous_format")
preserve_format = memory_format("preserve_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")

_RANK = {channels_last: 4, channels_last_3d: 5}


def check_options(op: str, layout=None, pin_memory=False, memory_format=None, ndim=None) -> None:
    """Refuse the layout keywords gradlab cannot honour, with the reason; accept the rest."""
    if layout is not None and layout is not strided:
        if not isinstance(layout, globals()["layout"]):
            raise TypeError(f"{op}(): argument 'layout' must be gradlab.layout, not {type(layout).__name__}")
        raise RuntimeError(f"{op}: layout={layout!r} is not supported: gradlab tensors are dense (gradlab.strided); "
                           "sparse tensors are out of gradlab's scope")
    if pin_memory:
        raise RuntimeError(f"{op}: pin_memory=True requires a CUDA or other accelerator backend; no pinned memory "
                           "allocator is available on this system")
    if memory_format is not None:
        if not isinstance(memory_format, globals()["memory_format"]):
            raise TypeError(f"{op}(): argument 'memory_format' must be gradlab.memory_format, not "
                            f"{type(memory_format).__name__}")
        rank = _RANK.get(memory_format)
        if rank is not None and ndim is not None and ndim != rank:
            raise RuntimeError(f"{op}: required rank {rank} tensor to use {memory_format.name} format, got a "
                               f"{ndim}-D tensor")
