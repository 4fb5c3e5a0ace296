// Draws a POI's neighbourhood (the JSON of #graph-data: nodes, and edges as
// [from, to] indexes) into svg#neighbourhood, laid out by dagre
// (static/vendor/dagre-3.1.3.min.js): relay computes no layout of its own.
// Each node links to its POI page. When done, the svg gets
// data-drawn="<nodes>".
"use strict";
(function () {
  const data = document.getElementById("graph-data");
  const svg = document.getElementById("neighbourhood");
  if (!data || !svg || typeof dagre === "undefined") return;
  const g = JSON.parse(data.textContent);
  const NS = "http://www.w3.org/2000/svg";
  const el = (name, attrs, parent) => {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (parent) parent.appendChild(e);
    return e;
  };

  const layout = new dagre.graphlib.Graph({ multigraph: false });
  layout.setGraph({ rankdir: "LR", nodesep: 10, ranksep: 48, marginx: 12, marginy: 12 });
  layout.setDefaultEdgeLabel(() => ({}));
  // Each label's size, measured in the svg itself.
  const probe = el("text", { class: "probe" }, svg);
  const root = el("g", { class: "node" }, svg);
  root.appendChild(probe);
  g.nodes.forEach((n, i) => {
    probe.textContent = n.label;
    const box = probe.getBBox();
    layout.setNode(String(i), { width: Math.ceil(box.width) + 20, height: Math.ceil(box.height) + 12 });
  });
  root.remove();
  for (const [from, to] of g.edges) {
    if (from !== to) layout.setEdge(String(from), String(to));
  }
  dagre.layout(layout);

  const defs = el("defs", {}, svg);
  const marker = el("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, defs);
  el("path", { d: "M 0 0 L 10 5 L 0 10 z" }, marker);
  const edges = el("g", { class: "edges" }, svg);
  for (const e of layout.edges()) {
    const pts = layout.edge(e).points;
    const d = pts.map((p, i) => (i === 0 ? "M" : "L") + p.x.toFixed(1) + " " + p.y.toFixed(1)).join(" ");
    const path = el("path", { class: "edge", d: d, "marker-end": "url(#arrow)" }, edges);
    path.dataset.from = g.nodes[Number(e.v)].id;
    path.dataset.to = g.nodes[Number(e.w)].id;
  }
  const nodes = el("g", { class: "nodes" }, svg);
  g.nodes.forEach((n, i) => {
    const pos = layout.node(String(i));
    const grp = el("g", { class: n.root ? "node root" : "node", transform: "translate(" + (pos.x - pos.width / 2).toFixed(1) + " " + (pos.y - pos.height / 2).toFixed(1) + ")" }, nodes);
    grp.dataset.poiId = n.id;
    const a = el("a", { href: n.url }, grp);
    el("title", {}, a).textContent = n.title;
    el("rect", { width: pos.width, height: pos.height, rx: 4 }, a);
    el("text", { x: 10, y: pos.height / 2, "dominant-baseline": "central" }, a).textContent = n.label;
  });
  const size = layout.graph();
  svg.setAttribute("width", Math.ceil(size.width));
  svg.setAttribute("height", Math.ceil(size.height));
  svg.setAttribute("viewBox", "0 0 " + Math.ceil(size.width) + " " + Math.ceil(size.height));
  svg.dataset.drawn = String(g.nodes.length);
})();
