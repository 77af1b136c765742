"""Recording attention weights and positional rows through forward hooks.

`with record(model) as rec:` registers forward hooks on every attention probe and on both positional
encodings, runs whatever forward passes the block makes, and removes the hooks on exit. Each hook is
bound to its own `Recorder` and only writes when that recorder is the one active in the current
context (a ContextVar), so many threads can record on one shared model at once and each gets exactly
its own weights. With `record(model, qkv=True)` the recorder also keeps each head's queries, keys,
values and outputs (hooks on the attention modules' vector probes); without it those probes have no
hooks and nothing more is kept. Attention modules ask `active_recorder()` to decide between the fused
scaled_dot_product_attention path (nobody records, or a lazy record) and the explicit softmax path whose weights
the probe exposes. `record(model, lazy=True)` keeps no weights at all: the fused path runs and each attention
module hands its `lazy_probe` what a map needs later (a LazyAttention: queries and keys after RoPE, the mask, the
positional bias's module), kept in `Recorder.lazy` (model/analysis/lazy_capture.py computes the maps from it).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import torch
from torch import nn

from ..interventions import NONE, Interventions
from ..interventions.base import HEADS, POSITIONS, ROWS

_ACTIVE: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar("transformer_recorder", default=None)

ATTENTION_KINDS = ("encoder_self", "decoder_self", "cross")
PE_SIDES = ("source", "target")


def is_recording() -> bool:
    """True inside a `record(...)` block of the current thread or task."""
    return _ACTIVE.get() is not None


def active_recorder() -> Recorder | None:
    """The Recorder of the innermost `record(...)` block of the current thread or task, or None."""
    return _ACTIVE.get()


@dataclass
class PositionalRecord:
    embeddings: torch.Tensor  # (B, T, D) scaled token embeddings before PE
    rows: torch.Tensor  # (T, D) the PE rows that were added
    offset: int  # position of the first row


@dataclass
class Recorder:
    """What one `record` block saw, in call order.

    attention[(kind, layer)] is a list with one (B, H, Tq, Tk) tensor per forward call;
    positional[side] is a list with one PositionalRecord per call;
    vectors[(kind, layer, name)], only when qkv is True, a list with one tensor per call for name in
    "q" (B, H, Tq, dk), "k" and "v" (B, H, Tk, dk), "heads" (B, H, Tq, dk): each head's output before W^O.
    """

    attention: dict[tuple[str, int], list[torch.Tensor]] = field(default_factory=lambda: defaultdict(list))
    positional: dict[str, list[PositionalRecord]] = field(default_factory=lambda: defaultdict(list))
    vectors: dict[tuple[str, int, str], list[torch.Tensor]] = field(default_factory=lambda: defaultdict(list))
    qkv: bool = False  # whether Q, K, V and the heads' outputs are kept
    keep: bool = True  # False: nothing is kept, the block only applies its interventions
    interventions: Interventions = NONE  # what this block's passes change (heads ablated, positions)
    lazy: bool = False  # the fused path runs; lazy[(kind, layer)] keeps what each map needs, no weights
    # lazy[(kind, layer)]: one LazyAttention per forward call (model/network/attention.py), only when lazy is True
    lazy_records: dict[tuple[str, int], list] = field(default_factory=lambda: defaultdict(list))
    progress: Callable[[int], None] | None = None  # lazy: called with the number of attention modules done so far

    def layers(self, kind: str) -> list[int]:
        return sorted(layer for k, layer in self.attention if k == kind)

    def clear(self) -> None:
        self.attention.clear()
        self.positional.clear()
        self.vectors.clear()
        self.lazy_records.clear()


def _tensor_hook(store: dict, recorder: Recorder, key: tuple):
    """A forward hook appending a copy of the probe's output to store[key] while `recorder` is active."""

    def hook(module: nn.Module, args: tuple, output: torch.Tensor) -> None:
        if _ACTIVE.get() is recorder:
            store[key].append(output.detach().clone())

    return hook


def _lazy_hook(recorder: Recorder, key: tuple):
    """A forward hook keeping the LazyAttention a module hands its lazy probe while `recorder` is active, and
    telling the recorder's progress callback (which may raise to stop the pass)."""

    def hook(module: nn.Module, args: tuple, output) -> None:
        if _ACTIVE.get() is recorder:
            recorder.lazy_records[key].append(output)
            if recorder.progress is not None:
                recorder.progress(sum(len(v) for v in recorder.lazy_records.values()))

    return hook


def _positional_hook(recorder: Recorder, side: str):
    """Records the rows added; when an intervention changes the ROWS point, adds its rows instead (and records those)."""

    def hook(module: nn.Module, args: tuple, *rest) -> torch.Tensor | None:
        # Registered with_kwargs, so called as (module, args, kwargs, output). But torch marks a hook as taking
        # kwargs in a second step after adding it: a forward in another thread between the two steps calls it as
        # (module, args, output). That call is always another thread's (its recorder is not active there).
        if _ACTIVE.get() is not recorder:
            return None
        kwargs = rest[0] if len(rest) == 2 else {}
        x = args[0]
        offset = kwargs.get("offset", args[1] if len(args) > 1 else 0)
        # traced (the pack's step graph), the offset stays the cache's length, not a number
        if not torch.jit.is_tracing():
            offset = int(offset)
        changed = recorder.interventions.at(ROWS)
        rows = recorder.interventions.rows(module, offset, x.size(1)) if changed else module.rows(offset, x.size(1))
        if recorder.keep:
            recorder.positional[side].append(PositionalRecord(x.detach().clone(), rows.detach().clone(), offset))
        return x + rows if changed else None

    return hook


def _intervention_hook(recorder: Recorder, point: str, *key):
    """On a hook point (POSITIONS: a rope / alibi / relative module's index probe; HEADS: a head-output probe):
    the output as this block's interventions change it, while `recorder` is active."""

    def hook(module: nn.Module, args: tuple, output: torch.Tensor) -> torch.Tensor | None:
        if _ACTIVE.get() is not recorder:
            return None
        if point == HEADS:
            return recorder.interventions.heads(*key, output)
        return recorder.interventions.positions(output)

    return hook


@contextlib.contextmanager
def record(
    model: nn.Module,
    qkv: bool = False,
    interventions: Interventions | None = None,
    keep: bool = True,
    lazy: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Iterator[Recorder]:
    """Record every attention map and positional row the model computes inside the block.

    The model must provide `attention_probes()` -> iterable of (kind, layer, probe module) and
    `positional_encodings()` -> iterable of (side, module); with qkv=True or ablated heads also
    `vector_probes()` -> iterable of (kind, layer, name, probe module). `interventions` change this
    block's passes only (see model/interventions/). keep=False records nothing and only applies the
    interventions (many sources decoded at once). Nested blocks are allowed; only the innermost one
    receives records and applies its interventions. lazy=True: no weights are recorded and attention runs fused;
    each attention module's LazyAttention is kept instead (Recorder.lazy_records; needs `lazy_probes()` ->
    iterable of (kind, layer, probe module)), and progress(n) is called after each of them.
    """
    recorder = Recorder(
        qkv=qkv and keep, interventions=interventions or NONE, keep=keep, lazy=lazy and keep, progress=progress
    )
    handles = []
    token = _ACTIVE.set(recorder)
    try:
        for kind, layer, probe in model.attention_probes() if keep and not recorder.lazy else ():
            handles.append(probe.register_forward_hook(_tensor_hook(recorder.attention, recorder, (kind, layer))))
        for kind, layer, probe in model.lazy_probes() if recorder.lazy else ():
            handles.append(probe.register_forward_hook(_lazy_hook(recorder, (kind, layer))))
        changes = recorder.interventions
        if changes.at(HEADS):  # before the qkv hooks: the recorded head outputs are what W^O receives
            for kind, layer, name, probe in model.vector_probes():
                if name == "heads" and changes.touches(kind, layer):
                    handles.append(probe.register_forward_hook(_intervention_hook(recorder, HEADS, kind, layer)))
        if recorder.qkv:
            for kind, layer, name, probe in model.vector_probes():
                handles.append(
                    probe.register_forward_hook(_tensor_hook(recorder.vectors, recorder, (kind, layer, name)))
                )
        for side, module in model.positional_encodings():
            handles.append(module.register_forward_hook(_positional_hook(recorder, side), with_kwargs=True))
            index_probe = getattr(module, "index_probe", None)
            if index_probe is not None and changes.at(POSITIONS):
                handles.append(index_probe.register_forward_hook(_intervention_hook(recorder, POSITIONS)))
        yield recorder
    finally:
        for handle in handles:
            handle.remove()
        _ACTIVE.reset(token)
