"""Devices: parsing names, the default device, missing backends, mixing devices, and a light import."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import gradlab as gl
from gradlab.backends import device as device_module
from gradlab.backends.device import default_device, reset_default_device, resolve_device


def test_resolve_cpu_is_one_interned_device():
    cpu = resolve_device("cpu")
    assert cpu is resolve_device("cpu") is resolve_device(cpu) is gl.device("cpu") is resolve_device(" CPU ")
    assert cpu.type == "cpu" and cpu.index is None and str(cpu) == "cpu" and repr(cpu) == "device(type='cpu')"
    assert cpu.backend.name == "numpy"


def test_device_compares_with_strings():
    assert gl.device("cpu") == "cpu" and gl.device("cpu") == gl.device("cpu")
    assert gl.device("cpu") != "cuda" and gl.device("cpu") != "no-such-device"
    assert isinstance(gl.device("cpu"), gl.device) and hash(gl.device("cpu")) == hash(gl.device("cpu"))


def test_cuda_names_are_parsed_without_loading_a_backend():
    assert gl.device("cuda:0") is gl.device("cuda") is gl.device("cuda", 0)  # one GPU: index 0 is the default one
    one = gl.device("cuda:1")
    assert one is gl.device("cuda", 1) and one.type == "cuda" and one.index == 1
    assert str(one) == "cuda:1" and repr(one) == "device(type='cuda', index=1)"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("tpu", r"unknown device 'tpu': expected one of 'cpu', 'numba', 'cuda', 'mlx'"),
        ("cuda:x", r"invalid device 'cuda:x': the index after ':' must be a non-negative integer"),
        ("cuda:-1", r"invalid device 'cuda:-1'"),
        ("cpu:", r"invalid device 'cpu:'"),
    ],
)
def test_bad_device_names(spec, message):
    with pytest.raises(RuntimeError, match=message):
        resolve_device(spec)
    with pytest.raises(RuntimeError, match=message):
        gl.zeros(2, device=spec)


def test_bad_device_arguments():
    with pytest.raises(TypeError, match="expected a device string like 'cpu' or 'cuda:0'"):
        resolve_device(3.5)
    with pytest.raises(RuntimeError, match="the index is given twice"):
        gl.device("cuda:1", 1)
    with pytest.raises(RuntimeError, match="the index must be a non-negative integer"):
        gl.device("cuda", -1)


def test_devices_pickle_to_themselves():
    import pickle

    assert pickle.loads(pickle.dumps(gl.device("cpu"))) is gl.device("cpu")
    assert pickle.loads(pickle.dumps(gl.device("cuda:1"))) is gl.device("cuda:1")


# --- the default device ---------------------------------------------------------------------------


@pytest.fixture
def fresh_default(monkeypatch):
    """Let a test choose $GRADLAB_DEVICE; the cached default is forgotten before and after."""
    reset_default_device()
    yield monkeypatch
    monkeypatch.undo()
    reset_default_device()


def test_default_device_is_cpu_without_the_variable(fresh_default):
    fresh_default.delenv("GRADLAB_DEVICE", raising=False)
    assert default_device() is resolve_device("cpu") and resolve_device(None) is resolve_device("cpu")
    assert gl.zeros(1).device is resolve_device("cpu")


def test_default_device_comes_from_gradlab_device(fresh_default):
    fresh_default.setenv("GRADLAB_DEVICE", "cuda:1")
    assert default_device() is gl.device("cuda:1")
    assert resolve_device(None) is gl.device("cuda:1")
    fresh_default.setenv("GRADLAB_DEVICE", "cpu")  # read once, until reset
    assert default_device() is gl.device("cuda:1")
    reset_default_device()
    assert default_device() is gl.device("cpu")


def test_a_bad_gradlab_device_names_the_variable(fresh_default):
    fresh_default.setenv("GRADLAB_DEVICE", "tpu")
    with pytest.raises(RuntimeError, match=r"GRADLAB_DEVICE='tpu' is not a device: unknown device 'tpu'"):
        gl.zeros(1)


def test_set_default_device(fresh_default):
    gl.set_default_device("cuda:1")
    assert default_device() is gl.device("cuda:1")
    gl.set_default_device("cpu")
    assert gl.zeros(1).device == "cpu"


# --- missing backends -----------------------------------------------------------------------------


@pytest.fixture
def fake_backends(monkeypatch, tmp_path):
    """Device types of our own, so these tests do not depend on which real backends exist."""
    (tmp_path / "gradlab_test_needs_pkg.py").write_text("import gradlab_test_missing_package\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    backends = dict(device_module._BACKENDS)
    backends["nobackend"] = ("gradlab.backends.gradlab_test_absent_backend", "Absent", "absent")
    backends["needspkg"] = ("gradlab_test_needs_pkg", "Backend", "needspkg")
    backends["twin"] = ("gradlab.backends.numpy_backend", "NumpyBackend", None)  # a second device on numpy
    monkeypatch.setattr(device_module, "_BACKENDS", backends)
    monkeypatch.setattr(device_module, "_instances", {})
    monkeypatch.setattr(device_module, "_named", {})
    monkeypatch.setattr(device_module, "_backend_objects", {})
    monkeypatch.setattr(device_module, "_default", [])
    return monkeypatch


def test_a_backend_not_in_this_build(fake_backends):
    dev = resolve_device("nobackend")  # naming the device works; only using it needs the backend
    assert dev.type == "nobackend"
    with pytest.raises(RuntimeError, match=r"the 'nobackend' backend is not part of this gradlab build yet"):
        gl.zeros(2, device="nobackend")


def test_a_backend_whose_package_is_missing_says_what_to_install(fake_backends):
    with pytest.raises(RuntimeError, match=r"needs the package 'gradlab_test_missing_package'.*"
                                           r'pip install "gradlab\[needspkg\]"'):
        gl.ones(2, device="needspkg")


@pytest.mark.parametrize("device", ["numba", "cuda", "mlx"])
def test_real_optional_backends_fail_clearly_when_unavailable(device):
    try:
        gl.zeros(1, device=device)
    except RuntimeError as error:  # not an ImportError from deep inside: a message that names the device
        message = str(error)
        assert device in message.lower(), message
        assert "not part of this gradlab build" in message or "pip install" in message or "device='cpu'" in message \
            or "could not start" in message, message
    # else: the backend exists and works here, which is fine too


def test_mixing_devices_is_an_error(fake_backends):
    a = gl.tensor([1.0, 2.0])
    b = gl.tensor([1.0, 2.0], device="twin")
    assert b.device.type == "twin" and repr(b) == "tensor([1., 2.], device='twin')"
    with pytest.raises(RuntimeError, match=r"add: expected all tensors to be on the same device.*on cpu.*on twin"):
        a + b
    moved = b.to("cpu")
    assert moved.device is a.device and (a + moved).tolist() == [2.0, 4.0]


# --- importing gradlab stays light ----------------------------------------------------------------


def test_import_loads_no_optional_dependency():
    script = textwrap.dedent(
        """
        import sys, time
        start = time.perf_counter()
        import gradlab
        took = time.perf_counter() - start
        heavy = ["numba", "mlx", "cupy", "ipywidgets", "anywidget", "graphviz", "matplotlib", "scipy", "torch"]
        print(",".join(m for m in heavy if m in sys.modules))
        print(f"{took:.3f}")
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=Path(gl.__file__).resolve().parents[1])
    loaded, took = out.stdout.split("\n")[:2]
    print(f"import gradlab took {took} s")
    assert loaded == ""
