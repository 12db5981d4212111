// The drawing both widgets share: the graph's SVG (drawn by Python, laid out once), pan and zoom,
// search, hover tooltips, the colour key, and restyling by node id. Nothing here moves a box.

import { coalesce, data, h, num, placeSvg, shapeText } from "./dom.js";

export function mountGraph(model, root, options = {}) {
  const stateOf = options.stateOf || (() => null);
  const listeners = [];
  const search = h("input", { class: "gl-search", type: "search", placeholder: "search nodes…" });
  const colorSelect = h("select", { class: "gl-color", title: "colour the nodes by" });
  // the colour modes come from Python (gradient, value, kind, and any a lab adds: time, memory, flow)
  function fillColorMenu() {
    const labels = model.get("color_labels") || {};
    colorSelect.replaceChildren(...Object.entries(labels).map(([value, text]) => h("option", { value }, text)));
    colorSelect.value = model.get("color_mode");
  }
  fillColorMenu();
  const fitButton = h("button", { class: "gl-fit", title: "fit the graph in view (or double-click)" }, "fit");
  const notice = h("span", { class: "gl-notice" });
  const toolbar = h("div", { class: "gl-toolbar" }, fitButton, search, h("label", {}, "colour ", colorSelect), notice);
  const canvas = h("div", { class: "gl-canvas" });
  const tooltip = h("div", { class: "gl-tooltip" });
  const legend = h("div", { class: "gl-legend" });
  const side = h("div", { class: "gl-side" });
  const main = h("div", { class: "gl-main" }, canvas, legend);
  // The graph takes the whole width (a notebook is wide and scrolls down); details go below it.
  root.append(toolbar, main, side, tooltip);

  let svg = null;
  let full = null; // the drawing's own box
  let view = null; // the part shown: a viewBox
  let matches = new Set();
  let revealing = null; // a node asked for (a table row) that is inside a closed module: shown after the redraw
  // Every node's details: sent whole once, then only the nodes a backward step changed.
  let nodeData = data(model, "nodes");
  let colorData = data(model, "colors");
  const nodeListeners = [];
  function nodesChanged(updates) {
    if (updates) Object.assign(nodeData, updates);
    else nodeData = data(model, "nodes");
    notifyNodes();
  }
  const notifyNodes = coalesce(() => { for (const f of nodeListeners) f(); });

  function canvasSize() {
    const r = canvas.getBoundingClientRect();
    return { w: r.width || 800, h: r.height || model.get("height") };
  }

  function applyView() {
    if (svg && view) svg.setAttribute("viewBox", `${view.x} ${view.y} ${view.w} ${view.h}`);
  }

  // A wide, short graph gets a shorter canvas rather than a band of empty space. (`growOnly`: after a
  // module opened, the canvas may grow with the drawing, wrapped into more rows, but never jumps smaller.)
  function fitHeight(growOnly = false) {
    if (!full) return;
    const { w: width, h: now } = canvasSize();
    const needed = Math.ceil(full.h * Math.max(Math.min(width / full.w, 1.4), MIN_READABLE_ZOOM)) + 16;
    const height = Math.max(160, Math.min(model.get("height"), needed));
    if (!growOnly || height > now) canvas.style.height = `${height}px`;
  }

  const MIN_READABLE_ZOOM = 0.6; // below this the labels are too small to read

  // The whole graph in view (the fit button, a double-click), never blown up past 140 %.
  function fit() {
    if (!full) return;
    const c = canvasSize();
    const scale = Math.max(full.w / c.w, full.h / c.h, 1 / 1.4);
    const w = c.w * scale, hh = c.h * scale;
    view = { x: full.x - (w - full.w) / 2, y: full.y - (hh - full.h) / 2, w, h: hh };
    applyView();
  }

  // The first view: the whole graph if it can be read that small, else its start (the inputs) at a
  // readable size, to pan from: the top left of a drawing wrapped into rows, as a page is read.
  function firstView() {
    if (!full) return;
    const c = canvasSize();
    const scale = Math.max(full.w / c.w, full.h / c.h, 1 / 1.4);
    if (scale <= 1 / MIN_READABLE_ZOOM) { fit(); return; }
    const readable = 1 / MIN_READABLE_ZOOM, w = c.w * readable, hh = c.h * readable;
    view = { x: full.x, y: full.h > hh ? full.y : full.y + (full.h - hh) / 2, w, h: hh };
    applyView();
  }

  // Pan (keeping the zoom) so that box `id` is on screen.
  function reveal(id) {
    const rect = svg && svg.querySelector(`[data-id="${CSS.escape(id)}"] rect`);
    if (!rect || !view) return;
    const x = +rect.getAttribute("x") + 12, y = +rect.getAttribute("y") + 12;
    const w = +rect.getAttribute("width"), hh = +rect.getAttribute("height");
    if (x >= view.x && x + w <= view.x + view.w && y >= view.y && y + hh <= view.y + view.h) return;
    centerOn(id);
  }

  function centerOn(id) {
    const g = svg && svg.querySelector(`[data-id="${CSS.escape(id)}"] rect`);
    if (!g || !view) return;
    const x = +g.getAttribute("x") + +g.getAttribute("width") / 2 + 12;
    const y = +g.getAttribute("y") + +g.getAttribute("height") / 2 + 12;
    view = { ...view, x: x - view.w / 2, y: y - view.h / 2 };
    applyView();
  }

  function draw() {
    tooltip.style.display = "none"; // what it described may be gone
    canvas.innerHTML = model.get("svg"); // SVG made by gradlab/lab/svg.py from the model's own graph
    svg = canvas.querySelector("svg");
    if (!svg) return;
    const [x, y, w, hh] = svg.getAttribute("viewBox").split(" ").map(Number);
    const first = full === null;
    full = { x, y, w, h: hh };
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    svg.setAttribute("preserveAspectRatio", "xMidYMid meet");
    if (first || !view) { fitHeight(); firstView(); }
    else {
      const before = canvasSize().h;
      fitHeight(true);
      const c = canvasSize();
      if (c.h !== before) view = { ...view, h: (view.w * c.h) / c.w }; // the same zoom, more of it below
      applyView();
    }
    restyle();
    if (revealing && svg.querySelector(`[data-id="${CSS.escape(revealing)}"]`)) { reveal(revealing); revealing = null; }
  }

  // Select a node and bring it into view; one inside a closed module is opened by Python first.
  function show(id) {
    select(id);
    if (svg && svg.querySelector(`[data-id="${CSS.escape(id)}"]`)) reveal(id);
    else { revealing = id; model.send({ type: "reveal", id }); }
  }

  function restyle() {
    if (!svg) return;
    const mode = model.get("color_mode");
    const colors = colorData[mode] || {};
    const texts = model.get("texts") || {};
    const selected = model.get("selected");
    for (const g of svg.querySelectorAll(".gl-nodes > g[data-id]")) {
      const id = g.dataset.id;
      const color = colors[id];
      if (color) {
        g.querySelector("rect").setAttribute("fill", color[0]);
        for (const t of g.querySelectorAll("text")) t.setAttribute("fill", color[1]);
      }
      if (texts[id] !== undefined) g.querySelector(".gl-sub").textContent = texts[id];
      g.classList.toggle("gl-selected", id === selected);
      g.classList.toggle("gl-match", matches.has(id));
      for (const c of [...g.classList]) if (c.startsWith("gl-state-")) g.classList.remove(c);
      const state = stateOf(id);
      if (state) g.classList.add("gl-state-" + state);
    }
    for (const path of svg.querySelectorAll(".gl-edge")) {
      // a gradient has gone back along this edge: its consumer ran, and its source takes gradients
      const state = stateOf(path.dataset.target);
      const from = stateOf(path.dataset.source);
      path.classList.toggle("gl-edge-done", (state === "done" || state === "current") && from !== "unreached");
    }
    drawLegend(mode);
    colorSelect.value = mode;
    notice.textContent = model.get("notice") || "";
  }

  // The colour key of the mode shown, as Python drew it (gradlab/lab/svg.py, the static picture's too).
  function drawLegend(mode) {
    placeSvg(legend, (model.get("color_keys") || {})[mode] || "");
  }

  // --- pan, zoom, click -------------------------------------------------------------------------
  let drag = null;
  canvas.addEventListener("wheel", (e) => {
    if (!view) return;
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    const fx = (e.clientX - r.left) / r.width, fy = (e.clientY - r.top) / r.height;
    const f = Math.exp(e.deltaY * 0.0015);
    const px = view.x + fx * view.w, py = view.y + fy * view.h;
    view = { w: view.w * f, h: view.h * f, x: px - fx * view.w * f, y: py - fy * view.h * f };
    applyView();
  }, { passive: false });
  canvas.addEventListener("pointerdown", (e) => {
    drag = { x: e.clientX, y: e.clientY, view: { ...view }, moved: false };
  });
  canvas.addEventListener("pointermove", (e) => {
    if (drag && view) {
      const r = canvas.getBoundingClientRect();
      const dx = e.clientX - drag.x, dy = e.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) drag.moved = true;
      if (drag.moved) {
        view = { ...drag.view, x: drag.view.x - (dx * view.w) / r.width, y: drag.view.y - (dy * view.h) / r.height };
        applyView();
      }
    }
    showTooltip(e);
  });
  window.addEventListener("pointerup", () => { setTimeout(() => { drag = null; }, 0); });
  canvas.addEventListener("pointerleave", () => { tooltip.style.display = "none"; });
  canvas.addEventListener("dblclick", fit);
  fitButton.addEventListener("click", fit);
  canvas.addEventListener("click", (e) => {
    if (drag && drag.moved) return;
    const target = e.target.closest("[data-id]");
    if (!target) return;
    const id = target.dataset.id;
    const isGroup = target.classList.contains("gl-group");
    if (isGroup && (target.classList.contains("gl-collapsed") || e.target.classList.contains("gl-group-title"))) {
      model.send({ type: "toggle", id });
    } else if (!isGroup) {
      select(id);
    }
  });

  let inspected = model.get("selected");
  function select(id) {
    inspected = id;
    model.set("selected", id);
    model.save_changes();
    restyle();
    for (const f of listeners) f(id);
  }
  // A node the kernel selected (a linked view, a layer opened) is inspected as a click's is.
  model.on("change:selected", () => {
    const id = model.get("selected");
    if (id === inspected) return;
    inspected = id;
    for (const f of listeners) f(id);
  });

  function showTooltip(e) {
    const target = e.target.closest && e.target.closest("[data-id]");
    if (!target || (drag && drag.moved)) { tooltip.style.display = "none"; return; }
    const id = target.dataset.id;
    const node = nodeData[id];
    const group = (model.get("groups") || {})[id];
    tooltip.replaceChildren();
    if (node) {
      // (filtered: append() would write a null as the text "null")
      tooltip.append(...[h("b", {}, node.label), ` ${node.op}`, h("br"), `out ${shapeText(node.output_shape)}`,
        node.group ? h("span", {}, h("br"), `in ${node.group}`) : null,
        node.grad ? h("span", {}, h("br"), `‖grad‖ ${num(node.grad.norm)}`) : null].filter(Boolean));
    } else if (group) {
      const open = target.classList.contains("gl-expanded");
      tooltip.append(h("b", {}, group.label), h("br"), `${group.sub} · click ${open ? "its title to close" : "to open"}`);
    } else { tooltip.style.display = "none"; return; }
    const r = root.getBoundingClientRect();
    tooltip.style.display = "block";
    tooltip.style.left = `${e.clientX - r.left + 14}px`;
    tooltip.style.top = `${e.clientY - r.top + 14}px`;
  }

  // --- search and colour ---------------------------------------------------------------------------
  search.addEventListener("input", () => {
    const text = search.value.trim().toLowerCase();
    matches = new Set(text ? Object.values(nodeData).filter((n) =>
      n.label.toLowerCase().includes(text) || n.op.toLowerCase().includes(text) ||
      (n.group || "").toLowerCase().includes(text)).map((n) => n.id) : []);
    restyle();
  });
  search.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && matches.size) {
      const visible = [...matches].find((id) => svg.querySelector(`[data-id="${CSS.escape(id)}"]`));
      if (visible) { centerOn(visible); select(visible); }
    }
    e.stopPropagation(); // typing a search is not a keyboard shortcut
  });
  colorSelect.addEventListener("change", () => {
    model.set("color_mode", colorSelect.value);
    model.save_changes();
    restyle();
  });

  model.on("change:svg", draw);
  model.on("change:color_labels", fillColorMenu);
  model.on("change:nodes", () => nodesChanged(null));
  model.on("change:node_updates", () => nodesChanged(data(model, "node_updates")));
  const restyleSoon = coalesce(restyle);
  model.on("change:colors", () => { colorData = data(model, "colors"); });
  for (const key of ["colors", "color_mode", "selected", "texts", "notice", "color_keys"]) {
    model.on("change:" + key, restyleSoon);
  }
  canvas.style.height = `${model.get("height")}px`;
  draw();
  requestAnimationFrame(() => { fitHeight(); firstView(); }); // the output area has its real size only once on the page

  return {
    side, restyle, restyleSoon, fit, centerOn, reveal, select, show,
    node: (id) => nodeData[id],
    onSelect: (f) => listeners.push(f),
    onNodes: (f) => nodeListeners.push(f),
  };
}
