// The lecture pack's network: the model's own exported graphs (pack/onnx_graphs.py) run by onnxruntime-web
// (static/vendor/onnxruntime-web), whose WebAssembly binary and glue travel inside the page: no request, file:// works.
//   const net = await PackNet.open(spec)   // the graphs' sessions: an encoder-decoder's encoder (with the cross
//     keys/values) and cached step, or the one graph of a one-stack model; net.ep: "webgpu" or "wasm"
//   const r = await PackNet.run(net, ids, giveUp)   // greedy decoding (giveUp: see greedy), then the capture
// r: {ids: the sequence the maps are of (the decoder input, the prompt and its continuation, or the encoded input),
//     maps: {kind: (L, H + 1, T, K), as the pack stores an input's}, emb, pe, logProbs: (T, V) or null, top: the
//     last position's top candidates (the model's next token first), steps: [{id, prob, top, topProbs, rows
//     (encoder-decoder): {self: (L * H, t + 1), cross: (L * H, S)}}], stop, out, prompt, enc (encoder-decoder): the
//     source side's {maps, emb, pe}}, flat Float32Arrays, row-major (pack_live.js draws it).
// No arithmetic of the model happens here: the graphs give the maps in the page's layout, each step's top candidates
// (the forced first token's at a first step: BART, mBART) and its attention rows (pack/onnx_graphs.py).
const PackNet = (function () {
  "use strict";
  const bytes = b64 => (Uint8Array.fromBase64  // native (Chromium 140+, Firefox 133+, Safari 18.2+)
    ? Uint8Array.fromBase64(b64) : Uint8Array.from(atob(b64), ch => ch.charCodeAt(0)));
  async function gunzip(data) {
    const stream = new Blob([data]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Uint8Array(await new Response(stream).arrayBuffer());
  }
  let runtime = null;
  // The WebAssembly runtime, once per page: binary from the page, glue as a blob: URL. A page that carries
  // onnxruntime's WebGPU build too (a folder pack) starts that one instead when the browser has a GPU adapter: the
  // graphs then run on the GPU (the nodes WebGPU lacks on WebAssembly). Resolves to the providers to ask for.
  function start() {
    runtime = runtime || (async () => {
      const text = id => document.getElementById(id).textContent;
      const carried = document.getElementById("ort-webgpu-wasm");
      const adapter = carried && navigator.gpu ? await navigator.gpu.requestAdapter().catch(() => null) : null;
      const prefix = adapter ? "ort-webgpu" : "ort";
      if (adapter) {  // the WebGPU build's API replaces the WebAssembly one (which has started nothing yet)
        const script = document.createElement("script");
        script.textContent = text("ort-webgpu-api");
        document.head.appendChild(script);
      }
      Object.assign(ort.env.wasm, {numThreads: 1, proxy: false, wasmBinary: await gunzip(bytes(text(`${prefix}-wasm`))),
        wasmPaths: {mjs: URL.createObjectURL(new Blob([text(`${prefix}-glue`)], {type: "text/javascript"}))}});
      return adapter ? ["webgpu", "wasm"] : ["wasm"];
    })();
    return runtime;
  }
  // A large pack's weights: scripts beside the page (weights-NN.js, loaded by <script src>: file:// allows no fetch)
  // push [index, base64] onto window.PackWeights, file i the bytes from i * chunk on; the graphs read them as ONNX
  // external data, every tensor once.
  function weights(spec) {
    const w = spec.weights, parts = window.PackWeights || [], out = new Uint8Array(w.bytes);
    if (parts.length !== w.files.length) {
      const missing = w.files.length - parts.length;
      throw new Error(w.missing.replace("{n}", missing).replace("{files}", w.files.join(", ")));
    }
    for (const [i, b64] of parts) out.set(bytes(b64), i * w.chunk);
    window.PackWeights = null;  // the strings can go
    return out;
  }
  async function open(spec) {
    // logSeverityLevel 3: errors only (WebGPU's notice that shape nodes run on the CPU is no error of the page)
    const ep = await start(), opts = {executionProviders: ep, graphOptimizationLevel: "all", logSeverityLevel: 3};
    if (spec.weights) opts.externalData = [{path: spec.weights.location, data: weights(spec)}];
    const net = {config: spec.config, rule: spec.decoding, ep: ep[0]};
    // the model's shape: encoder and step, or the one graph of its one stack; one after the other: each session copies
    // the weights it reads
    for (const [name, graph] of Object.entries(spec.graphs)) {
      net[name] = await ort.InferenceSession.create(bytes(graph), opts);
    }
    return net;
  }
  const ids64 = ids => new ort.Tensor("int64", BigInt64Array.from(ids.map(BigInt)), [1, ids.length]);
  const flag = on => new ort.Tensor("bool", Uint8Array.from([on ? 1 : 0]), [1]);
  const KINDS = ["encoder_self", "decoder_self", "cross"];
  // A graph's outputs by onnx_graphs's names: each kind's maps, the embeddings and positions, log-probs, the newest
  // position's top candidates and, a cached step, its attention rows
  function outputs(o, side) {
    const maps = Object.fromEntries(KINDS.filter(kind => o[kind]).map(kind => [kind, o[kind].data]));
    const top = o.top_ids ? Array.from(o.top_ids.data, Number) : null, logProbs = o.log_probs ? o.log_probs.data : null;
    const rows = o.step_self ? {self: o.step_self.data, cross: o.step_cross.data} : null;
    return {maps, emb: o[`${side}_embeddings`].data, pe: o[`${side}_positions`].data, logProbs, top,
      topProbs: o.top_probs ? Array.from(o.top_probs.data) : null, rows};
  }
  // The cached step graph (onnx_graphs.export_step_graphs) as a step function: next(seq, padMask) reads the newest
  // token of seq with the key/value cache of the ones before it, and the encoder's cross-attention keys and values
  function stepper(net, enc) {
    const cross = Object.fromEntries(Object.entries(enc.o).filter(([k]) => k.startsWith("cross_")));
    const k = enc.o["cross_key.0"], past = {}, L = net.config.n_decoder_layers, each = f => {
      for (let l = 0; l < L; l++) for (const w of ["key", "value"]) past[`past_${w}.${l}`] = f(`present_${w}.${l}`);
    };
    each(() => new ort.Tensor("float32", new Float32Array(0), [1, k.dims[1], 0, k.dims[3]]));  // no token yet
    return async (seq, padMask) => {
      const o = await net.step.run({target_ids: ids64(seq.slice(-1)), key_ids: ids64(seq), source_ids: enc.ids, ...past,
        ...cross, pad_mask: flag(padMask)});
      each(name => o[name]);
      return outputs(o, "target");
    };
  }
  // The capture's maps (L, H + 1, T, T) and (L, H + 1, T, S), embeddings and positions from the steps over <s> y_1 ..
  // y_n: step t's (L, H + 1, 1, K) is row t of each map (a key after it NaN, as the causal mask is drawn)
  function assemble(rows, S) {
    const T = rows.length, blocks = rows[0].maps.decoder_self.length, maps = {};  // L * (H + 1): step 0 reads one key
    for (const [kind, K] of [["decoder_self", T], ["cross", S]]) {
      maps[kind] = new Float32Array(blocks * T * K).fill(NaN);
      rows.forEach((r, t) => {
        const m = r.maps[kind], n = m.length / blocks;
        for (let b = 0; b < blocks; b++) maps[kind].set(m.subarray(b * n, (b + 1) * n), (b * T + t) * K);
      });
    }
    const cat = key => {
      const d = rows[0][key].length, a = new Float32Array(T * d);
      rows.forEach((r, t) => a.set(r[key], t * d));
      return a;
    };
    return {maps, emb: cat("emb"), pe: cat("pe"), logProbs: cat("logProbs"), top: rows[T - 1].top};
  }
  // The one decoding loop: greedy as model.decoding.greedy_decode, from seq, next(seq) -> a graph's outputs (the
  // newest position's top candidates, the graph's choice first: onnx_graphs._top); at most the steps of the model's
  // step limit (model.decoding.limit_rule, spec.decoding) for n tokens read; giveUp() awaited before each step: true
  // gives up the run (null), e.g. the page's own warm-up run when a visitor's input waits behind it.
  async function greedy(net, seq, n, giveUp, next) {
    const c = net.config, r = net.rule, steps = [], out = [];
    const limit = Math.max(0, Math.min(r.source * n + r.slack, r.room - r.prompt * n));
    let stop = "max_len", last = null;
    for (let t = 0; t < limit; t++) {
      if (giveUp && await giveUp()) return null;
      last = await next(seq);
      const id = last.top[0];
      steps.push({id, prob: last.topProbs[0], top: last.top, topProbs: last.topProbs, rows: last.rows});
      out.push(id);
      if (id === c.eos_id) { stop = "eos"; break; }
      seq = [...seq, id];
    }
    return {steps, out, stop, last, seq};
  }
  async function run(net, ids, giveUp) {
    const c = net.config;
    if (!net.step) {  // one stack: a decoder-only model's greedy continuation, each step one pass over the sequence,
      // then the app's pass over prompt + continuation (</s> left out): the last step's when it read exactly that;
      // an encoder-only model's one pass
      const graph = net.decoder || net.encoder, side = net.decoder ? "target" : "source";
      const pass = async seq => outputs(await graph.run({[`${side}_ids`]: ids64(seq)}), side);
      const g = net.decoder ? await greedy(net, ids, ids.length, giveUp, pass) : {steps: [], out: [], seq: ids};
      if (!g) return null;
      const full = g.stop === "eos" ? g.last : await pass(g.seq);
      return {...full, ids: g.seq, steps: g.steps, out: g.out, stop: g.stop || null, prompt: ids.length};
    }
    // An encoder-decoder: the encoder once, greedy decoding by cached steps, then the capture over <s> y_1 .. y_n
    const source = ids64(ids), o = await net.encoder.run({source_ids: source});
    const enc = {...outputs(o, "source"), ids: source, o};
    const next = stepper(net, enc), rows = [];
    const kept = seq => next(seq, false).then(r => (rows.push(r), r));
    const g = await greedy(net, [c.bos_id], ids.length, giveUp, kept);
    if (!g) return null;
    const tgt = [c.bos_id, ...g.out.filter(i => i !== c.eos_id)], pad = tgt.slice(1).includes(c.pad_id);
    // the greedy steps' rows (one more step when the length limit stopped decoding); every step again with the <pad>
    // keys masked when the model wrote a <pad> (as the capture)
    const capRows = pad ? [] : rows.slice(0, tgt.length), again = pad ? stepper(net, enc) : next;
    while (capRows.length < tgt.length) capRows.push(await again(tgt.slice(0, capRows.length + 1), true));
    return {...assemble(capRows, ids.length), enc, ids: tgt, steps: g.steps, out: g.out, stop: g.stop};
  }
  return {open, run, start};
})();
