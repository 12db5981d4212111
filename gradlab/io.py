"""``gradlab.save`` and ``gradlab.load``: tensors and checkpoints on disk, without running code from the file.

A checkpoint is nested dicts, lists and tuples of tensors, numpy arrays, numbers, strings and None
(``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}``). Two safe formats hold it:

- ``.npz``: numpy's zip of arrays; the nesting, key types and dtypes go in a JSON manifest beside them.
- ``.safetensors``: an 8-byte little-endian header length, a JSON header (dtype, shape, byte offsets of
  each tensor) and the raw little-endian bytes. Nested keys are flattened with dots
  (``optimizer.state.0.exp_avg``), other values go in the header's ``__metadata__`` as strings, and the
  exact nesting is kept there too, so gradlab restores it while other tools see a flat dict of tensors.

Pickle can store anything, but loading a pickle can run any code the file's author chose, so gradlab
reads or writes one only when you pass ``pickle=True``.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle as pickle_module
import struct
import zipfile
import zlib
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

from . import dtypes as dt
from .backends.device import resolve_device
from .creation import as_tensor
from .tensor import Tensor

__all__ = ["save", "load"]

_EXTENSIONS = {".npz": "npz", ".safetensors": "safetensors", ".pkl": "pickle", ".pickle": "pickle"}
_MANIFEST = "__gradlab__"  # the npz member / safetensors metadata key that holds the structure

_SAFETENSORS_CODES = {"BOOL": "|b1", "U8": "<u1", "I8": "<i1", "I16": "<i2", "U16": "<u2", "I32": "<i4", "U32": "<u4",
                      "I64": "<i8", "U64": "<u8", "F16": "<f2", "F32": "<f4", "F64": "<f8"}
_SAFETENSORS_NAMES = {np.dtype(code).newbyteorder("="): name for name, code in _SAFETENSORS_CODES.items()}


class _Unsupported(TypeError):
    pass


# --- the structure: a JSON tree whose leaves are numbers/strings, or references to stored arrays ---------


def _where(path) -> str:
    return "obj" + "".join(f"[{key!r}]" for key in path)


def _encode(obj, path, store):
    """The JSON node for obj; ``store(array, path)`` keeps an array and returns its reference."""
    if obj is None or isinstance(obj, (bool, str, int)):
        return obj
    if isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.kind not in "OV":  # before float: np.float64 is one
        return {"ndarray": store(np.asarray(obj), path), "scalar": isinstance(obj, np.generic)}
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"float": repr(obj)}
    if isinstance(obj, Tensor):
        node = {"tensor": store(obj.detach().numpy(), path), "dtype": obj.dtype.name, "device": str(obj.device)}
        if obj.requires_grad:
            node["requires_grad"] = True
        return node
    if isinstance(obj, Mapping):
        for key in obj:
            if key is not None and not isinstance(key, (str, int, float)):
                raise _Unsupported(f"the key {key!r} of {_where(path)} is a {type(key).__name__}; "
                                   "keys must be strings, numbers or None")
        pairs = [[key, _encode(value, path + (key,), store)] for key, value in obj.items()]
        return {"dict": pairs, "ordered": isinstance(obj, OrderedDict)}
    if isinstance(obj, (list, tuple)):
        items = [_encode(value, path + (i,), store) for i, value in enumerate(obj)]
        return {"tuple" if isinstance(obj, tuple) else "list": items}
    raise _Unsupported(f"{_where(path)} is a {type(obj).__module__}.{type(obj).__qualname__}")


def _decode(node, get):
    """Rebuild what _encode described; ``get(node)`` turns a tensor/array node back into its value."""
    if not isinstance(node, dict):
        return node
    if "tensor" in node or "ndarray" in node:
        return get(node)
    if "dict" in node:
        pairs = ((key, _decode(value, get)) for key, value in node["dict"])
        return OrderedDict(pairs) if node.get("ordered") else dict(pairs)
    if "list" in node:
        return [_decode(value, get) for value in node["list"]]
    if "tuple" in node:
        return tuple(_decode(value, get) for value in node["tuple"])
    if "float" in node:
        return float(node["float"])
    raise ValueError(f"unknown node {sorted(node)} in the manifest")


def _place(array, node, map_location):
    """A tensor holding ``array`` with the dtype, device and requires_grad the node recorded."""
    saved = node.get("device", "cpu")
    dtype = dt.as_dtype(node["dtype"]) if "dtype" in node else None
    if callable(map_location):
        moved = map_location(as_tensor(array, dtype, "cpu"), saved)
        t = moved if moved is not None else _place(array, node, None)
    else:
        target = map_location.get(saved, saved) if isinstance(map_location, dict) else (map_location or saved)
        try:
            t = as_tensor(array, dtype, resolve_device(target))
        except RuntimeError as error:
            raise RuntimeError(f"gradlab.load: a tensor was saved on '{saved}' and can't be put back there ({error}); "
                               "pass map_location='cpu' to load it onto the CPU") from None
    return t.requires_grad_(True) if node.get("requires_grad") else t


def _ref(node) -> str:
    return node["tensor"] if "tensor" in node else node["ndarray"]


def _stored_value(node, array, map_location):
    if "tensor" in node:
        return _place(array, node, map_location)
    return array[()] if node.get("scalar") else array


# --- npz ---------------------------------------------------------------------------------------------


def _npz_bytes(obj) -> bytes:
    arrays = {}

    def store(array, path):
        key = f"a{len(arrays)}"
        arrays[key] = array
        return key

    manifest = {"format": "gradlab", "version": 1, "root": _encode(obj, (), store)}
    arrays[_MANIFEST] = np.frombuffer(json.dumps(manifest, allow_nan=False).encode(), np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def _npz_load(raw: bytes, name: str, map_location):
    with np.load(io.BytesIO(raw), allow_pickle=False) as archive:
        if _MANIFEST not in archive.files:
            members = archive.zip.namelist()
            if any(not member.endswith(".npy") for member in members):
                hint = " (it looks like a PyTorch torch.save file: load it with torch and save it again with gradlab)" \
                    if any(member.endswith("data.pkl") for member in members) else ""
                raise RuntimeError(f"gradlab.load: {name} is a zip archive but not an .npz file{hint}")
            arrays = ((key, archive[key]) for key in archive.files)  # arrays gradlab can't hold stay numpy arrays
            return OrderedDict((key, _place(a, {}, map_location) if a.dtype.kind in "biuf" else a) for key, a in arrays)
        manifest = json.loads(bytes(archive[_MANIFEST]).decode())
        return _decode(manifest["root"], lambda node: _stored_value(node, archive[_ref(node)], map_location))


# --- safetensors -------------------------------------------------------------------------------------


def _safetensors_bytes(obj) -> bytes:
    if not isinstance(obj, Mapping):
        raise _Unsupported(f"a .safetensors file holds a dict of tensors, and obj is a {type(obj).__name__}; "
                           "wrap it, e.g. {'weight': tensor}")
    arrays, metadata = {}, {}

    def claim(path) -> str:
        key = ".".join(str(k) for k in path)
        if key in arrays or key in metadata or key in (_MANIFEST, "__metadata__"):
            raise ValueError(f"gradlab.save: two entries flatten to the same safetensors name {key!r} (the last is "
                             f"{_where(path)}); rename one of them, or save as .npz")
        return key

    def store(array, path):
        if array.dtype.newbyteorder("=") not in _SAFETENSORS_NAMES:
            raise _Unsupported(f"{_where(path)} is an array of dtype {array.dtype}, which safetensors can't hold")
        key = claim(path)
        arrays[key] = array
        return key

    def leaves(node, path):  # a readable copy of every non-tensor value, under its dotted name
        if isinstance(node, dict) and ("dict" in node or "list" in node or "tuple" in node):
            children = node.get("dict") or enumerate(node.get("list", node.get("tuple", ())))
            for key, child in children:
                leaves(child, path + (key,))
        elif not (isinstance(node, dict) and ("tensor" in node or "ndarray" in node)):
            value = _decode(node, None)
            metadata[claim(path)] = value if isinstance(value, str) else json.dumps(value)

    root = _encode(obj, (), store)
    leaves(root, ())
    metadata[_MANIFEST] = json.dumps({"format": "gradlab", "version": 1, "root": root}, allow_nan=False)
    header, chunks, offset = {"__metadata__": metadata}, [], 0
    for key, array in arrays.items():
        data = np.ascontiguousarray(array, array.dtype.newbyteorder("<")).tobytes()
        header[key] = {"dtype": _SAFETENSORS_NAMES[array.dtype.newbyteorder("=")], "shape": list(array.shape),
                       "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)  # the data starts 8-byte aligned, as the safetensors library writes it
    return struct.pack("<Q", len(text)) + text + b"".join(chunks)


def _bfloat16_as_float32(data: bytes) -> np.ndarray:
    return (np.frombuffer(data, "<u2").astype(np.uint32) << 16).view(np.float32)


def _safetensors_load(raw: bytes, name: str, map_location):
    if len(raw) < 8:
        raise RuntimeError(f"gradlab.load: {name} is truncated: a .safetensors file starts with an 8-byte header "
                           f"length, but the file has only {len(raw)} bytes")
    (size,) = struct.unpack("<Q", raw[:8])
    if size > len(raw) - 8:
        raise RuntimeError(f"gradlab.load: {name} is truncated or not a .safetensors file: its header length says "
                           f"{size} bytes, but only {len(raw) - 8} bytes follow")
    try:
        header = json.loads(raw[8:8 + size])
    except (ValueError, UnicodeDecodeError) as error:
        raise RuntimeError(f"gradlab.load: {name} is damaged: its safetensors header is not valid JSON "
                           f"({error})") from None
    if not isinstance(header, dict):
        raise RuntimeError(f"gradlab.load: {name} is damaged: its safetensors header is not a JSON object")
    metadata = header.pop("__metadata__", None) or {}
    data = raw[8 + size:]
    arrays, end_of_data = {}, 0
    for key, info in header.items():
        try:
            code, shape, (begin, end) = info["dtype"], [int(s) for s in info["shape"]], info["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise RuntimeError(f"gradlab.load: {name} is damaged: the header entry for {key!r} lacks a valid dtype, "
                               "shape or data_offsets") from None
        if code not in _SAFETENSORS_CODES and code != "BF16":
            raise RuntimeError(f"gradlab.load: {name} holds {key!r} as {code}, a dtype gradlab can't read; supported: "
                               f"{', '.join(_SAFETENSORS_CODES)}, BF16")
        itemsize = 2 if code == "BF16" else np.dtype(_SAFETENSORS_CODES[code]).itemsize
        count = math.prod(shape)
        if end - begin != count * itemsize or begin < 0:
            raise RuntimeError(f"gradlab.load: {name} is damaged: {key!r} has shape {shape} of {code} "
                               f"({count * itemsize} bytes) but data_offsets {[begin, end]} span {end - begin} bytes")
        if end > len(data):
            raise RuntimeError(f"gradlab.load: {name} is truncated: {key!r} ends at byte {8 + size + end} but the file "
                               f"has only {len(raw)} bytes")
        chunk = data[begin:end]
        array = _bfloat16_as_float32(chunk) if code == "BF16" else np.frombuffer(chunk, _SAFETENSORS_CODES[code])
        arrays[key] = array.reshape(shape).astype(array.dtype.newbyteorder("="))
        end_of_data = max(end_of_data, end)
    if end_of_data != len(data):
        raise RuntimeError(f"gradlab.load: {name} is damaged: its tensors end at byte {8 + size + end_of_data} but the "
                           f"file has {len(raw)} bytes")
    if _MANIFEST not in metadata:  # written by another tool: a flat dict of tensors, as safetensors gives it
        return OrderedDict((key, _place(array, {}, map_location)) for key, array in arrays.items())
    root = json.loads(metadata[_MANIFEST])["root"]
    return _decode(root, lambda node: _stored_value(node, arrays[_ref(node)], map_location))


# --- pickle, on request only ----------------------------------------------------------------------------


def _moved(obj, map_location):
    """obj with every tensor inside (dicts, lists, tuples) moved as map_location says."""
    if isinstance(obj, Tensor):
        node = {"dtype": obj.dtype.name, "device": str(obj.device), "requires_grad": obj.requires_grad}
        return _place(obj.detach().numpy(), node, map_location)
    if isinstance(obj, Mapping):
        return type(obj)((key, _moved(value, map_location)) for key, value in obj.items())
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_moved(value, map_location) for value in obj)
    return obj


def _pickle_load(raw: bytes, name: str, map_location):
    obj = pickle_module.loads(raw)
    return obj if map_location is None else _moved(obj, map_location)


# --- choosing the format, reading and writing ---------------------------------------------------------------


def _name(f) -> str:
    return os.fspath(f) if isinstance(f, (str, os.PathLike)) else getattr(f, "name", None) or repr(f)


def _check_format(format):
    if format not in (None, "npz", "safetensors", "pickle"):
        raise ValueError(f"unknown format {format!r}; choose 'npz', 'safetensors' or 'pickle'")
    return format


def _from_extension(name: str):
    return _EXTENSIONS.get(os.path.splitext(name)[1].lower())


def save(obj, f, *, format: str | None = None, pickle: bool = False) -> None:
    """Write ``obj`` (a tensor, or a checkpoint of nested dicts/lists/tuples of tensors, numbers and strings) to ``f``.

    The format is ``format=`` if given, else the extension (``.npz``, ``.safetensors``; ``.pkl``), else npz
    (``pickle=True`` makes pickle the fallback instead). Anything else (a whole Module, a custom object)
    needs pickle, which you must ask for: ``pickle=True``. ``f`` is a path or a binary file object.
    """
    name = _name(f)
    chosen = _check_format(format) or _from_extension(name) or ("pickle" if pickle else "npz")
    if chosen == "pickle" and not pickle:
        raise ValueError(f"gradlab.save: {name} would be a pickle file, and gradlab writes pickle only when asked: "
                         "pass pickle=True, or save to a .npz or .safetensors path")
    try:
        if chosen == "pickle":
            payload = pickle_module.dumps(obj, protocol=pickle_module.HIGHEST_PROTOCOL)
        else:
            payload = (_npz_bytes if chosen == "npz" else _safetensors_bytes)(obj)
    except _Unsupported as error:
        raise TypeError(
            f"gradlab.save: can't store {error} in a {chosen} file, which holds only tensors, numpy arrays, numbers, "
            "strings, None and dicts/lists/tuples of them. Save model.state_dict() rather than the model, or pass "
            "pickle=True with a .pkl path (only load pickle files you trust)"
        ) from None
    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as out:
            out.write(payload)
    else:
        f.write(payload)


def _sniff(raw: bytes, name: str):
    """The format the file's first bytes show, falling back on its extension."""
    if raw[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "npz"
    if raw[:1] == b"\x80":
        return "pickle"
    if raw[8:9] == b"{" and len(raw) > 8:
        return "safetensors"
    found = _from_extension(name)
    if found is None:
        first = raw[:8].hex(" ") or "nothing: the file is empty"
        raise RuntimeError(f"gradlab.load: {name} is not an .npz, .safetensors or pickle file (it starts with "
                           f"{first}); it may be damaged, or pass format= if you know what it is")
    return found


_READERS = {"npz": _npz_load, "safetensors": _safetensors_load, "pickle": _pickle_load}


def load(f, map_location=None, *, format: str | None = None, pickle: bool = False, weights_only=None):
    """Read back what ``gradlab.save`` wrote (and flat .safetensors / numpy .npz files from elsewhere).

    The format is ``format=`` if given, else what the file's first bytes show. Tensors return to the
    device they were saved from unless ``map_location`` says otherwise: a device ('cpu'), a dict
    {'cuda:0': 'cpu'}, or a function ``(tensor, saved_device) -> tensor``. A pickle file is read only with
    ``pickle=True``; ``weights_only`` is accepted for PyTorch's sake (gradlab never unpickles without pickle=True).
    """
    name = _name(f)
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as source:
            raw = source.read()
    else:
        raw = f.read()
    chosen = _check_format(format) or _sniff(raw, name)
    if chosen == "pickle" and not pickle:
        raise pickle_module.UnpicklingError(
            f"gradlab.load: {name} is a pickle file, and unpickling can run any code its author put in it, so "
            "gradlab reads it only when asked: gradlab.load(path, pickle=True), if you trust where it came from"
        )
    try:
        return _READERS[chosen](raw, name, map_location)
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, TypeError, ValueError, OSError,
            pickle_module.UnpicklingError) as error:
        size = f"{len(raw)} bytes"
        raise RuntimeError(f"gradlab.load: {name} is damaged or truncated ({size}); reading it as {chosen} failed: "
                           f"{type(error).__name__}: {error}") from None
