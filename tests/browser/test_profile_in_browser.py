"""The profile on the graph in a real browser (JupyterLab): lab 5's "where the time goes".

The profiled graph is coloured by time with its key, the side panel lists the top 10 nodes, a click on
a row selects that node (opening its module if it was closed) and the inspector shows its times; the
colour menu's memory mode swaps the table. Screenshots land in test-artifacts/browser/: look at them.
"""

from __future__ import annotations

import pytest

from .conftest import open_and_run, require, screenshot

LAB = "05-modules-losses-and-optimizers.ipynb"
TOP_OF_SCALE = "#fde725"


@pytest.fixture(scope="module")
def lab_page(browser, jupyter_server):
    """Lab 5 run once for the tests below, which follow one another on it as a learner would."""
    require("ipywidgets", "anywidget")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(30_000)
    page = context.new_page()
    open_and_run(page, jupyter_server("lab"), LAB)
    yield page
    context.close()


@pytest.fixture
def page(lab_page):
    return lab_page


@pytest.fixture
def profiled_view(page):
    view = page.locator(".gradlab-graphview").nth(1)
    view.scroll_into_view_if_needed()
    return view


def rows_of(view):
    return view.locator(".gl-top-table tbody tr")


def test_the_profile_colours_by_time_and_lists_the_top_ten(page, profiled_view):
    view = profiled_view
    assert view.locator("select.gl-color").input_value() == "time"
    legend = view.locator(".gl-legend").inner_text()
    assert "time (forward + backward), log scale" in legend and "not timed" in legend and "µs" in legend
    assert view.locator(".gl-legend .gl-swatch").count() == 5 + 2  # five stops, not timed, zero
    assert view.locator(".gl-table-title").inner_text() == "top 10 nodes by time (forward + backward)"
    rows = rows_of(view)
    assert rows.count() == 10
    slowest = rows.first.get_attribute("data-id")
    assert view.locator(f'.gl-nodes g[data-id="{slowest}"] rect').get_attribute("fill") == TOP_OF_SCALE
    screenshot(view, "lab-05-profile-by-time")


def test_a_row_click_selects_the_node_and_the_inspector_shows_its_times(page, profiled_view):
    view = profiled_view
    row = rows_of(view).nth(1)
    node_id = row.get_attribute("data-id")
    forward, backward = row.locator("td").nth(2).inner_text(), row.locator("td").nth(3).inner_text()
    row.click()
    view.locator(f'.gl-nodes g.gl-selected[data-id="{node_id}"]').wait_for()
    assert "gl-row-selected" in (rows_of(view).nth(1).get_attribute("class") or "")
    times = view.locator(".gl-inspector .gl-profile-times").inner_text()
    assert "forward" in times and "backward" in times
    assert forward in times and backward in times  # the same figures as the row (both from the node's JSON)
    assert "saved for backward" in view.locator(".gl-inspector .gl-profile-memory").inner_text()
    screenshot(view, "lab-05-profile-row-selected")


def test_a_row_opens_a_closed_module_and_memory_mode_swaps_the_table(page, profiled_view):
    view = profiled_view
    # (set-up: close module 2. A dispatched click, since JupyterLab's windowed cell list can sit over the
    # title's point after the inspector opened; the row click below is a real one)
    view.locator('g.gl-group.gl-expanded[data-id="g:2"] .gl-group-title').dispatch_event("click")
    view.locator('g.gl-group.gl-collapsed[data-id="g:2"]').wait_for()
    inside = view.locator(".gl-top-table tbody tr").filter(has=page.locator("td:nth-child(2)", has_text="2")).first
    node_id = inside.get_attribute("data-id")
    assert view.locator(f'.gl-nodes g[data-id="{node_id}"]').count() == 0  # hidden in the closed module
    inside.click()
    view.locator(f'.gl-nodes g.gl-selected[data-id="{node_id}"]').wait_for()
    assert view.locator('g.gl-group.gl-expanded[data-id="g:2"]').count() == 1

    view.locator("select.gl-color").select_option("memory")
    page.wait_for_function("""() => {
        const t = document.querySelectorAll('.gradlab-graphview')[1].querySelector('.gl-table-title');
        return t && t.textContent.includes('by memory'); }""")
    assert "bytes saved for backward" in view.locator(".gl-legend").inner_text()
    header = view.locator(".gl-top-table thead th").all_inner_texts()
    assert header == ["node", "module", "saved", "only for backward"]
    assert rows_of(view).count() == 7  # the seven operations (cross-entropy is LogSoftmax, NllLoss); leaves save nothing
    screenshot(view, "lab-05-profile-by-memory")
