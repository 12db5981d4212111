// A summary's 16 bars (gradlab/lab/summary.py: counts between low and high), each bar's count on hover.
// The one drawing made in the front end (docs/lab.md, "Who draws"): one per node for the inspector and one
// per kept step for GradientFlow's slider, so it must draw without the kernel; its colour is the stylesheet's.

import { h, num, s } from "./dom.js";

export function histogram(hist, width = 260, height = 46) {
  const counts = hist.counts;
  const top = Math.max(...counts, 1);
  const bar = width / counts.length;
  const edge = (i) => num(hist.low + (i * (hist.high - hist.low)) / counts.length);
  const bars = counts.map((c, i) => s("rect", {
    x: (i * bar + 0.5).toFixed(1), y: (height - (c / top) * height).toFixed(1),
    width: Math.max(bar - 1, 1).toFixed(1), height: ((c / top) * height).toFixed(1), class: "gl-hist-bar",
  }, s("title", {}, `${c} values in [${edge(i)}, ${edge(i + 1)})`)));
  return h("div", { class: "gl-hist" },
    s("svg", { width, height: height + 14, viewBox: `0 0 ${width} ${height + 14}` },
      bars,
      s("text", { x: 0, y: height + 12, class: "gl-hist-axis" }, num(hist.low)),
      s("text", { x: width, y: height + 12, class: "gl-hist-axis", "text-anchor": "end" }, num(hist.high))));
}
