"""Draw the pictures in the README and docs/lab.md from the labs' own models.

    python docs/make_images.py
"""

from pathlib import Path

import gradlab as gl
import gradlab.nn as nn

HERE = Path(__file__).resolve().parent / "images"


class TinyNet(nn.Module):
    """Lab 3's network: h fans out to the second layer and to a shortcut."""

    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(2, 3)
        self.out = nn.Linear(3, 1)

    def forward(self, x):
        h = self.hidden(x).tanh()
        return self.out(h) + h.sum(dim=1, keepdim=True)


def main() -> None:
    HERE.mkdir(exist_ok=True)
    gl.manual_seed(0)
    model = TinyNet()
    x = gl.tensor([[0.5, -1.0], [1.5, 0.25], [-0.5, 0.75], [1.0, 1.0]])
    target = gl.tensor([[1.0], [0.0], [0.5], [2.0]])
    with gl.lab.record() as rec:
        loss = ((model(x) - target) ** 2).mean()
    stepper = gl.lab.BackpropStepper(rec)
    stepper.run_to(stepper.find("Tanh")[0])  # part way: done, current and pending nodes all show
    stepper.save_svg(HERE / "backprop-stepper.svg")
    stepper.run_to_end()
    view = gl.lab.GraphView(rec)
    view.save_svg(HERE / "graph-by-gradient.svg")
    print("wrote", *sorted(p.name for p in HERE.glob("*.svg")))


if __name__ == "__main__":
    main()
