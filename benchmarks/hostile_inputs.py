"""What the hostile visitors of benchmarks/bench_hostile.py send: the checkpoints and folders they open (issue 22's
wide and never-ending models, issue 30's amplifying tokenizer, 57 MB vocab.json and wide feed-forward), the links,
and the uploads; and the newcomer's ordinary links, the baseline."""

from __future__ import annotations

import io
import json
import struct
import zipfile
from pathlib import Path


def letters_checkpoint(path: Path, **shape) -> None:
    """A one-layer checkpoint over the 26 letters, random weights, in the shape given (d_model, heads, d_ff, max_len)."""
    from model import Tokenizer, TransformerConfig, Vocab, build_model, save_checkpoint

    vocab = Vocab.build("abcdefghijklmnopqrstuvwxyz", level="char")
    cfg = TransformerConfig(
        src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), n_encoder_layers=1, n_decoder_layers=1, dropout=0.0,
        **shape,
    )  # fmt: skip
    save_checkpoint(build_model(cfg, seed=0), Tokenizer(vocab, vocab), path, card={"examples": ["abc"]})


def hostile_models(folder: Path) -> dict[str, Path]:
    """The issue's two hostile checkpoints, written into `folder` (a server folder the benchmark allows)."""
    import torch

    from model import TransformerConfig, build_model, load_checkpoint, save_checkpoint

    letters_checkpoint(folder / "wide", d_model=32, n_heads=32, d_ff=64, max_len=16384)
    model, tok = load_checkpoint(Path(__file__).resolve().parents[1] / "checkpoints" / "reverse")
    config = TransformerConfig.from_dict({**model.config.to_dict(), "max_len": 16384})
    noeos = build_model(config, seed=0)
    state = {k: v for k, v in model.state_dict().items() if "pe" not in k.split(".")[0]}
    noeos.load_state_dict(state, strict=False)
    with torch.no_grad():
        noeos.generator.bias[config.eos_id] = -1e4  # never ends: decodes to the step limit
    save_checkpoint(noeos.eval(), tok, folder / "noeos", card={"examples": ["abc"]})
    return {"wide": folder / "wide", "noeos": folder / "noeos"}


LETTERS31 = "abcdefghijklmnopqrstabcdefghijk"  # 31 letters of the reverse demo's alphabet


def issue30_models(folder: Path) -> dict[str, Path]:
    """Issue 30's hostile folders: a T5 folder whose spiece.model rewrites `a` as 2,000 `z`s, a BART folder with a
    57 MB vocab.json (2.5 M entries), a wide checkpoint (d_ff 8192, about 64 MB)."""
    import random

    import sentencepiece as spm
    import torch
    import transformers
    from tokenizers import ByteLevelBPETokenizer

    rng = random.Random(0)
    words = "the cat sat on a mat and the dog ran to the red house while birds sang in old trees".split()
    sentences = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 9))) for _ in range(200)]
    t5 = folder / "t5-amplify"  # a t5-small-shaped folder, scaled down, whose tokenizer multiplies text
    t5.mkdir()
    rule = folder / "rule.tsv"
    rule.write_text("61\t" + " ".join(["7A"] * 2000) + "\n")
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=buf, vocab_size=40, model_type="unigram",
        character_coverage=1.0, hard_vocab_limit=False, minloglevel=2, normalization_rule_tsv=str(rule),
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
    )  # fmt: skip
    (t5 / "spiece.model").write_bytes(buf.getvalue())  # 18 KB or so
    pieces = spm.SentencePieceProcessor(model_proto=buf.getvalue()).get_piece_size()
    (t5 / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "T5Tokenizer", "extra_ids": 4}))
    torch.manual_seed(0)
    transformers.T5ForConditionalGeneration(
        transformers.T5Config(vocab_size=pieces + 12, d_model=32, d_kv=8, num_heads=4, d_ff=64, num_layers=2,
                              num_decoder_layers=2, dropout_rate=0.0, decoder_start_token_id=0)
    ).save_pretrained(str(t5))  # fmt: skip
    bart = folder / "bart-vocab57"  # a bart-base-shaped folder, scaled down, with a 57 MB vocab.json
    bart.mkdir()
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(sentences, vocab_size=300, special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    bpe.save_model(str(bart))
    (bart / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "BartTokenizer"}))
    transformers.BartForConditionalGeneration(
        transformers.BartConfig(vocab_size=300, d_model=32, encoder_layers=2, decoder_layers=2,
                                encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=64,
                                decoder_ffn_dim=64, max_position_embeddings=40, dropout=0.0, forced_eos_token_id=None)
    ).save_pretrained(str(bart))  # fmt: skip
    entries = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}
    with open(bart / "vocab.json", "w") as f:  # 2.5 M entries, about 57 MB
        f.write(json.dumps(entries)[:-1])
        f.write("".join(f', "tok{i:09d}x{i % 97:02d}abcdefghij": {4 + i % 296}' for i in range(2_500_000)) + "}")
    letters_checkpoint(folder / "wide_ff", d_model=512, n_heads=8, d_ff=8192, max_len=128)
    return {"amplify": t5, "vocab57": bart, "wide_ff": folder / "wide_ff"}


def issue30_links(models: dict[str, Path]) -> dict[str, list]:
    """Issue 30's attacks that are links, each alone beside the room (name -> the links it opens)."""
    return {
        "amplifying tokenizer": [("", {"model": f"path:{models['amplify']}", "text": "a b " * 5000})],
        "IG link, largest settings": [
            ("attribution", {"model": "demo:reverse", "text": LETTERS31, "attr_steps": "128"})
        ],
        "wide model on Attribution": [("attribution", {"model": f"path:{models['wide_ff']}", "text": LETTERS31})],
        "57 MB vocab.json": [("", {"model": f"path:{models['vocab57']}", "text": "hello"})],
    }


def hostile_uploads(folder: Path) -> list[tuple[str, bytes]]:
    """(name, bytes) of the uploads the issue found: they must be refused without filling memory or disk."""
    import random

    block = random.Random(0).randbytes(16384)  # deflate sees no repeat within its window: about 130x
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("model.safetensors", (block * (256 * 2**20 // len(block))))
        z.writestr("config.json", b"{}")
    expands = buf.getvalue()
    n = 1_000_000
    header = json.dumps(
        {f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(n)}
    ).encode()
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("model.safetensors", struct.pack("<Q", len(header)) + header + bytes(4 * n))
    many = buf.getvalue()
    return [
        ("expands130.zip", expands),
        ("million_tensors.zip", many),
        ("..", b"not a checkpoint" * 64),
        ("x" * 300 + ".pt", b"not a checkpoint" * 64),
    ]


BENIGN = [  # a newcomer opening the same pages with ordinary links: the baseline of the hostile visitor's five
    ("", {"model": "demo:reverse", "text": "drawer"}),
    ("decoding", {"model": "demo:reverse", "text": "stressed"}),
    ("", {"model": "demo:translate", "text": "the red apple"}),
    ("decoding", {"model": "demo:reverse", "text": "abc", "dec_strategy": "beam", "dec_beam": "8"}),
    ("inside", {"model": "demo:reverse", "text": "lamp"}),
]


def hostile_links(models: dict[str, Path]) -> list:
    """The issue's inputs, one after the other, each a fresh session (as a visitor opening links)."""
    return [
        ("", {"model": f"path:{models['wide']}", "text": "abcdefghij" * 1600}),
        ("decoding", {"model": f"path:{models['noeos']}", "text": "stressed" * 500}),
        ("", {"model": "demo:reverse", "text": "a" * 5_000_000}),
        (
            "decoding",
            {"model": f"path:{models['wide']}", "text": "abc" * 3000, "dec_strategy": "beam", "dec_beam": "8"},
        ),
        ("inside", {"model": f"path:{models['wide']}", "text": "abcdefghij" * 1600}),
    ]
