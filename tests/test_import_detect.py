"""Telling the formats apart from their contents, and refusing what is none of them by name."""

import json
import re

import pytest
import torch
from safetensors.torch import save_file

from harness.reference.annotated import ann_make_model
from harness.reference.gordic import GorTransformer
from harness.reference.torch_tutorial import Seq2SeqTransformer
from model import CheckpointError, load_checkpoint, save_checkpoint
from model.checkpoints.formats import FORMATS, detect_format, inspect_checkpoint
from tests.conftest import make_tiny
from tests.i18n_helpers import matching, msgid, msgid_starting, rendered
from tests.import_helpers import assert_close, id_batch, our_run

HEADS = msgid("{file} says {n} heads, but n_heads={asked} was asked for")
OWN_FILE = msgid("{name} carries its own {file}; vocabulary files are only for imported state_dicts")
NO_MATCH = msgid("{name}: a state_dict that matches none of the formats I know ({known}); its first keys: {keys}")
NO_FORMAT = msgid_starting("{name} is a file that holds no checkpoint format I know")
NO_FORMATS = msgid("{name} is a folder that holds none of the checkpoint formats I know: {known}")
NOT_TENSORS = msgid("{name} holds {kind}, not a state_dict of tensors (or one under {keys})")
A_DICT = msgid("a dict with keys {keys}")
NOT_LIKE = msgid("{name} does not look like {format}; its contents are those of {found}")
ANNOTATED = msgid("The Annotated Transformer (harvardnlp)")
TUTORIAL = msgid("PyTorch translation tutorial (Seq2SeqTransformer around nn.Transformer)")


@pytest.fixture(scope="module")
def states():
    torch.manual_seed(0)
    return {
        "annotated": ann_make_model(10, 11, N=2, d_model=8, d_ff=16, h=2, max_len=30).state_dict(),
        "gordic": {"num_of_epochs": 1, "state_dict": GorTransformer(8, 10, 11, 2, 2).state_dict()},
        "torch-tutorial": Seq2SeqTransformer(2, 2, 8, 2, 10, 11, dim_feedforward=16).state_dict(),
    }


@pytest.mark.parametrize("fmt", ["annotated", "gordic", "torch-tutorial"])
def test_each_state_dict_format_is_detected(tmp_path, states, fmt):
    torch.save(states[fmt], tmp_path / "x.bin")  # the name says nothing; the keys do
    assert detect_format(tmp_path / "x.bin") == fmt
    model, tok = load_checkpoint(tmp_path / "x.bin", n_heads=2)
    assert (model.config.src_vocab_size, model.config.tgt_vocab_size, len(tok.source), len(tok.target)) == (
        10,
        11,
        10,
        11,
    )


def test_safetensors_and_data_parallel_prefix_load_the_same_model(tmp_path, states):
    torch.save(states["annotated"], tmp_path / "a.pt")
    save_file({k: v.contiguous() for k, v in states["annotated"].items()}, str(tmp_path / "a.safetensors"))
    torch.save(
        {"model_state_dict": {f"module.{k}": v for k, v in states["annotated"].items()}, "epoch": 4},
        tmp_path / "ddp.pt",
    )
    src, tgt = id_batch(10, 11, 0, 0, 2)
    expected = our_run(load_checkpoint(tmp_path / "a.pt", n_heads=2)[0], src, tgt)[0]
    for name in ("a.safetensors", "ddp.pt"):
        assert detect_format(tmp_path / name) == "annotated"
        assert_close(our_run(load_checkpoint(tmp_path / name, n_heads=2)[0], src, tgt)[0], expected)
    assert inspect_checkpoint(tmp_path / "ddp.pt").metadata == {"epoch": 4}


def test_this_projects_folder_is_detected_and_keeps_its_rules(tmp_path, char_tokenizer):
    save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "ours")
    info = inspect_checkpoint(tmp_path / "ours")
    assert (info.format, info.needs_n_heads, info.takes_vocabulary, info.n_heads) == (
        "transformer-viz",
        False,
        False,
        3,
    )
    with pytest.raises(CheckpointError, match=matching(HEADS, file="config.json", n=3, asked=8)):
        load_checkpoint(tmp_path / "ours", n_heads=8)
    with pytest.raises(CheckpointError, match=matching(OWN_FILE, file="tokenizer.json")):
        load_checkpoint(tmp_path / "ours", vocab=["a"])
    load_checkpoint(tmp_path / "ours", n_heads=3)


def test_unknown_state_dict_is_refused_naming_the_known_formats(tmp_path):
    torch.save({"backbone.conv1.weight": torch.zeros(2, 2), "head.fc.bias": torch.zeros(2)}, tmp_path / "resnet.pt")
    with pytest.raises(CheckpointError) as err:
        load_checkpoint(tmp_path / "resnet.pt")
    message = str(err.value)
    assert re.search(matching(NO_MATCH), message) and "backbone.conv1.weight" in message
    assert all(name in message for name in FORMATS)


@pytest.mark.parametrize("content", [b"\x00\x01garbage bytes", json.dumps({"d_model": 8}).encode(), b""])
def test_files_that_are_no_checkpoint_at_all(tmp_path, content):
    (tmp_path / "thing.pt").write_bytes(content)
    with pytest.raises(
        CheckpointError, match=matching(NO_FORMAT, name="thing.pt") + ".*annotated: " + re.escape(rendered(ANNOTATED))
    ):
        load_checkpoint(tmp_path / "thing.pt")


def test_a_pickle_without_tensors_is_named(tmp_path):
    torch.save({"epoch": 3, "lr": 0.1}, tmp_path / "meta.pt")
    with pytest.raises(
        CheckpointError, match=matching(NOT_TENSORS, name="meta.pt", kind=rendered(A_DICT, keys="epoch, lr"))
    ):
        load_checkpoint(tmp_path / "meta.pt")


def test_forcing_the_wrong_format_is_refused(tmp_path, states):
    torch.save(states["torch-tutorial"], tmp_path / "t.pt")
    with pytest.raises(
        CheckpointError,
        match=matching(NOT_LIKE, format=rendered(ANNOTATED), found=rendered(TUTORIAL)),
    ):
        load_checkpoint(tmp_path / "t.pt", format="annotated")
    with pytest.raises(CheckpointError, match="unknown format 'fairseq'"):
        load_checkpoint(tmp_path / "t.pt", format="fairseq")


def test_a_folder_of_no_known_format_lists_the_registered_ones(tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos" / "cat.jpg").write_bytes(b"\xff\xd8")
    with pytest.raises(CheckpointError, match=matching(NO_FORMATS, name="photos")) as err:
        load_checkpoint(tmp_path / "photos")
    assert "Hugging Face T5 / flan-T5 folder" in str(err.value) and "Hugging Face BART / mBART folder" in str(err.value)


def test_a_folder_of_another_hugging_face_model_is_refused(tmp_path):
    (tmp_path / "xlnet").mkdir()
    (tmp_path / "xlnet" / "config.json").write_text(json.dumps({"model_type": "xlnet", "n_layer": 2}))
    from model.checkpoints.formats.registry import hugging_face_families

    with pytest.raises(CheckpointError) as err:
        inspect_checkpoint(tmp_path / "xlnet")
    message = err.value.args[0]
    assert message.template == msgid_starting("{name}/config.json describes a Hugging Face model of another kind")
    assert message.values["families"] == hugging_face_families()  # every registered family, from the registry
    assert "GPT-2" in message.values["families"] and "xlnet" not in message.values["families"]
