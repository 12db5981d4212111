// ConvScatter: step a convolution's backward one output position at a time. Python drew every step
// (gradlab/lab/conv_picture.py); here the buttons only choose which step's picture is shown.

import { coalesce, data, h, placeSvg } from "./dom.js";

const TICK_MS = 350; // one step of "run to end"

function render({ model, el }) {
  // (not .gradlab-widget: the lab tests count those as graph widgets; the box is styled in conv_scatter.css)
  const root = h("div", { class: "gradlab-conv", tabindex: "0", "data-lm-suppress-shortcuts": "true" });
  const start = h("button", { class: "gl-conv-start", title: "back to step 0: nothing scattered" }, "◀◀ start");
  const back = h("button", { class: "gl-conv-back", title: "one step back" }, "◀ back");
  const forward = h("button", { class: "gl-conv-step", title: "scatter the next output's gradient" }, "step ▶");
  const run = h("button", { class: "gl-conv-run", title: "scatter every remaining output, one after another" }, "run to end ▶▶");
  const status = h("span", { class: "gl-status gl-conv-status" });
  const picture = h("div", { class: "gl-conv-picture-box" });
  root.append(h("div", { class: "gl-toolbar" }, start, back, forward, run, status), picture);
  el.append(root);

  let frames = [];
  let shown = 0;
  let timer = null;
  const steps = () => model.get("steps");

  function show(step) {
    shown = Math.max(0, Math.min(step, steps()));
    if (frames[shown] !== undefined) placeSvg(picture, frames[shown]);
    status.textContent = `step ${shown} of ${steps()}`;
    root.dataset.step = String(shown);
    back.disabled = shown === 0;
    start.disabled = shown === 0;
    forward.disabled = shown === steps();
  }

  function keep() { // tell the kernel which step is shown (scatter.step)
    if (model.get("step") !== shown) { model.set("step", shown); model.save_changes(); }
  }

  function stop() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    run.textContent = "run to end ▶▶";
    root.classList.remove("gl-conv-running");
    keep();
  }

  function go() {
    if (shown >= steps()) show(0);
    run.textContent = "❚❚ pause";
    root.classList.add("gl-conv-running");
    timer = setInterval(() => {
      show(shown + 1);
      if (shown >= steps()) stop();
    }, TICK_MS);
  }

  start.addEventListener("click", () => { stop(); show(0); keep(); });
  back.addEventListener("click", () => { stop(); show(shown - 1); keep(); });
  forward.addEventListener("click", () => { stop(); show(shown + 1); keep(); });
  run.addEventListener("click", () => (timer === null ? go() : stop()));
  root.addEventListener("keydown", (event) => {
    if (event.key === "ArrowRight") { stop(); show(shown + 1); keep(); event.preventDefault(); }
    if (event.key === "ArrowLeft") { stop(); show(shown - 1); keep(); event.preventDefault(); }
  });

  function draw() {
    frames = data(model, "frames");
    if (!Array.isArray(frames)) frames = [];
    show(model.get("step"));
  }

  model.on("change:frames", coalesce(draw));
  model.on("change:step", () => { if (timer === null && model.get("step") !== shown) show(model.get("step")); });
  draw();
  return () => stop();
}

export default { render };
