"""What the server's torch thread setting changes when several sessions run the model at once.

    python -m benchmarks.bench_threads [--sessions 1 4 8] [--rounds 3]

Each "session" is a Python thread calling capture() on one shared base model (512/8/2048, 6+6, vocabulary
8000, random weights) with a 32-token source and a 32-token target, as the app's sessions do on one server.
The same process alternates torch's default (one OpenMP thread per core) with the app's setting
(ui.serving.threads.set_server_threads: 1 thread), round by round, so both see the same neighbours. Printed:
wall time for all sessions, the process's CPU time, and CPU per capture; the load average beside each row.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402
from model import Tokenizer, TransformerConfig, Vocab, build_model, capture  # noqa: E402


def load() -> str:
    return "%.2f" % os.getloadavg()[0]


def run_sessions(model, tokenizer, source: str, target: str, n: int) -> tuple[float, float]:
    """(wall s, process CPU s) of n threads each doing one capture at the same time."""
    barrier = threading.Barrier(n)

    def session():
        barrier.wait()
        capture(model, tokenizer, source, target)

    threads = [threading.Thread(target=session) for _ in range(n)]
    w, c = time.perf_counter(), time.process_time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.perf_counter() - w, time.process_time() - c


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, nargs="*", default=[1, 4, 8])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    default_threads = torch.get_num_threads()
    vocab = Vocab.build([f"w{i}" for i in range(8000 - 4)], level="word")
    tokenizer = Tokenizer(vocab, vocab)
    config = TransformerConfig.preset("base", src_vocab_size=8000, tgt_vocab_size=8000, max_len=512)
    model = build_model(config, seed=0)
    source = " ".join(f"w{i * 37 % 7996}" for i in range(31))
    target = " ".join(f"w{i * 53 % 7996}" for i in range(31))
    capture(model, tokenizer, source, target)  # warm up
    print(
        f"torch {torch.__version__}; default {default_threads} threads on {os.cpu_count()} cores; "
        f"base model, 32 source and 32 target tokens per capture"
    )
    rows = []
    for n in args.sessions:
        results = {default_threads: [], 1: []}
        loads = []
        for _ in range(args.rounds):
            for threads in (default_threads, 1):  # alternated, round by round
                torch.set_num_threads(threads)
                results[threads].append(run_sessions(model, tokenizer, source, target, n))
                loads.append(float(load()))
        for threads in (default_threads, 1):
            wall = statistics.median(r[0] for r in results[threads])
            cpu = statistics.median(r[1] for r in results[threads])
            rows.append(
                [n, threads, f"{wall:.2f}", f"{cpu:.2f}", f"{cpu / n * 1e3:.0f}", f"{statistics.median(loads):.1f}"]
            )
        d_cpu = statistics.median(r[1] for r in results[default_threads])
        one_cpu = statistics.median(r[1] for r in results[1])
        rows.append([n, "ratio", "", f"{d_cpu / one_cpu:.1f}x CPU with {default_threads} threads", "", ""])
    torch.set_num_threads(default_threads)
    print(
        table(["sessions", "torch threads", "wall s (median)", "process CPU s", "CPU ms per capture", "load avg"], rows)
    )


if __name__ == "__main__":
    main()
