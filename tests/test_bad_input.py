"""Bad input gets an error that names the operation and the offending value, and changes nothing."""

import numpy as np
import pytest

import gradlab as gl
from helpers import requires_torch, torch

# --- p.grad = g -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("grad, message", [
    (lambda: gl.zeros(4), r"assign a gradient with size '\[4\]' to a tensor with size '\[3\]'"),
    (lambda: gl.zeros(3, dtype=gl.float64), r"assign a gradient with dtype 'gradlab.float64' to a tensor with dtype "
                                            r"'gradlab.float32'"),
    (lambda: gl.zeros(1, 3), r"size '\[1, 3\]' to a tensor with size '\[3\]'"),
])
def test_assigning_a_grad_that_does_not_fit_is_refused_and_keeps_the_old_one(grad, message):
    p = gl.nn.Parameter(gl.randn(3))
    p.sum().backward()
    before = p.grad
    with pytest.raises(RuntimeError, match=message):
        p.grad = grad()
    assert p.grad is before


def test_assigning_a_grad_that_is_not_a_tensor_is_refused():
    p = gl.nn.Parameter(gl.randn(3))
    with pytest.raises(TypeError, match="assigned grad expected to be a Tensor or None but got grad of type ndarray"):
        p.grad = np.zeros(3)
    with pytest.raises(RuntimeError, match="can't assign Variable as its own grad"):
        p.grad = p
    assert p.grad is None


def test_assigning_a_fitting_grad_or_none_works():
    p = gl.nn.Parameter(gl.randn(3))
    p.grad = gl.ones(3)
    assert p.grad.tolist() == [1.0, 1.0, 1.0]
    p.grad = None
    assert p.grad is None
    p.grad = gl.ones(3)
    del p.grad
    assert p.grad is None


@requires_torch
def test_grad_assignment_refuses_what_pytorch_refuses():
    for make in (lambda m: m.zeros(4), lambda m: m.zeros(3, dtype=m.float64), lambda m: m.zeros(3, 1)):
        with pytest.raises(RuntimeError):
            torch.nn.Parameter(torch.randn(3)).grad = make(torch)
        with pytest.raises(RuntimeError):
            gl.nn.Parameter(gl.randn(3)).grad = make(gl)


# --- modules ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("layer, shape", [(gl.nn.BatchNorm1d, (1, 3)), (gl.nn.BatchNorm2d, (1, 3, 1, 1))])
def test_batchnorm_refuses_a_training_batch_of_one_before_touching_its_buffers(layer, shape):
    bn = layer(3)
    before = {name: buffer.numpy().copy() for name, buffer in bn.named_buffers()}
    with pytest.raises(ValueError, match=rf"{layer.__name__}\(3\): Expected more than 1 value per channel when "
                                         rf"training, got input size \[{shape[0]}, 3"):
        bn(gl.randn(*shape))
    for name, buffer in bn.named_buffers():
        np.testing.assert_array_equal(buffer.numpy(), before[name], err_msg=name)
    bn.eval()
    assert bn(gl.randn(*shape)).shape == shape  # the running statistics serve one sample


@pytest.mark.parametrize("key", [1, None, ("0", "weight"), 2.5])
def test_load_state_dict_with_a_key_that_is_not_a_string_names_it_and_loads_nothing(key):
    model = gl.nn.Linear(2, 2)
    before = {k: v.numpy().copy() for k, v in model.state_dict().items()}
    state = {**{k: gl.zeros(v.shape) for k, v in model.state_dict().items()}, key: gl.zeros(2)}
    with pytest.raises(TypeError, match=rf"state_dict keys are parameter and buffer names .* the key "
                                        rf"{repr(key).replace('(', '[(]').replace(')', '[)]')} of type "
                                        rf"{type(key).__name__}; nothing was loaded"):
        model.load_state_dict(state)
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k])


# --- dims ----------------------------------------------------------------------------------------------------

DIM_OPS = {
    "mean": lambda x, d: x.mean(d), "sum": lambda x, d: x.sum(dim=d), "var": lambda x, d: x.var(d),
    "logsumexp": lambda x, d: x.logsumexp(d), "softmax": lambda x, d: x.softmax(d), "cat": lambda x, d: gl.cat([x, x], d),
    "transpose": lambda x, d: x.transpose(d, 0), "unsqueeze": lambda x, d: x.unsqueeze(d),
    "argmax": lambda x, d: x.argmax(d), "cumsum": lambda x, d: x.cumsum(d), "squeeze": lambda x, d: x.squeeze(d),
    "gather": lambda x, d: x.gather(d, gl.zeros(3, 1, dtype=gl.int64)), "log_softmax": lambda x, d: x.log_softmax(d),
    "index_select": lambda x, d: x.index_select(d, gl.tensor([0])), "split": lambda x, d: x.split(2, d),
    "stack": lambda x, d: gl.stack([x, x], d), "narrow": lambda x, d: x.narrow(d, 0, 1),
    "unbind": lambda x, d: x.unbind(d), "size": lambda x, d: x.size(d), "all": lambda x, d: x.all(d),
}


@pytest.mark.parametrize("op", sorted(DIM_OPS))
def test_a_float_dim_is_named_with_the_op_and_the_fix(op):
    x = gl.randn(3, 4)
    with pytest.raises(TypeError, match=rf"{op}: dim must be an int .*got 1.0 of type float; dims count axes, so pass "
                                        rf"dim=1"):
        DIM_OPS[op](x, 1.0)
    DIM_OPS[op](x, np.int64(1))  # numpy integers are ints


def test_a_string_dim_gets_a_general_hint():
    with pytest.raises(TypeError, match=r"mean: dim must be an int .*got 'rows' of type str; dims count axes, so pass "
                                        r"an int such as dim=0"):
        gl.randn(2, 2).mean("rows")


# --- Python ints that do not fit -----------------------------------------------------------------------------


@pytest.mark.parametrize("make, op, dtype", [
    (lambda: gl.tensor([1, 2**70]), "tensor", "int64"),
    (lambda: gl.tensor(2**63), "tensor", "int64"),
    (lambda: gl.tensor([[0], [-2**63 - 1]]), "tensor", "int64"),
    (lambda: gl.tensor([2**40], dtype=gl.int32), "tensor", "int32"),
    (lambda: gl.full((2,), 2**64), "full", "int64"),
    (lambda: gl.zeros(2, dtype=gl.int64).fill_(2**70), "fill_", "int64"),
])
def test_a_python_int_too_large_for_its_dtype_is_named(make, op, dtype):
    with pytest.raises(RuntimeError, match=rf"{op}: the Python int -?\d+ does not fit in {dtype} \(its range is"):
        make()


def test_large_ints_that_fit_or_go_to_floats_are_kept():
    assert gl.tensor([2**63 - 1]).tolist() == [2**63 - 1]
    assert gl.tensor([1.5, 2**70]).dtype is gl.float32
    assert gl.tensor([2**70], dtype=gl.float64).item() == float(2**70)


# --- autograd switches ------------------------------------------------------------------------------------


def test_set_detect_anomaly_switches_at_once_and_a_with_block_restores():
    from gradlab.autograd import anomaly

    assert not gl.autograd.is_anomaly_enabled()
    gl.autograd.set_detect_anomaly(True)
    try:
        assert gl.autograd.is_anomaly_enabled() and anomaly.anomaly_state.recorder is not None
        with gl.autograd.set_detect_anomaly(False):
            assert not gl.autograd.is_anomaly_enabled() and anomaly.anomaly_state.recorder is None
        assert gl.autograd.is_anomaly_enabled()
    finally:
        gl.autograd.set_detect_anomaly(False)
    assert not gl.autograd.is_anomaly_enabled() and anomaly.anomaly_state.recorder is None
    assert gl.autograd.anomaly_mode.detect_anomaly is gl.autograd.detect_anomaly


def test_is_tensor_like():
    assert gl.autograd.is_tensor_like(gl.zeros(1)) and not gl.autograd.is_tensor_like(np.zeros(1))


def test_variable_is_a_tensor_as_in_pytorch_since_0_4():
    x = gl.ones(2)
    v = gl.autograd.Variable(x, requires_grad=True)
    assert isinstance(v, gl.Tensor) and v.requires_grad and v.is_leaf and isinstance(x, gl.autograd.Variable)
    v.sum().backward()
    assert v.grad.tolist() == [1.0, 1.0] and x.grad is None
    with pytest.raises(TypeError, match="Variable data has to be a tensor, but got list"):
        gl.autograd.Variable([1.0])
