"""A stranger's checkpoint folders for `python -m benchmarks.bench_hostile --stranger`: a GPT-2 folder whose
config.json is 60 MB or 20 MB (the real config plus millions of `{}`), one with a 50 MB tokenizer.json (2.4 million
entries), one whose pre-tokenizer splits on `(a|aa)+$` (a Rust panic on 60 a's then b), one whose normalizer
rewrites U+A66E as 2,000 z's, a Llama config with `rope_scaling: {"type": "linear"}`; and the never-ending decoder
(issue 22's reverse demo with </s> suppressed) on the longest input, greedy and with a beam of 4."""

from __future__ import annotations

import json
import shutil
from pathlib import Path


def gpt2_folder(folder: Path) -> Path:
    """A tiny GPT-2 folder (3 layers of 32) with a byte-level tokenizer.json, as the tests build it."""
    import torch
    import transformers

    from harness.byte_level import byte_level

    folder.mkdir()
    tok = byte_level(folder, ["<|endoftext|>"])
    end = tok.token_to_id("<|endoftext|>")
    torch.manual_seed(4)
    transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=64, n_embd=32, n_layer=3, n_head=4,
                                bos_token_id=end, eos_token_id=end)
    ).save_pretrained(str(folder))  # fmt: skip
    return folder


def padded_config(folder: Path, megabytes: int) -> None:
    data = json.loads((folder / "config.json").read_text())
    head = json.dumps(data)[:-1].encode() + b', "padding": ['
    with open(folder / "config.json", "wb") as fh:
        fh.write(head)
        chunk = b"{}, " * (2**20 // 4)
        for _ in range(megabytes):
            fh.write(chunk)
        fh.write(b"{}]}")


def edit_tokenizer(folder: Path, **parts) -> None:
    data = json.loads((folder / "tokenizer.json").read_text())
    data.update(parts)
    (folder / "tokenizer.json").write_text(json.dumps(data))


def stranger_models(root: Path) -> dict[str, Path]:
    from benchmarks.hostile_inputs import hostile_models

    base = gpt2_folder(root / "gpt2")
    out = {}
    for name in ("config60", "config20", "tokenizer50", "panic", "a66e"):
        out[name] = Path(shutil.copytree(base, root / name))
    padded_config(out["config60"], 60)
    padded_config(out["config20"], 20)
    with open(out["tokenizer50"] / "tokenizer.json", "wb") as fh:
        fh.write(b'{"version": "1.0", "added_tokens": [], "model": {"type": "WordLevel", "unk_token": "t0", "vocab": {')
        for start in range(0, 2_400_000, 200_000):
            fh.write(b"".join(b'"t%07d": %d, ' % (i, i) for i in range(start, start + 200_000)))
        fh.write(b'"end": 0}}}')
    split = {"type": "Split", "pattern": {"Regex": "(a|aa)+$"}, "behavior": "Isolated", "invert": False}
    edit_tokenizer(out["panic"], pre_tokenizer=split)
    rule = {"type": "Replace", "pattern": {"String": "\ua66e"}, "content": "z" * 2000}
    edit_tokenizer(out["a66e"], normalizer=rule)
    import transformers

    llama = root / "llama-linear"
    llama.mkdir()
    transformers.LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
                             num_attention_heads=4, max_position_embeddings=64).to_json_file(llama / "config.json")  # fmt: skip
    data = json.loads((llama / "config.json").read_text())
    data.pop("rope_parameters", None)
    data["rope_scaling"] = {"type": "linear", "factor": 2.0}
    (llama / "config.json").write_text(json.dumps(data))
    out["rope"] = llama
    out.update(hostile_models(root))
    return out


def stranger_links(models: dict[str, Path]) -> dict[str, list]:
    """The attacks, each alone beside the room (name -> the links it opens)."""
    path = {k: f"path:{v}" for k, v in models.items()}
    return {
        "GPT-2 folder, 60 MB config.json": [("", {"model": path["config60"], "text": "hello"})],
        "GPT-2 folder, 20 MB config.json": [("", {"model": path["config20"], "text": "hello"})],
        "50 MB tokenizer.json (2.4 M entries)": [("", {"model": path["tokenizer50"], "text": "hello"})],
        "pre-tokenizer (a|aa)+$, 60 a's then b": [("", {"model": path["panic"], "text": "a" * 60 + "b"})],
        "normalizer on U+A66E, 20,000 of them": [("", {"model": path["a66e"], "text": "\ua66e" * 20000})],
        "never-ending decoder, longest input, greedy": [
            ("decoding", {"model": path["noeos"], "text": "stressed" * 2500})
        ],
        "never-ending decoder, longest input, beam 4": [
            ("decoding", {"model": path["noeos"], "text": "stressed" * 2500, "dec_strategy": "beam", "dec_beam": "4"})
        ],
        "Llama config, rope_scaling linear": [("", {"model": path["rope"], "text": "hello"})],
    }
