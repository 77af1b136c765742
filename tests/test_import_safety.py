"""Checkpoints are untrusted: a pickle whose payload would create a file is refused, and the file is never created."""

import ast
import builtins
import os
import pickle
import re
from pathlib import Path

import pytest
import torch

from harness.reference.annotated import ann_make_model
from model import CheckpointError, load_checkpoint
from model.checkpoints.formats import inspect_checkpoint, read_vocabulary
from tests.i18n_helpers import matching, msgid, msgid_starting

PICKLED = msgid_starting("contains pickled code or objects that are not plain tensors; refusing to run it")
NO_LIST = msgid("{origin}: no token list found in this pickled vocabulary (nothing in it was run). {hint}")


class TouchWithOsSystem:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class TouchWithOpen:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (builtins.open, (str(self.marker), "w"))


class TouchWithEval:
    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (builtins.eval, (f"open({str(self.marker)!r}, 'w')",))


PAYLOADS = [TouchWithOsSystem, TouchWithOpen, TouchWithEval]


def write(kind: str, payload, path: Path) -> Path:
    """The payload alone or hidden inside a checkpoint-looking dict, in each pickle container torch reads."""
    if kind == "torch-zip":
        torch.save(payload, path)
    elif kind == "torch-legacy":
        torch.save(payload, path, _use_new_zipfile_serialization=False)
    elif kind == "raw-pickle":
        path.write_bytes(pickle.dumps(payload, protocol=2))
    elif kind == "inside-state-dict":
        torch.save({"state_dict": {"src_embed.0.lut.weight": torch.zeros(3, 4)}, "epoch": payload}, path)
    return path


@pytest.mark.parametrize("payload_cls", PAYLOADS)
@pytest.mark.parametrize("kind", ["torch-zip", "torch-legacy", "raw-pickle", "inside-state-dict"])
def test_malicious_checkpoint_is_refused_and_runs_nothing(tmp_path, payload_cls, kind):
    marker = tmp_path / "pwned"
    path = write(kind, payload_cls(marker), tmp_path / "model.pt")
    assert not marker.exists()
    for attempt in (
        lambda: load_checkpoint(path),
        lambda: inspect_checkpoint(path),
        lambda: load_checkpoint(path, format="annotated"),
    ):
        with pytest.raises(CheckpointError) as err:
            attempt()
        message = str(err.value)
        assert re.search(matching(PICKLED), message)
        assert "torch.save(model.state_dict()" in message  # how to make a file that can be read
        assert re.search(r"it names ((posix|os|nt)\.system|(builtins\.|io\.)?(open|eval))\)", message)
        assert not marker.exists()


@pytest.mark.parametrize("payload_cls", PAYLOADS)
def test_malicious_vocabulary_pickle_runs_nothing_and_says_how_to_export(tmp_path, payload_cls):
    marker = tmp_path / "pwned"
    torch.save(ann_make_model(6, 6, N=1, d_model=8, d_ff=8, h=2, max_len=20).state_dict(), tmp_path / "model.pt")
    for i, payload in enumerate(
        [payload_cls(marker), (payload_cls(marker), payload_cls(marker)), {"source": payload_cls(marker)}]
    ):
        torch.save(payload, tmp_path / f"vocab{i}.pt")
        with pytest.raises(CheckpointError, match=matching(NO_LIST) + r".*get_itos\(\)"):
            load_checkpoint(tmp_path / "model.pt", n_heads=2, vocab=tmp_path / f"vocab{i}.pt")
        with pytest.raises(CheckpointError, match=matching(NO_LIST)):
            read_vocabulary(write("raw-pickle", payload, tmp_path / f"raw{i}.pkl"))
    assert not marker.exists()


def test_malicious_marian_weights_are_refused(tmp_path):
    marker = tmp_path / "pwned"
    folder = tmp_path / "opus"
    folder.mkdir()
    (folder / "config.json").write_text(
        '{"model_type": "marian", "d_model": 16, "encoder_attention_heads": 4, "decoder_attention_heads": 4}'
    )
    torch.save({"model.shared.weight": TouchWithOpen(marker)}, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match=re.escape("pytorch_model.bin ") + matching(PICKLED)):
        load_checkpoint(folder)
    assert not marker.exists()


def test_no_loader_unpickles_with_code_execution():
    """Every torch.load call in model/ passes weights_only=True; nothing calls pickle.load(s) or a plain Unpickler."""
    calls = 0
    for path in Path(__file__).resolve().parents[1].joinpath("model").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name)
            ):
                continue
            owner, attr = node.func.value.id, node.func.attr
            if (owner, attr) == ("torch", "load"):
                calls += 1
                flags = {k.arg: k.value for k in node.keywords}
                assert isinstance(flags.get("weights_only"), ast.Constant) and flags["weights_only"].value is True, (
                    f"{path.name}:{node.lineno}"
                )
            assert not (owner == "pickle" and attr in ("load", "loads", "Unpickler")), f"{path.name}:{node.lineno}"
    assert calls >= 1  # the one reader of .pt weights
