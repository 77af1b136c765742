// The lecture pack's text box: runs the typed input through the model's own graphs in this page (pack_net.js, the input
// check and tokenizer of pack_text.js) and draws every view the pack shows for a precomputed input, for it: the first
// input's section is the pattern (its figures re-labelled with the typed input's tokens), PackViews draws and wires it.
(function () {
  "use strict";
  const V = PackViews, W = V.TEXT.live, fillIn = V.fillIn;
  const spec = JSON.parse(document.getElementById("pack-model").textContent);
  const c = spec.config, H = c.n_heads, opening = window.PackOpening;  // the runtime, graphs and tokenizers, started
  // as the page was read (pack/live.py live_scripts); every run waits for them
  const $ = sel => document.querySelector(sel), box = $('[data-testid="pack-input"]'), status = $(".live-status");
  const out = $('[data-testid="pack-output"]'), messages = $(".live-messages");
  const section = document.getElementById("live"), views = document.getElementById("live-views");
  let src = null, tgt = null, runs = 0;

  // -- tokens as the pack shows them (viz/tokens.py; G: viz/attention_figs.geometry_rules, the app's own tables) ------
  const G = V.DATA.geometry, {plain, shown, labelPx, tokenTicks, setTicks, geometry, range} = PackLayout(G);
  const hover = t => (t === " " ? W.space : shown(t, G.hover_chars));
  const label = (token, i) => fillIn(G.label, {i, token}), labels = tokens => tokens.map(hover).map(label);
  const line = tokens => tokens.map(t => plain(t)).join(" ");
  // Rows by the app's one convention (viz/tokens.Rows, its templates G.row and G.label): a decoder row is labelled with
  // the token it writes (the decoder input shifted by one, the last row the model's own next token, `next`: the
  // graph's first candidate), its hover naming the input that wrote it
  const rowHovers = rows => rows.tokens.map((t, i) =>
    (rows.inputs ? fillIn(G.row, {input: hover(rows.inputs[i]), token: hover(t)}) : hover(t)));
  const writtenRows = (inputs, next) => ({tokens: [...inputs.slice(1), tgt.token(next)], inputs});
  const pct = p => (100 * p).toFixed(1) + "%";

  // -- the typed input's data, in the form DATA.inputs holds (numbers instead of base64) ----------------------------
  // z: the graphs' (L, H + 1, Tq, Tk), the head average last, masked cells NaN (pack/onnx_graphs.py _view)
  function attentionItem(kind, z, rows, k) {
    const Tq = rows.tokens.length, shape = [z.length / ((H + 1) * Tq * k.length), H + 1, Tq, k.length];
    const title = V.DATA.inputs[0].attention[kind].title;
    return {shape, z, title, q: rowHovers(rows), k: k.map(t => shown(t, G.hover_chars))};
  }
  function decoding(r, S, inputs) {  // each step's rows (T, L * H, S) and (T, L * H, T), its top 5, its words
    const T = r.steps.length, rows = c.n_decoder_layers * H;
    const cross = new Float32Array(T * rows * S), self = new Float32Array(T * rows * T).fill(NaN), top = [], text = [];
    r.steps.forEach((s, t) => {  // the step's rows (L * H, S) and (L * H, t + 1)
      cross.set(s.rows.cross, t * rows * S);
      for (let j = 0; j < rows; j++) self.set(s.rows.self.subarray(j * (t + 1), (j + 1) * (t + 1)), (t * rows + j) * T);
      const toks = s.top.map(tgt.token), chosen = s.top.indexOf(s.id);
      top.push({x: s.topProbs.map(p => Math.round(p * 1e5) / 1e5), y: toks.map((tk, i) => `${i + 1}. ${shown(tk)}`),
        c: toks.map((_, i) => (i === chosen ? "#d62728" : "#1f77b4")), t: s.topProbs.map(pct)});
      text.push({inputs: line(inputs.slice(0, t + 1)), token: plain(tgt.token(s.id)), prob: pct(s.prob)});
    });
    return {n: T, rows, S, T, cross, self, top, text, stop: r.stop === "eos" ? "</s>" : W.length_limit};
  }

  // -- figures: the first input's, re-labelled and laid out by the app's rules (DATA.geometry) ----------------------
  function heatmap(f, rows, k) {  // viz/attention_figs.attention_heatmap's layout for these rows and keys
    const q = rows.tokens, nk = k.length, legend = f.data.length > 1 && nk > 1;  // a masked cell's mark
    const x = labels(k), y = rowHovers(rows).map(label), geo = geometry(q, k, legend ? G.legend_px : 0), L = f.layout;
    Object.assign(f.data[0], {x, y});
    if (f.data.length > 1) f.data = [f.data[0], ...(legend ? [Object.assign(f.data[1], {x: [x[1]], y: [y[0]]})] : [])];
    setTicks(L.xaxis, geo.x);
    setTicks(L.yaxis, geo.y);
    Object.assign(L.xaxis, {range: [-0.5, nk - 0.5], scaleratio: geo.ratio});
    L.yaxis.range = [q.length - 0.5, -0.5];
    const top = G.title_px + (legend ? G.legend_px : 0);
    Object.assign(L, {height: geo.height, showlegend: legend, margin: {...L.margin, t: top}});
    if (L.width) {  // snug (viz/attention_figs.snug_width): the plot, its labels and colour bar; not under the title
      const left = Math.max(0, ...geo.y.vals.map(i => labelPx(plain(q[i])))) + G.axis_title_px + 16;
      const snug = Math.floor(Math.min(G.max_width + left + G.colorbar_px,
        left + nk * geo.cell * geo.ratio + G.colorbar_px + 20));
      L.width = Math.floor(Math.max(snug, L.meta.least_width[legend ? 1 : 0]));  // never narrower than title, legend
    }
  }
  // viz/overview_figs.layer_head_overview for Tq x Tk tiles: rows and columns named, a blank one between tiles (its
  // annotations: the H head titles, then the L layer titles; its shapes: the H - 1 blank columns, then the rows); its
  // title the first input's (every tile a whole map: no block note)
  function overview(f, Tq, Tk) {
    const notes = f.layout.annotations, L = notes.length - H, tiles = (n, T, name) => range(n).flatMap(a =>
      [...(a ? [" ".repeat(a)] : []), ...range(T).map(i => name(a, i))]);
    const rows = tiles(L, Tq, (layer, i) => fillIn(W.thumb_row, {layer, i}));
    const cols = tiles(H, Tk, (h, i) => fillIn(W.thumb_col, {h, i}));
    Object.assign(f.data[0], {x: cols, y: rows});
    f.layout.yaxis.range = [rows.length - 0.5, -0.5];
    notes.forEach((a, n) => {
      if (n < H) a.x = n * (Tk + 1) + (Tk - 1) / 2; else a.y = (n - H) * (Tq + 1) + (Tq - 1) / 2;
    });
    f.layout.shapes.forEach((s, n) => {
      const [key, g] = n < H - 1 ? ["x", (n + 1) * (Tk + 1) - 1] : ["y", (n - H + 2) * (Tq + 1) - 1];
      Object.assign(s, {[key + "0"]: g - 0.5, [key + "1"]: g + 0.5});
    });
    const every = Math.ceil(Tk / f.layout.meta.tile_labels);  // viz/overview_figs.numbered_tiles
    const vals = range(H).flatMap(h => range(Tk).filter(p => p % every === 0).map(p => h * (Tk + 1) + p));
    const ticktext = vals.map(v => String(v % (Tk + 1)));
    Object.assign(f.layout.xaxis, {range: [-0.5, cols.length - 0.5], tickvals: vals, ticktext});
  }
  const norms = (a, T) => V.matrix(a, 0, T, a.length / T).map(row => Math.hypot(...row));  // each row's length
  function figures(r, srcTokens, tgtTokens, inputs, maps) {
    const F = V.DATA.figures, enc = r.enc || r, make = (id, edit) => {
      if (!F["in0-" + id]) return;
      const f = V.figure("in0-" + id);
      delete f.layout.template;
      edit(f);
      F["live-" + id] = f;
    };
    for (const [kind, [, rows, k]] of Object.entries(maps)) {
      make(kind, f => heatmap(f, rows, k));
      make(kind + "-all", f => overview(f, rows.tokens.length, k.length));
    }
    // a token axis as wide as the builder planned it (its figure's meta.token_axis_px: decoding_figs, positional_figs)
    const along = (f, tokens) =>
      setTicks(f.layout.xaxis, tokenTicks(tokens, f.layout.meta.token_axis_px / Math.max(tokens.length, 1)));
    const keys = inputs.slice(0, r.steps.length);  // <s> y_1 .. y_{T-1}: the keys of the last step
    make("cross-rows", f => { f.data[0].x = labels(srcTokens); along(f, srcTokens); });
    make("self-rows", f => { f.data[0].x = labels(keys); along(f, keys); });
    make("topk", () => {});
    make("pe-rows", f => {
      const S = srcTokens.length, d = enc.pe.length / S, bound = Math.max(1, ...Array.from(enc.pe, Math.abs));
      Object.assign(f.data[0], {z: V.matrix(enc.pe, 0, S, d), zmin: -bound, zmax: bound});
      setTicks(f.layout.yaxis, {vals: range(S), text: srcTokens.map(t => shown(t)).map(label)});
      const h = f.layout.meta.height_rule;  // viz/positional_figs.pe_matrix's
      f.layout.height = Math.min(h.max_px, Math.max(h.min_px, h.row_px * S + h.chrome_px));
    });
    for (const [side, toks, e] of [["source", srcTokens, enc], ["target", tgtTokens, r]]) {
      make("pe-" + side, f => {
        Object.assign(f.data[0], {x: range(toks.length), y: norms(e.emb, toks.length)});
        Object.assign(f.data[1], {x: range(toks.length), y: norms(e.pe, toks.length)});
        along(f, toks);
      });
    }
  }

  // -- the section: the first input's, renamed (pack/live.py, live_template); made once, then filled in for each typed
  // input
  const newSection = () => document.getElementById("live-template").content.firstElementChild.cloneNode(true);
  // The app's checks beyond the vocabulary's (tasks.cards.pack_checks): the card's trained lengths, the task's grammar
  const checks = spec.checks || {};
  function moreWarnings(text) {
    const out = [], t = checks.trained, g = checks.grammar, e = checks.ends_with;
    const n = t ? src.symbols(text).length : 0;  // model.text.inputs.trained_range_warning
    if (n && (n < t.low || n > t.high)) out.push(fillIn(W.trained, {n}));
    if (g) {  // tasks.Task.outside_patterns: every word the task's (punctuation off its ends), in none of its patterns
      const ends = new RegExp(g.ends, "g"), lower = g.lowercase ? text.toLowerCase() : text;
      const words = lower.split(/\s+/).map(w => w.replace(ends, "")).filter(Boolean);
      const found = words.map(w => g.classes[w]).filter(k => k !== null).join(" ");
      const known = words.length && words.every(w => Object.hasOwn(g.classes, w));
      if (known && !g.patterns.includes(found)) out.push(W.guess);
    }
    if (e && text.trim() && !text.trimEnd().endsWith(e.end)) out.push(W.ends_with);  // tasks.cards.format_warning
    return out;
  }
  const say = (textContent, className) =>
    messages.appendChild(Object.assign(document.createElement("p"), {className, textContent}));

  // The model run on the checked input: the item the views draw (in the form DATA.inputs holds), its figures, and its
  // section's words. An encoder-decoder: encoder self, decoder self and cross-attention, and the decoding steps; a
  // decoder-only or encoder-only model: the self-attention of its one sequence, as the app's Attention page
  async function runModel(net, check, giveUp, t0) {
    const pair = !c.shape || c.shape === "encoder-decoder", decoder = c.shape !== "encoder-only";
    // model/text/inputs: prepare_source (the text's ids, then </s>: BERT's [SEP]) or, decoder-only, prepare_sequence
    const ids = pair || !decoder ? [...check.ids, src.eos, ...src.after]
      : [...src.prefix, ...check.content].slice(0, c.max_len);
    const r = await PackNet.run(net, ids, giveUp);
    if (!r) return null;  // given way
    section.dataset.modelMs = (performance.now() - t0).toFixed(1);  // typed text to numbers: the model's share
    const seq = r.ids.map((pair ? tgt : src).token), srcTokens = pair ? ids.map(src.token) : seq, N = seq.length;
    const rows = decoder ? writtenRows(seq, r.top[0]) : {tokens: seq, inputs: null};
    const kind = decoder ? "decoder_self" : "encoder_self", own = {tokens: srcTokens, inputs: null};
    const maps = !pair ? {[kind]: [r.maps[kind], rows, seq]} : {encoder_self: [r.enc.maps.encoder_self, own, srcTokens],
      decoder_self: [r.maps.decoder_self, rows, seq], cross: [r.maps.cross, rows, srcTokens]};
    const inputs = pair ? [tgt.token(c.bos_id), ...r.out.map(tgt.token)] : [];
    const item = {attention: {}, decoding: pair ? decoding(r, srcTokens.length, inputs) : null};
    for (const [k, [m, rw, keys]] of Object.entries(maps)) item.attention[k] = attentionItem(k, m, rw, keys);
    figures(r, srcTokens, seq, inputs, maps);
    const output = decoder ? tgt.detokenize(r.out.map(tgt.token)) : "";
    // Plain numbers of the run, for tests and benchmarks: what model.capture and greedy_decode give, row-major (the
    // maps as the views hold them: (L, H + 1, Tq, Tk))
    const result = () => ({warnings: check.warnings, ids: r.ids, source_ids: ids, target_ids: r.ids, output_ids: r.out,
      stop: r.stop, prompt: r.prompt, log_probs: r.logProbs && Array.from(r.logProbs),
      ...Object.fromEntries(Object.entries(maps).map(([k, [m]]) => [k, Array.from(m)])),
      steps: r.steps.map(s => ({top: s.top, top_probs: s.topProbs, prob: s.prob,
        ...(s.rows && {cross: Array.from(s.rows.cross), self: Array.from(s.rows.self)})}))});
    const fill = s => {
      s.querySelector("h2").textContent = fillIn(W.heading, {text: check.text});
      const d = s.querySelector(".decoding");
      const said = {output: output || "∅", stop: pair && item.decoding.stop};
      if (d) d.querySelector(".output-line").textContent = fillIn(W.output_line, said);
      if (pair) {
        [srcTokens, seq].forEach((tokens, i) => { s.querySelectorAll("h2 + p code")[i].textContent = line(tokens); });
        return;
      }
      s.querySelector(".sequence .caption").textContent = decoder
        ? fillIn(W.sequence, {prompt: r.prompt, written: N - r.prompt, text: output}) : fillIn(W.encoded, {n: N});
      s.querySelector(".sequence code").textContent = line(seq);
    };
    return {item, output, steps: r.steps.length, result, fill};
  }

  // One run at a time; `typed` false: the first example run at load (not counted in dataset.drawn).
  // giveUp: given for the page's own warm-up run, which gives way to a typed input (the model stops between two steps)
  async function run(t0, text, n, giveUp) {
    const [net, vocabs] = await opening;
    ({source: src, target: tgt} = vocabs);
    messages.replaceChildren();
    const check = PackText.checkText(text, src, c.text_room, W);  // model.text.inputs.text_room
    if (!check.errors.length) check.warnings.push(...moreWarnings(check.text));
    check.warnings.forEach(w => say(w, "warning"));
    if (check.errors.length) {  // nothing runs; the box keeps what was typed
      check.errors.forEach(e => say(e, "warning error"));
      status.textContent = "";
      section.dataset.drawn = String(n);
      return;
    }
    const made = await runModel(net, check, giveUp, t0);
    if (!made) return null;  // given way
    V.INPUTS.live = made.item;
    out.textContent = made.output;
    window.packResult = made.result;
    const fresh = !views.firstElementChild, s = fresh ? views.appendChild(newSection()) : views.firstElementChild;
    made.fill(s);
    // a new section's charts set up, those on screen drawn (the rest as they come on screen); else the charts there
    // redrawn with the new data (Plotly.react)
    const now = fresh ? V.setup(s).filter((div, i) => i === 0 || V.onScreen(div)) : null;
    const drawing = fresh ? Promise.all(now.map(V.ensure)).then(() => now) : V.refresh(s);
    return drawing.then(charts => {  // the output, and the charts on screen (the others as they come on screen)
      const ms = performance.now() - t0;
      status.textContent = fillIn(W.done, {output: made.output || "∅", steps: made.steps, ms: ms.toFixed(0)});
      Object.assign(section.dataset, {drawn: String(n), ms: ms.toFixed(1), charts: String(charts.length),
        steps: String(made.steps)});
    });
  }

  // A task boundary (not a timer: no 4 ms clamp): a key pressed during the warm-up run is handled between two steps
  const nextTask = () => new Promise(resolve => {
    const ch = new MessageChannel();
    ch.port1.onmessage = () => resolve();
    ch.port2.postMessage(null);
  });
  let queue = Promise.resolve();
  // t0: when the key was pressed (the event's time), so that a page busy when Enter came counts the wait too
  function enqueue(text, typed, t0 = performance.now()) {
    const n = typed ? ++runs : runs;  // counted when asked for: the first example is skipped once a typed run waits
    if (typed) status.textContent = W.running;
    queue = queue.then(() => run(t0, text, n, typed ? null : () => nextTask().then(() => runs > n))).catch(err => {
      say(fillIn(W.failed, {error: String((err && err.message) || err)}), "warning error");
      section.dataset.drawn = "error";
    });
    opening.then(() => V.hold(queue), () => {});  // the page's own charts wait for it, once the model is there
    return queue;
  }
  box.addEventListener("keydown", e => {
    if (e.key !== "Enter" || e.isComposing) return;
    e.preventDefault();
    enqueue(box.value, true, e.timeStamp);
  });
  // The first example, run in this page as soon as the model is ready (docs/pack.md: the warm-up): onnxruntime prepares
  // its kernels on a session's first run, and the typed input's section is made, so the first typed input runs and
  // redraws as fast as later ones. Skipped when an input was typed before; gives way, between two decoder steps, to an
  // input typed while it runs. Then every chart of the example drawn, and drawn again in place (Plotly.react), one at a
  // time while nothing is typed: plotly's redrawing is compiled before the first typed input needs it.
  section.dataset.ready = "1";
  async function drawRest() {
    const s = views.firstElementChild, charts = s ? V.charts(s) : [];
    for (const again of [false, true]) {
      for (const div of charts) {
        if (runs) return;
        await (again ? V.redraw(div) : V.ensure(div));
        await new Promise(r => setTimeout(r, 0));
      }
    }
  }
  const warm = () => {
    if (runs) { section.dataset.warm = "skipped"; return null; }
    const done = enqueue(W.first, false).then(drawRest)
      .then(() => { section.dataset.warm = runs ? "interrupted" : "1"; });
    V.hold(done);  // its charts too, before the page's own
    return done;
  };
  // modelReady: ms from navigation to the runtime started and every graph's session made (benchmarks read it); ep:
  // where the model runs, "webgpu" or "wasm". A runtime that fails to start says so at the first typed input.
  opening.then(([net]) => {
    Object.assign(section.dataset, {modelReady: performance.now().toFixed(0), ep: net.ep});
    return warm();
  }, () => {});
})();
