"""gl.compile.make_step: a compiled training step computes what the eager step does.

Two identical float64 models, one trained eagerly (``opt.zero_grad(); loss_fn(model(x), y).backward();
opt.step()``), one through ``make_step``: after every step the loss, every ``.grad`` and every parameter
agree to 1e-10. Then the cache, the fallback to eager (with one warning that says why), segments, and
``gl.compile`` for forward only.
"""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest
from helpers import randn

import gradlab as gl

nn = gl.nn
F = nn.functional
TOL = dict(rtol=1e-10, atol=1e-10)


def tensor(*shape, seed=0):
    return gl.tensor(randn(*shape, seed=seed))


def labels(n, classes, seed=0):
    return gl.tensor(np.random.default_rng(seed).integers(0, classes, n))


# --- the models: tiny, float64 -------------------------------------------------------------------------


class LastStep(nn.Module):
    """An LSTM over the sequence, then a Linear on its last step."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 5, batch_first=True)
        self.fc = nn.Linear(5, 2)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


def mlp():
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 3, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(3 * 4 * 4, 4))


def transformer():
    return nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True, norm_first=True)


# name: (builder, batch maker(seed) -> (x, y), loss_fn)
MODELS = {
    "mlp": (mlp, lambda s: (tensor(8, 6, seed=s), labels(8, 4, seed=s)), F.cross_entropy),
    "cnn": (cnn, lambda s: (tensor(4, 1, 8, 8, seed=s), labels(4, 4, seed=s)), F.cross_entropy),
    "lstm": (LastStep, lambda s: (tensor(3, 4, 3, seed=s), tensor(3, 2, seed=100 + s)), F.mse_loss),
    "transformer": (transformer, lambda s: (tensor(2, 3, 16, seed=s), tensor(2, 3, 16, seed=100 + s)), F.mse_loss),
}

OPTIMIZERS = {
    "sgd": lambda params: gl.optim.SGD(params, lr=0.05),
    "sgd-momentum": lambda params: gl.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3),
    "adamw": lambda params: gl.optim.AdamW(params, lr=0.01, weight_decay=0.01),
}


def build(name):
    gl.manual_seed(0)
    make, batch, loss_fn = MODELS[name]
    return make().double(), batch, loss_fn


def values(t):
    return t.detach().numpy()


def assert_same_grads(compiled, eager):
    for (name, p), q in zip(compiled.named_parameters(), eager.parameters()):
        assert (p.grad is None) == (q.grad is None), name
        if q.grad is not None:
            np.testing.assert_allclose(values(p.grad), values(q.grad), **TOL, err_msg=f".grad of {name}")


def assert_same_parameters(compiled, eager):
    for (name, p), q in zip(compiled.named_parameters(), eager.parameters()):
        np.testing.assert_allclose(values(p), values(q), **TOL, err_msg=name)


# --- training: compiled equals eager, step by step ---------------------------------------------------------


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize("model_name", list(MODELS))
def test_twenty_compiled_steps_follow_the_eager_trajectory(model_name, optimizer):
    eager, batch, loss_fn = build(model_name)
    compiled = copy.deepcopy(eager)
    opt = OPTIMIZERS[optimizer](eager.parameters())
    opt2 = OPTIMIZERS[optimizer](compiled.parameters())
    step = gl.compile.make_step(compiled, loss_fn, optimizer=opt2)
    for i in range(20):
        x, y = batch(i)  # a fresh batch each step, of the same shape: one trace serves all 20
        opt.zero_grad()
        loss = loss_fn(eager(x), y)
        loss.backward()
        opt.step()
        got = step(x, y)
        assert got.grad_fn is None
        np.testing.assert_allclose(values(got), values(loss), **TOL, err_msg=f"loss at step {i}")
        assert_same_grads(compiled, eager)
        assert_same_parameters(compiled, eager)
    assert step.traces == 1
    assert step.fallback is None
    assert_same_optimizer_state(opt2, opt)


def assert_same_optimizer_state(compiled, eager):
    """Momentum buffers, Adam's moments and step counts: the optimizer's own trajectory."""
    ours, theirs = compiled.state_dict()["state"], eager.state_dict()["state"]
    assert ours.keys() == theirs.keys()
    for index, state in theirs.items():
        assert ours[index].keys() == state.keys(), index
        for key, value in state.items():
            got = ours[index][key]
            np.testing.assert_allclose(np.asarray(values(got) if isinstance(got, gl.Tensor) else got),
                                       np.asarray(values(value) if isinstance(value, gl.Tensor) else value),
                                       **TOL, err_msg=f"optimizer state {index}.{key}")


def test_without_an_optimizer_the_step_fills_grad_as_backward_would_and_accumulates():
    eager, batch, loss_fn = build("mlp")
    compiled = copy.deepcopy(eager)
    step = gl.compile.make_step(compiled, loss_fn)
    (x, y), (x2, y2) = batch(0), batch(1)
    loss = loss_fn(eager(x), y)
    loss.backward()
    got = step(x, y)
    np.testing.assert_allclose(values(got), values(loss), **TOL)
    assert_same_grads(compiled, eager)
    assert_same_parameters(compiled, eager)  # no optimizer: nothing moved
    # a second call adds to .grad, as a second backward does
    loss_fn(eager(x2), y2).backward()
    step(x2, y2)
    assert_same_grads(compiled, eager)
    # and after zero_grad it starts again from nothing
    eager.zero_grad()
    compiled.zero_grad()
    loss_fn(eager(x2), y2).backward()
    step(x2, y2)
    assert_same_grads(compiled, eager)


def test_the_loss_may_be_any_function_of_the_output():
    eager, batch, _ = build("transformer")
    compiled = copy.deepcopy(eager)
    x, _ = batch(0)
    weight = tensor(*x.shape, seed=5)

    def loss_fn(out, y):
        return (out * y).sum()

    step = gl.compile.make_step(compiled, loss_fn)
    for _ in range(2):  # traced, then run as a program: both add to .grad
        loss_fn(eager(x), weight).backward()
        step(x, weight)
        assert_same_grads(compiled, eager)


class InPlace(nn.Module):
    """In-place ops on values made inside forward: h.mul_, h += 1, relu_."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)
        self.fc2 = nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x)
        h.mul_(2.0)
        h += 1.0
        return self.fc2(h.relu_())


class Counter(nn.Module):
    """A buffer that forward changes in place on every call (as BatchNorm's num_batches_tracked)."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)
        self.register_buffer("calls", gl.zeros(()))

    def forward(self, x):
        self.calls.add_(1.0)
        return self.fc(x) * self.calls


def batch_norm_mlp():
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 4))


def train_side_by_side(make, steps=4):
    """SGD with momentum, eager and compiled (or fallen back: then eagerly); same numbers after each step."""
    gl.manual_seed(0)
    eager = make().double()
    compiled = copy.deepcopy(eager)
    opt = gl.optim.SGD(eager.parameters(), lr=0.05, momentum=0.9)
    step = gl.compile.make_step(compiled, F.cross_entropy, optimizer=gl.optim.SGD(compiled.parameters(), lr=0.05,
                                                                                  momentum=0.9))
    for i in range(steps):
        x, y = tensor(8, 6, seed=i), labels(8, 4, seed=i)
        opt.zero_grad()
        loss = F.cross_entropy(eager(x), y)
        loss.backward()
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gl.compile.CompileWarning)  # compiling it, or falling back, are both right
            got = step(x, y)
        np.testing.assert_allclose(values(got), values(loss), **TOL, err_msg=f"loss at step {i}")
        assert_same_grads(compiled, eager)
        assert_same_parameters(compiled, eager)
        for (name, b), c in zip(compiled.named_buffers(), eager.buffers()):
            np.testing.assert_allclose(values(b), values(c), **TOL, err_msg=f"buffer {name} at step {i}")
    return step


def test_in_place_ops_on_intermediate_values_follow_eager():
    train_side_by_side(InPlace)


def test_a_buffer_changed_in_place_inside_forward_follows_eager():
    train_side_by_side(Counter)


def test_batch_norm_in_training_follows_eager_with_its_buffers():
    train_side_by_side(batch_norm_mlp)


def test_switching_to_eval_mode_is_a_new_program():
    # BatchNorm normalises by the batch's statistics in training and by the running ones in evaluation
    gl.manual_seed(0)
    eager = batch_norm_mlp().double()
    compiled = copy.deepcopy(eager)
    opt = gl.optim.SGD(eager.parameters(), lr=0.05)
    step = gl.compile.make_step(compiled, F.cross_entropy, optimizer=gl.optim.SGD(compiled.parameters(), lr=0.05))
    for i in range(4):
        if i == 2:
            eager.eval()
            compiled.eval()
        x, y = tensor(8, 6, seed=i), labels(8, 4, seed=i)
        opt.zero_grad()
        loss = F.cross_entropy(eager(x), y)
        loss.backward()
        opt.step()
        np.testing.assert_allclose(values(step(x, y)), values(loss), **TOL, err_msg=f"loss at step {i}")
        assert_same_parameters(compiled, eager)
    assert step.traces == 2


def test_dropout_in_training_draws_what_eager_draws():
    gl.manual_seed(0)
    eager = nn.Sequential(nn.Linear(6, 8), nn.Dropout(0.5), nn.ReLU(), nn.Linear(8, 4)).double()
    compiled = copy.deepcopy(eager)
    opt = gl.optim.SGD(eager.parameters(), lr=0.05)
    step = gl.compile.make_step(compiled, F.cross_entropy, optimizer=gl.optim.SGD(compiled.parameters(), lr=0.05))
    for i in range(4):
        x, y = tensor(8, 6, seed=i), labels(8, 4, seed=i)
        gl.manual_seed(100 + i)
        opt.zero_grad()
        loss = F.cross_entropy(eager(x), y)
        loss.backward()
        opt.step()
        gl.manual_seed(100 + i)  # the same random stream: compiled (or fallen back) draws the same mask
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", gl.compile.CompileWarning)
            got = step(x, y)
        np.testing.assert_allclose(values(got), values(loss), **TOL, err_msg=f"loss at step {i}")
        assert_same_parameters(compiled, eager)


class Tied(nn.Module):
    """One Linear applied twice, and a parameter added many times: gradients from every use are summed."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 6)
        self.b = nn.Linear(6, 4)
        self.shift = nn.Parameter(gl.zeros(6))

    def forward(self, x):
        h = self.a(self.a(x)).tanh()
        for _ in range(5):
            h = h + self.shift
        return self.b(h)


def test_a_parameter_used_many_times_gets_every_use_s_gradient():
    train_side_by_side(Tied)


class Frozen(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = mlp()
        self.body[0].weight.requires_grad_(False)

    def forward(self, x):
        return self.body(x)


def test_a_frozen_parameter_keeps_no_grad_and_does_not_move():
    step = train_side_by_side(Frozen)
    first = step.model.body[0].weight
    assert first.grad is None
    gl.manual_seed(0)
    np.testing.assert_array_equal(values(first), values(Frozen().double().body[0].weight))


# --- the cache: one trace per input signature ------------------------------------------------------------


def test_a_second_call_hits_the_cache_and_a_new_batch_size_traces_again():
    model, _, loss_fn = build("mlp")
    step = gl.compile.make_step(model, loss_fn, optimizer=gl.optim.SGD(model.parameters(), lr=0.01))
    step(tensor(8, 6), labels(8, 4))
    assert step.traces == 1
    step(tensor(8, 6, seed=1), labels(8, 4, seed=1))
    assert step.traces == 1 and len(step.cache) == 1
    step(tensor(5, 6, seed=2), labels(5, 4, seed=2))
    assert step.traces == 2 and len(step.cache) == 2
    step(tensor(8, 6, seed=3), labels(8, 4, seed=3))  # the first signature is still there
    step(tensor(5, 6, seed=4), labels(5, 4, seed=4))
    assert step.traces == 2 and len(step.cache) == 2


def test_a_new_batch_size_still_follows_eager():
    eager, _, loss_fn = build("cnn")
    compiled = copy.deepcopy(eager)
    opt, opt2 = gl.optim.SGD(eager.parameters(), lr=0.05), gl.optim.SGD(compiled.parameters(), lr=0.05)
    step = gl.compile.make_step(compiled, loss_fn, optimizer=opt2)
    for i, n in enumerate([4, 4, 2, 4, 2]):
        x, y = tensor(n, 1, 8, 8, seed=i), labels(n, 4, seed=i)
        opt.zero_grad()
        loss_fn(eager(x), y).backward()
        opt.step()
        step(x, y)
        assert_same_grads(compiled, eager)
        assert_same_parameters(compiled, eager)
    assert step.traces == 2


# --- what cannot be compiled runs eagerly, with one warning that says why ----------------------------------


class ScaledByItem(nn.Module):
    """Reads a number out of a tensor in the middle of forward: the tape cannot repeat what Python does with it."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        scale = x.abs().max().item()
        return self.fc(x) / scale


class Branches(nn.Module):
    """Data-dependent control flow: which branch runs depends on the values of x."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        if x.sum() > 0:
            return self.fc(x).relu()
        return self.fc(x).tanh()


class MaskedSelect(nn.Module):
    """Boolean-mask indexing: the output's shape depends on the values, not on the input's shape."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        h = self.fc(x)
        return h[h > 0]


def compile_warnings(caught):
    return [w for w in caught if issubclass(w.category, gl.compile.CompileWarning)]


def run_both(model_class, batches, loss_fn, reason):
    """Train eagerly and through make_step; exactly one CompileWarning (matching reason), same numbers."""
    gl.manual_seed(0)
    eager = model_class().double()
    compiled = copy.deepcopy(eager)
    opt, opt2 = gl.optim.SGD(eager.parameters(), lr=0.05), gl.optim.SGD(compiled.parameters(), lr=0.05)
    step = gl.compile.make_step(compiled, loss_fn, optimizer=opt2)
    seen = []
    for i, (x, y) in enumerate(batches):
        opt.zero_grad()
        loss = loss_fn(eager(x), y)
        loss.backward()
        opt.step()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")  # a warning repeated by the code (not hidden by Python's filter) shows
            got = step(x, y)
        seen.append(compile_warnings(caught))
        np.testing.assert_allclose(values(got), values(loss), **TOL, err_msg=f"loss at step {i}")
        assert_same_grads(compiled, eager)
        assert_same_parameters(compiled, eager)
    every = [w for ws in seen for w in ws]
    assert len(every) == 1, [str(w.message) for w in every]
    assert issubclass(gl.compile.CompileWarning, UserWarning)
    message = str(every[0].message)
    assert any(word in message for word in reason), message
    assert step.fallback is not None and any(word in step.fallback for word in reason), step.fallback
    return seen


def test_item_inside_forward_falls_back_to_eager_with_one_warning():
    batches = [(tensor(8, 6, seed=i), labels(8, 4, seed=i)) for i in range(4)]
    seen = run_both(ScaledByItem, batches, F.cross_entropy, reason=("item",))
    assert len(seen[0]) == 1  # said at once, on the call that found it
    assert all(not ws for ws in seen[1:])


def test_data_dependent_control_flow_falls_back_to_eager_with_one_warning():
    # the sign of x.sum() changes from batch to batch, so both branches run
    batches = [(tensor(8, 6, seed=i) * (1 if i % 2 else -1) + (0.5 if i % 2 else -0.5), labels(8, 4, seed=i))
               for i in range(4)]
    assert len({bool(x.sum() > 0) for x, _ in batches}) == 2
    seen = run_both(Branches, batches, F.cross_entropy, reason=("bool", "control flow", "data-dependent"))
    assert len(seen[0]) == 1
    assert all(not ws for ws in seen[1:])


def test_indexing_with_a_boolean_mask_falls_back_to_eager_with_one_warning():
    batches = [(tensor(8, 6, seed=i), gl.tensor(1.5, dtype=gl.float64)) for i in range(4)]
    gl.manual_seed(0)
    probe = MaskedSelect().double()
    with gl.no_grad():
        sizes = [probe(x).shape[0] for x, _ in batches]
    assert len(set(sizes)) > 1, sizes  # precondition: the mask keeps a different count each batch
    run_both(MaskedSelect, batches, lambda out, y: (out * out).sum() * y, reason=("index", "mask", "shape"))


class Positive(gl.autograd.Function):
    """The positive entries of x, flattened: a user's op whose output shape depends on the values."""

    @staticmethod
    def forward(ctx, x):
        mask = x > 0
        ctx.save_for_backward(mask)
        ctx.shape = tuple(x.shape)
        return x[mask]

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        full = grad.new_zeros(ctx.shape)
        full[mask] = grad
        return full


class PositivePart(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x):
        return Positive.apply(self.fc(x))


def test_an_op_whose_output_shape_changes_between_calls_falls_back_to_eager_with_one_warning():
    batches = [(tensor(8, 6, seed=i), gl.tensor(1.5, dtype=gl.float64)) for i in range(4)]
    gl.manual_seed(0)
    probe = PositivePart().double()
    with gl.no_grad():
        sizes = [probe(x).shape[0] for x, _ in batches]
    assert sizes[0] != sizes[1], sizes  # precondition: the second call sees another shape
    seen = run_both(PositivePart, batches, lambda out, y: (out * out).sum() * y, reason=("shape",))
    assert not seen[0] and len(seen[1]) == 1  # the first call traced fine; the second found the change


# --- segments ----------------------------------------------------------------------------------------------


def six_layers():
    gl.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 12), nn.ReLU(), nn.Linear(12, 12), nn.Tanh(), nn.Linear(12, 4),
                         nn.Sigmoid()).double()


@pytest.mark.parametrize("segments", [1, 2, 3])
def test_segments_give_the_same_gradients_as_eager(segments):
    compiled = six_layers()
    eager = copy.deepcopy(compiled)
    step = gl.compile.make_step(compiled, F.mse_loss, segments=segments)
    for i in range(3):  # the first call traces (eagerly): the later ones run the program
        x, y = tensor(8, 6, seed=i), tensor(8, 4, seed=50 + i)
        compiled.zero_grad()
        eager.zero_grad()
        loss = F.mse_loss(eager(x), y)
        loss.backward()
        np.testing.assert_allclose(values(step(x, y)), values(loss), **TOL)
        assert_same_grads(compiled, eager)


def test_sigmoid_after_a_linear_as_the_output_gets_eager_s_gradients():
    gl.manual_seed(0)
    compiled = nn.Sequential(nn.Linear(6, 4), nn.Sigmoid()).double()
    eager = copy.deepcopy(compiled)
    step = gl.compile.make_step(compiled, lambda out, y: (out * y).sum())
    for i in range(3):
        x, y = tensor(8, 6, seed=i), tensor(8, 4, seed=50 + i)
        compiled.zero_grad()
        eager.zero_grad()
        (eager(x) * y).sum().backward()
        step(x, y)
        assert_same_grads(compiled, eager)


def test_segments_with_an_optimizer_follow_the_eager_trajectory():
    eager = six_layers()
    compiled = copy.deepcopy(eager)
    opt = gl.optim.SGD(eager.parameters(), lr=0.1, momentum=0.9)
    step = gl.compile.make_step(compiled, F.mse_loss, optimizer=gl.optim.SGD(compiled.parameters(), lr=0.1, momentum=0.9),
                                segments=2)
    for i in range(5):
        x, y = tensor(8, 6, seed=i), tensor(8, 4, seed=50 + i)
        opt.zero_grad()
        F.mse_loss(eager(x), y).backward()
        opt.step()
        step(x, y)
        assert_same_parameters(compiled, eager)


def test_automatic_segments_choose_a_count_and_keep_the_gradients():
    model = six_layers()
    eager = copy.deepcopy(model)
    step = gl.compile.make_step(model, F.mse_loss, segments="auto")
    for i in range(4):
        x, y = tensor(8, 6, seed=i), tensor(8, 4, seed=50 + i)
        model.zero_grad()
        eager.zero_grad()
        step(x, y)
        F.mse_loss(eager(x), y).backward()
        assert_same_grads(model, eager)
    assert isinstance(step.segments, int) and 1 <= step.segments <= len(model)


def test_segments_on_a_model_that_is_not_a_sequential_is_an_error():
    gl.manual_seed(0)
    model = LastStep().double()
    with pytest.raises(ValueError, match="Sequential"):
        step = gl.compile.make_step(model, F.mse_loss, segments=2)
        step(tensor(3, 4, 3), tensor(3, 2))


@pytest.mark.parametrize("segments", [0, -1, 2.0, "fast", 7])
def test_a_segment_count_that_makes_no_sense_is_an_error(segments):
    with pytest.raises(ValueError, match="segments"):  # 7: more pieces than the Sequential has layers
        step = gl.compile.make_step(six_layers(), F.mse_loss, segments=segments)
        step(tensor(8, 6), tensor(8, 4, seed=1))


def test_segments_of_a_cnn_with_adamw_follow_eager_and_trace_again_on_a_new_shape():
    eager, batch, loss_fn = build("cnn")
    compiled = copy.deepcopy(eager)
    opt = gl.optim.AdamW(eager.parameters(), lr=0.01)
    step = gl.compile.make_step(compiled, loss_fn, optimizer=gl.optim.AdamW(compiled.parameters(), lr=0.01), segments=3)
    for i, n in enumerate([4, 4, 2]):
        x, y = tensor(n, 1, 8, 8, seed=i), labels(n, 4, seed=i)
        opt.zero_grad()
        loss_fn(eager(x), y).backward()
        opt.step()
        step(x, y)
        assert_same_grads(compiled, eager)
        assert_same_parameters(compiled, eager)
    assert step.traces == 2


def test_memory_reports_the_peak_of_the_planned_buffers():
    for segments in (1, 2):
        model = six_layers()
        step = gl.compile.make_step(model, F.mse_loss, segments=segments)
        step(tensor(8, 6), tensor(8, 4, seed=1))
        peak = step.memory()["peak_bytes"]
        assert isinstance(peak, int) and peak > 0


# --- gl.compile: forward only --------------------------------------------------------------------------------


def test_compile_of_a_module_runs_its_forward_without_a_graph():
    model, batch, _ = build("cnn")
    fast = gl.compile(model)
    for i in range(3):
        x, _ = batch(i)
        out = fast(x)
        assert out.grad_fn is None and not out.requires_grad
        np.testing.assert_allclose(values(out), values(model(x)), **TOL)
    assert fast.traces == 1
    fast(tensor(2, 1, 8, 8))
    assert fast.traces == 2
    assert all(p.grad is None for p in model.parameters())


def test_compile_of_a_function_reads_the_parameters_as_they_are_now():
    model, batch, _ = build("mlp")
    fast = gl.compile(lambda x: model(x).softmax(-1))
    x, _ = batch(0)
    fast(x)
    with gl.no_grad():
        for p in model.parameters():
            p.mul_(0.5)
    np.testing.assert_allclose(values(fast(x)), values(model(x).softmax(-1)), **TOL)
