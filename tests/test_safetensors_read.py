"""Loading reads a safetensors file once into private memory (model/checkpoints/safetensors_read.py): the
tensors equal safetensors' own reading, the file can change afterwards, and a damaged file is a clear error."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from model.checkpoints.safetensors_read import read_private
from model.checkpoints.formats.source import read_weights


def test_the_tensors_equal_safetensors_own_reading_and_belong_to_the_process(tmp_path):
    path = tmp_path / "w.safetensors"
    state = {"a": torch.randn(3, 5), "b": torch.arange(7, dtype=torch.int64), "c": torch.randn(2, dtype=torch.float16),
             "d": torch.randn(4, 4).to(torch.bfloat16), "e": torch.randn(1, 3)}  # fmt: skip
    save_file(state, str(path))
    got, want = read_private(path), load_file(str(path))
    assert set(got) == set(want)
    for k in want:
        assert got[k].dtype == want[k].dtype and torch.equal(got[k], want[k]), k
    weights = read_weights(path)
    assert not weights.mapped  # the model adopts them: nothing is copied a second time
    before = want["a"].clone()
    path.write_bytes(b"\0" * path.stat().st_size)  # the file overwritten: what was read stays (a mapping would not)
    assert torch.equal(weights.state["a"], before)


def test_a_damaged_file_is_refused(tmp_path):
    path = tmp_path / "w.safetensors"
    save_file({"a": torch.randn(8, 8)}, str(path))
    data = path.read_bytes()
    (tmp_path / "short.safetensors").write_bytes(data[: len(data) - 10])
    with pytest.raises(ValueError, match="truncated|outside"):
        read_private(tmp_path / "short.safetensors")
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    header["a"]["shape"] = [8, 9]  # more than the bytes it names
    text = json.dumps(header).encode()
    (tmp_path / "shape.safetensors").write_bytes(len(text).to_bytes(8, "little") + text + data[8 + n :])
    with pytest.raises(ValueError, match="size does not match its shape"):
        read_private(tmp_path / "shape.safetensors")
    header["a"].update(shape=[8, 8], data_offsets=[0, 10**9])
    text = json.dumps(header).encode()
    (tmp_path / "far.safetensors").write_bytes(len(text).to_bytes(8, "little") + text + data[8 + n :])
    with pytest.raises(ValueError, match="outside the file"):
        read_private(tmp_path / "far.safetensors")
