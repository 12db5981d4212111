"""out=: the torch-level functions write into a tensor you give, with PyTorch's rules (ops/out_argument.py)."""

import inspect
import os
import types
import warnings

import numpy as np
import pytest

import gradlab as gl
from gradlab.ops.out_argument import OUT_FUNCTIONS
from helpers import assert_close, requires_torch, torch

A = np.arange(12.0).reshape(3, 4) / 4 - 1


def lib_cases(lib):
    """name -> (call(out), the out tensor(s) to pass): the same call for gradlab and torch."""
    a, b = lib.tensor(A), lib.tensor(A[::-1].copy())
    return {
        "add": (lambda out: lib.add(a, b, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "add_alpha": (lambda out: lib.add(a, b, alpha=2, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "sub": (lambda out: lib.sub(a, b, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "mul": (lambda out: lib.mul(a, 3, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "div": (lambda out: lib.div(a, b + 5, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "exp": (lambda out: lib.exp(a, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "tanh": (lambda out: lib.tanh(a, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "matmul": (lambda out: lib.matmul(a, b.t(), out=out), lib.empty(3, 3, dtype=lib.float64)),
        "mm": (lambda out: lib.mm(a.t(), b, out=out), lib.empty(4, 4, dtype=lib.float64)),
        "cat": (lambda out: lib.cat([a, b], 1, out=out), lib.empty(3, 8, dtype=lib.float64)),
        "stack": (lambda out: lib.stack([a, b], out=out), lib.empty(2, 3, 4, dtype=lib.float64)),
        "sum": (lambda out: lib.sum(a, 1, out=out), lib.empty(3, dtype=lib.float64)),
        "mean": (lambda out: lib.mean(a, 0, keepdim=True, out=out), lib.empty(1, 4, dtype=lib.float64)),
        "where": (lambda out: lib.where(a > 0, a, b, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "clamp": (lambda out: lib.clamp(a, -0.5, 0.5, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "softmax": (lambda out: lib.softmax(a, 1, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "eq_into_float": (lambda out: lib.eq(a, b, out=out), lib.empty(3, 4, dtype=lib.float64)),
        "argmax": (lambda out: lib.argmax(a, 1, out=out), lib.empty(3, dtype=lib.int64)),
        "max_dim": (lambda out: lib.max(a, 1, out=out),
                    (lib.empty(3, dtype=lib.float64), lib.empty(3, dtype=lib.int64))),
        "sort": (lambda out: lib.sort(b, 1, out=out),
                 (lib.empty(3, 4, dtype=lib.float64), lib.empty(3, 4, dtype=lib.int64))),
        "zeros": (lambda out: lib.zeros(2, 3, out=out), lib.ones(2, 3)),
        "arange": (lambda out: lib.arange(5, out=out), lib.empty(5, dtype=lib.int64)),
    }


CASES = list(lib_cases(gl))


def _as_list(x):
    return list(x) if isinstance(x, (tuple, list)) else [x]


@pytest.mark.parametrize("case", CASES)
def test_out_holds_the_result_and_is_returned(case):
    call, out = lib_cases(gl)[case]
    versions = [o._version_count for o in _as_list(out)]
    returned = call(out)
    plain = _as_list(call(None))
    for o, r, p, v in zip(_as_list(out), _as_list(returned), plain, versions):
        assert r is o and o._version_count == v + 1
        assert_close(o, p.to(o.dtype))


@requires_torch
@pytest.mark.parametrize("case", CASES)
def test_out_as_in_torch(case):
    ours, theirs = lib_cases(gl)[case], lib_cases(torch)[case]
    ours[0](ours[1])
    theirs[0](theirs[1])
    for o, t in zip(_as_list(ours[1]), _as_list(theirs[1])):
        assert_close(o, t)
        assert str(o.dtype).replace("gradlab", "torch") == str(t.dtype)


def test_a_named_result_comes_back_as_its_named_tuple_of_the_outs():
    values, indices = gl.empty(3, dtype=gl.float64), gl.empty(3, dtype=gl.int64)
    result = gl.max(gl.tensor(A), 1, out=(values, indices))
    assert result.values is values and result.indices is indices


def test_out_may_be_an_input():
    x = gl.tensor(A)
    assert gl.add(x, x, out=x) is x
    assert_close(x, 2 * A)


def test_out_may_be_a_view_of_the_right_shape():
    base = gl.zeros(2, 5, dtype=gl.float64)
    gl.add(gl.ones(3, dtype=gl.float64), 1, out=base[0, 1:4])
    assert_close(base, [[0, 2, 2, 2, 0], [0, 0, 0, 0, 0]])


def _resized(lib, out):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.add(lib.ones(3), 1, out=out)
    return [str(w.message) for w in caught], [w.filename for w in caught]


def test_an_out_of_another_shape_is_resized_with_a_warning():
    out = gl.empty(2)
    messages, files = _resized(gl, out)
    assert out.shape == (3,) and out.tolist() == [2.0, 2.0, 2.0]
    assert len(messages) == 1 and "add(): An output with one or more elements was resized since it had shape [2], " \
                                  "which does not match the required output shape [3]" in messages[0]
    assert files == [__file__]  # the warning points at the caller's line


def test_an_empty_out_is_resized_silently():
    out = gl.empty(0)
    assert _resized(gl, out)[0] == [] and out.shape == (3,)


@requires_torch
def test_resizing_warns_as_torch_does():
    ours, theirs = _resized(gl, gl.empty(2))[0], _resized(torch, torch.empty(2))[0]
    assert len(ours) == len(theirs) == 1 and theirs[0].startswith(ours[0][len("add(): "):])
    assert _resized(torch, torch.empty(0))[0] == []


def test_a_view_of_another_shape_is_refused():
    base = gl.zeros(2, 4)
    with pytest.raises(RuntimeError, match=r"add\(\): out has shape \[4\] but the result has shape \[3\], and out is a "
                                           r"view"):
        gl.add(gl.ones(3), 1, out=base[0])
    assert base.tolist() == [[0.0] * 4] * 2


def test_inputs_that_require_grad_are_refused():
    x = gl.ones(3, requires_grad=True)
    for call in (lambda out: gl.add(x, 1, out=out), lambda out: gl.exp(x, out=out),
                 lambda out: gl.cat([gl.ones(0), x], out=out)):
        out = gl.zeros(3)
        with pytest.raises(RuntimeError, match=r"^(add|exp|cat)\(\): functions with out=\.\.\. arguments don't support "
                                               r"automatic differentiation, but one of the arguments requires grad\.$"):
            call(out)
        assert out.tolist() == [0.0, 0.0, 0.0] and out._version_count == 0
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        gl.add(gl.ones(3), 1, out=gl.zeros(3, requires_grad=True))


def test_under_no_grad_inputs_that_require_grad_are_fine():
    x = gl.ones(3, requires_grad=True)
    with gl.no_grad():
        out = gl.exp(x, out=gl.empty(3))
    assert not out.requires_grad and out.grad_fn is None
    assert_close(out, np.full(3, np.e, dtype=np.float32))


@requires_torch
def test_torch_refuses_the_same_grads():
    with pytest.raises(RuntimeError, match=r"^add\(\): functions with out=\.\.\. arguments don't support automatic "
                                           r"differentiation, but one of the arguments requires grad\.$"):
        torch.add(torch.ones(3, requires_grad=True), 1, out=torch.zeros(3))
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        torch.add(torch.ones(3), 1, out=torch.zeros(3, requires_grad=True))


def test_the_result_must_fit_outs_dtype():
    with pytest.raises(RuntimeError, match=r"add\(\): result type float32 can't be cast to the desired output type "
                                           r"int64; pass an out tensor of dtype float32"):
        gl.add(gl.ones(3), 1, out=gl.empty(3, dtype=gl.int64))
    with pytest.raises(RuntimeError, match="result type float32 can't be cast to the desired output type bool"):
        gl.add(gl.ones(3), 1, out=gl.empty(3, dtype=gl.bool))
    assert gl.add(gl.ones(3, dtype=gl.int64), 1, out=gl.empty(3)).dtype is gl.float32  # int into float: cast
    assert gl.add(gl.ones(3, dtype=gl.float64), 1, out=gl.empty(3)).dtype is gl.float32  # a narrower float: cast


@requires_torch
def test_torch_has_the_same_dtype_rules():
    with pytest.raises(RuntimeError, match="result type Float can't be cast to the desired output type Long"):
        torch.add(torch.ones(3), 1, out=torch.empty(3, dtype=torch.long))
    assert torch.add(torch.ones(3, dtype=torch.float64), 1, out=torch.empty(3)).dtype is torch.float32
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype long int, but got float instead"):
        torch.argmax(torch.ones(3, 4), 1, out=torch.empty(3))


def test_index_outputs_must_be_int64():
    with pytest.raises(RuntimeError, match=r"argmax\(\): Expected out tensor to have dtype long int \(int64\) for the "
                                           r"indices, but got float32 instead"):
        gl.argmax(gl.ones(3, 4), 1, out=gl.empty(3))
    with pytest.raises(RuntimeError, match=r"max\(\): Expected out tensor to have dtype long int \(int64\)"):
        gl.max(gl.ones(3, 4), 1, out=(gl.empty(3), gl.empty(3, dtype=gl.int32)))


def test_out_must_be_a_tensor_or_a_tuple_of_them():
    with pytest.raises(TypeError, match=r"add\(\): argument 'out' must be Tensor, not list"):
        gl.add(gl.ones(3), 1, out=[1, 2, 3])
    with pytest.raises(TypeError, match=r"max\(\): this call returns 2 tensors \(values, indices\), so out= must be a "
                                        r"tuple of 2 tensors, got float32 tensor of shape \(3\)"):
        gl.max(gl.ones(3, 4), 1, out=gl.empty(3))


def test_out_none_is_the_plain_call():
    assert gl.add(gl.ones(2), 1, out=None).tolist() == [2.0, 2.0]


def test_the_same_function_objects_keep_their_names_and_signatures():
    assert gl.add.__name__ == "add" and "alpha" in inspect.signature(gl.add).parameters
    assert gl.add.__wrapped__ is not None


def test_every_listed_function_exists_in_gradlab():
    missing = [name for name in OUT_FUNCTIONS if not callable(getattr(gl, name, None))]
    assert missing == []
    assert all(getattr(getattr(gl, name), "writes_out", False) for name in OUT_FUNCTIONS)


def _torch_takes_out() -> dict:
    """name -> whether torch.<name> takes out=, from torch's own signature stubs (native) or inspect (Python)."""
    import ast

    stubs = os.path.join(os.path.dirname(torch.__file__), "_C", "_VariableFunctions.pyi")
    if not os.path.exists(stubs):
        pytest.skip(f"torch's signature stubs are not installed ({stubs})")
    takes = {}
    for node in ast.parse(open(stubs).read()).body:
        if isinstance(node, ast.FunctionDef):
            names = [a.arg for a in node.args.args + node.args.kwonlyargs]
            takes[node.name] = takes.get(node.name, False) or "out" in names
    result = {}
    for name in dir(gl):
        theirs = getattr(torch, name, None)
        if name.startswith("_") or not isinstance(getattr(gl, name), types.FunctionType) or theirs is None:
            continue
        if isinstance(theirs, type(torch.add)):
            result[name] = takes.get(name, False)
        else:
            try:
                result[name] = "out" in inspect.signature(theirs).parameters
            except (TypeError, ValueError):
                continue
    return result


@requires_torch
def test_the_list_is_exactly_the_functions_that_take_out_in_torch():
    takes = _torch_takes_out()
    assert sorted(n for n, t in takes.items() if t and n not in OUT_FUNCTIONS) == []
    assert sorted(n for n in OUT_FUNCTIONS if not takes.get(n, False)) == []
