"""Issue 30, part 1: a visitor's text becomes tokens with work bounded by what the model reads, whatever the
tokenizer file does; tokenizer files are counted against a memory budget before they are parsed.

The hostile tokenizer is built here: a sentencepiece model trained with a normalization rule that rewrites `a`
as 2,000 `z`s (sentencepiece's trainer takes custom rules as a TSV), as the 18 KB upload of the issue did."""

from __future__ import annotations

import io
import json
import random

import pytest

from model.checkpoints.checkpoint import load_tokenizer
from model.checkpoints.errors import CheckpointError
from model.checkpoints.formats.hf_tokenizers import ByteLevelVocab, SentencePieceVocab, bart_vocabs, t5_vocab
from model.checkpoints.formats.vocab_files import read_vocabulary
from model.checkpoints.tokenizer_budget import ENV as TOKENIZER_ENV
from model.checkpoints.tokenizer_budget import FACTORS, TOO_LARGE
from model.text.bounded import CHUNK_CHARS, EXPANSION_REFUSED, MAX_EXPANSION, read_bounded
from model.text.inputs import MAX_LEN_CUT, MAX_LEN_CUT_LONG, check_text, count_limit, prepare_source
from model.text.tokenizer import Tokenizer, Vocab

WORDS = "the cat sat on a mat and the dog ran to the red house while birds sang in old trees".split()


def _text(n_words: int, seed: int = 0) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def _sentencepiece(tmp_path, rule: str | None = None) -> bytes:
    import sentencepiece as spm

    extra = {}
    if rule is not None:
        (tmp_path / "rule.tsv").write_text(rule)
        extra["normalization_rule_tsv"] = str(tmp_path / "rule.tsv")
    buf = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([_text(8, seed) for seed in range(200)]),
        model_writer=buf,
        vocab_size=40,
        model_type="unigram",
        character_coverage=1.0,
        hard_vocab_limit=False,
        minloglevel=2,
        pad_id=0,
        eos_id=1,
        unk_id=2,
        bos_id=-1,
        **extra,
    )
    return buf.getvalue()


A_TO_2000_Z = "61\t" + " ".join(["7A"] * 2000) + "\n"  # source code points, tab, target code points (hex)


def _t5_vocab(tmp_path, spiece: bytes):
    import sentencepiece as spm

    (tmp_path / "spiece.model").write_bytes(spiece)
    n = spm.SentencePieceProcessor(model_proto=spiece).get_piece_size()
    return t5_vocab(tmp_path, n + 2, pad=0, eos=1, start=0, extra_ids=2)


class Counting:
    """A vocabulary that counts every token its encode() produced: the work of tokenizing."""

    def __init__(self, vocab):
        self.vocab, self.produced, self.calls = vocab, 0, 0

    def encode(self, text):
        ids = self.vocab.encode(text)
        self.produced += len(ids)
        self.calls += 1
        return ids

    def __getattr__(self, name):
        return getattr(self.vocab, name)


@pytest.fixture(scope="module")
def hostile_spm(tmp_path_factory):
    return _sentencepiece(tmp_path_factory.mktemp("rule"), A_TO_2000_Z)


def _unchecked(spiece: bytes) -> SentencePieceVocab:
    """The hostile vocabulary as if its load check had missed it (a rule on a character the probe lacks)."""
    import sentencepiece as spm

    proc = spm.SentencePieceProcessor(model_proto=spiece)
    n = proc.get_piece_size()
    return SentencePieceVocab(proc, 0, "t5", n, {"pad": 0, "bos": 0, "eos": 1, "unk": 2}, {})


def test_a_tokenizer_that_multiplies_text_is_refused_when_loaded(tmp_path, hostile_spm):
    with pytest.raises(CheckpointError) as err:
        _t5_vocab(tmp_path, hostile_spm)
    message = err.value.args[0]
    assert message.template == EXPANSION_REFUSED
    assert message.values["char"] == "a" and message.values["n"] > 100 and message.values["max"] == MAX_EXPANSION


def test_an_ordinary_sentencepiece_model_is_accepted(tmp_path):
    vocab = _t5_vocab(tmp_path, _sentencepiece(tmp_path))
    assert len(vocab.encode("the cat")) <= 7


def test_the_hostile_tokenizers_text_is_read_only_as_far_as_the_model_reads(hostile_spm):
    """20,000 characters of `a b a b ...` are 1.26 million tokens with this rule; the input check reads a bounded
    prefix, says the text is longer than it counted, and the model's input is its first max_len tokens."""
    vocab = Counting(_unchecked(hostile_spm))
    per_a = len(vocab.vocab.encode("a"))
    text = ("a b " * 5000)[:20000]
    whole = 10000 * per_a  # the tokens of the whole text, counted from one `a`
    assert per_a > 100
    room = 127
    check = check_text(text, vocab, room)
    cuts = [w for w in check.warnings if getattr(w, "template", None) in (MAX_LEN_CUT, MAX_LEN_CUT_LONG)]
    assert [w.template for w in cuts] == [MAX_LEN_CUT_LONG] and not check.complete
    assert cuts[0].values["n"] > count_limit(room) and cuts[0].values["room"] == room
    assert text.startswith(check.text) and len(check.text) <= CHUNK_CHARS + count_limit(room)
    bound = 3 * (CHUNK_CHARS * per_a + count_limit(room))  # a piece's worth beyond the limit, read twice, and a bit
    assert vocab.produced <= bound < whole / 10

    class Model:  # prepare_source reads the config's max_len only
        class config:  # noqa: N801
            max_len = 128

    vocab.produced = 0
    src = prepare_source(Model, Tokenizer(vocab, vocab), text)  # a library caller that skipped the check
    assert len(src.ids) == 128 and src.truncated > 0 and vocab.produced <= bound


def _bpe_vocab():
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator([_text(8, s) for s in range(200)], vocab_size=300, min_frequency=1,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>"], show_progress=False)  # fmt: skip
    ids = bpe.get_vocab()
    specials = {"pad": ids["<pad>"], "bos": ids["<s>"], "eos": ids["</s>"], "unk": ids["<unk>"]}
    return ByteLevelVocab(bpe, ids, "bart", len(ids), specials, {}, prefix=[ids["<s>"]])


@pytest.mark.parametrize("kind", ["char", "word", "sentencepiece", "bpe"])
def test_reading_in_pieces_gives_the_tokenizers_own_ids(kind, tmp_path):
    """The ids read_bounded returns are the library's own encoding of the text (complete) or begin with the first
    `limit` ids of the whole text's encoding (cut): reading in pieces changes no token the model reads."""
    text = _text(900, seed=3)  # about 3,600 characters, more than one piece
    if kind in ("char", "word"):
        vocab = Vocab.build(list(text) if kind == "char" else text.split(), level=kind)
    elif kind == "sentencepiece":
        vocab = _t5_vocab(tmp_path, _sentencepiece(tmp_path))
    else:
        vocab = _bpe_vocab()
    whole = vocab.encode(text)  # the reference: the tokenizer on the whole text
    for limit in (5, 60, 700):
        read = read_bounded(vocab, text, limit)
        assert not read.complete and text.startswith(read.text) and len(read.text) < len(text)
        assert read.ids[: limit + 1] == whole[: limit + 1]
    read = read_bounded(vocab, text, len(whole) + 10)
    assert read.complete and read.text == text and read.ids == whole


def test_a_short_text_is_counted_exactly():
    vocab = Vocab.build(list("abcdefgh"), level="char")
    check = check_text("abcdefgh" * 3, vocab, 10)
    cut = [w for w in check.warnings if getattr(w, "template", None) == MAX_LEN_CUT]
    assert check.complete and cut and cut[0].values["n"] == 24 and cut[0].values["dropped"] == 14


# -- tokenizer files are counted before they are parsed ------------------------------------------------------------


def test_a_huge_vocab_json_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    """A BART folder's vocab.json of 12 MB: about 300 MB to read (json, then the tokenizers library), above the
    default budget of 256 MB. The file is not even JSON: it is refused by its size, before any parser sees it."""
    monkeypatch.delenv(TOKENIZER_ENV, raising=False)
    (tmp_path / "vocab.json").write_bytes(b"x" * (12 * 2**20))
    (tmp_path / "merges.txt").write_text("#version: 0.2\n")
    with pytest.raises(CheckpointError) as err:
        bart_vocabs(tmp_path, 50265, start=2, forced=0)
    message = err.value.args[0]
    assert message.template == TOO_LARGE
    need = 12 * 2**20 * (FACTORS["json"] + FACTORS["bpe"]) + len("#version: 0.2\n") * FACTORS["bpe"]
    assert message.values["need"] == f"{need / 2**20:.1f} MB" and message.values["budget"] == "256.0 MB"


def test_a_vocabulary_file_and_a_tokenizer_json_are_counted_against_the_stated_budget(tmp_path, monkeypatch):
    tokens = ["<pad>", "<s>", "</s>", "<unk>"] + [f"w{i}" for i in range(30_000)]
    (tmp_path / "vocab.json").write_text(json.dumps(tokens))  # about 270 KB: 2.7 MB to read
    Tokenizer(Vocab(tokens), Vocab(tokens)).save(tmp_path / "tokenizer.json")
    monkeypatch.setenv(TOKENIZER_ENV, "64")
    assert len(read_vocabulary(tmp_path / "vocab.json").source) == len(tokens)
    assert len(load_tokenizer(tmp_path).source) == len(tokens)
    monkeypatch.setenv(TOKENIZER_ENV, "1")  # 1 MB: both refused, before parsing
    for read in (lambda: read_vocabulary(tmp_path / "vocab.json"), lambda: load_tokenizer(tmp_path)):
        with pytest.raises(CheckpointError) as err:
            read()
        assert err.value.args[0].template == TOO_LARGE and err.value.args[0].values["budget"] == "1.0 MB"
