// OptimizerRace: play / pause / step / a slider over the picture Python drew (gradlab/lab/race_picture.py:
// the loss surface, each optimizer's path, its state per step). Moving to a step only places what is
// already drawn: each marker at its run's position, the trail up to it, the key's loss, the charts' cursor.

import { coalesce, data, h, num, placeSvg } from "./dom.js";

const TICK_MS = 40; // one frame of the animation
const FRAMES = 150; // a whole race plays in about this many frames (6 s), whatever its number of steps

function render({ model, el }) {
  // (not .gradlab-widget: the lab tests count those as graph widgets; the box is styled in optimizer_race.css)
  const root = h("div", { class: "gradlab-race" });
  const play = h("button", { class: "gl-race-play", title: "play the race from this step" }, "▶ play");
  const back = h("button", { class: "gl-race-back", title: "one step back" }, "◀");
  const forward = h("button", { class: "gl-race-step", title: "one step forward" }, "step ▶");
  const slider = h("input", { class: "gl-race-slider", type: "range", min: "0", step: "1" });
  const status = h("span", { class: "gl-status gl-race-status" });
  const picture = h("div", { class: "gl-race-picture-box" });
  root.append(h("div", { class: "gl-toolbar" }, play, back, forward, slider, status), picture);
  el.append(root);

  let svg = null;
  let runs = [];
  let timer = null;
  let shown = 0;
  const steps = () => model.get("steps");

  function show(step) {
    shown = Math.max(0, Math.min(step, steps()));
    if (svg) {
      runs.forEach((run, i) => {
        const at = Math.min(shown, run.points.length - 1);
        const group = svg.querySelector(`.gl-race-run[data-run="${i}"]`);
        const [x, y] = run.points[at];
        const marker = group.querySelector(".gl-race-marker");
        marker.setAttribute("cx", x);
        marker.setAttribute("cy", y);
        group.querySelector(".gl-race-trail").setAttribute("points", run.points.slice(0, at + 1).join(" "));
        const loss = svg.querySelector(`.gl-race-key[data-run="${i}"] .gl-race-loss`);
        if (loss) loss.textContent = num(run.losses[Math.min(shown, run.losses.length - 1)]);
      });
      for (const cursor of svg.querySelectorAll(".gl-race-cursor")) {
        const x = Number(cursor.dataset.x0) + Number(cursor.dataset.w) * shown / Math.max(steps(), 1);
        cursor.setAttribute("x1", x.toFixed(1));
        cursor.setAttribute("x2", x.toFixed(1));
      }
    }
    slider.value = String(shown);
    status.textContent = `step ${shown} of ${steps()}`;
    root.dataset.step = String(shown);
  }

  function keep() { // tell the kernel which step is shown (race.panel.step)
    if (model.get("step") !== shown) { model.set("step", shown); model.save_changes(); }
  }

  function pause() {
    if (timer !== null) clearInterval(timer);
    timer = null;
    play.textContent = "▶ play";
    root.classList.remove("gl-race-playing");
    keep();
  }

  function start() {
    if (shown >= steps()) show(0);
    const stride = Math.max(1, Math.round(steps() / FRAMES));
    play.textContent = "❚❚ pause";
    root.classList.add("gl-race-playing");
    timer = setInterval(() => {
      show(shown + stride);
      if (shown >= steps()) pause();
    }, TICK_MS);
  }

  play.addEventListener("click", () => (timer === null ? start() : pause()));
  forward.addEventListener("click", () => { pause(); show(shown + 1); keep(); });
  back.addEventListener("click", () => { pause(); show(shown - 1); keep(); });
  slider.addEventListener("input", () => { pause(); show(Number(slider.value)); });
  slider.addEventListener("change", keep);

  function draw() {
    svg = placeSvg(picture, model.get("svg"));
    runs = data(model, "frames");
    if (!Array.isArray(runs)) runs = [];
    slider.max = String(steps());
    show(model.get("step"));
  }

  model.on("change:svg", coalesce(draw));
  model.on("change:frames", coalesce(draw));
  model.on("change:step", () => { if (timer === null && model.get("step") !== shown) show(model.get("step")); });
  draw();
  return () => pause();
}

export default { render };
