"""Draw the pictures in the README and docs/ from the labs' own models.

    python docs/make_images.py
"""

from pathlib import Path

import gradlab as gl
import gradlab.nn as nn
import gradlab.nn.functional as F
from gradlab.data import make_synthetic
from gradlab.lab.flow import Flow
from gradlab.lab.timing import compare_devices
from gradlab.lab.timing_chart import to_svg as timings_svg

HERE = Path(__file__).resolve().parent / "images"


class TinyNet(nn.Module):
    """Lab 2's network: h fans out to the second layer and to a shortcut."""

    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(2, 3)
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        h = self.hidden(x).tanh()
        return self.out(h) + 0.5 * h.sum(dim=1, keepdim=True)


def main() -> None:
    HERE.mkdir(exist_ok=True)
    gl.manual_seed(0)
    model = TinyNet()
    x = gl.tensor([[0.5, -1.0], [1.5, 0.25], [-0.5, 0.75], [1.0, 1.0]])
    target = gl.tensor([[1.0], [0.0], [0.5], [2.0]])
    with gl.lab.record() as rec:
        loss = ((model(x) - target) ** 2).mean()
    (HERE / "make-dot.svg").write_text(make_dot_picture(model, loss), encoding="utf-8")
    stepper = gl.lab.BackpropStepper(rec)
    stepper.run_to(stepper.find("Tanh")[0])  # part way: done, current and pending nodes all show
    stepper.save_svg(HERE / "backprop-stepper.svg")
    stepper.run_to_end()
    view = gl.lab.GraphView(rec)
    view.save_svg(HERE / "graph-by-gradient.svg")
    profile = gl.lab.profile(lambda: ((model(x) - target) ** 2).mean())
    gl.lab.GraphView(profile, color="time").save_svg(HERE / "profile-by-time.svg")
    (HERE / "gradient-flow.svg").write_text(vanishing_flow().to_svg(), encoding="utf-8")
    (HERE / "device-timings.svg").write_text(timings_svg(device_timings()), encoding="utf-8")
    print("wrote", *sorted(p.name for p in HERE.glob("*.svg")))


def make_dot_picture(model, loss) -> str:
    """make_dot's boxes for lab 2's network, as a notebook without Graphviz's dot shows them (gradlab's layout)."""
    return gl.lab.make_dot(loss, params=dict(model.named_parameters())).fallback()


def vanishing_flow(depth: int = 8, steps: int = 120) -> Flow:
    """Lab 6's first network: a deep sigmoid MLP on the spiral, whose first layers barely learn."""
    gl.manual_seed(0)
    layers = [nn.Linear(2, 32), nn.Sigmoid()]
    for _ in range(depth - 2):
        layers += [nn.Linear(32, 32), nn.Sigmoid()]
    model = nn.Sequential(*layers, nn.Linear(32, 2))
    X, y = make_synthetic("spiral", n=400, seed=0)
    optimizer = gl.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    flow = Flow(model)
    for step in range(steps):
        batch = gl.randint(0, len(X), (64,))
        loss = F.cross_entropy(model(X[batch]), y[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        flow.update(loss)
    return flow


def device_timings():
    """A training step like lab 12's (its widths, ReLU for its QuickGELU) on the devices installed here (the picture
    says which ran)."""
    gl.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
    x, y = gl.randn(256, 64), gl.randint(0, 10, (256,))

    def train_step(model, x, y):
        loss = F.cross_entropy(model(x), y)
        model.zero_grad()
        loss.backward()
        with gl.no_grad():
            for p in model.parameters():
                p -= 0.1 * p.grad
        return loss

    return compare_devices(train_step, model, x, y, repeats=25)


if __name__ == "__main__":
    main()
