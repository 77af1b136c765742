"""Checkpoint loading against a bare read of the same file (issue 11, target 4).

    python -m benchmarks.bench_load           # the paper's base model as an Annotated Transformer state_dict (246 MB)
    python -m benchmarks.bench_load --quick   # 2+2 layers, for a smoke run

Target: load_checkpoint(...) costs at most 1.5x a bare torch.load (or safetensors read) of the same file.
A float16 file is compared with its bare read plus the cast to float32 (the app computes in float32).
The safetensors baseline reads the bytes into memory (safetensors.torch.load of the file's bytes):
load_file only memory-maps the file, and a model left on a mapping of a file that is later overwritten
changes with it or dies with SIGBUS, so load_checkpoint copies what it maps.
Files are written to a temporary folder and read once untimed, so every row measures reads from the page
cache; each row alternates its two calls (baseline, then ours) so both see the same machine, and prints
the median of the repeats with the load average at that moment.
Both sides run with the server's torch threads (ui.serving.threads.set_server_threads: one, or $VIZ_TORCH_THREADS),
as the app loads a model; --threads N adds rows with N threads (torch's default is one per core: on a busy
machine its parallel regions wait for a second core, and both sides slow down unevenly).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from safetensors.torch import load as load_safetensors_bytes
from safetensors.torch import save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from harness.reference.annotated import ann_make_model  # noqa: E402
from model import load_checkpoint, save_checkpoint  # noqa: E402
from model.checkpoints.formats import inspect_checkpoint  # noqa: E402

TARGET = 1.5


def side_by_side(baseline, ours, repeats: int) -> tuple[float, float, float, float, float]:
    """Medians (wall s of baseline, of ours, CPU s of baseline, of ours) with the two calls alternated, and the load
    average. CPU time (this process) says what the work costs; on a shared machine wall time adds the waits."""
    baseline(), ours()  # warm the page cache and the code paths
    walls: tuple[list[float], list[float]] = ([], [])
    cpus: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeats):
        for i, fn in enumerate((baseline, ours)):
            t0, c0 = time.perf_counter(), time.process_time()
            fn()
            walls[i].append(time.perf_counter() - t0)
            cpus[i].append(time.process_time() - c0)
    med = statistics.median
    return med(walls[0]), med(walls[1]), med(cpus[0]), med(cpus[1]), os.getloadavg()[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, nargs="*", default=[], help="also measure with these thread counts")
    args = parser.parse_args()
    from ui.serving.threads import set_server_threads

    server_threads = set_server_threads()
    layers = 2 if args.quick else 6
    torch.manual_seed(0)
    ref = ann_make_model(8000, 8000, N=layers, d_model=512, d_ff=2048, h=8)  # vocabulary 8000, max_len 5000
    with tempfile.TemporaryDirectory(prefix="bench-load-") as tmp:
        tmp = Path(tmp)
        pt, st, half = tmp / "annotated.pt", tmp / "annotated.safetensors", tmp / "annotated-fp16.pt"
        torch.save(ref.state_dict(), pt)
        save_file({k: v.contiguous() for k, v in ref.state_dict().items()}, str(st))
        torch.save({k: v.half() for k, v in ref.state_dict().items()}, half)
        model, tok = load_checkpoint(pt, n_heads=8)
        native = save_checkpoint(model, tok, tmp / "native")
        del ref, model

        def safetensors_read(path):
            # the bytes into memory as tensors (load_file only maps the file: it reads nothing until used)
            return lambda: load_safetensors_bytes(path.read_bytes())

        def torch_load(path):
            return lambda: torch.load(path, map_location="cpu", weights_only=True)

        def torch_load_float(path):
            # a half-precision file: the bare read, then the cast to float32 that any use of it on the CPU needs
            return lambda: {k: v.float() for k, v in torch.load(path, map_location="cpu", weights_only=True).items()}

        rows_spec = [
            ("Annotated .pt, float32", pt, torch_load(pt), lambda: load_checkpoint(pt, n_heads=8), "torch.load"),
            ("Annotated .pt, inspect only", pt, torch_load(pt), lambda: inspect_checkpoint(pt), "torch.load"),
            (
                "Annotated .safetensors",
                st,
                safetensors_read(st),
                lambda: load_checkpoint(st, n_heads=8),
                "safetensors read",
            ),
            (
                "Annotated .pt, float16",
                half,
                torch_load_float(half),
                lambda: load_checkpoint(half, n_heads=8),
                "torch.load + .float()",
            ),
            (
                "this project's folder",
                native / "model.safetensors",
                safetensors_read(native / "model.safetensors"),
                lambda: load_checkpoint(native),
                "safetensors read",
            ),
        ]
        rows = []
        for threads in dict.fromkeys([server_threads, *args.threads]):
            torch.set_num_threads(threads)
            setting = f"{threads} (server)" if threads == server_threads else str(threads)
            for label, path, baseline, ours, base_name in rows_spec:
                b, o, b_cpu, o_cpu, load = side_by_side(baseline, ours, args.repeats)
                ratio, cpu_ratio = o / b, o_cpu / b_cpu
                verdict = "" if "inspect" in label else ("ok" if ratio <= TARGET else "OVER")
                rows.append(
                    [
                        label,
                        setting,
                        f"{path.stat().st_size / 1e6:.0f} MB",
                        base_name,
                        f"{b * 1000:.0f}",
                        f"{o * 1000:.0f}",
                        f"{ratio:.2f}x",
                        verdict,
                        f"{b_cpu * 1000:.0f} / {o_cpu * 1000:.0f}",
                        f"{cpu_ratio:.2f}x",
                        f"{load:.1f}",
                    ]
                )
    print(
        f"torch {torch.__version__}, {os.cpu_count()} CPUs; median of {args.repeats}, calls alternated; "
        f"target: load <= {TARGET}x the bare read"
    )
    headers = ["file", "torch threads", "size", "baseline", "baseline ms", "load_checkpoint ms", "ratio", "target"]
    print(table([*headers, "CPU ms (baseline / ours)", "CPU ratio", "load avg"], rows))


if __name__ == "__main__":
    main()
