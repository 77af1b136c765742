"""Issue 22: a checkpoint's tensor count is bounded before its tensors are read (a safetensors file of a million
one-element tensors took 50-55 s and 1.6 GB); hypothesis over safetensors headers: loaded or a clear refusal."""

from __future__ import annotations

import json
import struct
import time
import zipfile

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors.torch import save_file

from model import CheckpointError, load_checkpoint, save_checkpoint
from model.checkpoints.formats import inspect_checkpoint
from model.checkpoints.formats.source import read_weights
from model.checkpoints.safe_io import MAX_TENSORS, SAFETENSORS_MAX_HEADER
from tests.conftest import make_tiny
from tests.i18n_helpers import matching, msgid_starting

MANY = msgid_starting("{name} holds {n} tensors, more than the {max}")
HEADER = msgid_starting("{name} has a header of {size}, above the limit of {limit}")


def header_file(path, header: dict | bytes, payload: bytes = b"") -> None:
    raw = header if isinstance(header, bytes) else json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + payload)


def many_tensors_header(n: int) -> dict:
    return {f"t{i}": {"dtype": "F32", "shape": [1], "data_offsets": [4 * i, 4 * i + 4]} for i in range(n)}


def test_a_file_of_very_many_tensors_is_refused_from_its_header(tmp_path, monkeypatch):
    path = tmp_path / "many.safetensors"
    n = MAX_TENSORS + 1
    header_file(path, many_tensors_header(n), bytes(4 * n))
    monkeypatch.setattr("safetensors.torch.load_file", lambda *a, **k: pytest.fail("the tensors were read"))
    start = time.perf_counter()
    for load in (load_checkpoint, inspect_checkpoint):
        with pytest.raises(CheckpointError, match=matching(MANY, name="many.safetensors", n=n, max=MAX_TENSORS)):
            load(path)
    assert time.perf_counter() - start < 10


def test_a_header_longer_than_any_checkpoint_needs_is_refused_unread(tmp_path):
    path = tmp_path / "long.safetensors"
    path.write_bytes(struct.pack("<Q", SAFETENSORS_MAX_HEADER + 1) + b"{")
    with open(path, "r+b") as fh:
        fh.truncate(SAFETENSORS_MAX_HEADER + 64)  # as long as its header says (sparse: no disk used)
    with pytest.raises(CheckpointError, match=matching(HEADER, size="8.0 MB", limit="8.0 MB")):
        load_checkpoint(path)


def test_the_native_folder_checks_its_weights_header_too(tmp_path, char_tokenizer):
    folder = save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "ckpt")
    n = MAX_TENSORS + 5
    header_file(folder / "model.safetensors", many_tensors_header(n), bytes(4 * n))
    with pytest.raises(CheckpointError, match=f"model.safetensors holds {n} tensors"):
        load_checkpoint(folder)


def test_a_torch_zip_of_very_many_records_is_refused_from_its_directory(tmp_path):
    path = tmp_path / "many.pt"
    with zipfile.ZipFile(path, "w") as z:
        for i in range(MAX_TENSORS + 20):
            z.writestr(f"archive/data/{i}", b"")
    with pytest.raises(CheckpointError, match=matching(MANY, name="many.pt")):
        load_checkpoint(path)


def test_an_ordinary_state_dict_still_loads(tmp_path, char_tokenizer):
    folder = save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "ckpt")
    state = {k: v.clone() for k, v in load_checkpoint(folder)[0].state_dict().items()}
    save_file(state, tmp_path / "plain.safetensors")
    weights = read_weights(tmp_path / "plain.safetensors")
    assert set(weights.state) == set(state) and all(torch.equal(weights.state[k], v) for k, v in state.items())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    header=st.one_of(
        st.binary(max_size=64),
        st.dictionaries(
            st.text(max_size=6),
            st.one_of(
                st.fixed_dictionaries(
                    {
                        "dtype": st.sampled_from(["F32", "F16", "BF16", "I64", "U8", "X", ""]),
                        "shape": st.lists(st.integers(-2, 2**40), max_size=4),
                        "data_offsets": st.lists(st.integers(-2, 2**40), min_size=0, max_size=3),
                    }
                ),
                st.integers(),
                st.text(max_size=4),
                st.none(),
            ),
            max_size=5,
        ).map(lambda d: json.dumps(d).encode()),
    ),
    payload=st.binary(max_size=64),
)
def test_any_safetensors_header_is_read_or_refused_clearly(tmp_path, header, payload):
    path = tmp_path / "h.safetensors"
    header_file(path, header, payload)
    try:
        load_checkpoint(path)
    except CheckpointError:
        pass  # a clear refusal; anything else (a crash, a MemoryError, an OverflowError) fails the test
    assert torch.get_num_threads() >= 1
