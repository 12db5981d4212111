// GradientFlow: the line chart Python drew for the figure the menu picks (gradlab/lab/flow_picture.py, the
// saved notebook's picture too), a histogram of one layer's gradients scrubbed through time, and clicks:
// a layer's line, its key or its flag asks the kernel to open that layer in the graph below.

import { coalesce, data, h, placeSvg } from "./dom.js";
import { histogram } from "./histogram.js";

function render({ model, el }) {
  const root = h("div", { class: "gradlab-widget gradlab-flow" });
  const figureSelect = h("select", { class: "gl-flow-figure", title: "the figure the lines show" });
  const notice = h("span", { class: "gl-notice" });
  const status = h("span", { class: "gl-status" });
  const chart = h("div", { class: "gl-flow-chart" });
  const layerSelect = h("select", { class: "gl-flow-hist-layer", title: "the layer whose gradients are counted" });
  const slider = h("input", { class: "gl-flow-slider", type: "range", min: "0", max: "0", value: "0", step: "1" });
  const stepLabel = h("span", { class: "gl-flow-step" });
  const histBox = h("div", { class: "gl-flow-hist-box" });
  root.append(
    h("div", { class: "gl-toolbar" }, h("label", {}, "figure ", figureSelect), status, notice),
    chart,
    h("div", { class: "gl-flow-hist-panel" },
      h("h4", {}, "gradient histogram"),
      h("div", { class: "gl-controls" }, h("label", {}, "layer ", layerSelect), slider, stepLabel), histBox));
  el.append(root);

  let histograms = data(model, "histograms");
  let followLatest = true; // the slider stays on the newest step while training runs, until moved
  let chosenStep = 0; // else the step it was moved to (thinning may move that step's index)

  const open = (layer) => model.send({ type: "open", layer, step: followLatest ? 0 : chosenStep,
    figure: model.get("figure") });
  chart.addEventListener("click", (e) => {
    const target = e.target.closest("[data-layer]");
    if (target) open(target.dataset.layer);
  });

  function fillMenus() {
    const figures = model.get("figures") || {};
    if (figureSelect.options.length !== Object.keys(figures).length) {
      figureSelect.replaceChildren(...Object.entries(figures).map(([key, [symbol, meaning]]) =>
        h("option", { value: key, title: meaning }, `${symbol} — ${meaning}`)));
    }
    figureSelect.value = model.get("figure");
    const layers = Object.keys(histograms.layers || {});
    if (layerSelect.options.length !== layers.length) {
      layerSelect.replaceChildren(...layers.map((name) => h("option", { value: name }, name)));
    }
    layerSelect.value = model.get("histogram_layer") || model.get("suggested_layer");
  }

  // The chart of the menu's figure, as Python drew it; the opened layer's line, key and flag marked.
  function drawChart() {
    const svg = placeSvg(chart, (data(model, "charts"))[model.get("figure")] || "");
    const opened = model.get("opened");
    if (!svg) return;
    for (const g of svg.querySelectorAll("[data-layer]")) g.classList.toggle("gl-flow-opened", g.dataset.layer === opened);
  }

  function drawHistogramPanel() {
    const steps = histograms.steps || [];
    slider.max = String(Math.max(steps.length - 1, 0));
    if (followLatest) slider.value = slider.max;
    else if (steps[Number(slider.value)] !== chosenStep) {
      let best = 0;
      steps.forEach((step, i) => { if (Math.abs(step - chosenStep) < Math.abs(steps[best] - chosenStep)) best = i; });
      slider.value = String(best);
    }
    const index = Number(slider.value);
    const hist = ((histograms.layers || {})[layerSelect.value] || [])[index];
    stepLabel.textContent = steps.length ? `step ${steps[index]} (${index + 1} of ${steps.length} kept)` : "no steps yet";
    // a gradient with nan or inf values comes with Python's note on them (all of them: no bars to draw)
    const bars = hist && hist.counts.length ? histogram(hist, 300, 110) : null;
    histBox.replaceChildren(...[bars || (hist ? null : h("div", { class: "gl-hint" }, "no gradient at this step")),
      hist && hist.note ? h("div", { class: "gl-hint gl-flow-hist-note" }, hist.note) : null].filter(Boolean));
    histBox.dataset.step = steps.length ? String(steps[index]) : "";
  }

  function draw() {
    const started = performance.now();
    histograms = data(model, "histograms");
    fillMenus();
    drawChart();
    drawHistogramPanel();
    status.textContent = model.get("status");
    notice.textContent = model.get("notice");
    const ms = performance.now() - started;
    // what a redraw costs, for the browser test to read: the first (while the page builds) apart
    const renders = Number(root.dataset.renders || 0) + 1;
    root.dataset.renders = String(renders);
    if (renders === 1) root.dataset.firstRenderMs = ms.toFixed(2);
    else {
      root.dataset.renderMs = ms.toFixed(2);
      root.dataset.renderMsMax = Math.max(ms, Number(root.dataset.renderMsMax || 0)).toFixed(2);
    }
  }

  figureSelect.addEventListener("change", () => { model.set("figure", figureSelect.value); model.save_changes(); });
  layerSelect.addEventListener("change", () => {
    model.set("histogram_layer", layerSelect.value);
    model.save_changes();
    drawHistogramPanel();
  });
  slider.addEventListener("input", () => {
    followLatest = Number(slider.value) === Number(slider.max);
    const steps = histograms.steps || [];
    chosenStep = steps[Number(slider.value)] || 0;
    drawHistogramPanel();
    model.set("scrub_step", followLatest ? 0 : chosenStep);
    model.save_changes();
  });
  const redraw = coalesce(draw);
  for (const key of ["charts", "histograms", "figure", "suggested_layer", "opened", "status", "notice"]) {
    model.on("change:" + key, redraw);
  }
  draw();
}

export default { render };
