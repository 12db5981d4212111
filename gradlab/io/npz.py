"""The ``.npz`` format: numpy's zip of ``.npy`` arrays, plus a JSON manifest member for the nesting.

Reading trusts nothing in the archive: each member's ``.npy`` header (read with numpy's literal-only
parser, object arrays refused) must describe exactly the bytes the zip entry holds, the member is
read up to that size and no further (a deflate bomb stops there), and the manifest may name each
member once (so a small file cannot make a load allocate the same array many times).

A compressed member can inflate a thousandfold (255 KiB of deflate make 256 MiB of zeros), so the
sizes the zip directory declares are added up before anything is inflated, against ``max_bytes``;
a member that inflates past its declared size is refused as it reads, and bzip2 and LZMA members
(which inflate a whole chunk at once, unbounded) are not read at all: numpy writes stored or deflated.
"""

from __future__ import annotations

import copy
import io
import json
import math
import zipfile
from collections import OrderedDict

import numpy as np

from .reading import MAX_HEADER_BYTES, Damaged, json_header, read_exactly, remaining_bytes
from .structure import MANIFEST, decode, encode, place, reference, stored_value

MAX_INFLATED_BYTES = 1 << 30  # gradlab.load's default max_bytes: what an .npz's compressed members may inflate to
_READABLE = {zipfile.ZIP_STORED: "stored", zipfile.ZIP_DEFLATED: "deflated"}
_COMPRESSIONS = {zipfile.ZIP_BZIP2: "bzip2", zipfile.ZIP_LZMA: "LZMA"}


def to_bytes(obj) -> bytes:
    arrays = {}

    def store(array, path):
        key = f"a{len(arrays)}"
        arrays[key] = array
        return key

    manifest = {"format": "gradlab", "version": 1, "root": encode(obj, (), store)}
    arrays[MANIFEST] = np.frombuffer(json.dumps(manifest, allow_nan=False).encode(), np.uint8)
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def read(source, name: str, map_location, max_bytes: int | None = MAX_INFLATED_BYTES):
    """Everything in the archive: gradlab's nesting if it has a manifest, else a dict of its arrays.

    The compressed members may inflate to ``max_bytes`` in all (None: no limit), checked on the sizes
    the zip directory declares before any is read; stored members hold their bytes in the file itself.
    """
    start = source.tell() if source.seekable() else None
    magic = source.read(4)
    if magic not in (b"PK\x03\x04", b"PK\x05\x06"):  # before zipfile, which reads a device such as /dev/zero forever
        raise Damaged(f"gradlab.load: {name} is not an .npz file: it does not start as a zip archive does (PK)")
    if start is None or remaining_bytes(source) is None:  # a pipe: a zip's index is at its end
        source = io.BytesIO(magic + source.read())
    else:
        source.seek(start)
    archive = zipfile.ZipFile(source)
    members = {info.filename: info for info in archive.infolist()}
    _check_declared_sizes(members.values(), name, max_bytes)
    if MANIFEST + ".npy" not in members:
        if any(not member.endswith(".npy") for member in members):
            hint = " (it looks like a PyTorch torch.save file: load it with torch and save it again with gradlab)" \
                if any(member.endswith("data.pkl") for member in members) else ""
            raise Damaged(f"gradlab.load: {name} is a zip archive but not an .npz file{hint}")
        arrays = ((member[:-4], _member(archive, info, name)) for member, info in members.items())
        return OrderedDict((key, place(a, {}, map_location) if a.dtype.kind in "biuf" else a) for key, a in arrays)
    manifest = _member(archive, members[MANIFEST + ".npy"], name, limit=MAX_HEADER_BYTES)
    root = json_header(manifest.tobytes(), "gradlab manifest", name)["root"]
    named = []
    decode(root, lambda node: named.append(reference(node)))
    if len(set(named)) != len(named):
        twice = next(key for i, key in enumerate(named) if key in named[:i])
        raise Damaged(f"gradlab.load: {name} is damaged or hostile: its manifest names the member {twice!r} more "
                      "than once (gradlab writes each array once)")
    missing = [key for key in named if key + ".npy" not in members]
    if missing:
        raise Damaged(f"gradlab.load: {name} is damaged: its manifest names members the archive lacks: {missing}")
    arrays = {key: _member(archive, members[key + ".npy"], name) for key in named}
    return decode(root, lambda node: stored_value(node, arrays[reference(node)], map_location))


def _check_declared_sizes(infos, name: str, max_bytes: int | None) -> None:
    """Refuse, before inflating anything, members gradlab cannot read safely and compressed members that
    declare more than ``max_bytes`` in all."""
    inflated = 0
    for info in infos:
        if info.compress_type not in _READABLE:
            kind = _COMPRESSIONS.get(info.compress_type, f"method {info.compress_type}")
            raise Damaged(f"gradlab.load: {info.filename} in {name} is compressed with {kind}, which gradlab does not "
                          "read (it inflates a whole chunk at once, however far); numpy writes members stored or "
                          "deflated: np.savez or np.savez_compressed")
        if info.compress_type == zipfile.ZIP_STORED or max_bytes is None:
            continue
        inflated += info.file_size
        if inflated > max_bytes:
            raise Damaged(f"gradlab.load: {name}: the member {info.filename} declares {info.file_size} bytes "
                          f"({_mib(info.file_size)}) inflated from {info.compress_size} compressed, which takes the "
                          f"compressed members to {inflated} bytes, more than max_bytes={max_bytes} "
                          f"({_mib(max_bytes)}). A small file that inflates this far may be a zip bomb; if you trust "
                          f"it, raise the limit: gradlab.load(..., max_bytes={inflated}), or max_bytes=None")


def _mib(count: int) -> str:
    return f"{count / 2**20:.1f} MiB"


def _member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, limit: int | None = None) -> np.ndarray:
    """One ``.npy`` member, read only as far as its header says, after checking the zip entry agrees."""
    where = f"{info.filename} in {name}"
    capped = copy.copy(info)
    # zipfile stops at the declared size (then checks the CRC): let it go a little further (past its 4 KiB read-ahead),
    # so that a byte beyond the declared end, if the member inflates to one, shows the lie by name
    capped.file_size = info.file_size + (1 << 16)
    with archive.open(capped) as stream:
        version = np.lib.format.read_magic(stream)
        read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, fortran_order, dtype = read_header(stream)
        if dtype.hasobject:
            raise Damaged(f"gradlab.load: {where} holds Python objects, which would need unpickling; gradlab reads "
                          "numeric arrays only")
        count = math.prod(shape) * dtype.itemsize
        if info.file_size != stream.tell() + count:
            raise Damaged(f"gradlab.load: {where} is damaged: its header describes {count} bytes of {dtype} "
                          f"{list(shape)}, but the zip entry holds {info.file_size - stream.tell()}")
        if limit is not None and count > limit:
            raise Damaged(f"gradlab.load: {where} is {count} bytes, more than the {limit} it may have")
        data = read_exactly(stream, count, f"the array {info.filename}", name)
        if stream.read(1):
            raise Damaged(f"gradlab.load: {where} is damaged or hostile: it inflates to more than the "
                          f"{info.file_size} bytes its zip entry declares")
    return np.frombuffer(data, dtype).reshape(shape, order="F" if fortran_order else "C")
