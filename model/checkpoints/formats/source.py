"""What the format protocol passes around: the checkpoint being read (`Source`), what the caller asked
for (`LoadOptions`) and what inspection tells the app (`CheckpointInfo`).

A Source remembers everything read from its path, so detection, inspection and loading within one call
share one read of each file. Weights are read lazily where the container allows it: safetensors and
torch.save's zip archives are memory-mapped (the tensors' shapes and dtypes cost nothing), and for loading the
model keeps views of the mapping, as transformers does. Where the operator sets VIZ_MAP_WEIGHTS=0
(model/checkpoints/safetensors_read.keeps_mapping: folders rewritten while the server runs, where a mapped file
overwritten later would change the model, or crash the process with SIGBUS) a safetensors file or a torch file is
read into private memory once instead and the model adopts those tensors.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from i18n import M_

from ..checkpoint import CheckpointError, unreadable_safetensors
from ..safe_io import check_safetensors_header, read_json, regular_file
from ..safetensors_read import keeps_mapping, read_stored
from .common import listing
from .safe_pickle import ZIP_MAGIC, load_torch_file, looks_like_pickle
from .vocab_files import VocabSpec

WRAPPER_KEYS = ("state_dict", "model_state_dict", "model")
HALF = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


class UnknownContent(CheckpointError):
    """A file that is no weights container at all; the registry adds the list of known formats."""


@dataclass
class Weights:
    """One weights file as read: the state_dict (wrappers and "module." prefixes removed), plain metadata
    saved beside it, and the stored precision ("float32", "float16", "bfloat16" or e.g. "float16+float32")."""

    state: dict[str, torch.Tensor]
    meta: dict[str, Any]
    precision: str
    mapped: bool  # the tensors are views of a memory-mapped file the model must not keep: copy them (False where
    # the model keeps the mapping, safetensors_read.keeps_mapping, or the tensors were read privately)
    kept: torch.dtype = torch.float32  # the float type the model keeps its weights in (hf_common.weights)

    @property
    def half(self) -> bool:
        return any(name in self.precision for name in HALF.values())


@dataclass
class LoadOptions:
    """What the caller gives beside the path (see import_checkpoint)."""

    n_heads: int | None = None
    vocab: VocabSpec | None = None
    source_vocab: VocabSpec | None = None
    target_vocab: VocabSpec | None = None

    @property
    def given_vocab(self) -> bool:
        return any(v is not None for v in (self.vocab, self.source_vocab, self.target_vocab))


@dataclass
class CheckpointInfo:
    """What the app needs to know about a checkpoint before loading it."""

    path: str
    format: str  # a FORMATS name
    title: str  # human-readable format name
    needs_n_heads: bool  # the file does not record the head count: ask (head_choices, default_n_heads)
    takes_vocabulary: bool  # the file carries no tokenizer: offer vocabulary files (optional; ids otherwise)
    d_model: int
    src_vocab_size: int
    tgt_vocab_size: int
    n_heads: int | None = None  # when the file records it
    head_choices: list[int] = field(default_factory=list)  # head counts that divide d_model
    default_n_heads: int | None = None
    notes: str = ""  # the format's sentence conventions and the stored precision, for a caption
    metadata: dict[str, Any] = field(default_factory=dict)  # plain values saved beside the weights (epochs, ...)
    precision: str = "float32"  # dtype of the stored floating-point weights (half precision is cast to float32)

    @classmethod
    def of_folder(cls, src: Source, name: str, title: str, config, **more) -> CheckpointInfo:
        """A folder that records its configuration (TransformerConfig), head count included, and brings its own
        tokenizer; `more`: the other fields (notes, precision)."""
        sizes = (config.d_model, config.src_vocab_size, config.tgt_vocab_size)
        return cls(str(src.path), name, title, False, False, *sizes, n_heads=config.n_heads, **more)


def precision_note(precision: str) -> str:
    """The caption sentence for a file stored in half precision ("" for float32)."""
    if not any(name in precision for name in HALF.values()):
        return ""
    return M_("Stored in half precision ({precision}); the weights were cast to float32.", precision=precision)


def _is_safetensors(head: bytes, size: int) -> bool:
    if len(head) < 9:
        return False
    (header_len,) = struct.unpack("<Q", head[:8])
    return 0 < header_len <= size - 8 and head[8:9] == b"{"


def _tensor_dict(obj: Any) -> bool:
    return isinstance(obj, Mapping) and bool(obj) and all(isinstance(v, torch.Tensor) for v in obj.values())


def _precision(dtypes: Iterable[torch.dtype]) -> str:
    found = {str(dtype).removeprefix("torch.") for dtype in dtypes if dtype.is_floating_point}
    return "+".join(sorted(found)) or "float32"


def read_weights(path: Path, mmap: bool = False, widen: bool = False) -> Weights:
    """A safetensors or torch.save file (read with weights_only: nothing in it runs) as Weights.

    With mmap=True (inspecting: shapes and dtypes without reading the bytes) safetensors files and torch.save zip
    archives are memory-mapped; otherwise both are read into private memory once, for the model to adopt.
    widen=True reads a safetensors file's float16 / bfloat16 tensors as float32 (safetensors_read.read_stored:
    the file's bytes and the float32 weights are never held together); `precision` still names what was stored.
    """
    info = regular_file(path)
    with open(path, "rb") as fh:
        head = fh.read(16)
    keep = not mmap and keeps_mapping()  # the model keeps the mapping unless the operator says not (VIZ_MAP_WEIGHTS=0)
    mapped = True
    stored: Mapping[str, torch.dtype] | None = None  # the dtypes in the file, where they differ from what was read
    if _is_safetensors(head, info.st_size):
        check_safetensors_header(path)  # a million tiny tensors is refused before safetensors reads them
        try:
            if mmap or keep:  # memory-mapped by safetensors (shapes and dtypes, nothing read yet)
                obj: Any = load_file(str(path))
            else:  # loading: read once into private memory, the tensors views of it (model/checkpoints/safetensors_read.py)
                (obj, stored), mapped = read_stored(path, widen), False
        except (SafetensorError, OSError, ValueError, RuntimeError) as err:
            raise CheckpointError(unreadable_safetensors(path.name, err)) from None
    elif looks_like_pickle(head):
        mapped = (mmap or keep) and head.startswith(ZIP_MAGIC)
        obj = load_torch_file(path, mmap=mapped)
    else:
        raise UnknownContent(
            M_(
                "{name} is a file that holds no checkpoint format I know; a checkpoint is a folder holding "
                "model.safetensors, config.json and tokenizer.json, a MarianMT folder, or a PyTorch .pt/.pth "
                "(or .safetensors) file of a state_dict.",
                name=path.name,
            )
        )
    if _tensor_dict(obj):
        state, meta = dict(obj), {}
    elif isinstance(obj, Mapping) and (key := next((k for k in WRAPPER_KEYS if _tensor_dict(obj.get(k))), None)):
        state = dict(obj[key])
        meta = {k: v for k, v in obj.items() if k != key and isinstance(v, (str, int, float, bool))}
    else:
        kind = (
            M_("a dict with keys {keys}", keys=listing(map(str, obj)))
            if isinstance(obj, Mapping)
            else f"a {type(obj).__name__}"
        )
        raise CheckpointError(
            M_(
                "{name} holds {kind}, not a state_dict of tensors (or one under {keys})",
                name=path.name,
                kind=kind,
                keys=" / ".join(WRAPPER_KEYS),
            )
        )
    if all(k.startswith("module.") for k in state):  # saved from a DataParallel / DDP wrapper
        state = {k[len("module.") :]: v for k, v in state.items()}
    dtypes = stored.values() if stored is not None else (t.dtype for t in state.values())
    return Weights(state, meta, _precision(dtypes), mapped and not keep)


class Source:
    """A checkpoint path and everything read from it so far, shared by detect, inspect and load.

    `weights(file)` and `json(name)` read a file the first time they are asked and return the same
    object afterwards. A path that is neither a folder nor a regular file is refused here, before
    anything opens it.
    """

    def __init__(self, path: str | Path, mmap: bool = False):
        self.path = Path(path)
        self.mmap = mmap  # inspecting: map torch files instead of reading them
        if not self.path.exists():
            raise CheckpointError(M_("no checkpoint at {path}", path=str(self.path)))
        self.is_dir = self.path.is_dir()
        if not self.is_dir:
            regular_file(self.path)
        self._weights: dict[tuple[Path, bool], Weights] = {}
        self._json: dict[str, Any] = {}
        self.reads = 0  # files actually read (a test checks that each is read once)

    @property
    def name(self) -> str:
        return self.path.name

    def weights(self, file: str | Path | None = None, widen: bool = False) -> Weights:
        """The weights in `file` (a name inside the folder), or in the path itself when it is a file; widen=True:
        float16 / bfloat16 safetensors read as float32 (see read_weights)."""
        path = self.path if file is None else self.path / file
        if (path, widen) not in self._weights:
            self.reads += 1
            self._weights[path, widen] = read_weights(path, self.mmap, widen)
        return self._weights[path, widen]

    def has(self, name: str) -> bool:
        return self.is_dir and (self.path / name).exists()

    def json(self, name: str) -> Any:
        """The parsed JSON file `name` inside the folder (bounded, see model.checkpoints.safe_io); None when absent."""
        if name not in self._json:
            if not self.has(name):
                return None
            self.reads += 1
            self._json[name] = read_json(self.path / name, origin=f"{self.name}/{name}")
        return self._json[name]
