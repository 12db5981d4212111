"""A checkpoint's structure as a JSON tree: containers and plain values inline, arrays by reference.

``encode`` walks nested dicts/lists/tuples and hands each tensor or numpy array to a ``store``
function that keeps it and returns a name; ``decode`` rebuilds the nesting, asking ``get`` for the
value behind each name. Both formats write this tree: npz as a JSON member, safetensors in its metadata.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping

import numpy as np

from .. import dtypes as dt
from ..backends.device import resolve_device
from ..creation import as_tensor
from ..tensor import Tensor

MANIFEST = "__gradlab__"  # the npz member / safetensors metadata key that holds the structure


class Unsupported(TypeError):
    """A value that the safe formats cannot hold (the message says which, and where)."""


def where(path) -> str:
    return "obj" + "".join(f"[{key!r}]" for key in path)


def encode(obj, path, store):
    """The JSON node for obj; ``store(array, path)`` keeps an array and returns its reference."""
    if obj is None or isinstance(obj, (bool, str, int)):
        return obj
    if isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.kind not in "OV":  # before float: np.float64 is one
        return {"ndarray": store(np.asarray(obj), path), "scalar": isinstance(obj, np.generic)}
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else {"float": repr(obj)}
    if isinstance(obj, Tensor):
        array = obj.detach().numpy()
        if obj.dtype is dt.bfloat16:  # numpy has no bfloat16 of its own: its 16-bit patterns go to disk
            array = array.view(np.uint16)
        node = {"tensor": store(array, path), "dtype": obj.dtype.name, "device": str(obj.device)}
        if obj.requires_grad:
            node["requires_grad"] = True
        return node
    if isinstance(obj, Mapping):
        for key in obj:
            if key is not None and not isinstance(key, (str, int, float)):
                raise Unsupported(f"the key {key!r} of {where(path)} is a {type(key).__name__}; "
                                  "keys must be strings, numbers or None")
        pairs = [[key, encode(value, path + (key,), store)] for key, value in obj.items()]
        return {"dict": pairs, "ordered": isinstance(obj, OrderedDict)}
    if isinstance(obj, (list, tuple)):
        items = [encode(value, path + (i,), store) for i, value in enumerate(obj)]
        return {"tuple" if isinstance(obj, tuple) else "list": items}
    raise Unsupported(f"{where(path)} is a {type(obj).__module__}.{type(obj).__qualname__}")


def decode(node, get):
    """Rebuild what ``encode`` described; ``get(node)`` turns a tensor/array node back into its value."""
    if not isinstance(node, dict):
        return node
    if "tensor" in node or "ndarray" in node:
        return get(node)
    if "dict" in node:
        pairs = ((key, decode(value, get)) for key, value in node["dict"])
        return OrderedDict(pairs) if node.get("ordered") else dict(pairs)
    if "list" in node:
        return [decode(value, get) for value in node["list"]]
    if "tuple" in node:
        return tuple(decode(value, get) for value in node["tuple"])
    if "float" in node:
        return float(node["float"])
    raise ValueError(f"unknown node {sorted(node)} in the manifest")


def place(array, node, map_location):
    """A tensor holding ``array`` with the dtype, device and requires_grad the node recorded."""
    saved = node.get("device", "cpu")
    dtype = dt.as_dtype(node["dtype"]) if "dtype" in node else None
    if dtype is dt.bfloat16 and array.dtype == np.uint16:
        array = array.view(dt.numpy_bfloat16())
    if callable(map_location):
        moved = map_location(as_tensor(array, dtype, "cpu"), saved)
        t = moved if moved is not None else place(array, node, None)
    else:
        target = map_location.get(saved, saved) if isinstance(map_location, dict) else (map_location or saved)
        try:
            t = as_tensor(array, dtype, resolve_device(target))
        except RuntimeError as error:
            raise RuntimeError(f"gradlab.load: a tensor was saved on '{saved}' and can't be put back there ({error}); "
                               "pass map_location='cpu' to load it onto the CPU") from None
    return t.requires_grad_(True) if node.get("requires_grad") else t


def reference(node) -> str:
    return node["tensor"] if "tensor" in node else node["ndarray"]


def stored_value(node, array, map_location):
    if "tensor" in node:
        return place(array, node, map_location)
    return array[()] if node.get("scalar") else array
