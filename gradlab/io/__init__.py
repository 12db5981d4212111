"""``gradlab.save`` and ``gradlab.load``: tensors and checkpoints on disk, without running code from the file.

A checkpoint is nested dicts, lists and tuples of tensors, numpy arrays, numbers, strings and None
(``{"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3}``). Two safe formats hold it:

- ``.npz``: numpy's zip of arrays; the nesting, key types and dtypes go in a JSON manifest beside them.
- ``.safetensors``: an 8-byte little-endian header length, a JSON header (dtype, shape, byte offsets of
  each tensor) and the raw little-endian bytes. Nested keys are flattened with dots
  (``optimizer.state.0.exp_avg``), other values go in the header's ``__metadata__`` as strings, and the
  exact nesting is kept there too, so gradlab restores it while other tools see a flat dict of tensors.

Pickle can store anything, but loading a pickle can run any code the file's author chose, so gradlab
reads or writes one only when you pass ``pickle=True`` (and never with ``weights_only=True``). The
other two are read as untrusted input: ``npz.py`` and ``safetensors.py`` say what is checked.
"""

from __future__ import annotations

import os
import pickle as pickler
import zipfile
import zlib
from collections.abc import Mapping

from . import npz, safetensors
from .reading import Damaged
from .structure import Unsupported, place
from ..tensor import Tensor

__all__ = ["save", "load"]

_EXTENSIONS = {".npz": "npz", ".safetensors": "safetensors", ".pkl": "pickle", ".pickle": "pickle"}


# --- pickle, on request only ----------------------------------------------------------------------------


def _moved(obj, map_location):
    """obj with every tensor inside (dicts, lists, tuples) moved as map_location says."""
    if isinstance(obj, Tensor):
        node = {"dtype": obj.dtype.name, "device": str(obj.device), "requires_grad": obj.requires_grad}
        return place(obj.detach().numpy(), node, map_location)
    if isinstance(obj, Mapping):
        return type(obj)((key, _moved(value, map_location)) for key, value in obj.items())
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        return type(obj)(_moved(value, map_location) for value in obj)
    return obj


def _pickle_load(source, name: str, map_location, module=None, load_args=None):
    obj = (module or pickler).load(source, **(load_args or {}))
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


def save(obj, f, pickle_module=None, pickle_protocol=None, *, format: str | None = None, pickle: bool = False) -> None:
    """Write ``obj`` (a tensor, or a checkpoint of nested dicts/lists/tuples of tensors, numbers and strings) to ``f``.

    The format is ``format=`` if given, else the extension (``.npz``, ``.safetensors``; ``.pkl``), else npz
    (``pickle=True`` makes pickle the fallback instead). Anything else (a whole Module, a custom object)
    needs pickle, which you must ask for: ``pickle=True``. ``f`` is a path or a binary file object.
    PyTorch's ``pickle_module`` and ``pickle_protocol`` apply to pickle files only.
    """
    name = _name(f)
    chosen = _check_format(format) or _from_extension(name) or ("pickle" if pickle else "npz")
    if chosen == "pickle" and not pickle:
        raise ValueError(f"gradlab.save: {name} would be a pickle file, and gradlab writes pickle only when asked: "
                         "pass pickle=True, or save to a .npz or .safetensors path")
    try:
        if chosen == "pickle":
            writer = pickle_module or pickler
            payload = writer.dumps(obj, protocol=pickle_protocol or pickler.HIGHEST_PROTOCOL)
        else:
            payload = (npz if chosen == "npz" else safetensors).to_bytes(obj)
    except Unsupported as error:
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


def _sniff(head: bytes, name: str):
    """The format the file's first bytes show, falling back on its extension."""
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "npz"
    if head[:1] == b"\x80":
        return "pickle"
    if head[8:9] == b"{":
        return "safetensors"
    found = _from_extension(name)
    if found is None:
        first = head[:8].hex(" ") or "nothing: the file is empty"
        raise RuntimeError(f"gradlab.load: {name} is not an .npz, .safetensors or pickle file (it starts with "
                           f"{first}); it may be damaged, or pass format= if you know what it is")
    return found


class _Rejoined:
    """A stream that can't seek, with the bytes already read to tell its format put back in front."""

    def __init__(self, head: bytes, rest):
        self._head, self._rest = head, rest

    def read(self, count: int = -1) -> bytes:
        if count is None or count < 0:
            data, self._head = self._head + self._rest.read(), b""
            return data
        data, self._head = self._head[:count], self._head[count:]
        return data + (self._rest.read(count - len(data)) if count > len(data) else b"")

    def readline(self) -> bytes:  # pickle asks for it
        return self.read(1) if self._head else self._rest.readline()

    def seekable(self) -> bool:
        return False


def load(f, map_location=None, pickle_module=None, *, format: str | None = None, pickle: bool = False,
         weights_only=None, mmap=None, max_bytes: int | None = npz.MAX_INFLATED_BYTES, **pickle_load_args):
    """Read back what ``gradlab.save`` wrote (and flat .safetensors / numpy .npz files from elsewhere).

    The format is ``format=`` if given, else what the file's first bytes show. Tensors return to the
    device they were saved from unless ``map_location`` says otherwise: a device ('cpu'), a dict
    {'cuda:0': 'cpu'}, or a function ``(tensor, saved_device) -> tensor``. A pickle file is read only with
    ``pickle=True``, and never with ``weights_only=True`` (PyTorch's flag for "tensors only, no code");
    ``pickle_module`` and ``pickle_load_args`` then go to the unpickler. ``mmap`` is accepted and has no
    effect: the tensors are read into memory.

    What an untrusted file can cost: a .safetensors file, or an .npz whose members are stored (as
    ``gradlab.save`` and ``np.savez`` write them), makes a load allocate no more than the file's own size.
    A compressed .npz member inflates up to ~1000 times its size, so the sizes its zip directory
    declares are checked first: the compressed members may inflate to ``max_bytes`` in all (default
    1 GiB, ``gradlab.io.npz.MAX_INFLATED_BYTES``; ``None``: no limit, for files you trust), and one that
    inflates past its declared size is refused as it reads. The worst an .npz can cost is then its size
    plus ``max_bytes`` of memory, and the time to inflate them (about a second per GiB).
    """
    name = _name(f)
    if max_bytes is not None and (not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 0):
        raise TypeError(f"gradlab.load: max_bytes is the number of bytes an .npz's compressed arrays may inflate to "
                        f"(an int >= 0), or None for no limit; got {max_bytes!r}")
    if weights_only and pickle:
        raise ValueError(f"gradlab.load: {name}: weights_only=True and pickle=True ask for opposite things; "
                         "weights_only=True never unpickles. Drop one of them")
    if isinstance(f, (str, os.PathLike)):
        with open(f, "rb") as source:
            return _load_from(source, name, map_location, format, pickle, (pickle_module, pickle_load_args), max_bytes)
    return _load_from(f, name, map_location, format, pickle, (pickle_module, pickle_load_args), max_bytes)


def _load_from(source, name: str, map_location, format, pickle: bool, unpickler, max_bytes):
    start = source.tell() if source.seekable() else None
    head = source.read(16)
    chosen = _check_format(format) or _sniff(head, name)
    if chosen == "pickle" and not pickle:
        raise pickler.UnpicklingError(
            f"gradlab.load: {name} is a pickle file, and unpickling can run any code its author put in it, so "
            "gradlab reads it only when asked: gradlab.load(path, pickle=True), if you trust where it came from"
        )
    if start is not None:
        source.seek(start)
    else:
        source = _Rejoined(head, source)
    try:
        if chosen == "pickle":
            return _pickle_load(source, name, map_location, *unpickler)
        if chosen == "npz":
            return npz.read(source, name, map_location, max_bytes)
        return safetensors.read(source, name, map_location)
    except Damaged:
        raise
    except (zipfile.BadZipFile, zlib.error, EOFError, KeyError, TypeError, ValueError, OSError,
            pickler.UnpicklingError) as error:
        raise RuntimeError(f"gradlab.load: {name} is damaged or truncated; reading it as {chosen} failed: "
                           f"{type(error).__name__}: {error}") from None
