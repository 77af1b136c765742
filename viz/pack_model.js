// The lecture pack's own forward pass of the encoder-decoder Transformer (model/network/transformer.py, in the
// browser). Reads the spec written by model/analysis/pack_export.py: config, tokenizer, float32 weights, and what a
// positional kind needs beyond them. No network, no library. Follows the configuration: post-LN or pre-LN, final
// norms, LayerNorm or the "std" norm, relu/gelu/silu, scaled embeddings, shared or tied tables, the head width and
// whether q.k is divided by sqrt(d_k). A positional kind is one function in POSITIONS, (config, param, side, d_k,
// extra) -> an object: `rows(offset, T)` added to the embeddings; for the kinds inside self-attention (encoder self,
// decoder self; never cross) `rotate(X, T, offset)`, RoPE's turn of the queries and the new keys, or `bias(h, i, j)`
// added to head h's scaled score of query position i over key position j (ALiBi, T5's bucketed bias).
// Implemented: every kind of model/network/config.POSITIONAL_KINDS (pack_export.JS_POSITIONAL).
// Activations are float64 (the weights are float32): results match torch's float32 within about 1e-6.
const PackModel = (function () {
  "use strict";
  const SPECIALS = ["<pad>", "<s>", "</s>", "<unk>"];

  function floats(b64) {  // base64 of little-endian float32 -> Float32Array
    const bin = atob(b64), bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    return new Float32Array(bytes.buffer);
  }

  // -- positional kinds: one function each, (config, param, side, dk, extra) -> {rows(offset, T), rotate?, bias?} --
  function sinusoidTable(P, d, base, layout) {  // as model/positional.sinusoidal_encoding: float64, then float32
    const t = new Float32Array(P * d);
    for (let p = 0; p < P; p++) {
      for (let i = 0; i < d / 2; i++) {
        const a = p * Math.exp(-Math.log(base) * (2 * i) / d);
        const [si, ci] = layout === "half" ? [i, d / 2 + i] : [2 * i, 2 * i + 1];
        t[p * d + si] = Math.sin(a);
        t[p * d + ci] = Math.cos(a);
      }
    }
    return t;
  }
  const rowsOf = (table, d) => (offset, T) => table.subarray(offset * d, (offset + T) * d);
  const zeros = c => ({rows: rowsOf(new Float32Array(c.max_len * c.d_model), c.d_model)});  // nothing added
  function ropeAngles(c, dk) {  // model/network/positional.rope_angles: cos, sin of m * base^(-2i/dk), float64 -> float32
    const P = c.max_len, half = dk / 2, cos = new Float32Array(P * half), sin = new Float32Array(P * half);
    for (let m = 0; m < P; m++) {
      for (let i = 0; i < half; i++) {
        const a = m * Math.exp(-Math.log(c.pe_base) * (2 * i) / dk);
        cos[m * half + i] = Math.cos(a);
        sin[m * half + i] = Math.sin(a);
      }
    }
    return {cos, sin};
  }
  // RoPE (positional.rope_rotate): in X (T, H * dk), row t at position offset + t, each head's pair (a, b) ->
  // (a cos - b sin, a sin + b cos); pairs (2i, 2i+1) ("interleaved", Su et al.) or (i, i + dk/2) ("half").
  function rope(c, param, side, dk) {
    const {cos, sin} = ropeAngles(c, dk), half = dk / 2, H = c.n_heads;
    const pair = c.pe_layout === "half" ? i => [i, half + i] : i => [2 * i, 2 * i + 1];
    const rotate = (X, T, offset) => {
      for (let t = 0; t < T; t++) {
        const m = offset + t;
        for (let h = 0; h < H; h++) {
          const o = t * H * dk + h * dk;
          for (let i = 0; i < half; i++) {
            const [ia, ib] = pair(i), a = X[o + ia], b = X[o + ib], co = cos[m * half + i], si = sin[m * half + i];
            X[o + ia] = a * co - b * si;
            X[o + ib] = a * si + b * co;
          }
        }
      }
    };
    return {...zeros(c), rotate};
  }
  function alibiSlopes(H) {  // positional.alibi_slopes: 2^(-8h/n) for n = 2^floor(log2 H), then every other of 2n
    const powers = n => Array.from({length: n}, (_, h) => 2 ** (-8 * (h + 1) / n));
    const n = 2 ** Math.floor(Math.log2(H));
    return Float32Array.from([...powers(n), ...powers(2 * n).filter((_, i) => i % 2 === 0).slice(0, H - n)]);
  }
  // ALiBi (positional.alibi_bias): -slope_h * |i - j| on both sides (the decoder's mask hides j > i: the paper's bias)
  function alibi(c) {
    const slopes = alibiSlopes(c.n_heads);
    return {...zeros(c), bias: (h, i, j) => Math.fround(-slopes[h] * Math.abs(i - j))};
  }
  // T5's relative bias (positional.RelativePositionBias): the stack's learned (buckets, H) table at the bucket of
  // key - query; the buckets come with the spec, from the model's own relative_position_bucket (pack_export.py), for
  // relative positions -R..R (R = spec.positions.reach; farther keys share the bucket of distance R).
  function relative(c, param, side, dk, extra) {
    const table = param((side === "source" ? "src_pe" : "tgt_pe") + ".relative_attention_bias.weight");
    const buckets = extra[side], R = extra.reach, H = c.n_heads;
    return {...zeros(c), bias: (h, i, j) => table[buckets[Math.max(-R, Math.min(R, j - i)) + R] * H + h]};
  }
  // -> {rows(offset, T)} and, for the kinds inside self-attention, rotate(X, T, offset) (q and the new keys) or
  // bias(h, i, j) (added to the scaled score of query position i over key position j). Cross-attention gets neither.
  const POSITIONS = {
    sinusoidal: (c) => ({rows: rowsOf(sinusoidTable(c.max_len, c.d_model, c.pe_base, c.pe_layout), c.d_model)}),
    learned: (c, param, side) => ({rows: rowsOf(param(side === "source" ? "src_pe.weight" : "tgt_pe.weight"), c.d_model)}),
    none: zeros,
    rope,
    alibi,
    relative,
  };

  // -- the math, on row-major Float64Array activations (T, width) ------------------------------------------
  function linear(x, T, din, W, b, dout) {  // x @ W^T + b, W (dout, din) as torch stores it
    const y = new Float64Array(T * dout);
    for (let t = 0; t < T; t++) {
      const xo = t * din;
      for (let o = 0; o < dout; o++) {
        let s = b ? b[o] : 0;
        const wo = o * din;
        for (let i = 0; i < din; i++) s += x[xo + i] * W[wo + i];
        y[t * dout + o] = s;
      }
    }
    return y;
  }
  function erf(x) {  // Taylor series near 0, Abramowitz & Stegun 7.1.26 beyond: |error| < 2e-7
    const s = Math.sign(x), a = Math.abs(x);
    if (a < 0.5) {  // Taylor series: exact to double precision here
      let term = a, sum = a;
      for (let n = 1; n < 30; n++) { term *= -a * a / n; sum += term / (2 * n + 1); }
      return s * sum * 2 / Math.sqrt(Math.PI);
    }
    const t = 1 / (1 + 0.3275911 * a);
    const y = 1 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * Math.exp(-a * a);
    return s * y;
  }
  const ACT = {relu: v => (v > 0 ? v : 0), gelu: v => 0.5 * v * (1 + erf(v / Math.SQRT2)), silu: v => v / (1 + Math.exp(-v))};

  function norm(x, T, d, p, kind, eps) {  // torch LayerNorm, or the Annotated Transformer's std norm
    const y = new Float64Array(T * d);
    for (let t = 0; t < T; t++) {
      let mean = 0, sq = 0;
      for (let i = 0; i < d; i++) mean += x[t * d + i];
      mean /= d;
      for (let i = 0; i < d; i++) sq += (x[t * d + i] - mean) ** 2;
      const inv = kind === "std" ? 1 / (Math.sqrt(sq / (d - 1)) + eps) : 1 / Math.sqrt(sq / d + eps);
      for (let i = 0; i < d; i++) y[t * d + i] = (x[t * d + i] - mean) * inv * p.weight[i] + p.bias[i];
    }
    return y;
  }

  function Model(spec) {
    const c = spec.config, d = c.d_model, H = c.n_heads, dk = c.head_dim || d / H, inner = H * dk, V = c.tgt_vocab_size;
    const all = floats(spec.weights);
    const param = name => {
      const e = spec.index[name];
      if (!e) throw new Error("missing weight " + name);
      return all.subarray(e.offset, e.offset + e.shape.reduce((a, b) => a * b, 1));
    };
    const lin = pre => ({w: param(pre + ".weight"), b: spec.index[pre + ".bias"] ? param(pre + ".bias") : null});
    const nrm = pre => ({weight: param(pre + ".weight"), bias: param(pre + ".bias")});
    const att = pre => ({q: lin(pre + ".q_proj"), k: lin(pre + ".k_proj"), v: lin(pre + ".v_proj"), o: lin(pre + ".out_proj")});
    const ff = pre => ({l1: lin(pre + ".linear1"), l2: lin(pre + ".linear2")});
    const enc = [], dec = [];
    for (let l = 0; l < c.n_encoder_layers; l++) {
      const p = `encoder.layers.${l}`;
      enc.push({self: att(p + ".self_attn"), ff: ff(p + ".ff"), n1: nrm(p + ".norm1"), n2: nrm(p + ".norm2")});
    }
    for (let l = 0; l < c.n_decoder_layers; l++) {
      const p = `decoder.layers.${l}`;
      dec.push({self: att(p + ".self_attn"), cross: att(p + ".cross_attn"), ff: ff(p + ".ff"),
        n1: nrm(p + ".norm1"), n2: nrm(p + ".norm2"), n3: nrm(p + ".norm3")});
    }
    const encNorm = c.has_final_norm ? nrm("encoder.norm") : null, decNorm = c.has_final_norm ? nrm("decoder.norm") : null;
    const srcEmbed = param("src_embed.weight"), tgtEmbed = param("tgt_embed.weight"), gen = lin("generator");
    const kind = POSITIONS[c.positional];
    if (!kind) throw new Error("positional kind not implemented here: " + c.positional);
    const extra = spec.positions || {};  // what a kind needs beyond the weights (pack_export.live_spec)
    const pos = {source: kind(c, param, "source", dk, extra), target: kind(c, param, "target", dk, extra)};
    const scale = Math.sqrt(d), sc = c.scale_scores === false ? 1 : 1 / Math.sqrt(dk);  // T5 does not divide q.k
    const N = (x, T, p) => norm(x, T, d, p, c.norm, c.layer_norm_eps);

    function embed(table, ids, side, offset) {  // {x: embeddings * sqrt(d) + PE rows, emb, pe} (T, d)
      const T = ids.length, emb = new Float64Array(T * d), x = new Float64Array(T * d);
      const rows = pos[side].rows(offset, T);
      for (let t = 0; t < T; t++) {
        for (let i = 0; i < d; i++) {
          const e = Math.fround(table[ids[t] * d + i] * (c.scale_embeddings ? Math.fround(scale) : 1));
          emb[t * d + i] = e;
          x[t * d + i] = Math.fround(e + rows[t * d + i]);
        }
      }
      return {x, emb, pe: rows};
    }
    function residual(x, T, p, sub) {  // post-LN: norm(x + sub(x)); pre-LN: x + sub(norm(x))
      const y = sub(c.norm_first ? N(x, T, p) : x), s = new Float64Array(T * d);
      for (let i = 0; i < s.length; i++) s[i] = x[i] + y[i];
      return c.norm_first ? s : N(s, T, p);
    }
    function feedForward(p, x, T) {
      const h = linear(x, T, d, p.l1.w, p.l1.b, c.d_ff), act = ACT[c.activation];
      for (let i = 0; i < h.length; i++) h[i] = act(h[i]);
      return linear(h, T, c.d_ff, p.l2.w, p.l2.b, d);
    }
    // softmax(q k^T * sc + bias) v per head, as model/network/attention.attention; K, V (Tk, H * dk) already projected
    // (self-attention's keys rotated); allowed(i, j); pe: the stack's positions (self-attention), null for cross;
    // qPos: the position of query row 0 (key j sits at position j)
    function attend(p, x, T, K, V, Tk, allowed, pe, qPos) {
      const Q = linear(x, T, d, p.q.w, p.q.b, inner), out = new Float64Array(T * inner), w = new Float64Array(H * T * Tk);
      const row = new Float64Array(Tk);
      if (pe && pe.rotate) pe.rotate(Q, T, qPos);
      for (let h = 0; h < H; h++) {
        for (let i = 0; i < T; i++) {
          let max = -Infinity;
          for (let j = 0; j < Tk; j++) {
            let s = -Infinity;
            if (allowed(i, j)) {
              s = 0;
              for (let e = 0; e < dk; e++) s += Q[i * inner + h * dk + e] * K[j * inner + h * dk + e];
              s *= sc;
              if (pe && pe.bias) s += pe.bias(h, qPos + i, j);
            }
            row[j] = s;
            if (s > max) max = s;
          }
          let sum = 0;
          for (let j = 0; j < Tk; j++) { row[j] = row[j] === -Infinity ? 0 : Math.exp(row[j] - max); sum += row[j]; }
          const wo = (h * T + i) * Tk;
          for (let j = 0; j < Tk; j++) {
            const a = row[j] / sum;
            w[wo + j] = a;
            if (a) for (let e = 0; e < dk; e++) out[i * inner + h * dk + e] += a * V[j * inner + h * dk + e];
          }
        }
      }
      return {y: linear(out, T, inner, p.o.w, p.o.b, d), w};  // w: (H, T, Tk)
    }
    const kv = (p, x, T) => [linear(x, T, d, p.k.w, p.k.b, inner), linear(x, T, d, p.v.w, p.v.b, inner)];
    const selfKV = (p, x, T, pe, offset) => {  // the new keys sit at the queries' positions: RoPE rotates them too
      const r = kv(p, x, T);
      if (pe.rotate) pe.rotate(r[0], T, offset);
      return r;
    };
    const concat = (a, b) => { const r = new Float64Array(a.length + b.length); r.set(a); r.set(b, a.length); return r; };

    function encode(ids) {  // ids end with </s>; -> {memory (S, d), attention [L] of (H, S, S), emb, pe}
      const S = ids.length, e = embed(srcEmbed, ids, "source", 0), attention = [];
      const allowed = (i, j) => ids[j] !== c.pad_id;
      let x = e.x;
      for (const L of enc) {
        x = residual(x, S, L.n1, h => {
          const [K, Vv] = selfKV(L.self, h, S, pos.source, 0), r = attend(L.self, h, S, K, Vv, S, allowed, pos.source, 0);
          attention.push(r.w);
          return r.y;
        });
        x = residual(x, S, L.n2, h => feedForward(L.ff, h, S));
      }
      return {memory: encNorm ? N(x, S, encNorm) : x, ids, attention, emb: e.emb, pe: e.pe};
    }

    // New decoder tokens `ids` at positions offset..; cache (from newCache) holds earlier keys and values.
    // -> {logits (T, V), self [L] of (H, T, offset+T), cross [L] of (H, T, S), emb, pe}
    function decode(ids, enc0, cache, offset) {
      const T = ids.length, S = enc0.ids.length, e = embed(tgtEmbed, ids, "target", offset);
      const keep = ids.map((id, j) => id !== c.pad_id || (j === 0 && c.bos_id === c.pad_id));
      const selfAllowed = (i, j) => j <= offset + i && (offset > 0 || keep[j]);
      const srcAllowed = (i, j) => enc0.ids[j] !== c.pad_id;
      const self = [], cross = [];
      let x = e.x;
      dec.forEach((L, l) => {
        x = residual(x, T, L.n1, h => {
          let [K, Vv] = selfKV(L.self, h, T, pos.target, offset);
          if (cache) {
            if (cache.self[l]) { K = concat(cache.self[l][0], K); Vv = concat(cache.self[l][1], Vv); }
            cache.self[l] = [K, Vv];
          }
          const r = attend(L.self, h, T, K, Vv, offset + T, selfAllowed, pos.target, offset);
          self.push(r.w);
          return r.y;
        });
        x = residual(x, T, L.n2, h => {
          const memKV = (cache && cache.cross[l]) || kv(L.cross, enc0.memory, S);
          if (cache) cache.cross[l] = memKV;
          const r = attend(L.cross, h, T, memKV[0], memKV[1], S, srcAllowed, null, offset);
          cross.push(r.w);
          return r.y;
        });
        x = residual(x, T, L.n3, h => feedForward(L.ff, h, T));
      });
      if (decNorm) x = N(x, T, decNorm);
      return {logits: linear(x, T, d, gen.w, gen.b, V), self, cross, emb: e.emb, pe: e.pe};
    }
    const newCache = () => ({self: [], cross: []});
    return {config: c, d, H, V, L: dec.length, Lenc: enc.length, encode, decode, newCache};
  }

  function logSoftmax(logits, off, V) {
    let max = -Infinity, sum = 0;
    for (let v = 0; v < V; v++) max = Math.max(max, logits[off + v]);
    for (let v = 0; v < V; v++) sum += Math.exp(logits[off + v] - max);
    const lse = max + Math.log(sum), out = new Float64Array(V);
    for (let v = 0; v < V; v++) out[v] = logits[off + v] - lse;
    return out;
  }

  // Greedy decoding with a key/value cache, as model.decoding.greedy_decode: each step's top-k, chosen token and
  // the new position's attention rows; then the teacher-forced pass of the output, as model.capture.capture.
  function run(model, srcIds, topK) {
    const c = model.config, S = srcIds.length, enc = model.encode(srcIds);
    const limit = Math.max(0, Math.min(S + 50, c.max_len - 1));  // model.decoding.step_limit
    const cache = model.newCache(), steps = [], out = [];
    let last = c.bos_id, stop = "max_len";
    for (let t = 0; t < limit; t++) {
      const r = model.decode([last], enc, cache, t), lp = logSoftmax(r.logits, 0, model.V);
      const order = Array.from(lp.keys()).sort((a, b) => lp[b] - lp[a] || a - b);
      const choice = order[0], k = Math.max(1, Math.min(topK, model.V));
      steps.push({
        id: choice, prob: Math.exp(lp[choice]), top: order.slice(0, k), topProbs: order.slice(0, k).map(i => Math.exp(lp[i])),
        self: r.self, cross: r.cross,  // [L] of (H, 1, t+1) and (H, 1, S)
      });
      out.push(choice);
      last = choice;
      if (choice === c.eos_id) { stop = "eos"; break; }
    }
    const tgt = [c.bos_id, ...out.filter(i => i !== c.eos_id)];
    const full = model.decode(tgt, enc, null, 0);
    const logProbs = tgt.map((_, t) => logSoftmax(full.logits, t * model.V, model.V));
    return {enc, steps, stop, out, tgt, full, logProbs};
  }

  // -- this project's Vocab (model/tokenizer.py) and the app's input check (model/inputs.check_text) ---------
  function Vocab(spec) {
    const ids = new Map(spec.tokens.map((t, i) => [t, i]));
    const split = text => {
      text = text.normalize("NFC");
      if (spec.lowercase) text = text.toLowerCase();
      return spec.level === "char" ? Array.from(text) : text.split(/\s+/).filter(Boolean);
    };
    return {
      tokens: spec.tokens, level: spec.level, unk: 3, eos: 2, bos: 1, split,
      ids: symbols => symbols.map(s => (ids.has(s) ? ids.get(s) : 3)),
      token: i => (i >= 0 && i < spec.tokens.length ? spec.tokens[i] : "<unk>"),
      detokenize: symbols => symbols.filter(s => !SPECIALS.includes(s)).join(spec.level === "char" ? "" : " "),
    };
  }
  const isSpace = ch => /[\s\x1c-\x1f\x85]/u.test(ch);
  function cleanText(text) {  // model.tokenizer.clean_text
    let kept = "";
    for (const ch of text) kept += isSpace(ch) ? " " : (/\p{C}/u.test(ch) ? "" : ch);
    return kept.split(" ").filter(Boolean).join(" ");
  }
  // {text, errors, warnings, ids, tokens}: messages in the pack's language, from the templates in `words`
  function checkText(text, vocab, maxTokens, words) {
    const fill = (t, v) => t.replace(/\{(\w+)\}/g, (m, k) => (k in v ? String(v[k]) : m));
    const cleaned = cleanText(text), errors = [], warnings = [];
    let dropped = 0;
    for (const ch of text) if (!isSpace(ch) && !cleaned.includes(ch)) dropped++;
    if (dropped) warnings.push(fill(dropped === 1 ? words.removed_one : words.removed_many, {n: dropped}));
    const symbols = vocab.split(cleaned);
    if (!symbols.length) return {text: cleaned, errors: [words.empty], warnings, ids: []};
    const unknown = [...new Set(symbols.filter(s => vocab.ids(vocab.split(s)).every(i => i === vocab.unk)))];
    const quote = list => {
      const shown = list.slice(0, 12).map(s => (s.trim() ? `“${s}”` : words.a_space)).join(", ");
      return list.length > 12 ? fill(words.and_more, {shown, n: list.length - 12}) : shown;
    };
    if (unknown.length && unknown.length === new Set(symbols).size) {
      errors.push(fill(words.none_known, {symbols: quote(unknown)}));
    } else if (unknown.length) {
      warnings.push(fill(words.unknown, {symbols: quote(unknown)}));
    }
    const ids = vocab.ids(symbols);
    if (ids.length > maxTokens) {
      const kept = vocab.detokenize(ids.slice(0, maxTokens).map(vocab.token));
      warnings.push(fill(words.cut, {n: ids.length, room: maxTokens, kept: Array.from(kept).slice(-40).join(""),
        dropped: ids.length - maxTokens}));
    }
    return {text: cleaned, errors, warnings, ids: ids.slice(0, maxTokens)};
  }

  return {Model, Vocab, run, checkText, cleanText, erf, POSITIONS};
})();
