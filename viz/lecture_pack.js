// The lecture pack's script: draws every figure from the inlined JSON, one after another, then wires the
// layer / head selectors and the decoding step sliders. No network: everything it reads is in this file.
(function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("pack-data").textContent);
  const CONFIG = {displaylogo: false, responsive: true};
  const TEXT = DATA.text;  // the words this script writes, in the pack's language, with {placeholders}
  const fillIn = (template, values) => template.replace(/\{(\w+)\}/g, (m, k) => (k in values ? String(values[k]) : m));

  function weights(b64) {  // base64 of little-endian uint16 steps of 1/65534 (65535: masked) -> Float32Array
    const bin = atob(b64);
    const out = new Float32Array(bin.length / 2);
    for (let i = 0; i < out.length; i++) {
      const v = bin.charCodeAt(2 * i) | (bin.charCodeAt(2 * i + 1) << 8);
      out[i] = v === 65535 ? NaN : v / 65534;
    }
    return out;
  }
  function matrix(arr, offset, rows, cols) {  // rows x cols block starting at offset, as nested arrays
    const z = [];
    for (let r = 0; r < rows; r++) z.push(Array.from(arr.subarray(offset + r * cols, offset + (r + 1) * cols)));
    return z;
  }
  function figure(id) {  // a fresh copy of a stored figure, with the shared template
    const fig = JSON.parse(JSON.stringify(DATA.figures[id]));
    fig.layout.template = DATA.template;
    return fig;
  }

  const tasks = [];  // drawing steps, run one after another so the top of the page shows first

  document.querySelectorAll("[data-figure]").forEach(div => {
    if (div.closest(".attention") || div.closest(".decoding")) return;
    tasks.push(() => { const f = figure(div.dataset.figure); return Plotly.newPlot(div, f.data, f.layout, CONFIG); });
  });

  document.querySelectorAll(".attention").forEach(box => {
    const [n, kind] = box.dataset.ref.split("/");
    const att = DATA.inputs[+n].attention[kind];
    const w = weights(att.z);
    const [L, H1, Tq, Tk] = att.shape;
    const map = (l, h) => matrix(w, (l * H1 + h) * Tq * Tk, Tq, Tk);
    const main = box.querySelector(".main"), overview = box.querySelector(".overview");
    const layer = box.querySelector("select.layer"), head = box.querySelector("select.head");
    const title = () => fillIn(+head.value === H1 - 1 ? TEXT.layer_average : TEXT.layer_head,
      {title: att.title, layer: layer.value, head: head.value});
    tasks.push(() => {
      const f = figure(main.dataset.figure);
      f.data[0].z = map(+layer.value, +head.value);
      f.data[0].customdata = att.q.map((q, i) => att.k.map((k, j) => fillIn(TEXT.cell, {i, q, j, k})));
      f.layout.title = {text: title()};
      return Plotly.newPlot(main, f.data, f.layout, CONFIG);
    });
    tasks.push(() => {
      const f = figure(overview.dataset.figure);
      f.data.forEach((trace, i) => { trace.z = map(Math.floor(i / (H1 - 1)), i % (H1 - 1)); });
      return Plotly.newPlot(overview, f.data, f.layout, CONFIG);
    });
    const update = () => Plotly.update(main, {z: [map(+layer.value, +head.value)]}, {"title.text": title()});
    layer.addEventListener("change", update);
    head.addEventListener("change", update);
  });

  document.querySelectorAll(".decoding").forEach(box => {
    const dec = DATA.inputs[+box.dataset.ref].decoding;
    const cross = weights(dec.cross), self = weights(dec.self);
    const slider = box.querySelector("input.step");
    const topk = box.querySelector(".topk"), crossDiv = box.querySelector(".cross-rows"), selfDiv = box.querySelector(".self-rows");
    // Decoder self-attention keys: all positions stay on the axis, only those written so far are named.
    const written = t => dec.ticks.map((tick, i) => (i <= t ? tick : ""));
    const topTrace = t => ({x: [dec.top[t].x], y: [dec.top[t].y], "marker.color": [dec.top[t].c], text: [dec.top[t].t]});
    function show(t) {
      const text = dec.text[t];
      box.querySelector(".step-label").textContent = fillIn(TEXT.step, {i: t + 1, n: dec.n});
      box.querySelector(".inputs").textContent = text.inputs;
      box.querySelector(".token").textContent = text.token;
      box.querySelector(".prob").textContent = text.prob;
      box.querySelector(".prev").disabled = t === 0;
      box.querySelector(".next").disabled = t === dec.n - 1;
      box.dataset.step = String(t);
      return Promise.all([
        Plotly.restyle(topk, topTrace(t)),
        Plotly.restyle(crossDiv, {z: [matrix(cross, t * dec.rows * dec.S, dec.rows, dec.S)]}),
        Plotly.update(selfDiv, {z: [matrix(self, t * dec.rows * dec.T, dec.rows, dec.T)]}, {"xaxis.ticktext": written(t)}),
      ]);
    }
    for (const [div, fill] of [[topk, null], [crossDiv, "cross"], [selfDiv, "self"]]) {
      tasks.push(() => {
        const f = figure(div.dataset.figure);
        if (fill === "cross") f.data[0].z = matrix(cross, 0, dec.rows, dec.S);
        if (fill === "self") { f.data[0].z = matrix(self, 0, dec.rows, dec.T); f.layout.xaxis.ticktext = written(0); }
        return Plotly.newPlot(div, f.data, f.layout, CONFIG);
      });
    }
    tasks.push(() => show(0));
    slider.addEventListener("input", () => show(+slider.value));
    const step = d => { slider.value = String(Math.max(0, Math.min(dec.n - 1, +slider.value + d))); show(+slider.value); };
    box.querySelector(".prev").addEventListener("click", () => step(-1));
    box.querySelector(".next").addEventListener("click", () => step(1));
  });

  // Run the drawing steps in order; the page says when it is done (and how many charts it drew).
  tasks.reduce((p, task) => p.then(() => new Promise(r => setTimeout(r, 0))).then(task), Promise.resolve())
    .then(() => { document.body.dataset.drawn = String(document.querySelectorAll(".js-plotly-plot").length); })
    .catch(err => { document.body.dataset.drawn = "error"; throw err; });
})();
