// The side panel's table for the colour mode shown (the top 10 nodes by time, or by memory):
// a click on a row selects that node, opens the modules around it and brings it into view.

import { h } from "./dom.js";

export function mountNodeTable(graph, model, container) {
  function show() {
    const table = (model.get("tables") || {})[model.get("color_mode")];
    container.replaceChildren();
    if (!table || !table.rows.length) return;
    const selected = model.get("selected");
    container.append(
      h("div", { class: "gl-table-title" }, table.title),
      h("table", { class: "gl-top-table" },
        h("thead", {}, h("tr", {}, table.columns.map((c) => h("th", {}, c)))),
        h("tbody", {}, table.rows.map((row) => h("tr", {
          class: row.id === selected ? "gl-row-selected" : "", "data-id": row.id,
          title: "click to select this node", onclick: () => graph.show(row.id),
        }, row.cells.map((c) => h("td", {}, c)))))));
  }
  for (const key of ["tables", "color_mode", "selected"]) model.on("change:" + key, show);
  graph.onSelect(show);
  show();
}
