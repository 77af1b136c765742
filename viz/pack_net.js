// The lecture pack's network: the model's own exported graphs (model/analysis/onnx_export.py) run by onnxruntime-web
// (viz/vendor/onnxruntime-web), whose WebAssembly binary and glue travel inside this page: no request, file:// works.
//   const net = await PackNet.open(spec)      // the graphs' sessions: encoder and decoder (teacher-forced, whole prefix),
//     or a folder pack's encoder (with cross keys/values) and cached step; the one graph of a one-stack model;
//     net.ep: "webgpu" or "wasm", where they run
//   const r = await PackNet.run(net, srcIds, 5, giveUp)   // greedy decoding, then the capture (giveUp: see greedy)
// r: {enc: {attention [L] of (H, S, S), emb, pe}, steps: [{id, prob, top, topProbs, self [L] of (H, t+1),
//     cross [L] of (H, S)}], stop, out, tgt, full: {self [L] of (H, T, T), cross [L] of (H, T, S), emb, pe}, logProbs}
// (flat Float32Arrays, row-major), the form pack_live.js draws. No arithmetic of the model happens here: only the
// argmax and the top-k of the graph's log-probabilities, and the forced first token (BART, mBART).
// A decoder-only or encoder-only model: PackNet.runOneStack(net, ids, 5, giveUp) ->
//   {ids (prompt + continuation, or the encoded input), maps [L] of (H, N, N), emb, pe, logProbs (N rows, or null),
//    steps: [{id, prob, top, topProbs}] (decoder-only), stop, out, prompt}
const PackNet = (function () {
  "use strict";
  function bytes(b64) {
    if (Uint8Array.fromBase64) return Uint8Array.fromBase64(b64);  // native (Chromium 140+, Firefox 133+, Safari 18.2+)
    const bin = atob(b64), out = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
    return out;
  }
  async function gunzip(data) {
    const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  let runtime = null;
  // The WebAssembly runtime, once per page: binary from the page, glue as a blob: URL. A page that carries
  // onnxruntime's WebGPU build too (a folder pack) starts that one instead when the browser has a GPU adapter: the
  // graphs then run on the GPU (the nodes WebGPU lacks on WebAssembly). Resolves to the providers to ask for.
  function start() {
    if (!runtime) {
      runtime = (async () => {
        const carried = document.getElementById("ort-webgpu-wasm");
        const adapter = carried && navigator.gpu ? await navigator.gpu.requestAdapter().catch(() => null) : null;
        const [api, glueId, wasmId] = adapter ? ["ort-webgpu-api", "ort-webgpu-glue", "ort-webgpu-wasm"] : [null, "ort-glue", "ort-wasm"];
        if (api) {  // the WebGPU build's API replaces the WebAssembly one (which has started nothing yet)
          const script = document.createElement("script");
          script.textContent = document.getElementById(api).textContent;
          document.head.appendChild(script);
        }
        ort.env.wasm.numThreads = 1;
        ort.env.wasm.proxy = false;
        ort.env.wasm.wasmBinary = await gunzip(bytes(document.getElementById(wasmId).textContent));
        const glue = new Blob([document.getElementById(glueId).textContent], {type: "text/javascript"});
        ort.env.wasm.wasmPaths = {mjs: URL.createObjectURL(glue)};
        return adapter ? ["webgpu", "wasm"] : ["wasm"];
      })();
    }
    return runtime;
  }
  // A large pack's weights: scripts beside the page (weights-NN.js, loaded by <script src>: file:// allows no fetch)
  // push [index, base64] onto window.PackWeights; the graphs read them as ONNX external data, every tensor once.
  function weights(spec) {
    const w = spec.weights, parts = window.PackWeights || [], out = new Uint8Array(w.bytes);
    if (parts.length !== w.files.length) throw new Error(`${w.files.length - parts.length} of the files ${w.files.join(", ")} beside this page did not load`);
    let at = 0;
    for (const [, b64] of parts.sort((a, b) => a[0] - b[0])) {
      const chunk = bytes(b64);
      out.set(chunk, at);
      at += chunk.length;
    }
    window.PackWeights = null;  // the strings can go
    return out;
  }
  async function open(spec) {
    // logSeverityLevel 3: errors only (WebGPU's notice that shape nodes run on the CPU is no error of the page)
    const ep = await start(), opts = {executionProviders: ep, graphOptimizationLevel: "all", logSeverityLevel: 3};
    if (spec.weights) opts.externalData = [{path: spec.weights.location, data: weights(spec)}];
    const names = Object.keys(spec.graphs);  // the model's shape: both graphs, or the one of its one stack
    const made = [];  // one after the other: each session copies the weights it reads
    for (const k of names) made.push(await ort.InferenceSession.create(bytes(spec.graphs[k]), opts));
    const {encoder, decoder, step} = Object.fromEntries(names.map((k, i) => [k, made[i]]));
    const c = spec.config;
    return {config: c, encoder, decoder, step, H: c.n_heads, L: c.n_decoder_layers, Lenc: c.n_encoder_layers,
      d: c.d_model, V: c.tgt_vocab_size, rule: spec.decoding, ep: ep[0]};
  }
  const ids64 = ids => new ort.Tensor("int64", BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);
  const flag = on => new ort.Tensor("bool", Uint8Array.from([on ? 1 : 0]), [1]);
  const layers = (o, kind, L) => Array.from({length: L}, (_, l) => o[`${kind}.${l}`].data);
  // The teacher-forced decoder over tgt; padMask: mask <pad> keys (the capture's pass) or not (a greedy step of the app)
  async function decode(net, tgt, enc, padMask) {
    const o = await net.decoder.run({target_ids: ids64(tgt), memory: enc.memory, source_ids: enc.ids, pad_mask: flag(padMask)});
    return {logProbs: o.log_probs.data, self: layers(o, "decoder_self", net.L), cross: layers(o, "cross", net.L),
      emb: o.target_embeddings.data, pe: o.target_positions.data};
  }
  // The newest position's rows (query T-1) of every layer's maps: (H, T, K) -> (H, K)
  const lastRows = (maps, H, T, K) => maps.map(m => {
    const row = new Float32Array(H * K);
    for (let h = 0; h < H; h++) row.set(m.subarray((h * T + T - 1) * K, (h * T + T) * K), h * K);
    return row;
  });
  // A large model's step graphs (onnx_export.export_step_graphs): the encoder gave every layer's cross-attention keys
  // and values; one step reads the newest token of seq with the key/value cache `past` of the ones before it
  async function oneStep(net, enc, seq, past, padMask) {
    const cross = Object.fromEntries(Object.entries(enc.outputs).filter(([k]) => k.startsWith("cross_"))), next = {};
    const o = await net.step.run({target_ids: ids64(seq.slice(-1)), key_ids: ids64(seq), source_ids: enc.ids, ...past,
      ...cross, pad_mask: flag(padMask)});
    for (let l = 0; l < net.L; l++) for (const w of ["key", "value"]) next[`past_${w}.${l}`] = o[`present_${w}.${l}`];
    return {logProbs: o.log_probs.data, self: layers(o, "decoder_self", net.L), cross: layers(o, "cross", net.L),  // (H, t + 1), (H, S)
      emb: o.target_embeddings.data, pe: o.target_positions.data, past: next};
  }
  // The decoder of an encoder-decoder as one step function: next(seq, padMask) -> the newest position's log-probs (lp)
  // and maps' rows (self (H, t + 1), cross (H, S) per layer); over the step graphs it keeps its key/value cache
  function stepper(net, enc) {
    const S = enc.ids.dims[1], k = net.step && enc.outputs["cross_key.0"];
    let past = {};  // the self-attention cache of no token yet: (1, H_kv, 0, dk)
    for (let l = 0; k && l < net.L; l++) for (const w of ["key", "value"]) past[`past_${w}.${l}`] = new ort.Tensor("float32", new Float32Array(0), [1, k.dims[1], 0, k.dims[3]]);
    return async (seq, padMask) => {
      if (net.step) {
        const r = await oneStep(net, enc, seq, past, padMask);
        past = r.past;
        return {...r, lp: r.logProbs};
      }
      const whole = await decode(net, seq, enc, padMask), T = seq.length;
      return {lp: whole.logProbs.subarray((T - 1) * net.V, T * net.V), self: lastRows(whole.self, net.H, T, T),
        cross: lastRows(whole.cross, net.H, T, S), whole};
    };
  }
  // The capture's (H, T, T), (H, T, S), embeddings and positions from the rows of the steps over <s> y_1 .. y_n
  function assemble(net, rows, S) {
    const T = rows.length, H = net.H, d = net.d, self = [], cross = [];
    for (let l = 0; l < net.L; l++) {
      const m = new Float32Array(H * T * T), x = new Float32Array(H * T * S);
      rows.forEach((r, t) => {
        for (let h = 0; h < H; h++) {
          m.set(r.self[l].subarray(h * (t + 1), (h + 1) * (t + 1)), (h * T + t) * T);
          x.set(r.cross[l].subarray(h * S, (h + 1) * S), (h * T + t) * S);
        }
      });
      self.push(m);
      cross.push(x);
    }
    const emb = new Float32Array(T * d), pe = new Float32Array(T * d);
    rows.forEach((r, t) => { emb.set(r.emb, t * d); pe.set(r.pe, t * d); });
    return {self, cross, emb, pe};
  }
  function topIds(lp, k) {  // the k largest of one row, largest first (ties: the lower id), in one pass over the row
    const ids = [];
    for (let i = 0; i < lp.length; i++) {
      const v = lp[i];
      if (ids.length === k && !(v > lp[ids[k - 1]])) continue;
      let j = ids.length < k ? ids.push(i) - 1 : k - 1;
      while (j > 0 && lp[ids[j - 1]] < v) { ids[j] = ids[j - 1]; j--; }
      ids[j] = i;
    }
    return ids;
  }
  // The one decoding loop: greedy as model.decoding.greedy_decode, from seq, next(seq) -> {lp: the newest position's
  // log-probs, self, cross}; the forced first token (core.DecoderSession.step); at most the steps of the model's
  // step limit (model.decoding.limit_rule, spec.decoding) for n tokens read; giveUp() awaited before each step: true
  // gives up the run (null), e.g. the page's own warm-up run when a visitor's input waits behind it.
  async function greedy(net, seq, n, topK, giveUp, next) {
    const c = net.config, r = net.rule, V = net.V, steps = [], out = [];
    const limit = Math.max(0, Math.min(r.source * n + r.slack, r.room - r.prompt * n));
    let stop = "max_len", last = null;
    for (let t = 0; t < limit; t++) {
      if (giveUp && await giveUp()) return null;
      last = await next(seq);
      let lp = last.lp;
      if (t === 0 && c.forced_bos_id !== null && c.forced_bos_id !== undefined) {
        lp = new Float32Array(V).fill(-Infinity);
        lp[c.forced_bos_id] = 0;
      }
      const top = topIds(lp, Math.max(1, Math.min(topK, V)));
      steps.push({id: top[0], prob: Math.exp(lp[top[0]]), top, topProbs: top.map(i => Math.exp(lp[i])), self: last.self, cross: last.cross});
      out.push(top[0]);
      if (top[0] === c.eos_id) { stop = "eos"; break; }
      seq = [...seq, top[0]];
    }
    return {steps, out, stop, last, seq};
  }
  // An encoder-decoder: the encoder once, greedy decoding, then the capture's pass over <s> y_1 .. y_n
  async function run(net, srcIds, topK, giveUp) {
    const c = net.config, S = srcIds.length, V = net.V, ids = ids64(srcIds), o = await net.encoder.run({source_ids: ids});
    const enc = {ids, memory: o.memory, outputs: o, attention: layers(o, "encoder_self", net.Lenc),
      emb: o.source_embeddings.data, pe: o.source_positions.data};
    const next = stepper(net, enc), rows = [];
    const g = await greedy(net, [c.bos_id], S, topK, giveUp, seq => next(seq, false).then(r => (rows.push(r), r)));
    if (!g) return null;
    const tgt = [c.bos_id, ...g.out.filter(i => i !== c.eos_id)], pad = tgt.slice(1).includes(c.pad_id);
    let full, logProbs;
    if (net.step) {  // the greedy steps' rows (one more step when the length limit stopped decoding); every step again
      // with the <pad> keys masked when the model wrote a <pad> (as the capture)
      const capRows = pad ? [] : rows.slice(0, tgt.length), again = pad ? stepper(net, enc) : next;
      while (capRows.length < tgt.length) capRows.push(await again(tgt.slice(0, capRows.length + 1), true));
      [full, logProbs] = [assemble(net, capRows, S), capRows.map(r => r.logProbs)];
    } else {  // the last step's pass when it read exactly that (it wrote </s>) and no <pad>
      full = g.stop === "eos" && !pad ? g.last.whole : await decode(net, tgt, enc, true);
      logProbs = tgt.map((_, t) => full.logProbs.subarray(t * V, (t + 1) * V));
    }
    return {enc, steps: g.steps, stop: g.stop, out: g.out, tgt, full, logProbs};
  }
  // -- one stack: the decoder of a decoder-only model, the encoder of an encoder-only one ------------------------
  async function pass(net, ids) {  // the one graph over the whole sequence
    const decoder = net.config.shape === "decoder-only", side = decoder ? "target" : "source";
    const o = await (decoder ? net.decoder : net.encoder).run({[`${side}_ids`]: ids64(ids)});
    return {maps: layers(o, decoder ? "decoder_self" : "encoder_self", decoder ? net.L : net.Lenc),
      emb: o[`${side}_embeddings`].data, pe: o[`${side}_positions`].data, logProbs: o.log_probs ? o.log_probs.data : null};
  }
  // Decoder-only: greedy continuation of the prompt, each step one pass over the whole sequence; then the app's pass
  // over prompt + continuation (</s> left out): the last step's when it read exactly that. Encoder-only: one pass.
  async function runOneStack(net, ids, topK, giveUp) {
    const V = net.V, one = {steps: [], out: [], stop: null, seq: ids};
    const g = net.config.shape !== "decoder-only" ? one : await greedy(net, ids, ids.length, topK, giveUp,
      seq => pass(net, seq).then(r => ({...r, lp: r.logProbs.subarray((seq.length - 1) * V, seq.length * V)})));
    if (!g) return null;
    const full = g.stop === "eos" ? g.last : await pass(net, g.seq);
    return {maps: full.maps, emb: full.emb, pe: full.pe, logProbs: full.logProbs, ids: g.seq, steps: g.steps, out: g.out,
      stop: g.stop, prompt: ids.length};
  }
  return {open, run, runOneStack, start};
})();
