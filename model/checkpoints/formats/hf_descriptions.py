"""Hugging Face folder tokenizers (hf_tokenizers.py) as tokenizer.json descriptions, for the lecture pack.

    description(vocab) -> dict     # a SentencePieceVocab's or ByteLevelVocab's pieces as a tokenizer.json
    pack_side(vocab) -> dict       # what the pack's page needs of one side: the description, ids and specials

Byte-level BPE (BART) and the tokenizer.json of GPT-2, Llama, Qwen2 and BERT folders: the app already runs the `tokenizers` library with vocab.json + merges.txt; its own
tokenizer.json is the description. Sentencepiece (T5, mBART): the model's settings written as a tokenizer.json, as
transformers' SpmConverter writes them (the normalizer spec: precompiled charsmap, extra whitespace removal, the
dummy prefix, whitespace escaping; Unigram or BPE pieces with their scores; the matching decoder). The app keeps
running sentencepiece itself; tests/test_pack_hf_tokenizers.py checks that the description gives its piece ids on
generated text, in `tokenizers` and in tokenizers.js.
"""

from __future__ import annotations

import functools
import json
import re

from ...text.tokenizer_json import sigma_first


def _spm_tokenizer(spm):
    """A `tokenizers.Tokenizer` of a sentencepiece processor's model (see the module docstring)."""
    from sentencepiece import sentencepiece_model_pb2 as pb
    from tokenizers import Regex, Tokenizer, decoders, normalizers, pre_tokenizers
    from tokenizers.models import BPE, Unigram

    proto = pb.ModelProto.FromString(spm.serialized_model_proto())
    spec, trainer = proto.normalizer_spec, proto.trainer_spec
    # sentencepiece never reads a control piece (<s>, </s>) or <unk> from text; here they are spelled with a space,
    # which the normalizer has turned into "▁" before the model looks: no text can spell them (their ids stay)
    hidden = " " if spec.escape_whitespaces else "\x00"
    pieces = [(p.piece if p.type not in (2, 3) else hidden + p.piece, p.score) for p in proto.pieces]
    user_defined = [p.piece for p in proto.pieces if p.type == 4]
    if trainer.model_type == 2:  # BPE: merges ranked by the pieces' scores, as SpmConverter
        normal = {p.piece: (p.score, i) for i, p in enumerate(proto.pieces) if p.type == 1}
        ranked = sorted(
            (-rank[0], rank[1], tok[:k], tok[k:])
            for tok, rank in normal.items()
            for k in range(1, len(tok))
            if tok[:k] in normal and tok[k:] in normal
        )
        vocab = {p: i for i, (p, _) in enumerate(pieces)}
        model = BPE(
            vocab=vocab,
            merges=[(a, b) for _, _, a, b in ranked],
            unk_token=trainer.unk_piece,
            fuse_unk=True,
            byte_fallback=trainer.byte_fallback,
            ignore_merges=bool(user_defined),
        )
    else:
        model = Unigram(pieces, trainer.unk_id, trainer.byte_fallback)
    tok = Tokenizer(model)
    steps = [normalizers.Precompiled(spec.precompiled_charsmap)] if spec.precompiled_charsmap else []
    if spec.remove_extra_whitespaces:
        steps += [normalizers.Replace(Regex(r"\A +| +\z"), ""), normalizers.Replace(Regex(" {2,}"), " ")]
    if spec.escape_whitespaces:
        steps.append(normalizers.Replace(" ", "▁"))
    if spec.add_dummy_prefix:
        steps.append(normalizers.Replace(Regex(r"\A▁"), "▁▁"))
    tok.normalizer = normalizers.Sequence(steps)
    pre = (
        [pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always", split=False)]
        if spec.add_dummy_prefix
        else []
    )
    if user_defined:
        pattern = "|".join(re.escape(p) for p in sorted(user_defined, key=len, reverse=True))
        pre.append(pre_tokenizers.Split(Regex(pattern), behavior="isolated"))
    if pre:
        tok.pre_tokenizer = pre_tokenizers.Sequence(pre)
    steps = [decoders.Replace("▁", " ")] + ([decoders.ByteFallback()] if trainer.byte_fallback else [])
    if spec.add_dummy_prefix:
        steps += [decoders.Fuse(), decoders.Strip(content=" ", left=1)]
    elif trainer.byte_fallback:
        steps.append(decoders.Fuse())
    tok.decoder = decoders.Sequence(steps)
    return tok


def _ranges_class(ranges: list[tuple[int, int]]) -> str:
    """A regex character class of code point ranges, the characters written out (Oniguruma's \\x{...} is not
    JavaScript's; both read a literal character), those a class gives a meaning escaped."""

    def char(cp: int) -> str:
        ch = chr(cp)
        return "\\" + ch if ch in "\\]^-[&" else ch

    return "[" + "".join(char(a) if a == b else f"{char(a)}-{char(b)}" for a, b in ranges) + "]"


@functools.cache
def _bert_classes() -> dict[str, list[tuple[int, int]]]:
    """What `tokenizers`' BertNormalizer and BertPreTokenizer do to each character the app's input check keeps
    (model/text/tokenizer.clean_text: no control, format or unassigned character, no whitespace but the space):
    "dropped" by its text cleaning, "chinese" (set apart as a word), "mark" (an accent its accent stripping drops
    after NFD), "punctuation" (a word of its own). Read from the library itself, character by character."""
    from tokenizers import normalizers, pre_tokenizers

    from ...text.tokenizer import clean_text, code_point_ranges

    def bert(**on: bool):
        flags = {"clean_text": False, "handle_chinese_chars": False, "strip_accents": False, "lowercase": False}
        return normalizers.BertNormalizer(**{**flags, **on})

    clean, chinese, strip = bert(clean_text=True), bert(handle_chinese_chars=True), bert(strip_accents=True)
    pre = pre_tokenizers.BertPreTokenizer()
    tests = {
        "dropped": lambda ch: clean.normalize_str(ch) == "",
        "chinese": lambda ch: chinese.normalize_str(ch) == f" {ch} ",
        "mark": lambda ch: strip.normalize_str(ch) == "",
        "punctuation": lambda ch: [w for w, _ in pre.pre_tokenize_str(f"a{ch}b")] == ["a", ch, "b"],
    }
    kept = {cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF and clean_text(chr(cp)) == chr(cp)}
    out = {}
    for name, test in tests.items():
        flat = code_point_ranges(lambda ch, test=test: ord(ch) in kept and test(ch))
        out[name] = list(zip(flat[::2], flat[1::2]))
    return out


def bert_by_classes(data: dict) -> dict:
    """A tokenizer.json with BERT's normalizer and pre-tokenizer, written as plain steps over explicit character
    classes (_bert_classes): tokenizers.js ran BertNormalizer and BertPreTokenizer by its own Unicode tables (newer
    accents and punctuation read otherwise) and set apart no Chinese character outside the 16-bit range.

    The normalizer: the characters its cleaning drops removed, then (strip_accents, or lowercase when unset) NFD and
    the accents removed, then Lowercase; the pre-tokenizer: WhitespaceSplit, then each Chinese character and each
    punctuation mark a word of its own (where BertNormalizer puts spaces around Chinese characters). Any other
    tokenizer.json is returned as it is."""
    norm, pre = data.get("normalizer"), data.get("pre_tokenizer")
    if not (isinstance(norm, dict) and norm.get("type") == "BertNormalizer" and pre == {"type": "BertPreTokenizer"}):
        return data
    classes = _bert_classes()

    def remove(name: str) -> list[dict]:
        pattern = {"Regex": _ranges_class(classes[name])}
        return [{"type": "Replace", "pattern": pattern, "content": ""}] if classes[name] else []

    lowercase = bool(norm.get("lowercase"))
    strip = norm.get("strip_accents")
    steps = remove("dropped") if norm.get("clean_text", True) else []
    if lowercase if strip is None else strip:
        steps += [{"type": "NFD"}, *remove("mark")]
    if lowercase:
        steps.append({"type": "Lowercase"})
    apart = classes["punctuation"] + (classes["chinese"] if norm.get("handle_chinese_chars", True) else [])
    split = {
        "type": "Split",
        "pattern": {"Regex": _ranges_class(sorted(apart))},
        "behavior": "Isolated",
        "invert": False,
    }
    return {
        **data,
        "normalizer": {"type": "Sequence", "normalizers": steps},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, split]},
    }


def description(vocab) -> dict:
    """The tokenizer.json (a dict) of a Hugging Face folder's vocabulary: its pieces, before the folder's ids."""
    bpe = getattr(vocab, "bpe", getattr(vocab, "tok", None))  # a tokenizers.Tokenizer: its own description
    if bpe is not None:
        # BERT's steps by explicit classes; a lower-casing one reads Σ as `tokenizers` does (sigma_first)
        return sigma_first(bert_by_classes(json.loads(bpe.to_str())))
    return json.loads(_spm_tokenizer(vocab.spm).to_str())


def pack_side(vocab) -> dict:
    """One side for the pack's page: the description, how its piece ids become the model's (id + offset, the
    sentencepiece <unk> -> unk_id; Marian: the pieces' ids in vocab.json, a leading ">>xx<<" one token), the token of
    every id as the app shows it, the specials and what goes around."""
    from .marian_tokenizer import MarianVocab

    spm = getattr(vocab, "spm", None)
    if isinstance(vocab, MarianVocab):
        specials = {vocab.token(i): i for i in (vocab.pad_id, vocab.bos_id, vocab.eos_id)}
        return {
            **vocab.to_dict(),
            "level": "subword",
            "json": description(vocab),
            "marian": {"ids": vocab.to_dict()["tokens"], "specials": sorted(specials)},
            "offset": 0,
            "spm_unk": None,
            "added": {},
            "prefix": [],
            "after_eos": [],
            "tokens": [vocab.token(i) for i in range(len(vocab))],
        }
    return {
        **vocab.to_dict(),
        "level": "subword",
        "json": description(vocab),
        "offset": getattr(vocab, "offset", 0),
        "spm_unk": spm.unk_id() if spm is not None else None,
        "tokens": [vocab.token(i) for i in range(len(vocab))],
    }
