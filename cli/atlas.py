"""The head atlas of a model over a corpus, written as JSON (model/analysis/head_atlas.py).

    {prog} reverse --out atlas.json                         a demo by name, its task's corpus
    {prog} checkpoints/induction --texts corpus.txt --out atlas.json
    {prog} /models/llama --texts corpus.txt --ray auto --out atlas.json   one shard of texts per Ray task

--texts: a UTF-8 file, one text per line (default: a demo's task corpus, else random tokens). Locally the shards run
on $VIZ_WORKER_CORES forked processes of one thread each (default: this machine's cores, at most 4; 1: one after the
other here); with --ray ADDRESS (a running cluster: "auto", "ray://host:10001", or "local" to start one here)
each shard is a Ray task that loads the model from the same folder, and the records are merged as the local run
merges them: the same atlas. The switch-off tests run here after the merge, one input per process at a time
(--no-switch-off: scores only).
Ray is an optional extra (`pip install ray`), imported only with --ray.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from model import CheckpointError, load_checkpoint
from model.analysis import head_atlas as ha
from model.analysis.head_scores import ROLES, check_kind
from model.checkpoints.checkpoint import load_card
from ui.serving.fork_map import fork_map

MAX_TEXTS = 100_000
MAX_LINE = 20_000  # characters of one text


def read_texts(path: Path) -> list[str]:
    lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
    texts = [line[:MAX_LINE] for line in lines if line][:MAX_TEXTS]
    if not texts:
        raise ValueError(f"{path.name} holds no text (one text per line)")
    return texts


def _shard_task(folder: str, job: ha.Job, kind: str) -> ha.ShardResult:
    """One shard in a Ray worker: the model loaded from the folder (once per worker process), then run_shard."""
    model, tokenizer = _loaded(folder)
    return ha.run_shard(model, tokenizer, job, kind)


_MODELS: dict[str, tuple] = {}


def _loaded(folder: str):
    if folder not in _MODELS:
        _MODELS[folder] = load_checkpoint(folder)
    return _MODELS[folder]


def run_on_ray(folder: Path, jobs: Sequence[ha.Job], kind: str, address: str) -> list[ha.ShardResult]:
    """Every shard as a Ray task on the cluster at `address` ("local": a new one on this machine)."""
    import ray  # the optional extra: only this command with --ray needs it

    started = not ray.is_initialized()
    if started and address == "local":  # a one-machine cluster: its workers import this checkout
        root = str(Path(__file__).resolve().parents[1])
        ray.init(runtime_env={"env_vars": {"PYTHONPATH": root}}, include_dashboard=False, log_to_driver=False)
    elif started:
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    try:
        task = ray.remote(_shard_task)
        return ray.get([task.remote(str(folder.resolve()), job, kind) for job in jobs])
    finally:
        if started:
            ray.shutdown()


def compute(
    folder: Path,
    texts: list[str] | None,
    roles: Sequence[str] = ROLES,
    kind: str | None = None,
    seed: int = 0,
    ray_address: str | None = None,
    switch_off: bool = True,
) -> ha.Atlas:
    """The atlas of the checkpoint in `folder` (locally, or on Ray), what the command writes."""
    from tasks.atlas_corpus import default_corpus

    model, tokenizer = _loaded(str(folder.resolve()))
    kind = check_kind(model, kind)
    if texts is None and folder.is_dir():
        texts = default_corpus(load_card(folder), seed=seed)
    jobs = ha.plan(model, tokenizer, texts, roles, seed)
    if ray_address is None:
        results = [None] * len(jobs)
        for i, result in fork_map(lambda job: ha.run_shard(model, tokenizer, job, kind), jobs):
            results[i] = result
    else:
        results = run_on_ray(folder, jobs, kind, ray_address)
    atlas = ha.merge(results, kind, roles, seed)
    if switch_off:
        ha.add_switch_off(atlas, model, tokenizer, jobs, runner=fork_map)
    return atlas


def main(argv: Sequence[str] | None = None, prog: str = "transformer-viz atlas") -> int:
    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__.format(prog=prog), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("model", help="checkpoint folder, or a demo name (reverse, induction, ...)")
    parser.add_argument("--texts", type=Path, help="a text file, one text per line")
    parser.add_argument("--out", type=Path, default=Path("atlas.json"), help="the JSON file to write")
    parser.add_argument("--roles", default=",".join(ROLES), help=f"some of {','.join(ROLES)}")
    parser.add_argument("--kind", choices=("encoder_self", "decoder_self"), help="default: the stack reading the text")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random sequences and random heads")
    parser.add_argument("--ray", metavar="ADDRESS", help="run the shards as Ray tasks (auto, ray://host:port, local)")
    parser.add_argument("--no-switch-off", action="store_true", help="scores only, no switch-off tests")
    args = parser.parse_args(argv)
    from cli.pack import resolve_model

    try:
        folder = resolve_model(args.model)
        texts = read_texts(args.texts) if args.texts else None
        roles = [r.strip() for r in args.roles.split(",") if r.strip()]
        atlas = compute(folder, texts, roles, args.kind, args.seed, args.ray, not args.no_switch_off)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_bytes(atlas.json_bytes())
    except (CheckpointError, OSError, ValueError, UnicodeDecodeError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"wrote {args.out} ({len(atlas.roles)} roles, {atlas.shape[0]} x {atlas.shape[1]} heads)")
    return 0


if __name__ == "__main__":
    sys.exit(main(prog="python -m cli.atlas"))
