"""nn.Module: registration, tree walks, modes, devices/dtypes, state dicts, hooks and repr (PyTorch semantics)."""

from __future__ import annotations

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest
from helpers import assert_close, randn, requires_torch, torch

import gradlab as gl
import gradlab.nn as nn

# --- small modules defined the same way in both frameworks ---------------------------------------


def define(nn_):
    """Scale (y = x * w, with a buffer and a non-persistent buffer), Block (two Scales), Net (nested)."""

    class Scale(nn_.Module):
        def __init__(self, n=3):
            super().__init__()
            self.w = nn_.Parameter(nn_._tensor(np.arange(1.0, n + 1)))
            self.register_buffer("count", nn_._tensor(np.zeros(1)))
            self.register_buffer("scratch", nn_._tensor(np.zeros(2)), persistent=False)

        def forward(self, x):
            return x * self.w

        def extra_repr(self):
            return f"n={self.w.shape[0]}"

    class Block(nn_.Module):
        def __init__(self):
            super().__init__()
            self.first = Scale()
            self.second = Scale()

        def forward(self, x):
            return self.second(self.first(x))

    class Net(nn_.Module):
        def __init__(self):
            super().__init__()
            self.block = Block()
            self.head = Scale(3)
            self.bias = nn_.Parameter(nn_._tensor(np.array([0.5, -0.5, 1.0])))

        def forward(self, x):
            return self.head(self.block(x)) + self.bias

    return Scale, Block, Net


class _GlNN:
    Module, Parameter = nn.Module, nn.Parameter

    @staticmethod
    def _tensor(a):
        return gl.tensor(np.asarray(a, dtype=np.float64))


Scale, Block, Net = define(_GlNN)


def torch_classes():
    class _TorchNN:
        Module, Parameter = torch.nn.Module, torch.nn.Parameter

        @staticmethod
        def _tensor(a):
            return torch.tensor(np.asarray(a, dtype=np.float64))

    return define(_TorchNN)


def params_snapshot(module):
    return {name: p.detach().numpy().copy() for name, p in module.state_dict().items()}


# --- Parameter ------------------------------------------------------------------------------------


def test_parameter_basics():
    data = gl.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    assert isinstance(p, gl.Tensor) and p.requires_grad and p.is_leaf
    assert type(p * 2) is gl.Tensor and type(p.detach()) is gl.Tensor  # results of ops are plain tensors
    data.add_(1.0)  # the Parameter shares the tensor's memory
    assert_close(p, [2.0, 3.0])
    assert not nn.Parameter(gl.ones(2), requires_grad=False).requires_grad
    assert nn.Parameter().shape == (0,)
    assert repr(p) == "Parameter containing:\ntensor([2., 3.], requires_grad=True)"
    with pytest.raises(RuntimeError, match="only Tensors of floating point dtype can require gradients"):
        nn.Parameter(gl.tensor([1, 2]))
    q = copy.deepcopy(p)
    assert isinstance(q, nn.Parameter) and q.requires_grad and q is not p
    r = pickle.loads(pickle.dumps(p))
    assert isinstance(r, nn.Parameter) and r.requires_grad
    assert_close(r, [2.0, 3.0])


@requires_torch
def test_parameter_repr_matches_torch():
    for values, grad in (([1.0, 2.5], True), ([[0.5, -1.0]], False)):
        ours = repr(nn.Parameter(gl.tensor(values), requires_grad=grad))
        theirs = repr(torch.nn.Parameter(torch.tensor(values), requires_grad=grad))
        assert ours == theirs


# --- registration ---------------------------------------------------------------------------------


def test_attributes_register_parameters_modules_and_buffers():
    net = Net()
    assert list(net._parameters) == ["bias"]
    assert list(net._modules) == ["block", "head"]
    assert isinstance(net.head.w, nn.Parameter) and net.head.w.requires_grad
    assert [n for n, _ in net.named_parameters()] == ["bias", "block.first.w", "block.second.w", "head.w"]
    assert [n for n, _ in net.named_buffers()] == ["block.first.count", "block.first.scratch", "block.second.count",
                                                   "block.second.scratch", "head.count", "head.scratch"]
    assert "w" not in net.head.__dict__  # stored in _parameters, found by __getattr__
    assert "w" in dir(net.head) and "head" in dir(net)


@requires_torch
def test_parameter_and_module_order_match_torch_after_reassignment():
    TScale, TBlock, TNet = torch_classes()
    g, t = Net(), TNet()
    for m, P, T in ((g, nn.Parameter, gl.zeros), (t, torch.nn.Parameter, torch.zeros)):
        m.extra = P(T(1))
        m.bias = P(T(3))  # reassigning keeps the name's place (before 'extra')
        m.block = Block() if m is g else TBlock()
        m.plain = 5
        m.plain = P(T(2))  # a plain attribute becomes a parameter
    assert [n for n, _ in g.named_parameters()] == [n for n, _ in t.named_parameters()]
    assert [n for n, _ in g.named_modules()] == [n for n, _ in t.named_modules()]
    assert list(g.state_dict()) == list(t.state_dict())


def test_reassign_delete_and_none():
    m = Scale()
    old = m.w
    m.w = nn.Parameter(gl.ones(3))
    assert m.w is not old and list(m.parameters()) == [m.w]
    m.w = None
    assert m.w is None and list(m.parameters()) == [] and "w" in m._parameters
    assert "w" not in m.state_dict()
    del m.w
    assert "w" not in m._parameters
    with pytest.raises(AttributeError, match="'Scale' object has no attribute 'w'"):
        m.w
    m.count = gl.ones(1)  # assigning a tensor to a buffer name replaces the buffer
    assert_close(m.count, [1.0])
    m.count = None
    assert "count" not in m.state_dict()
    del m.scratch
    assert "scratch" not in m._buffers and "scratch" not in m._non_persistent_buffers


def test_module_replaces_parameter_of_same_name_and_back():
    m = Scale()
    with pytest.raises(TypeError, match="cannot assign 'Scale' as parameter 'w'"):
        m.w = Scale(2)  # as in PyTorch: a parameter name takes only a Parameter or None
    del m.w
    m.w = Scale(2)
    assert "w" in m._modules and "w" not in m._parameters
    m.w = nn.Parameter(gl.ones(1))
    assert "w" in m._parameters and "w" not in m._modules
    m.w = None  # a parameter name accepts None
    m.child = Scale()
    m.child = None
    assert m._modules["child"] is None and list(m.children()) == []


def test_registration_errors():
    m = Scale()
    with pytest.raises(TypeError, match=r"cannot assign 'gradlab.FloatTensor' as parameter 'w' \(gradlab.nn.Parameter or None expected\)"):
        m.w = gl.zeros(3)
    m.sub = Scale()
    with pytest.raises(TypeError, match=r"cannot assign 'int' as child module 'sub' \(gradlab.nn.Module or None expected\)"):
        m.sub = 3
    with pytest.raises(TypeError, match=r"cannot assign 'list' as buffer 'count'"):
        m.count = [1.0]
    with pytest.raises(KeyError, match="attribute 'sub' already exists"):
        m.register_buffer("sub", gl.zeros(1))
    with pytest.raises(KeyError, match="attribute 'forward' already exists"):
        m.register_parameter("forward", None)
    with pytest.raises(KeyError, match=r"parameter name can\W{1,2}t contain"):
        m.register_parameter("a.b", None)
    with pytest.raises(KeyError, match=r"buffer name can\W{1,2}t be empty"):
        m.register_buffer("", None)
    with pytest.raises(TypeError, match="parameter name should be a string. Got int"):
        m.register_parameter(1, None)
    with pytest.raises(TypeError, match=r"cannot assign 'gradlab.FloatTensor' object to parameter 'p'.*nn.Parameter\(tensor\)"):
        m.register_parameter("p", gl.zeros(1))
    with pytest.raises(TypeError, match="cannot assign 'int' object to buffer 'b'"):
        m.register_buffer("b", 1)
    with pytest.raises(TypeError, match="int is not a Module subclass"):
        m.add_module("x", 1)
    with pytest.raises(KeyError, match=r'module name can\W{1,2}t contain ".", got: a.b'):
        m.add_module("a.b", None)
    with pytest.raises(ValueError, match="Cannot assign non-leaf Tensor to parameter 'p'"):
        m.register_parameter("p", _non_leaf_parameter())


def _non_leaf_parameter():
    p = nn.Parameter(gl.ones(2))
    p.grad_fn = (p * 2).grad_fn  # a Parameter that is not a leaf (cannot happen through the public API)
    return p


def test_assigning_before_init_is_an_error():
    class Early(nn.Module):
        def __init__(self):
            self.w = nn.Parameter(gl.zeros(1))

    class EarlyModule(nn.Module):
        def __init__(self):
            self.m = nn.Module()

    class EarlyBuffer(nn.Module):
        def __init__(self):
            self.register_buffer("b", gl.zeros(1))

    with pytest.raises(AttributeError, match=r"cannot assign parameters before Module.__init__\(\) call"):
        Early()
    with pytest.raises(AttributeError, match=r"cannot assign module before Module.__init__\(\) call"):
        EarlyModule()
    with pytest.raises(AttributeError, match=r"cannot assign buffer before Module.__init__\(\) call"):
        EarlyBuffer()


def test_init_rejects_unexpected_arguments():
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'x'"):
        nn.Module(x=1)
    with pytest.raises(TypeError, match="takes 1 positional argument but 2 were given"):
        nn.Module(1)


def test_missing_forward():
    with pytest.raises(NotImplementedError, match=r'Module \[Module\] is missing the required "forward" function'):
        nn.Module()(gl.ones(1))


# --- walking the tree ----------------------------------------------------------------------------


def test_shared_parameters_and_modules_are_listed_once():
    m = nn.Module()
    m.a = Scale()
    m.b = m.a  # the same module under two names
    m.c = Scale()
    m.c.w = m.a.w  # a parameter shared by two modules
    assert [n for n, _ in m.named_parameters()] == ["a.w"]
    assert len(list(m.parameters())) == 1
    assert [n for n, _ in m.named_parameters(remove_duplicate=False)] == ["a.w", "b.w", "c.w"]
    assert [n for n, _ in m.named_modules()] == ["", "a", "c"]
    assert [n for n, _ in m.named_modules(remove_duplicate=False)] == ["", "a", "b", "c"]
    assert [n for n, _ in m.named_children()] == ["a", "c"]
    assert list(m.children()) == [m.a, m.c]
    assert list(m.modules()) == [m, m.a, m.c]
    assert [n for n, _ in m.named_buffers()] == ["a.count", "a.scratch", "c.count", "c.scratch"]


@requires_torch
def test_shared_modules_and_parameters_match_torch():
    TScale, _, _ = torch_classes()
    results = []
    for M, S in ((nn.Module, Scale), (torch.nn.Module, TScale)):
        m = M()
        m.a = S()
        m.b = m.a
        m.c = S()
        m.c.w = m.a.w
        results.append(([n for n, _ in m.named_parameters()], [n for n, _ in m.named_modules()],
                         [n for n, _ in m.named_buffers()], list(m.state_dict())))
    assert results[0] == results[1]


def test_prefix_and_recurse():
    net = Net()
    assert [n for n, _ in net.named_parameters(prefix="model")][:2] == ["model.bias", "model.block.first.w"]
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["bias"]
    assert list(net.buffers(recurse=False)) == []
    assert [n for n, _ in net.named_modules(prefix="m")] == ["m", "m.block", "m.block.first", "m.block.second", "m.head"]


def test_get_submodule_parameter_buffer():
    net = Net()
    assert net.get_submodule("block.first") is net.block.first
    assert net.get_submodule("") is net
    assert net.get_parameter("block.second.w") is net.block.second.w
    assert net.get_buffer("head.count") is net.head.count
    with pytest.raises(AttributeError, match="Block has no attribute `third`"):
        net.get_submodule("block.third")
    with pytest.raises(AttributeError, match="`bias` is not an nn.Module"):
        net.get_submodule("bias.x")
    with pytest.raises(AttributeError, match="`count` is not an nn.Parameter"):
        net.get_parameter("head.count")


# --- modes, grads, apply --------------------------------------------------------------------------


def test_train_eval_reach_every_module_through_train():
    calls = []

    class Custom(Scale):
        def train(self, mode=True):
            calls.append(mode)
            return super().train(mode)

    net = Net()
    net.block.first = Custom()
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    assert calls == [False]  # a subclass's train() is called, as PyTorch's recursion does
    net.train()
    assert all(m.training for m in net.modules()) and calls == [False, True]
    with pytest.raises(ValueError, match="training mode is expected to be boolean"):
        net.train("yes")


def test_zero_grad():
    net = Net()
    net(gl.ones(3, dtype=gl.float64)).sum().backward()
    grads = {n: p.grad for n, p in net.named_parameters()}
    assert all(g is not None for g in grads.values())
    net.zero_grad(set_to_none=False)
    for n, p in net.named_parameters():
        assert p.grad is grads[n]  # the same tensor, zeroed in place
        assert_close(p.grad, np.zeros(3))
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_requires_grad_and_apply():
    net = Net()
    assert net.requires_grad_(False) is net
    assert not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    assert all(p.requires_grad for p in net.parameters())
    order = []
    assert net.apply(lambda m: order.append(type(m).__name__)) is net
    assert order == ["Scale", "Scale", "Block", "Scale", "Net"]  # children first, then the module

    def init(m):
        if isinstance(m, Scale):
            nn.init.constant_(m.w, 2.0)

    net.apply(init)
    assert all(np.all(p.detach().numpy() == 2.0) for n, p in net.named_parameters() if n.endswith("w"))


def test_to_dtype_keeps_parameter_and_grad_objects():
    net = Net()
    net.head.register_buffer("steps", gl.tensor([3]))  # an integer buffer is never cast
    net(gl.ones(3, dtype=gl.float64)).sum().backward()
    params = list(net.parameters())
    grads = [p.grad for p in params]
    assert net.float() is net
    assert all(p.dtype is gl.float32 for p in net.parameters())
    assert all(a is b for a, b in zip(params, net.parameters()))  # an optimizer's references stay valid
    assert all(p.grad is g and g.dtype is gl.float32 for p, g in zip(params, grads))
    assert all(p.requires_grad and p.is_leaf for p in params)
    assert net.head.count.dtype is gl.float32 and net.head.steps.dtype is gl.int64
    net.to(gl.float64)
    assert all(p.dtype is gl.float64 for p in net.parameters())
    net.to(gl.zeros(1, dtype=gl.float32))
    assert net.bias.dtype is gl.float32
    net.to("cpu", dtype=gl.float64).to(device="cpu").cpu()
    assert net.bias.dtype is gl.float64 and net.bias.device.type == "cpu"
    net.half()
    assert net.bias.dtype is gl.float16
    net.double()
    out = net(gl.ones(3, dtype=gl.float64))  # still works after the round trips
    assert out.dtype is gl.float64 and out.requires_grad


def test_to_rejects_integer_dtypes():
    with pytest.raises(TypeError, match="nn.Module.to only accepts floating point or complex dtypes, but got desired "
                                        "dtype=gradlab.int64"):
        Net().to(gl.int64)


def test_optimizer_style_update_survives_to():
    net = Scale()
    held = list(net.parameters())
    net.double()
    with gl.no_grad():
        held[0].sub_(1.0)  # what an optimizer built before .to() would do
    assert_close(net.w, [0.0, 1.0, 2.0])


# --- state dict -------------------------------------------------------------------------------------


def test_state_dict_contents():
    net = Net()
    sd = net.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == ["bias", "block.first.w", "block.first.count", "block.second.w", "block.second.count",
                        "head.w", "head.count"]  # non-persistent buffers are left out
    assert all(not v.requires_grad and v.grad_fn is None for v in sd.values())
    assert not isinstance(sd["bias"], nn.Parameter)
    sd["bias"].add_(1.0)  # detached, but the same memory (as PyTorch)
    assert_close(net.bias, [1.5, 0.5, 2.0])
    kept = net.state_dict(keep_vars=True)
    assert kept["bias"] is net.bias
    assert list(net.state_dict(prefix="model."))[0] == "model.bias"


@requires_torch
def test_state_dict_keys_match_torch():
    _, _, TNet = torch_classes()
    assert list(Net().state_dict()) == list(TNet().state_dict())


def test_load_state_dict_round_trip_and_cast():
    src, dst = Net(), Net()
    with gl.no_grad():
        for p in src.parameters():
            p.mul_(3.0)
    result = dst.load_state_dict(src.state_dict())
    assert result.missing_keys == [] and result.unexpected_keys == []
    assert repr(result) == "<All keys matched successfully>"
    for (n, a), (_, b) in zip(src.state_dict().items(), dst.state_dict().items()):
        assert_close(b, a.numpy())
    held = dst.bias
    dst.load_state_dict({k: v.float() for k, v in src.state_dict().items()})  # values are cast into the model's dtype
    assert dst.bias is held and dst.bias.dtype is gl.float64


def test_load_state_dict_from_numpy_style_torch_checkpoint_values():
    m = Scale()
    m.load_state_dict({"w": gl.tensor([7.0, 8.0, 9.0]), "count": gl.tensor(np.array([2.0]))})
    assert_close(m.w, [7.0, 8.0, 9.0]) and m.w.dtype is gl.float64
    m.count = gl.tensor(1.0, dtype=gl.float64)  # a 0-d buffer accepts a one-element checkpoint value
    m.load_state_dict({"w": gl.ones(3), "count": gl.tensor([5.0])})
    assert m.count.shape == () and m.count.item() == 5.0


def test_failed_load_leaves_model_unchanged():
    net = Net()
    before = params_snapshot(net)
    sd = {k: v.clone() + 100.0 for k, v in Net().state_dict().items()}
    sd["head.w"] = gl.zeros(4)  # one bad shape, found after good values were seen
    del sd["block.second.count"]
    sd["extra"] = gl.zeros(1)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    message = str(info.value)
    assert message == (
        "Error(s) in loading state_dict for Net:\n"
        '\tMissing key(s) in state_dict: "block.second.count". \n'
        '\tUnexpected key(s) in state_dict: "extra". \n'
        "\tsize mismatch for head.w: copying a param with shape (4,) from checkpoint, the shape in current model is (3,)."
    )
    after = params_snapshot(net)
    assert before.keys() == after.keys()
    for k in before:
        np.testing.assert_array_equal(after[k], before[k])
    with pytest.raises(RuntimeError, match="size mismatch for head.w"):
        net.load_state_dict(sd, strict=False)  # shape mismatches fail even when not strict
    for k, v in params_snapshot(net).items():
        np.testing.assert_array_equal(v, before[k])


def test_load_state_dict_not_strict_reports_keys():
    net = Net()
    sd = net.state_dict()
    sd = OrderedDict((k, v.clone()) for k, v in sd.items() if k != "bias")
    sd["block.extra"] = gl.zeros(1)
    sd["zz"] = gl.zeros(1)
    result = net.load_state_dict(sd, strict=False)
    assert result.missing_keys == ["bias"]
    assert result.unexpected_keys == ["zz", "block.extra"]  # module by module, as PyTorch finds them
    assert "missing_keys=['bias']" in repr(result)


def test_load_state_dict_bad_values():
    with pytest.raises(TypeError, match="Expected state_dict to be dict-like, got <class 'list'>"):
        Scale().load_state_dict([1, 2])
    with pytest.raises(RuntimeError, match=r'While copying the parameter named "w", expected gradlab.Tensor or '
                                           r"Tensor-like object from checkpoint but received <class 'list'>"):
        Scale().load_state_dict({"w": [1.0, 2.0, 3.0], "count": gl.zeros(1)})


def test_load_state_dict_assign():
    m = Scale()
    value = gl.tensor([4.0, 5.0, 6.0], dtype=gl.float64)
    count = gl.tensor([1.0], dtype=gl.float64)
    m.load_state_dict({"w": value, "count": count}, assign=True)
    assert isinstance(m.w, nn.Parameter) and m.w.requires_grad
    assert m.count is count
    value.add_(1.0)  # the module's parameter shares the assigned tensor's memory
    assert_close(m.w, [5.0, 6.0, 7.0])


@requires_torch
def test_load_state_dict_errors_match_torch():
    _, _, TNet = torch_classes()
    messages = []
    for model, make in ((Net(), gl.zeros), (TNet(), torch.zeros)):
        sd = OrderedDict(model.state_dict())
        del sd["block.first.w"], sd["head.count"]
        sd["block.first.q"] = make(1)
        sd["zz"] = make(1)
        sd["head.w"] = make(2, 2)
        sd["bias"] = make(5)
        with pytest.raises(RuntimeError) as info:
            model.load_state_dict(sd)
        messages.append(str(info.value).replace("torch.Size([2, 2])", "(2, 2)").replace("torch.Size([3])", "(3,)")
                        .replace("torch.Size([5])", "(5,)"))
        kept = model.load_state_dict(sd.copy() | {"head.w": make(3), "bias": make(3)}, strict=False)
        messages.append((kept.missing_keys, kept.unexpected_keys))
    assert messages[0] == messages[2]
    assert messages[1] == messages[3]


def test_copy_and_pickle():
    net = Net()
    clone = copy.deepcopy(net)
    assert clone.head.w is not net.head.w and isinstance(clone.head.w, nn.Parameter)
    assert_close(clone.head.w, net.head.w.detach().numpy())
    with gl.no_grad():
        clone.head.w.add_(1.0)
    assert not np.allclose(clone.head.w.detach().numpy(), net.head.w.detach().numpy())
    seq = nn.Sequential(nn.Sequential(), nn.ModuleList())  # module-level classes pickle
    seq.add_module("p", nn.ParameterList([gl.ones(2)]))
    loaded = pickle.loads(pickle.dumps(seq))
    assert [n for n, _ in loaded.named_parameters()] == ["p.0"]
    assert loaded.p[0].requires_grad and isinstance(loaded.p[0], nn.Parameter)
    assert_close(loaded.p[0], [1.0, 1.0])


# --- repr ------------------------------------------------------------------------------------------


@requires_torch
def test_repr_matches_torch():
    TScale, TBlock, TNet = torch_classes()
    assert repr(Net()) == repr(TNet())
    g, t = nn.Module(), torch.nn.Module()
    assert repr(g) == repr(t) == "Module()"
    for m, S in ((g, Scale), (t, TScale)):
        m.add_module("none", None)
        m.inner = nn.Module() if m is g else torch.nn.Module()
        m.inner.leaf = S(2)
    assert repr(g) == repr(t)

    def two_lines(base):
        class Two(base):
            def extra_repr(self):
                return "a=1\nb=2"
        return Two

    Two, TTwo = two_lines(nn.Module), two_lines(torch.nn.Module)
    assert repr(Two()) == repr(TTwo())
    two, ttwo = Two(), TTwo()
    two.s, ttwo.s = Scale(), TScale()
    assert repr(two) == repr(ttwo)


@requires_torch
def test_repr_of_layers_matches_torch():
    if not hasattr(nn, "Linear") or not hasattr(nn, "ReLU"):
        pytest.skip("gradlab.nn.Linear / ReLU are not written yet")
    assert repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU())) == repr(torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU()))


@requires_torch
def test_torch_checkpoint_loads_into_the_same_layers():
    if not hasattr(nn, "Linear") or not hasattr(nn, "ReLU"):
        pytest.skip("gradlab.nn.Linear / ReLU are not written yet")
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(), torch.nn.Linear(3, 2)).double()
    ours = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2)).double()
    assert list(ours.state_dict()) == list(theirs.state_dict())
    ours.load_state_dict({k: gl.tensor(v.numpy()) for k, v in theirs.state_dict().items()})
    x = randn(5, 4)
    assert_close(ours(gl.tensor(x)), theirs(torch.tensor(x)))


def test_repr_text():
    assert repr(Block()) == "Block(\n  (first): Scale(n=3)\n  (second): Scale(n=3)\n)"


# --- forward hooks ----------------------------------------------------------------------------------


def test_forward_pre_hook_and_forward_hook():
    m = Scale()
    seen = []
    h1 = m.register_forward_pre_hook(lambda mod, args: seen.append(("pre", mod, len(args))))
    h2 = m.register_forward_hook(lambda mod, args, out: seen.append(("post", args[0].shape, out.shape)))
    x = gl.ones(3, dtype=gl.float64)
    m(x)
    assert seen == [("pre", m, 1), ("post", (3,), (3,))]
    h1.remove()
    h2.remove()
    h2.remove()  # removing twice is harmless
    m(x)
    assert len(seen) == 2


def test_hooks_replace_args_and_output():
    m = Scale()
    x = gl.ones(3, dtype=gl.float64)
    with m.register_forward_pre_hook(lambda mod, args: args[0] * 2):  # a single value is wrapped in a tuple
        assert_close(m(x), [2.0, 4.0, 6.0])
    with m.register_forward_pre_hook(lambda mod, args: (args[0] * 3,)):
        assert_close(m(x), [3.0, 6.0, 9.0])
    with m.register_forward_hook(lambda mod, args, out: out + 1):
        assert_close(m(x), [2.0, 3.0, 4.0])
    assert not m._forward_hooks and not m._forward_pre_hooks  # the context manager removed them
    assert_close(m(x), [1.0, 2.0, 3.0])


def test_hook_order_prepend_and_kwargs():
    class Kw(nn.Module):
        def forward(self, x, scale=1.0):
            return x * scale

    m = Kw()
    order = []
    m.register_forward_hook(lambda mod, args, out: order.append("a"))
    m.register_forward_hook(lambda mod, args, out: order.append("b"), prepend=True)
    m.register_forward_pre_hook(lambda mod, args, kwargs: (args, {"scale": 10.0}), with_kwargs=True)
    h = m.register_forward_hook(lambda mod, args, kwargs, out: order.append(("kw", kwargs["scale"])) or out * 2,
                                with_kwargs=True)
    out = m(gl.ones(2), scale=3.0)
    assert order == ["b", "a", ("kw", 10.0)]
    assert_close(out, [20.0, 20.0])
    h.remove()
    assert h.id not in m._forward_hooks_with_kwargs
    m.register_forward_pre_hook(lambda mod, args, kwargs: 5, with_kwargs=True)
    with pytest.raises(RuntimeError, match=r"forward pre-hook must return None or a tuple of \(new_args, new_kwargs\)"):
        m(gl.ones(2))


# --- backward hooks ------------------------------------------------------------------------------------


def _recording(log):
    def hook(module, grad_input, grad_output):
        log.append((tuple(None if g is None else g.detach().numpy().copy() for g in grad_input),
                    tuple(None if g is None else g.detach().numpy().copy() for g in grad_output)))
    return hook


def _same_logs(a, b):
    assert len(a) == len(b)
    for (gi_a, go_a), (gi_b, go_b) in zip(a, b):
        for x, y in zip(gi_a + go_a, gi_b + go_b):
            assert (x is None) == (y is None)
            if x is not None:
                np.testing.assert_allclose(x, y, rtol=1e-12)
        assert len(gi_a) == len(gi_b) and len(go_a) == len(go_b)


def test_full_backward_hook_sees_gradients():
    m = Scale()
    log = []
    m.register_full_backward_hook(_recording(log))
    x = gl.tensor(randn(3), requires_grad=True)
    (m(x) * gl.tensor([1.0, 2.0, 3.0], dtype=gl.float64)).sum().backward()
    (grad_input,), (grad_output,) = log[0]
    np.testing.assert_allclose(grad_output, [1.0, 2.0, 3.0])
    np.testing.assert_allclose(grad_input, [1.0, 4.0, 9.0])  # d(x*w)/dx * grad_output
    assert_close(x.grad, [1.0, 4.0, 9.0])


def test_full_backward_hook_when_input_needs_no_grad():
    m = Scale()
    log = []
    m.register_full_backward_hook(_recording(log))
    m(gl.ones(3, dtype=gl.float64)).sum().backward()
    assert log[0][0] == (None,)
    np.testing.assert_allclose(log[0][1][0], np.ones(3))
    assert_close(m.w.grad, np.ones(3))


def test_backward_hooks_replace_gradients_and_remove():
    m = Scale()
    x = gl.tensor(randn(3), requires_grad=True)
    h = m.register_full_backward_hook(lambda mod, gi, go: (gi[0] * 10,))
    m(x).sum().backward()
    assert_close(x.grad, 10 * m.w.detach().numpy())
    h.remove()
    pre = m.register_full_backward_pre_hook(lambda mod, go: (go[0] * 3,))
    x.grad = None
    m.w.grad = None
    m(x).sum().backward()
    assert_close(x.grad, 3 * m.w.detach().numpy())
    assert_close(m.w.grad, 3 * x.detach().numpy())  # the pre-hook's grad_output feeds the whole backward
    pre.remove()
    x.grad = None
    m(x).sum().backward()
    assert_close(x.grad, m.w.detach().numpy())


def test_backward_hook_wrong_counts():
    m = Scale()
    x = gl.tensor(randn(3), requires_grad=True)
    h = m.register_full_backward_hook(lambda mod, gi, go: (gi[0], gi[0]))
    with pytest.raises(RuntimeError, match="Backward hook returned an invalid number of grad_input, got 2, but expected 1"):
        m(x).sum().backward()
    h.remove()
    m.register_full_backward_pre_hook(lambda mod, go: ())
    with pytest.raises(RuntimeError, match="Backward pre hook returned an invalid number of grad_output, got 0, but "
                                           "expected 1"):
        m(x).sum().backward()
    m2 = Scale()
    m2.register_full_backward_hook(lambda mod, gi, go: (gl.ones(3),))
    with pytest.raises(RuntimeError, match="Backward hook for Modules where no input requires gradient should always"):
        m2(gl.ones(3, dtype=gl.float64)).sum().backward()


def test_gradcheck_through_a_hooked_module():
    m = Scale()
    m.register_full_backward_hook(lambda mod, gi, go: None)
    m.register_full_backward_pre_hook(lambda mod, go: None)
    x = gl.tensor(randn(3), requires_grad=True)
    assert gl.autograd.gradcheck(lambda x, w: x * w * m(x), (x, m.w))


def test_backward_hooks_captured_at_call_time_and_higher_order():
    m = Scale()
    log = []
    x = gl.tensor(randn(3), requires_grad=True)
    y = m(x)
    m.register_full_backward_hook(_recording(log))  # registered after the call: not part of this graph
    y.sum().backward()
    assert log == []
    y = m(x)
    (g,) = gl.autograd.grad(y.pow(2).sum(), x, create_graph=True)  # hooks do not break double backward
    assert len(log) == 1
    g.sum().backward()
    assert_close(x.grad, m.w.detach().numpy() + 2 * m.w.detach().numpy() ** 2)


def _run_backward_hook_cases(lib, nn_):
    """A module with a non-tensor argument, two tensor inputs, a parameter and a tuple output holding a string."""

    class TwoInOut(nn_.Module):
        def __init__(self):
            super().__init__()
            self.s = nn_.Parameter(lib.tensor(randn(2, seed=3)))

        def forward(self, a, k, b):
            return a * b * k * self.s, b * 3 * self.s, "tag"

    logs = {}
    for case in ("both", "b_no_grad", "second_output_unused", "none_need_grad"):
        m = TwoInOut()
        log = []
        m.register_full_backward_hook(_recording(log))
        m.register_full_backward_pre_hook(lambda mod, go, log=log: log.append(("pre", len(go), [g is None for g in go])))
        a = lib.tensor(randn(2, seed=1), requires_grad=case != "none_need_grad")
        b = lib.tensor(randn(2, seed=2), requires_grad=case in ("both", "second_output_unused"))
        out = m(a, 2.0, b)
        if case == "second_output_unused":
            out[0].sum().backward()
        else:
            (out[0].sum() + out[1].sum() * 5).backward()
        logs[case] = log
    return logs


@requires_torch
def test_backward_hooks_match_torch_for_mixed_arguments():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = _run_backward_hook_cases(gl, nn), _run_backward_hook_cases(torch, torch.nn)
    for case in ours:
        pre_a = [e for e in ours[case] if e[0] == "pre"]
        pre_b = [e for e in theirs[case] if e[0] == "pre"]
        assert pre_a == pre_b, case
        _same_logs([e for e in ours[case] if e[0] != "pre"], [e for e in theirs[case] if e[0] != "pre"])


@requires_torch
@pytest.mark.filterwarnings("ignore:Full backward hook is firing")
def test_backward_hook_values_match_torch():
    TScale, _, _ = torch_classes()
    logs = []
    for lib, S in ((gl, Scale), (torch, TScale)):
        m = S()
        log = []
        m.register_full_backward_hook(_recording(log))
        x = lib.tensor(randn(4, 3), requires_grad=True)
        (m(x) * lib.tensor(randn(4, 3, seed=5))).sum().backward()
        m(lib.tensor(randn(3))).sum().backward()  # input without grad: grad_input is (None,)
        logs.append(log)
    _same_logs(*logs)
