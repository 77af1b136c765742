// The lecture pack's script: draws every figure from the inlined JSON (no network), then wires the layer / head
// selectors and the decoding step sliders. Each chart has one draw promise (`ensure`): charts entering the screen are
// drawn first, the rest in page order, and a control used before its chart is drawn draws it first. PackViews (below)
// lets pack_live.js set up the sections of a typed input the same way.
const PackViews = (function () {
  "use strict";
  const DATA = JSON.parse(document.getElementById("pack-data").textContent);
  const CONFIG = {displaylogo: false, responsive: true};
  const TEXT = DATA.text;  // the words this script writes, in the pack's language, with {placeholders}
  const fillIn = (template, values) => template.replace(/\{(\w+)\}/g, (m, k) => (k in values ? String(values[k]) : m));
  const INPUTS = {};  // ref -> input data: "0", "1", ... (precomputed) and "live" (typed, set by pack_live.js)
  DATA.inputs.forEach((item, n) => { INPUTS[String(n)] = item; });

  // base64 of little-endian uint16 steps of 1/65534 (65535: masked) -> Float32Array (every browser is little-endian)
  function weights(z) {
    if (typeof z !== "string") return z;  // already numbers (a typed input)
    const steps = new Uint16Array(Uint8Array.from(atob(z), ch => ch.charCodeAt(0)).buffer);
    return Float32Array.from(steps, v => (v === 65535 ? NaN : v / 65534));
  }
  // rows x cols block of a flat array starting at offset, as nested arrays
  const matrix = (arr, offset, rows, cols) =>
    Array.from({length: rows}, (_, r) => Array.from(arr.subarray(offset + r * cols, offset + (r + 1) * cols)));
  function figure(id) {  // a fresh copy of a stored figure, with the shared template
    const fig = JSON.parse(JSON.stringify(DATA.figures[id]));
    fig.layout.template = DATA.template;
    return fig;
  }

  // -- drawing: one promise per chart --------------------------------------------------------------------------
  const drawers = new Map();  // div -> plot => Promise: draws the div with plot (Plotly.newPlot, or .react to redraw)
  const drawn = new Map();  // div -> the promise of its latest drawing
  const stale = new Set();  // drawn divs whose data changed: redrawn when they come on screen or are used
  // The div drawn (and redrawn if stale) before anything else touches it: the promise of its latest drawing.
  function ensure(div) {
    if (!drawn.has(div)) {
      drawn.set(div, Promise.resolve().then(() => drawers.get(div)(newPlot)));
    } else if (stale.has(div)) {
      stale.delete(div);
      drawn.set(div, drawn.get(div).then(() => drawers.get(div)(react)));
    }
    return drawn.get(div);
  }
  // One drawing per chart, not two (docs/pack.md): plotly's automargin draws a chart again when its labels need other
  // margins than it began with. A chart drawn again starts from its own last margins, grown by as much as its widest
  // tick label grew (measured on a canvas), never shrunk; one drawn first, from those of the last chart of its kind
  // ("in3-cross" after "in0-cross"), moved by as much as its widest label differs.
  const last = new WeakMap();  // div -> {margin: {l, r, t, b}, px: {l, b}} of its last drawing
  const lastOfKind = new Map();  // kind (and kind|upright: x labels upright or not) -> of the last chart drawn
  const kindOf = div => (div.dataset.figure || "").replace(/^(in\d+|live)-/, "");
  const ruler = document.createElement("canvas").getContext("2d");
  function labelPx(data, layout) {  // {l: the widest label of the y axes, b: of the x axes whose labels stand upright}
    const px = {l: 0, b: 0}, tpl = (layout.template && layout.template.layout) || {};
    for (const [key, ax] of Object.entries(layout)) {
      const side = !/^[xy]axis\d*$/.test(key) || !ax || ax.showticklabels === false ? null
        : key[0] === "y" ? "l" : Math.abs(ax.tickangle) === 90 ? "b" : null;
      const values = ax && (ax.ticktext || (data[0] && data[0][key[0]]));
      if (!side || !Array.isArray(values)) continue;
      const font = Object.assign({size: 12, family: "sans-serif"}, tpl.font, layout.font, ax.tickfont);
      ruler.font = `${font.size}px ${font.family}`;
      for (const v of values) {  // plotly's label text: lines split at <br>, other tags dropped, entities read
        for (const line of String(v).split(/<br\s*\/?>/i)) {
          const text = line.replace(/<[^>]*>/g, "").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
          px[side] = Math.max(px[side], ruler.measureText(text).width);
        }
      }
    }
    return px;
  }
  // Each chart's place kept at its figure's height before it is drawn (and as it is redrawn): charts drawn later, above
  // what a visitor is about to click, do not move it under the pointer.
  function reserve(div) {
    const f = DATA.figures[div.dataset.figure], h = f && f.layout && f.layout.height;
    if (h) div.style.minHeight = `${h}px`;
  }
  const sameRange = (a, b) => Array.isArray(a) && a.length === b.length && a.every((v, i) => Math.abs(v - b[i]) < 1e-9);
  const drawWith = plot => (div, data, layout, config) => {
    // a sibling: the last chart of its kind whose x labels stand as this chart's, else any other of its kind (which
    // then says nothing of the bottom margin: flat labels need their height there, upright ones their width)
    const px = labelPx(data, layout), kind = kindOf(div), upright = `${kind}|${px.b > 0}`, again = last.get(div);
    const was = again || lastOfKind.get(upright) || lastOfKind.get(kind), own = layout.margin || {};
    if (was) {  // a sibling's margins move both ways; the chart's own never shrink
      const move = k => (again ? Math.max(0, px[k] - was.px[k]) : px[k] - was.px[k]);
      const same = again || !px.b === !was.px.b;
      const grow = {l: move("l"), r: 0, t: 0, ...(same ? {b: move("b")} : {})};
      layout.margin = Object.assign({}, own, Object.fromEntries(Object.entries(grow).map(([k, g]) =>
        [k, Math.max(Math.ceil(was.margin[k] + g), own[k] || 0)])));
    }
    // Plotly.react keeps the range of an axis tied to another's scale when a shorter one is asked (a typed input with
    // fewer tokens than the one before: a grey band beside its map): such a range is set again.
    const asked = Object.entries(layout).filter(([key, ax]) => /^[xy]axis\d*$/.test(key) && Array.isArray(ax?.range))
      .map(([key, ax]) => [`${key}.range`, ax.range.slice()]);
    return plot(div, data, layout, config).then(gd => {
      const kept = asked.filter(([name, range]) => {
        const ax = div._fullLayout[name.split(".")[0]];
        return ax && !sameRange(ax.range, range);
      });
      return kept.length ? Plotly.relayout(div, Object.fromEntries(kept)) : gd;
    }).then(gd => {
      const s = div._fullLayout && div._fullLayout._size;
      if (!s) return gd;
      const record = {margin: {l: s.l, r: s.r, t: s.t, b: s.b},
        px: again ? {l: Math.max(px.l, again.px.l), b: Math.max(px.b, again.px.b)} : px};
      last.set(div, record);
      lastOfKind.set(kind, record);
      lastOfKind.set(upright, record);
      return gd;
    });
  };
  const newPlot = drawWith((...a) => Plotly.newPlot(...a)), react = drawWith((...a) => Plotly.react(...a));
  const onScreen = div => {  // on screen or within 200 px of it
    const r = div.getBoundingClientRect();
    return r.bottom > -200 && r.top < window.innerHeight + 200 && r.width > 0;
  };
  // The charts inside root take their (changed) data: those on screen are redrawn now with Plotly.react (it keeps
  // each chart's elements, much faster than drawing anew) or drawn, the others when they come on screen or are used.
  // Boxes reset their controls first (box.reset, set by the setup functions below). Resolves to the charts redrawn.
  function refresh(root) {
    root.querySelectorAll(".attention, .decoding").forEach(box => box.reset());
    const divs = charts(root);
    divs.forEach(reserve);
    divs.forEach(div => { if (drawn.has(div)) stale.add(div); });
    const now = divs.filter(onScreen);  // one never drawn and off screen is drawn when it comes on screen (seen)
    return Promise.all(now.map(ensure)).then(() => now);
  }
  const seen = new IntersectionObserver(entries => entries.forEach(e => { if (e.isIntersecting) ensure(e.target); }),
    {rootMargin: "200px"});
  const register = (div, draw) => { drawers.set(div, draw); seen.observe(div); };

  // The div drawn from its stored figure, edit(f) giving it this input's data
  const drawFigure = (div, edit) => register(div, plot => {
    const f = figure(div.dataset.figure);
    edit(f);
    return plot(div, f.data, f.layout, CONFIG);
  });

  function setupAttention(box) {
    const [n, kind] = box.dataset.ref.split("/");
    let att, w, L, H1, Tq, Tk;  // this input's data: read again by box.reset (a typed input changes it)
    const main = box.querySelector(".main"), layer = box.querySelector("select.layer");
    const head = box.querySelector("select.head");
    box.reset = () => {
      att = INPUTS[n].attention[kind];
      w = weights(att.z);
      [L, H1, Tq, Tk] = att.shape;
      layer.value = String(L - 1);
      head.value = String(H1 - 1);
    };
    box.reset();
    const map = (l, h) => matrix(w, (l * H1 + h) * Tq * Tk, Tq, Tk);
    const title = () => fillIn(+head.value === H1 - 1 ? TEXT.layer_average : TEXT.layer_head,
      {title: att.title, layer: layer.value, head: head.value});
    drawFigure(main, f => {
      f.data[0].z = map(+layer.value, +head.value);
      f.data[0].customdata = att.q.map((q, i) => att.k.map((k, j) => fillIn(TEXT.cell, {i, q, j, k})));
      f.layout.title = {...f.layout.title, text: title()};
    });
    // the overview, one trace: the tiles of viz/overview_figs.tile, a blank row and column between
    drawFigure(box.querySelector(".overview"), f => {
      const H = H1 - 1, z = [];
      for (let l = 0; l < L; l++) {
        if (l) z.push(new Array(H * (Tk + 1) - 1).fill(NaN));
        const maps = Array.from({length: H}, (_, h) => map(l, h));
        for (let i = 0; i < Tq; i++) z.push(maps.flatMap((m, h) => (h ? [NaN, ...m[i]] : m[i])));
      }
      f.data[0].z = z;
    });
    const update = () => ensure(main).then(() =>
      Plotly.update(main, {z: [map(+layer.value, +head.value)]}, {"title.text": title()}));
    layer.addEventListener("change", update);
    head.addEventListener("change", update);
  }

  function setupDecoding(box) {
    let dec, cross, self;  // this input's data: read again by box.reset (a typed input changes it)
    const slider = box.querySelector("input.step"), el = sel => box.querySelector(sel);
    const topk = el(".topk"), crossDiv = el(".cross-rows"), selfDiv = el(".self-rows");
    // Decoder self-attention keys: all positions stay on the axis, only those written so far are named (the figure's
    // own labels, at its tickvals: every position, or every n-th of a long output)
    const written = t => {
      const axis = DATA.figures[selfDiv.dataset.figure].layout.xaxis;
      return axis.ticktext.map((tick, i) => (axis.tickvals[i] <= t ? tick : ""));
    };
    // Each chart's data at step t, as Plotly.update takes it: [trace changes, layout changes]
    const atStep = new Map([
      [topk, t => [{x: [dec.top[t].x], y: [dec.top[t].y], "marker.color": [dec.top[t].c], text: [dec.top[t].t]}, {}]],
      [crossDiv, t => [{z: [matrix(cross, t * dec.rows * dec.S, dec.rows, dec.S)]}, {}]],
      [selfDiv, t => [{z: [matrix(self, t * dec.rows * dec.T, dec.rows, dec.T)]}, {"xaxis.ticktext": written(t)}]],
    ]);
    const put = (obj, path, value) => {  // obj["a.b"] = value, as Plotly reads "a.b"
      const keys = path.split("."), last = keys.pop();
      keys.reduce((o, k) => (o[k] = {...o[k]}), obj)[last] = value;
    };
    function words(t) {  // step t's text and controls: written at once, before any chart
      el(".step-label").textContent = fillIn(TEXT.step, {i: t + 1, n: dec.n});
      for (const k of ["inputs", "token", "prob"]) el(`.${k}`).textContent = dec.text[t][k];
      el(".prev").disabled = t === 0;
      el(".next").disabled = t === dec.n - 1;
      box.dataset.step = String(t);
    }
    const charts = [...atStep.keys()], at = new Map();  // chart -> the step it shows (of this input's data)
    let gen = 0;  // counts box.reset: a drawing begun before the data changed does not count
    function settle() {  // dataset.shown: the step all three charts show, once they agree and none waits to be redrawn
      const steps = charts.map(div => at.get(div));
      if (steps[0] !== undefined && steps.every(s => s === steps[0]) && !charts.some(div => stale.has(div))) {
        box.dataset.shown = String(steps[0]);
      }
    }
    // A chart drawn shows the slider's step at the time it is drawn; it is recorded as showing it once drawn, if the
    // data is still the same
    charts.forEach(div => register(div, plot => {
      const t = +slider.value, g = gen, f = figure(div.dataset.figure), [trace, layout] = atStep.get(div)(t);
      Object.entries(trace).forEach(([k, v]) => put(f.data[0], k, v[0]));
      Object.entries(layout).forEach(([k, v]) => put(f.layout, k, v));
      return plot(div, f.data, f.layout, CONFIG).then(() => { if (g === gen) { at.set(div, t); settle(); } });
    }));
    box.reset = () => {
      dec = INPUTS[box.dataset.ref].decoding;
      cross = weights(dec.cross);
      self = weights(dec.self);
      slider.max = String(dec.n - 1);
      slider.value = "0";
      words(0);
      gen += 1;  // the charts' data changed: what they showed no longer counts
      at.clear();
      delete box.dataset.shown;
    };
    function show(t) {  // each chart moved to step t in place
      words(t);
      return Promise.all(charts.map(ensure)).then(() => {
        if (+slider.value !== t) return null;  // a later step was asked for meanwhile: that one draws
        const g = gen;
        return Promise.all(charts.filter(div => at.get(div) !== t)
          .map(div => Plotly.update(div, ...atStep.get(div)(t)).then(() => { if (g === gen) at.set(div, t); })));
      }).then(settle);
    }
    box.reset();
    slider.addEventListener("input", () => show(+slider.value));
    const step = d => {
      slider.value = String(Math.max(0, Math.min(dec.n - 1, +slider.value + d)));
      return show(+slider.value);
    };
    el(".prev").addEventListener("click", () => step(-1));
    el(".next").addEventListener("click", () => step(1));
  }

  // Every chart inside `root`, set up; returns them in page order.
  function setup(root) {
    [...root.querySelectorAll("[data-figure]")].filter(div => !div.closest(".attention, .decoding"))
      .forEach(div => drawFigure(div, () => {}));
    root.querySelectorAll(".attention").forEach(setupAttention);
    root.querySelectorAll(".decoding").forEach(setupDecoding);
    const divs = charts(root);
    divs.forEach(reserve);
    return divs;
  }
  // The charts inside root that this script draws, in page order
  function charts(root) { return [...root.querySelectorAll(".plot")].filter(div => drawers.has(div)); }

  const staticRoot = document.getElementById("static") || document.body;
  // Work that comes before the page's own charts not on screen: the model's runs in this page and their charts
  // (pack_live.js holds them here), so that a student's input does not share the page with them.
  let held = Promise.resolve();
  const hold = work => { held = Promise.all([held, work]).catch(() => {}); };
  // Draw the rest in page order, one at a time with a pause between, so the page stays responsive.
  const pause = () => new Promise(r => setTimeout(r, 0));
  setup(staticRoot).reduce((p, div) => p.then(() => held).then(pause).then(() => ensure(div)), Promise.resolve())
    .then(() => { document.body.dataset.drawn = String(staticRoot.querySelectorAll(".js-plotly-plot").length); })
    .catch(err => { document.body.dataset.drawn = "error"; throw err; });

  // Every chart inside root drawn with its latest data (tests, benchmarks, printing).
  const flush = root => Promise.all(charts(root).map(ensure));
  // One chart drawn again with its data (Plotly.react when it was drawn before)
  const redraw = div => { if (drawn.has(div)) stale.add(div); return ensure(div); };
  return {DATA, TEXT, INPUTS, fillIn, matrix, figure, setup, ensure, refresh, flush, charts, redraw, hold, onScreen};
})();
