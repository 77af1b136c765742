"""Importing trained checkpoints from the PyTorch implementations people actually train.

    inspect_checkpoint(path) -> CheckpointInfo   which format, and whether to ask for n_heads / vocabularies
    import_checkpoint(path, n_heads=..., vocab=...) -> (Transformer, Tokenizer)

Formats (NAME: what): "annotated" (The Annotated Transformer's make_model state_dict), "gordic"
(pytorch-original-transformer's training state), "torch-tutorial" (the PyTorch translation tutorial's
Seq2SeqTransformer), "marian" (a local Hugging Face MarianMT folder); this project's own folder is
"transformer-viz" and is read by model.checkpoint. `model.checkpoint.load_checkpoint` dispatches here.

Nothing here runs code from a file: weights are read with safetensors or torch.load(weights_only=True),
pickled vocabularies with an unpickler that only builds inert records (see safe_pickle.py). A model
that cannot be mapped exactly is refused with a CheckpointError saying what differs.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ..checkpoint import CheckpointError, load_config
from ..tokenizer import Tokenizer
from ..transformer import Transformer
from .common import DEFAULT_HEADS, assemble
from .conventions import build_tokenizer
from .detect import MARIAN, NATIVE, STATE_FORMATS, TITLES, detect_format, read_state, state_format
from .marian import load_marian, read_marian_config
from .vocab_files import VocabLists, VocabSpec, read_vocabulary

__all__ = [
    "CheckpointInfo",
    "DEFAULT_HEADS",
    "FORMATS",
    "NATIVE",
    "detect_format",
    "import_checkpoint",
    "inspect_checkpoint",
    "read_vocabulary",
]

FORMATS: dict[str, str] = dict(TITLES)  # NAME -> human-readable title


@dataclass
class CheckpointInfo:
    """What the app needs to know about a checkpoint before loading it."""

    path: str
    format: str  # a FORMATS name
    title: str  # human-readable format name
    needs_n_heads: bool  # the file does not record the head count: ask (head_choices, default_n_heads)
    takes_vocabulary: bool  # the file carries no tokenizer: offer vocabulary files (optional; ids otherwise)
    d_model: int
    src_vocab_size: int
    tgt_vocab_size: int
    n_heads: int | None = None  # when the file records it
    head_choices: list[int] = field(default_factory=list)  # head counts that divide d_model
    default_n_heads: int | None = None
    notes: str = ""  # the format's sentence conventions, for a caption
    metadata: dict[str, Any] = field(default_factory=dict)  # plain values saved beside the weights (epochs, ...)


def head_choices(d_model: int) -> list[int]:
    return [h for h in range(1, min(d_model, 64) + 1) if d_model % h == 0]


def inspect_checkpoint(path: str | Path) -> CheckpointInfo:
    """Identify a checkpoint folder or file without building the model (CheckpointError when unknown)."""
    path = Path(path)
    fmt = detect_format(path)
    if fmt == NATIVE:
        config = load_config(path)
        return CheckpointInfo(
            str(path), fmt, TITLES[fmt], False, False, config.d_model, config.src_vocab_size, config.tgt_vocab_size,
            n_heads=config.n_heads,
        )
    if fmt == MARIAN:
        cfg = read_marian_config(path)
        has_tokenizer = (path / "vocab.json").is_file()
        return CheckpointInfo(
            str(path), fmt, TITLES[fmt], False, False, cfg["d_model"], cfg["vocab_size"], cfg["decoder_vocab_size"],
            n_heads=cfg["encoder_attention_heads"],
            notes="Tokenized with the folder's own sentencepiece models." if has_tokenizer else "No tokenizer files: token ids only.",
        )
    state, meta = read_state(path)
    mod = STATE_FORMATS[fmt]
    src_key, tgt_key = mod.EMBEDDINGS
    missing = [k for k in (src_key, tgt_key) if k not in state]
    if missing:
        raise CheckpointError(f"{path.name} ({mod.TITLE}): missing keys: {', '.join(missing)}")
    src_vocab, d_model = state[src_key].shape
    choices = head_choices(d_model)
    default = DEFAULT_HEADS if DEFAULT_HEADS in choices else max(h for h in choices if h <= DEFAULT_HEADS)
    return CheckpointInfo(
        str(path), fmt, mod.TITLE, True, True, d_model, src_vocab, state[tgt_key].shape[0],
        head_choices=choices, default_n_heads=default, notes=mod.NOTES, metadata=meta,
    )


def _vocab_lists(spec: VocabSpec | None) -> VocabLists | None:
    return None if spec is None else read_vocabulary(spec)


def import_checkpoint(
    path: str | Path,
    *,
    n_heads: int | None = None,
    vocab: VocabSpec | None = None,
    source_vocab: VocabSpec | None = None,
    target_vocab: VocabSpec | None = None,
    format: str | None = None,
) -> tuple[Transformer, Tokenizer]:
    """Load a foreign checkpoint as (this project's Transformer in eval mode, Tokenizer).

    n_heads: the head count, for formats whose files do not record it (default 8); for formats that
        record it, a different value is refused.
    vocab: one vocabulary file for both sides (a single token list, {"source": [...], "target": [...]},
        or the Annotated Transformer's vocab.pt); source_vocab / target_vocab: one file per side
        (each overrides that side of `vocab`). Without any, tokens are shown as ids (`<id 123>`).
    format: a FORMATS name to skip detection (the file must still match it).
    """
    path = Path(path)
    fmt = format or detect_format(path)
    if fmt not in FORMATS:
        raise CheckpointError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    given_vocab = any(v is not None for v in (vocab, source_vocab, target_vocab))
    if fmt in (NATIVE, MARIAN) and given_vocab:
        raise CheckpointError(f"{path.name} ({TITLES[fmt]}) carries its own tokenizer; vocabulary files are only for state_dict formats")
    if fmt == NATIVE:
        raise CheckpointError(f"{path.name} is this project's own format: load it with model.checkpoint.load_checkpoint")
    if fmt == MARIAN:
        if not path.is_dir():
            raise CheckpointError(f"{path} is not a folder; a MarianMT checkpoint is a folder with config.json and its weights")
        return load_marian(path, n_heads)
    if path.is_dir():
        raise CheckpointError(f"{path} is a folder; {TITLES[fmt]} checkpoints are single .pt/.pth files")
    state, _ = read_state(path)
    if format is not None and not STATE_FORMATS[fmt].matches(state):
        found = state_format(state, path.name)
        raise CheckpointError(f"{path.name} does not look like {TITLES[fmt]}; its keys are those of {TITLES[found]}")
    mod = STATE_FORMATS[fmt]
    where = f"{path.name} ({mod.TITLE})"
    converted = mod.convert(state, DEFAULT_HEADS if n_heads is None else n_heads, where)
    both = _vocab_lists(vocab)
    src_lists = _vocab_lists(source_vocab) or both
    tgt_lists = _vocab_lists(target_vocab) or both
    tokenizer = build_tokenizer(mod.CONVENTIONS, converted.config.src_vocab_size, converted.config.tgt_vocab_size, src_lists, tgt_lists)
    t = tokenizer.target
    converted.config = replace(converted.config, pad_id=t.pad_id, bos_id=t.bos_id, eos_id=t.eos_id)
    return assemble(converted, where), tokenizer
