"""Changing the model while it runs, for one call: heads switched off, positions removed, shuffled or shifted.

An `Interventions` travels into `record(model, interventions=...)`; the recording hooks apply it, only to
the passes of that record block (the same ContextVar rule as the records themselves), so other sessions
sharing the model are not affected and nothing on the model changes.

    ablate=[("cross", 1, 0)]   head 0 of layer 1's cross-attention outputs zeros before W^O
    positional="off"           no positional encoding is added (the embeddings alone)
    positional="shuffled"      the rows are added in a fixed random order of the positions (seed)
    positional="shifted"       every position p gets the row of p + shift
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import torch
from torch import nn

KINDS = ("encoder_self", "decoder_self", "cross")
POSITIONAL = ("off", "shuffled", "shifted")
MAX_SHIFT = 1_000_000


@dataclass(frozen=True)
class Interventions:
    """What to change in one pass. ablate: (kind, layer, head) triples; positional: None or one of POSITIONAL."""

    ablate: frozenset[tuple[str, int, int]] = field(default_factory=frozenset)
    positional: str | None = None
    shift: int = 1  # for positional="shifted": every position p reads the row of p + shift
    seed: int = 0  # for positional="shuffled": which permutation

    @classmethod
    def make(
        cls,
        ablate: Iterable[tuple[str, int, int]] | None = None,
        positional: str | None = None,
        shift: int = 1,
        seed: int = 0,
    ) -> Interventions:
        """Normalise and type-check the arguments of capture(...); ValueError naming what is wrong."""
        heads = set()
        for item in ablate or ():
            try:
                kind, layer, head = item
            except (TypeError, ValueError):
                raise ValueError(f"each ablated head is (kind, layer, head), got {item!r}") from None
            if kind not in KINDS:
                raise ValueError(f"ablated head {item!r}: kind must be one of {', '.join(KINDS)}")
            if not all(isinstance(v, int) and not isinstance(v, bool) for v in (layer, head)):
                raise ValueError(f"ablated head {item!r}: layer and head must be whole numbers")
            heads.add((kind, layer, head))
        if positional is not None and positional not in POSITIONAL:
            raise ValueError(f"positional must be None or one of {', '.join(POSITIONAL)}, got {positional!r}")
        for name, value in (("shift", shift), ("seed", seed)):
            if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SHIFT:
                raise ValueError(f"{name} must be a whole number from 0 to {MAX_SHIFT:,}, got {value!r}")
        return cls(frozenset(heads), positional, shift, seed)

    def __bool__(self) -> bool:
        return bool(self.ablate) or self.positional is not None

    def check(self, model: nn.Module, lengths: Iterable[int] = ()) -> None:
        """ValueError when a head does not exist in this model, or a shift runs past max_len for these lengths."""
        cfg = model.config
        n_layers = {
            "encoder_self": cfg.n_encoder_layers,
            "decoder_self": cfg.n_decoder_layers,
            "cross": cfg.n_decoder_layers,
        }
        for kind, layer, head in sorted(self.ablate):
            if not 0 <= layer < n_layers[kind]:
                raise ValueError(
                    f"ablated head ({kind}, {layer}, {head}): the model has {n_layers[kind]} {kind} layers"
                )
            if not 0 <= head < cfg.n_heads:
                raise ValueError(f"ablated head ({kind}, {layer}, {head}): the model has {cfg.n_heads} heads")
        if self.positional == "shifted":
            longest = max(lengths, default=0)
            if longest + self.shift > cfg.max_len:
                raise ValueError(
                    f"shifting {longest} positions by {self.shift} needs {longest + self.shift} positional rows; "
                    f"the model has {cfg.max_len} (max_len)"
                )

    def heads(self, kind: str, layer: int) -> list[int]:
        """The ablated heads of one attention module, ascending."""
        return sorted(h for k, i, h in self.ablate if (k, i) == (kind, layer))

    def rows(self, module: nn.Module, offset: int, length: int) -> torch.Tensor:
        """The (length, D) positional rows to add instead of module.rows(offset, length)."""
        if self.positional == "off":
            return torch.zeros_like(module.rows(offset, length))
        if self.positional == "shifted":
            return module.rows(offset + self.shift, length)
        if self.positional == "shuffled":
            g = torch.Generator().manual_seed(self.seed)
            order = torch.randperm(offset + length, generator=g)[offset:]  # positions offset.. get a fixed shuffle
            return module.table[order.to(module.table.device)]
        return module.rows(offset, length)

    def describe(self) -> dict:
        """JSON-ready record of what was changed ({} for nothing), for Capture.interventions and downloads."""
        out: dict = {}
        if self.ablate:
            out["ablate"] = [list(t) for t in sorted(self.ablate)]
        if self.positional is not None:
            out["positional"] = self.positional
            if self.positional == "shifted":
                out["shift"] = self.shift
            if self.positional == "shuffled":
                out["seed"] = self.seed
        return out


NONE = Interventions()


def zero_heads(output: torch.Tensor, heads: list[int]) -> torch.Tensor:
    """A copy of head outputs (B, H, Tq, dk) with the given heads set to zero."""
    out = output.clone()
    out[:, heads] = 0
    return out
