"""Reading an untrusted file without trusting it: never past what it declares, never deeper than a limit.

A checkpoint's header says how many bytes follow and how deeply its JSON nests. Both are checked
against limits before anything is allocated, so a hostile file (``/dev/zero``, a header claiming a
terabyte, JSON nested a million levels) fails at once with an error that names the file.
"""

from __future__ import annotations

import json
import os
import re
import stat

import numpy as np

MAX_HEADER_BYTES = 100_000_000  # the safetensors library's limit on a header; gradlab's npz manifest too
MAX_JSON_DEPTH = 64  # a checkpoint's nesting (model -> layer -> state -> tensor) is a handful of levels

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


class Damaged(RuntimeError):
    """The file is not what its header says: truncated, inconsistent or hostile."""


def read_exactly(source, count: int, what: str, name: str, size_checked: bool = False) -> bytearray:
    """``count`` bytes from the file object, or a clear error if it ends first.

    When the file is known to hold them (``size_checked``) they go straight into one buffer; otherwise
    they are read in chunks into a growing one, so memory follows the bytes that really arrive and a
    header that promises more than the file holds fails at the end of the file, not in an allocation.
    """
    if size_checked and hasattr(source, "readinto"):
        buffer = bytearray(count)
        view, filled = memoryview(buffer), 0
        while filled < count:
            got = source.readinto(view[filled:])
            if not got:
                break
            filled += got
    else:
        buffer = bytearray()
        while len(buffer) < count:
            chunk = source.read(min(count - len(buffer), 1 << 20))
            if not chunk:
                break
            buffer += chunk
        filled = len(buffer)
    if filled < count:
        raise Damaged(f"gradlab.load: {name} is truncated: {what} needs {count} bytes, but the file ends after {filled}")
    return buffer


def remaining_bytes(source) -> int | None:
    """How many bytes are left in a regular file (None for pipes, sockets and devices: unknown)."""
    try:
        info = os.fstat(source.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        return info.st_size - source.tell()
    except (AttributeError, OSError, ValueError):
        size = getattr(source, "getbuffer", None)  # io.BytesIO
        return len(size()) - source.tell() if size else None


def json_header(text: bytes, what: str, name: str):
    """Parse a JSON header after checking how deeply it nests (counted outside strings, before parsing)."""
    brackets = np.frombuffer(_STRING.sub(b'""', text), np.uint8)
    step = np.isin(brackets, (ord("["), ord("{"))).astype(np.int64) - np.isin(brackets, (ord("]"), ord("}")))
    depth = int(np.cumsum(step).max(initial=0))
    if depth > MAX_JSON_DEPTH:
        raise Damaged(f"gradlab.load: {name} is damaged or hostile: its {what} nests {depth} levels deep "
                      f"(at most {MAX_JSON_DEPTH} are read)")
    try:
        return json.loads(text, object_pairs_hook=lambda pairs: _unique(pairs, what, name))
    except (ValueError, UnicodeDecodeError) as error:
        raise Damaged(f"gradlab.load: {name} is damaged: its {what} is not valid JSON ({error})") from None


def _unique(pairs, what: str, name: str) -> dict:
    """A JSON object whose keys are all different: a repeated key would let a file say two things at once."""
    result = dict(pairs)
    if len(result) != len(pairs):
        seen = set()
        twice = next(key for key, _ in pairs if key in seen or seen.add(key))
        raise Damaged(f"gradlab.load: {name} is damaged: its {what} names {twice!r} twice")
    return result
