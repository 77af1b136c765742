"""load_checkpoint: any checkpoint the formats' registry knows, this project's own folder included.

It sits above both model/checkpoints/checkpoint.py (this project's folder: save, read, the building blocks) and
formats/ (one module per format, built on those blocks), so neither imports the other back.
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..network.transformer import Transformer
from ..text.tokenizer import Tokenizer
from .formats.registry import load
from .formats.vocab_files import VocabSpec


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

    A folder written by save_checkpoint, or any format in the registry of model.checkpoints.formats (detected
    from the contents, or named by `format`): the Annotated Transformer, pytorch-original-transformer and
    the PyTorch translation tutorial (.pt state_dicts; n_heads and vocabulary files as in
    model.checkpoints.formats.import_checkpoint), or a Hugging Face MarianMT, T5 / flan-T5 or BART / mBART folder.
    Each file is read once.
    """
    model, tokenizer = load(
        path, format=format, n_heads=n_heads, vocab=vocab, source_vocab=source_vocab, target_vocab=target_vocab
    )
    if torch.device(device) != torch.device("cpu"):  # loaders build on the CPU; .to() walks every module
        model = model.to(device)
    return model, tokenizer  # in eval mode: every format's load returns it so (materialize), and .to() keeps it
