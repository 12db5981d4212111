// DeviceTimings: the chart Python drew (gradlab/lab/timing_chart.py), a "run again" button and the run's status.

import { coalesce, h, placeSvg } from "./dom.js";

function render({ model, el }) {
  const root = h("div", { class: "gradlab-widget gradlab-device-timings" });
  el.append(root);
  const button = h("button", { class: "gl-dt-run", title: "time every device again, in the kernel",
    onclick: () => { model.set("running", true); model.save_changes(); model.send({ type: "run" }); } }, "run again");
  const status = h("span", { class: "gl-status" });
  const notice = h("div", { class: "gl-notice" });
  const chart = h("div", { class: "gl-dt-chart" });
  root.append(h("div", { class: "gl-toolbar" }, button, status), chart, notice);

  const draw = () => placeSvg(chart, model.get("svg")); // drawn by gradlab/lab/timing_chart.py

  function showStatus() {
    const running = model.get("running");
    const rows = model.get("rows") || [];
    // compare_compiled's table has an eager and a compiled row per device: count devices, not rows
    const devices = (list) => new Set(list.map((r) => r.device)).size;
    const both = rows.some((r) => r.variant);
    const timed = devices(rows.filter((r) => r.median_s !== null && (!both || r.variant === "compiled")));
    const what = both ? " (eager and compiled)" : "";
    button.disabled = running;
    status.textContent = running ? `timing… ${timed} of ${devices(rows.filter((r) => r.available))} devices done`
      : `${timed} device${timed === 1 ? "" : "s"} timed${what} · run ${model.get("runs")}`;
    notice.textContent = model.get("notice") || "";
  }

  const update = coalesce(() => { draw(); showStatus(); });
  for (const key of ["svg", "rows", "running", "runs", "notice"]) model.on("change:" + key, update);
  draw();
  showStatus();
}

export default { render };
