"""gradlab.cuda: PyTorch's torch.cuda questions and timing, on numba's CUDA driver (or its simulator).

Without a GPU, numba's simulator stands in (set below, before numba.cuda is imported).
"""

import os

if "NUMBA_ENABLE_CUDASIM" not in os.environ and not os.path.exists("/dev/nvidiactl"):
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"

import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import gradlab as gl

cuda = pytest.importorskip("numba.cuda", reason="gradlab.cuda's device paths need numba-cuda (pip install 'gradlab[cuda]')")

needs_backend = pytest.mark.skipif(importlib.util.find_spec("gradlab.backends.cuda_backend") is None,
                                   reason="this gradlab has no CUDA backend module yet")


@needs_backend
def test_is_available_when_the_backend_loads_and_the_simulator_says_so():
    gl.cuda.is_available.cache_clear()
    assert gl.cuda.is_available() and gl.cuda.device_count() == 1
    assert gl.cuda.is_simulated() == bool(cuda.config.ENABLE_CUDASIM)


def test_the_current_device_is_device_zero():
    assert gl.cuda.current_device() == 0
    for device in (0, "cuda", "cuda:0", gl.device("cuda:0")):
        gl.cuda.set_device(device)


def test_only_device_zero_can_be_chosen():
    with pytest.raises(RuntimeError, match=r"gradlab.cuda.set_device: invalid device ordinal 1: gradlab drives one GPU"):
        gl.cuda.set_device("cuda:1")
    with pytest.raises(ValueError, match=r"gradlab.cuda.set_device: expected a CUDA device, got 'cpu'"):
        gl.cuda.set_device("cpu")


def test_the_device_has_a_name_a_capability_and_memory():
    name = gl.cuda.get_device_name()
    assert isinstance(name, str) and name
    if cuda.config.ENABLE_CUDASIM:
        assert name == "numba CUDA simulator"
    major, minor = gl.cuda.get_device_capability(0)
    assert major >= 1 and minor >= 0
    free, total = gl.cuda.mem_get_info()
    assert 0 < free <= total


def _kernel_launch():
    @cuda.jit
    def double(x):
        i = cuda.grid(1)
        if i < x.size:
            x[i] *= 2

    x = cuda.to_device(np.arange(16, dtype=np.float32))
    double[1, 16](x)
    return x


def test_events_time_the_work_between_them():
    start, end = gl.cuda.Event(enable_timing=True), gl.cuda.Event(enable_timing=True)
    start.record()
    x = _kernel_launch()
    end.record()
    end.synchronize()
    assert end.query()
    assert start.elapsed_time(end) >= 0
    np.testing.assert_array_equal(x.copy_to_host(), np.arange(16) * 2)


def test_elapsed_time_needs_timing_events_that_were_recorded():
    plain, timed, other = gl.cuda.Event(), gl.cuda.Event(enable_timing=True), gl.cuda.Event(enable_timing=True)
    with pytest.raises(RuntimeError, match="both events must be created with enable_timing=True"):
        plain.elapsed_time(timed)
    with pytest.raises(RuntimeError, match=r"both events must be recorded \(call .record\(\)\)"):
        timed.elapsed_time(other)


def test_streams_synchronize_and_record_events():
    stream = gl.cuda.Stream()
    event = stream.record_event()
    stream.wait_event(event)
    stream.synchronize()
    gl.cuda.current_stream().synchronize()
    gl.cuda.synchronize()


def test_manual_seed_seeds_the_one_generator():
    gl.cuda.manual_seed(5)
    first = gl.rand(3).tolist()
    gl.cuda.manual_seed_all(5)
    assert gl.rand(3).tolist() == first


def test_without_numba_cuda_every_question_has_a_plain_answer():
    """In a process where numba-cuda cannot be found, gradlab.cuda answers without importing numba."""
    code = ("import sys, importlib.util as u\n"
            "real = u.find_spec\n"
            "u.find_spec = lambda name, *a: None if name.split('.')[0] in ('numba', 'numba_cuda') else real(name, *a)\n"
            "import gradlab as gl\n"
            "assert gl.cuda.is_available() is False and gl.cuda.device_count() == 0 and not gl.cuda.is_simulated()\n"
            "gl.cuda.synchronize()\n"
            "try:\n"
            "    gl.cuda.Event(enable_timing=True)\n"
            "except RuntimeError as error:\n"
            "    assert 'gradlab.cuda.Event: CUDA is not available here: numba-cuda is not installed' in str(error)\n"
            "    assert 'pip install \"gradlab[cuda]\"' in str(error)\n"
            "else:\n"
            "    raise AssertionError('Event without numba-cuda')\n"
            "assert 'numba' not in sys.modules\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
