"""The opus-mt-en-de shape (issue 33's real size) through the model's own ONNX graphs, in onnxruntime (Python, one
thread): what the pack's page would do with it, before the page can (docs/pack.md, "Not done yet").

    python -m benchmarks.bench_pack_real_size            # 30 decoder steps over a 30-token source
    python -m benchmarks.bench_pack_real_size --steps 10

This project's model in the shape of Helsinki-NLP/opus-mt-en-de (d_model 512, 6 + 6 layers, 8 heads, d_ff 2048,
vocabulary 58,101 shared and tied, sinusoids in the half layout, swish), random weights built here. Rows:
  pytorch        the baseline: the Python model's own work for the input (greedy_decode with every step's
                 attention recorded, then capture's teacher-forced pass), one torch thread
  full prefix    what the pack does today: the encoder graph, then the decoder graph over the whole prefix at every
                 step (export_graphs), then the capture's pass
  cached step    export_step_graphs: the encoder graph (with every layer's cross-attention keys and values, computed
                 once), then one-token steps with the key/value cache (the capture's maps assembled from the steps' rows)
Columns: graph MB (float32 ONNX bytes of the graphs the row runs), ms (median of 3 after a warm-up), and the ratio
against pytorch. Decoding runs `--steps` steps whatever the model writes (random weights rarely write </s>).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from benchmarks.common import table  # noqa: E402
from model import TransformerConfig, build_model  # noqa: E402
from pack.onnx_graphs import export_graphs, export_step_graphs, step_names  # noqa: E402

OPUS_MT = dict(
    d_model=512, n_heads=8, d_ff=2048, n_encoder_layers=6, n_decoder_layers=6, src_vocab_size=58101,
    tgt_vocab_size=58101, max_len=512, dropout=0.0, share_embeddings=True, tie_generator=True,
    positional="sinusoidal", pe_layout="half", activation="silu", pad_id=58100, bos_id=58100, eos_id=0,
)  # fmt: skip


def median_ms(fn, repeats: int = 3) -> float:
    fn()  # warm-up: onnxruntime prepares its kernels on the first run
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(1000 * (time.perf_counter() - t0))
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    import onnxruntime as ort

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30, help="decoder steps (a 20-word sentence: about 30 tokens)")
    parser.add_argument("--source", type=int, default=30, help="source tokens")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cfg = TransformerConfig(**OPUS_MT)
    model = build_model(cfg, seed=0)
    params = sum(p.numel() for p in model.parameters())
    rng = np.random.default_rng(0)
    source = [int(i) for i in rng.integers(1, 58000, args.source - 1)] + [cfg.eos_id]
    src = np.array([source], dtype=np.int64)
    t0 = time.perf_counter()
    graphs = export_graphs(model)
    step_graphs = export_step_graphs(model)
    export_s = time.perf_counter() - t0
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = opts.inter_op_num_threads = 1
    make = lambda g: ort.InferenceSession(g, opts, providers=["CPUExecutionProvider"])  # noqa: E731
    enc, dec = make(graphs["encoder"]), make(graphs["decoder"])
    enc_kv, step = make(step_graphs["encoder"]), make(step_graphs["step"])
    inputs, outputs = step_names(model)
    kept = {i.name for i in step.get_inputs()}
    H_kv, dk = model.decoder.layers[0].self_attn.n_kv_heads, model.decoder.layers[0].self_attn.d_head

    def pytorch():
        from model.decoding.core import RowsPolicy, run  # the one decoding loop, attention kept at every step

        with torch.no_grad():
            policy = RowsPolicy([args.steps], stop_at_eos=False, eos_id=cfg.eos_id)
            run(model, [source], policy, args.steps, bos_id=cfg.bos_id, keep=True)
            memory, mask = model.encode(torch.tensor(src))
            from model.network.recording import record

            with record(model):
                model.decode(torch.randint(1, 58000, (1, args.steps)), memory, mask)

    def full_prefix():
        memory = enc.run(["memory"], {"source_ids": src})[0]
        target = [cfg.bos_id]
        feeds = {"memory": memory, "source_ids": src, "pad_mask": np.array([False])}
        for _ in range(args.steps):
            out = dec.run(None, {**feeds, "target_ids": np.array([target], dtype=np.int64)})
            target.append(int(np.argmax(out[0][0, -1])))
        feeds["pad_mask"] = np.array([True])
        dec.run(None, {**feeds, "target_ids": np.array([target[:-1]], dtype=np.int64)})

    def cached_step():
        got = dict(zip([o.name for o in enc_kv.get_outputs()], enc_kv.run(None, {"source_ids": src})))
        cross = {n: got[n] for n in inputs if n.startswith("cross_")}
        past = {n: np.zeros((1, H_kv, 0, dk), dtype=np.float32) for n in inputs if n.startswith("past_")}
        seq, rows = [cfg.bos_id], []
        for _ in range(args.steps):
            feeds = {"target_ids": np.array([seq[-1:]], dtype=np.int64), "key_ids": np.array([seq], dtype=np.int64)}
            feeds.update(pad_mask=np.array([False]), source_ids=src, **past, **cross)
            got = dict(zip(outputs, step.run(None, {k: v for k, v in feeds.items() if k in kept})))
            seq.append(int(np.argmax(got["log_probs"][0, -1])))
            rows.append([got[f"decoder_self.{i}"] for i in range(cfg.n_decoder_layers)])
            past = {n.replace("present_", "past_"): got[n] for n in outputs if n.startswith("present_")}

    mb = {k: len(v) / 1e6 for k, v in graphs.items()}
    base = median_ms(pytorch)
    rows = [["pytorch", "-", f"{base:.0f}", "1.00x"]]
    for name, fn, size in (
        ("full prefix", full_prefix, mb["encoder"] + mb["decoder"]),
        ("cached step", cached_step, sum(len(g) for g in step_graphs.values()) / 1e6),
    ):
        ms = median_ms(fn)
        rows.append([name, f"{size:.0f}", f"{ms:.0f}", f"{ms / base:.2f}x"])
    print(
        f"opus-mt-en-de shape, {params:,} parameters, random weights; source {args.source} tokens, {args.steps} steps"
    )
    print(f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {os.cpu_count()} CPUs, load average "
          f"{'/'.join(f'{x:.2f}' for x in os.getloadavg())}; export {export_s:.0f} s")  # fmt: skip
    print(table(["row", "graph MB (float32)", "ms", "against pytorch"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
