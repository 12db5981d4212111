"""Every solution opens and runs in JupyterLab, every widget draws, and every check it prints passes.

The labs themselves each have a browser test of their own (tests/test_labs.py checks that one exists); a
solution is the same page with the exercises done, so here it only has to run clean and say ✓ throughout.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from .conftest import PANEL_JS, open_and_run, require, screenshot

SOLUTIONS = sorted((Path(__file__).resolve().parents[2] / "labs" / "solutions").glob("*.ipynb"))

OUTPUT_TEXTS_JS = f"""() => {{
    const texts = [];
    for (const cell of {PANEL_JS}.content.widgets) {{
        if (cell.model.type !== 'code') continue;
        for (const output of cell.model.outputs.toJSON()) {{
            if (output.output_type === 'stream') texts.push([].concat(output.text).join(''));
            else if (output.data && output.data['text/plain']) texts.push([].concat(output.data['text/plain']).join(''));
        }}
    }}
    return texts.join('\\n');
}}"""


def skip_without_pytorch(path: Path) -> None:
    """A solution that runs PyTorch beside gradlab (lab 13) needs it installed: skip, saying so, where it is not."""
    if "import torch" in path.read_text(encoding="utf-8") and importlib.util.find_spec("torch") is None:
        pytest.skip(f"solutions/{path.name} runs PyTorch beside gradlab, and PyTorch is not installed "
                    "(pip install torch==2.13.0)")


def verdicts(text: str) -> list:
    """The symbols that start a printed check (✓ pass, ✗ fail, ○ not done), in order."""
    return [line[0] for line in text.splitlines() if line[:2] in ("✓ ", "✗ ", "○ ")]


@pytest.mark.parametrize("path", SOLUTIONS, ids=[p.stem[:2] for p in SOLUTIONS])
def test_solution_runs_in_jupyterlab_and_every_check_passes(page, jupyter_server, path):
    require("ipywidgets", "anywidget")
    skip_without_pytorch(path)
    server = jupyter_server("lab")
    open_and_run(page, server, f"solutions/{path.name}")
    said = verdicts(page.evaluate(OUTPUT_TEXTS_JS))
    assert len(said) >= 2 and set(said) == {"✓"}, f"solutions/{path.name} in JupyterLab printed {said}"
    widgets = page.locator(".jp-OutputArea-output .gradlab-widget, .jp-OutputArea-output .gradlab-race")
    if widgets.count():
        screenshot(widgets.last, f"solution-{path.stem[:2]}-last-widget")
