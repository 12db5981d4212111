"""Small models, batches and custom Functions shared by the gradlab.lab tests."""

import copy

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F


def mlp():
    gl.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 2))


def batch():
    gl.manual_seed(1)
    return gl.randn(5, 3), gl.tensor([0, 1, 0, 1, 1])


class Net(nn.Module):
    """encoder (Linear, ReLU) then head (Linear): module paths two deep."""

    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.encoder(x))


def recorded_net(loss_fn=None):
    """A Net's forward on batch() recorded: loss_fn(logits, targets), or logits.sum() when it is None."""
    gl.manual_seed(0)
    net = Net()
    x, y = batch()
    with gl.lab.record() as rec:
        loss = net(x).sum() if loss_fn is None else loss_fn(net(x), y)
    return net, rec, loss


def recorded_mlp_and_twin():
    """mlp()'s cross entropy on batch() recorded, and a deep copy of the model that has already run backward()."""
    model = mlp()
    x, y = batch()
    twin = copy.deepcopy(model)
    F.cross_entropy(twin(x), y).backward()
    with gl.lab.record() as rec:
        F.cross_entropy(model(x), y)
    return rec, model, twin


class Cube(gl.autograd.Function):
    """x³, built from two tensor multiplications inside forward."""

    derivative = "∂L/∂x = 3 · g · x²"

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x * x

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * grad * x * x


class WrongCube(Cube):
    """x³, with a backward that forgot the 3 (it says 2·g·x²)."""

    derivative = ""  # none given, as for a Function written without one

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 2 * grad * x * x
