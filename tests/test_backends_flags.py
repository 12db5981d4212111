"""PyTorch's backend switches exist, can be set and read back, and answer honestly what is available."""

import subprocess
import sys

import pytest

import gradlab as gl
import gradlab.backends.cuda as cuda_flags
import gradlab.backends.cudnn as cudnn
from helpers import requires_torch, torch


def test_imagenet_style_import_and_settings():
    saved = (cudnn.benchmark, cudnn.deterministic)
    try:
        cudnn.benchmark = True
        cudnn.deterministic = True
        assert gl.backends.cudnn.benchmark is True and gl.backends.cudnn.deterministic is True
    finally:
        cudnn.benchmark, cudnn.deterministic = saved


@requires_torch
def test_defaults_and_availability_match_torch_without_a_gpu():
    import torch.backends.cuda
    import torch.backends.cudnn

    for name in ("enabled", "benchmark", "deterministic", "allow_tf32", "benchmark_limit"):
        assert getattr(cudnn, name) == getattr(torch.backends.cudnn, name), name
    assert cudnn.is_available() is False and cudnn.version() is None and not cudnn.is_acceptable(gl.ones(1))
    for name in ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        assert getattr(cuda_flags.matmul, name) == getattr(torch.backends.cuda.matmul, name), name
    for kind in ("flash", "mem_efficient", "math", "cudnn"):
        assert getattr(cuda_flags, f"{kind}_sdp_enabled")() == getattr(torch.backends.cuda, f"{kind}_sdp_enabled")()
    assert gl.backends.mps.is_available() is torch.backends.mps.is_available() is False
    assert gl.backends.mps.is_built() is False
    assert gl.backends.mkldnn.is_available() is False and gl.backends.openmp.is_available() is False
    assert cuda_flags.is_built() is True  # gradlab ships its CUDA backend module (it needs gradlab[cuda] to load)


def test_cudnn_flags_context_manager_sets_and_restores():
    before = {name: getattr(cudnn, name) for name in cudnn._FLAGS}
    with cudnn.flags(enabled=True, benchmark=True, deterministic=True, allow_tf32=False):
        assert (cudnn.enabled, cudnn.benchmark, cudnn.deterministic, cudnn.allow_tf32) == (True, True, True, False)
    assert {name: getattr(cudnn, name) for name in cudnn._FLAGS} == before
    with pytest.raises(KeyError):
        with cudnn.flags(benchmark=True):
            raise KeyError("inside")
    assert cudnn.benchmark == before["benchmark"]


def test_matmul_flags_are_settable_and_typos_are_refused():
    cuda_flags.matmul.allow_tf32 = True
    try:
        assert gl.backends.cuda.matmul.allow_tf32 is True
    finally:
        cuda_flags.matmul.allow_tf32 = False
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf23"):
        cuda_flags.matmul.allow_tf23 = True


def test_sdp_switches_and_the_sdp_kernel_context():
    cuda_flags.enable_flash_sdp(False)
    try:
        assert not cuda_flags.flash_sdp_enabled()
    finally:
        cuda_flags.enable_flash_sdp(True)
    with cuda_flags.sdp_kernel(enable_flash=False, enable_math=True, enable_mem_efficient=False):
        assert (cuda_flags.flash_sdp_enabled(), cuda_flags.math_sdp_enabled(),
                cuda_flags.mem_efficient_sdp_enabled()) == (False, True, False)
    assert cuda_flags.flash_sdp_enabled() and cuda_flags.mem_efficient_sdp_enabled()
    assert cuda_flags.is_flash_attention_available() is False


def test_preferred_libraries():
    assert cuda_flags.preferred_linalg_library() is cuda_flags.LinalgBackend.Default
    try:
        assert cuda_flags.preferred_linalg_library("magma") is cuda_flags.LinalgBackend.Magma
        assert cuda_flags.preferred_linalg_library() is cuda_flags.LinalgBackend.Magma
    finally:
        cuda_flags.preferred_linalg_library("default")
    with pytest.raises(RuntimeError, match="Unknown input value. Choose from: default, cusolver, magma."):
        cuda_flags.preferred_linalg_library("lapack")
    assert cuda_flags.preferred_blas_library() is cuda_flags.BlasBackend.Cublas


def test_flags_change_nothing_on_the_cpu():
    x = gl.tensor([[1.0, 2.0], [3.0, 4.0]])
    plain = (x @ x).tolist()
    with cudnn.flags(enabled=True, benchmark=True, deterministic=True):
        cuda_flags.matmul.allow_tf32 = True
        try:
            assert (x @ x).tolist() == plain
        finally:
            cuda_flags.matmul.allow_tf32 = False


def test_flag_modules_load_on_first_use_not_with_gradlab():
    code = ("import sys, gradlab; print(any(m in sys.modules for m in ('gradlab.backends.cudnn', "
            "'gradlab.backends.cuda'))); gradlab.backends.cudnn.benchmark = True; "
            "print('gradlab.backends.cudnn' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]
    with pytest.raises(AttributeError, match="module 'gradlab.backends' has no attribute 'xla'"):
        gl.backends.xla
