import pytest

from model import Tokenizer, Vocab
from model.checkpoints.checkpoint import load_tokenizer
from model.text.tokenizer import clean_text


def test_char_and_word_levels():
    chars = Vocab.build("abc", level="char")
    assert chars.tokens[:4] == ["<pad>", "<s>", "</s>", "<unk>"]
    assert chars.encode("cab") == [6, 4, 5]
    words = Vocab.build(["the", "cat"], level="word")
    assert words.encode("the  cat\tthe") == [4, 5, 4]
    assert words.detokenize(words.decode([4, 5, 2])) == "the cat"
    assert chars.detokenize(["a", "b", "</s>"]) == "ab"


def test_unknown_symbols_become_unk_never_an_exception():
    v = Vocab.build(["the", "cat"], level="word")
    assert v.encode("the dog 🐶 \x00") == [4, 3, 3, 3]
    assert v.decode([99, -1]) == ["<unk>", "<unk>"]
    assert v.encode("") == []


def test_lowercase_option():
    v = Vocab.build(["the"], level="word", lowercase=True)
    assert v.encode("The THE") == [4, 4]


def test_json_round_trip_shared_and_separate(tmp_path):
    src, tgt = Vocab.build("ab", level="char"), Vocab.build(["x", "y"], level="word", lowercase=True)
    for tok in (Tokenizer(src, tgt), Tokenizer(src, src)):
        tok.save(tmp_path / "tokenizer.json")
        back = load_tokenizer(tmp_path)
        assert back.to_dict() == tok.to_dict() and back.shared == tok.shared
        assert back.target.encode("X y") == tok.target.encode("X y")


def test_invalid_vocabularies_are_named():
    with pytest.raises(ValueError, match="must start with"):
        Vocab(["a", "b"])
    with pytest.raises(ValueError, match="duplicate tokens"):
        Vocab(["<pad>", "<s>", "</s>", "<unk>", "a", "a"])
    with pytest.raises(ValueError, match="lacks target"):
        Tokenizer.from_dict({"source": {"tokens": ["<pad>", "<s>", "</s>", "<unk>"]}})


def test_clean_text_drops_control_characters():
    assert clean_text("a\x00b\u200bc\td\n\ne  ") == "abc d e"


def test_accents_read_the_same_composed_or_decomposed_and_capitals_where_the_vocabulary_lowercases():
    words = Vocab.build(["je", "suis", "étudiant", "à"], level="word", lowercase=True)
    composed = words.encode("je suis étudiant")
    assert words.unk_id not in composed
    assert words.encode("Je suis e\u0301tudiant") == composed  # "e" + combining acute accent, a capital J
    assert words.encode("Je Suis ÉTUDIANT") == composed
    chars = Vocab.build(list("éeà"), level="char")
    assert chars.encode("e\u0301a\u0300") == chars.encode("éà") == [4, 6]
    assert chars.encode("E") == [chars.unk_id]  # no lowercasing unless the vocabulary asks for it
