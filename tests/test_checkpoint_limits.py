"""Untrusted configs and files are bounded before anything is allocated: config limits and types, JSON size
and depth, non-regular files; messages name the limit and never quote the file's contents."""

import json
import os
import time

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from model import CheckpointError, TransformerConfig, load_checkpoint, save_checkpoint
from model.checkpoints.formats import inspect_checkpoint, read_vocabulary
from model.checkpoints.safe_io import read_json
from model.network.config import LIMITS, parameter_count
from tests.conftest import make_tiny
from tests.i18n_helpers import matching, msgid, msgid_starting

FIELDS = msgid("the config has {n} fields this project does not know (not named here)")
OTHER_KIND = msgid_starting("{name}/config.json describes a Hugging Face model of another kind")
DEEP = msgid("{origin} nests deeper than {max} levels; this is not a file this app writes or reads")
TOO_BIG = msgid("{name} is {size}, above the limit of {limit} for this kind of file")
NOT_REGULAR = msgid("{name} is not a regular file (a pipe, device or system entry); only plain files are read")
ABOVE = msgid("{name} is {value}, above this app's limit of {limit}")


@pytest.fixture
def saved(tmp_path, char_tokenizer):
    return save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "ckpt")


def edit_config(folder, **changes):
    config = json.loads((folder / "config.json").read_text())
    config.update(changes)
    (folder / "config.json").write_text(json.dumps(config))


def test_the_papers_big_model_is_within_the_limits():
    big = TransformerConfig.preset("big", src_vocab_size=64000, tgt_vocab_size=64000, max_len=4096)
    assert parameter_count(big) < LIMITS["parameters"]


def test_the_weights_limit_comes_from_the_memory_they_may_take(monkeypatch):
    """Half the machine's memory in float32 numbers by default; $VIZ_WEIGHTS_MB sets it; a 1.2B model (Llama-3.2-1B's
    1,236 million numbers: 4.9 GB in float32) opens where 8 GB are given to weights, not where 2 GB are."""
    from model.env import WEIGHTS_ENV, machine_memory, parameter_limit

    monkeypatch.delenv(WEIGHTS_ENV, raising=False)
    assert parameter_limit() == machine_memory() // 2 // 4 and parameter_limit(2) == machine_memory() // 2 // 2
    monkeypatch.setenv(WEIGHTS_ENV, "8192")
    assert parameter_limit() == 8192 * 2**20 // 4 > 1_236_000_000
    monkeypatch.setenv(WEIGHTS_ENV, "2048")
    assert parameter_limit() < 1_236_000_000


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"d_model": 65536, "n_heads": 8}, r"d_model is 65536, above this app's limit of 4096"),
        ({"max_len": 10**9}, r"max_len is 1000000000, above this app's limit of 16384"),
        ({"n_encoder_layers": 1000}, r"n_encoder_layers is 1000, above this app's limit of 48"),
        ({"n_heads": 512, "d_model": 1024}, r"n_heads is 512, above this app's limit of 128"),
        (
            {"src_vocab_size": 10**7, "tgt_vocab_size": 10**7},
            r"src_vocab_size is 10000000, above this app's limit of 262144",
        ),
        (
            {"d_model": 4096, "n_heads": 8, "d_ff": 32768, "n_encoder_layers": 40, "n_decoder_layers": 40},
            r"million numbers, more than this server's memory for weights holds",
        ),
        ({"d_model": 24.0}, r"d_model must be an integer, not a number with a fraction"),
        ({"n_encoder_layers": 0}, r"n_encoder_layers is 0; it must be at least 1"),
        ({"n_decoder_layers": True}, r"n_decoder_layers must be an integer, not true/false"),
        ({"norm_first": 1}, r"norm_first must be true or false, not an integer"),
        ({"activation": "db_password=hunter2"}, r"activation is not one of relu, gelu, gelu_tanh, silu"),
        # issue 22: limits before relations (d_model % n_heads divided by zero here before)
        ({"n_heads": 0}, r"n_heads is 0; it must be at least 1"),
        ({"n_heads": -4, "d_model": 30}, r"n_heads is -4; it must be at least 1"),
        ({"eos_id": -1}, r"eos_id is -1; it must be at least 0"),
    ],
)
def test_a_config_outside_the_limits_is_refused_before_any_tensor(saved, no_model_built, changes, message):
    edit_config(saved, **changes)
    start = time.perf_counter()
    with pytest.raises(CheckpointError, match=message) as err:
        load_checkpoint(saved)
    assert time.perf_counter() - start < 5  # nothing of gigabytes was allocated (the model constructor is blocked too)
    assert "hunter2" not in str(err.value)
    with pytest.raises(CheckpointError, match=message):
        inspect_checkpoint(saved)


def test_unknown_config_fields_are_counted_not_named(saved):
    edit_config(saved, api_key="sk-123", db_password="hunter2")
    with pytest.raises(CheckpointError, match="config.json: " + matching(FIELDS, n=2)) as err:
        load_checkpoint(saved)
    assert "api_key" not in str(err.value) and "db_password" not in str(err.value) and "hunter2" not in str(err.value)


def test_other_hugging_face_model_types_are_not_echoed(tmp_path):
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text(json.dumps({"model_type": "secret-internal-model"}))
    with pytest.raises(CheckpointError, match=matching(OTHER_KIND, name="hf")) as err:
        load_checkpoint(tmp_path / "hf")
    assert "secret" not in str(err.value)


def nested(depth: int) -> str:
    """JSON nested `depth` levels deep, in 2 bytes a level (under the 1 MB a config file may hold, even past Python's
    recursion limit)."""
    return "[" * depth + "1" + "]" * depth


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "card.json"])
@pytest.mark.parametrize("depth", [100, 200_000])  # past the limit; past Python's recursion limit
def test_deeply_nested_json_is_a_clear_error(saved, name, depth):
    (saved / name).write_text(nested(depth))
    if name == "card.json":
        from model.checkpoints.checkpoint import load_card

        with pytest.raises(CheckpointError, match=matching(DEEP, origin="card.json", max=64)):
            load_card(saved)
        return
    with pytest.raises(CheckpointError, match=matching(DEEP, origin=name, max=64)):
        load_checkpoint(saved)


def test_deep_vocabulary_json_and_oversized_json_are_refused(tmp_path, monkeypatch):
    (tmp_path / "vocab.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(CheckpointError, match=matching(DEEP, origin="vocab.json", max=64)):
        read_vocabulary(tmp_path / "vocab.json")
    (tmp_path / "big.json").write_text(json.dumps(["x" * 100] * 100))
    with pytest.raises(CheckpointError, match=matching(TOO_BIG, name="big.json", size="10.2 KB", limit="1000 bytes")):
        read_json(tmp_path / "big.json", max_bytes=1000)
    assert read_json(tmp_path / "big.json") == ["x" * 100] * 100


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_is_refused_without_opening_it(tmp_path, saved):
    """Opening a FIFO for reading blocks until a writer comes: every reader must refuse it from stat alone."""
    os.mkfifo(tmp_path / "model.pt")
    for attempt in (
        lambda: load_checkpoint(tmp_path / "model.pt"),
        lambda: inspect_checkpoint(tmp_path / "model.pt"),
        lambda: read_vocabulary(tmp_path / "model.pt"),
    ):
        with pytest.raises(CheckpointError, match=matching(NOT_REGULAR, name="model.pt")):
            attempt()
    (saved / "config.json").unlink()
    os.mkfifo(saved / "config.json")
    with pytest.raises(CheckpointError, match=matching(NOT_REGULAR, name="config.json")):
        load_checkpoint(saved)


@pytest.mark.parametrize("path", ["/proc/self/environ", "/dev/zero", "/proc/self/status"])
def test_system_entries_are_refused(path):
    if not os.path.exists(path):
        pytest.skip(f"{path} does not exist here")
    with pytest.raises(CheckpointError, match=matching(NOT_REGULAR)) as err:
        load_checkpoint(path)
    assert "PATH=" not in str(err.value)
    with pytest.raises(CheckpointError, match=matching(NOT_REGULAR)):
        read_vocabulary(path)


def test_a_marian_config_beyond_the_limits_is_refused_before_its_weights_are_read(
    tmp_path, monkeypatch, no_model_built
):
    folder = tmp_path / "opus"
    folder.mkdir()
    (folder / "config.json").write_text(
        json.dumps(
            {
                "model_type": "marian",
                "d_model": 16,
                "encoder_attention_heads": 4,
                "decoder_attention_heads": 4,
                "max_position_embeddings": 10**9,
            }
        )
    )
    torch.save({"model.shared.weight": torch.zeros(3, 16)}, folder / "pytorch_model.bin")
    reads = []
    monkeypatch.setattr("model.checkpoints.formats.source.read_weights", lambda path: reads.append(path))
    for attempt in (load_checkpoint, inspect_checkpoint):
        with pytest.raises(CheckpointError, match=matching(ABOVE, name="max_len", value=1000000000, limit=16384)):
            attempt(folder)
    assert reads == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    changes=st.dictionaries(
        st.sampled_from(
            [
                "d_model",
                "n_heads",
                "d_ff",
                "n_encoder_layers",
                "n_decoder_layers",
                "max_len",
                "src_vocab_size",
                "tgt_vocab_size",
                "pad_id",
                "bos_id",
                "eos_id",
                "dropout",
                "pe_base",
                "layer_norm_eps",
                "positional",
                "norm_first",
                "share_embeddings",
                "final_norm",
                "extra",
            ]
        ),
        st.one_of(
            st.integers(-(2**63), 2**63),
            st.floats(allow_nan=True, allow_infinity=True),
            st.booleans(),
            st.none(),
            st.text(max_size=8),
            st.lists(st.integers(), max_size=2),
        ),
        max_size=4,
    )
)
def test_any_config_json_is_loaded_or_refused_with_a_message(tmp_path, char_tokenizer, changes):
    """Issue 22: whatever a config.json holds, load_checkpoint loads it or raises CheckpointError (never another
    exception: ZeroDivisionError, OverflowError, TypeError ...), and a refusal never quotes a text value."""
    folder = tmp_path / f"c{abs(hash(json.dumps(changes, default=str))) % 10**9}"
    if not folder.exists():
        save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, folder)
    edit_config(folder, **changes)
    try:
        load_checkpoint(folder)
    except CheckpointError as err:
        for value in changes.values():
            if isinstance(value, str) and len(value) > 3:
                assert value not in str(err).replace("TransformerConfig", "")
