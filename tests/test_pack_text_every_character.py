"""The lecture pack's input check and tokenizers (pack/static/pack_text.js, the page's own code, run under node with the vendored
tokenizers.js) read every character as the app does (model/text/inputs.check_text; Vocab.split with `tokenizers`; a
Hugging Face folder's own tokenizer): each of the 1,112,064 code points, alone between two letters for the cleaning,
and each that the cleaning keeps in a word ending in a capital sigma for the symbols and ids, with this project's word
(lower-case) and character vocabularies and the tokenizers of BERT (uncased WordPiece), GPT-2 (byte-level BPE),
Qwen2 (NFC, its split pattern) and T5 (sentencepiece unigram) folders.

What it found: the page cleaned text by its browser's Unicode (an emoji of Unicode 15 kept there, dropped by the app's
Python as unassigned; U+FEFF a space there, dropped here); tokenizers.js lower-cases a word-final Σ to ς where
`tokenizers` writes σ; and it ran BERT's normalizer and pre-tokenizer by its own Unicode tables (accents and
punctuation of newer Unicode read otherwise, no Chinese character past U+FFFF set apart: 53,635 characters)."""

from __future__ import annotations

import functools
import json
import shutil
import subprocess

import pytest

from model.text.tokenizer import ListVocab, Vocab, clean_classes, clean_text
from pack.export import _side
from pack.live import HERE

pytestmark = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
CODE_POINTS = [cp for cp in range(0x110000) if not 0xD800 <= cp <= 0xDFFF]


def texts(words, n: int = 32) -> list[str]:
    """The words n to a text (one call per text on each side: what a character does is the same inside a text)."""
    words = list(words)
    return [" ".join(words[i : i + n]) for i in range(0, len(words), n)]


@functools.cache
def kept_characters() -> tuple[str, ...]:
    """The characters the app's cleaning keeps between two letters (most of those assigned in this Python's Unicode)."""
    return tuple(chr(cp) for cp in CODE_POINTS if clean_text(f"a{chr(cp)}b") == f"a{chr(cp)}b")


# pack_text.js as the page runs it; its one use of the page (the tokenizers.js module, read from a script element and
# imported from a blob: URL) given the vendored module as a data: URL instead
RUN = """
import {{ readFileSync, writeFileSync }} from "node:fs";
const module = readFileSync({module}, "utf8");
const document = {{getElementById: () => ({{textContent: module}})}};
function Blob(parts) {{ this.text = parts.join(""); }}
const URL = {{createObjectURL: b => "data:text/javascript;base64," + Buffer.from(b.text).toString("base64")}};
const PackText = new Function("document", "Blob", "URL", readFileSync({script}, "utf8") + "; return PackText;")(
  document, Blob, URL);
const job = JSON.parse(readFileSync({job}, "utf8"));
const text = await PackText.open(job.spec);
writeFileSync({out}, JSON.stringify({{
  cleaned: job.cleaned.map(PackText.cleanText),
  source: job.words.map(text.source.symbols),
  target: job.words.map(text.target.symbols),
  ids: job.words.map(text.source.contentIds),
}}));
"""


def run_page(tmp_path, spec: dict, cleaned: list[str], words: list[str]) -> dict:
    job, out = tmp_path / "job.json", tmp_path / "out.json"
    job.write_text(json.dumps({"spec": spec, "cleaned": cleaned, "words": words}, ensure_ascii=False), "utf-8")
    paths = {
        "module": HERE / "vendor" / "tokenizers" / "tokenizers.min.mjs",
        "script": HERE / "pack_text.js",
        "job": job,
        "out": out,
    }
    script = RUN.format(**{k: json.dumps(str(v)) for k, v in paths.items()})
    run = subprocess.run(["node", "--input-type=module", "-e", script], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(out.read_text("utf-8"))


def test_the_page_cleans_and_splits_every_character_as_the_app(tmp_path):
    words = ["οδος", "οδοσ", "chat", "noir", "été"]  # both lower cases of a Greek word, so that both would be known
    source, target = Vocab.build(words, "word", lowercase=True), Vocab.build("abcΣσς", "char")
    spec = {"source": _side(source), "target": _side(target), "clean": clean_classes()}
    cleaned = texts((f"a{chr(cp)}b" for cp in CODE_POINTS), 64)
    kept = kept_characters()
    typed = texts(f"x{ch}Σ" for ch in kept) + ["ΟΔΟΣ ΟΔΟΣ. Σ", "ΟΔΟΣ", "σΣ ΣΣ"]
    page = run_page(tmp_path, spec, cleaned, typed)
    differ = [(t, got) for t, got in zip(cleaned, page["cleaned"], strict=True) if got != clean_text(t)]
    assert differ == []
    for side, vocab in (("source", source), ("target", target)):
        differ = [(t, got) for t, got in zip(typed, page[side], strict=True) if got != vocab.split(t)]
        assert differ == [], side
    assert source.split("ΟΔΟΣ") == ["οδοσ"] and len(kept) > 100_000  # the app's reading; most characters kept


def test_the_page_reads_someone_elses_token_list_as_the_app(tmp_path):
    """A ListVocab (lower-casing, <s> in front, its specials where its list has them): symbols and ids."""
    tokens = ["<s>", "</s>", "<blank>", "<unk>", "οδοσ", "οδος", "chat", "noir.", "été", "x"]
    words = ListVocab(tokens, 2, 0, 1, 3, lowercase=True, prepend_bos=True)
    spec = {"source": _side(words), "target": _side(words), "clean": clean_classes()}
    typed = texts(f"x{ch}Σ x{ch} {ch}" for ch in kept_characters()) + ["ΟΔΟΣ Chat NOIR. Été", "noir . x"]
    page = run_page(tmp_path, spec, [], typed)
    assert [(t, got) for t, got in zip(typed, page["source"], strict=True) if got != words.split(t)] == []
    assert [(t, got) for t, got in zip(typed, page["ids"], strict=True) if got != words.encode(t)[1:]] == []
    assert page["ids"][-2:] == [[4, 6, 7, 8], [3, 3, 9]]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    from tests.hf_families import build_t5
    from tests.hf_one_stack import BUILDERS

    root = tmp_path_factory.mktemp("every-character")
    built = {name: BUILDERS[name](root).folder for name in ("bert", "gpt2", "qwen2")}
    return {**built, "t5": build_t5(root, False).folder}


@pytest.mark.parametrize("name", ["bert", "gpt2", "qwen2", "t5"])
def test_a_folders_tokenizer_gives_the_apps_ids_for_every_character(name, folders, tmp_path):
    from model import load_checkpoint

    vocab = load_checkpoint(folders[name])[1].source
    side = _side(vocab)
    typed = texts(f"x{ch}Σ" for ch in kept_characters())
    page = run_page(tmp_path, {"source": side, "target": side, "clean": clean_classes()}, [], typed)
    differ = [(t, got) for t, got in zip(typed, page["ids"], strict=True) if got != vocab.piece_ids(t)]
    assert differ == [] and len(typed) > 100_000 / 32
