"""gradlab.save / gradlab.load: exact round trips in .npz and .safetensors, no pickle unless asked, clear errors."""

import io
import json
import pickle
import struct
import zipfile
from collections import OrderedDict

import numpy as np
import pytest
from helpers import requires_torch, torch

import gradlab as gl

FORMATS = ["npz", "safetensors"]


def tensors_of_every_dtype():
    rng = np.random.default_rng(0)
    return OrderedDict([
        ("f32", gl.tensor(rng.standard_normal((3, 4)).astype(np.float32))),
        ("f64", gl.tensor(rng.standard_normal(5))),
        ("f16", gl.tensor(np.array([1.5, -2.25, 65504.0], np.float16))),
        ("i32", gl.tensor(np.array([[1, -2], [2**31 - 1, -(2**31)]], np.int32))),
        ("i64", gl.tensor([2**62, -5, 0])),
        ("bool", gl.tensor([True, False, True])),
        ("scalar", gl.tensor(3.5)),
        ("empty", gl.zeros(0, 3)),
        ("transposed", gl.arange(6.0).reshape(2, 3).t()),  # non-contiguous
    ])


def checkpoint():
    return {
        "model": tensors_of_every_dtype(),
        "optimizer": {
            "state": {0: {"step": gl.tensor(10.0), "exp_avg": gl.ones(3, 4)}, 1: {"step": gl.tensor(10.0)}},
            "param_groups": [{"lr": 1e-3, "betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0, "amsgrad": False,
                              "foreach": None, "params": [0, 1]}],
        },
        "epoch": 7,
        "metrics": {"loss": [0.9, 0.5, 0.25], "best": float("inf"), "diverged": float("nan")},
        "note": "trained on digits",
    }


def assert_identical(actual, expected, where="obj"):
    """Same structure, same container and key types, same values, dtypes and shapes (NaN equal to NaN)."""
    assert type(actual) is type(expected), f"{where}: {type(actual).__name__} != {type(expected).__name__}"
    if isinstance(expected, gl.Tensor):
        assert actual.dtype is expected.dtype and actual.shape == expected.shape, where
        assert actual.requires_grad == expected.requires_grad, where
        np.testing.assert_array_equal(actual.detach().numpy(), expected.detach().numpy(), err_msg=where)
    elif isinstance(expected, np.ndarray):
        assert actual.dtype == expected.dtype and actual.shape == expected.shape, where
        np.testing.assert_array_equal(actual, expected, err_msg=where)
    elif isinstance(expected, dict):
        assert list(actual) == list(expected), where
        for key in expected:
            assert_identical(actual[key], expected[key], f"{where}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert len(actual) == len(expected), where
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_identical(a, e, f"{where}[{i}]")
    elif isinstance(expected, float) and np.isnan(expected):
        assert np.isnan(actual), where
    else:
        assert actual == expected, where


# --- round trips ---------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_state_dict_round_trips_exactly_with_every_dtype(tmp_path, fmt):
    state = tensors_of_every_dtype()
    gl.save(state, tmp_path / f"model.{fmt}")
    assert_identical(gl.load(tmp_path / f"model.{fmt}"), state)


@pytest.mark.parametrize("fmt", FORMATS)
def test_nested_checkpoint_round_trips_with_key_types_and_values(tmp_path, fmt):
    ckpt = checkpoint()
    path = tmp_path / f"ckpt.{fmt}"
    gl.save(ckpt, path)
    back = gl.load(path)
    assert_identical(back, ckpt)
    assert list(back["optimizer"]["state"]) == [0, 1]  # int keys stay ints
    assert isinstance(back["optimizer"]["param_groups"][0]["betas"], tuple)


@pytest.mark.parametrize("fmt", FORMATS)
def test_requires_grad_and_numpy_values_round_trip(tmp_path, fmt):
    obj = {"w": gl.randn(2, 2, requires_grad=True), "array": np.arange(4, dtype=np.int32),
           "number": np.float32(2.5), "double": np.float64(0.1)}
    gl.save(obj, tmp_path / f"x.{fmt}")
    back = gl.load(tmp_path / f"x.{fmt}")
    assert back["w"].requires_grad and back["w"].is_leaf
    assert_identical(back["w"], obj["w"])
    assert_identical(back["array"], obj["array"])
    assert type(back["number"]) is np.float32 and back["number"] == np.float32(2.5)
    assert type(back["double"]) is np.float64 and back["double"] == 0.1


def test_npz_holds_top_level_tensors_lists_and_strings(tmp_path):
    for obj in (gl.arange(5), [gl.ones(2), "a", None, (1, 2.5)], "just text", 42, np.array(["a", "bc"])):
        gl.save(obj, tmp_path / "x.npz")
        assert_identical(gl.load(tmp_path / "x.npz"), obj)


def test_module_state_dict_loads_into_a_fresh_module(tmp_path):
    import gradlab.nn as nn

    class Affine(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(gl.randn(3, 2))
            self.bias = nn.Parameter(gl.randn(3))

    trained, fresh = Affine(), Affine()
    gl.save({"model": trained.state_dict(), "epoch": 1}, tmp_path / "ckpt.safetensors")
    fresh.load_state_dict(gl.load(tmp_path / "ckpt.safetensors")["model"])
    np.testing.assert_array_equal(fresh.weight.detach().numpy(), trained.weight.detach().numpy())
    np.testing.assert_array_equal(fresh.bias.detach().numpy(), trained.bias.detach().numpy())


@pytest.mark.parametrize("fmt", FORMATS)
def test_file_objects_and_format_argument(fmt):
    buffer = io.BytesIO()
    gl.save({"w": gl.arange(3.0)}, buffer, format=fmt)
    buffer.seek(0)
    assert_identical(gl.load(buffer), {"w": gl.arange(3.0)})
    buffer.seek(0)
    assert_identical(gl.load(buffer, format=fmt), {"w": gl.arange(3.0)})


def test_format_follows_the_extension_and_defaults_to_npz(tmp_path):
    gl.save({"w": gl.ones(2)}, tmp_path / "a.safetensors")
    gl.save({"w": gl.ones(2)}, tmp_path / "b.pt")
    assert (tmp_path / "a.safetensors").read_bytes()[8:9] == b"{"
    assert zipfile.is_zipfile(tmp_path / "b.pt") and not (tmp_path / "b.pt.npz").exists()
    assert_identical(gl.load(tmp_path / "b.pt"), {"w": gl.ones(2)})


def test_map_location_forms(tmp_path):
    path = tmp_path / "x.npz"
    gl.save({"w": gl.arange(3.0)}, path)
    assert gl.load(path, map_location="cpu")["w"].device == gl.device("cpu")
    assert gl.load(path, map_location={"cpu": "cpu"})["w"].device == gl.device("cpu")
    seen = []
    moved = gl.load(path, map_location=lambda t, saved: seen.append(saved) or t * 2)
    assert seen == ["cpu"] and moved["w"].tolist() == [0.0, 2.0, 4.0]


# --- the safetensors layout ----------------------------------------------------------------------


def test_safetensors_layout_follows_the_spec(tmp_path):
    path = tmp_path / "ckpt.safetensors"
    gl.save({"model": {"fc.weight": gl.ones(2, 3), "fc.bias": gl.zeros(2, dtype=gl.float64)},
             "step": 5, "opt": {"param_groups": [{"lr": 0.5, "name": "adam"}]}}, path)
    raw = path.read_bytes()
    (size,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + size])
    assert (8 + size) % 8 == 0  # the data starts aligned
    assert header["model.fc.weight"] == {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}
    assert header["model.fc.bias"] == {"dtype": "F64", "shape": [2], "data_offsets": [24, 40]}
    assert len(raw) == 8 + size + 40
    np.testing.assert_array_equal(np.frombuffer(raw[8 + size:8 + size + 24], "<f4"), np.ones(6))
    metadata = header["__metadata__"]
    assert all(isinstance(v, str) for v in metadata.values())
    assert metadata["step"] == "5" and metadata["opt.param_groups.0.lr"] == "0.5"
    assert metadata["opt.param_groups.0.name"] == "adam"


def raw_safetensors(entries, metadata=None):
    """A .safetensors file built by hand: entries are (name, dtype code, shape, bytes)."""
    header, data = {}, b""
    for name, code, shape, payload in entries:
        header[name] = {"dtype": code, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def test_flat_safetensors_from_another_tool_loads_as_a_dict_of_tensors(tmp_path):
    bf16 = (np.array([1.0, -2.5, 3.140625], np.float32).view(np.uint32) >> 16).astype("<u2")
    path = tmp_path / "other.safetensors"
    path.write_bytes(raw_safetensors([("pixels", "U8", [2, 2], bytes([0, 1, 254, 255])),
                                      ("half", "BF16", [3], bf16.tobytes()),
                                      ("w", "F32", [2], np.array([0.5, 1.5], "<f4").tobytes())],
                                     metadata={"format": "pt"}))
    back = gl.load(path)
    assert list(back) == ["pixels", "half", "w"]
    assert back["pixels"].tolist() == [[0, 1], [254, 255]] and back["pixels"].dtype is gl.uint8
    assert back["half"].dtype is gl.bfloat16 and back["half"].tolist() == [1.0, -2.5, 3.140625]
    assert back["w"].tolist() == [0.5, 1.5]


def test_plain_npz_from_numpy_loads_as_a_dict_of_tensors(tmp_path):
    np.savez(tmp_path / "weights.npz", w=np.eye(2, dtype=np.float32), b=np.arange(2), names=np.array(["x", "y"]))
    back = gl.load(tmp_path / "weights.npz")
    assert list(back["names"]) == ["x", "y"]
    assert back["w"].dtype is gl.float32 and back["w"].tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert back["b"].tolist() == [0, 1]


def test_safetensors_package_reads_our_files_and_we_read_its(tmp_path):
    st = pytest.importorskip("safetensors.numpy", reason="the safetensors package is not installed")
    ours = {"layer.weight": gl.randn(3, 2), "layer.count": gl.tensor([1, 2], dtype=gl.int32), "epoch": 4}
    gl.save(ours, tmp_path / "ours.safetensors")
    theirs = st.load_file(str(tmp_path / "ours.safetensors"))
    np.testing.assert_array_equal(theirs["layer.weight"], ours["layer.weight"].numpy())
    assert theirs["layer.count"].dtype == np.int32
    from safetensors import safe_open

    with safe_open(str(tmp_path / "ours.safetensors"), framework="numpy") as f:
        assert f.metadata()["epoch"] == "4"
    st.save_file({"a": np.arange(6, dtype=np.float64).reshape(2, 3)}, str(tmp_path / "theirs.safetensors"))
    assert gl.load(tmp_path / "theirs.safetensors")["a"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


# --- what can't be stored, and pickle only on request ----------------------------------------------


class Payload:
    ran = False

    def __reduce__(self):
        return (Payload._run, ())

    @staticmethod
    def _run():
        Payload.ran = True
        return "payload ran"


@pytest.mark.parametrize("fmt", FORMATS)
def test_objects_that_need_pickle_are_refused(tmp_path, fmt):
    with pytest.raises(TypeError, match=r"can't store obj\['thing'\] is a .*Payload.*pass pickle=True"):
        gl.save({"thing": Payload()}, tmp_path / f"x.{fmt}")
    with pytest.raises(TypeError, match=r"the key \(1, 2\) of obj\['d'\] is a tuple"):
        gl.save({"d": {(1, 2): gl.ones(1)}}, tmp_path / f"x.{fmt}")


def test_pickle_is_written_and_read_only_when_asked(tmp_path):
    path = tmp_path / "obj.pkl"
    with pytest.raises(ValueError, match="pass pickle=True"):
        gl.save({"a": 1}, path)
    gl.save({"thing": Payload(), "w": gl.ones(2)}, path, pickle=True)
    Payload.ran = False
    with pytest.raises(pickle.UnpicklingError, match=r"obj.pkl is a pickle file.*pickle=True"):
        gl.load(path)
    assert not Payload.ran
    back = gl.load(path, pickle=True, map_location="cpu")
    assert Payload.ran and back["thing"] == "payload ran" and back["w"].tolist() == [1.0, 1.0]


def test_a_pickle_disguised_as_npz_or_safetensors_is_not_run(tmp_path):
    for name in ("model.npz", "model.safetensors", "model.pt"):
        (tmp_path / name).write_bytes(pickle.dumps(Payload()))
        Payload.ran = False
        with pytest.raises(pickle.UnpicklingError, match="pickle=True"):
            gl.load(tmp_path / name)
        assert not Payload.ran


def test_object_arrays_inside_an_npz_are_not_unpickled(tmp_path):
    path = tmp_path / "sneaky.npz"
    np.savez(path, a=np.array([Payload()], dtype=object))
    Payload.ran = False
    with pytest.raises(RuntimeError, match="sneaky.npz"):
        gl.load(path)
    assert not Payload.ran


def test_safetensors_needs_a_dict_and_unique_flat_names(tmp_path):
    with pytest.raises(TypeError, match="holds a dict of tensors"):
        gl.save(gl.ones(2), tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="flatten to the same safetensors name 'a.b'"):
        gl.save({"a.b": gl.ones(1), "a": {"b": gl.ones(1)}}, tmp_path / "x.safetensors")
    with pytest.raises(TypeError, match="dtype <U1, which safetensors can't hold"):
        gl.save({"s": np.array(["a"])}, tmp_path / "x.safetensors")


def test_unknown_format_argument():
    with pytest.raises(ValueError, match="unknown format 'hdf5'"):
        gl.save({}, io.BytesIO(), format="hdf5")


# --- damaged files -------------------------------------------------------------------------------


def saved_bytes(tmp_path, fmt):
    path = tmp_path / f"good.{fmt}"
    gl.save(checkpoint(), path)
    return path.read_bytes()


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("keep", [0.5, 0.9, 0.999])
def test_truncated_files_give_a_clear_error(tmp_path, fmt, keep):
    raw = saved_bytes(tmp_path, fmt)
    path = tmp_path / f"cut.{fmt}"
    path.write_bytes(raw[:int(len(raw) * keep)])
    with pytest.raises(RuntimeError, match=rf"cut\.{fmt} .*(truncated|damaged)"):
        gl.load(path)


def test_truncated_safetensors_names_the_byte_counts(tmp_path):
    raw = raw_safetensors([("w", "F32", [4], np.zeros(4, "<f4").tobytes())])
    path = tmp_path / "w.safetensors"
    path.write_bytes(raw[:-6])
    with pytest.raises(RuntimeError, match=r"w.safetensors is truncated: its header declares 16 bytes of tensor data, "
                                           r"but 10 bytes follow the header"):
        gl.load(path)
    path.write_bytes(raw[:5])
    with pytest.raises(RuntimeError, match="truncated: the header length needs 8 bytes, but the file ends after 5"):
        gl.load(path)
    path.write_bytes(struct.pack("<Q", 10**6) + b"{}")
    with pytest.raises(RuntimeError, match="truncated: the header needs 1000000 bytes, but the file ends after 2"):
        gl.load(path)


def test_corrupt_safetensors_headers(tmp_path):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", 6) + b"{oops}")
    with pytest.raises(RuntimeError, match="bad.safetensors is damaged: its safetensors header is not valid JSON"):
        gl.load(path)
    path.write_bytes(raw_safetensors([("w", "F32", [3], np.zeros(2, "<f4").tobytes())]))
    with pytest.raises(RuntimeError, match=r"'w' has shape \[3\] of F32 \(12 bytes\) but data_offsets \[0, 8\] span 8"):
        gl.load(path)
    path.write_bytes(raw_safetensors([("w", "F8_E4M3", [1], b"\x00")]))
    with pytest.raises(RuntimeError, match="as F8_E4M3, a dtype gradlab can't read"):
        gl.load(path)
    path.write_bytes(raw_safetensors([("w", "F32", [1], b"\x00" * 4)]) + b"junk")
    with pytest.raises(RuntimeError, match="damaged: its header declares 4 bytes of tensor data, but 8 bytes follow"):
        gl.load(path)


def test_corrupt_npz_member(tmp_path):
    raw = bytearray(saved_bytes(tmp_path, "npz"))
    start = raw.find(b"\x93NUMPY") + 200  # inside the first stored array's bytes
    raw[start:start + 8] = b"\xff" * 8
    path = tmp_path / "flipped.npz"
    path.write_bytes(bytes(raw))
    with pytest.raises(RuntimeError, match="flipped.npz is damaged or truncated"):
        gl.load(path)


def test_garbage_and_empty_files(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_bytes(b"hello world, not a checkpoint")
    with pytest.raises(RuntimeError, match=r"notes.txt is not an .npz, .safetensors or pickle file \(it starts with"):
        gl.load(path)
    path.write_bytes(b"")
    with pytest.raises(RuntimeError, match="the file is empty"):
        gl.load(path)
    with pytest.raises(FileNotFoundError, match="missing.npz"):
        gl.load(tmp_path / "missing.npz")


@requires_torch
def test_torch_save_files_are_recognised(tmp_path):
    torch.save({"w": torch.ones(2)}, tmp_path / "model.pt")
    with pytest.raises(RuntimeError, match="looks like a PyTorch torch.save file"):
        gl.load(tmp_path / "model.pt")
