"""A small byte-level BPE tokenizer.json trained here (GPT-2, Qwen2, Llama 3 style): what the tests' tiny Hugging Face
folders and the loading benchmark write beside their weights (no tokenizer is downloaded)."""

from __future__ import annotations

import random
from pathlib import Path

WORDS = "the cat sat on a mat and the dog ran to the red house while birds sang in old trees".split()


def sentences(seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) for _ in range(200)]


def byte_level(folder: Path, specials: list[str], bos: str | None = None, vocab_size: int = 300):
    """Train and save folder/tokenizer.json; bos: a token its post-processor puts before every text. Returns it."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tok.train_from_iterator(sentences(), trainer)
    if bos is not None:
        tok.post_processor = processors.TemplateProcessing(
            single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.token_to_id(bos))]
        )
    tok.save(str(folder / "tokenizer.json"))
    return tok
