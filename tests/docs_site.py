"""Build the documentation site once per test session: ``sphinx-build -W -b html docs <tmp>``, as CI does.

tests/test_docs_site.py checks the HTML it writes; tests/browser/test_docs_in_browser.py opens it in
Chromium. The build executes every lab, so both share one build (and its time, printed once).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# the labs the site builds: a lab that runs PyTorch beside gradlab only where it is installed (docs/conf.py)
LABS = [lab for lab in sorted((REPO / "labs").glob("*.ipynb"))
        if importlib.util.find_spec("torch") is not None or "import torch" not in lab.read_text(encoding="utf-8")]
NEEDS = ("sphinx", "myst_nb", "sphinx_book_theme")
BUILD_TIMEOUT_S = 1500

_BUILT: dict = {}


def built_site(tmp_path_factory) -> Path:
    """The folder of the built HTML; the build fails the test with Sphinx's own output if it fails."""
    if "html" in _BUILT:
        return _BUILT["html"]
    missing = [name for name in NEEDS if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"the docs site needs {', '.join(missing)}: pip install -e '.[docs]' (the dev extra has them)")
    out = tmp_path_factory.mktemp("docs-site") / "html"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    env.pop("GRADLAB_DOCS_EXECUTE", None)   # the test builds what CI builds: every lab executed
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
                             str(REPO / "docs"), str(out)], cwd=REPO, env=env, capture_output=True,
                            text=True, timeout=BUILD_TIMEOUT_S)
    seconds = time.perf_counter() - started
    warnings = "\n".join(line for line in result.stderr.splitlines() if "IPKernelApp" not in line)
    assert result.returncode == 0, (f"sphinx-build -W failed ({result.returncode}) after {seconds:.0f} s:\n"
                                    f"{warnings[-6000:]}\n--- stdout\n{result.stdout[-2000:]}")
    print(f"\ndocs site: built in {seconds:.1f} s ({len(LABS)} labs executed) into {out}")
    _BUILT["html"] = out
    return out
