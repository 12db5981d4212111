"""Containers: Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict (API and reprs as PyTorch's)."""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest
from helpers import assert_close, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn


def make_layers(nn_, lib):
    """AddConst(c): x + c, with a parameter; Double: x * 2 (no state). Same in both frameworks."""

    class AddConst(nn_.Module):
        def __init__(self, c):
            super().__init__()
            self.c = nn_.Parameter(lib.tensor([float(c)]))

        def forward(self, x):
            return x + self.c

        def extra_repr(self):
            return f"c={self.c.item():g}"

    class Double(nn_.Module):
        def forward(self, x):
            return x * 2

    return AddConst, Double


AddConst, Double = make_layers(nn, gl)


def torch_layers():
    return make_layers(torch.nn, torch)


# --- Sequential ------------------------------------------------------------------------------------


def test_sequential_forward_chains_in_order():
    seq = nn.Sequential(AddConst(1), Double(), AddConst(3))
    assert_close(seq(gl.tensor([1.0, 2.0])), [(1 + 1) * 2 + 3, (2 + 1) * 2 + 3])
    assert [n for n, _ in seq.named_parameters()] == ["0.c", "2.c"]
    assert_close(nn.Sequential()(gl.tensor([5.0])), [5.0])  # empty: identity


def test_sequential_indexing_slicing_len_iter():
    a, b, c = AddConst(1), Double(), AddConst(3)
    seq = nn.Sequential(a, b, c)
    assert len(seq) == 3 and list(seq) == [a, b, c]
    assert seq[0] is a and seq[-1] is c and seq[-3] is a
    sub = seq[1:]
    assert type(sub) is nn.Sequential and list(sub) == [b, c]
    assert list(sub._modules) == ["1", "2"]  # a slice keeps the original names, as in PyTorch
    assert_close(sub(gl.tensor([1.0])), [5.0])
    with pytest.raises(IndexError, match="index 3 is out of range"):
        seq[3]
    with pytest.raises(IndexError, match="index -4 is out of range"):
        seq[-4]
    with pytest.raises(TypeError):
        seq["0"]


def test_sequential_ordered_dict_constructor():
    seq = nn.Sequential(OrderedDict([("inc", AddConst(1)), ("twice", Double())]))
    assert list(seq._modules) == ["inc", "twice"]
    assert seq.inc is seq[0]
    assert [n for n, _ in seq.named_parameters()] == ["inc.c"]
    assert_close(seq(gl.tensor([0.0])), [2.0])


def test_sequential_mutation():
    seq = nn.Sequential(AddConst(1))
    assert seq.append(Double()) is seq
    seq.extend([AddConst(2), AddConst(3)])
    assert list(seq._modules) == ["0", "1", "2", "3"]
    first = AddConst(0)
    seq.insert(0, first)
    assert seq[0] is first and len(seq) == 5 and list(seq._modules) == ["0", "1", "2", "3", "4"]
    seq.insert(-1, Double())
    assert isinstance(seq[4], Double)
    with pytest.raises(IndexError, match="Index out of range: 9"):
        seq.insert(9, Double())
    with pytest.raises(AssertionError, match="module should be of type"):
        seq.insert(0, 3)
    del seq[0]
    assert list(seq._modules) == [str(i) for i in range(5)]  # renumbered
    del seq[1:3]
    assert len(seq) == 3 and list(seq._modules) == ["0", "1", "2"]
    replaced = Double()
    seq[1] = replaced
    assert seq[1] is replaced
    popped = seq.pop(0)
    assert isinstance(popped, AddConst) and len(seq) == 2


def test_sequential_operators():
    a, b = nn.Sequential(AddConst(1)), nn.Sequential(Double())
    both = a + b
    assert list(both) == [a[0], b[0]]
    a += b
    assert len(a) == 2 and a[1] is b[0]
    tripled = b * 3
    assert len(tripled) == 3 and all(m is b[0] for m in tripled)
    assert len(2 * b) == 2
    b *= 2
    assert len(b) == 2
    with pytest.raises(ValueError, match="add operator supports only objects of Sequential class"):
        a + [Double()]
    with pytest.raises(ValueError, match="Non-positive multiplication factor 0"):
        b * 0
    assert "0" not in dir(a)


# --- ModuleList ------------------------------------------------------------------------------------


def test_module_list():
    layers = nn.ModuleList([AddConst(i) for i in range(3)])
    assert len(layers) == 3 and [m.c.item() for m in layers] == [0.0, 1.0, 2.0]
    assert [n for n, _ in layers.named_parameters()] == ["0.c", "1.c", "2.c"]
    assert layers[-1] is layers[2]
    head = layers[:2]
    assert type(head) is nn.ModuleList and list(head) == list(layers)[:2]
    layers.append(Double())
    layers.extend([AddConst(9)])
    layers += [AddConst(10)]
    assert len(layers) == 6
    layers.insert(1, Double())
    assert isinstance(layers[1], Double) and len(layers) == 7 and list(layers._modules) == [str(i) for i in range(7)]
    new = AddConst(5)
    layers[0] = new
    assert layers[0] is new
    del layers[0]
    assert list(layers._modules) == [str(i) for i in range(6)]
    assert isinstance(layers.pop(0), Double)
    combined = layers + nn.ModuleList([Double()])
    assert len(combined) == len(layers) + 1
    with pytest.raises(IndexError, match="index 10 is out of range"):
        layers[10]
    with pytest.raises(TypeError, match="ModuleList.extend should be called with an iterable, but got int"):
        layers.extend(3)
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        layers.append(3)
    assert len(nn.ModuleList()) == 0


def test_module_list_used_by_a_custom_forward():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([AddConst(1), AddConst(2)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    model = Stack()
    assert [n for n, _ in model.named_parameters()] == ["layers.0.c", "layers.1.c"]
    out = model(gl.tensor([0.0]))
    out.sum().backward()
    assert_close(out, [3.0])
    assert all(p.grad is not None for p in model.parameters())


# --- ModuleDict ------------------------------------------------------------------------------------


def test_module_dict():
    d = nn.ModuleDict({"b": AddConst(1), "a": Double()})
    assert list(d) == ["b", "a"] and list(d.keys()) == ["b", "a"]  # insertion order, not sorted
    assert "a" in d and "z" not in d and len(d) == 2
    assert isinstance(d["a"], Double)
    d["c"] = AddConst(2)
    assert [k for k, _ in d.items()] == ["b", "a", "c"] and len(list(d.values())) == 3
    assert [n for n, _ in d.named_parameters()] == ["b.c", "c.c"]
    assert isinstance(d.pop("a"), Double) and "a" not in d
    del d["b"]
    assert list(d) == ["c"]
    d.update([("x", Double()), ("y", Double())])
    d.update(nn.ModuleDict({"z": Double()}))
    assert list(d) == ["c", "x", "y", "z"]
    d.clear()
    assert len(d) == 0
    with pytest.raises(TypeError, match="ModuleDict.update should be called with an iterable of key/value pairs"):
        d.update(3)
    with pytest.raises(ValueError, match="ModuleDict update sequence element #0 has length 1; 2 is required"):
        d.update([("a",)])
    with pytest.raises(KeyError):
        d["missing"]


# --- ParameterList / ParameterDict ---------------------------------------------------------------------


def test_parameter_list():
    params = nn.ParameterList([gl.zeros(2), nn.Parameter(gl.ones(3))])
    assert len(params) == 2 and all(isinstance(p, nn.Parameter) and p.requires_grad for p in params)
    assert [n for n, _ in params.named_parameters()] == ["0", "1"]
    params.append(gl.ones(1))
    params.extend([gl.ones(4)])
    params += [gl.ones(5)]
    assert [p.shape for p in params] == [(2,), (3,), (1,), (4,), (5,)]
    assert params[-1].shape == (5,)
    part = params[1:3]
    assert type(part) is nn.ParameterList and part[0] is params[1]
    params[0] = gl.full((2,), 7.0)
    assert isinstance(params[0], nn.Parameter) and params[0].requires_grad
    params.append("not a tensor")  # other objects are kept but not registered
    assert params[5] == "not a tensor" and len(list(params.parameters())) == 5
    with pytest.raises(TypeError, match="ParameterList.extend should be called with an iterable, but got Tensor"):
        params.extend(gl.ones(2))
    with pytest.raises(RuntimeError, match="ParameterList should not be called."):
        params(1)
    with pytest.raises(IndexError, match="index 6 is out of range"):
        params[6]


def test_parameter_dict():
    pd = nn.ParameterDict({"b": gl.zeros(2), "a": nn.Parameter(gl.ones(1))})
    assert list(pd) == ["a", "b"]  # a plain dict is sorted, as in PyTorch
    pd2 = nn.ParameterDict(OrderedDict([("b", gl.zeros(2)), ("a", gl.ones(1))]))
    assert list(pd2) == ["b", "a"]
    assert isinstance(pd["b"], nn.Parameter) and pd["b"].requires_grad
    pd["c"] = gl.ones(3)
    assert list(pd.keys()) == ["a", "b", "c"] and len(pd) == 3 and "c" in pd
    assert [n for n, _ in pd.named_parameters()] == ["a", "b", "c"]
    assert [k for k, _ in pd.items()] == ["a", "b", "c"] and len(list(pd.values())) == 3
    assert pd.get("zz") is None and pd.get("a") is pd["a"]
    assert pd.setdefault("d", gl.ones(1)) is pd["d"]
    assert pd.pop("d").shape == (1,) and "d" not in pd
    key, value = pd.popitem()
    assert key == "c" and value.shape == (3,)
    copy = pd.copy()
    assert list(copy) == ["a", "b"] and copy["a"] is pd["a"]
    merged = pd | nn.ParameterDict({"z": gl.ones(1)})
    assert list(merged) == ["a", "b", "z"]
    pd |= {"y": gl.ones(1)}
    assert list(pd) == ["a", "b", "y"]
    assert list(reversed(pd)) == ["y", "b", "a"]
    assert list(pd.fromkeys(["p", "q"], gl.ones(1))) == ["p", "q"]
    del pd["a"]
    assert list(pd) == ["b", "y"]
    pd.clear()
    assert len(pd) == 0 and list(pd.parameters()) == []
    with pytest.raises(TypeError, match="Index given to ParameterDict cannot be used as a key as it is not a string"):
        pd[1] = gl.ones(1)
    with pytest.raises(RuntimeError, match="ParameterDict should not be called."):
        pd(1)


def test_containers_move_with_to():
    model = nn.Sequential(nn.ModuleList([AddConst(1)]), nn.ModuleDict({"d": AddConst(2)}))
    model.add_module("plist", nn.ParameterList([gl.ones(2)]))
    model.add_module("pdict", nn.ParameterDict({"w": gl.ones(2)}))
    held = list(model.parameters())
    assert len(held) == 4
    model.double()
    assert all(p.dtype is gl.float64 for p in model.parameters())
    assert all(a is b for a, b in zip(held, model.parameters()))
    assert list(model.state_dict()) == ["0.0.c", "1.d.c", "plist.0", "pdict.w"]


# --- reprs vs PyTorch ----------------------------------------------------------------------------------


@requires_torch
def test_reprs_match_torch():
    TAdd, TDouble = torch_layers()
    builds = []
    for nn_, A, D, lib in ((nn, AddConst, Double, gl), (torch.nn, TAdd, TDouble, torch)):
        builds.append([
            nn_.Sequential(A(1), nn_.Sequential(D(), A(2)), D()),
            nn_.Sequential(OrderedDict([("first", A(1)), ("second", D())])),
            nn_.Sequential(A(1), D(), A(3))[1:],
            nn_.Sequential(),
            nn_.ModuleList([A(1), A(1), A(1), D(), A(1), A(2), A(2)]),  # runs of equal reprs are folded
            nn_.ModuleList([nn_.Sequential(A(1), D()) for _ in range(3)]),
            nn_.ModuleList(),
            nn_.ModuleDict({"a": A(1), "b": nn_.ModuleList([D(), D()])}),
            nn_.ParameterList([lib.zeros(2, 3), lib.zeros(4, dtype=lib.float64)]),
            nn_.ParameterList([lib.zeros(2)]),
            nn_.ParameterList(),
            nn_.ParameterDict({"w": lib.zeros(2, 3), "b": lib.zeros(3, dtype=lib.float64)}),
            nn_.ParameterDict({"w": lib.zeros(5)}),
        ])
    for ours, theirs in zip(*builds):
        assert repr(ours) == repr(theirs).replace("torch.", "gradlab.")


def test_repr_text():
    assert repr(nn.ModuleList([Double(), Double(), AddConst(1)])) == (
        "ModuleList(\n  (0-1): 2 x Double()\n  (2): AddConst(c=1)\n)")
    assert repr(nn.ParameterList([gl.zeros(2, 3)])) == "ParameterList(  (0): Parameter containing: [gradlab.float32 of size 2x3])"
    assert repr(nn.ParameterDict({"w": gl.zeros(2)})) == "ParameterDict(  (w): Parameter containing: [gradlab.FloatTensor of size 2])"


def test_sequential_gradients_flow_to_every_parameter():
    seq = nn.Sequential(AddConst(1), Double(), AddConst(2))
    seq(gl.tensor(np.ones(3, dtype=np.float32))).sum().backward()
    assert_close(seq[0].c.grad, [6.0])  # d/dc of sum(2 (x + c) + d) = 2 per element
    assert_close(seq[2].c.grad, [3.0])
