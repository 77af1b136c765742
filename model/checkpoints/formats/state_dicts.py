"""The protocol's three steps for single-file state_dict formats (Annotated, gordic, tutorial), shared.

A state_dict format module defines NAME, TITLE, NOTES, EMBEDDINGS (source and target embedding keys),
CONVENTIONS, `matches(state)` and `convert(state, n_heads, where) -> Converted`, and implements the
protocol in three one-line functions that call `detect`, `inspect` and `load` here with itself.
"""

from __future__ import annotations

from dataclasses import replace
from types import ModuleType

from i18n import M_, join_messages

from ...network.transformer import Transformer
from ...text.tokenizer import Tokenizer
from ..checkpoint import CheckpointError
from .common import DEFAULT_HEADS, assemble, where
from .conventions import build_tokenizer
from .source import CheckpointInfo, LoadOptions, Source, precision_note
from .vocab_files import VocabLists, VocabSpec, read_vocabulary


def head_choices(d_model: int) -> list[int]:
    return [h for h in range(1, min(d_model, 64) + 1) if d_model % h == 0]


def detect(src: Source, fmt: ModuleType) -> bool:
    return not src.is_dir and fmt.matches(src.weights().state)


def inspect(src: Source, fmt: ModuleType) -> CheckpointInfo:
    weights = src.weights()
    src_key, tgt_key = fmt.EMBEDDINGS
    missing = [k for k in (src_key, tgt_key) if k not in weights.state]
    if missing:
        raise CheckpointError(
            M_("{where}: missing keys: {keys}", where=where(src.name, fmt.TITLE), keys=", ".join(missing))
        )
    src_vocab, d_model = weights.state[src_key].shape
    choices = head_choices(d_model)
    default = DEFAULT_HEADS if DEFAULT_HEADS in choices else max(h for h in choices if h <= DEFAULT_HEADS)
    return CheckpointInfo(
        str(src.path),
        fmt.NAME,
        fmt.TITLE,
        True,
        True,
        d_model,
        src_vocab,
        weights.state[tgt_key].shape[0],
        head_choices=choices,
        default_n_heads=default,
        notes=join_messages(" ", filter(None, (fmt.NOTES, precision_note(weights.precision)))),
        metadata=weights.meta,
        precision=weights.precision,
    )


def _vocab_lists(spec: VocabSpec | None) -> VocabLists | None:
    return None if spec is None else read_vocabulary(spec)


def load(src: Source, fmt: ModuleType, options: LoadOptions) -> tuple[Transformer, Tokenizer]:
    if src.is_dir:
        raise CheckpointError(
            M_("{name} is a folder; {format} checkpoints are single .pt/.pth files", name=src.name, format=fmt.TITLE)
        )
    weights = src.weights()
    place = where(src.name, fmt.TITLE)
    converted = fmt.convert(weights.state, DEFAULT_HEADS if options.n_heads is None else options.n_heads, place)
    both = _vocab_lists(options.vocab)
    src_lists = _vocab_lists(options.source_vocab) or both
    tgt_lists = _vocab_lists(options.target_vocab) or both
    c = converted.config
    tokenizer = build_tokenizer(fmt.CONVENTIONS, c.src_vocab_size, c.tgt_vocab_size, src_lists, tgt_lists)
    t = tokenizer.target
    converted.config = replace(
        c, pad_id=t.pad_id, bos_id=t.bos_id, eos_id=t.eos_id, extra={**c.extra, "precision": weights.precision}
    )
    converted.mapped = weights.mapped
    return assemble(converted, place), tokenizer
