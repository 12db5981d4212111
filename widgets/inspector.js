// The inspector: everything the lab knows about one node, with its value and gradient drawn as histograms.

import { h, num, shapeText } from "./dom.js";
import { histogram } from "./histogram.js";

// A summary (from gradlab/lab/summary.py): the numbers themselves when few, else stats and a histogram.
export function summaryBlock(summary, emptyText) {
  if (!summary) return h("div", { class: "gl-empty" }, emptyText);
  const rows = [];
  // changed in place since the forward: what changed, and whether the numbers below are still the forward's
  if (summary.changed) rows.push(h("div", { class: "gl-warn gl-changed" }, summary.changed));
  // it changed in place at some time, but nothing noted whether before or after the forward used it
  if (summary.not_known) rows.push(h("div", { class: "gl-hint gl-not-known" }, summary.not_known));
  if (summary.values) {
    rows.push(h("div", { class: "gl-values" }, "[" + summary.values.map(num).join(", ") + "]"));
  }
  rows.push(h("table", { class: "gl-stats" },
    h("tr", {}, ["min", "max", "mean", "norm"].map((k) => h("th", {}, k))),
    h("tr", {}, ["min", "max", "mean", "norm"].map((k) => h("td", {}, num(summary[k]))))));
  if (summary.nan || summary.inf) {
    rows.push(h("div", { class: "gl-warn" }, `${summary.nan} NaN, ${summary.inf} inf`));
  }
  if (summary.hist && summary.numel > 1) rows.push(histogram(summary.hist));
  return h("div", { class: "gl-summary" }, rows);
}

// A Scalar op's local derivative at the values it got, beside the finite difference that measures it.
export function localBlock(rows, outName) {
  if (!rows || !rows.length) return null;
  const step = rows[0].step;
  return h("table", { class: "gl-stats gl-local" },
    h("tr", {}, ["input", "value", `local derivative ∂${outName}/∂input`, `finite difference (h = ${num(step)})`]
      .map((k) => h("th", {}, k))),
    rows.map((row) => h("tr", { class: "gl-local-row" },
      h("td", {}, row.of ? `${row.name} (${row.of})` : row.name),
      h("td", {}, num(row.at)),
      h("td", { class: "gl-local-derivative" }, digits(row.derivative)),
      h("td", { class: "gl-local-probe" }, digits(row.probe)))));
}

// Twelve significant digits: enough to see where a finite difference stops agreeing with the rule.
function digits(v) {
  return v === null || v === undefined ? "—" : String(Number(v.toPrecision(12)));
}

export function ruleBlock(words, math) {
  return h("div", { class: "gl-rule" },
    h("div", { class: "gl-words" }, words || ""),
    h("div", { class: "gl-math" }, math || ""));
}

// Time and memory, when the graph was profiled (gradlab/lab/profile.py): seconds and bytes as a person reads them.
export function seconds(v) {
  if (v === null || v === undefined) return "—";
  if (v >= 1) return `${Number(v.toPrecision(3))} s`;
  if (v >= 1e-3) return `${Number((v * 1e3).toPrecision(3))} ms`;
  return `${Number((v * 1e6).toPrecision(3))} µs`;
}

export function bytes(v) {
  if (v === null || v === undefined) return "—";
  for (const [unit, scale] of [["GiB", 2 ** 30], ["MiB", 2 ** 20], ["KiB", 2 ** 10]]) {
    if (v >= scale) return `${Number((v / scale).toPrecision(3))} ${unit}`;
  }
  return `${v} B`;
}

function profileBlock(p) {
  if (!p) return null;
  const total = (p.forward_s || 0) + (p.backward_s || 0);
  return h("div", { class: "gl-profile" },
    h("h4", {}, "time and memory"),
    h("table", { class: "gl-stats gl-profile-times" },
      h("tr", {}, ["forward", "backward", "total"].map((k) => h("th", {}, k))),
      h("tr", {}, [p.forward_s, p.backward_s, p.forward_s == null && p.backward_s == null ? null : total]
        .map((v) => h("td", {}, seconds(v))))),
    h("div", { class: "gl-fact gl-profile-memory" }, p.saved_bytes
      ? `saved for backward ${bytes(p.saved_bytes)} · ${bytes(p.saved_for_backward_bytes)} of it held only for backward`
      : "saves nothing for backward"));
}

// Fill `container` with the inspector of `node`; `onCheck(id)` runs "check this node".
export function renderInspector(container, model, node, onCheck) {
  container.replaceChildren();
  if (!node) return;
  const id = node.id;
  const facts = [];
  if (node.input_shapes && node.input_shapes.length) {
    facts.push(`in ${node.input_shapes.map((s) => (s ? shapeText(s) : "no grad")).join(", ")} → `);  // (null: an input that needs no gradient)
  }
  facts.push(`out ${shapeText(node.output_shape)}`);
  if (node.dtype) facts.push(` · ${node.dtype}`);
  if (node.device) facts.push(` · ${node.device}`);
  const check = model.get("check_result") || {};
  const checkArea = h("div", { class: "gl-check-result" + (check.id === id ? (check.ok ? " gl-ok" : check.ok === false ? " gl-bad" : "") : "") });
  if (check.id === id) {
    checkArea.append(h("div", {}, check.message));
    for (const row of check.inputs || []) {
      checkArea.append(h("div", { class: "gl-check-row" },
        `${row.name}: backward ${num(row.analytic)} · finite difference ${num(row.numeric)} · error ${num(row.error)}`));
    }
  }
  const tape = (node.source || "").startsWith("tape ");  // a node of GraphView(tape): forward ops, no values
  container.append(h("div", { class: "gl-inspector" },
    h("div", { class: "gl-inspector-title" }, node.label, h("span", { class: "gl-op" }, node.op)),
    node.group ? h("div", { class: "gl-fact" }, "module: ", h("code", {}, node.group)) : null,
    h("div", { class: "gl-fact" }, facts.join("")),
    node.source ? h("div", { class: "gl-fact gl-source" }, node.source, node.code ? h("code", {}, node.code) : null) : null,
    profileBlock(node.profile),
    h("h4", {}, "local derivative"),
    ruleBlock(node.words, node.math),
    localBlock(node.local, "out"),
    h("h4", {}, node.kind === "op" ? "value (output)" : "value"),
    summaryBlock(node.value, tape ? "a tape keeps no values: replay it on a batch (tape.replay(x)), or record the forward (gl.lab.record())"
      : "not kept by the autograd graph: record the forward (gl.lab.record()) to see values"),
    h("h4", {}, node.kind === "op" ? "gradient ∂L/∂output" : "gradient (.grad)"),
    summaryBlock(node.grad, tape ? "a tape has no gradients: it is the forward only (gl.compile.make_step compiles its backward)"
      : "not known yet: run backward (or step) to see it"),
    node.saved && node.saved.length ? h("h4", {}, "saved for backward") : null,
    (node.saved || []).map((t) => h("div", { class: "gl-saved" },
      h("b", {}, t.name), t.freed ? " — freed by backward()" : t.text !== undefined ? ` = ${t.text}`
        : ` ${shapeText(t.shape)} · min ${num(t.min)} · max ${num(t.max)}`,
      t.changed ? h("div", { class: "gl-warn gl-changed" }, t.changed) : null)),
    node.kind === "op"
      ? h("button", { class: "gl-check", onclick: () => onCheck(id) }, "check this node")
      : null,
    checkArea));
}

// Keep `container` showing the inspector of the selected node, as selection, nodes and checks change.
export function mountInspector(graph, model, container) {
  const check = (id) => model.send({ type: "check", id });
  const show = () => {
    const id = model.get("selected");
    if (id && graph.node(id)) renderInspector(container, model, graph.node(id), check);
  };
  graph.onSelect(show);
  graph.onNodes(show);
  model.on("change:check_result", show);
  show();
}
