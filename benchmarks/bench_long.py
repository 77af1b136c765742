"""Real checkpoints at real lengths: the lazy capture against transformers on real shapes (random weights).

    python -m benchmarks.bench_long              # GPT-2 small at 1,024 tokens, Qwen2-0.5B at 4,096 tokens
    python -m benchmarks.bench_long --quick      # GPT-2 small at 1,024 tokens only
    python -m benchmarks.bench_long --qwen-tokens 1024
    python -m benchmarks.bench_long --one-process [--repeats 3]   # the two time targets, both sides in one process

--one-process: the time targets side by side in this one process, alternated, the median of --repeats rounds
(GPT-2 small's folder at --gpt2-tokens: another head's map after a capture, against nothing: its own target 0.2 s;
Qwen2-0.5B's at --qwen-tokens: capture + one map + the summaries against transformers' SDPA forward of the same ids,
both in float32 with torch's own threads). A shared machine's load changes both sides alike.

The folders (random weights at the published shapes, built with transformers from a config: no download) are
bench_load_hf.py's, built under --folders. Every measured call runs in a fresh child process (its own loading not
counted), the two sides alternated, one after the other in this run; the date and the load average are printed at the
start and the end, and kept with the tables (benchmarks/common.py).

GPT-2 small, 1,024 tokens (targets: CPU time <= 1.0x, peak memory growth <= 0.25x, another head's map <= 0.2 s)
  ours     capture(model, tok, text, lazy=True) and 8 maps (cap.map of 8 heads across the layers)
  theirs   transformers' forward with output_attentions=True (eager attention: every map held), the same ids
  CPU time is the process's (every thread); peak growth is the rise of the peak resident memory over what the loaded
  model held before the call (/proc/self/status VmHWM, reset first). "another head" is one more cap.map afterwards.
Qwen2-0.5B, 4,096 tokens (targets: wall time <= 1.5x; our peak <= twice the bf16 weights + 1 GB)
  ours     capture(lazy=True), one map, the summaries of every head (one streaming pass over all maps)
  theirs   transformers' plain forward (SDPA, no attentions, use_cache=False): the floor on this CPU
  Our peak is the process's whole resident peak (the weights included: float32 here, twice their bf16 size).
Our side runs with glibc's mapping threshold fixed, as the app's server does (ui/serving/threads.py
fix_malloc_threshold): with glibc's rising threshold, the pass's freed blocks stay in a heap the kept queries and keys
pin, and the process holds about twice what the capture keeps (Qwen2-0.5B at 4,094 tokens: 1,274 MB against 426 MB
kept; with the threshold 436 MB). A notebook can call the same function.
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

from benchmarks.bench_load_hf import folder_for, uptime  # noqa: E402
from benchmarks.common import table  # noqa: E402

FOLDERS = Path(tempfile.gettempdir()) / "transformer-viz-bench-long"
MB = 2**20

_CHILD = r"""
import json, os, sys, time
sys.path.insert(0, {root!r})
import torch

def status(field):
    return next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith(field))

args = json.loads({args!r})
ids = json.load(open(args["ids"]))
if args["side"] == "ours":
    from model import capture, load_checkpoint
    from ui.serving.threads import fix_malloc_threshold
    fix_malloc_threshold()  # as the app's server process runs (VIZ_MALLOC_MMAP_KB, default 128 KB)
    model, tok = load_checkpoint(args["folder"])
    text = args["text"]
else:
    import transformers
    cls = getattr(transformers, json.load(open(args["folder"] + "/config.json"))["architectures"][0])
    model = cls.from_pretrained(args["folder"], attn_implementation=args["attn"]).eval()
    batch = torch.tensor([ids])
torch.set_grad_enabled(False)
if args["side"] == "ours":  # a short pass first: the weights resident, the kernels loaded (not counted)
    capture(model, tok, "0 1 2 3", lazy=True).map("decoder_self", 0, 0)
else:
    model(input_ids=batch[:, :8], **(dict(output_attentions=True) if args["attentions"] else dict(use_cache=False)))
import gc; gc.collect()
before = status("VmRSS")
open("/proc/self/clear_refs", "w").write("5")
cpu, wall = time.process_time(), time.perf_counter()
out = {{}}
if args["side"] == "ours":
    cap = capture(model, tok, text, lazy=True)
    assert len(cap.target_ids) == len(ids) and cap.target_ids.tolist() == ids, "the same ids on both sides"
    L, H = cap.n_layers("decoder_self"), cap.n_heads
    heads = [(i * L // args["maps"], (3 * i) % H) for i in range(args["maps"])]
    for layer, head in heads:
        cap.map("decoder_self", layer, head)
    if args["summaries"]:
        cap.summary("decoder_self")
    out["cpu"], out["wall"] = time.process_time() - cpu, time.perf_counter() - wall
    out["peak"], out["growth"] = status("VmHWM"), status("VmHWM") - before
    t = time.perf_counter()
    cap.map("decoder_self", L - 1, H - 1)
    out["another"] = time.perf_counter() - t
else:
    kwargs = dict(output_attentions=True) if args["attentions"] else dict(use_cache=False)
    result = model(input_ids=batch, **kwargs)
    out["cpu"], out["wall"] = time.process_time() - cpu, time.perf_counter() - wall
    out["peak"], out["growth"] = status("VmHWM"), status("VmHWM") - before
out["weights"] = sum(p.numel() for p in {{id(p): p for p in model.parameters()}}.values())
print("RESULT " + json.dumps(out))
"""


def child(side: str, folder: Path, ids_file: Path, text: str, **options) -> dict:
    args = dict(side=side, folder=str(folder), ids=str(ids_file), text=text, **options)
    code = _CHILD.format(root=str(ROOT), args=json.dumps(args))
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    line = next((x for x in run.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise RuntimeError(f"{side} child failed:\n{run.stderr[-3000:]}")
    return json.loads(line[len("RESULT ") :])


def text_of(tok, n: int) -> str:
    """Numbers written out, as many as give exactly n tokens (or just fewer), found by bisection on the count."""
    words = [str(i) for i in range(4 * n)]

    def count(k: int) -> int:
        return len(tok.source.encode(" ".join(words[:k])))

    low, high = 1, len(words)
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if count(mid) <= n else (low, mid - 1)
    text = " ".join(words[:low])
    return next((text + d for d in "0123456789" if len(tok.source.encode(text + d)) == n), text)


def prepared(family: str, n: int, work: Path) -> tuple[Path, Path, str, int]:
    """The family's folder, a file with the ids of an n-token text, the text, and its token count."""
    from model import load_checkpoint
    from model.text.inputs import prepare_sequence

    folder = folder_for(family, False, FOLDERS)
    model, tok = load_checkpoint(folder)
    text = text_of(tok, n)
    ids = prepare_sequence(model, tok, text).ids
    path = work / f"{family}-{n}.json"
    path.write_text(json.dumps(ids))
    del model
    return folder, path, text, len(ids)


def gpt2_rows(work: Path, tokens: int) -> list[list[str]]:
    folder, ids, text, n = prepared("gpt2", tokens, work)
    ours = child("ours", folder, ids, text, maps=8, summaries=False)
    theirs = child("theirs", folder, ids, text, attn="eager", attentions=True)
    return [
        [
            "gpt2-small",
            str(n),
            f"{ours['cpu']:.1f}",
            f"{theirs['cpu']:.1f}",
            f"{ours['cpu'] / theirs['cpu']:.2f}x",
            f"{ours['growth'] / MB:.0f}",
            f"{theirs['growth'] / MB:.0f}",
            f"{ours['growth'] / max(1, theirs['growth']):.2f}x",
            f"{ours['another']:.3f}",
        ]
    ]


def qwen_rows(work: Path, tokens: int) -> list[list[str]]:
    folder, ids, text, n = prepared("qwen2", tokens, work)
    ours = child("ours", folder, ids, text, maps=1, summaries=True)
    theirs = child("theirs", folder, ids, text, attn="sdpa", attentions=False)
    bf16 = 2 * ours["weights"]
    bound = 2 * bf16 + 2**30
    return [
        [
            "qwen2-0.5b",
            str(n),
            f"{ours['wall']:.0f}",
            f"{theirs['wall']:.0f}",
            f"{ours['wall'] / theirs['wall']:.2f}x",
            f"{ours['peak'] / MB:.0f}",
            f"{bound / MB:.0f}",
            f"{ours['peak'] / bound:.2f}x",
            f"{theirs['peak'] / MB:.0f}",
        ]
    ]


def one_process_rows(work: Path, gpt2_tokens: int, qwen_tokens: int, repeats: int) -> list[list[str]]:
    """The two time targets measured in this process, ours and transformers' alternated (the median of `repeats`)."""
    import statistics
    import time

    import torch
    import transformers

    from model import capture, load_checkpoint

    torch.set_grad_enabled(False)
    rows = []
    folder, ids_file, text, n = prepared("gpt2", gpt2_tokens, work)
    model, tok = load_checkpoint(folder)
    cap = capture(model, tok, text, lazy=True)
    L, H = cap.n_layers("decoder_self"), cap.n_heads
    maps = []
    for i in range(repeats * 3):
        t = time.perf_counter()
        cap.map("decoder_self", (5 * i) % L, (7 * i + 1) % H)
        maps.append(time.perf_counter() - t)
    rows.append(["gpt2-small: another head's map", str(n), f"{statistics.median(maps):.3f} s", "-", "<= 0.2 s",
                 f"{min(maps):.3f}-{max(maps):.3f} s"])  # fmt: skip
    del model, tok, cap
    folder, ids_file, text, n = prepared("qwen2", qwen_tokens, work)
    model, tok = load_checkpoint(folder)
    hf = transformers.Qwen2ForCausalLM.from_pretrained(str(folder), attn_implementation="sdpa").eval()
    batch = torch.tensor([json.loads(ids_file.read_text())])
    capture(model, tok, "0 1 2 3", lazy=True).summary("decoder_self")  # kernels loaded on both sides
    hf(input_ids=batch[:, :8], use_cache=False)
    ours, theirs, parts = [], [], []
    for _ in range(repeats):
        t = time.perf_counter()
        hf(input_ids=batch, use_cache=False)
        theirs.append(time.perf_counter() - t)
        t = time.perf_counter()
        cap = capture(model, tok, text, lazy=True)
        t1 = time.perf_counter()
        cap.map("decoder_self", 11, 5)
        t2 = time.perf_counter()
        cap.summary("decoder_self")
        t3 = time.perf_counter()
        ours.append(t3 - t)
        parts.append((t1 - t, t2 - t1, t3 - t2))
        del cap
    o, s = statistics.median(ours), statistics.median(theirs)
    split = " / ".join(f"{statistics.median(p):.1f}" for p in zip(*parts))
    rows.append(["qwen2-0.5b: capture + map + summaries", str(n), f"{o:.1f} s", f"{s:.1f} s", "<= 1.5x",
                 f"{o / s:.2f}x (capture / map / summaries: {split} s)"])  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="GPT-2 small only")
    parser.add_argument("--gpt2-tokens", type=int, default=1024)
    parser.add_argument("--qwen-tokens", type=int, default=4096)
    parser.add_argument("--one-process", action="store_true", help="the time targets, both sides in this process")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from benchmarks.common import RESULTS_SUFFIX

    RESULTS_SUFFIX[0] = "_one_process" if args.one_process else ""
    import torch

    print(f"start: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {uptime()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        if args.one_process:
            rows = one_process_rows(work, args.gpt2_tokens, args.qwen_tokens, args.repeats)
            headers = ["target", "tokens", "ours", "transformers SDPA forward", "target", "ratio / range"]
            print(table(headers, rows, title="the time targets, side by side in one process (median)"))
            print(f"end: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {uptime()}")
            print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads")
            return
        rows = gpt2_rows(work, args.gpt2_tokens)
        headers = ["shape", "tokens", "ours CPU s", "eager CPU s", "CPU ratio (<= 1.0x)", "our growth MB",
                   "eager growth MB", "growth ratio (<= 0.25x)", "another head's map s (<= 0.2)"]  # fmt: skip
        print(table(headers, rows, title="lazy capture + 8 maps vs transformers eager output_attentions"), flush=True)
        if not args.quick:
            rows = qwen_rows(work, args.qwen_tokens)
            headers = ["shape", "tokens", "ours wall s", "SDPA forward wall s", "ratio (<= 1.5x)", "our peak MB",
                       "2 x bf16 + 1 GB", "peak / bound (<= 1.0x)", "SDPA forward peak MB"]  # fmt: skip
            print(table(headers, rows, title="lazy capture + one map + summaries vs transformers SDPA forward"))
    print(f"end: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC; {uptime()}")
    print(f"torch {torch.__version__}, {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads; one run of each")


if __name__ == "__main__":
    main()
