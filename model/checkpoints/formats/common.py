"""What every importer shares: renaming foreign tensors onto this project's names, checking what cannot
be mapped (missing, unknown and misshapen keys; positional tables that are not the sinusoid), and
building the model.

An importer reads the foreign state with a `Mapper`: `put(ours, theirs)` moves one tensor (optionally
transformed, e.g. one third of a fused in_proj), `finish()` refuses the state if any key the format
needs is missing or any key is left over, naming them. `assemble` then builds the Transformer and
copies every tensor in, naming the foreign key of any shape that does not fit.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from i18n import M_, join_messages, message_of

from ...network.config import TransformerConfig
from ...network.positional import sinusoidal_encoding
from ...network.transformer import Transformer
from ..checkpoint import CheckpointError, expected_shapes, materialize, sinusoid, skeleton

DEFAULT_HEADS = 8  # what the Annotated Transformer, pytorch-original-transformer and the tutorial all use


def listing(names: Iterable[str], limit: int = 8) -> str:
    names = list(names)
    shown = ", ".join(names[:limit])
    return shown + (f" (+{len(names) - limit} more)" if len(names) > limit else "")


def where(name: str, title: str):
    """ "NAME (FORMAT TITLE)": where a message's problem is, e.g. "model.pt (The Annotated Transformer (harvardnlp))"."""
    return M_("{name} ({format})", name=name, format=title)


def layer_count(keys: Iterable[str], prefix: str) -> int:
    """1 + the largest i in keys "prefix.i....", 0 when there are none (gaps show up later as missing keys)."""
    pattern = re.compile(re.escape(prefix) + r"\.(\d+)\.")
    found = [int(m.group(1)) for k in keys if (m := pattern.match(k))]
    return max(found) + 1 if found else 0


def chunk(index: int, parts: int = 3) -> Callable[[torch.Tensor], torch.Tensor]:
    """Rows index/parts of a fused tensor along dim 0 (nn.MultiheadAttention's in_proj holds W_q; W_k; W_v)."""

    def take(t: torch.Tensor) -> torch.Tensor:
        if t.size(0) % parts:
            raise CheckpointError(
                M_(
                    "a fused tensor of shape {shape} cannot be split into {parts} equal parts",
                    shape=tuple(t.shape),
                    parts=parts,
                )
            )
        return t.chunk(parts, dim=0)[index]

    return take


class Mapper:
    """Moves tensors from a foreign state_dict to this project's names, remembering where each came from."""

    def __init__(self, state: Mapping[str, torch.Tensor], where: str):
        self.state = state
        self.where = where  # e.g. "model.pt (Annotated Transformer)": a str, or an i18n Message (see where())
        self.used: set[str] = set()
        self.missing: list[str] = []
        self.out: dict[str, torch.Tensor] = {}
        self.origin: dict[str, str] = {}

    def require(self, *keys: str) -> None:
        """Refuse now, naming them, if keys the shape inference depends on are absent."""
        absent = [k for k in keys if k not in self.state]
        if absent:
            raise CheckpointError(M_("{where}: missing keys: {keys}", where=self.where, keys=listing(absent)))

    def take(self, theirs: str) -> torch.Tensor | None:
        """The foreign tensor (marked as used), or None after recording it as missing."""
        if theirs not in self.state:
            if theirs not in self.missing:
                self.missing.append(theirs)
            return None
        self.used.add(theirs)
        return self.state[theirs]

    def put(
        self, ours: str, theirs: str, transform: Callable[[torch.Tensor], torch.Tensor] | None = None, note: str = ""
    ) -> None:
        tensor = self.take(theirs)
        if tensor is None:
            return
        try:
            self.out[ours] = transform(tensor) if transform else tensor
        except CheckpointError as err:
            raise CheckpointError(
                M_("{where}: {key}: {problem}", where=self.where, key=theirs, problem=message_of(err))
            ) from None
        self.origin[ours] = theirs + note

    def put_linear(self, ours: str, theirs: str, bias: bool = True) -> None:
        self.put(f"{ours}.weight", f"{theirs}.weight")
        if bias:
            self.put(f"{ours}.bias", f"{theirs}.bias")

    def finish(self) -> None:
        """Refuse the state if a needed key is missing or a key was not used, naming them."""
        unexpected = [k for k in self.state if k not in self.used]
        problems = []
        if self.missing:
            problems.append(M_("missing keys: {keys}", keys=listing(self.missing)))
        if unexpected:
            problems.append(
                M_("unexpected keys (this format's model has no place for them): {keys}", keys=listing(unexpected))
            )
        if problems:
            raise CheckpointError(M_("{where}: {problem}", where=self.where, problem=join_messages(" | ", problems)))


def pe_tolerance(length: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """(length, 1) allowed |stored - exact| per position.

    float32 sinusoids computed the usual way lose ~8e-8 * position; a table stored in a narrower float
    type is also rounded once more, by at most half its machine epsilon for values in [-1, 1]
    (float16 4.9e-4, bfloat16 3.9e-3): one full epsilon is allowed for that.
    """
    stored = torch.finfo(dtype).eps if dtype in (torch.float16, torch.bfloat16) else 0.0
    return 1e-5 + stored + 2e-7 * torch.arange(length, dtype=torch.float32)[:, None]


def sinusoid_tables(
    stored: dict[str, tuple[str, torch.Tensor]], d_model: int, layout: str, where: str
) -> dict[str, torch.Tensor]:
    """sinusoid_table for each side ({"source": (key, tensor), ...}); a side whose table equals one already
    checked (the usual case: both sides store the same sinusoid) reuses that check."""
    out: dict[str, torch.Tensor] = {}
    checked: list[tuple[torch.Tensor, torch.Tensor]] = []
    for side, (key, tensor) in stored.items():
        same = next(
            (
                table
                for raw, table in checked
                if raw.shape == tensor.shape and raw.dtype == tensor.dtype and torch.equal(raw, tensor)
            ),
            None,
        )
        out[side] = same if same is not None else sinusoid_table(tensor, key, d_model, layout, where)
        checked.append((tensor, out[side]))
    return out


_CHECK_ROWS = 256  # rows compared at a time: small buffers the allocator reuses (a full-size difference of a
# 5000 x 512 table means fresh memory, which costs more than the comparison itself)


def _first_bad_rows(table: torch.Tensor, exact: torch.Tensor, tolerance: torch.Tensor) -> int | None:
    """The first row of the first block of _CHECK_ROWS rows where |table - exact| exceeds the tolerance (or is
    not a number), or None. Each row's largest difference against its tolerance: a third of the time of
    comparing every cell (no block of booleans), and a NaN fails the `<=` as it should."""
    for start in range(0, table.size(0), _CHECK_ROWS):
        rows = slice(start, start + _CHECK_ROWS)
        worst = torch.sub(table[rows], exact[rows]).abs_().amax(dim=1)
        if not bool((worst <= tolerance[rows, 0]).all()):
            return start
    return None


def sinusoid_table(stored: torch.Tensor, key: str, d_model: int, layout: str, where: str) -> torch.Tensor:
    """Check that a stored (max_len, d_model) positional table is the sinusoid of `layout`; return it as float32.

    The tolerance fits the stored dtype (see pe_tolerance): a float16 or bfloat16 table passes, a wrong one does not.

    The file's own table is what the original code adds, so it is the one used; the check only makes
    sure that calling it "sinusoidal" (and drawing it so) is true. Refused with the largest difference.
    """
    table = stored.detach().float()
    if table.dim() != 2 or table.size(1) != d_model:
        raise CheckpointError(
            M_(
                "{where}: {key} has shape {shape}; expected (max_len, {d_model}) positional rows",
                where=where,
                key=key,
                shape=tuple(stored.shape),
                d_model=d_model,
            )
        )
    exact = sinusoid(table.size(0), d_model, 10000.0, layout)
    tolerance = pe_tolerance(table.size(0), stored.dtype)
    bad = _first_bad_rows(table, exact, tolerance)
    if bad is not None:
        rows = slice(bad, bad + _CHECK_ROWS)
        excess = (table[rows] - exact[rows]).abs_() - tolerance[rows]
        pos, dim = divmod(int(excess.argmax()), d_model)
        pos += bad
        diff = float((table[pos, dim] - exact[pos, dim]).abs())
        other = "half" if layout == "interleaved" else "interleaved"
        hint = ""
        if bool(((table - sinusoidal_encoding(table.size(0), d_model, layout=other)).abs() <= tolerance).all()):
            hint = M_("; it is the {other} layout, which this format's code does not use", other=other)
        raise CheckpointError(
            M_(
                "{where}: {key} is not the sinusoidal positional encoding this format defines ({layout} sin/cos, "
                "base 10000): it differs by {diff} at position {pos}, dimension {dim}{hint}",
                where=where,
                key=key,
                layout=layout,
                diff=f"{diff:.3g}",
                pos=pos,
                dim=dim,
                hint=hint,
            )
        )
    return table


@dataclass
class Converted:
    """A foreign model mapped onto this project's names, not yet loaded."""

    config: TransformerConfig
    state: dict[str, torch.Tensor]  # this project's parameter names (tied names may be absent)
    origin: dict[str, str]  # our name -> the foreign key it came from (for messages)
    pe_tables: dict[str, torch.Tensor] = field(default_factory=dict)  # "source"/"target" -> (max_len, D) table
    mapped: bool = True  # the tensors are views of a memory-mapped file: copy them into the model
    dtype: torch.dtype = torch.float32  # the float type the model keeps its weights in (bfloat16: as stored)


def make_config(where: str, **fields) -> TransformerConfig:
    """TransformerConfig, with n_heads that do not divide d_model (and any other bad value) as CheckpointError."""
    d, h = fields["d_model"], fields["n_heads"]
    if type(h) is not int:
        raise CheckpointError(M_("{where}: n_heads must be an integer", where=where))
    if type(d) is int and (h < 1 or (d % h and fields.get("head_dim") is None)):
        divisors = [n for n in range(1, min(d, 64) + 1) if d % n == 0]
        raise CheckpointError(
            M_(
                "{where}: n_heads={h} does not divide d_model={d}; possible head counts: {divisors}",
                where=where,
                h=h,
                d=d,
                divisors=divisors,
            )
        )
    try:
        return TransformerConfig(**fields)
    except ValueError as err:
        raise CheckpointError(M_("{where}: {problem}", where=where, problem=message_of(err))) from None


def assemble(converted: Converted, where: str) -> Transformer:
    """Build the model from the config with the mapped tensors (shapes checked, foreign keys named).

    Nothing is initialised at random and, for a file read into memory, nothing is copied twice: the
    model adopts the tensors (see model.checkpoints.checkpoint.materialize); converted.mapped says whether to copy.
    """
    model = skeleton(converted.config)
    state = dict(converted.state)
    if converted.config.share_embeddings:
        state.setdefault("tgt_embed.weight", state.get("src_embed.weight"))
    if converted.config.tie_generator:
        state.setdefault("generator.weight", state.get("tgt_embed.weight"))
    expected = expected_shapes(model)
    absent = [k for k in expected if state.get(k) is None]
    if absent:  # a mapping bug rather than a bad file, but still never a half-loaded model
        raise CheckpointError(M_("{where}: nothing maps onto {keys}", where=where, keys=listing(absent)))
    c = converted.config
    wrong = [
        M_(
            "{key} has shape {shape}, but d_model={d_model}, d_ff={d_ff} needs {needed}",
            key=converted.origin.get(k, k),
            shape=tuple(state[k].shape),
            d_model=c.d_model,
            d_ff=c.d_ff,
            needed=shape,
        )
        for k, shape in expected.items()
        if tuple(state[k].shape) != shape
    ]
    if wrong:
        raise CheckpointError(
            M_("{where}: inconsistent shapes: {shapes}", where=where, shapes=join_messages("; ", wrong[:6]))
        )
    return materialize(model, state, copy=converted.mapped, tables=converted.pe_tables, dtype=converted.dtype)


def one_end_token(cfg: dict[str, Any], where: str) -> None:
    """A list of end tokens in cfg["eos_token_id"] refused unless it holds one id (read as that id): decoding here
    stops at a single end token."""
    if isinstance(cfg.get("eos_token_id"), list):
        if len(cfg["eos_token_id"]) != 1:
            raise CheckpointError(M_("{where}: eos_token_id lists {n} ids; this model stops at a single end token",
                                     where=where, n=len(cfg["eos_token_id"])))  # fmt: skip
        cfg["eos_token_id"] = cfg["eos_token_id"][0]


def refuse(where: str, problems: list) -> None:
    """Every reason a config cannot be mapped exactly, named together in one CheckpointError (none: nothing)."""
    if problems:
        raise CheckpointError(M_("{where}: this model cannot be mapped exactly: {problems}", where=where,
                                 problems=join_messages("; ", problems)))  # fmt: skip


def check_heads(where: str, config: TransformerConfig, asked: int | None) -> None:
    """Refuse a number of heads asked for (n_heads=) that differs from the one the folder's config.json says."""
    if asked is not None and asked != config.n_heads:
        raise CheckpointError(M_("{where}: config.json says {n} heads, but n_heads={asked} was asked for",
                                 where=where, n=config.n_heads, asked=asked))  # fmt: skip
