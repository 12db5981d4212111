"""The device API every backend shares: factories and modules on a device, moving tensors, models and
optimizer state, the default device, ``gradlab.devices()``, and the errors for devices that cannot serve.

Most tests use small fake device types registered for the test (``fake_devices``): 'twin' is a second
device on the numpy backend, 'narrow' a numpy backend without float64, bfloat16 and uint64, and the
others fail to load in the ways a real backend can. Where a real second backend loads here (mlx,
numba), the tests at the end run on it too.
"""

import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.backends import device as device_module
from gradlab.backends.device import reset_default_device, resolve_device

NARROW = '''
from gradlab import dtypes as dt
from gradlab.backends.numpy_backend import NumpyBackend


class NarrowBackend(NumpyBackend):
    """numpy, pretending to lack what an accelerator may lack (as MPS lacks float64)."""

    name = "narrow"
    supported_dtypes = frozenset(d for d in dt.ALL_DTYPES if d not in (dt.float64, dt.bfloat16, dt.uint64))
'''

NO_GPU = "cuda: no CUDA GPU is visible to this process (numba.cuda found no driver); use device='cpu', " \
         "or set NUMBA_ENABLE_CUDASIM=1 before importing gradlab to run the kernels on numba's simulator"

FAKES = {
    "gradlab_test_narrow": NARROW,
    "gradlab_test_nogpu": f"raise RuntimeError({NO_GPU!r})\n",
    "gradlab_test_brokenlib": "raise OSError('libcuda.so.1: cannot open shared object file: No such file')\n",
    "gradlab_test_needs_pkg2": "import gradlab_test_missing_package2\n",
    "gradlab_test_init_fails": textwrap.dedent(f"""
        class Backend:
            def __init__(self):
                raise RuntimeError({NO_GPU!r})
        """),
}


@pytest.fixture
def fake_devices(monkeypatch, tmp_path):
    """Device types of our own (see the module docstring); the device tables are restored afterwards."""
    for name, source in FAKES.items():
        (tmp_path / f"{name}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    backends = dict(device_module._BACKENDS)
    backends.update({
        "twin": ("gradlab.backends.numpy_backend", "NumpyBackend", None),
        "narrow": ("gradlab_test_narrow", "NarrowBackend", None),
        "nogpu": ("gradlab_test_nogpu", "Backend", "cuda"),
        "brokenlib": ("gradlab_test_brokenlib", "Backend", "cuda"),
        "needspkg": ("gradlab_test_needs_pkg2", "Backend", "needspkg"),
        "initfails": ("gradlab_test_init_fails", "Backend", "cuda"),
    })
    monkeypatch.setattr(device_module, "_BACKENDS", backends)
    monkeypatch.setattr(device_module, "_instances", {})
    monkeypatch.setattr(device_module, "_named", {})
    monkeypatch.setattr(device_module, "_backend_objects", {})
    monkeypatch.setattr(device_module, "_default", [])
    monkeypatch.delenv("GRADLAB_DEVICE", raising=False)
    yield monkeypatch
    monkeypatch.undo()
    reset_default_device()


# --- factories: device= on each, and the default device when none is given ---------------------------

FACTORIES = {  # name -> how to call it with **kwargs (device=..., maybe dtype=...)
    "zeros": lambda **kw: gl.zeros(2, 3, **kw),
    "ones": lambda **kw: gl.ones(2, 3, **kw),
    "full": lambda **kw: gl.full((2, 3), 1.5, **kw),
    "empty": lambda **kw: gl.empty(2, 3, **kw),
    "arange": lambda **kw: gl.arange(5, **kw),
    "arange[float]": lambda **kw: gl.arange(0.0, 1.0, 0.25, **kw),
    "linspace": lambda **kw: gl.linspace(0, 1, 5, **kw),
    "logspace": lambda **kw: gl.logspace(0, 2, 3, **kw),
    "eye": lambda **kw: gl.eye(3, **kw),
    "rand": lambda **kw: gl.rand(2, 3, generator=gl.Generator().manual_seed(0), **kw),
    "randn": lambda **kw: gl.randn(2, 3, generator=gl.Generator().manual_seed(0), **kw),
    "randint": lambda **kw: gl.randint(0, 9, (4,), generator=gl.Generator().manual_seed(0), **kw),
    "randperm": lambda **kw: gl.randperm(5, generator=gl.Generator().manual_seed(0), **kw),
    "normal": lambda **kw: gl.normal(0.0, 1.0, (3,), generator=gl.Generator().manual_seed(0), **kw),
    "tensor": lambda **kw: gl.tensor([[1.0, 2.0], [3.0, 4.0]], **kw),
    "tensor[numpy]": lambda **kw: gl.tensor(np.arange(4.0), **kw),
    "as_tensor": lambda **kw: gl.as_tensor([1, 2, 3], **kw),
    "asarray": lambda **kw: gl.asarray([1.0, 2.0], **kw),
    "scalar_tensor": lambda **kw: gl.scalar_tensor(3.0, **kw),
    "tril_indices": lambda **kw: gl.tril_indices(3, 3, **kw),
    "triu_indices": lambda **kw: gl.triu_indices(3, 3, **kw),
    "hann_window": lambda **kw: gl.hann_window(5, **kw),
    "hamming_window": lambda **kw: gl.hamming_window(5, **kw),
    "blackman_window": lambda **kw: gl.blackman_window(5, **kw),
    "bartlett_window": lambda **kw: gl.bartlett_window(5, **kw),
    "kaiser_window": lambda **kw: gl.kaiser_window(5, **kw),
    "Tensor[sizes]": lambda **kw: gl.Tensor(2, 3, **kw),
    "Tensor[data]": lambda **kw: gl.Tensor([1.0, 2.0], **kw),
}

LIKE_FACTORIES = {  # these follow their input's device unless device= is given
    "zeros_like": lambda x, **kw: gl.zeros_like(x, **kw),
    "ones_like": lambda x, **kw: gl.ones_like(x, **kw),
    "full_like": lambda x, **kw: gl.full_like(x, 2.0, **kw),
    "empty_like": lambda x, **kw: gl.empty_like(x, **kw),
    "rand_like": lambda x, **kw: gl.rand_like(x, **kw),
    "randn_like": lambda x, **kw: gl.randn_like(x, **kw),
    "randint_like": lambda x, **kw: gl.randint_like(x, 5, **kw),
    "new_zeros": lambda x, **kw: x.new_zeros(2, **kw),
    "new_ones": lambda x, **kw: x.new_ones(2, **kw),
    "new_full": lambda x, **kw: x.new_full((2,), 3.0, **kw),
    "new_empty": lambda x, **kw: x.new_empty(2, **kw),
    "new_tensor": lambda x, **kw: x.new_tensor([1.0, 2.0], **kw),
}


def test_the_factory_list_covers_every_public_factory():
    """A new factory taking device= must join the lists above (so the tests below see it)."""
    listed = {name.split("[")[0] for name in (*FACTORIES, *LIKE_FACTORIES)}
    public = {name for name in dir(gl) if callable(getattr(gl, name)) and not name.startswith("_")
              and not inspect.isclass(getattr(gl, name))}
    takes_device = {name for name in public if "device" in _parameters(getattr(gl, name))}
    skipped = {"empty_strided", "set_default_device", "get_default_device", "device", "devices"}  # cpu-only / not factories
    assert takes_device - skipped - listed == set()


def _parameters(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


@pytest.mark.parametrize("name", FACTORIES)
def test_every_factory_puts_its_tensor_on_the_device_asked_for(fake_devices, name):
    made = FACTORIES[name](device="twin")
    assert made.device is gl.device("twin")
    reference = FACTORIES[name](device="cpu")
    assert made.dtype is reference.dtype and made.shape == reference.shape
    if name not in ("empty", "Tensor[sizes]"):
        np.testing.assert_array_equal(made.numpy(), reference.numpy())  # the same values, seeds included


@pytest.mark.parametrize("name", FACTORIES)
def test_every_factory_uses_gradlab_device_when_no_device_is_given(fake_devices, name):
    fake_devices.setenv("GRADLAB_DEVICE", "twin")
    assert FACTORIES[name]().device is gl.device("twin")


@pytest.mark.parametrize("name", LIKE_FACTORIES)
def test_like_factories_follow_their_input_unless_told(fake_devices, name):
    x = gl.ones(3, device="twin")
    assert LIKE_FACTORIES[name](x).device is gl.device("twin")
    assert LIKE_FACTORIES[name](x, device="cpu").device is gl.device("cpu")
    assert LIKE_FACTORIES[name](gl.ones(3), device="twin").device is gl.device("twin")


def test_numpy_bridges_stay_on_the_cpu_whatever_the_default(fake_devices):
    fake_devices.setenv("GRADLAB_DEVICE", "twin")
    assert gl.from_numpy(np.ones(2)).device == "cpu"  # they share numpy's memory, as in PyTorch
    assert gl.frombuffer(bytearray(8), dtype=gl.float32).device == "cpu"
    assert gl.from_dlpack(np.ones(2)).device == "cpu"


# --- modules: device= and dtype= on every constructor that takes them ----------------------------------

MODULES = {
    "AdaptiveLogSoftmaxWithLoss": lambda **kw: nn.AdaptiveLogSoftmaxWithLoss(4, 6, [2], **kw),
    "BatchNorm1d": lambda **kw: nn.BatchNorm1d(3, **kw),
    "BatchNorm2d": lambda **kw: nn.BatchNorm2d(3, **kw),
    "BatchNorm3d": lambda **kw: nn.BatchNorm3d(3, **kw),
    "SyncBatchNorm": lambda **kw: nn.SyncBatchNorm(3, **kw),
    "Bilinear": lambda **kw: nn.Bilinear(2, 3, 4, **kw),
    "Conv1d": lambda **kw: nn.Conv1d(2, 3, 3, **kw),
    "Conv2d": lambda **kw: nn.Conv2d(2, 3, 3, **kw),
    "Conv3d": lambda **kw: nn.Conv3d(2, 3, 3, **kw),
    "ConvTranspose1d": lambda **kw: nn.ConvTranspose1d(2, 3, 3, **kw),
    "ConvTranspose2d": lambda **kw: nn.ConvTranspose2d(2, 3, 3, **kw),
    "ConvTranspose3d": lambda **kw: nn.ConvTranspose3d(2, 3, 3, **kw),
    "Embedding": lambda **kw: nn.Embedding(5, 3, **kw),
    "EmbeddingBag": lambda **kw: nn.EmbeddingBag(5, 3, **kw),
    "GroupNorm": lambda **kw: nn.GroupNorm(1, 3, **kw),
    "InstanceNorm1d": lambda **kw: nn.InstanceNorm1d(3, affine=True, track_running_stats=True, **kw),
    "InstanceNorm2d": lambda **kw: nn.InstanceNorm2d(3, affine=True, track_running_stats=True, **kw),
    "InstanceNorm3d": lambda **kw: nn.InstanceNorm3d(3, affine=True, track_running_stats=True, **kw),
    "LayerNorm": lambda **kw: nn.LayerNorm(3, **kw),
    "RMSNorm": lambda **kw: nn.RMSNorm(3, **kw),
    "Linear": lambda **kw: nn.Linear(3, 2, **kw),
    "MultiheadAttention": lambda **kw: nn.MultiheadAttention(4, 2, **kw),
    "PReLU": lambda **kw: nn.PReLU(3, **kw),
    "RNN": lambda **kw: nn.RNN(3, 4, **kw),
    "LSTM": lambda **kw: nn.LSTM(3, 4, proj_size=2, **kw),
    "GRU": lambda **kw: nn.GRU(3, 4, **kw),
    "RNNCell": lambda **kw: nn.RNNCell(3, 4, **kw),
    "LSTMCell": lambda **kw: nn.LSTMCell(3, 4, **kw),
    "GRUCell": lambda **kw: nn.GRUCell(3, 4, **kw),
    "TransformerEncoderLayer": lambda **kw: nn.TransformerEncoderLayer(4, 2, 8, **kw),
    "TransformerDecoderLayer": lambda **kw: nn.TransformerDecoderLayer(4, 2, 8, **kw),
    "Transformer": lambda **kw: nn.Transformer(4, 2, 1, 1, 8, **kw),
}
LAZY_MODULES = {
    "LazyLinear": (lambda **kw: nn.LazyLinear(2, **kw), (2, 3)),
    "LazyConv1d": (lambda **kw: nn.LazyConv1d(2, 3, **kw), (1, 2, 5)),
    "LazyConv2d": (lambda **kw: nn.LazyConv2d(2, 3, **kw), (1, 2, 5, 5)),
    "LazyConv3d": (lambda **kw: nn.LazyConv3d(2, 3, **kw), (1, 2, 5, 5, 5)),
    "LazyConvTranspose1d": (lambda **kw: nn.LazyConvTranspose1d(2, 3, **kw), (1, 2, 5)),
    "LazyConvTranspose2d": (lambda **kw: nn.LazyConvTranspose2d(2, 3, **kw), (1, 2, 5, 5)),
    "LazyConvTranspose3d": (lambda **kw: nn.LazyConvTranspose3d(2, 3, **kw), (1, 2, 5, 5, 5)),
    "LazyBatchNorm1d": (lambda **kw: nn.LazyBatchNorm1d(**kw), (4, 3)),
    "LazyBatchNorm2d": (lambda **kw: nn.LazyBatchNorm2d(**kw), (4, 3, 2, 2)),
    "LazyBatchNorm3d": (lambda **kw: nn.LazyBatchNorm3d(**kw), (4, 3, 2, 2, 2)),
    "LazyInstanceNorm1d": (lambda **kw: nn.LazyInstanceNorm1d(**kw), (2, 3, 4)),
    "LazyInstanceNorm2d": (lambda **kw: nn.LazyInstanceNorm2d(**kw), (2, 3, 4, 4)),
    "LazyInstanceNorm3d": (lambda **kw: nn.LazyInstanceNorm3d(**kw), (2, 3, 4, 4, 4)),
}


def test_the_module_list_covers_every_layer_that_takes_a_device():
    takes_device = {name for name in dir(nn) if inspect.isclass(getattr(nn, name))
                    and issubclass(getattr(nn, name), nn.Module) and "device" in _parameters(getattr(nn, name))}
    assert takes_device - {"RNNBase", "RNNCellBase"} - set(MODULES) - set(LAZY_MODULES) == set()


def _tensors(module):
    return [("param " + n, t) for n, t in module.named_parameters()] + [("buffer " + n, t)
                                                                         for n, t in module.named_buffers()]


@pytest.mark.parametrize("name", MODULES)
def test_every_layer_makes_its_parameters_and_buffers_on_the_device_and_dtype_asked_for(fake_devices, name):
    layer = MODULES[name](device="twin", dtype=gl.float64)
    tensors = _tensors(layer)
    assert tensors
    for what, t in tensors:
        assert t.device is gl.device("twin"), what
        assert t.dtype is gl.float64 or not t.dtype.is_floating_point, what


@pytest.mark.parametrize("name", MODULES)
def test_every_layer_uses_the_default_device(fake_devices, name):
    gl.set_default_device("twin")
    assert all(t.device is gl.device("twin") for _, t in _tensors(MODULES[name]()))


@pytest.mark.parametrize("name", LAZY_MODULES)
def test_lazy_layers_materialise_on_their_device(fake_devices, name):
    make, shape = LAZY_MODULES[name]
    layer = make(device="twin", dtype=gl.float64)
    layer(gl.ones(*shape, device="twin", dtype=gl.float64))
    for what, t in _tensors(layer):
        assert t.device is gl.device("twin") and (t.dtype is gl.float64 or not t.dtype.is_floating_point), what


def test_a_layer_computes_on_its_device(fake_devices):
    layer = nn.Linear(3, 2, device="twin")
    out = layer(gl.ones(4, 3, device="twin"))
    assert out.device is gl.device("twin")
    with pytest.raises(RuntimeError, match=r"Linear\(3→2\): expected all tensors to be on the same device, but found at "
                                           r"least two devices, cpu and twin! .*with .to\('cpu'\) or .to\('twin'\)"):
        layer(gl.ones(4, 3))


# --- moving tensors ----------------------------------------------------------------------------------


def test_to_moves_between_devices_and_keeps_the_values_and_the_graph(fake_devices):
    x = gl.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.to("twin")
    assert y.device is gl.device("twin") and y.tolist() == [1.0, -2.0, 3.0] and y.grad_fn is not None
    (y * y).sum().backward()
    assert x.grad.device is gl.device("cpu") and x.grad.tolist() == [2.0, -4.0, 6.0]


def test_to_accepts_every_form_pytorch_does(fake_devices):
    x = gl.arange(3)
    target = gl.zeros(1, dtype=gl.float64, device="twin")
    assert x.to(gl.device("twin")).device is gl.device("twin")
    assert x.to(device="twin", dtype=gl.float32).dtype is gl.float32
    moved = x.to(target)
    assert moved.device is target.device and moved.dtype is gl.float64
    assert x.to("twin", gl.float32, non_blocking=True).device is gl.device("twin")
    assert x.to("twin", gl.float32, True, False).dtype is gl.float32  # to(device, dtype, non_blocking, copy)
    same = x.to("cpu", gl.int64, False, True)
    assert same is not x and same.tolist() == x.tolist()  # copy=True: a new tensor even with nothing to change
    assert x.to("cpu") is x and x.to(gl.int64) is x and x.cpu() is x
    assert x.to("twin").cpu().device is gl.device("cpu")


def test_module_to_moves_parameters_buffers_and_grads_keeping_the_same_objects(fake_devices):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))
    model(gl.randn(5, 3)).sum().backward()
    params = list(model.parameters())
    grads = [p.grad for p in params]
    before = [p.detach().clone().numpy() for p in params]
    assert model.to("twin", non_blocking=True) is model
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert all(p.grad is g for p, g in zip(model.parameters(), grads))  # .grad objects kept too
    for p, old in zip(model.parameters(), before):
        assert p.device is gl.device("twin") and p.grad.device is gl.device("twin")
        np.testing.assert_array_equal(p.detach().numpy(), old)
    assert all(b.device is gl.device("twin") for b in model.buffers())
    assert model(gl.randn(5, 3, device="twin")).device is gl.device("twin")
    model.cpu()
    assert all(t.device is gl.device("cpu") for _, t in _tensors(model))
    with pytest.raises(TypeError, match="unexpected keyword 'devcie'"):
        model.to(devcie="twin")


@pytest.mark.parametrize("make", [
    lambda ps: gl.optim.Adam(ps, lr=0.1),
    lambda ps: gl.optim.SGD(ps, lr=0.1, momentum=0.9),
    lambda ps: gl.optim.RMSprop(ps, lr=0.01, momentum=0.5, centered=True),
    lambda ps: gl.optim.Adafactor(ps, lr=0.1),
], ids=["Adam", "SGD-momentum", "RMSprop", "Adafactor"])
def test_optimizer_state_follows_its_parameters_to_another_device(fake_devices, make):
    """Two runs from one start, one moved to 'twin' after two steps, stay equal to the last bit."""
    def run(move):
        gl.manual_seed(0)
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
        opt = make(model.parameters())
        x, y = gl.randn(8, 3), gl.randn(8, 1)
        for step in range(5):
            if step == 2 and move:
                model.to("twin")
                x, y = x.to("twin"), y.to("twin")
            opt.zero_grad()
            F.mse_loss(model(x), y).backward()
            opt.step()
        return model, opt

    moved, opt = run(True)
    stayed, _ = run(False)
    for p, q in zip(moved.parameters(), stayed.parameters()):
        assert p.device is gl.device("twin")
        np.testing.assert_array_equal(p.detach().numpy(), q.detach().numpy())
    for p in moved.parameters():
        for key, value in opt.state[p].items():
            if isinstance(value, gl.Tensor) and key != "step":
                assert value.device is p.device and value.dtype is p.dtype, key


def test_optimizer_state_follows_a_dtype_change_and_load_state_dict_puts_state_on_the_parameters_device(
        fake_devices):
    model = nn.Linear(3, 2)
    opt = gl.optim.Adam(model.parameters(), lr=0.1)
    model(gl.randn(4, 3)).sum().backward()
    opt.step()
    saved = opt.state_dict()
    model.to("twin", gl.float64)
    model(gl.randn(4, 3, device="twin", dtype=gl.float64)).sum().backward()
    opt.step()
    for p in model.parameters():
        assert opt.state[p]["exp_avg"].device is p.device and opt.state[p]["exp_avg"].dtype is gl.float64
        assert opt.state[p]["step"].device == "cpu"  # the step counter stays on the CPU, as PyTorch keeps it
    fresh = gl.optim.Adam(model.parameters(), lr=0.1)
    fresh.load_state_dict(saved)  # saved on cpu in float32
    for p in model.parameters():
        state = fresh.state[p]
        assert state["exp_avg"].device is p.device and state["exp_avg_sq"].dtype is gl.float64


def test_lbfgs_history_follows_the_parameters(fake_devices):
    w = nn.Parameter(gl.tensor([1.0, -1.0]))
    opt = gl.optim.LBFGS([w], max_iter=3)

    def closure():
        opt.zero_grad()
        loss = ((w - gl.tensor([3.0, 2.0], device=w.device)) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    w.data = w.data.to("twin")
    opt.step(closure)
    assert w.device is gl.device("twin") and opt.state[w]["d"].device is gl.device("twin")
    np.testing.assert_allclose(w.detach().numpy(), [3.0, 2.0], atol=1e-4)


# --- gradlab.devices() -------------------------------------------------------------------------------


def test_devices_lists_every_type_with_why_the_unavailable_ones_are(fake_devices):
    found = {d.type: d for d in gl.devices()}
    assert list(found) == list(device_module._BACKENDS)
    assert found["cpu"].available and found["twin"].available and found["cpu"].reason == ""
    assert not found["needspkg"].available
    assert 'pip install "gradlab[needspkg]"' in found["needspkg"].reason
    assert found["nogpu"] == gl.DeviceInfo("nogpu", False, NO_GPU)
    assert repr(found["cpu"]) == "DeviceInfo(type='cpu', available=True)"
    assert repr(found["nogpu"]) == f"DeviceInfo(type='nogpu', available=False, reason={NO_GPU!r})"
    assert found["brokenlib"].reason.startswith("the 'brokenlib' device could not start: OSError: libcuda.so.1")


def test_devices_names_the_cuda_simulator(fake_devices):
    fake_devices.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert "simulator" in device_module._simulator_note("cuda") and device_module._simulator_note("cpu") == ""


def test_devices_in_a_fresh_process_reports_every_real_device():
    """The real table, in a process of its own (trying 'cuda' imports numba.cuda, which must not happen
    here before the simulator is chosen). Whatever is installed, each entry is available or says why."""
    script = textwrap.dedent("""
        import sys, gradlab
        assert "mlx" not in sys.modules and "numba" not in sys.modules
        for d in gradlab.devices():
            print(repr(d))
        """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         cwd=Path(gl.__file__).resolve().parents[1], env={**_env(), "NUMBA_ENABLE_CUDASIM": "1"})
    lines = out.stdout.strip().splitlines()
    assert [line.split("'")[1] for line in lines] == ["cpu", "numba", "cuda", "mlx"]
    assert lines[0] == "DeviceInfo(type='cpu', available=True)"
    for line in lines[1:]:
        assert "available=True" in line or "reason=" in line, line


def _env():
    import os

    return {k: v for k, v in os.environ.items() if k != "GRADLAB_DEVICE"}


# --- a device that cannot load: its own message, intact, on every path ---------------------------------


@pytest.mark.parametrize("device", ["nogpu", "initfails"])
def test_a_device_that_cannot_start_says_so_through_every_path(fake_devices, device):
    model = nn.Linear(2, 2)
    x = gl.ones(2)
    paths = [lambda: x.to(device), lambda: gl.zeros(2, device=device), lambda: gl.tensor([1.0], device=device),
             lambda: gl.randn(2, device=device), lambda: gl.ones_like(x, device=device), lambda: model.to(device),
             lambda: nn.Linear(2, 2, device=device)]
    for path in paths:
        with pytest.raises(RuntimeError) as info:
            path()
        assert str(info.value) == NO_GPU
    assert all(p.device == "cpu" for p in model.parameters())


def test_cuda_methods_name_the_cuda_device(fake_devices):
    fake_devices.setitem(device_module._BACKENDS, "cuda", ("gradlab_test_nogpu", "Backend", "cuda"))
    with pytest.raises(RuntimeError, match="no CUDA GPU is visible"):
        gl.ones(2).cuda()
    with pytest.raises(RuntimeError, match="no CUDA GPU is visible"):
        nn.Linear(2, 2).cuda()


def test_a_broken_library_is_named_with_its_device(fake_devices):
    with pytest.raises(RuntimeError, match=r"the 'brokenlib' device could not start: OSError: libcuda.so.1: cannot "
                                           r"open shared object file"):
        gl.zeros(1, device="brokenlib")


def test_a_missing_package_names_the_extra_to_install(fake_devices):
    message = (r"the 'needspkg' device needs the package 'gradlab_test_missing_package2', which is not installed; "
               r'install it with: pip install "gradlab\[needspkg\]"')
    with pytest.raises(RuntimeError, match=message):
        gl.ones(1).to("needspkg")
    with pytest.raises(RuntimeError, match=message):
        nn.Linear(2, 2).to("needspkg")


# --- a dtype the backend lacks -------------------------------------------------------------------------


def test_a_dtype_the_device_lacks_is_refused_before_any_work(fake_devices):
    message = (r"the 'narrow' device \(narrow backend\) has no float64 \(it has float32, float16, int64, .*\); "
               r"use float32 there, or device='cpu' for float64")
    with pytest.raises(TypeError, match="zeros: " + message):
        gl.zeros(2, device="narrow", dtype=gl.float64)
    with pytest.raises(TypeError, match="tensor: " + message):
        gl.tensor(np.ones(2), device="narrow")  # a float64 numpy array keeps its dtype
    with pytest.raises(TypeError, match="randn: " + message):
        gl.randn(2, device="narrow", dtype=gl.float64)
    with pytest.raises(TypeError, match="to: " + message):
        gl.ones(2, dtype=gl.float64).to("narrow")
    with pytest.raises(TypeError, match="to: " + message):
        gl.ones(2, device="narrow").to(gl.float64)
    with pytest.raises(TypeError, match="to: " + message):
        gl.ones(2, device="narrow").double()
    with pytest.raises(TypeError, match="new_zeros: " + message):
        gl.ones(2, device="narrow").new_zeros(2, dtype=gl.float64)
    with pytest.raises(TypeError, match="zeros_like: " + message):
        gl.zeros_like(gl.ones(2, dtype=gl.float64), device="narrow")
    with pytest.raises(TypeError, match=r"zeros: the 'narrow' device .* has no uint64 .*; use int64 there, or "
                                        r"device='cpu' for uint64"):
        gl.zeros(2, device="narrow", dtype=gl.uint64)


def test_moving_and_casting_together_casts_where_the_dtype_exists(fake_devices):
    x = gl.tensor([1.5, 2.5], dtype=gl.float64, requires_grad=True)
    y = x.to("narrow", gl.float32)  # cast on the cpu first: float64 never reaches 'narrow'
    assert y.device is gl.device("narrow") and y.dtype is gl.float32
    y.sum().backward()
    assert x.grad.dtype is gl.float64 and x.grad.device == "cpu"
    back = y.detach().to("cpu", gl.float64)
    assert back.dtype is gl.float64 and back.tolist() == [1.5, 2.5]


def test_a_model_with_a_dtype_the_device_lacks_is_not_half_moved(fake_devices):
    model = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2, dtype=gl.float64))
    with pytest.raises(TypeError, match=r"Module.to \(1.weight\): the 'narrow' device .* has no float64"):
        model.to("narrow")
    assert all(p.device == "cpu" for p in model.parameters())
    model.to("narrow", gl.float32)  # with a dtype it has, the move works
    assert all(p.device is gl.device("narrow") and p.dtype is gl.float32 for p in model.parameters())


def test_every_dtype_is_supported_by_default():
    from gradlab import dtypes as dt
    from gradlab.backends.contract import Backend

    assert Backend.supported_dtypes == frozenset(dt.ALL_DTYPES)
    assert gl.device("cpu").backend.supported_dtypes == frozenset(dt.ALL_DTYPES)


# --- ops mixing devices: one check, one message -------------------------------------------------------

def _mixed_cases():
    """op -> (the name its error starts with, a call mixing 'cpu' and 'cpu:1'); composed ops name their part."""
    a, b = gl.randn(3, 3), gl.randn(3, 3, device="cpu:1")
    v, v1 = gl.randn(3), gl.randn(3, device="cpu:1")
    i, i1 = gl.tensor([0, 1, 2]), gl.tensor([0, 1, 2], device="cpu:1")
    m1 = (a > 0).to("cpu:1")
    return {
        "add": ("add", lambda: a + b), "add_": ("add", lambda: a.clone().add_(b)), "mul": ("mul", lambda: a * b),
        "pow": ("pow", lambda: a ** b), "eq": ("eq", lambda: a == b), "maximum": ("maximum", lambda: gl.maximum(a, b)),
        "atan2": ("atan2", lambda: gl.atan2(a, b)), "clamp": ("clamp", lambda: gl.clamp(a, min=b)),
        "where": ("where", lambda: gl.where(m1, a, a)), "lerp": ("lerp", lambda: gl.lerp(a, b, 0.5)),
        "addcmul": ("mul", lambda: gl.addcmul(a, a, b)), "matmul": ("matmul", lambda: a @ b),
        "mm": ("mm", lambda: gl.mm(a, b)), "dot": ("dot", lambda: gl.dot(v, v1)),
        "einsum": ("einsum()", lambda: gl.einsum("ij,jk->ik", a, b)),
        "cat": ("cat (element 1)", lambda: gl.cat([a, b])), "stack": ("stack (element 1)", lambda: gl.stack([a, b])),
        "index_select": ("index_select", lambda: gl.index_select(a, 0, i1)),
        "gather": ("gather", lambda: gl.gather(a, 0, i1[None].expand(3, 3))),
        "scatter": ("scatter", lambda: a.scatter(0, i1[None], b)), "index_add": ("indexing", lambda: a.index_add(0, i, b)),
        "getitem": ("__getitem__", lambda: a[i1]), "take": ("take", lambda: gl.take(a, i1)),
        "masked_fill": ("masked_fill", lambda: a.masked_fill(m1, 0.0)),
        "masked_select": ("masked_select", lambda: a.masked_select(m1)),
        "searchsorted": ("searchsorted()", lambda: gl.searchsorted(v.sort()[0], v1)),
        "repeat_interleave": ("repeat_interleave", lambda: gl.repeat_interleave(v, i1)),
        "linear": ("linear", lambda: F.linear(a, b)), "bilinear": ("bilinear", lambda: F.bilinear(a, b, a[None])),
        "conv1d": ("conv1d", lambda: F.conv1d(a[None], b[:, :, None])),
        "embedding": ("embedding", lambda: F.embedding(i1, a)),
        "attention": ("scaled_dot_product_attention", lambda: F.scaled_dot_product_attention(a[None], b[None], a[None])),
        "solve": ("linalg.solve", lambda: gl.linalg.solve(a + 3 * gl.eye(3), b)),
        "mse_loss": ("mse_loss", lambda: F.mse_loss(a, b)),
        "cross_entropy": ("cross_entropy", lambda: F.cross_entropy(a, i1)),
        "nll_loss": ("nll_loss", lambda: F.nll_loss(a, i1)),
        "binary_cross_entropy": ("binary_cross_entropy", lambda: F.binary_cross_entropy(a.sigmoid(), b.sigmoid())),
        "multilabel_margin_loss": ("multilabel_margin_loss", lambda: F.multilabel_margin_loss(a, i1[None].expand(3, 3))),
        "layer_norm": ("layer_norm", lambda: F.layer_norm(a, (3,), v1)),
        "group_norm": ("group_norm", lambda: F.group_norm(a[None], 3, v1)),
        "instance_norm": ("instance_norm", lambda: F.instance_norm(a[None], weight=v1)),
        "batch_norm": ("batch_norm", lambda: F.batch_norm(a[None], v1, v, training=True)),
        "grid_sample": ("grid_sample", lambda: F.grid_sample(a[None, None], b[None, :, :2, None].expand(1, 3, 2, 2),
                                                             align_corners=False)),
    }


@pytest.mark.parametrize("op", list(_mixed_cases()))
def test_an_op_mixing_devices_names_both_and_the_fix(op):
    prefix, call = _mixed_cases()[op]
    with pytest.raises(RuntimeError) as info:
        call()
    message = str(info.value)
    assert message.startswith(f"{prefix}: expected all tensors to be on the same device, but found at least two "
                              f"devices, "), message
    assert ("cpu and cpu:1!" in message or "cpu:1 and cpu!" in message), message
    assert "move one to the other's device first, with .to(" in message, message


def test_copy_between_devices_is_allowed_as_in_pytorch(fake_devices):
    x = gl.zeros(2)
    x.copy_(gl.tensor([1.0, 2.0], device="twin"))
    assert x.device == "cpu" and x.tolist() == [1.0, 2.0]


# --- a real second backend, where one loads here -------------------------------------------------------


def _real_device(name):
    try:
        gl.device(name).backend
    except RuntimeError as error:
        pytest.skip(f"the '{name}' device does not load here: {error}")
    return gl.device(name)


@pytest.mark.parametrize("name", ["mlx", "numba"])
def test_a_model_and_its_optimizer_move_to_a_real_second_device(name):
    dev = _real_device(name)
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    reference = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1))
    reference.load_state_dict(model.state_dict())
    opts = [gl.optim.Adam(m.parameters(), lr=0.05) for m in (model, reference)]
    x, y = gl.randn(8, 3), gl.randn(8, 1)
    for step in range(4):
        if step == 2:
            model.to(dev)
        for m, opt in zip((model, reference), opts):
            opt.zero_grad()
            F.mse_loss(m(x.to(m[0].weight.device)), y.to(m[0].weight.device)).backward()
            opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert p.device is dev and opts[0].state[p]["exp_avg"].device is dev
        np.testing.assert_allclose(p.detach().cpu().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)
    with pytest.raises(RuntimeError, match=f"found at least two devices, {dev} and cpu!|cpu and {dev}!"):
        model(x)


@pytest.mark.parametrize("name", ["mlx", "numba"])
def test_factories_on_a_real_second_device(name):
    dev = _real_device(name)
    for factory, call in FACTORIES.items():
        kwargs = {"device": dev}
        if dev.type == "mlx" and factory in ("tensor[numpy]",):
            kwargs["dtype"] = gl.float32
        made = call(**kwargs)
        assert made.device is dev, factory
        if factory not in ("empty", "Tensor[sizes]"):
            np.testing.assert_allclose(made.cpu().numpy().astype(np.float64),
                                       call(device="cpu", **{k: v for k, v in kwargs.items() if k != "device"})
                                       .numpy().astype(np.float64), rtol=1e-6, err_msg=factory)


def test_an_int_names_a_gpu_and_cuda_takes_one(fake_devices):
    fake_devices.setitem(device_module._BACKENDS, "cuda", ("gradlab.backends.numpy_backend", "NumpyBackend", "cuda"))
    x = gl.ones(2)
    assert x.to(1).device is gl.device("cuda:1") and x.cuda(1).device is gl.device("cuda:1")
    assert x.cuda().device is gl.device("cuda") and x.cuda("cuda:2", non_blocking=True).device is gl.device("cuda:2")
    model = nn.Linear(2, 2)
    assert model.to(1).weight.device is gl.device("cuda:1") and model.cuda().weight.device is gl.device("cuda:0")
    assert x.cuda(0).cpu().device is gl.device("cpu")


def test_autocast_to_a_dtype_the_device_lacks_is_refused(fake_devices):
    from gradlab.ops.conversion import Cast

    with pytest.raises(TypeError, match=r"cast: the 'narrow' device .* has no bfloat16"):
        Cast.apply(gl.ones(2, device="narrow"), gl.bfloat16)
