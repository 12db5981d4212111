// GradientFlow: per-layer gradient figures over the training steps (log scale), a histogram of one
// layer's gradients scrubbed through time, and the layers flagged vanishing or exploding.
// Click a layer (its line or its name) to open it in the graph below, coloured by the same figure.

import { coalesce, data, h, num, s } from "./dom.js";

const PALETTE = ["#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777",
  "#4b5563", "#65a30d"]; // the same order as gradlab/lab/flow_picture.py
const W = 640, H = 260, LEFT = 56, RIGHT = 12, TOP = 10, BOTTOM = 26;
const HW = 300, HH = 150;

const color = (i) => PALETTE[i % PALETTE.length];
const positive = (v) => typeof v === "number" && v > 0 && Number.isFinite(v);

function logRange(series, layers) {
  let low = Infinity, high = -Infinity;
  for (const name of layers) for (const v of series[name] || []) {
    if (positive(v)) { low = Math.min(low, v); high = Math.max(high, v); }
  }
  if (low === Infinity) return [-1, 1];
  const a = Math.floor(Math.log10(low)), b = Math.ceil(Math.log10(high));
  return b > a ? [a, b] : [a - 1, b + 1];
}

// One polyline per layer; breaks (null, nan) split a line so a gap shows where a figure is missing.
function drawLines(history, figure, onOpen, highlighted) {
  const steps = history.steps || [], layers = history.layers || [];
  const series = (history.series || {})[figure] || {};
  const [low, high] = logRange(series, layers);
  const first = steps.length ? steps[0] : 0, last = steps.length ? steps[steps.length - 1] : 1;
  const span = Math.max(last - first, 1), pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
  const x = (step) => LEFT + ((step - first) / span) * pw;
  const y = (v) => TOP + ((high - Math.log10(v)) / (high - low)) * ph;
  const svg = s("svg", { class: "gl-flow-lines", viewBox: `0 0 ${W} ${H}`, width: W, height: H });
  for (let e = low; e <= high; e++) {
    const ty = TOP + ((high - e) / (high - low)) * ph;
    svg.append(s("line", { x1: LEFT, x2: LEFT + pw, y1: ty, y2: ty, class: "gl-flow-grid" }),
      s("text", { x: LEFT - 6, y: ty + 4, "text-anchor": "end", class: "gl-flow-axis" }, `1e${e}`));
  }
  svg.append(s("rect", { x: LEFT, y: TOP, width: pw, height: ph, class: "gl-flow-frame" }),
    s("text", { x: LEFT, y: H - 8, class: "gl-flow-axis" }, `step ${first}`),
    s("text", { x: LEFT + pw, y: H - 8, "text-anchor": "end", class: "gl-flow-axis" }, `step ${last}`));
  layers.forEach((name, i) => {
    const values = series[name] || [];
    const runs = [[]];
    for (let k = 0; k < steps.length; k++) {
      const v = values[k];
      if (positive(v)) runs[runs.length - 1].push(`${x(steps[k]).toFixed(1)},${y(v).toFixed(1)}`);
      else if (runs[runs.length - 1].length) runs.push([]);
    }
    const g = s("g", { class: "gl-flow-layer" + (name === highlighted ? " gl-flow-opened" : ""), "data-layer": name },
      s("title", {}, `layer ${name}: ${num(values[values.length - 1])} at step ${last} — click to open it in the graph`));
    for (const run of runs) {
      if (run.length > 1) g.append(s("polyline", { points: run.join(" "), stroke: color(i), class: "gl-flow-line" }));
      else if (run.length === 1) {
        const [cx, cy] = run[0].split(",");
        g.append(s("circle", { cx, cy, r: 2.5, fill: color(i) }));
      }
    }
    g.addEventListener("click", () => onOpen(name));
    svg.append(g);
  });
  return svg;
}

// 16 bars of one layer's gradient values at one kept step.
function drawHistogram(hist) {
  const svg = s("svg", { class: "gl-flow-hist", viewBox: `0 0 ${HW} ${HH}`, width: HW, height: HH });
  if (!hist) {
    svg.append(s("text", { x: 10, y: HH / 2, class: "gl-flow-axis" }, "no gradient at this step"));
    return svg;
  }
  const counts = hist.counts, most = Math.max(...counts, 1), bw = (HW - 20) / counts.length;
  counts.forEach((c, i) => {
    const bh = (c / most) * (HH - 36);
    svg.append(s("rect", { x: 10 + i * bw, y: HH - 22 - bh, width: Math.max(bw - 1, 1), height: bh, class: "gl-flow-bar" },
      s("title", {}, `${c} values in [${num(hist.low + (i * (hist.high - hist.low)) / counts.length)}, ` +
        `${num(hist.low + ((i + 1) * (hist.high - hist.low)) / counts.length)})`)));
  });
  svg.append(s("text", { x: 10, y: HH - 6, class: "gl-flow-axis" }, num(hist.low)),
    s("text", { x: HW - 10, y: HH - 6, "text-anchor": "end", class: "gl-flow-axis" }, num(hist.high)));
  return svg;
}

function flagText(flag) {
  return `layer ${flag.layer} ${flag.kind}: ${num(flag.figure)} — ${flag.rule}`;
}

function render({ model, el }) {
  const root = h("div", { class: "gradlab-widget gradlab-flow" });
  const figureSelect = h("select", { class: "gl-flow-figure", title: "the figure the lines show" });
  const notice = h("span", { class: "gl-notice" });
  const status = h("span", { class: "gl-status" });
  const lines = h("div", { class: "gl-flow-chart" });
  const legend = h("div", { class: "gl-flow-legend" });
  const layerSelect = h("select", { class: "gl-flow-hist-layer", title: "the layer whose gradients are counted" });
  const slider = h("input", { class: "gl-flow-slider", type: "range", min: "0", max: "0", value: "0", step: "1" });
  const stepLabel = h("span", { class: "gl-flow-step" });
  const histBox = h("div", { class: "gl-flow-hist-box" });
  const flagsBox = h("div", { class: "gl-flow-flags" });
  root.append(
    h("div", { class: "gl-toolbar" }, h("label", {}, "figure ", figureSelect), status, notice),
    h("div", { class: "gl-flow-main" }, lines, legend),
    h("div", { class: "gl-flow-lower" },
      h("div", { class: "gl-flow-hist-panel" },
        h("h4", {}, "gradient histogram"),
        h("div", { class: "gl-controls" }, h("label", {}, "layer ", layerSelect), slider, stepLabel), histBox),
      h("div", { class: "gl-flow-flag-panel" }, h("h4", {}, "flags"), flagsBox)));
  el.append(root);

  let history = data(model, "history");
  let followLatest = true; // the slider stays on the newest step while training runs, until moved
  let chosenStep = 0; // else the step it was moved to (thinning may move that step's index)

  const open = (layer) => {
    const steps = history.histogram_steps || [];
    const step = followLatest ? 0 : chosenStep;
    model.send({ type: "open", layer, step, figure: model.get("figure") });
  };

  function fillMenus() {
    const figures = history.figures || {};
    if (figureSelect.options.length !== Object.keys(figures).length) {
      figureSelect.replaceChildren(...Object.entries(figures).map(([key, [symbol, meaning]]) =>
        h("option", { value: key, title: meaning }, `${symbol} — ${meaning}`)));
    }
    figureSelect.value = model.get("figure");
    const layers = history.layers || [];
    if (layerSelect.options.length !== layers.length) {
      layerSelect.replaceChildren(...layers.map((name) => h("option", { value: name }, name)));
      const flagged = (history.flags || [])[0];
      layerSelect.value = model.get("histogram_layer") || (flagged ? flagged.layer : layers[0]);
    }
  }

  function drawHistogramPanel() {
    const steps = history.histogram_steps || [];
    slider.max = String(Math.max(steps.length - 1, 0));
    if (followLatest) slider.value = slider.max;
    else if (steps[Number(slider.value)] !== chosenStep) {
      let best = 0;
      steps.forEach((step, i) => { if (Math.abs(step - chosenStep) < Math.abs(steps[best] - chosenStep)) best = i; });
      slider.value = String(best);
    }
    const index = Number(slider.value);
    const layer = layerSelect.value;
    stepLabel.textContent = steps.length ? `step ${steps[index]} (${index + 1} of ${steps.length} kept)` : "no steps yet";
    histBox.replaceChildren(drawHistogram(((history.histograms || {})[layer] || [])[index]));
    histBox.dataset.step = steps.length ? String(steps[index]) : "";
  }

  function drawFlags() {
    const flags = history.flags || [];
    flagsBox.replaceChildren(...(flags.length
      ? flags.map((flag) => h("div", { class: `gl-flow-flag gl-flow-${flag.kind}`, "data-layer": flag.layer,
        onclick: () => open(flag.layer) }, "⚑ " + flagText(flag)))
      : [h("div", { class: "gl-hint" }, history.count
        ? `no layer flagged (vanishing below ${num(history.thresholds.vanishing)} of the largest ‖∂L/∂W‖, ` +
          `exploding above ${num(history.thresholds.exploding)}, over the last ${history.thresholds.window} updates)`
        : "no updates yet: call flow.update() after each optimizer.step()")]));
  }

  function draw() {
    const started = performance.now();
    history = data(model, "history");
    fillMenus();
    const figure = model.get("figure");
    const opened = model.get("opened");
    lines.replaceChildren(drawLines(history, figure, open, opened));
    legend.replaceChildren(...(history.layers || []).map((name, i) =>
      h("span", { class: "gl-flow-key" + (name === opened ? " gl-flow-opened" : ""), "data-layer": name,
        title: "click to open this layer in the graph", onclick: () => open(name) },
      h("span", { class: "gl-swatch", style: `background:${color(i)}` }), name)));
    drawHistogramPanel();
    drawFlags();
    status.textContent = `${history.count || 0} updates · ${(history.steps || []).length} kept`;
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
    const steps = history.histogram_steps || [];
    chosenStep = steps[Number(slider.value)] || 0;
    drawHistogramPanel();
    model.set("scrub_step", followLatest ? 0 : steps[Number(slider.value)] || 0);
    model.save_changes();
  });
  const redraw = coalesce(draw);
  for (const key of ["history", "figure", "opened", "notice"]) model.on("change:" + key, redraw);
  draw();
}

export default { render };
