"""Tiny random-weight Hugging Face folders of the decoder-only and encoder-only families (GPT-2, Llama with and
without grouped-query attention, Qwen2 with its q/k/v biases, BERT with and without its masked-LM head), built here
with `transformers`, with tokenizers trained here (the `tokenizers` library's trainers, sentencepiece's for Llama's
tokenizer.model). Each builder writes the folder with save_pretrained plus the tokenizer files and returns a
`Family` (tests/hf_families.py): the folder, the transformers model read back from it with eager attention (the
reference), and the transformers tokenizer read from the same files."""

from __future__ import annotations

import json
from pathlib import Path

from harness.byte_level import byte_level
from tests.hf_families import Family, saved_reference, sentences, train_sentencepiece

TEXTS = ("the cat sat on a mat", "birds sang while the dog ran to the red house", "a")


def _byte_level(folder: Path, specials: list[str], bos: str | None = None):
    """A byte-level BPE tokenizer.json (GPT-2, Qwen2, Llama 3 style); bos: a token the post-processor puts first."""
    return byte_level(folder, specials, bos)


def _fast(folder: Path, **specials):
    import transformers

    return transformers.PreTrainedTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"), **specials)


def build_gpt2(root: Path, name: str = "gpt2", **fields) -> Family:
    """GPT-2; fields: config fields over gpt2's (Stanford CRFM's runs: scale_attn_by_inverse_layer_idx and
    reorder_and_upcast_attn)."""
    import transformers

    folder = root / ("gpt2-tiny" if name == "gpt2" else name)
    folder.mkdir()
    tok = _byte_level(folder, ["<|endoftext|>"])
    end = tok.token_to_id("<|endoftext|>")
    config = transformers.GPT2Config(  # gpt2 (124M): 12 layers of 768, 12 heads, 1024 positions
        vocab_size=tok.get_vocab_size(), n_positions=48, n_embd=32, n_layer=3, n_head=4, bos_token_id=end,
        eos_token_id=end, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, **fields,
    )  # fmt: skip
    hf = saved_reference(transformers.GPT2LMHeadModel, config, folder, 4)
    return Family(name, folder, hf, _fast(folder, eos_token="<|endoftext|>"), end, None)


def build_llama(root: Path, kv_heads: int, spm: bool = False, name: str = "llama") -> Family:
    """Llama with tokenizer.json (Llama 3 style, BOS from the post-processor) or tokenizer.model (sentencepiece)."""
    import transformers

    folder = root / name
    folder.mkdir()
    if spm:
        (folder / "tokenizer.model").write_bytes(train_sentencepiece(vocab_size=60, unk_id=0, bos_id=1, eos_id=2))
        (folder / "tokenizer_config.json").write_text(json.dumps({"add_bos_token": True, "add_eos_token": False}))
        vocab, bos, eos = 64, 1, 2
    else:
        tok = _byte_level(folder, ["<|begin_of_text|>", "<|end_of_text|>"], bos="<|begin_of_text|>")
        vocab, bos, eos = tok.get_vocab_size(), 0, 1
    config = transformers.LlamaConfig(  # Llama-2-7B: 32 heads, 32 kv heads; Llama-3-8B: 32 heads, 8 kv heads
        vocab_size=vocab, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=kv_heads, max_position_embeddings=64, rms_norm_eps=1e-5, bos_token_id=bos,
        eos_token_id=eos, rope_parameters={"rope_type": "default", "rope_theta": 500.0},
    )  # fmt: skip
    hf = saved_reference(transformers.LlamaForCausalLM, config, folder, 5 + kv_heads)
    if spm:
        import sentencepiece

        sp = sentencepiece.SentencePieceProcessor(model_file=str(folder / "tokenizer.model"))
        return Family(name, folder, hf, sp, bos, None)
    return Family(name, folder, hf, _fast(folder, bos_token="<|begin_of_text|>"), bos, None)


def build_qwen2(root: Path) -> Family:
    import transformers

    folder = root / "qwen2-tiny"
    folder.mkdir()
    tok = _byte_level(folder, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    end = tok.token_to_id("<|endoftext|>")
    config = transformers.Qwen2Config(  # Qwen2-0.5B: 14 heads, 2 kv heads, q/k/v biases, tied output layer
        vocab_size=tok.get_vocab_size(), hidden_size=48, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=6, num_key_value_heads=2, max_position_embeddings=64, rms_norm_eps=1e-6,
        bos_token_id=end, eos_token_id=end, tie_word_embeddings=True,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0},
    )  # fmt: skip
    hf = saved_reference(transformers.Qwen2ForCausalLM, config, folder, 7)
    return Family("qwen2", folder, hf, _fast(folder, eos_token="<|endoftext|>"), end, None)


def build_bert(root: Path, mlm: bool) -> Family:
    import transformers
    from tokenizers import BertWordPieceTokenizer

    folder = root / ("bert-mlm-tiny" if mlm else "bert-tiny")
    folder.mkdir()
    tok = BertWordPieceTokenizer(lowercase=True)
    tok.train_from_iterator(sentences(), vocab_size=200)
    from tokenizers import processors

    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")  # as bert-base-uncased's tokenizer.json
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)],
    )
    tok.save(str(folder / "tokenizer.json"))
    config = transformers.BertConfig(  # bert-base: 12 layers of 768, 12 heads, post-LN, 2 token types
        vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
        intermediate_size=64, max_position_embeddings=40, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
    )  # fmt: skip
    cls = transformers.BertForMaskedLM if mlm else transformers.BertModel
    hf = saved_reference(cls, config, folder, 8 + mlm)
    fast = transformers.BertTokenizerFast(tokenizer_file=str(folder / "tokenizer.json"))
    return Family("bert-mlm" if mlm else "bert", folder, hf, fast, tok.token_to_id("[CLS]"), None)


BUILDERS = {
    "gpt2": build_gpt2,
    # Stanford CRFM's GPT-2 runs: layer i's scores also divided by i + 1, computed in float32
    "gpt2-crfm": lambda root: build_gpt2(
        root, "gpt2-crfm", scale_attn_by_inverse_layer_idx=True, reorder_and_upcast_attn=True
    ),
    "llama": lambda root: build_llama(root, 4),
    "llama-gqa": lambda root: build_llama(root, 2, spm=True, name="llama-gqa"),
    "qwen2": build_qwen2,
    "bert": lambda root: build_bert(root, False),
    "bert-mlm": lambda root: build_bert(root, True),
}
