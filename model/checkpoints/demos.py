"""The trained demo models that ship in checkpoints/, found by their card.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoint import CARD, CONFIG, load_card

CHECKPOINTS = Path(__file__).resolve().parents[2] / "checkpoints"
# the app's default is the first one present; then the worked example (French to English) and the five
# reverse models that differ from the first only in their positions (learned table, none at all, and inside
# attention: rotary, ALiBi, T5's relative bias)
ORDER = (
    "reverse", "translate", "dates", "copy", "fr_en", "reverse_learned", "reverse_nope", "reverse_rope",
    "reverse_alibi", "reverse_relative",
)  # fmt: skip


@dataclass
class Demo:
    name: str
    path: Path
    card: dict[str, Any]

    @property
    def examples(self) -> list[str]:
        return list(self.card.get("examples", []))

    @property
    def description(self) -> str:
        return str(self.card.get("description", ""))


def list_demos(root: Path = CHECKPOINTS) -> list[Demo]:
    """Every checkpoint folder under root with a config, known tasks first.

    Read again only when the folder or a card changed (their modification times): the sidebar asks on every page
    run, and reading ten cards through the safe JSON reader was a tenth of a demo page run's script time."""
    if not root.is_dir():
        return []
    folders = [p for p in sorted(root.iterdir()) if (p / CONFIG).is_file()]
    stamp = (root.stat().st_mtime_ns, *(_mtime(p / CARD) for p in folders))
    key = str(root)
    cached = _CACHE.get(key)
    if cached is None or cached[0] != stamp:
        rank = {name: i for i, name in enumerate(ORDER)}
        found = [Demo(p.name, p, load_card(p)) for p in folders]
        cached = (stamp, sorted(found, key=lambda d: (rank.get(d.name, len(rank)), d.name)))
        _CACHE[key] = cached
    return list(cached[1])


def _mtime(path: Path) -> int:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return -1


_CACHE: dict[str, tuple[tuple, list[Demo]]] = {}  # root -> (stamp, demos)
