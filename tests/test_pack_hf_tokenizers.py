"""model/checkpoints/formats/hf_descriptions.py: a Hugging Face folder's tokenizer as a tokenizer.json gives the app's
piece ids (sentencepiece's for T5, flan-T5 and mBART; the tokenizers library's byte-level BPE for BART) and output
text, run by `tokenizers` and by the vendored tokenizers.js (under node), on generated text."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import unicodedata

import pytest
from tokenizers import Tokenizer

from model import load_checkpoint
from model.checkpoints.formats.hf_descriptions import pack_side
from pack.live import HERE
from tests.hf_families import WORDS, build_all

pytestmark = pytest.mark.filterwarnings("ignore")
ODD = ["Noir.", "«chat»", "?!", "Élève", "e\u0301tudiant", "42", "😀", "zzqx", "ÇA", "<s>", "</s>", "l'homme!", "x,y"]
# Accented words typed decomposed (NFD, as some keyboards and file names give them), with two or three marks on a
# letter in the canonical order: sentencepiece's charsmap composes them. Run by tokenizers.js only: the Rust
# `tokenizers` library's Precompiled step reads them otherwise (huggingface/tokenizers#2116, #2334); the app runs
# sentencepiece itself.
NFD = [unicodedata.normalize("NFD", w) for w in ["Tiếng", "Việt", "rất", "đẹp", "Nguyễn", "ặ", "ǘ", "Ṩ", "ḗ", "ổn"]]


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    rng = random.Random(0)
    out = []
    for name, fam in build_all(tmp_path_factory.mktemp("hf")).items():
        vocab = load_checkpoint(fam.folder)[1].source
        texts = [" ".join(rng.choice(WORDS + ODD) for _ in range(rng.randint(1, 8))) for _ in range(80)]
        ids = [vocab.piece_ids(t) for t in texts]
        nfd = [" ".join(rng.choice(WORDS + NFD) for _ in range(rng.randint(1, 6))) for _ in range(20)] + NFD
        out.append({"name": name, "side": pack_side(vocab), "texts": texts, "ids": ids,
                    "text": [vocab.detokenize(vocab.decode(i)) for i in ids],
                    "nfd": nfd, "nfd_ids": [vocab.piece_ids(t) for t in nfd]})  # fmt: skip
    return out


def model_ids(side: dict, pieces: list[int]) -> list[int]:
    unk = side["spm_unk"]
    return [side["unk_id"] if unk is not None and p == unk else p + side["offset"] for p in pieces]


def test_tokenizers_reads_the_description_as_the_app(cases):
    for case in cases:
        tok = Tokenizer.from_str(json.dumps(case["side"]["json"]))
        for text, want in zip(case["texts"], case["ids"]):
            assert model_ids(case["side"], tok.encode(text, add_special_tokens=False).ids) == want, (case["name"], text)
    assert any("<s>" in t for c in cases for t in c["texts"])  # control pieces are text, as sentencepiece reads them


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_tokenizers_js_reads_and_writes_as_the_app(cases, tmp_path):
    (tmp_path / "cases.json").write_text(json.dumps(cases, ensure_ascii=False), encoding="utf-8")
    module = (HERE / "vendor" / "tokenizers" / "tokenizers.min.mjs").as_uri()
    script = f"""
    import {{ Tokenizer }} from {json.dumps(module)};
    import {{ readFileSync }} from "node:fs";
    const cases = JSON.parse(readFileSync({json.dumps(str(tmp_path / "cases.json"))}, "utf8"));
    console.log(JSON.stringify(cases.map(c => {{
      const t = new Tokenizer(c.side.json, {{}}), added = new Set(Object.values(c.side.added));
      return {{
        ids: c.texts.map(x => t.encode(x, {{add_special_tokens: false}}).ids),
        nfd: c.nfd.map(x => t.encode(x, {{add_special_tokens: false}}).ids),
        text: c.ids.map(ids => t.decode(ids.filter(i => !added.has(i)).map(i => i - c.side.offset),
          {{skip_special_tokens: false, clean_up_tokenization_spaces: false}}).trim()),
      }};
    }})));
    """
    run = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    for case, got in zip(cases, json.loads(run.stdout)):
        for text, want, have in zip(case["texts"], case["ids"], got["ids"]):
            assert model_ids(case["side"], have) == want, (case["name"], text)
        for text, want, have in zip(case["nfd"], case["nfd_ids"], got["nfd"], strict=True):
            assert model_ids(case["side"], have) == want, (case["name"], [hex(ord(ch)) for ch in text])
        assert got["text"] == case["text"], case["name"]
