"""Bad Hugging Face folders of the decoder-only and encoder-only families: hostile config numbers and fields this
app cannot map exactly, tokenizer files that do not belong to the model. Each is a CheckpointError naming the
problem, raised before a model is built; no file content is echoed. Also the other tokenizer files a folder may
carry (GPT-2's vocab.json + merges.txt, BERT's vocab.txt) read as its tokenizer.json does."""

from __future__ import annotations

import json

import pytest

from model import CheckpointError, load_checkpoint
from tests.hf_families import edit_json
from tests.hf_one_stack import BUILDERS, TEXTS
from tests.i18n_helpers import matching, msgid

OUTSIDE = msgid(
    "{folder}: the tokenizer ({what}) has {n} token ids outside the model's {size} embeddings; it does not belong to "
    "this model"
)
NOT_TOKENIZER = msgid("{folder}: {file} is not a tokenizer this app can read ({problem})")

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("one-stack-bad")
    return {name: BUILDERS[name](root).folder for name in ("gpt2", "llama", "qwen2", "bert-mlm")}


@pytest.mark.parametrize(
    "name, changes, message",
    [
        ("gpt2", {"n_embd": 10**9}, r"d_model is 1000000000, above this app's limit of 4096"),
        ("gpt2", {"n_layer": True}, r"n_layer must be an integer"),
        ("gpt2", {"activation_function": "db_password"}, r"activation_function is not one of"),
        ("gpt2", {"scale_attn_by_inverse_layer_idx": "yes"}, r"scale_attn_by_inverse_layer_idx must be true or false"),
        ("llama", {"num_key_value_heads": 3}, r"n_heads=4 is not a multiple of n_kv_heads=3"),
        ("llama", {"vocab_size": 10**8}, r"src_vocab_size is 100000000, above this app's limit"),
        ("llama", {"rope_parameters": {"rope_type": "yarn", "factor": 4.0}}, r"RoPE scaling “yarn”"),
        ("llama", {"hidden_size": "hunter2"}, r"hidden_size must be an integer"),
        ("qwen2", {"use_sliding_window": True}, r"use_sliding_window is not supported"),
        ("qwen2", {"num_hidden_layers": 10**4}, r"n_decoder_layers is 10000, above this app's limit of 48"),
        ("bert-mlm", {"position_embedding_type": "relative_key"}, r"position_embedding_type is not supported"),
        ("bert-mlm", {"architectures": ["BertForSequenceClassification"]}, r"architectures must be one of"),
        ("bert-mlm", {"intermediate_size": 10**6}, r"d_ff is 1000000, above this app's limit"),
    ],
)
def test_hostile_config_numbers_are_refused_before_any_tensor(copy, no_model_built, name, changes, message):
    folder = copy(name)
    edit_json(folder / "config.json", **changes)
    with pytest.raises(CheckpointError, match=message) as err:
        load_checkpoint(folder)
    assert "hunter2" not in str(err.value) and "db_password" not in str(err.value)


def test_a_tokenizer_with_ids_outside_the_model_is_refused_before_the_weights(copy, monkeypatch):
    folder = copy("gpt2")
    data = json.loads((folder / "tokenizer.json").read_text())
    data["model"]["vocab"]["zebra-password"] = 10**6
    (folder / "tokenizer.json").write_text(json.dumps(data))

    def no_weights(src):
        raise AssertionError("the weights were read")

    monkeypatch.setattr("model.checkpoints.formats.hf_common.weights", no_weights)
    with pytest.raises(CheckpointError, match=matching(OUTSIDE, what="tokenizer.json", n=1)):
        load_checkpoint(folder)


def test_damaged_or_too_deep_tokenizer_files_are_refused(copy):
    folder = copy("llama")
    (folder / "tokenizer.json").write_text(json.dumps({"model": {"type": "db_password"}}))
    with pytest.raises(CheckpointError, match=matching(NOT_TOKENIZER, file="tokenizer.json")) as err:
        load_checkpoint(folder)
    assert "db_password" not in str(err.value)
    (folder / "tokenizer.json").write_text("[" * 5000 + "]" * 5000)
    with pytest.raises(CheckpointError, match="tokenizer.json"):
        load_checkpoint(folder)


def test_gpt2_vocab_and_merges_and_bert_vocab_txt_read_as_their_tokenizer_json(copy):
    from tokenizers import Tokenizer

    folder = copy("gpt2")
    model, tok = load_checkpoint(folder)
    Tokenizer.from_file(str(folder / "tokenizer.json")).model.save(str(folder))  # vocab.json + merges.txt
    (folder / "tokenizer.json").unlink()
    _, files = load_checkpoint(folder)
    for text in TEXTS:
        assert files.target.encode(text) == tok.target.encode(text)
    folder = copy("bert-mlm")
    _, tok = load_checkpoint(folder)
    Tokenizer.from_file(str(folder / "tokenizer.json")).model.save(str(folder))  # vocab.txt
    (folder / "tokenizer.json").unlink()
    _, files = load_checkpoint(folder)
    for text in TEXTS:
        assert files.source.encode(text) == tok.source.encode(text)
        assert files.source.eos_id == tok.source.eos_id and tok.source.token(tok.source.eos_id) == "[SEP]"
