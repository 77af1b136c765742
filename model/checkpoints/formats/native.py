"""This project's own checkpoint folder (model.safetensors, config.json, tokenizer.json, card.json),
written by model.checkpoints.checkpoint.save_checkpoint: the format protocol around model.checkpoints.checkpoint's readers."""

from __future__ import annotations

from i18n import M_

from ...network.transformer import Transformer
from ...text.tokenizer import Tokenizer
from ..checkpoint import (
    CONFIG,
    TOKENIZER,
    WEIGHTS,
    CheckpointError,
    load_config,
    load_tokenizer,
    materialize,
    read_native_weights,
    skeleton,
)
from .source import CheckpointInfo, LoadOptions, Source

NAME = "transformer-viz"
TITLE = M_("this project's checkpoint folder")
DOC = f"a folder holding {WEIGHTS}, {CONFIG} and {TOKENIZER} (python -m model.train, save_checkpoint)"


def detect(src: Source) -> bool:
    """Any folder whose config.json is not a Hugging Face one (a missing config.json is named on loading); a
    folder with neither config.json nor model.safetensors is no checkpoint at all (the registry says so)."""
    if not src.is_dir or not (src.has(CONFIG) or src.has(WEIGHTS)):
        return False
    data = src.json(CONFIG)
    return not (isinstance(data, dict) and "model_type" in data)


def inspect(src: Source) -> CheckpointInfo:
    config = load_config(src.path, src.json(CONFIG))
    return CheckpointInfo.of_folder(src, NAME, TITLE, config)


def load(src: Source, options: LoadOptions) -> tuple[Transformer, Tokenizer]:
    folder = src.path
    if options.given_vocab:
        raise CheckpointError(
            M_(
                "{name} carries its own {file}; vocabulary files are only for imported state_dicts",
                name=folder.name,
                file=TOKENIZER,
            )
        )
    config = load_config(folder, src.json(CONFIG))  # limits checked before anything is allocated
    if options.n_heads is not None and options.n_heads != config.n_heads:
        raise CheckpointError(
            M_(
                "{file} says {n} heads, but n_heads={asked} was asked for",
                file=CONFIG,
                n=config.n_heads,
                asked=options.n_heads,
            )
        )
    tokenizer = load_tokenizer(folder)
    for side, side_vocab, size in (
        ("source", tokenizer.source, config.src_vocab_size),
        ("target", tokenizer.target, config.tgt_vocab_size),
    ):
        if len(side_vocab) != size:
            raise CheckpointError(
                M_(
                    "{file} has {n} {side} tokens but {config} says {side} vocabulary {size}",
                    file=TOKENIZER,
                    n=len(side_vocab),
                    side=side,
                    config=CONFIG,
                    size=size,
                )
            )
    model = skeleton(config)
    stored = read_native_weights(model, folder / WEIGHTS)  # read once into private memory: the model adopts it
    return materialize(model, stored, copy=False), tokenizer
