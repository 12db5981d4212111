"""Sphinx configuration for gradlab's documentation site: ``sphinx-build -W -b html docs docs/_build/html``.

The pages are MyST markdown (``docs/*.md``); the labs are ``labs/*.ipynb`` (through the ``docs/labs`` link),
executed afresh on every build by MyST-NB, so the site shows what the code draws today. A widget has no
JavaScript on a static page: each one also emits its picture as ``image/svg+xml``, and that is what the
html builder is told to prefer. The API reference is generated from the docstrings (``api/``, ``_ext/``).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))   # the gradlab beside these docs, not another one installed

import gradlab  # noqa: E402

project = "gradlab"
author = "The gradlab developers"
copyright = "the gradlab developers"
release = version = gradlab.__version__

extensions = [
    "myst_nb",                    # markdown pages and the executed labs
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx-mathjax-offline",     # MathJax from a package, so the labs' math renders offline
    "gradlab_api",                # docs/_ext/gradlab_api.py: one reference page per public module
]

exclude_patterns = ["_build", "labs/solutions", "labs/.ipynb_checkpoints", "**/.ipynb_checkpoints",
                    "make_images.py"]
# A lab that runs PyTorch beside gradlab (lab 13) needs it installed (CI's docs build has it); without it the
# site is built without that lab, rather than with a page that stops at "pip install torch".
if importlib.util.find_spec("torch") is None:
    exclude_patterns += [f"labs/{lab.name}" for lab in sorted((HERE / "labs").glob("*.ipynb"))
                         if "import torch" in lab.read_text(encoding="utf-8")]
root_doc = "index"

# --- MyST and MyST-NB -------------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3            # [text](page.md#a-heading) links, as GitHub writes them
# Every build runs every lab top to bottom; GRADLAB_DOCS_EXECUTE=off skips that while editing prose.
nb_execution_mode = os.environ.get("GRADLAB_DOCS_EXECUTE", "force")
nb_execution_timeout = 600          # seconds per cell
nb_execution_raise_on_error = True  # a lab that fails is a failed build
nb_execution_in_temp = True         # as tests/test_labs.py: whatever a lab writes lands in a temp folder
nb_execution_show_tb = True
# The widgets' own view needs a kernel; their static picture is the image/svg+xml beside it.
nb_mime_priority_overrides = [
    ("html", "image/svg+xml", 5),
    ("html", "application/vnd.jupyter.widget-view+json", 90),
]
nb_ipywidgets_js = {}               # no widget manager script from a CDN: the pages show the SVG instead
nb_merge_streams = True

# --- API reference ------------------------------------------------------------------------------------------
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
autosummary_generate = False        # the pages come from gradlab_api, which lists each module's public names

# --- HTML ---------------------------------------------------------------------------------------------------
html_theme = "sphinx_book_theme"
html_title = "gradlab"
html_static_path = ["_static"]
html_css_files = ["gradlab.css"]
html_theme_options = {
    "home_page_in_toc": True,
    "show_toc_level": 2,
}
