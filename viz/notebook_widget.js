// The notebook widget's front end (viz/notebook.py): one ES module, no imports, no request outside the notebook.
// It draws what Python computed (model.get("data")): one head's map with hover, all heads of a layer, every
// layer x head, and the greedy steps; clicking a head in the two overviews selects its layer and head.
// The selection (view, kind, layer, head; head -1 = the average of the heads) is synced with Python both ways.

const CSS = `
.tv-root { font: 13px sans-serif; color: #222; }
.tv-bar { display: flex; gap: 6px; align-items: center; flex-wrap: wrap; margin-bottom: 6px; }
.tv-bar button { border: 1px solid #bbb; background: #f6f6f6; border-radius: 4px; padding: 2px 8px; cursor: pointer; }
.tv-bar button[aria-pressed="true"] { background: #1f4e99; color: #fff; border-color: #1f4e99; }
.tv-tip { position: absolute; pointer-events: none; background: #fff; border: 1px solid #999; padding: 3px 6px;
  border-radius: 3px; white-space: pre; display: none; z-index: 10; }
.tv-plot { position: relative; }
.tv-plot svg text { font-size: 12px; fill: #222; }
.tv-pick { cursor: pointer; }
.tv-pick:hover { outline: 2px solid #d62728; }
`;

const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);

function colourOf(scale) {  // [[pos, "rgb(r,g,b)"], ...] -> v in 0..1 -> "rgb(...)", interpolated as plotly does
  const stops = scale.map(([p, c]) => [p, c.slice(c.indexOf("(") + 1, -1).split(",").map(Number)]);
  return (v) => {
    v = Math.min(1, Math.max(0, v));
    for (let i = 1; i < stops.length; i++) {
      const [p0, a] = stops[i - 1], [p1, b] = stops[i];
      if (v <= p1) {
        const t = p1 === p0 ? 0 : (v - p0) / (p1 - p0);
        return `rgb(${a.map((x, j) => Math.round(x + (b[j] - x) * t)).join(",")})`;
      }
    }
    return `rgb(${stops[stops.length - 1][1].join(",")})`;
  };
}

function mapOf(weights, layer, head) {  // (H, Tq, Tk) of one layer -> one head's map or the mean of the heads
  const heads = weights[layer];
  if (head >= 0) return heads[head];
  return heads[0].map((row, i) => row.map((_, j) => {
    let s = 0, n = 0;
    for (const h of heads) { if (h[i][j] !== null) { s += h[i][j]; n++; } }
    return n ? s / n : null;
  }));
}

function cells(m, x0, y0, cell, colour, masked, causal, attrs = "") {  // one map's rects as one SVG string
  let out = "";
  for (let i = 0; i < m.length; i++) {
    for (let j = 0; j < m[i].length; j++) {
      const v = m[i][j];
      const fill = v === null || (causal && j > i) ? masked : colour(v);
      out += `<rect x="${x0 + j * cell}" y="${y0 + i * cell}" width="${cell}" height="${cell}" fill="${fill}" data-i="${i}" data-j="${j}"${attrs}/>`;
    }
  }
  return out;
}

function fullMap(k, m, labels, title, colour, masked) {  // one map with its token labels: [svg, cell size, left, top]
  const tq = m.length, tk = m[0] ? m[0].length : 0;
  const cell = Math.max(8, Math.min(30, Math.floor(520 / Math.max(tq, tk, 1))));
  const left = 14 + 7 * Math.max(1, ...k.rows.map((r) => r.length)), top = 28;
  const bottom = 14 + 7 * Math.max(1, ...k.keys.map((t) => t.length));
  const rows = k.rows.map((r, i) => `<text x="${left - 4}" y="${top + (i + 0.7) * cell}" text-anchor="end">${esc(r)}</text>`).join("");
  const keys = k.keys.map((t, j) => `<text transform="translate(${left + (j + 0.65) * cell},${top + tq * cell + 6}) rotate(90)">${esc(t)}</text>`).join("");
  const svg = `<svg width="${left + tk * cell + 12}" height="${top + tq * cell + bottom}"><text x="4" y="18" style="font-size:14px">${esc(title)}</text>`
    + cells(m, left, top, cell, colour, masked, k.causal) + rows + keys + "</svg>";
  return svg;
}

function thumbs(k, layers, colour, masked, labels) {  // heads (or layers x heads) as small clickable maps
  const tq = k.rows.length, tk = k.keys.length, H = k.weights[0].length;
  const cell = Math.max(1, Math.min(8, Math.floor(90 / Math.max(tq, tk, 1))));
  const w = tk * cell, h = tq * cell, gap = 10, left = layers.length > 1 ? 64 : 4, top = 18;
  let out = "";
  layers.forEach((layer, r) => {
    if (layers.length > 1) out += `<text x="${left - 6}" y="${top + r * (h + gap) + h / 2}" text-anchor="end">${esc(labels.layer.replace("{i}", layer))}</text>`;
    for (let head = 0; head < H; head++) {
      const x = left + head * (w + gap), y = top + r * (h + gap);
      if (r === 0) out += `<text x="${x}" y="12">${esc(labels.head_n.replace("{h}", head))}</text>`;
      out += `<g class="tv-pick" data-layer="${layer}" data-head="${head}">`
        + cells(k.weights[layer][head], x, y, cell, colour, masked, k.causal) + "</g>";
    }
  });
  return `<svg width="${left + H * (w + gap)}" height="${top + layers.length * (h + gap)}">${out}</svg>`;
}

function render({ model, el }) {
  const style = document.createElement("style");
  style.textContent = CSS;
  const root = document.createElement("div");
  root.className = "tv-root";
  el.append(style, root);

  const draw = () => {
    const t0 = performance.now();
    const data = model.get("data") || {};
    const kinds = data.kinds || {};
    const L = data.labels || {};
    const view = model.get("view"), kind = kinds[model.get("kind")] ? model.get("kind") : Object.keys(kinds)[0];
    const k = kinds[kind];
    const colour = colourOf(data.colours || [[0, "rgb(255,255,255)"], [1, "rgb(8,48,107)"]]);
    if (!k) { root.textContent = ""; return; }
    const nLayers = k.weights.length, nHeads = k.weights[0].length;
    const layer = Math.min(model.get("layer"), nLayers - 1), head = Math.min(model.get("head"), nHeads - 1);
    const views = ["head", "heads", "model", ...(data.decoding ? ["decoding"] : [])];
    const names = { head: L.head, heads: L.heads, model: L.model, decoding: L.decoding };
    let bar = views.map((v) => `<button data-view="${v}" aria-pressed="${v === view}">${esc(names[v])}</button>`).join("");
    bar += `<select data-pick="kind">${Object.keys(kinds).map((n) => `<option value="${n}"${n === kind ? " selected" : ""}>${esc(kinds[n].title)}</option>`).join("")}</select>`;
    bar += `<select data-pick="layer">${[...Array(nLayers).keys()].map((i) => `<option value="${i}"${i === layer ? " selected" : ""}>${esc(L.layer.replace("{i}", i))}</option>`).join("")}</select>`;
    bar += `<select data-pick="head"><option value="-1"${head < 0 ? " selected" : ""}>${esc(L.average)}</option>${[...Array(nHeads).keys()].map((h) => `<option value="${h}"${h === head ? " selected" : ""}>${esc(L.head_n.replace("{h}", h))}</option>`).join("")}</select>`;
    let plot = "", shown = null;
    const which = head < 0 ? L.average : L.head_n.replace("{h}", head);
    if (view === "heads") plot = `<div>${esc(L.pick)}</div>` + thumbs(k, [layer], colour, data.masked, L);
    else if (view === "model") plot = `<div>${esc(L.pick)}</div>` + thumbs(k, [...Array(nLayers).keys()], colour, data.masked, L);
    else {
      shown = view === "decoding" && data.decoding ? data.decoding : k;
      const lay = Math.min(layer, shown.weights.length - 1);
      plot = fullMap(shown, mapOf(shown.weights, lay, head), L, `${shown.title}, ${L.layer.replace("{i}", lay)}, ${which}`, colour, data.masked);
      shown = { ...shown, map: mapOf(shown.weights, lay, head) };
    }
    root.innerHTML = `<div class="tv-bar">${bar}</div><div class="tv-plot">${plot}<div class="tv-tip"></div></div>`;
    root.dataset.view = view;
    root.dataset.layer = layer;
    root.dataset.head = head;
    root.__shown = shown;
    root.dataset.drawMs = (performance.now() - t0).toFixed(1);  // a benchmark reads how long the drawing took
    root.dataset.draws = String(Number(root.dataset.draws || 0) + 1);
  };

  const set = (changes) => { for (const [name, v] of Object.entries(changes)) model.set(name, v); model.save_changes(); };
  root.addEventListener("click", (e) => {
    const button = e.target.closest("button[data-view]");
    if (button) return set({ view: button.dataset.view });
    const pick = e.target.closest(".tv-pick");
    if (pick) set({ layer: Number(pick.dataset.layer), head: Number(pick.dataset.head), view: "head" });
  });
  root.addEventListener("change", (e) => {
    const which = e.target.dataset && e.target.dataset.pick;
    if (which) set({ [which]: which === "kind" ? e.target.value : Number(e.target.value) });
  });
  root.addEventListener("mousemove", (e) => {
    const tip = root.querySelector(".tv-tip"), shown = root.__shown, rect = e.target.closest("rect[data-i]");
    if (!tip) return;
    if (!shown || !rect || e.target.closest(".tv-pick")) { tip.style.display = "none"; return; }
    const i = Number(rect.dataset.i), j = Number(rect.dataset.j), v = shown.map[i][j];
    const L = (model.get("data") || {}).labels || {};
    tip.textContent = `${L.query} ${i}: ${shown.rows[i]}\n${L.key} ${j}: ${shown.keys[j]}\n${L.weight} ${v === null ? "–" : v.toFixed(3)}`;
    const box = root.querySelector(".tv-plot").getBoundingClientRect();
    tip.style.left = `${e.clientX - box.left + 12}px`;
    tip.style.top = `${e.clientY - box.top + 12}px`;
    tip.style.display = "block";
  });
  for (const name of ["data", "view", "kind", "layer", "head"]) model.on(`change:${name}`, draw);
  draw();
  return () => { for (const name of ["data", "view", "kind", "layer", "head"]) model.off(`change:${name}`, draw); };
}

export default { render };
