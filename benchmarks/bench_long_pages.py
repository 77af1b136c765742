"""Real checkpoints at real lengths on the Attention page's own path: a SmolLM-135M shape at 8,192 tokens and a
Llama-3.2-1B shape at 2,048, opened through ui/serving/caches.cached_lazy_capture (the shared decode and the lazy capture in
a limited worker, progress per attention module) with the budgets an operator raises for them; and the default
budgets' answer (what fits).

    python -m benchmarks.bench_long_pages                       # both shapes at their lengths
    python -m benchmarks.bench_long_pages --only smollm --tokens 2048     # a shorter run of one shape

The folders: random weights at the published shapes built with transformers from a config (no download), saved in
bfloat16 as the published checkpoints are, with a small byte-level tokenizer (text is written as numbers to give
exactly the tokens asked for). Llama-3.2-1B's RoPE scaling ("llama3") is left out (this app computes the plain
rotation only; its shape is what is measured) and its positions cut to 8,192. Each shape runs in a fresh child
process standing for the server: VIZ_MAP_WEIGHTS=0 (the server reads weights privately), VIZ_KEEP_BF16=1 (the
weights stay bfloat16), raised VIZ_WORK_MB, VIZ_WORK_GOPS, VIZ_DEADLINE_S and VIZ_WORKER_MB. Measured there: the wall
time of the page's pass (the decode, when the model writes after the prompt, and the capture, both in the worker),
one more head's map as a head switch on the page computes it (pooled to 256 x 256 blocks, in the server, from what
the worker sent back) and the summaries of every head (the overview's
and the sinks view's: a pass over every map, in a worker as the page runs it), and the server's
resident memory: after loading (the weights) and its peak during the page's work, against weights + 1 GB.
With the default budgets (256 MB, DEFAULT_GOPS billion operations) the same input is refused before any work; the table
gives the message's numbers (what it would need, what fits).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_load_hf import uptime  # noqa: E402
from benchmarks.common import table  # noqa: E402

FOLDERS = Path(tempfile.gettempdir()) / "transformer-viz-bench-long-pages"
MB = 2**20

# name -> (label, tokens, config fields of transformers.LlamaConfig)
SHAPES = {
    "smollm": ("SmolLM-135M", 8192, dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                         num_attention_heads=9, num_key_value_heads=3, vocab_size=49152,
                                         max_position_embeddings=8192, tie_word_embeddings=True,
                                         rope_parameters={"rope_type": "default", "rope_theta": 100000.0})),
    "llama1b": ("Llama-3.2-1B", 2048, dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                                           num_attention_heads=32, num_key_value_heads=8, vocab_size=128256,
                                           max_position_embeddings=8192, tie_word_embeddings=True,
                                           rope_parameters={"rope_type": "default", "rope_theta": 500000.0})),
}  # fmt: skip
RAISED = dict(VIZ_WORK_MB="12288", VIZ_WORK_GOPS="100000", VIZ_DEADLINE_S="3600", VIZ_WORKER_MB="6144")

_BUILD = r"""
import json, sys, torch, transformers
sys.path.insert(0, {root!r})
folder, fields = sys.argv[1], json.loads(sys.argv[2])
torch.manual_seed(0)
config = transformers.LlamaConfig(bos_token_id=0, eos_token_id=0, **fields)
model = transformers.LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
model.save_pretrained(folder)
from harness.byte_level import byte_level
byte_level(__import__("pathlib").Path(folder), ["<|endoftext|>"])
"""

_SERVER = r"""
import json, os, sys, time
sys.path.insert(0, {root!r})
args = json.loads(sys.argv[1])

def status(field):
    return next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith(field))

import torch
from model import load_checkpoint
from model.analysis.budget import BudgetExceeded, WorkBudget, admit_input, attention_page_bytes, attention_page_ops
from model.analysis.budget import steps_for
from model.analysis.budget_input import source_length
from benchmarks.bench_long import text_of

model, tok = load_checkpoint(args["folder"])
cfg = model.config
text = text_of(tok, args["tokens"])
S = source_length(tok.source, cfg, text)
T = steps_for(cfg, S) + 1
out = dict(prompt=S - 1, steps=T - 1, dtype=str(next(model.parameters()).dtype).removeprefix("torch."))
out["weights"] = sum(p.numel() * p.element_size() for p in model.parameters())
need = lambda s, t: (attention_page_bytes(cfg, s, t), attention_page_ops(cfg, s, t))
from model.analysis.budget import DEFAULT_GOPS
default = WorkBudget(256 * 2**20, DEFAULT_GOPS * 10**9)
try:
    admit_input(default, "Reading this input", need, S, T)
    out["default"] = "admitted"
except BudgetExceeded as refused:
    m = refused.args[0]
    out["default"] = str(m)
out["need_mb"], out["need_gops"] = need(S, T)[0] // 2**20, need(S, T)[1] // 10**9
if args["run"]:
    import gc
    from ui.serving import caches
    gc.collect()
    loaded = status("VmRSS")
    open("/proc/self/clear_refs", "w").write("5")
    seen = []
    from ui.serving import workers
    real = workers.run_limited
    def watched(fn, *a, on_progress=None, **kw):
        def report(done, total):
            if done >= 0:
                seen.append((round(time.perf_counter() - t0, 1), done, total))
            if on_progress is not None:
                on_progress(done, total)
        return real(fn, *a, on_progress=report, **kw)
    workers.run_limited = watched
    t0 = time.perf_counter()
    cap = caches.cached_lazy_capture("bench", text, None, model, tok, spinner=None)
    out["pass_s"] = time.perf_counter() - t0
    out["progress"] = [seen[0], seen[len(seen) // 2], seen[-1]] if seen else []
    L, H = cap.n_layers("decoder_self"), cap.n_heads
    out["peak_pass"] = status("VmHWM")
    from ui.views.attention_long import pooled, summary
    # a head switch on the page: that head's map pooled to 256 x 256 blocks, read in row blocks (the window beside
    # it is at most 256 x 256 weights)
    t = time.perf_counter(); pooled(cap, "decoder_self", L // 2, H // 2, key=("bench",)); out["map_s"] = time.perf_counter() - t
    out["peak_map"] = status("VmHWM")
    t = time.perf_counter(); summary(cap, "decoder_self", ("bench",)); out["summary_s"] = time.perf_counter() - t
    out["tokens"] = len(cap.target_tokens)
    out["cached"] = caches.cached_lazy_capture("bench", text, None, model, tok, spinner=None) is cap
    out["loaded"], out["peak"], out["kept"] = loaded, status("VmHWM"), cap.nbytes
print("RESULT " + json.dumps(out))
"""


def folder_for(name: str) -> Path:
    label, tokens, fields = SHAPES[name]
    folder = FOLDERS / name
    marker = folder / "bench-shape.json"
    record = json.dumps(fields, sort_keys=True)
    if not (marker.is_file() and marker.read_text() == record):
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-c", _BUILD.format(root=str(ROOT)), str(folder), record], check=True)
        marker.write_text(record)
    return folder


def server(folder: Path, tokens: int, run: bool) -> dict:
    env = {**os.environ, "VIZ_MAP_WEIGHTS": "0", "VIZ_KEEP_BF16": "1", **RAISED}
    args = json.dumps(dict(folder=str(folder), tokens=tokens, run=run))
    done = subprocess.run([sys.executable, "-c", _SERVER.format(root=str(ROOT)), args], capture_output=True,
                          text=True, env=env, check=False)  # fmt: skip
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"the server child failed:\n{done.stderr[-3000:]}")
    return json.loads(line[len("RESULT ") :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", nargs="*", choices=list(SHAPES))
    parser.add_argument("--tokens", type=int, help="instead of each shape's own length")
    parser.add_argument("--refusals-only", action="store_true", help="the default budgets' answers, no pass")
    args = parser.parse_args()
    print(f"start: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {uptime()}", flush=True)
    runs, refusals = [], []
    for name in args.only or list(SHAPES):
        label, tokens, _ = SHAPES[name]
        tokens = args.tokens or tokens
        r = server(folder_for(name), tokens, not args.refusals_only)
        refusals.append([label, str(r["prompt"]), f"{r['need_mb']:,}", f"{r['need_gops']:,}", r["default"]])
        if args.refusals_only:
            continue
        bound = r["weights"] + 2**30
        runs.append([label, r["dtype"], f"{r['prompt']} + {r['steps']}", str(r["tokens"]), f"{r['pass_s']:.0f}",
                     " / ".join(f"{t}s:{d}/{n}" for t, d, n in r["progress"]), f"{r['map_s']:.2f}",
                     f"{r['summary_s']:.0f}", f"{r['weights'] / MB:,.0f}", f"{r['loaded'] / MB:,.0f}",
                     f"{r['peak_pass'] / MB:,.0f} / {r['peak_map'] / MB:,.0f} / {r['peak'] / MB:,.0f}", f"{bound / MB:,.0f}", f"{(r['peak'] - r['weights']) / MB:,.0f}",
                     f"{r['kept'] / MB:,.0f}", "yes" if r["cached"] else "no"])  # fmt: skip
        print(f"{label}: {r}", flush=True)
    if runs:
        headers = ["shape", "weights", "prompt + decoded", "positions", "page pass s (worker)",
                   "progress (s: done/total)", "another head's map s", "summaries s", "weights MB",
                   "server RSS loaded MB", "server peak MB: pass / + a head / + summaries", "weights + 1 GB", "peak - weights MB",
                   "capture kept MB", "cached"]  # fmt: skip
        print(table(headers, runs, title="Attention page path with raised budgets (" + ", ".join(
            f"{k}={v}" for k, v in RAISED.items()) + ")"))  # fmt: skip
    print(table(["shape", "prompt tokens", "needs MB", "needs G ops", "default budgets answer"], refusals,
                title="the same input under the default budgets (256 MB, 1,000 billion operations)"))  # fmt: skip
    print(f"end: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {uptime()}")
    print(f"{os.cpu_count()} CPUs; the worker runs one torch thread (ui/serving/workers.py)")


if __name__ == "__main__":
    main()
