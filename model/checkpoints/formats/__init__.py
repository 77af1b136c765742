"""Importing trained checkpoints from the PyTorch implementations people actually train.

    inspect_checkpoint(path) -> CheckpointInfo   which format, and whether to ask for n_heads / vocabularies
    import_checkpoint(path, n_heads=..., vocab=...) -> (Transformer, Tokenizer)
    FORMATS: NAME -> title of every registered format;  REGISTRY: the format modules (see registry.py)

Formats (NAME: what): "marian" (a local Hugging Face MarianMT folder), "t5" (a Hugging Face T5 / flan-T5
folder), "bart" (a Hugging Face BART / mBART folder), "gpt2", "llama" (Llama / Qwen2) and the other Llama-like
families (Mistral, Gemma, Phi-3, ...: one `Family` table of hf_decoder.py each), "bert", "transformer-viz" (this
project's own folder), "annotated" (The Annotated Transformer's make_model state_dict), "gordic"
(pytorch-original-transformer's training state), "torch-tutorial" (the PyTorch translation tutorial's
Seq2SeqTransformer). `python -m model.checkpoints.formats` prints the list. `model.checkpoints.loading.load_checkpoint`
dispatches here. State_dicts saved in float16 or bfloat16 load in every format (cast to float32).

Nothing here runs code from a file: weights are read with safetensors or torch.load(weights_only=True),
pickled vocabularies with an unpickler that only builds inert records (see safe_pickle.py). A model
that cannot be mapped exactly is refused with a CheckpointError saying what differs.
"""

from __future__ import annotations

from pathlib import Path

from ...network.transformer import Transformer
from ...text.tokenizer import Tokenizer
from . import registry
from .common import DEFAULT_HEADS
from .native import NAME as NATIVE
from .registry import FORMATS, REGISTRY, detect_format, known_formats
from .source import CheckpointInfo, LoadOptions, Source
from .state_dicts import head_choices
from .vocab_files import VocabSpec, read_vocabulary

__all__ = [
    "DEFAULT_HEADS",
    "FORMATS",
    "NATIVE",
    "REGISTRY",
    "CheckpointInfo",
    "LoadOptions",
    "Source",
    "detect_format",
    "head_choices",
    "import_checkpoint",
    "inspect_checkpoint",
    "known_formats",
    "read_vocabulary",
]


def inspect_checkpoint(path: str | Path) -> CheckpointInfo:
    """Identify a checkpoint folder or file without building the model (CheckpointError when unknown).

    Weights are memory-mapped: this reads the tensors' names, shapes and dtypes, not their bytes."""
    return registry.inspect(path)


def import_checkpoint(
    path: str | Path,
    *,
    n_heads: int | None = None,
    vocab: VocabSpec | None = None,
    source_vocab: VocabSpec | None = None,
    target_vocab: VocabSpec | None = None,
    format: str | None = None,
) -> tuple[Transformer, Tokenizer]:
    """Load a checkpoint of any registered format as (this project's Transformer in eval mode, Tokenizer).

    n_heads: the head count, for formats whose files do not record it (default 8); for formats that
        record it, a different value is refused.
    vocab: one vocabulary file for both sides (a single token list, {"source": [...], "target": [...]},
        or the Annotated Transformer's vocab.pt); source_vocab / target_vocab: one file per side
        (each overrides that side of `vocab`). Without any, tokens are shown as ids (`<id 123>`).
        Formats that carry their own tokenizer refuse them.
    format: a FORMATS name to skip detection (the contents must still match it).
    """
    return registry.load(
        path, format, n_heads=n_heads, vocab=vocab, source_vocab=source_vocab, target_vocab=target_vocab
    )
