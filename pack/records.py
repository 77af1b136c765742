"""The numbers behind a lecture pack: one Capture and one greedy Trace per input, and the model's PE table.

Everything here is numpy (the records that cross to pack/page.py); the HTML is built in viz/.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from torch import nn

from i18n import M_, NM_, Message, join_messages
from model.analysis import pe_analysis as pea
from model.analysis.budget import Plan, WorkBudget, forward_ops, largest, page_bytes, steps_for
from model.analysis.budget_input import apply_budget, source_length
from model.analysis.capture import Capture, capture
from model.analysis.inspect import positional_tables
from model.decoding import Trace, greedy_decode
from model.network.position_kinds.registry import kind
from model.text.inputs import check_text, text_room
from model.text.tokenizer import Tokenizer
from pack.export import Unsupported, folder_pack, live_spec, weight_bytes
from pack.weights import half_rounded

MAX_INPUTS = 20  # a pack is for a lecture: a handful of examples, each a whole page of figures
MAX_CHARS = 500  # per input, before tokenizing (the model's max_len cuts tokens after that)
PE_POSITIONS = 100  # rows of the PE table shown (fewer when the model's max_len is smaller)
MAX_OFFSET = 40  # dot product vs offset: k = 0..MAX_OFFSET (fewer for short tables)


# -- what a pack costs: counted by the app's work budget before anything is built --------------------------


def pack_export_bytes(weight_bytes: int) -> int:
    """The export of a model's graphs for a pack (pack/onnx_graphs.py): about four copies of its weights
    (the traced graph's constants, the ONNX bytes, their base64)."""
    return 4 * weight_bytes


def pack_need(cfg, lengths, weight_bytes: int = 0) -> tuple[int, int]:
    """(bytes, operations) of a lecture pack over inputs of these source lengths: every input's page run (capture,
    greedy decoding to the step limit, the figures of every map: page_bytes), all held until the HTML is written,
    and the export of the model's graphs (about four copies of its weights); each input's capture and decoding."""
    held = sum(page_bytes(cfg, S) for S in lengths) + pack_export_bytes(weight_bytes)
    ops = sum(2 * forward_ops(cfg, S, steps_for(cfg, S) + 1) for S in lengths)
    return held, ops


def admit_pack(cfg, lengths, weight_bytes: int, budget: WorkBudget) -> Plan:
    """The pack's Plan, or BudgetExceeded saying how many of its first inputs fit."""

    def fits() -> Message:
        n = largest(lambda k: budget.fits(*pack_need(cfg, lengths[:k], weight_bytes)), 1, len(lengths) - 1)
        return M_("its first {n} inputs fit.", n=n) if n >= 1 else M_("a shorter input is needed.")

    what = M_("A lecture pack of {n} inputs", n=len(lengths))
    return budget.admit(what, *pack_need(cfg, lengths, weight_bytes), fits)


@dataclass
class PackInput:
    """One input of the pack: what was typed, the teacher-forced capture of the model's own output, the decoding
    (None for an encoder-only model, which writes nothing)."""

    text: str
    capture: Capture
    trace: Trace | None
    warnings: list[str] = field(default_factory=list)


@dataclass
class PackPE:
    """The model's positional table and the numbers of the PE figures (the same for every input)."""

    table: np.ndarray  # (P, D) the first P rows of the source side's positional table
    kind: str  # the config's positional kind (its table: zeros for none, rope, alibi, relative)
    layout: str  # "interleaved" or "half" (sinusoidal only)
    base: float
    wavelengths: np.ndarray | None  # (D,) wavelength of each dimension, interleaved sinusoids only
    dims: list[int]  # the dimensions drawn as curves
    positions: list[int]  # starting positions p of the dot-product curves
    dots: np.ndarray  # (len(positions), K + 1) PE(p) . PE(p+k), k = 0..K
    inside_text: str | None = None  # a kind acting inside attention: its sentence (marked; translated where shown)


@dataclass
class PackRecords:
    label: str  # the model's name as the app shows it
    n_parameters: int
    config: dict  # the model's configuration (TransformerConfig.to_dict())
    inputs: list[PackInput]
    pe: PackPE
    live: dict | None = None  # the model for the page to run itself (pack.export.live_spec), or None
    live_note: str = ""  # why there is none (translated where shown)


def bounded_inputs(
    lines: Sequence[str], max_inputs: int = MAX_INPUTS, max_chars: int = MAX_CHARS
) -> tuple[list[str], list[str]]:
    """Non-empty stripped lines, duplicates dropped, at most max_inputs of at most max_chars; and what was cut
    (i18n Messages: translate where shown)."""
    texts = list(dict.fromkeys(line.strip() for line in lines if line.strip()))
    notes = []
    if len(texts) > max_inputs:
        notes.append(M_("Only the first {max} of {n} inputs are used.", max=max_inputs, n=len(texts)))
        texts = texts[:max_inputs]
    long = [i for i, t in enumerate(texts) if len(t) > max_chars]
    if long:
        notes.append(
            NM_("{n} input cut to {max} characters.", "{n} inputs cut to {max} characters.", len(long), max=max_chars)
        )
        texts = [t[:max_chars] for t in texts]
    return texts, notes


def pack_pe(model: nn.Module) -> PackPE:
    """The PE figures' numbers for this model, from the table it really adds (learned or sinusoidal)."""
    cfg = model.config
    tables = positional_tables(model)  # the side the model's shape has (both sides' tables are the same kind)
    table = tables.get("source", tables.get("target"))[: min(PE_POSITIONS, cfg.max_len)].astype(np.float64)  # (P, D)
    P, D = table.shape
    interleaved = cfg.positional == "sinusoidal" and cfg.pe_layout == "interleaved"
    max_offset = min(MAX_OFFSET, P - 1)
    positions = [p for p in (0, 10, 25, 40) if p + max_offset < P] or [0]
    dims = sorted({d for d in (0, 1, 4, D // 4, D // 2) if d < D})
    return PackPE(
        table=table,
        kind=cfg.positional,
        layout=cfg.pe_layout,
        base=float(cfg.pe_base),
        wavelengths=pea.pe_wavelengths(D, cfg.pe_base) if interleaved else None,
        dims=dims,
        positions=positions,
        dots=pea.offset_dot_products(table, positions, max_offset),
        inside_text=kind(cfg.positional).PACK_TEXT,
    )


def run_input(model: nn.Module, tokenizer: Tokenizer, text: str) -> tuple[Capture, Trace | None]:
    """The capture of the model's own greedy output, and the step-by-step greedy decoding, of one input, as the app's
    pages show them: a decoder-only model's capture reads the prompt and its continuation as one sequence; an
    encoder-only model writes nothing (no trace)."""
    if not model.config.has_decoder:
        return capture(model, tokenizer, text), None
    trace = greedy_decode(model, tokenizer, text)
    if model.config.has_encoder:
        return capture(model, tokenizer, text), trace
    written = [i for i in trace.output_ids if i != tokenizer.target.eos_id]
    return capture(model, tokenizer, text, output_ids=written), trace


def pack_records(
    model: nn.Module,
    tokenizer: Tokenizer,
    texts: Sequence[str],
    label: str = "",
    progress: Callable[[int, int], None] | None = None,
    run: Callable[[str], tuple[Capture, Trace]] | None = None,
    budget: WorkBudget | None = None,
    live: bool = True,
    checks: dict | None = None,
    folder: bool = False,
) -> PackRecords:
    """Run every input; progress(done, total) after each. run(text) replaces run_input (the app passes its caches).
    Each input is cut to what the work budget allows this model ($VIZ_WORK_MB, as in the app), with a note.

    live: carry the model itself (its ONNX graphs and tokenizer.json, pack.export) so that the page runs typed inputs;
    a model the page cannot run gets a pack without it, and PackRecords.live_note says why. checks: the app's checks
    beyond the vocabulary's, as data for the page (tasks.cards.pack_checks: the card's trained lengths, the task's
    grammar), so that typed input gets the app's warnings.

    folder: the caller writes a folder (pack.page.lecture_pack_files): an encoder-decoder above the one-file
    budget goes as index.html and its float16 weights beside it (pack.export.folder_pack); its inputs
    are run by the model with its parameters rounded to float16, the model the page runs.

    Inputs the model cannot read at all (nothing in its vocabulary) raise ValueError naming the input.
    """
    if live and folder_pack(model, folder):
        model = half_rounded(model)
    room = text_room(model.config)
    budget = WorkBudget.from_environment() if budget is None else budget
    export = pack_export_bytes(weight_bytes(model)) if live else 0
    each = WorkBudget(max(1, budget.max_bytes - export), budget.max_ops)  # what the model's export leaves an input
    inputs, checks_done = [], []
    for i, text in enumerate(texts):
        check = check_text(text, tokenizer.source, room)
        apply_budget(check, tokenizer.source, model.config, each)  # the app's work budget: the same cut
        if check.errors:
            raise ValueError(M_("input {i}: {errors}", i=i + 1, errors=join_messages(" ", check.errors)))
        checks_done.append(check)
    lengths = [source_length(tokenizer.source, model.config, c.text) for c in checks_done]
    admit_pack(model.config, lengths, weight_bytes(model) if live else 0, budget)  # every input held at once
    for i, check in enumerate(checks_done):
        cap, trace = run(check.text) if run is not None else run_input(model, tokenizer, check.text)
        inputs.append(PackInput(check.text, cap, trace, check.warnings))
        if progress is not None:
            progress(i + 1, len(texts))
    n_parameters = sum(p.numel() for p in model.parameters())
    spec, note = None, ""
    if live:
        try:
            spec = {**live_spec(model, tokenizer, folder=folder), "checks": dict(checks or {})}
        except Unsupported as err:
            note = err.args[0]
    return PackRecords(label, n_parameters, model.config.to_dict(), inputs, pack_pe(model), spec, note)
