// BackpropStepper: the engine's own backward, one node per click (or key), with what each step computed.

import { coalesce, h } from "./dom.js";
import { mountGraph } from "./graph_canvas.js";
import { localBlock, mountInspector, ruleBlock, summaryBlock } from "./inspector.js";

function render({ model, el }) {
  // data-lm-suppress-shortcuts: JupyterLab and Notebook leave our keys to us while the widget has focus
  const root = h("div", { class: "gradlab-widget gradlab-stepper", tabindex: "0", "data-lm-suppress-shortcuts": "true" });
  el.append(root);
  const send = (type, id) => model.send(id === undefined ? { type } : { type, id });
  const buttons = h("div", { class: "gl-controls" },
    h("button", { class: "gl-reset", title: "reset (Home)", onclick: () => send("reset") }, "reset"),
    h("button", { class: "gl-back", title: "step back (←)", onclick: () => send("back") }, "◀ back"),
    h("button", { class: "gl-step", title: "step (→ or space)", onclick: () => send("step") }, "step ▶"),
    h("button", { class: "gl-run-to", title: "run to the selected node (Enter)", onclick: () => runToSelected() }, "run to selected"),
    h("button", { class: "gl-run-end", title: "run to the end (End)", onclick: () => send("end") }, "run to end ▶▶"),
    h("span", { class: "gl-status" }));
  root.append(buttons);
  const stateOf = (id) => (model.get("states") || {})[id] || (model.get("group_states") || {})[id];
  const graph = mountGraph(model, root, { stateOf });
  const panel = h("div", { class: "gl-step-panel" });
  const inspector = h("div", { class: "gl-inspector-box" });
  graph.side.append(panel, inspector);

  function runToSelected() {
    const id = model.get("selected");
    if (id) send("run_to", id);
  }

  function showStatus() {
    const total = model.get("total_steps");
    const done = model.get("step_index");
    buttons.querySelector(".gl-status").textContent =
      `${Math.min(done, total)} of ${total} nodes run` + (model.get("current_id") ? "" : done >= total && done ? " — finished" : "");
  }

  function showPanel() {
    const p = model.get("panel") || {};
    panel.replaceChildren(h("div", { class: "gl-panel-title" }, p.title || ""));
    // what the stepper cannot vouch for (someone else changed a .grad it adds into) comes first
    if (p.warning) panel.append(h("div", { class: "gl-warn gl-step-warning" }, p.warning));
    if (!p.node) {
      panel.append(h("div", { class: "gl-hint" }, p.text || ""));
      return;
    }
    panel.append(
      h("h4", {}, "gradient flowing in (∂L/∂output)"),
      ...(p.grads_in || []).map((g) => summaryBlock(g, "none: no gradient reached this output")),
      h("h4", {}, "local rule"),
      ruleBlock(p.words, p.math),
      localBlock((graph.node(p.node) || {}).local, "out") || "");  // a Scalar op's: passes back g times these
    if ((p.sent || []).length) {
      panel.append(h("h4", {}, "passes back (vector-Jacobian product)"));
      for (const row of p.sent) {
        const adds = row.of > 1 ? ` — contribution ${row.contribution} of ${row.of}, summed (+=)` : "";
        panel.append(h("div", { class: "gl-sent" + (row.of > 1 ? " gl-fanout" : "") },
          h("div", {}, "→ ", h("b", {}, row.to_label), adds),
          ...(row.summed ? [h("div", { class: "gl-fact gl-summed" }, row.summed)] : []),
          summaryBlock(row.grad, "None (this input needs no gradient)")));
      }
    }
    if (p.leaf) {
      panel.append(h("h4", {}, "accumulated"),
        h("div", { class: "gl-leaf" }, h("code", {}, `${p.leaf.name}.grad += g`), " → now"),
        summaryBlock(p.leaf.grad, ""));
    }
    const current = graph.node(p.node);
    if (current && current.group) panel.append(h("div", { class: "gl-fact" }, "module: ", h("code", {}, current.group)));
  }

  mountInspector(graph, model, inspector);

  function onStep() {
    showStatus();
    showPanel();
    graph.restyle();
    const id = model.get("current_id");
    // the current node, or the closed module around it, is always on screen
    const shown = root.querySelector(".gl-nodes > g.gl-state-current");
    if (shown) graph.reveal(shown.dataset.id);
    if (id) root.querySelector(".gl-canvas").dataset.current = id;
    else delete root.querySelector(".gl-canvas").dataset.current;
  }
  const onStepSoon = coalesce(onStep);
  for (const key of ["states", "group_states", "step_index", "current_id", "panel"]) model.on("change:" + key, onStepSoon);
  model.on("change:state_updates", onStepSoon);  // (initialize has already added them to the model's copy)

  root.addEventListener("keydown", (e) => {
    const keys = { ArrowRight: "step", " ": "step", ArrowLeft: "back", End: "end", Home: "reset" };
    if (keys[e.key]) send(keys[e.key]);
    else if (e.key === "Enter") runToSelected();
    else return;
    e.preventDefault();
    e.stopPropagation();
  });
  root.addEventListener("pointerdown", () => root.focus({ preventScroll: true }));
  onStep();

}

// A step sends only the states it changed: they join the model's own copy, once per model, from the moment it
// exists — so that steps taken in the cell that shows the stepper, before any view is drawn, are not lost, and a
// view opened later (or the notebook's saved widget state) has them too.
function initialize({ model }) {
  model.on("change:state_updates", () => {
    const updates = model.get("state_updates") || {};
    Object.assign(model.get("states") || {}, updates.states || {});
    Object.assign(model.get("group_states") || {}, updates.group_states || {});
  });
}

export default { initialize, render };
