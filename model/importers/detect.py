"""Which format a path holds, judged from its contents (never from its name alone).

    folder with config.json that has "model_type": "marian"   -> "marian"
    folder otherwise                                           -> "transformer-viz" (this project's own)
    file: safetensors, or a torch.save archive / pickle read with weights_only=True, holding a
          state_dict (bare, or under "state_dict" / "model_state_dict" / "model" beside metadata)
          whose key names match one of STATE_FORMATS                -> that format's NAME
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file

from ..checkpoint import CONFIG, TOKENIZER, WEIGHTS, CheckpointError
from . import annotated, gordic, torch_tutorial
from .common import listing
from .marian import TITLE as MARIAN_TITLE
from .marian import hf_model_type
from .safe_pickle import load_torch_file, looks_like_pickle

NATIVE = "transformer-viz"
MARIAN = "marian"
STATE_FORMATS = {mod.NAME: mod for mod in (annotated, gordic, torch_tutorial)}
TITLES = {
    NATIVE: "this project's checkpoint folder",
    **{name: mod.TITLE for name, mod in STATE_FORMATS.items()},
    MARIAN: MARIAN_TITLE,
}
WRAPPER_KEYS = ("state_dict", "model_state_dict", "model")


def known_formats() -> str:
    return "; ".join(f"{name}: {title}" for name, title in TITLES.items())


def _is_safetensors(head: bytes, size: int) -> bool:
    if len(head) < 9:
        return False
    (header_len,) = struct.unpack("<Q", head[:8])
    return 0 < header_len <= size - 8 and head[8:9] == b"{"


def _not_a_checkpoint(path: Path) -> CheckpointError:
    return CheckpointError(
        f"{path} is a file that holds no checkpoint format I know; a checkpoint is a folder holding {WEIGHTS}, "
        f"{CONFIG} and {TOKENIZER}, a MarianMT folder, or a PyTorch .pt/.pth (or .safetensors) file of a state_dict. "
        f"Known formats: {known_formats()}"
    )


def _tensor_dict(obj: Any) -> bool:
    return isinstance(obj, Mapping) and bool(obj) and all(isinstance(v, torch.Tensor) for v in obj.values())


def read_state(path: Path) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
    """(state_dict, metadata beside it) from a weights file; nothing in it is executed."""
    with open(path, "rb") as fh:
        head = fh.read(16)
    size = path.stat().st_size
    if _is_safetensors(head, size):
        try:
            obj: Any = load_file(str(path))
        except (SafetensorError, OSError, ValueError, RuntimeError) as err:
            raise CheckpointError(f"{path.name} is not a readable safetensors file ({err})") from None
    elif looks_like_pickle(head):
        obj = load_torch_file(path)
    else:
        raise _not_a_checkpoint(path)
    if _tensor_dict(obj):
        state, meta = dict(obj), {}
    elif isinstance(obj, Mapping) and (key := next((k for k in WRAPPER_KEYS if _tensor_dict(obj.get(k))), None)):
        state = dict(obj[key])
        meta = {k: v for k, v in obj.items() if k != key and isinstance(v, (str, int, float, bool))}
    else:
        kind = f"a dict with keys {listing(map(str, obj))}" if isinstance(obj, Mapping) else f"a {type(obj).__name__}"
        raise CheckpointError(f"{path.name} holds {kind}, not a state_dict of tensors (or one under {' / '.join(WRAPPER_KEYS)})")
    if all(k.startswith("module.") for k in state):  # saved from a DataParallel / DDP wrapper
        state = {k[len("module."):]: v for k, v in state.items()}
    return state, meta


def state_format(state: Mapping[str, torch.Tensor], name: str) -> str:
    """The NAME of the format whose key names the state_dict uses, or a refusal listing the known ones."""
    for fmt, mod in STATE_FORMATS.items():
        if mod.matches(state):
            return fmt
    raise CheckpointError(
        f"{name}: a state_dict that matches none of the formats I know ({known_formats()}); its first keys: {listing(state, 6)}"
    )


def folder_format(folder: Path) -> str:
    model_type = hf_model_type(folder) if (folder / CONFIG).is_file() else None
    if model_type is None:
        return NATIVE
    if model_type == MARIAN:
        return MARIAN
    raise CheckpointError(f"{folder.name}/{CONFIG} describes a Hugging Face {model_type!r} model; of Hugging Face models only MarianMT ('marian') folders can be imported")


def detect_format(path: str | Path) -> str:
    """The format NAME of a checkpoint folder or file (see the module docstring); CheckpointError when none fits."""
    path = Path(path)
    if not path.exists():
        raise CheckpointError(f"no checkpoint at {path}")
    if path.is_dir():
        return folder_format(path)
    state, _ = read_state(path)
    return state_format(state, path.name)
