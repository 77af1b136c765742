"""This project's checkpoint format: a folder of three plain files, no pickled code anywhere.

    model.safetensors   the weights (each tied tensor stored once, under its first name)
    config.json         TransformerConfig as JSON
    tokenizer.json      the source and target vocabularies (see tokenizer.py)
    card.json           optional: free-form metadata (task, training command, accuracy, ...)

Every problem on loading raises CheckpointError naming the file, the key and the shapes involved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from .config import TransformerConfig
from .tokenizer import Tokenizer
from .transformer import Transformer, build_model

if TYPE_CHECKING:
    from .importers.vocab_files import VocabSpec

WEIGHTS, CONFIG, TOKENIZER, CARD = "model.safetensors", "config.json", "tokenizer.json", "card.json"


class CheckpointError(ValueError):
    """A checkpoint that cannot be loaded; the message says which file and what is wrong."""


def unique_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with each shared tensor kept once, under the first name it appears with."""
    seen: set[tuple[int, int, tuple[int, ...]]] = set()
    out = {}
    for name, tensor in model.state_dict().items():
        ident = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))
        if ident in seen:
            continue
        seen.add(ident)
        out[name] = tensor.detach().contiguous().cpu()
    return out


def save_checkpoint(model: Transformer, tokenizer: Tokenizer, path: str | Path, card: dict[str, Any] | None = None) -> Path:
    """Write the checkpoint folder (created if needed) and return its path."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(unique_state(model), str(folder / WEIGHTS), metadata={"format": "transformer-viz/1"})
    (folder / CONFIG).write_text(json.dumps(model.config.to_dict(), indent=1), encoding="utf-8")
    tokenizer.save(folder / TOKENIZER)
    if card is not None:
        (folder / CARD).write_text(json.dumps(card, indent=1, ensure_ascii=False), encoding="utf-8")
    return folder


def _read_json(path: Path) -> Any:
    if not path.is_file():
        raise CheckpointError(f"{path.name} is missing from {path.parent}")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CheckpointError(f"{path.name} is not valid JSON: {err}") from err


def load_config(folder: Path) -> TransformerConfig:
    try:
        return TransformerConfig.from_dict(_read_json(folder / CONFIG))
    except (TypeError, ValueError) as err:
        if isinstance(err, CheckpointError):
            raise
        raise CheckpointError(f"{CONFIG}: {err}") from err


def load_tokenizer(folder: Path) -> Tokenizer:
    try:
        return Tokenizer.from_dict(_read_json(folder / TOKENIZER))
    except (TypeError, ValueError, KeyError) as err:
        if isinstance(err, CheckpointError):
            raise
        raise CheckpointError(f"{TOKENIZER}: {err}") from err


def load_weights(model: nn.Module, path: Path) -> None:
    """Load safetensors weights into the model, checking every key and shape first."""
    if not path.is_file():
        raise CheckpointError(f"{path.name} is missing from {path.parent}")
    try:
        stored = load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"{path.name} is not a readable safetensors file ({err})") from err
    expected = unique_state(model)
    missing = [k for k in expected if k not in stored]
    unexpected = [k for k in stored if k not in expected]
    wrong = [
        f"{k}: file has {tuple(stored[k].shape)}, the config needs {tuple(v.shape)}"
        for k, v in expected.items()
        if k in stored and stored[k].shape != v.shape
    ]
    problems = []
    if missing:
        problems.append(f"missing keys: {', '.join(missing[:8])}" + (f" (+{len(missing) - 8} more)" if len(missing) > 8 else ""))
    if unexpected:
        problems.append(f"unexpected keys: {', '.join(unexpected[:8])}" + (f" (+{len(unexpected) - 8} more)" if len(unexpected) > 8 else ""))
    if wrong:
        problems.append("wrong shapes: " + "; ".join(wrong[:8]))
    if problems:
        raise CheckpointError(f"{path.name} does not match {CONFIG}: " + " | ".join(problems))
    with torch.no_grad():
        params = dict(model.state_dict(keep_vars=True))
        for name, tensor in stored.items():
            params[name].copy_(tensor.to(params[name].dtype))


def load_card(path: str | Path) -> dict[str, Any]:
    """The checkpoint's card.json, or an empty dict when it has none."""
    card = Path(path) / CARD
    return _read_json(card) if card.is_file() else {}


def load_checkpoint(
    path: str | Path,
    device: str | torch.device = "cpu",
    *,
    n_heads: int | None = None,
    vocab: VocabSpec | None = None,
    source_vocab: VocabSpec | None = None,
    target_vocab: VocabSpec | None = None,
    format: str | None = None,
) -> tuple[Transformer, Tokenizer]:
    """Load a checkpoint: (model in eval mode, tokenizer).

    A folder written by save_checkpoint, or any format model.importers knows (detected from the
    contents, or named by `format`): the Annotated Transformer, pytorch-original-transformer and the
    PyTorch translation tutorial (.pt state_dicts; n_heads and vocabulary files as in
    model.importers.import_checkpoint), or a Hugging Face MarianMT folder.
    """
    folder = Path(path)
    if not folder.exists():
        raise CheckpointError(f"no checkpoint at {folder}")
    from .importers import NATIVE, detect_format, import_checkpoint  # here: the importers build on this module

    fmt = format or detect_format(folder)
    if fmt != NATIVE:
        model, tokenizer = import_checkpoint(
            folder, n_heads=n_heads, vocab=vocab, source_vocab=source_vocab, target_vocab=target_vocab, format=fmt
        )
        return model.to(device).eval(), tokenizer
    if not folder.is_dir():
        raise CheckpointError(f"{folder} is a file; a checkpoint is a folder holding {WEIGHTS}, {CONFIG} and {TOKENIZER}")
    if any(v is not None for v in (vocab, source_vocab, target_vocab)):
        raise CheckpointError(f"{folder.name} carries its own {TOKENIZER}; vocabulary files are only for imported state_dicts")
    config = load_config(folder)
    if n_heads is not None and n_heads != config.n_heads:
        raise CheckpointError(f"{CONFIG} says {config.n_heads} heads, but n_heads={n_heads} was asked for")
    tokenizer = load_tokenizer(folder)
    for side, side_vocab, size in (("source", tokenizer.source, config.src_vocab_size), ("target", tokenizer.target, config.tgt_vocab_size)):
        if len(side_vocab) != size:
            raise CheckpointError(f"{TOKENIZER} has {len(side_vocab)} {side} tokens but {CONFIG} says {side} vocabulary {size}")
    model = build_model(config)
    load_weights(model, folder / WEIGHTS)
    return model.to(device).eval(), tokenizer
