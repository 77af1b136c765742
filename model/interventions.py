"""Changing the model while it runs, for one call: heads switched off, positions removed, shuffled or shifted.

An `Interventions` travels into `record(model, interventions=...)`; the recording hooks apply it, only to
the passes of that record block (the same ContextVar rule as the records themselves), so other sessions
sharing the model are not affected and nothing on the model changes.

    ablate=[("cross", 1, 0)]   head 0 of layer 1's cross-attention outputs zeros before W^O
    positional="off"           no positional encoding is added (the embeddings alone)
    positional="shuffled"      the rows are added in a fixed random order of the positions (seed): a permutation
                               of the sequence's own positions 0..T-1, so decoding recomputes the whole prefix
                               at each step (`needs_full_prefix`) instead of keeping earlier steps' shuffles
    positional="shifted"       every position p gets the row of p + shift
For rope / alibi / relative models (nothing added to the embeddings) the same three change the position indices
their self-attention uses: all 0, a permutation, or p + shift (which changes nothing for these relative schemes).

`per_row` (for head importance, not for one view): batch row b additionally switches off the heads in
per_row[b], so one batched pass runs many different ablations of the same input.
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
    per_row: tuple[frozenset[tuple[str, int, int]], ...] = ()  # row b of the batch also ablates per_row[b]

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
        return bool(self.ablate) or self.positional is not None or any(self.per_row)

    def check(self, model: nn.Module, lengths: Iterable[int] = ()) -> None:
        """ValueError when a head does not exist in this model, or a shift runs past max_len for these lengths."""
        cfg = model.config
        n_layers = {
            "encoder_self": cfg.n_encoder_layers,
            "decoder_self": cfg.n_decoder_layers,
            "cross": cfg.n_decoder_layers,
        }
        for kind, layer, head in sorted(self.ablate.union(*self.per_row)):
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

    @property
    def needs_full_prefix(self) -> bool:
        """True when a decoding step must re-run the whole prefix: with a key/value cache each earlier
        token would keep the shuffle of its own step, not the permutation of the current length."""
        return self.positional == "shuffled"

    def touches(self, kind: str, layer: int) -> bool:
        """Whether any head of this attention module is ablated, in every row or in some."""
        return any((k, i) == (kind, layer) for k, i, _ in self.ablate.union(*self.per_row))

    def keep_mask(self, kind: str, layer: int, batch: int, n_heads: int, device: torch.device) -> torch.Tensor:
        """(B, H, 1, 1) bool: False where row b's head h of this module is switched off."""
        keep = torch.ones(batch, n_heads, dtype=torch.bool)
        keep[:, self.heads(kind, layer)] = False
        if self.per_row:
            if len(self.per_row) != batch:
                raise ValueError(f"per-row ablation for {len(self.per_row)} rows, but the batch has {batch}")
            for b, row in enumerate(self.per_row):
                keep[b, [h for k, i, h in row if (k, i) == (kind, layer)]] = False
        return keep[:, :, None, None].to(device)

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

    def positions(self, positions: torch.Tensor) -> torch.Tensor:
        """The (T,) position indices a rope / alibi / relative model uses instead of offset .. offset+T-1: all 0
        ("off": no rotation, no distance), + shift, or the same fixed shuffle as `rows`."""
        if self.positional == "off":
            return torch.zeros_like(positions)
        if self.positional == "shifted":
            return positions + self.shift
        if self.positional == "shuffled" and len(positions):
            offset = int(positions[0])
            g = torch.Generator().manual_seed(self.seed)
            return torch.randperm(offset + len(positions), generator=g)[offset:].to(positions.device)
        return positions

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


def zero_heads(output: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Head outputs (B, H, Tq, dk) with exact zeros where keep (B, H, 1, 1) is False."""
    return torch.where(keep, output, torch.zeros((), dtype=output.dtype, device=output.device))
