"""IDX files, the format MNIST and Fashion-MNIST come in, read from files you already have.

An IDX file is a 4-byte magic number (two zero bytes, a type code, the number of dimensions),
one big-endian 4-byte size per dimension, then the values, big-endian, in C order. ``.gz`` files
are read the same way after decompressing.
"""

from __future__ import annotations

import gzip
import os
import zlib

import numpy as np

from ..creation import from_numpy

__all__ = ["read_idx", "load_mnist"]

_IDX_TYPES = {0x08: ">u1", 0x09: ">i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}


def _read_bytes(path: str) -> bytes:
    if not os.path.isfile(path):
        raise FileNotFoundError(f"read_idx: no such file: {path}")
    if not path.endswith(".gz"):
        with open(path, "rb") as f:
            return f.read()
    try:
        with gzip.open(path, "rb") as f:
            return f.read()
    except (OSError, EOFError, zlib.error) as error:
        raise ValueError(f"read_idx: {path} is not a readable gzip file (truncated or corrupt: {error})") from None


def read_idx(path) -> np.ndarray:
    """The array stored in an IDX file (plain or ``.gz``), as a numpy array in native byte order.

    Types are kept: MNIST's unsigned bytes come back as uint8 (convert with ``gradlab.tensor``).
    """
    path = os.fspath(path)
    raw = _read_bytes(path)
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_TYPES:
        codes = ", ".join(f"0x{code:02X}" for code in _IDX_TYPES)
        raise ValueError(f"read_idx: {path} is not an IDX file: it starts with bytes {raw[:4].hex(' ') or '(none)'}, "
                         f"but an IDX file starts with 00 00, a type code ({codes}) and the number of dimensions")
    dtype, ndim = np.dtype(_IDX_TYPES[raw[2]]), raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"read_idx: {path} is truncated: its header needs {header} bytes for {ndim} dimensions, "
                         f"but the file has only {len(raw)} bytes")
    shape = tuple(int(s) for s in np.frombuffer(raw, ">u4", ndim, 4))
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(raw) != expected:
        problem = "is truncated" if len(raw) < expected else "has extra bytes at the end"
        raise ValueError(f"read_idx: {path} {problem}: shape {shape} of {dtype.str[1:]} needs {expected} bytes "
                         f"(with the {header}-byte header), but the file has {len(raw)} bytes")
    return np.frombuffer(raw, dtype, offset=header).reshape(shape).astype(dtype.newbyteorder("="))


_MNIST_FILES = {True: ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
                False: ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}


def _find(root: str, name: str) -> str:
    """The first of root/[raw/|MNIST/raw/|FashionMNIST/raw/]name[.gz] (also 'idx3.ubyte' spellings) that exists."""
    folders = [root] + [os.path.join(root, *sub) for sub in (("raw",), ("MNIST", "raw"), ("FashionMNIST", "raw"))]
    names = [name, name.replace("-idx", ".idx")]
    candidates = [os.path.join(folder, n + gz) for folder in folders for n in names for gz in ("", ".gz")]
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    raise FileNotFoundError(
        f"load_mnist: found no {name} (or {name}.gz) in {root} or its raw/, MNIST/raw/, FashionMNIST/raw/ folders. "
        "gradlab does not download data: put the four MNIST (or Fashion-MNIST) IDX files in that folder"
    )


def load_mnist(root, train: bool = True):
    """``(images, labels)`` from the MNIST or Fashion-MNIST IDX files in folder ``root``.

    Images are float32 of shape (N, 1, 28, 28) scaled to [0, 1]; labels are int64. ``train=False``
    reads the 10,000 test images (the ``t10k-`` files). torchvision's ``MNIST/raw`` layout works too.
    """
    root = os.fspath(root)
    image_file, label_file = (_find(root, name) for name in _MNIST_FILES[bool(train)])
    images, labels = read_idx(image_file), read_idx(label_file)
    if images.ndim != 3 or labels.ndim != 1 or len(images) != len(labels):
        raise ValueError(f"load_mnist: expected images of shape (N, H, W) and N labels, got images of shape "
                         f"{images.shape} from {image_file} and labels of shape {labels.shape} from {label_file}")
    scale = np.float32(255 if images.dtype == np.uint8 else 1)
    images = (images[:, None] / scale).astype(np.float32)
    return from_numpy(images), from_numpy(labels.astype(np.int64))
