"""The lab in the learner's theme: one notebook of every widget, in JupyterLab Light and then JupyterLab Dark.

In each theme every piece of text a widget shows (its HTML and the SVG Python drew) is measured in the page:
its computed colour against the colour under it (the node box or plate it sits on, else the nearest painted
background), composited as the browser paints them; each must reach WCAG's 4.5:1. Each widget is
screenshotted in each theme (test-artifacts/browser/theme-<theme>-<widget>.png): look at them.
"""

from __future__ import annotations

import pytest

from .conftest import open_and_run, require, screenshot

NOTEBOOK = "theme-probe.ipynb"
CELLS = [
    "import gradlab as gl\nimport gradlab.nn as nn\nimport gradlab.nn.functional as F\n"
    "gl.manual_seed(0)\nx = gl.randn(16, 4)\ny = gl.randint(0, 3, (16,))\n"
    "model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 3))",
    "loss = F.cross_entropy(model(x), y)\nloss.backward()\ngl.lab.GraphView(loss)",
    "gl.lab.BackpropStepper(F.cross_entropy(model(x), y))",
    # ten layers (every layer colour, the two a dark page lightens among them), sigmoid: the flags fire
    "deep = nn.Sequential(*[m for i in range(9) for m in (nn.Linear(4, 4), nn.Sigmoid())], nn.Linear(4, 3))\n"
    "flow = gl.lab.GradientFlow(deep)\ndisplay(flow)\n"
    "optimizer = gl.optim.SGD(deep.parameters(), lr=0.1)\n"
    "for _ in range(12):\n    optimizer.zero_grad()\n    F.cross_entropy(deep(x), y).backward()\n"
    "    optimizer.step()\n    flow.update()\nflow.flush()",
    "gl.lab.DeviceTimings(lambda m, v: m(v), model, x, repeats=5, budget_s=0.3)",
    "gl.lab.Playground()",
    "gl.lab.OptimizerRace('ravine', {'SGD': lambda p: gl.optim.SGD(p, lr=0.45), "
    "'Adam': lambda p: gl.optim.Adam(p, lr=0.3)}, steps=30)",
    "V = gl.lab.Verdict\ngl.lab.Verdicts([V('a pass', 'pass', 'right'), V('a slip', 'fail', 'off by 2 at [0]'), "
    "V('to do', 'not done', 'not done yet'), V('another', 'pass', 'exact')])",
    "prof = gl.lab.profile(lambda: F.cross_entropy(model(x), y), repeats=2)\ngl.lab.GraphView(prof, color='time')",
    "scatter = gl.lab.ConvScatter(gl.randn(5, 5), gl.randn(3, 3), padding=1)\nscatter.show(7)\nscatter",
]
WIDGETS = {  # name -> (selector, which of them)
    "graph": (".gradlab-graphview", 0),
    "stepper": (".gradlab-stepper", 0),
    "flow": (".gradlab-gradient-flow", 0),  # its chart and, once a layer is clicked, that layer's graph
    "timings": (".gradlab-device-timings", 0),
    "playground": (".gradlab-playground-box", 0),
    "profile": (".gradlab-graphview:has(.gl-top-table)", 0),
    "race": (".gradlab-race", 0),
    "conv-scatter": (".gradlab-conv", 0),
    "verdicts": (".jp-RenderedHTMLCommon:has(.gl-verdict)", 0),  # HTML, not a widget: its inks are --jp-*
}
THEMES = {"light": ("JupyterLab Light", "true"), "dark": ("JupyterLab Dark", "false")}
LEAST = 4.5  # WCAG AA for text

# Every visible piece of text in ROOT: [text, colour, background, contrast]. The background of SVG text is the
# sibling shape its centre lies on (a node's box, a plate), else what is painted under the SVG.
CONTRASTS_JS = r"""(root) => {
  const parse = (c) => {
    const m = c && c.match(/rgba?\(([\d.]+),\s*([\d.]+),\s*([\d.]+)(?:,\s*([\d.]+))?\)/);
    return m ? [+m[1], +m[2], +m[3], m[4] === undefined ? 1 : +m[4]] : null;
  };
  const over = (top, under) => top[3] >= 1 ? top : [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
  const lum = (c) => {
    const [r, g, b] = c.slice(0, 3).map((v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const ratio = (a, b) => { const [h, l] = [lum(a), lum(b)].sort((p, q) => q - p); return (h + 0.05) / (l + 0.05); };
  function htmlBackground(el) {  // the colours painted under el, composited from the page up
    const layers = [];
    for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
      if (e instanceof SVGElement) continue;
      const c = parse(getComputedStyle(e).backgroundColor);
      if (c && c[3] > 0) { layers.push(c); if (c[3] >= 1) break; }
    }
    return layers.reverse().reduce((under, top) => over(top, under), [255, 255, 255, 1]);
  }
  function svgBackground(text) {
    const box = text.getBoundingClientRect();
    const cx = box.left + box.width / 2, cy = box.top + box.height / 2;
    let under = htmlBackground(text.ownerSVGElement);
    for (let g = text.parentElement; g && g !== text.ownerSVGElement.parentElement; g = g.parentElement) {
      const shapes = [...g.children].filter((s) => s.tagName === "rect" || s.tagName === "circle");
      for (const s of shapes.reverse()) {
        const st = getComputedStyle(s);
        const fill = parse(st.fill);
        const r = s.getBoundingClientRect();
        if (fill && +st.fillOpacity > 0 && st.display !== "none" && r.left <= cx && cx <= r.right && r.top <= cy && cy <= r.bottom) {
          fill[3] *= +st.fillOpacity;
          return over(fill, under);
        }
      }
    }
    return under;
  }
  const dimmed = (el) => { for (let e = el; e && e !== root.parentElement; e = e.parentElement) if (+getComputedStyle(e).opacity < 1) return true; return false; };
  const out = [];
  for (const el of root.querySelectorAll("*")) {
    const svgText = el.tagName === "text";
    const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.textContent.trim());
    if (el.closest("title, option, style") || (!svgText && !own) || el.closest("text") && !svgText) continue;
    const st = getComputedStyle(el);
    const box = el.getBoundingClientRect();
    if (st.visibility === "hidden" || box.width === 0 || box.height === 0 || dimmed(el)) continue;
    const under = svgText ? svgBackground(el) : htmlBackground(el);
    const ink = parse(svgText ? st.fill : st.color);
    if (!ink) continue;
    const seen = over(ink, under);
    out.push([el.textContent.trim().slice(0, 60), st[svgText ? "fill" : "color"], `rgb(${under.slice(0, 3).map(Math.round)})`, ratio(seen, under)]);
  }
  return out;
}"""


def switch_theme(page, theme: str) -> None:
    name, light = THEMES[theme]
    page.evaluate("(theme) => window.jupyterapp.commands.execute('apputils:change-theme', {theme})", name)
    page.wait_for_selector(f'body[data-jp-theme-light="{light}"]', state="attached", timeout=30_000)
    page.wait_for_function("(light) => document.body.dataset.jpThemeLight === light && "
                           "getComputedStyle(document.body).getPropertyValue('--jp-layout-color0').trim() !== ''", arg=light)
    page.wait_for_timeout(500)  # the theme's stylesheet has been applied; let the widgets repaint


@pytest.fixture(scope="module")
def lab_page(browser, jupyter_server):
    require("ipywidgets", "anywidget")
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    context.set_default_timeout(30_000)
    page = context.new_page()
    server = jupyter_server("lab")
    server.write_notebook(NOTEBOOK, CELLS)
    open_and_run(page, server, NOTEBOOK)
    for name, (selector, index) in WIDGETS.items():
        if name != "verdicts":
            page.locator(selector).nth(index).locator("svg").first.wait_for()
    stepper = page.locator(".gradlab-stepper")
    for _ in range(3):  # a current node, done ones and the sent-gradient panel
        stepper.locator("button.gl-step").click()
        page.wait_for_timeout(300)
    graph = page.locator(".gradlab-graphview").first  # the inspector, with its facts, rule, maths and histogram
    graph.locator(".gl-nodes > g[data-id]").nth(2).click()
    graph.locator(".gl-inspector .gl-inspector-title").wait_for()
    flow = page.locator(".gradlab-gradient-flow")  # a layer opened: its key entry marked, its graph drawn
    flow.locator('.gl-flow-key[data-layer="4"]').click()
    flow.locator(".gradlab-graphview svg.gl-graph").wait_for()
    playground = page.locator(".gradlab-playground-box")
    for _ in range(4):  # lines in both charts
        playground.locator("button.gl-pg-step").click()
        page.wait_for_timeout(300)
    page.wait_for_function("(el) => +el.dataset.step >= 4", arg=playground.locator(".gradlab-playground").element_handle())
    profile = page.locator(WIDGETS["profile"][0])  # a row chosen: the inspector's times
    profile.locator(".gl-top-table tbody tr").first.click()
    profile.locator(".gl-inspector .gl-profile-times").wait_for()
    page.mouse.move(0, 0)  # no hover left on anything
    yield page
    switch_theme(page, "light")  # JupyterLab keeps the theme in its settings: leave it as found
    context.close()


@pytest.mark.parametrize("theme", list(THEMES))
def test_every_widgets_text_is_readable_in_the_theme(lab_page, theme):
    page = lab_page
    switch_theme(page, theme)
    weak, counted, lowest = [], {}, []
    for name, (selector, index) in WIDGETS.items():
        widget = page.locator(selector).nth(index)
        widget.scroll_into_view_if_needed()
        pieces = widget.evaluate(CONTRASTS_JS)
        counted[name] = len(pieces)
        lowest += [[name, *piece] for piece in pieces]
        weak += [f"{name}: {text!r} {ink} on {under}: {ratio:.2f}" for text, ink, under, ratio in pieces if ratio < LEAST]
        screenshot(widget, f"theme-{theme}-{name}")
    print(theme, "pieces of text measured:", counted)
    print(theme, "lowest contrast:", min(lowest, key=lambda row: row[-1]))
    assert all(count > 5 for count in counted.values()), counted
    assert not weak, f"text under {LEAST}:1 in the {theme} theme:\n" + "\n".join(weak[:40])


def test_the_dark_theme_repaints_the_widget_and_leaves_the_saved_picture_light(lab_page):
    page = lab_page
    switch_theme(page, "dark")
    flow = page.locator(".gradlab-gradient-flow .gradlab-flow").first
    box = flow.evaluate("(el) => getComputedStyle(el).backgroundColor")
    plate = flow.locator("svg .gl-bg").first.evaluate("(el) => getComputedStyle(el).fill")
    assert box == "rgb(33, 33, 33)" and plate == "none"  # JupyterLab Dark's --jp-layout-color1; the plate lets it show
    # the saved picture (the image/svg+xml beside the widget) keeps its own white plate and light inks
    svg = page.evaluate("""() => {
        const panel = window.jupyterapp.shell.currentWidget;
        for (const cell of panel.content.widgets) for (const output of cell.model.outputs?.toJSON?.() || [])
            if (output.data && output.data['image/svg+xml'] && [].concat(output.data['image/svg+xml']).join('').includes('gl-flow-lines'))
                return [].concat(output.data['image/svg+xml']).join('');
        return '';
    }""")
    assert '<rect class="gl-bg" width="100%" height="100%" fill="#fff"/>' in svg
