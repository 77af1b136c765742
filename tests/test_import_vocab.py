"""Vocabulary files for checkpoints without a tokenizer, the token-list and id-only vocabularies."""

import json

import pytest
import torch

from harness.reference.annotated import ann_make_model
from model import CheckpointError, Tokenizer, load_checkpoint, save_checkpoint
from model.checkpoints.formats import read_vocabulary
from model.text.tokenizer import IdVocab, ListVocab, find_specials, vocab_from_dict
from tests.i18n_helpers import matching
from tests.import_helpers import assert_close, id_batch, our_run, save_torchtext_like_vocab

SPECIALS = ["<s>", "</s>", "<blank>", "<unk>"]


def test_json_list_is_one_vocabulary_for_both_sides(tmp_path):
    (tmp_path / "v.json").write_text(json.dumps(["<unk>", "<pad>", "hello", "world"]))
    lists = read_vocabulary(tmp_path / "v.json")
    assert lists.source == lists.target == ["<unk>", "<pad>", "hello", "world"]


@pytest.mark.parametrize("keys", [("source", "target"), ("src", "tgt")])
def test_json_with_two_sides(tmp_path, keys):
    (tmp_path / "v.json").write_text(json.dumps({keys[0]: ["<unk>", "a"], keys[1]: ["<unk>", "b", "c"]}))
    lists = read_vocabulary(tmp_path / "v.json")
    assert (lists.source, lists.target) == (["<unk>", "a"], ["<unk>", "b", "c"])


def test_json_token_to_id_map(tmp_path):
    (tmp_path / "vocab.json").write_text(json.dumps({"b": 2, "<unk>": 0, "a": 1}))
    assert read_vocabulary(tmp_path / "vocab.json").source == ["<unk>", "a", "b"]
    (tmp_path / "vocab.json").write_text(json.dumps({"b": 3, "<unk>": 0, "a": 1}))
    with pytest.raises(
        CheckpointError, match=matching("{origin}: a token -> id map must use the ids 0..{last} exactly once", last=2)
    ):
        read_vocabulary(tmp_path / "vocab.json")


def test_text_file_one_token_per_line(tmp_path):
    (tmp_path / "v.txt").write_bytes("<unk>\r\n<pad>\r\nstraße\r\n[x]\r\n".encode())
    assert read_vocabulary(tmp_path / "v.txt").source == ["<unk>", "<pad>", "straße", "[x]"]
    (tmp_path / "bert.txt").write_text("[PAD]\n[UNK]\nhello\n")  # starts like JSON, is not
    assert read_vocabulary(tmp_path / "bert.txt").source == ["[PAD]", "[UNK]", "hello"]


@pytest.mark.parametrize(
    "content, message",
    [
        ("<unk>\n\nword\n", "line 2 is empty"),
        ("<unk>\nword\nword\n", r"1 token occurs more than once \(the first repeat is entry 2\)"),
        ("", "the vocabulary is empty"),
    ],
)
def test_bad_text_files_are_named(tmp_path, content, message):
    (tmp_path / "v.txt").write_text(content)
    with pytest.raises(CheckpointError, match=message):
        read_vocabulary(tmp_path / "v.txt")


def test_bad_json_is_named(tmp_path):
    (tmp_path / "v.json").write_text("[1, 2")
    with pytest.raises(
        CheckpointError,
        match=matching("{origin} is not valid JSON (line {line}, column {column}: {problem})", origin="v.json"),
    ):
        read_vocabulary(tmp_path / "v.json")
    (tmp_path / "v.json").write_text(json.dumps({"source": ["a"]}))
    with pytest.raises(CheckpointError, match="needs both 'source' and 'target'"):
        read_vocabulary(tmp_path / "v.json")
    with pytest.raises(CheckpointError, match=matching("vocabulary file {name} does not exist")):
        read_vocabulary(tmp_path / "nope.json")


@pytest.mark.parametrize("legacy", [False, True])
def test_torchtext_vocab_pt_is_read_without_torchtext_and_without_running_it(tmp_path, monkeypatch, legacy):
    src, tgt = SPECIALS + ["ein", "Hund"], SPECIALS + ["a", "dog", "runs"]
    save_torchtext_like_vocab(tmp_path / "vocab.pt", src, tgt, monkeypatch, legacy=legacy)
    with pytest.raises(Exception):  # the real unpickler cannot even find the classes now
        torch.load(tmp_path / "vocab.pt", weights_only=False)
    lists = read_vocabulary(tmp_path / "vocab.pt")
    assert (lists.source, lists.target) == (src, tgt)


def test_annotated_model_with_its_vocab_pt(tmp_path, monkeypatch):
    torch.manual_seed(0)
    ref = ann_make_model(8, 9, N=2, d_model=8, d_ff=16, h=2, max_len=40).eval()
    torch.save(ref.state_dict(), tmp_path / "model.pt")
    save_torchtext_like_vocab(
        tmp_path / "vocab.pt",
        SPECIALS + ["ein", "Hund", "läuft", "schnell"],
        SPECIALS + ["a", "dog", "runs", "fast", "!"],
        monkeypatch,
    )
    model, tok = load_checkpoint(tmp_path / "model.pt", n_heads=2, vocab=tmp_path / "vocab.pt")
    assert isinstance(tok.source, ListVocab) and (model.config.pad_id, model.config.bos_id, model.config.eos_id) == (
        2,
        0,
        1,
    )
    assert tok.source.decode(tok.source.encode("ein Hund bellt") + [tok.source.eos_id]) == [
        "<s>",
        "ein",
        "Hund",
        "<unk>",
        "</s>",
    ]


def test_list_vocab_specials_found_by_name():
    assert find_specials(["<unk>", "<pad>", "<bos>", "<eos>", "x"]) == {"pad": 1, "bos": 2, "eos": 3, "unk": 0}
    v = ListVocab(
        ["<unk>", "<pad>", "<bos>", "<eos>", "x", "y"], pad_id=1, bos_id=2, eos_id=3, unk_id=0, prepend_bos=True
    )
    assert v.encode("x  q y") == [2, 4, 0, 5]
    assert v.decode([4, 99]) == ["x", "<unk>"]
    assert v.detokenize(["<bos>", "x", "<unk>", "y", "<eos>", "<pad>"]) == "x y"  # specials left out, as Vocab does
    assert vocab_from_dict(v.to_dict()) == v
    with pytest.raises(ValueError, match=matching("{name}={value} is outside the vocabulary", name="eos_id", value=9)):
        ListVocab(["a", "b"], 0, 0, 9, 1)


def test_id_vocab_shows_ids_and_reads_integers():
    v = IdVocab(500, pad_id=1, bos_id=2, eos_id=3, unk_id=0)
    assert v.encode("12 7, <id 123> word 999 -4") == [12, 7, 123, 0, 0, 0]
    assert v.decode([123, 2]) == ["<id 123>", "<id 2>"]
    assert v.detokenize(["<id 2>", "<id 12>", "<id 0>", "<id 3>"]) == "12 0"
    assert v.encode(v.detokenize(v.decode([12, 40]))) == [12, 40]
    assert len(v) == 500 and vocab_from_dict(v.to_dict()) == v


def test_imported_model_round_trips_through_this_projects_format(tmp_path):
    torch.manual_seed(0)
    ref = ann_make_model(12, 10, N=2, d_model=8, d_ff=16, h=2, max_len=40).eval()
    torch.save(ref.state_dict(), tmp_path / "model.pt")
    (tmp_path / "v.json").write_text(
        json.dumps({"source": SPECIALS + list("abcdefgh"), "target": SPECIALS + list("uvwxyz")})
    )
    model, tok = load_checkpoint(tmp_path / "model.pt", n_heads=2, vocab=tmp_path / "v.json")
    save_checkpoint(model, tok, tmp_path / "ours")
    back, back_tok = load_checkpoint(tmp_path / "ours")
    assert back_tok.to_dict() == tok.to_dict() and back_tok.source.encode("a b") == [0, 4, 5]
    src, tgt = id_batch(12, 10, 0, 0, 2)
    assert_close(our_run(back, src, tgt)[0], our_run(model, src, tgt)[0])
    model_ids, tok_ids = load_checkpoint(tmp_path / "model.pt", n_heads=2)
    assert Tokenizer.from_dict(json.loads(json.dumps(tok_ids.to_dict()))).to_dict() == tok_ids.to_dict()
