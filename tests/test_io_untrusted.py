"""gradlab.load on hostile files: refused at once, with the file named, never unpickled, memory bounded."""

import io
import json
import os
import pickle
import struct
import threading
import tracemalloc
import zipfile
import zlib

import numpy as np
import pytest

import gradlab as gl

try:
    import safetensors.numpy as reference
except ImportError:  # the comparisons with the reference library skip; gradlab's own checks still run
    reference = None

requires_reference = pytest.mark.skipif(reference is None, reason="safetensors is not installed (dev extra)")


def safetensors_file(header: dict, data: bytes = b"", pad: bytes = b"") -> bytes:
    text = json.dumps(header).encode() + pad
    return struct.pack("<Q", len(text)) + text + data


def finishes_quickly(fn, seconds=20):
    """Run fn in a thread; the error it raises (if any), and fail if it is still running after `seconds`."""
    outcome = {}

    def run():
        try:
            outcome["value"] = fn()
        except BaseException as error:  # noqa: BLE001  (the test inspects it)
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still reading after {seconds} s"
    return outcome.get("error")


class Unseekable(io.RawIOBase):
    """A pipe-like stream over bytes (or endless zeros), counting what is read from it."""

    def __init__(self, data=None):
        self.data, self.position = data, 0

    def readable(self):
        return True

    def readinto(self, buffer):
        count = len(buffer) if self.data is None else min(len(buffer), len(self.data) - self.position)
        buffer[:count] = bytes(count) if self.data is None else self.data[self.position:self.position + count]
        self.position += count
        return count


# --- pickle: never with weights_only=True ------------------------------------------------------------


class _Trap:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (os.mkdir, (self.path,))


@pytest.mark.parametrize("pickle_flag", [True, False])
def test_weights_only_never_unpickles(tmp_path, pickle_flag):
    trap = tmp_path / "created-by-the-pickle"
    path = tmp_path / "trap.pkl"
    path.write_bytes(pickle.dumps(_Trap(str(trap))))
    with pytest.raises((ValueError, pickle.UnpicklingError), match=r"trap\.pkl.*(weights_only=True never unpickles|"
                                                                   r"is a pickle file)"):
        gl.load(path, weights_only=True, pickle=pickle_flag)
    assert not trap.exists()


def test_pickle_is_read_only_when_asked_and_without_weights_only(tmp_path):
    path = tmp_path / "ok.pkl"
    gl.save({"w": gl.ones(2)}, path, pickle=True)
    assert gl.load(path, pickle=True)["w"].tolist() == [1.0, 1.0]
    assert gl.load(path, pickle=True, weights_only=False)["w"].tolist() == [1.0, 1.0]


# --- endless and lying inputs ---------------------------------------------------------------------------


@pytest.mark.parametrize("format", [None, "safetensors", "npz"])
def test_dev_zero_fails_at_once(format):
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero on this system")
    error = finishes_quickly(lambda: gl.load("/dev/zero", format=format))
    assert isinstance(error, RuntimeError) and "/dev/zero" in str(error), error


def test_endless_stream_with_a_lying_header_length_fails_at_once():
    claim = struct.pack("<Q", 10**15)
    error = finishes_quickly(lambda: gl.load(Unseekable(claim + b"{" + bytes(100)), format="safetensors"))
    assert isinstance(error, RuntimeError) and "header length says 1000000000000000 bytes" in str(error), error


def test_a_stream_is_read_no_further_than_its_header_declares():
    data = np.arange(4, dtype="<f4").tobytes()
    raw = safetensors_file({"w": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, data)
    stream = Unseekable(raw + b"more bytes that belong to someone else")
    loaded = gl.load(io.BufferedReader(stream, buffer_size=1), format="safetensors")
    assert loaded["w"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert stream.position == len(raw)


def test_a_header_that_promises_more_data_than_the_file_holds_allocates_nothing(tmp_path):
    path = tmp_path / "liar.safetensors"
    path.write_bytes(safetensors_file({"w": {"dtype": "F64", "shape": [10**12], "data_offsets": [0, 8 * 10**12]}}))
    tracemalloc.start()
    with pytest.raises(RuntimeError, match=r"liar\.safetensors is truncated: its header declares 8000000000000 bytes"):
        gl.load(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10 * 2**20


# --- safetensors headers the reference library refuses ------------------------------------------------------

F32_8 = np.zeros(2, "<f4").tobytes()
HOSTILE_HEADERS = {
    "overlapping ranges": ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                            "b": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, F32_8, "overlaps"),
    "a gap between tensors": ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}}, F32_8,
                              "leaves bytes 0..4 unused"),
    "data past the last tensor": ({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}, F32_8,
                                  "declares 4 bytes of tensor data, but 8 bytes follow"),
    "a negative dimension": ({"a": {"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]}}, F32_8,
                             "shape is a list of non-negative integers"),
    "a fractional dimension": ({"a": {"dtype": "F32", "shape": [2.0], "data_offsets": [0, 8]}}, F32_8,
                               "shape is a list of non-negative integers"),
    "a shape that does not match its bytes": ({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, F32_8,
                                              r"\(12 bytes\) but data_offsets \[0, 8\] span 8"),
    "begin after end": ({"a": {"dtype": "F32", "shape": [0], "data_offsets": [8, 0]}}, F32_8,
                        "begin <= end"),
    "offsets past the data": ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, F32_8,
                              "declares 16 bytes of tensor data, but 8 bytes follow"),
    "metadata that is not strings": ({"__metadata__": {"k": 1}, "a": {"dtype": "F32", "shape": [2],
                                                                      "data_offsets": [0, 8]}}, F32_8,
                                     "__metadata__ must map strings to strings"),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_HEADERS))
def test_hostile_safetensors_headers_are_refused_like_the_reference_does(tmp_path, case):
    header, data, message = HOSTILE_HEADERS[case]
    raw = safetensors_file(header, data)
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(raw)
    with pytest.raises(RuntimeError, match=rf"hostile\.safetensors .*{message}"):
        gl.load(path)
    if reference is not None:
        with pytest.raises(Exception):
            reference.load(raw)


def test_deeply_nested_header_is_refused_before_it_is_parsed(tmp_path):
    deep = b'{"a": {"dtype": "F32", "shape": ' + b"[" * 100_000 + b"]" * 100_000 + b', "data_offsets": [0, 0]}}'
    path = tmp_path / "deep.safetensors"
    path.write_bytes(struct.pack("<Q", len(deep)) + deep)
    with pytest.raises(RuntimeError, match=r"deep\.safetensors is damaged or hostile: its safetensors header nests "
                                           r"100002 levels deep \(at most 64"):
        gl.load(path)


def test_a_key_named_twice_is_refused(tmp_path):
    text = (b'{"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, '
            b'"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}')
    path = tmp_path / "twice.safetensors"
    path.write_bytes(struct.pack("<Q", len(text)) + text + bytes(4))
    with pytest.raises(RuntimeError, match=r"twice\.safetensors is damaged: its safetensors header names 'a' twice"):
        gl.load(path)


@requires_reference
def test_files_the_reference_library_writes_load(tmp_path):
    arrays = {"b": np.arange(6, dtype=np.float32).reshape(2, 3), "a": np.array([1, 2], np.int64),
              "empty": np.zeros((0, 4), np.float64)}
    loaded = gl.load(io.BytesIO(reference.save(arrays)), format="safetensors")
    for key, array in arrays.items():
        np.testing.assert_array_equal(loaded[key].numpy(), array)
        assert loaded[key].shape == array.shape


# --- npz archives --------------------------------------------------------------------------------------------


def npz_with_manifest(tmp_path, root, members):
    path = tmp_path / "crafted.npz"
    arrays = dict(members)
    arrays["__gradlab__"] = np.frombuffer(json.dumps({"format": "gradlab", "version": 1, "root": root}).encode(),
                                          np.uint8)
    np.savez(path, **arrays)
    return path


def test_a_manifest_that_names_one_member_many_times_is_refused(tmp_path):
    node = {"tensor": "a0", "dtype": "float32", "device": "cpu"}
    path = npz_with_manifest(tmp_path, {"list": [node] * 1000}, {"a0": np.zeros(1000, np.float32)})
    with pytest.raises(RuntimeError, match=r"crafted\.npz is damaged or hostile: its manifest names the member 'a0' "
                                           r"more than once"):
        gl.load(path)


def test_a_manifest_that_names_a_missing_member_is_refused(tmp_path):
    node = {"tensor": "a7", "dtype": "float32", "device": "cpu"}
    path = npz_with_manifest(tmp_path, {"list": [node]}, {"a0": np.zeros(3, np.float32)})
    with pytest.raises(RuntimeError, match=r"crafted\.npz is damaged: its manifest names members the archive lacks: "
                                           r"\['a7'\]"):
        gl.load(path)


def test_a_deeply_nested_manifest_is_refused(tmp_path):
    root = 0
    for _ in range(100):  # 200 levels: a dict and a list each time
        root = {"list": [root]}
    path = npz_with_manifest(tmp_path, root, {})
    with pytest.raises(RuntimeError, match=r"crafted\.npz is damaged or hostile: its gradlab manifest nests"):
        gl.load(path)


def test_an_npy_header_that_lies_about_its_size_is_refused_before_reading(tmp_path):
    small = io.BytesIO()
    np.lib.format.write_array_header_1_0(small, {"descr": "<f8", "fortran_order": False, "shape": (10**11,)})
    path = tmp_path / "bomb.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("w.npy", small.getvalue() + bytes(800))
    tracemalloc.start()
    with pytest.raises(RuntimeError, match=r"w\.npy in .*bomb\.npz is damaged: its header describes 800000000000 bytes"):
        gl.load(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 10 * 2**20


def test_object_arrays_are_refused(tmp_path):
    path = tmp_path / "objects.npz"
    np.savez(path, w=np.array([{"a": 1}], dtype=object))
    with pytest.raises(RuntimeError, match=r"objects\.npz .*(Python objects|Object arrays cannot be loaded)"):
        gl.load(path)


@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_memory_used_by_a_load_is_bounded_by_the_tensors_it_returns(tmp_path, fmt):
    state = {"w": gl.zeros(1 << 20), "b": gl.ones(1 << 19)}  # 6 MiB of float32
    path = tmp_path / f"model.{fmt}"
    gl.save(state, path)
    tracemalloc.start()
    loaded = gl.load(path)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    returned = sum(t.nbytes for t in loaded.values())
    assert returned == 6 * 2**20
    assert peak < 1.5 * returned + 2**20, f"peak {peak} bytes for {returned} bytes of tensors"


# --- compressed members: the declared sizes are checked before anything inflates -------------------------


def npy_header(shape, dtype="<f8") -> bytes:
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": dtype, "fortran_order": False, "shape": shape})
    return header.getvalue()


def zip_bomb(path, mib: int):
    """A valid .npz whose one member, ``mib`` MiB of float64 zeros, deflates to about 1/1000 of that."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        with archive.open("w.npy", "w") as member:
            member.write(npy_header((mib * 2**20 // 8,)))
            for _ in range(mib):
                member.write(bytes(2**20))
    return path


def declaring(raw: bytes, file_size: int, crc: int | None = None) -> bytes:
    """A one-member zip with its uncompressed size (and CRC) rewritten in both headers: a lying directory."""
    raw = bytearray(raw)
    local, central = raw.index(b"PK\x03\x04"), raw.index(b"PK\x01\x02")
    struct.pack_into("<I", raw, local + 22, file_size)
    struct.pack_into("<I", raw, central + 24, file_size)
    if crc is not None:
        struct.pack_into("<I", raw, local + 14, crc)
        struct.pack_into("<I", raw, central + 16, crc)
    return bytes(raw)


def test_a_zip_bomb_is_refused_before_it_inflates(tmp_path):
    path = zip_bomb(tmp_path / "bomb.npz", mib=32)
    assert path.stat().st_size < 2**20 // 16  # 32 MiB of zeros in ~32 KiB
    declared = 32 * 2**20 + len(npy_header((4 * 2**20,)))
    tracemalloc.start()
    with pytest.raises(RuntimeError, match=rf"^gradlab\.load: .*bomb\.npz: the member w\.npy declares {declared} bytes "
                                           rf"\(32\.0 MiB\) inflated from \d+ compressed, .* more than "
                                           rf"max_bytes=8388608 \(8\.0 MiB\)\. .*zip bomb.*max_bytes={declared}\), "
                                           rf"or max_bytes=None$"):
        gl.load(path, max_bytes=8 * 2**20)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 4 * 2**20  # nothing was inflated
    assert gl.load(path, max_bytes=None)["w"].shape == (4 * 2**20,)  # a real archive, read when the limit allows


def test_the_default_limit_refuses_a_directory_declaring_more_than_a_gib(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("w.npy", npy_header((2**28,)) + bytes(64))
    path = tmp_path / "claims.npz"
    path.write_bytes(declaring(buffer.getvalue(), 2**31 + 128))
    with pytest.raises(RuntimeError, match=r"w\.npy declares 2147483776 bytes \(2048\.0 MiB\).*more than "
                                           r"max_bytes=1073741824 \(1024\.0 MiB\)"):
        gl.load(path)


def test_a_member_that_inflates_past_its_declared_size_is_refused(tmp_path):
    content = npy_header((1000,)) + np.arange(1000.0).tobytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("w.npy", content + bytes(2**20))  # a megabyte more than the directory will say
    path = tmp_path / "lying.npz"
    path.write_bytes(declaring(buffer.getvalue(), len(content), zlib.crc32(content)))
    with pytest.raises(RuntimeError, match=rf"w\.npy in .*lying\.npz is damaged or hostile: it inflates to more than "
                                           rf"the {len(content)} bytes its zip entry declares"):
        gl.load(path)


@pytest.mark.parametrize("method, kind", [(zipfile.ZIP_BZIP2, "bzip2"), (zipfile.ZIP_LZMA, "LZMA")])
def test_members_compressed_with_bzip2_or_lzma_are_not_read(tmp_path, method, kind):
    path = tmp_path / "other.npz"
    with zipfile.ZipFile(path, "w", method) as archive:
        archive.writestr("w.npy", npy_header((3,)) + np.ones(3).tobytes())
    with pytest.raises(RuntimeError, match=rf"^gradlab\.load: w\.npy in .*other\.npz is compressed with {kind}, which "
                                           r"gradlab does not read .*np\.savez or np\.savez_compressed$"):
        gl.load(path)


def test_compressed_and_stored_npz_files_still_load_under_the_default_limit(tmp_path):
    np.savez_compressed(tmp_path / "small.npz", w=np.arange(6.0), b=np.zeros(1000, np.float32))
    loaded = gl.load(tmp_path / "small.npz")
    assert loaded["w"].tolist() == list(range(6)) and loaded["b"].shape == (1000,)
    with pytest.raises(TypeError, match=r"max_bytes is the number of bytes .* got '1GB'"):
        gl.load(tmp_path / "small.npz", max_bytes="1GB")
