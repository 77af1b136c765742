"""Reading a safetensors file into the process's own memory in one pass, for a model to adopt (issue 32).

safetensors' load_file maps the file; a model must not keep views of a mapping (a file overwritten later would
change it, or crash the process with SIGBUS), so each tensor used to be copied out of the map: two passes over
the weights and, while loading, the map's pages and the copies both resident (2x the weights at the peak). Here the
data is read once (readinto one buffer) and every tensor is a view of that private buffer: one pass, the weights
once. The header is bounded before (check_safetensors_header) and every entry is checked against the buffer
before a view is made; a tensor whose offset does not fit its element size is copied instead.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from ..env import positive_int

KEEP_MAPPED = "VIZ_MAP_WEIGHTS"

DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64,
    "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool,
}  # fmt: skip


def keeps_mapping() -> bool:
    """The operator's choice (VIZ_MAP_WEIGHTS=1): models keep views of their weights files' memory maps, as
    transformers' from_pretrained does. Loading then costs no copy (a weight's page is read when the forward first
    touches it) and the app processes of one machine share the files' pages, but a file overwritten while the server
    runs changes the loaded model, and a truncated one crashes the server (SIGBUS): for folders nobody rewrites.
    Off by default: the weights are read into the process's own memory (read_private)."""
    return positive_int(KEEP_MAPPED, 0) > 0


def _bad(name: str, what: str) -> ValueError:
    """The reader's (untranslated) detail; source.read_weights names the file around it (unreadable_safetensors)."""
    return ValueError(f"{what} of {name}")


def _read_into(fh, view: memoryview) -> int:
    """Fill `view` from the file (one read() returns at most about 2 GB on Linux); the bytes read, fewer at its end."""
    got = 0
    while got < len(view):
        n = fh.readinto(view[got:])
        if not n:
            break
        got += n
    return got


def read_private(path: Path) -> dict[str, torch.Tensor]:
    """name -> tensor, every tensor a view of one buffer read from the file (no mapping kept); ValueError naming
    what is wrong with a damaged file."""
    with open(path, "rb") as fh:
        size = path.stat().st_size
        head = fh.read(8)
        n = int.from_bytes(head, "little") if len(head) == 8 else -1
        if not 0 < n <= size - 8:
            raise _bad(path.name, "header length")
        try:
            header = json.loads(fh.read(n))
        except (UnicodeDecodeError, ValueError):
            raise _bad(path.name, "header") from None
        data = torch.empty(size - 8 - n, dtype=torch.uint8)
        if _read_into(fh, memoryview(data.numpy())) != data.numel():
            raise _bad(path.name, "the data is truncated")
    if not isinstance(header, dict):
        raise _bad(path.name, "header")
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype = DTYPES[entry["dtype"]]
            shape = [int(s) for s in entry["shape"]]
            start, end = (int(o) for o in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise _bad(path.name, "an entry of its header") from None
        itemsize = torch.empty((), dtype=dtype).element_size()
        if min(shape, default=0) < 0 or not 0 <= start <= end <= data.numel():
            raise _bad(path.name, "an entry outside the file")
        if end - start != math.prod(shape) * itemsize:
            raise _bad(path.name, "an entry whose size does not match its shape")
        raw = data[start:end]
        if start % itemsize:  # not aligned for a view of this element type: a copy of its own
            raw = raw.clone()
        out[name] = raw.view(dtype).reshape(shape)
    return out
