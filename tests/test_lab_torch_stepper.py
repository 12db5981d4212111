"""The stepper on PyTorch: ``gl.lab.BackpropStepper(torch_loss)`` runs PyTorch's own nodes one at a time.

After the last step every leaf's ``.grad`` is ``loss.backward()``'s bit for bit (``torch.equal``, on
CPU); the steps come in the order PyTorch's engine runs the nodes (read here from hooks on every node
during a real backward); stepping back and reset restore the gradients exactly; the graph is never
freed. The expected values come from PyTorch itself, never from the stepper.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
import gradlab as gl  # noqa: E402
from gradlab.lab.capture import CaptureError  # noqa: E402
from gradlab.lab.stepping import BackwardStepError, Stepping  # noqa: E402
from gradlab.lab.pytorch.graph import reachable  # noqa: E402

nn = torch.nn


# --- models -------------------------------------------------------------------------------------------

def mlp_loss():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    x, y = torch.randn(16, 3), torch.randint(0, 2, (16,))
    return model, nn.functional.cross_entropy(model(x), y)


def cnn_loss():
    torch.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(4, 6, 3), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 2 * 2, 3))
    x, y = torch.randn(5, 1, 8, 8), torch.randint(0, 3, (5,))
    return model, nn.functional.cross_entropy(model(x), y)


class Block(nn.Module):
    """A pre-norm transformer block: causal self-attention and an MLP, each around a residual."""

    def __init__(self, width=16, heads=2):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attention = nn.MultiheadAttention(width, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))

    def forward(self, x):
        h = self.norm1(x)
        mask = torch.triu(torch.ones(x.shape[1], x.shape[1], dtype=torch.bool), diagonal=1)
        x = x + self.attention(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


def transformer_loss():
    torch.manual_seed(2)
    model = Block()
    x = torch.randn(3, 5, 16)
    return model, model(x).pow(2).mean()


def shared_weight_loss():
    """One weight used three times (fan-out): its three gradients are summed in PyTorch's order."""
    torch.manual_seed(3)
    w = nn.Parameter(torch.randn(4, 4))
    x = torch.randn(6, 4)
    h = torch.tanh(x @ w)
    h = torch.tanh(h @ w) + h @ w.t()
    return {"w": w}, h.sum() / 7


class Cube(torch.autograd.Function):
    """k·x³ with a non-tensor argument k and a tensor s that needs no gradient: backward returns one
    gradient per forward input, None for k."""

    @staticmethod
    def forward(ctx, x, k, s):
        ctx.save_for_backward(x)
        ctx.k = k
        return k * x ** 3 + s

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 3 * ctx.k * x * x * g, None, g


def custom_function_loss():
    torch.manual_seed(4)
    lin = nn.Linear(3, 3)
    out = Cube.apply(lin(torch.randn(4, 3)), 0.5, torch.randn(4, 3))
    return lin, out.tanh().sum()


MODELS = {"mlp": mlp_loss, "cnn": cnn_loss, "transformer": transformer_loss, "shared": shared_weight_loss,
          "custom": custom_function_loss}


def params_of(model):
    return list(model.values()) if isinstance(model, dict) else list(model.parameters())


def pytorch_grads(model, loss):
    """What loss.backward() leaves in each .grad, from fresh .grads (the graph is kept for the stepper)."""
    saved = [p.grad for p in params_of(model)]
    for p in params_of(model):
        p.grad = None
    loss.backward(retain_graph=True)
    grads = [p.grad.clone() for p in params_of(model)]
    for p, g in zip(params_of(model), saved):
        p.grad = g
    return grads


def pytorch_order(loss) -> list:
    """The nodes in the order PyTorch's engine ran them, seen by a pre-hook on every node."""
    order, handles = [], []
    for node in reachable(loss.grad_fn):
        handles.append(node.register_prehook(lambda grads, node=node: order.append(node)))
    saved = {}
    for node in reachable(loss.grad_fn):
        if type(node).__name__ == "AccumulateGrad":
            saved[node.variable] = node.variable.grad
    loss.backward(retain_graph=True)
    for leaf, grad in saved.items():
        leaf.grad = grad
    for handle in handles:
        handle.remove()
    return order


# --- the whole backward -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(MODELS))
def test_after_the_last_step_every_grad_is_pytorchs_bit_for_bit(name):
    model, loss = MODELS[name]()
    expected = pytorch_grads(model, loss)
    stepping = Stepping(loss)
    while stepping.step() is not None:
        pass
    assert stepping.finished and len(stepping.steps) == stepping.total == len(reachable(loss.grad_fn))
    for p, want in zip(params_of(model), expected):
        assert torch.equal(p.grad, want), name


@pytest.mark.parametrize("name", list(MODELS))
def test_the_steps_come_in_the_order_pytorchs_engine_runs_the_nodes(name):
    model, loss = MODELS[name]()
    expected = pytorch_order(loss)
    stepping = Stepping(loss)
    while stepping.step() is not None:
        pass
    assert [id(n) for n in stepping._ran] == [id(n) for n in expected]


def test_ties_between_ready_leaves_break_as_in_pytorchs_queue():
    """Five leaves whose AccumulateGrads become ready together (same sequence number): libstdc++'s heap, not
    first-in first-out, decides their order."""
    leaves = [torch.randn(3, requires_grad=True) for _ in range(5)]
    loss = torch.stack(leaves).sum()
    names = {id(leaf): i for i, leaf in enumerate(leaves)}
    pytorch = [names[id(n.variable)] for n in pytorch_order(loss) if type(n).__name__ == "AccumulateGrad"]
    stepping = Stepping(loss)
    while stepping.step() is not None:
        pass
    mine = [names[id(n.variable)] for n in stepping._ran if type(n).__name__ == "AccumulateGrad"]
    assert mine == pytorch
    assert pytorch != sorted(pytorch) and pytorch != sorted(pytorch, reverse=True)  # (a tie FIFO would get wrong)


def test_a_step_shows_the_gradient_summed_to_the_broadcast_input():
    b = torch.randn(3, requires_grad=True)
    x = torch.randn(4, 3, requires_grad=True)
    loss = (x + b).pow(2).sum()
    stepper = gl.lab.BackpropStepper(loss, names={"b": b, "x": x})
    stepper.run_to_end()
    add = next(step for step in stepper.steps if step["op"] == "AddBackward0")
    to_b = next(row for row in add["sent"] if row["to_label"] == "b")
    assert to_b["grad"]["shape"] == [3]
    assert "summed over dim 0" in to_b["summed"]
    assert torch.equal(b.grad, 2 * (x + b).detach().sum(0))


def test_the_panel_names_pytorchs_node_and_what_reached_it():
    model, loss = mlp_loss()
    stepper = gl.lab.BackpropStepper(loss, names=model)
    stepper.step()
    panel = stepper.panel
    assert panel["op"] == loss.grad_fn.name() and panel["title"].startswith(f"step 1 of {stepper.total_steps}")
    assert panel["grads_in"][0]["values"] == [1.0]
    stepper.run_to(stepper.graph.by_ref[id(model[0].weight)])
    assert stepper.current.label == "0.weight"
    assert torch.equal(model[0].weight.grad, pytorch_grads(model, loss)[0])


# --- going back ---------------------------------------------------------------------------------------

def test_step_back_restores_every_grad_exactly_across_checkpoints():
    model, loss = transformer_loss()
    stepping = Stepping(loss)
    stepping.spacing = 3  # checkpoints every 3 steps: step_back resumes from one
    after = []
    while stepping.step() is not None:
        after.append([None if p.grad is None else p.grad.clone() for p in params_of(model)])
    assert stepping._checkpoints
    stepping.step_back()  # from "finished" back to just after the last step
    assert len(stepping.steps) == len(after) and not stepping.finished
    for count in range(len(after) - 1, 0, -1):
        stepping.step_back()
        assert len(stepping.steps) == count
        for p, want in zip(params_of(model), after[count - 1]):
            assert (p.grad is None and want is None) or torch.equal(p.grad, want)
    stepping.go_to(len(after))
    for p, want in zip(params_of(model), pytorch_grads(model, loss)):
        assert torch.equal(p.grad, want)


def test_reset_leaves_every_grad_as_it_was_before_the_stepper():
    model, loss = mlp_loss()
    for p in params_of(model):
        p.grad = torch.full_like(p, 0.25)
    before = [p.grad.clone() for p in params_of(model)]
    stepping = Stepping(loss)
    for _ in range(7):
        stepping.step()
    stepping.reset()
    assert all(torch.equal(p.grad, b) for p, b in zip(params_of(model), before))
    assert stepping.steps == [] and not stepping.changed_by_others


def test_your_own_backward_while_stepping_is_named_and_kept_by_reset():
    model, loss = mlp_loss()
    expected = pytorch_grads(model, loss)
    stepping = Stepping(loss)
    while stepping.step() is not None:
        pass
    loss.backward(retain_graph=True)  # yours: PyTorch's engine runs the ledger's hooks on each AccumulateGrad
    stepping.sync()
    assert any("a backward of your own" in w for w in stepping.warnings())
    stepping.reset()
    for p, want in zip(params_of(model), expected):
        assert torch.equal(p.grad, want)  # only yours is left


# --- the graph stays; a freed one is refused ------------------------------------------------------------

def test_stepping_frees_nothing_so_backward_can_still_run():
    model, loss = mlp_loss()
    stepping = Stepping(loss)
    while stepping.step() is not None:
        pass
    stepped = [p.grad.clone() for p in params_of(model)]
    for p in params_of(model):
        p.grad = None
    loss.backward()  # would raise "Trying to backward through the graph a second time" had a step freed it
    assert all(torch.equal(p.grad, g) for p, g in zip(params_of(model), stepped))


def test_a_graph_freed_by_backward_is_refused_with_gradlabs_message():
    _, loss = mlp_loss()
    loss.backward()
    with pytest.raises(CaptureError, match="backward already ran through this graph and freed what forward saved.*"
                                           r"loss.backward\(retain_graph=True\)"):
        Stepping(loss)


def test_a_graph_freed_while_stepping_fails_the_step_and_says_why():
    model, loss = mlp_loss()
    stepping = Stepping(loss)
    stepping.step()
    loss.backward()  # frees what forward saved
    with pytest.raises(BackwardStepError, match=r"step 2 of \d+ failed, in the backward of .*freed what forward "
                                                r"saved for this node.*retain_graph=True"):
        stepping.step()
    assert stepping.failure["kind"] == "freed"


# --- hooks ----------------------------------------------------------------------------------------------

def test_a_leafs_tensor_hook_and_post_accumulate_hook_run_as_in_pytorch():
    def build():
        torch.manual_seed(5)
        w = torch.randn(3, 3, requires_grad=True)
        calls = []
        w.register_hook(lambda g: g * 10)
        w.register_post_accumulate_grad_hook(lambda t: calls.append(t.grad.clone()))
        return w, (torch.randn(2, 3) @ w).tanh().sum(), calls

    w, loss, calls = build()
    loss.backward()
    w2, loss2, calls2 = build()
    stepping = Stepping(loss2)
    while stepping.step() is not None:
        pass
    assert torch.equal(w2.grad, w.grad) and len(calls2) == len(calls) == 1 and torch.equal(calls2[0], calls[0])


def test_a_module_full_backward_hook_is_refused_and_says_why():
    model, _ = mlp_loss()
    handle = model[0].register_full_backward_hook(lambda module, g_in, g_out: None)
    loss = model(torch.randn(2, 3)).sum()
    with pytest.raises(CaptureError, match="BackwardHookFunctionBackward.*register_full_backward_hook.*Remove the "
                                           "hook"):
        Stepping(loss)
    handle.remove()


# --- failures and bad input ----------------------------------------------------------------------------

class Broken(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        raise ValueError("this backward is broken")


def test_a_failing_node_names_itself_keeps_the_steps_before_and_is_tried_again():
    x = torch.randn(3, requires_grad=True)
    loss = Broken.apply(x.exp()).sum()
    stepping = Stepping(loss)
    stepping.step()
    with pytest.raises(BackwardStepError, match=r"step 2 of 4 failed, in the backward of Broken.*ValueError: this "
                                                r"backward is broken.*loss.backward\(\) would raise it too"):
        stepping.step()
    assert len(stepping.steps) == 1 and x.grad is None
    with pytest.raises(BackwardStepError):
        stepping.step()


def test_a_loss_that_is_not_one_number_is_refused():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(CaptureError, match=r"backward starts from one number, but this tensor has shape \[3\]"):
        gl.lab.BackpropStepper(x * 2)
    with pytest.raises(CaptureError, match="this tensor has no graph"):
        Stepping(x)


def test_a_graph_drawn_with_names_is_stepped_with_its_names():
    model, loss = mlp_loss()
    graph = gl.lab.capture(loss, dict(model.named_parameters()))
    assert graph.source == "torch"
    stepping = Stepping(loss, graph)
    while stepping.step() is not None:
        pass
    labels = [graph.nodes[s["node"]].label for s in stepping.steps if s["leaf"]]
    assert sorted(labels) == sorted(name for name, _ in model.named_parameters())


def test_pytorchs_steps_are_the_same_record_as_gradlabs():
    model, loss = mlp_loss()
    raw = list(Stepping(loss).source.start())  # the run the stepper drives, to its end
    assert type(raw[0]) is gl.autograd.BackwardStep
    for step in raw:
        assert step.targets == tuple(child for child, _ in step.node.next_functions)
        assert len(step.grads_out) == len(step.targets)
        for to, g, (child, nr) in zip(step.targets, step.grads_out, step.node.next_functions):
            if g is not None:  # in the shape and dtype the next node expects
                assert list(g.shape) == list(child._input_metadata[nr].shape)
                assert g.dtype == child._input_metadata[nr].dtype
    assert {id(s.leaf) for s in raw if s.leaf is not None} == {id(p) for p in model.parameters()}


class WrongShape(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g[:2]  # two elements for an input of three


class TooMany(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g, g


@pytest.mark.parametrize("function, pytorch_says, we_say", [
    (WrongShape, "returned an invalid gradient at index 0", r"WrongShapeBackward returned an invalid gradient at "
                                                           r"index 0 - got \[2\] but expected shape compatible with "
                                                           r"\[3\]\. A backward must return a gradient shaped like"),
    (TooMany, "returned an incorrect number of gradients", r"TooManyBackward returned an incorrect number of "
                                                           r"gradients \(expected 1, got 2\): backward returns one "
                                                           "gradient per input of forward"),
])
def test_a_backward_that_returns_the_wrong_gradients_is_named_as_pytorch_names_it(function, pytorch_says, we_say):
    x = torch.randn(3, requires_grad=True)
    loss = function.apply(x.exp()).sum()
    with pytest.raises(RuntimeError, match=pytorch_says):
        loss.backward(retain_graph=True)  # so "loss.backward() would raise it too" is true
    x.grad = None
    stepping = Stepping(loss)
    stepping.step()
    with pytest.raises(BackwardStepError, match=r"step 2 of 4 failed, in the backward of " + function.__name__ +
                                                ".*" + we_say):
        stepping.step()
    assert stepping.failure["node"] == stepping.graph.by_ref[id(loss.grad_fn.next_functions[0][0])]


def test_a_shared_weight_is_shown_receiving_each_of_its_gradients_in_turn():
    names, loss = shared_weight_loss()
    stepping = Stepping(loss, gl.lab.capture(loss, names))
    w_id = stepping.graph.by_ref[id(names["w"])]
    while stepping.step() is not None:
        pass
    rows = [row for step in stepping.steps for row in step["sent"] if row["to"] == w_id]
    assert [(row["contribution"], row["of"]) for row in rows] == [(1, 3), (2, 3), (3, 3)]
    senders = [step["index"] for step in stepping.steps if any(row["to"] == w_id for row in step["sent"])]
    (accumulated,) = [step["index"] for step in stepping.steps if step["node"] == w_id]
    assert accumulated > max(senders)  # its AccumulateGrad runs once all three are in, on their sum


def test_a_torch_recording_is_stepped_on_its_recorded_graph_bit_for_bit():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2))
    x, y = torch.randn(16, 3), torch.randint(0, 2, (16,))
    with gl.lab.record() as rec:
        loss = nn.functional.cross_entropy(model(x), y)
    expected = pytorch_grads(model, loss)
    stepper = gl.lab.BackpropStepper(rec)
    assert stepper.graph.source == "torch" and {"0", "2"} <= set(stepper.graph.groups)  # the recording's modules
    stepper.run_to_end()
    for p, want in zip(model.parameters(), expected):
        assert torch.equal(p.grad, want)
    drawn = {step["node"] for step in stepper.steps}
    assert None not in drawn and len(drawn) == len(reachable(loss.grad_fn))  # every step lands on a drawn box
