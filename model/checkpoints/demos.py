"""The trained demo models that ship in checkpoints/, found by their card.json."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .checkpoint import CONFIG, load_card

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
    """Every checkpoint folder under root with a config, known tasks first."""
    if not root.is_dir():
        return []
    found = [Demo(p.name, p, load_card(p)) for p in sorted(root.iterdir()) if (p / CONFIG).is_file()]
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(found, key=lambda d: (rank.get(d.name, len(rank)), d.name))
