// Playground: the controls, train / pause / step / reset, and the picture Python drew
// (gradlab/lab/playground_picture.py: network, decision boundary, loss, ‖∂L/∂W‖). A control is a
// traitlet; a button is a message; a click on a layer or a neuron asks the kernel for its graph.

import { coalesce, h, placeSvg } from "./dom.js";

const MENUS = [["dataset", "data"], ["activation", "activation"], ["optimizer", "optimizer"],
  ["learning_rate", "learning rate"], ["regularization", "regularisation"], ["reg_rate", "rate"]];
const NUMBERS = [["depth", "hidden layers"], ["width", "neurons"], ["batch_size", "batch"]];

function render({ model, el }) {
  const root = h("div", { class: "gradlab-widget gradlab-playground" });
  const trainOrPause = () => (model.get("running") ? model.send({ type: "pause" }) : model.send({ type: "train" }));
  const trainButton = h("button", { class: "gl-pg-train", onclick: trainOrPause });
  const status = h("span", { class: "gl-status gl-pg-status" });
  const notice = h("div", { class: "gl-notice gl-pg-notice" });
  const picture = h("div", { class: "gl-pg-picture-box" });
  const controls = h("div", { class: "gl-controls gl-pg-controls" });
  root.append(
    h("div", { class: "gl-toolbar" }, trainButton,
      h("button", { class: "gl-pg-step", title: "pause, then one step", onclick: () => model.send({ type: "step" }) }, "step"),
      h("button", { class: "gl-pg-reset", title: "the seed's initial weights, step 0", onclick: () => model.send({ type: "reset" }) }, "reset"),
      status),
    controls, notice, picture);
  el.append(root);

  const set = (name, value) => { model.set(name, value); model.save_changes(); };
  const inputs = {};
  const options = model.get("options") || {};
  for (const [name, label] of MENUS) {
    const select = h("select", { class: `gl-pg-${name}`, onchange: () => {
      set(name, typeof model.get(name) === "number" ? Number(select.value) : select.value);
    } }, (options[name] || []).map((value) => h("option", { value: String(value) }, String(value))));
    inputs[name] = select;
    controls.append(h("label", {}, label + " ", select));
  }
  for (const [name, label] of NUMBERS) {
    const [low, high] = (options.limits || {})[name] || [0, 100];
    const box = h("input", { class: `gl-pg-${name}`, type: "number", min: String(low), max: String(high), step: "1",
      onchange: () => {
        const value = Math.round(Number(box.value));
        if (value >= low && value <= high) set(name, value);
        else box.value = String(model.get(name)); // the kernel would refuse it: show what is kept
      } });
    inputs[name] = box;
    controls.append(h("label", {}, label + " ", box));
  }
  const noise = h("input", { class: "gl-pg-noise", type: "range", min: "0", max: String(options.max_noise || 0.5),
    step: "0.05", onchange: () => set("noise", Number(noise.value)) });
  const noiseText = h("span", { class: "gl-pg-noise-text" });
  noise.addEventListener("input", () => { noiseText.textContent = noise.value; });
  inputs.noise = noise;
  controls.append(h("label", {}, "noise ", noise, noiseText));

  picture.addEventListener("click", (e) => {
    const target = e.target.closest("[data-layer]");
    if (!target || !target.dataset.layer) return;
    const neuron = e.target.closest("[data-neuron]");
    model.send({ type: "open", layer: target.dataset.layer, neuron: neuron ? Number(neuron.dataset.neuron) : null });
  });

  function showControls() {
    for (const [name, input] of Object.entries(inputs)) {
      const value = String(model.get(name));
      if (input.tagName === "SELECT" && ![...input.options].some((o) => o.value === value)) {
        input.append(h("option", { value }, value)); // a value set from Python that the menu does not offer
      }
      if (document.activeElement !== input) input.value = value;
    }
    noiseText.textContent = String(model.get("noise"));
  }

  function draw() {
    const started = performance.now();
    const svg = placeSvg(picture, model.get("svg"));
    const opened = model.get("opened");
    if (svg) for (const g of svg.querySelectorAll("[data-layer]")) g.classList.toggle("gl-pg-opened", !!opened && g.dataset.layer === opened);
    const running = model.get("running");
    trainButton.textContent = running ? "pause" : "train";
    trainButton.title = running ? "stop after the step under way" : "train in the background (the controls stay live)";
    root.classList.toggle("gl-pg-running", running);
    root.dataset.step = String(model.get("step"));
    status.textContent = model.get("status");
    notice.textContent = model.get("notice");
    showControls();
    // what a redraw costs, for the browser test to read
    root.dataset.renders = String(Number(root.dataset.renders || 0) + 1);
    root.dataset.renderMs = (performance.now() - started).toFixed(2);
  }

  const redraw = coalesce(draw);
  for (const key of ["svg", "running", "step", "status", "notice", "opened", ...MENUS.map((m) => m[0]),
    ...NUMBERS.map((n) => n[0]), "noise"]) model.on("change:" + key, redraw);
  draw();
}

export default { render };
