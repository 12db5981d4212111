// GraphView: the graph of your model; click a node to inspect it, click a module to open or close it.

import { h } from "./dom.js";
import { mountGraph } from "./graph_canvas.js";
import { mountInspector } from "./inspector.js";
import { mountNodeTable } from "./node_table.js";

function render({ model, el }) {
  const root = h("div", { class: "gradlab-widget gradlab-graphview", tabindex: "0" });
  el.append(root);
  const graph = mountGraph(model, root);
  const inspector = h("div", { class: "gl-inspector-box" },
    h("div", { class: "gl-hint" }, "Click a node to inspect it; click a module to open it; drag to pan, wheel to zoom."));
  const table = h("div", { class: "gl-table-box" });
  graph.side.append(table, inspector);
  mountNodeTable(graph, model, table);
  mountInspector(graph, model, inspector);
}

export default { render };
