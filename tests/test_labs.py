"""Every lab notebook runs top to bottom, headless (the labs are product, not decoration)."""

from __future__ import annotations

from pathlib import Path

import pytest

LABS = sorted((Path(__file__).resolve().parent.parent / "labs").glob("*.ipynb"))


@pytest.mark.slow
@pytest.mark.parametrize("path", LABS, ids=[p.name for p in LABS])
def test_lab_runs_top_to_bottom(path, tmp_path):
    nbformat = pytest.importorskip("nbformat", reason="nbformat comes with the dev extra: pip install -e '.[dev]'")
    nbclient = pytest.importorskip("nbclient", reason="nbclient comes with the dev extra: pip install -e '.[dev]'")
    notebook = nbformat.read(path, as_version=4)
    assert all(not cell.get("outputs") for cell in notebook.cells if cell.cell_type == "code"), \
        f"{path.name} is stored with outputs; clear them before committing"
    client = nbclient.NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
