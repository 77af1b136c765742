// The lecture pack's text box: runs the typed input through the model's own graph in this page (pack_net.js, the
// input check and tokenizer of pack_text.js) and draws every
// view the pack shows for a precomputed input, for it: the first input's section is the pattern (its figures are
// re-labelled with the typed input's tokens), PackViews (lecture_pack.js) draws and wires it.
(function () {
  "use strict";
  const V = PackViews, W = V.TEXT.live, spec = JSON.parse(document.getElementById("pack-model").textContent);
  const c = spec.config, model = {config: c, L: c.n_decoder_layers, H: c.n_heads, d: c.d_model};
  // the runtime, the graphs' sessions and the tokenizers, started as the page was read (lecture_pack_live.live_scripts:
  // window.PackOpening); every run waits for them
  const opening = window.PackOpening;
  let src = null, tgt = null;
  const box = document.querySelector('[data-testid="pack-input"]'), status = document.querySelector(".live-status");
  const out = document.querySelector('[data-testid="pack-output"]'), messages = document.querySelector(".live-messages");
  const section = document.getElementById("live"), views = document.getElementById("live-views");
  const pattern = document.getElementById("in0").cloneNode(true);  // taken before anything is drawn into it
  let runs = 0;

  // -- tokens as the pack shows them (viz/tokens.py) ---------------------------------------------------------
  // viz/attention_figs.geometry_rules: the constants and character classes of the app's tick and map layout
  const G = V.DATA.geometry, VISIBLE = G.visible;
  const plain = (t, max = G.plain_chars) => { const s = t in VISIBLE ? VISIBLE[t] : t, a = Array.from(s); return a.length <= max ? s : a.slice(0, max - 1).join("") + "…"; };
  const escape = s => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const shown = (t, max = G.plain_chars) => escape(plain(t, max));
  const hover = t => (t === " " ? W.space : shown(t, G.hover_chars));
  const label = (token, i) => V.fillIn(G.label, {i, token}), labels = tokens => tokens.map(hover).map(label);
  // Rows by the app's one convention (viz/tokens.Rows, its templates G.row and G.label): a decoder row is labelled with
  // the token it writes (the decoder input shifted by one, the last row the model's own next token, `last`: its
  // log-probs), its hover naming the input that wrote it
  const rowHovers = rows => rows.tokens.map((t, i) => (rows.inputs ? V.fillIn(G.row, {input: hover(rows.inputs[i]), token: hover(t)}) : hover(t)));
  const argmax = a => { let best = 0; for (let i = 1; i < a.length; i++) if (a[i] > a[best]) best = i; return best; };
  const writtenRows = (inputs, last) => ({tokens: [...inputs.slice(1), tgt.token(argmax(last))], inputs});
  const pct = p => (100 * p).toFixed(1) + "%";
  const range = n => Array.from({length: n}, (_, i) => i);

  // -- the typed input's data, in the form DATA.inputs holds (numbers instead of base64) -----------------------
  function attention(maps, H, Tq, Tk, causal) {  // [L] of (H, Tq, Tk) -> (L, H + 1, Tq, Tk), head average last
    const L = maps.length, z = new Float32Array(L * (H + 1) * Tq * Tk), n = Tq * Tk;
    maps.forEach((m, l) => {
      for (let h = 0; h <= H; h++) {
        for (let i = 0; i < n; i++) {
          let v = 0;
          if (h < H) v = m[h * n + i]; else { for (let g = 0; g < H; g++) v += m[g * n + i]; v /= H; }
          z[(l * (H + 1) + h) * n + i] = causal && (i % Tk) > Math.floor(i / Tk) ? NaN : v;
        }
      }
    });
    return z;
  }
  function decoding(r, srcTokens, inputs) {
    const T = r.steps.length, S = srcTokens.length, L = model.L, H = model.H, rows = L * H;
    const cross = new Float32Array(T * rows * S), self = new Float32Array(T * rows * T).fill(NaN);
    const top = [], text = [];
    r.steps.forEach((s, t) => {
      for (let l = 0; l < L; l++) {
        for (let h = 0; h < H; h++) {
          for (let j = 0; j < S; j++) cross[(t * rows + l * H + h) * S + j] = s.cross[l][h * S + j];
          for (let j = 0; j <= t; j++) self[(t * rows + l * H + h) * T + j] = s.self[l][h * (t + 1) + j];
        }
      }
      const toks = s.top.map(tgt.token), chosen = s.top.indexOf(s.id);
      top.push({x: s.topProbs.map(p => Math.round(p * 1e5) / 1e5), y: toks.map((tk, i) => `${i + 1}. ${shown(tk)}`),
        c: toks.map((_, i) => (i === chosen ? "#d62728" : "#1f77b4")), t: s.topProbs.map(pct)});
      text.push({inputs: inputs.slice(0, t + 1).map(tk => plain(tk)).join(" "), token: plain(tgt.token(s.id)), prob: pct(s.prob)});
    });
    return {n: T, rows, S, T, cross, self, top, text,
      stop: r.stop === "eos" ? "</s>" : W.length_limit};
  }

  // -- figures: the first input's, re-labelled and laid out by the app's rules (DATA.geometry) ------------------
  // viz/tokens.label_px: the width of a label `size` px high, from its characters' classes (G: the app's own tables)
  const within = PackText.within;  // is a code point in ranges [first, last, first, last, ...]
  function labelPx(text, size = G.tick_px) {
    let at14 = 0;
    for (const ch of text) {
      const cp = ch.codePointAt(0);
      at14 += G.narrow.includes(ch) ? G.px.narrow : within(cp, G.wide) ? G.px.wide
        : G.broad.includes(ch) || within(cp, G.upper) ? G.px.broad : G.px.average;
    }
    return at14 * size / 14;
  }
  // viz/tokens.token_ticks for an axis whose tokens are px apart: labels at least min_gap apart (every step-th); x labels
  // (horizontal) turn upright when neighbours do not fit side by side, unless most are single characters (then fewer
  // are labelled). {vals, text, angle, step}
  function tokenTicks(tokens, px, horizontal = true, size = G.tick_px) {
    const n = tokens.length, gap = horizontal ? G.min_gap + G.label_box * (size - G.tick_px) / G.tick_px : Math.max(G.min_gap, size),  // tick_gap
      widths = tokens.map(t => labelPx(plain(t), size));
    let step = n ? Math.max(1, Math.ceil(gap / Math.max(px, 1e-6))) : 1, angle = 0;
    const singles = tokens.filter(t => Array.from(plain(t)).length === 1).length;
    const fits = st => { for (let i = 0; i + st < n; i += st) if ((widths[i] + widths[i + st]) / 2 + 3 > px * st) return false; return true; };
    if (horizontal && n && !fits(step)) {
      if (2 * singles >= n) { while (step < n && !fits(step)) step++; } else angle = -90;
    }
    const vals = range(n).filter(i => i % step === 0);
    return {vals, text: vals.map(i => shown(tokens[i])), angle, step};
  }
  const setTicks = (axis, t) => Object.assign(axis, {tickmode: "array", tickvals: t.vals, ticktext: t.text, tickangle: t.angle});
  const roundHalfEven = v => { const r = Math.round(v); return Math.abs(v % 1) === 0.5 && r % 2 ? r - 1 : r; };  // Python's round
  // viz/attention_figs.heatmap_geometry at its default sizes: square cells as large as fit (wider where that labels every
  // key), the height from the rows. {cell, height, x, y, ratio}
  function geometry(q, k, extra) {
    const nq = Math.max(1, q.length), nk = Math.max(1, k.length);
    let labelRow = G.label_row_px, chrome, cell, x;
    for (let attempt = 0; attempt < 2; attempt++) {  // once more with room for upright x labels, if they need it
      chrome = G.title_px + G.axis_title_px + labelRow;
      cell = Math.max(1, Math.min(G.max_cell, (G.max_height - chrome) / nq, G.max_width / nk));
      x = tokenTicks(k, cell);
      if (x.angle === 0 || labelRow > G.label_row_px) break;
      labelRow = Math.floor(Math.min(120, Math.max(...x.vals.map(i => Array.from(plain(k[i])).length)) * G.char_px + 10));
    }
    const y = tokenTicks(q, cell, false);
    let ratio = 1;
    if (x.step > 1) {  // labels dropped: the narrowest wider cells that label every key, upright if that fits too
      let found = null;
      for (const r of G.wider) {
        const wider = tokenTicks(k, cell * r);
        if (wider.step === 1 && nk * cell * r <= G.max_width) {
          found = found || [wider, r];
          if (wider.angle === 0) { found = [wider, r]; break; }
        }
      }
      if (found) [x, ratio] = found;
    }
    return {cell, height: roundHalfEven(nq * cell + chrome + extra), x, y, ratio};
  }
  function heatmap(f, rows, k) {  // viz/attention_figs.attention_heatmap's layout for these rows and keys
    const q = rows.tokens, nk = k.length, legend = f.data.length > 1 && nk > 1;  // a masked cell's mark (causal)
    const x = labels(k), y = rowHovers(rows).map(label);
    Object.assign(f.data[0], {x, y});
    if (f.data.length > 1) f.data = legend ? [f.data[0], Object.assign(f.data[1], {x: [x[1]], y: [y[0]]})] : [f.data[0]];
    const geo = geometry(q, k, legend ? G.legend_px : 0);
    setTicks(f.layout.xaxis, geo.x);
    setTicks(f.layout.yaxis, geo.y);
    Object.assign(f.layout.xaxis, {range: [-0.5, nk - 0.5], scaleratio: geo.ratio});
    f.layout.yaxis.range = [q.length - 0.5, -0.5];
    f.layout.height = geo.height;
    f.layout.margin = Object.assign({}, f.layout.margin, {t: G.title_px + (legend ? G.legend_px : 0)});
    f.layout.showlegend = legend;
    if (f.layout.width) {  // snug (viz/attention_figs.snug_width): the plot, its labels and colour bar; not under the title
      const left = Math.max(0, ...geo.y.vals.map(i => labelPx(plain(q[i])))) + G.axis_title_px + 16;
      const snug = Math.floor(Math.min(G.max_width + left + G.colorbar_px, left + nk * geo.cell * geo.ratio + G.colorbar_px + 20));
      const texts = [[(f.layout.title && f.layout.title.text) || "", G.tick_px + 3, 1.15], ...(legend ? [[f.data[1].name, G.tick_px, 1]] : [])];
      f.layout.width = Math.floor(Math.max(snug, ...texts.map(([t, size, factor]) => labelPx(t, size) * factor + (size === G.tick_px ? 40 : 20))));
    }
  }
  // viz/overview_figs.layer_head_overview for Tq x Tk tiles: rows and columns named, a blank one between tiles (its
  // annotations: the H head titles, then the L layer titles; its shapes: the H - 1 blank columns, then the rows)
  function overview(f, title, Tq, Tk, H) {
    const notes = f.layout.annotations, L = notes.length - H, rows = [], cols = [];
    for (let l = 0; l < L; l++) { if (l) rows.push(" ".repeat(l)); for (let i = 0; i < Tq; i++) rows.push(V.fillIn(W.thumb_row, {layer: l, i})); }
    for (let h = 0; h < H; h++) { if (h) cols.push(" ".repeat(h)); for (let i = 0; i < Tk; i++) cols.push(V.fillIn(W.thumb_col, {h, i})); }
    Object.assign(f.data[0], {x: cols, y: rows});
    Object.assign(f.layout.xaxis, {range: [-0.5, cols.length - 0.5]});
    Object.assign(f.layout.yaxis, {range: [rows.length - 0.5, -0.5]});
    notes.forEach((a, n) => { if (n < H) a.x = n * (Tk + 1) + (Tk - 1) / 2; else a.y = (n - H) * (Tq + 1) + (Tq - 1) / 2; });
    f.layout.shapes.forEach((s, n) => {
      const [key, g] = n < H - 1 ? ["x", (n + 1) * (Tk + 1) - 1] : ["y", (n - H + 2) * (Tq + 1) - 1];
      Object.assign(s, {[key + "0"]: g - 0.5, [key + "1"]: g + 0.5});
    });
    const every = Math.ceil(Tk / f.layout.meta.tile_labels), vals = [];  // viz/overview_figs.numbered_tiles
    for (let h = 0; h < H; h++) for (let p = 0; p < Tk; p += every) vals.push(h * (Tk + 1) + p);
    Object.assign(f.layout.xaxis, {tickvals: vals, ticktext: vals.map(v => String(v % (Tk + 1)))});
    f.layout.title = Object.assign({}, f.layout.title, {text: V.fillIn(W.every, {title})});
  }
  function norms(arr, T) {
    const d = arr.length / Math.max(T, 1);
    return range(T).map(t => { let s = 0; for (let i = 0; i < d; i++) s += arr[t * d + i] ** 2; return Math.sqrt(s); });
  }
  function figures(r, srcTokens, tgtTokens, inputs, sides) {
    const F = V.DATA.figures, make = (id, edit) => { if (!F["in0-" + id]) return; const f = V.figure("in0-" + id); delete f.layout.template; edit(f); F["live-" + id] = f; };
    for (const [kind, [, rows, k]] of Object.entries(sides)) {
      make(kind, f => heatmap(f, rows, k));
      make(kind + "-all", f => overview(f, V.DATA.inputs[0].attention[kind].title, rows.tokens.length, k.length, model.H));
    }
    // a token axis as wide as the builder planned it (its figure's meta.token_axis_px: decoding_figs, positional_figs)
    const along = (f, tokens) => setTicks(f.layout.xaxis, tokenTicks(tokens, f.layout.meta.token_axis_px / Math.max(tokens.length, 1)));
    make("cross-rows", f => { f.data[0].x = labels(srcTokens); along(f, srcTokens); });
    const keys = inputs.slice(0, r.steps.length);  // <s> y_1 .. y_{T-1}: the keys of the last step
    make("self-rows", f => { f.data[0].x = labels(keys); along(f, keys); });
    make("topk", () => {});
    make("pe-rows", f => {
      const S = srcTokens.length, pe = r.enc.pe, d = model.d;
      f.data[0].z = range(S).map(t => Array.from(pe.subarray(t * d, (t + 1) * d)));
      const bound = Math.max(1, ...Array.from(pe, Math.abs));
      Object.assign(f.data[0], {zmin: -bound, zmax: bound});
      Object.assign(f.layout.yaxis, {tickmode: "array", tickvals: range(S), ticktext: srcTokens.map(t => shown(t)).map(label)});
      const h = f.layout.meta.height_rule;  // viz/positional_figs.pe_matrix's
      f.layout.height = Math.min(h.max_px, Math.max(h.min_px, h.row_px * S + h.chrome_px));
    });
    for (const [side, toks, e] of [["source", srcTokens, r.enc], ["target", tgtTokens, r.full]]) {
      make("pe-" + side, f => {
        Object.assign(f.data[0], {x: range(toks.length), y: norms(e.emb, toks.length)});
        Object.assign(f.data[1], {x: range(toks.length), y: norms(e.pe, toks.length)});
        along(f, toks);
      });
    }
  }

  // -- the section: the first input's, renamed; made once, then filled in for each typed input -----------------
  function newSection() {
    const s = pattern.cloneNode(true);
    s.id = "live-input";
    s.querySelectorAll("[id]").forEach(el => { el.id = el.id.replace(/^in0/, "live"); });
    s.querySelectorAll("[data-figure]").forEach(el => { el.dataset.figure = el.dataset.figure.replace(/^in0-/, "live-"); });
    s.querySelectorAll(".attention").forEach(el => { el.dataset.ref = "live/" + el.dataset.ref.split("/")[1]; });
    s.querySelectorAll(".warning").forEach(el => el.remove());
    const d = s.querySelector(".decoding");
    if (d) d.dataset.ref = "live";
    return s;
  }
  // The app's checks beyond the vocabulary's (tasks.cards.pack_checks): the card's trained lengths, the task's grammar
  const checks = spec.checks || {};
  function moreWarnings(text) {
    const out = [], t = checks.trained, g = checks.grammar, e = checks.ends_with;
    if (t) {  // model.text.inputs.trained_range_warning
      const n = src.symbols(text).length;
      if (n && (n < t.low || n > t.high)) out.push(V.fillIn(W.trained, {n}));
    }
    if (g) {  // tasks.Task.outside_patterns
      const strip = w => { const a = Array.from(w); let i = 0, j = a.length; while (i < j && g.punctuation.includes(a[i])) i++; while (j > i && g.punctuation.includes(a[j - 1])) j--; return a.slice(i, j).join(""); };
      const words = (g.lowercase ? text.toLowerCase() : text).split(/\s+/).map(strip).filter(Boolean);
      if (words.length && words.every(w => Object.hasOwn(g.classes, w))) {
        const pattern = JSON.stringify(words.map(w => g.classes[w]).filter(c => c !== null));
        if (!g.patterns.some(p => JSON.stringify(p) === pattern)) out.push(W.guess);
      }
    }
    if (e && text.trim() && !text.trimEnd().endsWith(e.end)) out.push(W.ends_with);  // tasks.cards.format_warning
    return out;
  }
  function say(el, text, cls) { const p = document.createElement("p"); p.className = cls; p.textContent = text; el.appendChild(p); }

  // Plain numbers of the last run as nested arrays, for tests and benchmarks: what model.capture and greedy_decode give
  const nest = (a, ...dims) => (dims.length === 1 ? Array.from(a.subarray(0, dims[0])) : range(dims[0]).map(i =>
    nest(a.subarray(i * dims.slice(1).reduce((x, y) => x * y, 1)), ...dims.slice(1))));
  const stepsOf = r => r.steps.map(s => ({top: s.top, top_probs: s.topProbs, prob: s.prob}));
  // An encoder-decoder: the item the views draw (in the form DATA.inputs holds), its figures and its section's words
  async function encoderDecoder(net, check, giveUp, t0) {
    const srcIds = [...check.ids, src.eos, ...src.after], r = await PackNet.run(net, srcIds, 5, giveUp);
    if (!r) return null;  // given way
    section.dataset.modelMs = (performance.now() - t0).toFixed(1);  // typed text to numbers: the model's share
    const srcTokens = srcIds.map(src.token), inputs = [tgt.token(c.bos_id), ...r.out.map(tgt.token)];
    const tgtTokens = r.tgt.map(tgt.token), output = tgt.detokenize(r.out.map(tgt.token));
    const item = {attention: {}, decoding: decoding(r, srcTokens, inputs)};
    const written = writtenRows(tgtTokens, r.logProbs[tgtTokens.length - 1]);
    const maps = {encoder_self: [r.enc.attention, {tokens: srcTokens, inputs: null}, srcTokens],
      decoder_self: [r.full.self, written, tgtTokens], cross: [r.full.cross, written, srcTokens]};
    for (const [kind, [m, rows, k]] of Object.entries(maps)) item.attention[kind] = attentionItem(kind, m, rows, k);
    figures(r, srcTokens, tgtTokens, inputs, maps);
    const S = srcIds.length, T = r.tgt.length, H = model.H;
    const result = () => ({warnings: check.warnings, source_ids: srcIds, target_ids: r.tgt, output_ids: r.out, stop: r.stop,
      log_probs: r.logProbs.map(row => Array.from(row)), encoder_self: r.enc.attention.map(m => nest(m, H, S, S)),
      decoder_self: r.full.self.map(m => nest(m, H, T, T)), cross: r.full.cross.map(m => nest(m, H, T, S)),
      steps: stepsOf(r).map((s, t) => ({...s, cross: r.steps[t].cross.map(m => nest(m, H, S)),
        self: r.steps[t].self.map(m => nest(m, H, t + 1))}))});
    const fill = s => {
      const codes = s.querySelector("h2 + p").querySelectorAll("code"), d = s.querySelector(".decoding");
      codes[0].textContent = srcTokens.map(t => plain(t)).join(" ");
      codes[1].textContent = tgtTokens.map(t => plain(t)).join(" ");
      if (d) d.querySelector(".output-line").textContent = V.fillIn(W.output_line, {output: output || "∅", stop: item.decoding.stop});
    };
    return {item, output, steps: r.steps.length, result, fill};
  }
  // A decoder-only or encoder-only model: the self-attention of its one sequence, as the app's Attention page
  async function oneStack(net, check, giveUp, t0) {
    const decoder = c.shape === "decoder-only";
    // model/text/inputs: prepare_sequence (the text's ids, cut to max_len) or prepare_source (then </s>: BERT's [SEP])
    const ids = decoder ? [...src.prefix, ...check.content].slice(0, c.max_len) : [...check.ids, src.eos, ...src.after];
    const r = await PackNet.runOneStack(net, ids, 5, giveUp);
    if (!r) return null;  // given way
    section.dataset.modelMs = (performance.now() - t0).toFixed(1);
    const tokens = r.ids.map(src.token), N = tokens.length, H = model.H, kind = decoder ? "decoder_self" : "encoder_self";
    const Vn = r.logProbs ? r.logProbs.length / N : 0;
    const rows = decoder ? writtenRows(tokens, r.logProbs.subarray((N - 1) * Vn)) : {tokens, inputs: null};
    const output = decoder ? tgt.detokenize(r.out.map(tgt.token)) : "";
    const caption = decoder ? V.fillIn(W.sequence, {prompt: r.prompt, written: N - r.prompt, text: output})
      : V.fillIn(W.encoded, {n: N});
    const side = {pe: r.pe, emb: r.emb};
    figures({enc: side, full: side, steps: []}, tokens, tokens, [], {[kind]: [r.maps, rows, tokens]});
    const result = () => ({warnings: check.warnings, ids: r.ids, output_ids: r.out, stop: r.stop, prompt: r.prompt,
      log_probs: r.logProbs ? range(N).map(t => Array.from(r.logProbs.subarray(t * Vn, (t + 1) * Vn))) : null,
      [kind]: r.maps.map(m => nest(m, H, N, N)), steps: stepsOf(r)});
    const fill = s => {
      s.querySelector(".sequence .caption").textContent = caption;
      s.querySelector(".sequence code").textContent = tokens.map(t => plain(t)).join(" ");
    };
    return {item: {decoding: null, attention: {[kind]: attentionItem(kind, r.maps, rows, tokens)}}, output,
      steps: r.steps.length, result, fill};
  }
  function attentionItem(kind, m, rows, k) {  // one kind's maps as DATA.inputs holds them (numbers instead of base64)
    const Tq = rows.tokens.length;
    return {shape: [m.length, model.H + 1, Tq, k.length], z: attention(m, model.H, Tq, k.length, kind === "decoder_self"),
      title: V.DATA.inputs[0].attention[kind].title, q: rowHovers(rows), k: k.map(t => shown(t, G.hover_chars))};
  }

  // One run at a time; `typed` false: the first example run at load (not counted in dataset.drawn).
  // giveUp: given for the page's own warm-up run, which gives way to a typed input (the model stops between two steps)
  async function run(t0, text, n, giveUp) {
    const [net, vocabs] = await opening;
    ({source: src, target: tgt} = vocabs);
    messages.replaceChildren();
    const check = PackText.checkText(text, src, c.text_room, W);  // model.text.inputs.text_room
    if (!check.errors.length) check.warnings.push(...moreWarnings(check.text));
    check.warnings.forEach(w => say(messages, w, "warning"));
    if (check.errors.length) {  // nothing runs; the box keeps what was typed
      check.errors.forEach(e => say(messages, e, "warning error"));
      status.textContent = "";
      section.dataset.drawn = String(n);
      return;
    }
    const made = await (c.shape && c.shape !== "encoder-decoder" ? oneStack : encoderDecoder)(net, check, giveUp, t0);
    if (!made) return null;  // given way
    V.INPUTS.live = made.item;
    out.textContent = made.output;
    window.packResult = made.result;
    let s = views.firstElementChild, drawing;
    const fill = sec => { sec.querySelector("h2").textContent = V.fillIn(W.heading, {text: check.text}); made.fill(sec); };
    if (s) {  // the charts are there: redraw them with the new data (Plotly.react)
      fill(s);
      drawing = V.refresh(s);
    } else {
      s = newSection();
      fill(s);
      views.appendChild(s);
      const divs = V.setup(s), now = divs.filter((div, i) => i === 0 || V.onScreen(div));  // the rest as they come on screen
      drawing = Promise.all(now.map(V.ensure)).then(() => now);
    }
    return drawing.then(charts => {  // the output, and the charts on screen (the others as they come on screen)
      const ms = performance.now() - t0;
      status.textContent = V.fillIn(W.done, {output: made.output || "∅", steps: made.steps, ms: ms.toFixed(0)});
      Object.assign(section.dataset, {drawn: String(n), ms: ms.toFixed(1), charts: String(charts.length), steps: String(made.steps)});
    });
  }

  // A task boundary (not a timer: no 4 ms clamp): a key pressed during the warm-up run is handled between two steps
  const nextTask = () => new Promise(resolve => { const ch = new MessageChannel(); ch.port1.onmessage = () => resolve(); ch.port2.postMessage(null); });
  let queue = Promise.resolve();
  // t0: when the key was pressed (the event's time), so that a page busy when Enter came counts the wait too
  function enqueue(text, typed, t0 = performance.now()) {
    const n = typed ? ++runs : runs;  // counted when asked for: the first example is skipped once a typed run waits
    if (typed) status.textContent = W.running;
    queue = queue.then(() => run(t0, text, n, typed ? null : () => nextTask().then(() => runs > n))).catch(err => {
      say(messages, V.fillIn(W.failed, {error: String((err && err.message) || err)}), "warning error");
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
  // The first example, run in this page as soon as the runtime and the model's graphs are ready, while the pack's own
  // charts are drawn and before anything is typed: onnxruntime prepares its kernels on a session's first run, and the
  // typed input's section is made (its charts on screen drawn), so the first typed input runs and redraws as fast as
  // later ones. Skipped when an input was typed before the runtime was ready (that input does both then); gives way,
  // between two decoder steps, to an input typed while it runs.
  section.dataset.ready = "1";
  const first = W.first;
  // Then every chart of the example drawn, and drawn again in place (Plotly.react, as a typed input redraws them), one
  // at a time while nothing is typed: the browser has compiled plotly's redrawing before the first typed input needs
  // it (that input's charts took twice as long without), and each chart knows its margins (lecture_pack.js, drawWith).
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
    const done = enqueue(first, false).then(drawRest).then(() => { section.dataset.warm = runs ? "interrupted" : "1"; });
    V.hold(done);  // its charts too, before the page's own
    return done;
  };
  // modelReady: ms from navigation to the runtime started and every graph's session made (benchmarks read it); ep: where
  // the model runs, "webgpu" or "wasm". A runtime that fails to start says so at the first typed input.
  const ready = ([net]) => { Object.assign(section.dataset, {modelReady: performance.now().toFixed(0), ep: net.ep}); return warm(); };
  opening.then(ready, () => {});
})();
