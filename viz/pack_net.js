// The lecture pack's network: the model's own exported graphs (model/analysis/onnx_export.py) run by onnxruntime-web
// (viz/vendor/onnxruntime-web), whose WebAssembly binary and glue travel inside this page: no request, file:// works.
//   const net = await PackNet.open(spec)      // two sessions: encoder, decoder (teacher-forced, whole prefix); or, in
//                                             // a folder pack, encoder (with cross keys/values) and step (cached);
//                                             // net.ep: "webgpu" or "wasm", where they run
//   const r = await PackNet.run(net, srcIds, 5) // greedy decoding as model.decoding.greedy_decode, then the capture
//                                             // (a 4th argument, giveUp(): awaited before each step; true: null)
// r: {enc: {attention [L] of (H, S, S), emb, pe}, steps: [{id, prob, top, topProbs, self [L] of (H, t+1),
//     cross [L] of (H, S)}], stop, out, tgt, full: {self [L] of (H, T, T), cross [L] of (H, T, S), emb, pe}, logProbs}
// (flat Float32Arrays, row-major), the form pack_live.js draws. No arithmetic of the model happens here: only the
// argmax and the top-k of the graph's log-probabilities, and the forced first token (BART, mBART).
// A decoder-only or encoder-only model has one graph over its whole sequence (PackNet.runOneStack):
// r: {ids (the sequence: prompt + continuation, or the encoded input), maps [L] of (H, N, N), emb, pe, logProbs
//     (N rows, or null), steps: [{id, prob, top, topProbs}] (decoder-only), stop, out, prompt}
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
      d: c.d_model, V: c.tgt_vocab_size, ep: ep[0]};
  }
  const ids64 = ids => new ort.Tensor("int64", BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);
  async function encode(net, srcIds) {
    const ids = ids64(srcIds), o = await net.encoder.run({source_ids: ids});
    const attention = [];
    for (let l = 0; l < net.Lenc; l++) attention.push(o[`encoder_self.${l}`].data);
    return {ids, memory: o.memory, attention, emb: o.source_embeddings.data, pe: o.source_positions.data, outputs: o};
  }
  // padMask: mask <pad> keys of tgt (the capture's teacher-forced pass) or not (a cached greedy step of the app)
  async function decode(net, tgt, enc, padMask) {
    const feeds = {target_ids: ids64(tgt), memory: enc.memory, source_ids: enc.ids};
    feeds.pad_mask = new ort.Tensor("bool", Uint8Array.from([padMask ? 1 : 0]), [1]);
    const o = await net.decoder.run(feeds);
    const self = [], cross = [];
    for (let l = 0; l < net.L; l++) { self.push(o[`decoder_self.${l}`].data); cross.push(o[`cross.${l}`].data); }
    return {logProbs: o.log_probs.data, self, cross, emb: o.target_embeddings.data, pe: o.target_positions.data};
  }
  // The newest position's rows (query T-1) of every layer's maps: (H, T, K) -> (H, K)
  function lastRows(maps, H, T, K) {
    return maps.map(m => {
      const row = new Float32Array(H * K);
      for (let h = 0; h < H; h++) row.set(m.subarray((h * T + T - 1) * K, (h * T + T) * K), h * K);
      return row;
    });
  }
  // -- a large model: the encoder once (with every layer's cross-attention keys and values), then one cached step per
  // token (onnx_export.export_step_graphs); the capture's maps are the steps' rows ------------------------------
  async function encodeOnce(net, srcIds) {
    const enc = await encode(net, srcIds), o = enc.outputs;
    enc.cross = {};
    for (let l = 0; l < net.L; l++) for (const w of ["key", "value"]) enc.cross[`cross_${w}.${l}`] = o[`cross_${w}.${l}`];
    const k = enc.cross["cross_key.0"];
    enc.empty = {};  // the self-attention cache of no token yet: (1, H_kv, 0, dk)
    for (let l = 0; l < net.L; l++) for (const w of ["key", "value"]) enc.empty[`past_${w}.${l}`] = new ort.Tensor("float32", new Float32Array(0), [1, k.dims[1], 0, k.dims[3]]);
    return enc;
  }
  // One step: the newest token of seq (every token so far), the cache of the ones before it.
  async function oneStep(net, enc, seq, past, padMask) {
    const feeds = {target_ids: ids64(seq.slice(-1)), key_ids: ids64(seq), source_ids: enc.ids, ...past, ...enc.cross};
    feeds.pad_mask = new ort.Tensor("bool", Uint8Array.from([padMask ? 1 : 0]), [1]);
    const o = await net.step.run(feeds), self = [], cross = [], next = {};
    for (let l = 0; l < net.L; l++) {
      self.push(o[`decoder_self.${l}`].data);  // (H, t + 1)
      cross.push(o[`cross.${l}`].data);  // (H, S)
      for (const w of ["key", "value"]) next[`past_${w}.${l}`] = o[`present_${w}.${l}`];
    }
    return {logProbs: o.log_probs.data, self, cross, emb: o.target_embeddings.data, pe: o.target_positions.data, past: next};
  }
  // The capture's (H, T, T), (H, T, S), embeddings, positions and log-probs from the rows of the steps over <s> y_1 .. y_n
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
  async function runSteps(net, srcIds, topK, giveUp) {
    const c = net.config, S = srcIds.length, V = net.V, enc = await encodeOnce(net, srcIds);
    const limit = Math.max(0, Math.min(S + 50, c.max_len - 1));  // model.decoding.step_limit
    const steps = [], out = [], seq = [c.bos_id], rows = [];
    let stop = "max_len", past = enc.empty;
    for (let t = 0; t < limit; t++) {
      if (giveUp && await giveUp()) return null;
      const r = await oneStep(net, enc, seq, past, false);
      past = r.past;
      rows.push(r);
      let lp = r.logProbs;
      if (t === 0 && c.forced_bos_id !== null && c.forced_bos_id !== undefined) {  // core.DecoderSession.step
        lp = new Float32Array(V).fill(-Infinity);
        lp[c.forced_bos_id] = 0;
      }
      const s = ranked(lp, V, topK);
      steps.push({...s, self: r.self, cross: r.cross});
      out.push(s.id);
      seq.push(s.id);
      if (s.id === c.eos_id) { stop = "eos"; break; }
    }
    const tgt = [c.bos_id, ...out.filter(i => i !== c.eos_id)];
    // the capture's pass over <s> y_1 .. y_n, row by row: the greedy steps' rows (one more step when the length limit
    // stopped decoding); every step again with the <pad> keys masked when the model wrote a <pad> (as the capture)
    let capRows = rows.slice(0, tgt.length);
    if (tgt.slice(1).includes(c.pad_id)) { capRows = []; past = enc.empty; }
    while (capRows.length < tgt.length) {
      const r = await oneStep(net, enc, tgt.slice(0, capRows.length + 1), past, true);
      past = r.past;
      capRows.push(r);
    }
    const full = assemble(net, capRows, S), logProbs = capRows.map(r => r.logProbs);
    return {enc, steps, stop, out, tgt, full, logProbs};
  }
  // giveUp: a function awaited before each decoder step; true gives up the run (null), e.g. the page's own warm-up run
  // when a visitor's input waits behind it
  async function run(net, srcIds, topK, giveUp) {
    if (net.step) return runSteps(net, srcIds, topK, giveUp);
    const c = net.config, S = srcIds.length, V = net.V, enc = await encode(net, srcIds);
    const limit = Math.max(0, Math.min(S + 50, c.max_len - 1));  // model.decoding.step_limit
    const steps = [], out = [], inputs = [c.bos_id];
    let stop = "max_len", last = null;
    for (let t = 0; t < limit; t++) {
      if (giveUp && await giveUp()) return null;
      last = await decode(net, inputs, enc, false);
      const T = inputs.length;
      let lp = last.logProbs.subarray((T - 1) * V, T * V);
      if (t === 0 && c.forced_bos_id !== null && c.forced_bos_id !== undefined) {  // core.DecoderSession.step
        lp = new Float32Array(V).fill(-Infinity);
        lp[c.forced_bos_id] = 0;
      }
      const order = Array.from(lp.keys()).sort((a, b) => lp[b] - lp[a] || a - b);
      const choice = order[0], k = Math.max(1, Math.min(topK, V));
      steps.push({id: choice, prob: Math.exp(lp[choice]), top: order.slice(0, k), topProbs: order.slice(0, k).map(i => Math.exp(lp[i])),
        self: lastRows(last.self, net.H, T, T), cross: lastRows(last.cross, net.H, T, S)});
      out.push(choice);
      inputs.push(choice);
      if (choice === c.eos_id) { stop = "eos"; break; }
    }
    const tgt = [c.bos_id, ...out.filter(i => i !== c.eos_id)];
    // the capture's pass over <s> y_1 .. y_n: the last step's when it read exactly that (it wrote </s>) and no <pad>
    const same = last && stop === "eos" && tgt.length === inputs.length - 1 && !tgt.slice(1).includes(c.pad_id);
    const full = same ? last : await decode(net, tgt, enc, true);
    const logProbs = tgt.map((_, t) => full.logProbs.subarray(t * V, (t + 1) * V));
    return {enc, steps, stop, out, tgt, full, logProbs};
  }
  // -- one stack: the decoder of a decoder-only model, the encoder of an encoder-only one ------------------------
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
  function ranked(lp, V, topK) {  // the argmax and the top-k of one row of log-probabilities (ties: the lower id)
    const top = topIds(lp, Math.max(1, Math.min(topK, V)));
    return {id: top[0], prob: Math.exp(lp[top[0]]), top, topProbs: top.map(i => Math.exp(lp[i]))};
  }
  async function pass(net, ids) {  // the one graph over the whole sequence
    const decoder = net.config.shape === "decoder-only", o = await (decoder ? net.decoder : net.encoder).run(
      decoder ? {target_ids: ids64(ids)} : {source_ids: ids64(ids)});
    const kind = decoder ? "decoder_self" : "encoder_self", L = decoder ? net.L : net.Lenc, maps = [];
    for (let l = 0; l < L; l++) maps.push(o[`${kind}.${l}`].data);
    const side = decoder ? "target" : "source";
    return {maps, emb: o[`${side}_embeddings`].data, pe: o[`${side}_positions`].data,
      logProbs: o.log_probs ? o.log_probs.data : null};
  }
  // Decoder-only: greedy continuation of the prompt as model.decoding (step_limit: 50 tokens at most, within max_len),
  // each step one pass over the whole sequence; then the app's pass over prompt + continuation. Encoder-only: one pass.
  async function runOneStack(net, ids, topK, giveUp) {
    const c = net.config, V = net.V;
    if (c.shape !== "decoder-only") {
      const r = await pass(net, ids);
      return {...r, ids, steps: [], out: [], stop: null, prompt: ids.length};
    }
    const limit = Math.max(0, Math.min(50, c.max_len - ids.length)), seq = [...ids], steps = [], out = [];
    let stop = "max_len", last = null;
    for (let t = 0; t < limit; t++) {
      if (giveUp && await giveUp()) return null;
      last = await pass(net, seq);
      let lp = last.logProbs.subarray((seq.length - 1) * V, seq.length * V);
      if (t === 0 && c.forced_bos_id !== null && c.forced_bos_id !== undefined) {  // core.DecoderSession.step
        lp = new Float32Array(V).fill(-Infinity);
        lp[c.forced_bos_id] = 0;
      }
      const s = ranked(lp, V, topK);
      steps.push(s);
      out.push(s.id);
      if (s.id === c.eos_id) { stop = "eos"; break; }
      seq.push(s.id);
    }
    // the capture's pass over prompt + continuation (</s> left out): the last step's when it read exactly that
    const full = last && stop === "eos" ? last : await pass(net, seq);
    return {...full, ids: seq, steps, out, stop, prompt: ids.length};
  }
  return {open, run, runOneStack, start};
})();
