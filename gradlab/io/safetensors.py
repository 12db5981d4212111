"""The ``.safetensors`` format: an 8-byte header length, a JSON header, then the tensors' raw bytes.

The header gives each tensor's dtype, shape and byte range. Reading checks it the way the reference
library does before a byte of data is touched: the header is bounded in size and depth, every shape
is non-negative integers whose product matches its byte range, and the ranges tile the data exactly
(contiguous from 0, no overlap, no gap, nothing after). Nested checkpoints are flattened with dots
(``optimizer.state.0.exp_avg``); gradlab keeps the exact nesting in the header's ``__metadata__``.
"""

from __future__ import annotations

import json
import math
import struct
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

from .. import dtypes as dt
from .reading import MAX_HEADER_BYTES, Damaged, json_header, read_exactly, remaining_bytes
from .structure import MANIFEST, Unsupported, decode, encode, place, reference, stored_value, where

_CODES = {"BOOL": "|b1", "U8": "<u1", "I8": "<i1", "I16": "<i2", "U16": "<u2", "I32": "<i4", "U32": "<u4",
          "I64": "<i8", "U64": "<u8", "F16": "<f2", "F32": "<f4", "F64": "<f8"}
_NAMES = {np.dtype(code).newbyteorder("="): name for name, code in _CODES.items()}
_ITEMSIZE = {**{name: np.dtype(code).itemsize for name, code in _CODES.items()}, "BF16": 2}


def to_bytes(obj) -> bytes:
    if not isinstance(obj, Mapping):
        raise Unsupported(f"a .safetensors file holds a dict of tensors, and obj is a {type(obj).__name__}; "
                           "wrap it, e.g. {'weight': tensor}")
    arrays, metadata = {}, {}

    def claim(path) -> str:
        key = ".".join(str(k) for k in path)
        if key in arrays or key in metadata or key in (MANIFEST, "__metadata__"):
            raise ValueError(f"gradlab.save: two entries flatten to the same safetensors name {key!r} (the last is "
                             f"{where(path)}); rename one of them, or save as .npz")
        return key

    def store(array, path):
        if array.dtype.newbyteorder("=") not in _NAMES:
            raise Unsupported(f"{where(path)} is an array of dtype {array.dtype}, which safetensors can't hold")
        key = claim(path)
        arrays[key] = array
        return key

    def leaves(node, path):  # a readable copy of every non-tensor value, under its dotted name
        if isinstance(node, dict) and ("dict" in node or "list" in node or "tuple" in node):
            children = node.get("dict") or enumerate(node.get("list", node.get("tuple", ())))
            for key, child in children:
                leaves(child, path + (key,))
        elif not (isinstance(node, dict) and ("tensor" in node or "ndarray" in node)):
            value = decode(node, None)
            metadata[claim(path)] = value if isinstance(value, str) else json.dumps(value)

    root = encode(obj, (), store)
    bfloat16_keys = set()  # their 16-bit patterns were stored as uint16: the header says BF16
    decode(root, lambda node: bfloat16_keys.add(reference(node)) if node.get("dtype") == "bfloat16" else None)
    leaves(root, ())
    metadata[MANIFEST] = json.dumps({"format": "gradlab", "version": 1, "root": root}, allow_nan=False)
    header, chunks, offset = {"__metadata__": metadata}, [], 0
    for key, array in arrays.items():
        data = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
        code = "BF16" if key in bfloat16_keys else _NAMES[array.dtype.newbyteorder("=")]
        header[key] = {"dtype": code, "shape": list(array.shape),
                       "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the safetensors library writes it
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def read(source, name: str, map_location):
    """Everything in the file, after the header has been checked (see the module docstring)."""
    (size,) = struct.unpack("<Q", read_exactly(source, 8, "the header length", name))
    if size > MAX_HEADER_BYTES:
        raise Damaged(f"gradlab.load: {name} is damaged or not a .safetensors file: its header length says {size} "
                      f"bytes, more than the {MAX_HEADER_BYTES} a safetensors header may have")
    text = bytes(read_exactly(source, size, "the header", name))
    if not text.startswith(b"{"):
        raise Damaged(f"gradlab.load: {name} is damaged or not a .safetensors file: its header does not start "
                      "with '{'")
    header = json_header(text, "safetensors header", name)
    if not isinstance(header, dict):
        raise Damaged(f"gradlab.load: {name} is damaged: its safetensors header is not a JSON object")
    metadata = _metadata(header.pop("__metadata__", None), name)
    entries = sorted((_entry(key, info, name) for key, info in header.items()), key=lambda e: (e[2], e[3]))
    total = _check_tiling(entries, name)
    left = remaining_bytes(source)
    if left is not None and left != total:
        raise Damaged(f"gradlab.load: {name} is {'truncated' if left < total else 'damaged'}: its header declares "
                      f"{total} bytes of tensor data, but {left} bytes follow the header")
    data = read_exactly(source, total, "the tensor data", name, size_checked=left is not None)
    arrays = {key: _array(data, code, shape, begin, end) for key, code, begin, end, shape in entries}
    if MANIFEST not in metadata:  # written by another tool: a flat dict of tensors, as safetensors gives it
        return OrderedDict((key, place(arrays[key], {}, map_location)) for key in header)
    root = json_header(metadata[MANIFEST].encode(), "gradlab manifest", name)["root"]
    return decode(root, lambda node: stored_value(node, arrays[reference(node)], map_location))


def _metadata(metadata, name: str) -> dict:
    if metadata is None:
        return {}
    if not isinstance(metadata, dict) or not all(isinstance(v, str) for v in metadata.values()):
        raise Damaged(f"gradlab.load: {name} is damaged: the safetensors __metadata__ must map strings to strings")
    return metadata


def _is_count(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _entry(key: str, info, name: str) -> tuple:
    """(key, dtype code, begin, end, shape) of one header entry, each part checked."""
    if not isinstance(info, dict) or not {"dtype", "shape", "data_offsets"} <= info.keys():
        raise Damaged(f"gradlab.load: {name} is damaged: the header entry for {key!r} needs dtype, shape and "
                      "data_offsets")
    code, shape, offsets = info["dtype"], info["shape"], info["data_offsets"]
    if code not in _ITEMSIZE:
        raise Damaged(f"gradlab.load: {name} holds {key!r} as {code}, a dtype gradlab can't read; supported: "
                      f"{', '.join(_ITEMSIZE)}")
    if not isinstance(shape, list) or not all(_is_count(n) for n in shape):
        raise Damaged(f"gradlab.load: {name} is damaged: {key!r} has shape {shape!r}; a shape is a list of "
                      "non-negative integers")
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(_is_count(n) for n in offsets)
            and offsets[0] <= offsets[1]):
        raise Damaged(f"gradlab.load: {name} is damaged: {key!r} has data_offsets {offsets!r}; they are "
                      "[begin, end], non-negative integers with begin <= end")
    begin, end = offsets
    if end - begin != math.prod(shape) * _ITEMSIZE[code]:
        raise Damaged(f"gradlab.load: {name} is damaged: {key!r} has shape {shape} of {code} "
                      f"({math.prod(shape) * _ITEMSIZE[code]} bytes) but data_offsets {offsets} span {end - begin}")
    return key, code, begin, end, tuple(shape)


def _check_tiling(entries, name: str) -> int:
    """The data's length, once the byte ranges (sorted) are known to follow one another from 0 with no gap."""
    expected = 0
    for key, _, begin, end, _ in entries:
        if begin != expected:
            problem = "overlaps the tensor before it" if begin < expected else f"leaves bytes {expected}..{begin} unused"
            raise Damaged(f"gradlab.load: {name} is damaged: {key!r} starts at byte {begin} of the data and "
                          f"{problem}; safetensors data is laid out tensor after tensor")
        expected = end
    return expected


def _array(data: bytearray, code: str, shape: tuple, begin: int, end: int) -> np.ndarray:
    """One tensor's values: a view of the data where the layout allows (little-endian on this machine).

    BF16 becomes a bfloat16 tensor where ml_dtypes is installed, else it is widened (exactly) to float32.
    """
    chunk = memoryview(data)[begin:end]
    if code == "BF16":
        bits = np.frombuffer(chunk, "<u2").astype(np.uint16, copy=False)
        try:
            array = bits.view(dt.numpy_bfloat16())
        except ImportError:
            array = (bits.astype(np.uint32) << 16).view(np.float32)
    else:
        array = np.frombuffer(chunk, _CODES[code])
        array = array.astype(array.dtype.newbyteorder("="), copy=False)
    return array.reshape(shape)
