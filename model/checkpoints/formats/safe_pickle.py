"""Reading untrusted PyTorch files without running any code they carry.

Two readers, and nothing else in this project opens a pickle:
- `load_torch_file`: weights (state_dicts, training-state dicts of plain values) through
  `torch.load(..., weights_only=True)`, whose unpickler only builds tensors and plain containers.
- `load_inert_pickle`: objects such as pickled torchtext vocabularies, through an unpickler whose
  `find_class` never hands out a real class or function: every global the file names becomes an
  `InertObject` subclass made here, which only records the arguments and state it is given. Nothing
  in the file can call anything; the caller then reads plain data (lists of strings) out of the records.
"""

from __future__ import annotations

import io
import pickle
import re
import zipfile
from pathlib import Path
from typing import Any

import torch

from i18n import M_

from ..checkpoint import CheckpointError
from ..safe_io import check_zip_entries, read_bytes, regular_file

ZIP_MAGIC = b"PK\x03\x04"
PICKLE_PROTO = 0x80  # the PROTO opcode that starts every pickle of protocol 2 or later
LEGACY_TORCH_MAGIC = 0x1950A86A20F9469CFC6C  # first object of torch.save's pre-1.6 format

MAX_PICKLE_BYTES = 256 * 2**20  # a pickled vocabulary (vocab.pt) is a few MB

REFUSAL = M_(
    "contains pickled code or objects that are not plain tensors; refusing to run it "
    "(checkpoints are untrusted files and are only read as tensors). "
    "Re-save just the weights where you trained the model: torch.save(model.state_dict(), 'model.pt')"
)


def looks_like_pickle(head: bytes) -> bool:
    """True for torch.save's zip archive and for a bare (or legacy torch) pickle stream."""
    return head.startswith(ZIP_MAGIC) or (len(head) > 1 and head[0] == PICKLE_PROTO and 2 <= head[1] <= 5)


def load_torch_file(path: Path, mmap: bool = False) -> Any:
    """torch.load with weights_only=True; anything it refuses becomes a CheckpointError naming the global.

    mmap=True (torch.save's zip archives only) maps the tensors' storage instead of reading it: the
    bytes are read once, when they are copied into the model.
    """
    regular_file(path)
    check_zip_entries(path)  # a zip archive of a million storages is refused from its directory
    try:
        return torch.load(str(path), map_location="cpu", weights_only=True, mmap=mmap)
    except pickle.UnpicklingError as err:
        culprits = sorted(set(re.findall(r"GLOBAL ([\w.]+)", str(err))))
        named = M_(" (it names {names})", names=", ".join(culprits)) if culprits else ""
        raise CheckpointError(M_("{name} {refusal}{named}", name=path.name, refusal=REFUSAL, named=named)) from None
    except (RuntimeError, EOFError, OSError, ValueError, zipfile.BadZipFile) as err:
        raise CheckpointError(
            M_(
                "{name} is not a readable PyTorch file ({problem})",
                name=path.name,
                problem=f"{type(err).__name__}: {err}",
            )
        ) from None


class InertObject:
    """What an unpickled global becomes: a record of the call and the state, never the real thing.

    `qualname` is "module.Name" of the global the file asked for. Instances keep the constructor
    arguments (`args`), state given by BUILD (`state`) and items/elements the pickle stream set.
    """

    qualname = "?"

    def __new__(cls, *args: Any, **kwargs: Any) -> InertObject:
        obj = object.__new__(cls)
        obj.args, obj.kwargs, obj.state, obj.items, obj.elements = args, kwargs, None, {}, []
        return obj

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def __setitem__(self, key: Any, value: Any) -> None:
        self.items[key] = value

    def append(self, value: Any) -> None:
        self.elements.append(value)

    def extend(self, values: Any) -> None:
        self.elements.extend(values)

    def __repr__(self) -> str:
        return f"<inert {self.qualname}>"


class _InertUnpickler(pickle.Unpickler):
    """Resolves every global to a fresh InertObject subclass; persistent ids (tensor storages) to None."""

    def __init__(self, file: io.BufferedIOBase):
        super().__init__(file)
        self._classes: dict[str, type] = {}

    def find_class(self, module: str, name: str) -> type:
        qualname = f"{module}.{name}"
        if qualname not in self._classes:
            self._classes[qualname] = type("Inert", (InertObject,), {"qualname": qualname})
        return self._classes[qualname]

    def persistent_load(self, pid: Any) -> None:
        return None


def _unpickle(data: bytes) -> Any:
    stream = io.BytesIO(data)
    first = _InertUnpickler(stream).load()
    if first == LEGACY_TORCH_MAGIC:  # legacy torch.save: magic, protocol version, sys info, then the object
        _InertUnpickler(stream).load()
        _InertUnpickler(stream).load()
        return _InertUnpickler(stream).load()
    return first


def load_inert_pickle(path: Path) -> Any:
    """The object in a torch.save archive or a pickle, with every class and function replaced by InertObject."""
    data = read_bytes(path, MAX_PICKLE_BYTES)
    try:
        if data.startswith(ZIP_MAGIC):
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = [n for n in archive.namelist() if n.endswith("data.pkl")]
                if not names:
                    raise CheckpointError(
                        M_("{name} is a zip archive without the data.pkl of a torch.save file", name=path.name)
                    )
                data = archive.read(names[0])
        return _unpickle(data)
    except CheckpointError:
        raise
    except Exception as err:  # any malformed stream: report it, never retry with a real unpickler
        raise CheckpointError(
            M_(
                "{name} could not be read as a pickle ({problem})",
                name=path.name,
                problem=f"{type(err).__name__}: {err}",
            )
        ) from None
