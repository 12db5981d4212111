"""The documentation site builds with warnings as errors, and shows what it promises.

Each lab in labs/ has its page, executed, with its pictures: the widgets' static ``image/svg+xml``
(MyST-NB's mime priority puts it before the widget view, which a static page cannot draw). The
solutions are not on the site. The API reference has a page per public module, built from docstrings.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from docs_site import LABS, REPO, built_site

pytestmark = pytest.mark.slow


class Page(HTMLParser):
    """The images, ids and classes of one HTML page."""

    def __init__(self, path: Path):
        super().__init__()
        self.images, self.ids, self.classes = [], set(), []
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.images.append(attrs.get("src", ""))
        if "id" in attrs:
            self.ids.add(attrs["id"])
        self.classes += (attrs.get("class") or "").split()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return built_site(tmp_path_factory)


@pytest.mark.parametrize("lab", LABS, ids=[lab.stem for lab in LABS])
def test_every_lab_has_an_executed_page_with_its_pictures(site, lab):
    page_path = site / "labs" / f"{lab.stem}.html"
    assert page_path.exists(), f"no page for labs/{lab.name} in the built site"
    page = Page(page_path)
    text = page_path.read_text(encoding="utf-8")
    assert page.classes.count("cell_output") >= 3, f"{lab.name}: its page shows too few outputs; was it executed?"
    assert "Traceback (most recent call last)" not in text, f"{lab.name}: a cell failed during the build"
    assert "application/vnd.jupyter.widget-view+json" not in text and "Loading widget" not in text, \
        f"{lab.name}: a widget's view, which a static page cannot draw, won over its picture"
    pictures = [src for src in page.images if src.endswith(".svg") and "_images/" in src]
    assert pictures, f"{lab.name}: no picture (SVG) on its page"
    for src in pictures:
        picture = (page_path.parent / src).resolve()
        assert picture.exists() and picture.stat().st_size > 200, f"{lab.name}: {src} is missing or empty"


def test_a_widgets_picture_is_gradlabs_own_svg(site):
    """The SVG beside a widget view is the one the lab drew: gradlab's gl- classes, not a placeholder."""
    drawn = 0
    for lab in LABS:
        page_path = site / "labs" / f"{lab.stem}.html"
        for src in Page(page_path).images:
            if src.endswith(".svg") and 'class="gl-' in (page_path.parent / src).read_text(encoding="utf-8"):
                drawn += 1
    assert drawn >= len(LABS), f"only {drawn} of the labs' pictures are gradlab's own drawings"


def test_the_solutions_are_not_on_the_site(site):
    assert not (site / "labs" / "solutions").exists(), "labs/solutions/ was built into the site"
    search = (site / "searchindex.js").read_text(encoding="utf-8")
    assert "labs/solutions" not in search


def test_the_pages_the_index_promises_exist(site):
    for name in ("index", "concepts", "coming-from-pytorch", "architecture", "backends", "compile", "lab",
                 "api/index"):
        assert (site / f"{name}.html").exists(), f"{name}.html is not in the built site"
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "mybinder.org/v2/gh/" in index and "urlpath=lab/tree/labs" in index, "the site has no Binder launch link"


@pytest.mark.parametrize("module, name", [("gradlab", "Tensor"), ("gradlab.nn", "Linear"),
                                          ("gradlab.optim", "Adam"), ("gradlab.autograd", "Function"),
                                          ("gradlab.data", "make_synthetic"), ("gradlab.lab", "GraphView")])
def test_the_api_reference_documents_the_public_names(site, module, name):
    page_path = site / "api" / "generated" / f"{module}.html"
    assert page_path.exists(), f"no API page for {module}"
    page = Page(page_path)
    assert f"{module}.{name}" in page.ids, f"{module}.{name} has no entry on {page_path.name}"
    text = page_path.read_text(encoding="utf-8")
    # the entry carries the docstring's first line, not only the name
    import importlib
    summary = (getattr(importlib.import_module(module), name).__doc__ or "").strip().split("\n")[0]
    words = re.findall(r"[A-Za-z]{5,}", summary)[:3]
    assert words and all(word in text for word in words), f"{module}.{name}'s docstring is not on its page"


def test_math_renders_offline(site):
    """The labs' LaTeX is typeset by a MathJax copied into the site, not one fetched from a CDN."""
    page = (site / "labs" / f"{LABS[0].stem}.html").read_text(encoding="utf-8")
    scripts = re.findall(r'<script[^>]+src="([^"]+)"', page)
    assert not [src for src in scripts if src.startswith(("http:", "https:", "//"))], scripts
    assert any("mathjax" in src for src in scripts), scripts
    assert (site / "_static" / "mathjax" / "tex-chtml.js").exists()


class Links(HTMLParser):
    """Every local reference of a page (href and src, with the attribute's tag) and every id it defines."""

    def __init__(self, path: Path):
        super().__init__()
        self.refs, self.ids = [], set()
        self.feed(path.read_text(encoding="utf-8"))

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id", "name"):
            if attrs.get(key) and (key == "id" or tag == "a"):
                self.ids.add(attrs[key])
        for key in ("href", "src"):
            value = attrs.get(key)
            if value and not re.match(r"^[a-z][a-z0-9+.-]*:|^//", value):   # http:, mailto:, data:, ...
                self.refs.append((tag, value))


def test_no_broken_links_images_or_anchors(site):
    """Crawl every built page: each local href or src names a file of the site, and each #anchor an id there."""
    pages = {path.resolve(): Links(path) for path in site.rglob("*.html") if "_static" not in path.parts}  # not the theme's templates
    broken = []
    for path, links in pages.items():
        for tag, ref in links.refs:
            target, _, anchor = ref.partition("#")
            target = target.split("?")[0]
            file = (path.parent / target).resolve() if target else path
            if not file.exists():
                broken.append(f"{path.relative_to(site)}: <{tag}> {ref} (no such file)")
            elif anchor and file.suffix == ".html":
                ids = pages[file].ids if file in pages else Links(file).ids
                if anchor not in ids:
                    broken.append(f"{path.relative_to(site)}: <{tag}> {ref} (no id {anchor!r} there)")
    assert len(pages) >= 20 and not broken, f"{len(broken)} broken of {len(pages)} pages:\n" + "\n".join(broken[:40])
