// Small DOM helpers shared by the widgets: build elements without innerHTML (labels come from user code).

export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG_NS = "http://www.w3.org/2000/svg";

export function s(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  for (const child of children.flat()) {
    if (child !== undefined && child !== null) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Numbers as a learner reads them: four significant digits, exponents only when needed.
export function num(v) {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return v;
  if (v === 0) return "0";
  const a = Math.abs(v);
  return a >= 1e4 || a < 1e-3 ? v.toExponential(2) : String(Number(v.toPrecision(4)));
}

export function shapeText(shape) {
  if (shape === null || shape === undefined) return "";
  if (shape.length && Array.isArray(shape[0])) return shape.map(shapeText).join(", ");
  return shape.length ? shape.join("×") : "scalar";
}

// Run `fn` once after the current burst of model events (one kernel message changes several traitlets).
export function coalesce(fn) {
  let queued = false;
  return () => {
    if (queued) return;
    queued = true;
    queueMicrotask(() => { queued = false; fn(); });
  };
}

// The widget's large traitlets arrive as JSON text (a saved page gives them as objects).
export function data(model, key) {
  const value = model.get(key);
  return typeof value === "string" ? JSON.parse(value) : value || {};
}

// Show an SVG that Python drew (every label escaped there) as wide as its box allows, never wider than drawn.
export function placeSvg(container, text) {
  container.innerHTML = text;
  const svg = container.querySelector("svg");
  if (svg) {
    svg.removeAttribute("height");
    svg.setAttribute("width", "100%");
    svg.style.maxWidth = svg.getAttribute("viewBox").split(" ")[2] + "px";
  }
  return svg;
}
