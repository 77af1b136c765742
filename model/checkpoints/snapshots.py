"""Training snapshots: the weights at a few steps of a run, to watch attention form while a model learns.

    python -m model.train --task translate --out runs/translate --snapshots 8

writes, beside the checkpoint, a folder `snapshots/` of small checkpoints in this project's format
(float16 weights, so about half the size of the final one) and an index:

    snapshots/snapshots.json     {"task", "total_steps", "examples", "held_out_seed", "snapshots": [entry, ...]}
                                  entry: {"step", "folder", "exact_match", "alignment": [per decoder layer]}
    snapshots/step-00000/        model.safetensors (float16), config.json, tokenizer.json, card.json

Snapshots are taken at step 0 (the untrained model: attention near uniform) and at steps doubling up to the
last (`snapshot_steps`): most of the change happens early. Each records the exact match and the attention
alignment (the card's measure, tasks/evaluate.py) on a small held-out set, the same for every snapshot.
Loading casts the float16 weights back to float32 (model/checkpoints/checkpoint.py), so a snapshot is an ordinary
checkpoint for every tool of the app.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from i18n import M_

from ..text.tokenizer import Tokenizer
from .checkpoint import save_checkpoint
from .errors import CheckpointError
from .safe_io import read_json

FOLDER = "snapshots"  # under the checkpoint folder
INDEX = "snapshots.json"
MAX_SNAPSHOTS = 64  # the most a run writes, and the most an index may list


def snapshot_steps(total: int, n: int) -> list[int]:
    """n distinct steps in 0..total: 0, then steps doubling up to total (as many as fit; fewer when total < n - 1).

    snapshot_steps(4000, 8) == [0, 62, 125, 250, 500, 1000, 2000, 4000].
    """
    if n < 1 or total < 0:
        raise ValueError("snapshots need n >= 1 and total >= 0")
    n = min(n, total + 1, MAX_SNAPSHOTS)
    if n == 1:
        return [total]
    wanted = [0] + [int(total / 2 ** (n - 2 - i)) for i in range(n - 1)]  # doubling, the last one total
    steps: list[int] = []
    for i, s in enumerate(wanted):  # distinct and increasing, room kept for the ones after
        s = max(s, steps[-1] + 1 if steps else 0)
        steps.append(min(s, total - (n - 1 - i)))
    return steps


def step_folder(step: int) -> str:
    return f"step-{step:05d}"


def save_snapshot(
    model: Any, tokenizer: Tokenizer, root: str | Path, step: int, scores: dict[str, Any]
) -> dict[str, Any]:
    """A float16 copy of the model's weights as a checkpoint under root/step-NNNNN; returns its index entry."""
    half = copy.deepcopy(model).half()
    name = step_folder(step)
    entry = {"step": int(step), "folder": name, **scores}
    save_checkpoint(half, tokenizer, Path(root) / name, card={"snapshot": entry})
    return entry


def write_index(root: str | Path, entries: Sequence[dict[str, Any]], **fields: Any) -> Path:
    """root/snapshots.json: the run's fields (task, total_steps, ...) and one entry per snapshot, by step."""
    path = Path(root) / INDEX
    data = {**fields, "snapshots": sorted(entries, key=lambda e: e["step"])}
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False), encoding="utf-8")
    return path


@dataclass(frozen=True)
class Snapshot:
    step: int
    path: Path  # the snapshot's checkpoint folder
    exact_match: float | None  # on the run's small held-out set
    alignment: tuple[float, ...] = ()  # per decoder layer, the card's alignment measure on the same set
    # the entry's other numbers by name, on the same set (e.g. the induction demo's "induction_share", "repeated_half")
    scores: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Snapshots:
    """The snapshots of one run, by step, and what the index says about them."""

    root: Path
    items: tuple[Snapshot, ...]
    total_steps: int | None = None
    examples: int | None = None  # size of the held-out set the scores come from
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def steps(self) -> list[int]:
        return [s.step for s in self.items]


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def list_snapshots(checkpoint: str | Path) -> Snapshots | None:
    """The snapshots saved beside a checkpoint folder (checkpoint/snapshots/), or None when it has none.

    Entries must name a direct subfolder of snapshots/ holding a config.json (no path leaves the folder);
    a malformed index raises CheckpointError naming the problem.
    """
    root = Path(checkpoint) / FOLDER
    index = root / INDEX
    if not index.is_file():
        return None
    data = read_json(index)
    entries = data.get("snapshots") if isinstance(data, dict) else None
    if not isinstance(entries, list) or len(entries) > MAX_SNAPSHOTS:
        raise CheckpointError(
            M_("{file}: 'snapshots' must be a list of at most {max} entries", file=INDEX, max=MAX_SNAPSHOTS)
        )
    items = []
    real_root = root.resolve()
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("step"), int) or entry["step"] < 0:
            raise CheckpointError(M_("{file}: each entry needs a step (a whole number >= 0)", file=INDEX))
        name = entry.get("folder")
        if not isinstance(name, str) or "/" in name or "\\" in name or name in ("", ".", ".."):
            raise CheckpointError(
                M_("{file}: the entry of step {step} names no folder inside snapshots/", file=INDEX, step=entry["step"])
            )
        folder = root / name
        if folder.resolve().parent != real_root or not (folder / "config.json").is_file():
            raise CheckpointError(M_("{file}: the snapshot of step {step} is missing", file=INDEX, step=entry["step"]))
        alignment = entry.get("alignment")
        layers = tuple(float(a) for a in alignment if _number(a) is not None) if isinstance(alignment, list) else ()
        known = {"step", "folder", "exact_match", "alignment"}
        extra = tuple(
            (str(k)[:64], _number(v)) for k, v in sorted(entry.items()) if k not in known and _number(v) is not None
        )[:16]
        items.append(Snapshot(entry["step"], folder, _number(entry.get("exact_match")), layers, extra))
    items.sort(key=lambda s: s.step)
    if len({s.step for s in items}) != len(items):
        raise CheckpointError(M_("{file}: two snapshots have the same step", file=INDEX))
    total = data.get("total_steps")
    examples = data.get("examples")
    info = {k: v for k, v in data.items() if k != "snapshots"}
    return Snapshots(
        root,
        tuple(items),
        total if isinstance(total, int) else None,
        examples if isinstance(examples, int) else None,
        info,
    )
