"""Tiny random-weight Hugging Face folders of each family this app imports, built here with `transformers`
(configs shaped like t5-small, flan-t5-small, bart-base and mbart-large-cc25, scaled down) and tokenizers
trained here on a few sentences (sentencepiece's trainer; tokenizers' byte-level BPE trainer).

Each builder writes the folder with save_pretrained (plus the tokenizer files) and returns a `Family`: the
folder, the transformers model read back from it (eager attention, as the reference) and its tokenizer."""

from __future__ import annotations

import io
import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

WORDS = "the cat sat on a mat and the dog ran to the red house while birds sang in old trees".split()
TEXTS = ("the cat sat on a mat", "birds sang while the dog ran to the red house", "zebra xylophone", "a")


def sentences(seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 9))) for _ in range(200)]


def pieces(model: bytes) -> int:
    import sentencepiece as spm

    return spm.SentencePieceProcessor(model_proto=model).get_piece_size()


def train_sentencepiece(vocab_size: int = 40, **ids: int) -> bytes:
    import sentencepiece as spm

    buf = io.BytesIO()
    words = sentences() + [" ".join(f"w{i}x{i % 7}" for i in range(j, j + 8)) for j in range(0, 400, 8)]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(words if vocab_size > 40 else sentences()),
        model_writer=buf,
        vocab_size=vocab_size,
        model_type="unigram",
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
        **ids,
    )
    return buf.getvalue()


@dataclass
class Family:
    name: str
    folder: Path
    hf: Any  # the transformers model, from the folder, eval(), eager attention
    tokenizer: Any  # the transformers tokenizer, from the folder
    start: int  # decoder_start_token_id
    forced: int | None  # forced_bos_token_id


def perturb(model: torch.nn.Module, seed: int) -> None:
    """Noise on every parameter (norm gains included) and on BART's final_logits_bias, so that a swapped,
    skipped or mis-scaled tensor shows in the logits."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.15)
        if hasattr(model, "final_logits_bias"):
            model.final_logits_bias.copy_(torch.randn(model.final_logits_bias.shape, generator=g))


def edit_json(path: Path, **changes: Any) -> None:
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    path.write_text(json.dumps(data))


def reference(cls, folder: Path):
    return cls.from_pretrained(str(folder), attn_implementation="eager").eval()


def saved_reference(cls, config, folder: Path, seed: int):
    """A model of `cls` initialised with `seed`, perturbed (seed + 10), saved to `folder`, and read back as the
    reference (eager attention)."""
    torch.manual_seed(seed)
    model = cls(config)
    perturb(model, seed + 10)
    model.save_pretrained(str(folder))
    return reference(cls, folder)


def build_t5(root: Path, flan: bool) -> Family:
    import transformers

    folder = root / ("flan-t5-tiny" if flan else "t5-tiny")
    folder.mkdir()
    spiece = train_sentencepiece(pad_id=0, eos_id=1, unk_id=2, bos_id=-1)
    (folder / "spiece.model").write_bytes(spiece)
    extra = 4
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "T5Tokenizer", "extra_ids": extra}))
    vocab = pieces(spiece) + extra + 8  # pieces + sentinels, padded as t5's 32100 -> 32128
    shape = (  # flan-t5-small: 6 heads of 64 in d_model 512, gated-GELU, own lm_head; t5-small: 8 heads of 64, ReLU
        dict(
            d_model=32, d_kv=8, num_heads=6, d_ff=48, num_layers=3, num_decoder_layers=2, feed_forward_proj="gated-gelu"
        )
        if flan
        else dict(
            d_model=32, d_kv=8, num_heads=4, d_ff=64, num_layers=3, num_decoder_layers=2, feed_forward_proj="relu"
        )
    )
    config = transformers.T5Config(
        vocab_size=vocab,
        relative_attention_num_buckets=8 if flan else 32,  # flan: distances past 8 fall into log-spaced buckets
        relative_attention_max_distance=16 if flan else 128,
        dropout_rate=0.0,
        decoder_start_token_id=0,
        **shape,
    )
    torch.manual_seed(1 if flan else 0)
    model = transformers.T5ForConditionalGeneration(config)
    perturb(model, 11 if flan else 10)
    model.save_pretrained(str(folder))
    if flan:  # as the real flan-t5 folders: an lm_head of its own, tie_word_embeddings false, no rescale
        state = load_file(str(folder / "model.safetensors"))
        state["lm_head.weight"] = torch.randn(vocab, shape["d_model"], generator=torch.Generator().manual_seed(3))
        save_file(state, str(folder / "model.safetensors"), metadata={"format": "pt"})
        edit_json(folder / "config.json", tie_word_embeddings=False, scale_decoder_outputs=None)
    else:  # as the real t5-small config: neither field (tied, rescaled by default)
        edit_json(folder / "config.json", tie_word_embeddings=None, scale_decoder_outputs=None)
    hf = reference(transformers.T5ForConditionalGeneration, folder)
    tok = transformers.T5Tokenizer.from_pretrained(str(folder))
    return Family("flan-t5" if flan else "t5", folder, hf, tok, 0, None)


# what the tiny BART and mBART share: width, heads, feed-forward, positions (their layers and scaling differ)
TINY_BART = dict(d_model=32, encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                 decoder_ffn_dim=64, max_position_embeddings=40, dropout=0.0, forced_eos_token_id=None)  # fmt: skip


def build_bart(root: Path) -> Family:
    import transformers
    from tokenizers import ByteLevelBPETokenizer

    folder = root / "bart-tiny"
    folder.mkdir()
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(sentences(), vocab_size=300, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(folder))
    (folder / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BartTokenizer"}))
    # bart-base: 6+6 layers of d_model 768, 12 heads, post-LN, GELU
    config = transformers.BartConfig(
        vocab_size=300, encoder_layers=2, decoder_layers=3, scale_embedding=False, **TINY_BART
    )
    torch.manual_seed(2)
    model = transformers.BartForConditionalGeneration(config)
    perturb(model, 12)
    model.save_pretrained(str(folder))
    edit_json(folder / "generation_config.json", forced_bos_token_id=0)  # as bart-large: <s> after </s>
    hf = reference(transformers.BartForConditionalGeneration, folder)
    tok = transformers.BartTokenizer.from_pretrained(str(folder))
    return Family("bart", folder, hf, tok, 2, 0)


def build_mbart(root: Path) -> Family:
    import transformers

    folder = root / "mbart-tiny"
    folder.mkdir()
    spiece = train_sentencepiece()
    (folder / "sentencepiece.bpe.model").write_bytes(spiece)
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "MBartTokenizer", "src_lang": "de_DE"})
    )
    vocab = pieces(spiece) + 1 + 25 + 1  # fairseq offset, 25 language codes, <mask>
    ro = pieces(spiece) + 1 + 19  # ro_RO
    # mbart-large-cc25: 12+12 layers of 1024, pre-LN, scaled embeddings
    config = transformers.MBartConfig(vocab_size=vocab, encoder_layers=3, decoder_layers=2, scale_embedding=True,
                                      decoder_start_token_id=2, **TINY_BART)  # fmt: skip
    torch.manual_seed(3)
    model = transformers.MBartForConditionalGeneration(config)
    perturb(model, 13)
    model.save_pretrained(str(folder))
    edit_json(folder / "generation_config.json", forced_bos_token_id=ro)  # as mBART-50 is run: the target language
    hf = reference(transformers.MBartForConditionalGeneration, folder)
    tok = transformers.MBartTokenizer.from_pretrained(str(folder), src_lang="de_DE")
    return Family("mbart", folder, hf, tok, 2, ro)


def build_all(root: Path) -> dict[str, Family]:
    families = [build_t5(root, False), build_t5(root, True), build_bart(root), build_mbart(root)]
    return {f.name: f for f in families}
