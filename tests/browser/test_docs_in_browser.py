"""The built documentation site in Chromium, opened from file:// as a reader who built it would.

Every lab page shows its pictures (each image decoded: naturalWidth > 0) and its math typeset by the
MathJax inside the site; no request the pages make fails. Screenshots of each lab's first pictures and
of the front pages land in test-artifacts/browser/docs-*.png: look at them.
"""

from __future__ import annotations

import pytest

from docs_site import LABS, built_site
from .conftest import ARTIFACTS, screenshot

IMAGES_JS = """() => [...document.querySelectorAll('main img, article img')].map(img => ({
    src: img.getAttribute('src'), complete: img.complete, width: img.naturalWidth,
    shown: img.getBoundingClientRect().width}))"""


@pytest.fixture(scope="module")
def site(browser, tmp_path_factory):
    """The built site; after `browser`, so that without Chromium the test skips before a build."""
    return built_site(tmp_path_factory)


def open_page(page, path):
    failed = []
    page.on("requestfailed", lambda request: failed.append(f"{request.url} ({request.failure})"))
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_function("() => [...document.images].every(img => img.complete)")
    return failed


@pytest.mark.parametrize("lab", LABS, ids=[lab.stem for lab in LABS])
def test_a_lab_page_shows_its_pictures_and_math(page, site, lab):
    failed = open_page(page, site / "labs" / f"{lab.stem}.html")
    images = page.evaluate(IMAGES_JS)
    pictures = [image for image in images if image["src"].endswith(".svg")]
    assert pictures, f"{lab.name}: no SVG picture on its page"
    blank = [image["src"] for image in images if not (image["complete"] and image["width"] > 0 and image["shown"] > 0)]
    assert not blank, f"{lab.name}: images that did not load or show: {blank}"
    if page.locator("main .math, article .math").count():
        # MathJax typeset the page's LaTeX: its containers are there, and drawn
        page.wait_for_function("() => [...document.querySelectorAll('mjx-container')]"
                               ".some(m => m.getBoundingClientRect().width > 0)", timeout=30_000)
    assert not failed, f"{lab.name}: requests that failed: {failed}"
    assert page.locator("text=Loading widget").count() == 0
    for index in range(min(2, len(pictures))):
        picture = page.locator(f'main img[src="{pictures[index]["src"]}"]').first
        screenshot(picture, f"docs-{lab.stem}-picture-{index + 1}")
    page.screenshot(path=str(ARTIFACTS / f"docs-{lab.stem}-top.png"))   # the page as it opens


@pytest.mark.parametrize("name", ["index", "concepts", "coming-from-pytorch", "api/generated/gradlab.nn"])
def test_the_front_pages_load_whole(page, site, name):
    failed = open_page(page, site / f"{name}.html")
    images = page.evaluate(IMAGES_JS)
    blank = [image["src"] for image in images if not (image["complete"] and image["width"] > 0)]
    assert not blank and not failed, f"{name}: images not loaded {blank}, failed requests {failed}"
    if name == "index":
        badge = page.locator('a[href*="mybinder.org/v2/gh/"] img')
        assert badge.count() == 1 and badge.evaluate("img => img.naturalWidth") > 0
    if name == "concepts":
        assert any(image["src"].endswith("layers.svg") for image in images)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"docs-{name.replace('/', '-')}.png"))
