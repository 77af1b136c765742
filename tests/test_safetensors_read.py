"""Loading keeps safetensors' mapping by default, as transformers does; with VIZ_MAP_WEIGHTS=0 it reads the file once
into private memory (model/checkpoints/safetensors_read.py): the tensors equal safetensors' own reading, the file can
change afterwards, and a damaged file is a clear error."""

import json

import pytest
import torch
from safetensors.torch import load_file, save_file

from model.checkpoints.formats.source import read_weights
from model.checkpoints.safetensors_read import read_private


def test_the_tensors_equal_safetensors_own_reading_and_belong_to_the_process(tmp_path, monkeypatch):
    monkeypatch.setenv("VIZ_MAP_WEIGHTS", "0")
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


def _storages(model) -> set[int]:
    return {p.untyped_storage().data_ptr() for p in model.parameters()}


def test_a_native_folder_is_read_once_and_adopted(tmp_path, char_tokenizer, monkeypatch):
    """This project's own folder with VIZ_MAP_WEIGHTS=0: every parameter is a view of the one buffer read from the
    file (no tensor copied a second time: the weights are in memory once), equal to safetensors' own reading, and kept
    when the file changes."""
    monkeypatch.setenv("VIZ_MAP_WEIGHTS", "0")
    from model import load_checkpoint, save_checkpoint
    from tests.conftest import make_tiny

    folder = save_checkpoint(make_tiny(char_tokenizer, seed=3), char_tokenizer, tmp_path / "ckpt")
    model, _ = load_checkpoint(folder)
    assert len(_storages(model)) == 1
    stored = {k: v.clone() for k, v in load_file(str(folder / "model.safetensors")).items()}  # not left on a map
    params = dict(model.named_parameters())
    assert set(stored) == set(params)
    for name, tensor in stored.items():
        assert torch.equal(params[name], tensor), name
    (folder / "model.safetensors").write_bytes(b"")  # truncated: a mapping would crash the process on next access
    for name, tensor in stored.items():
        assert torch.equal(params[name].clone(), tensor), name


def _overwrite_in_place(path):
    """Zero the file's bytes after its header, in place (the same file, as an editor or a second save can)."""
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    with open(path, "r+b") as fh:
        fh.seek(8 + n)
        fh.write(b"\0" * (len(data) - 8 - n))


def test_models_keep_the_mapping_unless_the_operator_says_not(tmp_path, char_tokenizer, monkeypatch):
    """By default the model keeps views of the file's mapping, as transformers does (nothing read or copied while
    loading), so a change of the file in place reaches it; with VIZ_MAP_WEIGHTS=0 the model's weights are its own."""
    from model import load_checkpoint, save_checkpoint
    from tests.conftest import make_tiny

    source = make_tiny(char_tokenizer, seed=5)
    for setting, keep in ((None, True), ("1", True), ("0", False), ("no", True)):  # anything but 0 or 1: the default
        if setting is None:
            monkeypatch.delenv("VIZ_MAP_WEIGHTS", raising=False)
        else:
            monkeypatch.setenv("VIZ_MAP_WEIGHTS", setting)
        folder = save_checkpoint(source, char_tokenizer, tmp_path / f"keep{setting}")
        path = tmp_path / f"state{setting}.safetensors"
        save_file({k: v.contiguous() for k, v in source.state_dict().items()}, str(path))
        weights = read_weights(path)
        assert weights.mapped is False  # copied by nobody: private, or a mapping the model may keep
        model, _ = load_checkpoint(folder)
        weight, stored = model.src_embed.weight, weights.state["src_embed.weight"]
        assert torch.equal(weight, source.src_embed.weight)
        _overwrite_in_place(folder / "model.safetensors")
        _overwrite_in_place(path)
        assert torch.equal(weight, torch.zeros_like(weight)) is keep, setting
        assert (stored.abs().sum() == 0).item() is keep, setting


def test_half_precision_is_widened_while_reading(tmp_path, monkeypatch):
    """widen=True (the Hugging Face formats): float16 / bfloat16 tensors come back as float32, equal to safetensors'
    own reading widened, read a chunk at a time into one buffer of the float32 weights' size (the file's bytes are
    never held beside them); the stored dtypes are still named; other dtypes are kept as they are."""
    from model.checkpoints import safetensors_read
    from model.checkpoints.safetensors_read import read_stored

    monkeypatch.setattr(safetensors_read, "CHUNK", 6)  # several chunks per tensor, one ending inside a tensor
    path = tmp_path / "half.safetensors"
    state = {"a": torch.randn(3, 5).half(), "b": torch.randn(7).to(torch.bfloat16), "c": torch.randn(2, 2),
             "d": torch.arange(5), "e": torch.zeros(0, 3).half(), "f": torch.randn(1).half()}  # fmt: skip
    save_file(state, str(path))
    want = load_file(str(path))
    got, stored = read_stored(path, widen=True)
    assert stored == {k: v.dtype for k, v in want.items()}
    for k, v in want.items():
        widened = v.float() if v.dtype in (torch.float16, torch.bfloat16) else v
        assert got[k].dtype == widened.dtype and torch.equal(got[k], widened), k
    assert len({t.untyped_storage().data_ptr() for t in got.values()}) == 1
    kept = sum(t.numel() * t.element_size() for t in got.values())
    assert got["a"].untyped_storage().nbytes() <= kept + 8 * len(got)
    assert read_weights(path, widen=True).precision == "bfloat16+float16+float32"
    assert read_stored(path)[0]["a"].dtype == torch.float16  # without widen: as stored


def test_entries_sharing_bytes_are_not_widened_into_copies(tmp_path):
    """A crafted header naming the same bytes many times is read as it is (views of the file's bytes), never laid out
    as one float32 copy per name: the memory stays what the file holds."""
    from model.checkpoints.safetensors_read import read_stored

    path = tmp_path / "w.safetensors"
    save_file({"a": torch.randn(64).half()}, str(path))
    data = path.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    header.update({f"copy{i}": dict(header["a"]) for i in range(50)})
    text = json.dumps(header).encode()
    (tmp_path / "shared.safetensors").write_bytes(len(text).to_bytes(8, "little") + text + data[8 + n :])
    got, _ = read_stored(tmp_path / "shared.safetensors", widen=True)
    assert len(got) == 51 and {t.dtype for t in got.values()} == {torch.float16}
    assert got["copy7"].untyped_storage().nbytes() == len(data) - 8 - n


def test_the_server_reads_weights_privately_unless_its_operator_chose(monkeypatch):
    """The app's server sets VIZ_MAP_WEIGHTS=0 at its first run (a truncated mapping would crash every visitor's
    session); an operator's own setting is kept; the library alone keeps the mapping."""
    from model.checkpoints.safetensors_read import keeps_mapping
    from ui.serving import threads

    monkeypatch.setattr(threads, "set_server_threads", lambda: 1)  # this test process keeps its threads
    monkeypatch.setattr(threads, "set_step_cap", lambda cap: None)
    monkeypatch.setattr(threads, "_under_apptest", lambda: False)
    monkeypatch.setenv("VIZ_MAP_WEIGHTS", "")  # recorded, so that the test process gets its own setting back
    for chosen, keep in ((None, False), ("1", True), ("0", False)):
        if chosen is None:
            monkeypatch.delenv("VIZ_MAP_WEIGHTS", raising=False)
            assert keeps_mapping() is True  # the library, outside the server
        else:
            monkeypatch.setenv("VIZ_MAP_WEIGHTS", chosen)
        monkeypatch.setattr(threads, "_started", False)
        threads.start_server_once()
        assert keeps_mapping() is keep, chosen
