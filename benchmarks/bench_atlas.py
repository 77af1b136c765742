"""The head atlas against its targets: a GPT-2-small-shaped random model (12 layers of 12 heads, d_model 768,
vocabulary 50257, learned positions) over 200 texts of 128 tokens, every role and the switch-off tests, in a worker
process (ui/serving/workers.py, as the page runs it, its units on $VIZ_WORKER_CORES forked helpers of one thread:
ui/serving/fork_map.py) against 60 s; and the Head atlas page opened from the disk cache (checkpoint digest,
ui/serving/disk_cache.py) against 2 s.

    python -m benchmarks.bench_atlas                 # both tables
    python -m benchmarks.bench_atlas --texts 50      # fewer texts (the ratio is then to the same target)
    python -m benchmarks.bench_atlas --cores 1       # the worker's units one after the other (one core)
    python -m benchmarks.bench_atlas --page-only

Table 1: wall and CPU seconds of the scores (every shard) and of the switch-off tests, each beside the 60 s target
(ratio = wall seconds / 60; CPU seconds: what the worker and its helpers had of the cores, the wall time of one
idle core), and the floors they cannot go under on one thread: the matrix products of one forward pass over every
token (2 x parameters of the 12 blocks x tokens; the scores' pass stops after the last attention, so it does a
little less), and for the switch-off tests those of every row of their batched passes plus the output layer on
their scored positions (2 x vocabulary x d_model each), at the rate one thread of this machine gives per second of
CPU time (a (1024 x 768) x (768 x 3072) float32 product, measured in the same process). Table 2: the page on
demo:induction, first open (computed in the worker and stored), then opened again with nothing in memory (read from
disk), beside 2 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import table  # noqa: E402

TARGET_S, PAGE_TARGET_S = 60.0, 2.0


def cpu_now() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def gpt2_small():
    from model import Tokenizer, TransformerConfig, Vocab, build_model

    vocab = Vocab.build([f"w{i}" for i in range(50257 - 4)], level="word")
    config = TransformerConfig(
        src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), shape="decoder-only", n_encoder_layers=0,
        n_decoder_layers=12, d_model=768, n_heads=12, d_ff=3072, dropout=0.0, norm_first=True, positional="learned",
        max_len=1024, share_embeddings=True, tie_generator=True, activation="gelu",
    )  # fmt: skip
    return build_model(config, seed=0).eval(), Tokenizer(vocab, vocab)


def runner(cores: int):
    from ui.serving.fork_map import fork_map

    return lambda fn, units: fork_map(fn, units, processes=cores)


def scores_part(model, tok, texts, cores):
    from model.analysis import head_atlas as ha

    jobs = ha.plan(model, tok, texts)
    results = [None] * len(jobs)
    for i, result in runner(cores)(lambda job: ha.run_shard(model, tok, job), jobs):
        results[i] = result
    return jobs, ha.merge(results, "decoder_self", ha.ROLES)


def switch_off_part(model, tok, jobs, atlas, cores):
    from model.analysis import head_atlas as ha

    return ha.add_switch_off(atlas, model, tok, jobs, runner=runner(cores))


def switch_off_tokens(model, tok, jobs, atlas) -> tuple[int, int]:
    """(tokens of every row of the switch-off passes, scored positions of every row)."""
    from model.analysis import head_atlas as ha
    from model.analysis.head_switch_off import SINGLES, plan_rows, scored_input, top_heads

    L, H = atlas.shape
    k = max(1, L * H // 16)
    avoid = sorted({h for role in atlas.roles for h in top_heads(atlas.scores(role), k)})
    tokens = scored = 0
    for group in ("corpus", "repeated"):
        scores = {r: atlas.scores(r) for r in atlas.roles if atlas.group_of(r) == group}
        rows = len(plan_rows(scores, k, ha.DRAWS, atlas.seed, SINGLES, avoid)[0])
        for item in ha.effect_items(ha.items_of(jobs, group), atlas.labels[group]):
            s = scored_input(model, tok, item, group == "repeated")
            tokens += rows * len(s.inputs)
            scored += rows * len(s.positions)
    return tokens, scored


def one_thread_rate() -> float:
    """GFLOP/s of a (1024 x 768) x (768 x 3072) float32 product on one torch thread (the worker's one thread), per
    second of CPU time: what a core does while this process has it (wall seconds under load count other people's
    turns too)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(1024, 768), torch.randn(768, 3072)
        a @ b
        start, n = time.process_time(), 0
        while time.process_time() - start < 2.0:
            a @ b
            n += 1
        return n * 2 * 1024 * 768 * 3072 / (time.process_time() - start) / 1e9
    finally:
        torch.set_num_threads(threads)


def atlas_rows(n_texts: int, cores: int) -> list[list]:
    import random

    from ui.serving.workers import Limits, run_limited

    model, tok = gpt2_small()
    rng = random.Random(0)
    texts = [tuple(rng.randrange(4, 50257) for _ in range(128)) for _ in range(n_texts)]
    limits = Limits(memory=6 * 2**30, deadline=3600.0)
    rows = []
    w, c = time.perf_counter(), cpu_now()
    jobs, atlas = run_limited(scores_part, model, tok, texts, cores, limits=limits)
    wall, cpu = time.perf_counter() - w, cpu_now() - c
    rows.append(
        [f"scores, 4 roles, {n_texts} texts + 20 random", f"{wall:.1f}", f"{cpu:.1f}", f"{wall / TARGET_S:.2f}"]
    )
    w, c = time.perf_counter(), cpu_now()
    run_limited(switch_off_part, model, tok, jobs, atlas, cores, limits=limits)
    wall2, cpu2 = time.perf_counter() - w, cpu_now() - c
    rows.append(["switch-off tests, 4 roles", f"{wall2:.1f}", f"{cpu2:.1f}", f"{wall2 / TARGET_S:.2f}"])
    total = wall + wall2
    rows.append(["whole atlas", f"{total:.1f}", f"{cpu + cpu2:.1f}", f"{total / TARGET_S:.2f}"])
    blocks = sum(p.numel() for layer in model.decoder.layers for p in layer.parameters() if p.dim() == 2)
    tokens = sum(len(label) for labels in atlas.labels.values() for label in labels)
    rate = one_thread_rate()
    floor = 2 * blocks * tokens / (rate * 1e9)
    what = f"floor of the scores: {tokens} tokens x {2 * blocks / 1e6:.0f} MFLOP at {rate:.1f} GFLOP/s per CPU s"
    rows.append([what, "-", f"{floor:.1f}", f"{floor / TARGET_S:.2f} (CPU)"])
    off_tokens, off_scored = switch_off_tokens(model, tok, jobs, atlas)
    head = 2 * model.config.d_model * model.config.tgt_vocab_size
    off_floor = (2 * blocks * off_tokens + head * off_scored) / (rate * 1e9)
    what = f"floor of the switch-off tests: {off_tokens} row tokens, {off_scored} scored row positions"
    rows.append([what, "-", f"{off_floor:.1f}", f"{off_floor / TARGET_S:.2f} (CPU)"])
    return rows


def page_rows() -> list[list]:
    from harness.apptest import open_page
    from ui.views import head_atlas_ui

    os.environ["VIZ_CACHE_DIR"] = tempfile.mkdtemp(prefix="bench_atlas_")
    rows = []
    for what in ("first open (computed in the worker, stored)", "opened again, nothing in memory (from disk)"):
        head_atlas_ui.ATLASES.drop(lambda key: True)
        w, c = time.perf_counter(), cpu_now()
        at = open_page("head_atlas", "demo:induction", timeout=600)
        wall, cpu = time.perf_counter() - w, cpu_now() - c
        note = "exception" if at.exception else "drawn"
        rows.append([what, f"{wall:.2f}", f"{cpu:.2f}", f"{wall / PAGE_TARGET_S:.2f}", note])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--page-only", action="store_true")
    parser.add_argument("--cores", type=int, default=None, help="processes of the worker (default $VIZ_WORKER_CORES)")
    args = parser.parse_args()
    print(
        time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load %.2f %.2f %.2f" % os.getloadavg(),
        "cpus",
        os.cpu_count(),
    )
    if not args.page_only:
        from ui.serving.fork_map import worker_cores

        cores = worker_cores() if args.cores is None else max(1, args.cores)
        title = f"Head atlas, GPT-2-small shape, 128 tokens a text, worker on {cores} process(es) of one thread"
        print(table(["part", "wall s", "CPU s", "ratio to 60 s"], atlas_rows(args.texts, cores), title=title))
    print(
        table(
            ["page", "wall s", "CPU s", "ratio to 2 s", "result"], page_rows(), title="Head atlas page, demo:induction"
        )
    )
    print("load %.2f %.2f %.2f" % os.getloadavg())


if __name__ == "__main__":
    main()
