"""gradlab.cuda answers the questions PyTorch scripts ask before choosing a device."""

import gradlab as gl


def test_cuda_is_not_available_when_its_backend_cannot_load(monkeypatch):
    from gradlab.backends import device as device_module

    monkeypatch.setitem(device_module._BACKENDS, "cuda", ("gradlab.backends.no_such_backend", "Absent", "cuda"))
    monkeypatch.delitem(device_module._backend_objects, "cuda", raising=False)
    gl.cuda.is_available.cache_clear()
    try:
        assert gl.cuda.is_available() is False  # a plain answer, not an error
        assert gl.cuda.device_count() == 0
        gl.cuda.synchronize()  # harmless without a GPU
    finally:
        gl.cuda.is_available.cache_clear()


def test_availability_and_device_count_agree():
    assert gl.cuda.device_count() == (1 if gl.cuda.is_available() else 0)


def test_the_usual_device_choice_runs_unchanged():
    device = gl.device("cuda" if gl.cuda.is_available() else "cpu")
    assert gl.zeros(2, device=device).device == device


def test_manual_seed_all_seeds_the_one_generator():
    gl.cuda.manual_seed_all(3)
    first = gl.rand(3).tolist()
    gl.manual_seed(3)
    assert gl.rand(3).tolist() == first
