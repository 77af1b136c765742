"""Reading a safetensors file into the process's own memory in one pass, for a model to adopt.

By default (the library) a model keeps views of safetensors' memory map of its file, as transformers'
from_pretrained does (keeps_mapping): loading reads nothing. VIZ_MAP_WEIGHTS=0 reads the weights privately instead,
and the app's server sets it unless its operator chose (ui/serving/threads.start_server_once): a mapped file overwritten
later would change the model, a truncated one crash the whole server and every visitor's session with SIGBUS. The copy out of the map this replaced cost two passes over the weights and,
while loading, the map's pages and the copies both resident (2x the weights at the peak). Here the data is read once (readinto one buffer) and every tensor is a view of that private buffer: one pass, the weights
once. The header is bounded before (check_safetensors_header) and every entry is checked against the file's size
before anything is allocated; a tensor whose offset does not fit its element size is copied instead. With widen=True
(the Hugging Face formats) float16 / bfloat16 tensors are widened to float32 while they are read, a chunk at a time,
into the one buffer: the float32 weights at the peak, not the file's bytes beside them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import torch

from ..env import switch

KEEP_MAPPED = "VIZ_MAP_WEIGHTS"

DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16, "I64": torch.int64,
    "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8, "BOOL": torch.bool,
}  # fmt: skip


def keeps_mapping() -> bool:
    """Whether models keep views of their weights files' memory maps, as transformers' from_pretrained does: on
    unless the operator sets VIZ_MAP_WEIGHTS=0. Loading then costs no copy (a weight's page is read when the forward
    first touches it) and the app processes of one machine share the files' pages, but a file overwritten in place
    while the server runs changes the loaded model (the folder's stamp changes, so the next run loads it again), and
    a truncated one crashes the process (SIGBUS). VIZ_MAP_WEIGHTS=0 reads the weights into the process's own memory
    once (read_private): the app's server default (ui/serving/threads.start_server_once), where a training run may rewrite
    an allowed folder while a room uses it; its operator may set VIZ_MAP_WEIGHTS=1 for folders nobody rewrites."""
    return switch(KEEP_MAPPED, True)


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
    return read_stored(path)[0]


Entry = tuple[str, torch.dtype, list[int], int, int]  # name, stored dtype, shape, start, end (in the data)
WIDENED = (torch.float16, torch.bfloat16)  # widen=True reads these as float32
CHUNK = 16 * 2**20  # bytes of a half-precision tensor read and widened at a time


def _entries(name: str, header, data_size: int) -> list[Entry]:
    """The header's tensors, each checked against the data's size (before anything is allocated)."""
    if not isinstance(header, dict):
        raise _bad(name, "header")
    out = []
    for key, entry in header.items():
        if key == "__metadata__":
            continue
        try:
            dtype = DTYPES[entry["dtype"]]
            shape = [int(s) for s in entry["shape"]]
            start, end = (int(o) for o in entry["data_offsets"])
        except (KeyError, TypeError, ValueError):
            raise _bad(name, "an entry of its header") from None
        if min(shape, default=0) < 0 or not 0 <= start <= end <= data_size:
            raise _bad(name, "an entry outside the file")
        if end - start != math.prod(shape) * torch.empty((), dtype=dtype).element_size():
            raise _bad(name, "an entry whose size does not match its shape")
        out.append((key, dtype, shape, start, end))
    return out


def _layout(entries: list[Entry]) -> tuple[list[int], int]:
    """Where each entry goes in one buffer when float16 / bfloat16 ones are kept as float32 (twice their bytes),
    every offset a multiple of 8; and the buffer's size."""
    offsets, total = [], 0
    for _, dtype, _, start, end in entries:
        total = -(-total // 8) * 8
        offsets.append(total)
        total += (end - start) * (2 if dtype in WIDENED else 1)
    return offsets, total


def read_stored(path: Path, widen: bool = False) -> tuple[dict[str, torch.Tensor], dict[str, torch.dtype]]:
    """(name -> tensor, name -> the dtype stored in the file); ValueError naming what is wrong with a damaged file.

    Every tensor is a view of one buffer read from the file. widen=False: the file's data as it is, in one read.
    widen=True: float16 and bfloat16 tensors are read a chunk at a time and kept as float32 in that buffer (what
    the model computes in), so loading a half-precision file holds the float32 weights and one chunk at its peak,
    not the file's bytes beside them; entries that share bytes (a crafted header) are read as they are instead."""
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
        entries = _entries(path.name, header, size - 8 - n)
        stored = {key: dtype for key, dtype, *_ in entries}
        if widen and any(dtype in WIDENED for _, dtype, *_ in entries):
            offsets, total = _layout(entries)
            if total <= 2 * (size - 8 - n) + 8 * len(entries):  # no bytes shared: as large as the model's weights
                return _read_widened(fh, path.name, 8 + n, entries, offsets, total), stored
        data = torch.empty(size - 8 - n, dtype=torch.uint8)
        if _read_into(fh, memoryview(data.numpy())) != data.numel():
            raise _bad(path.name, "the data is truncated")
    out = {}
    for key, dtype, shape, start, end in entries:
        raw = data[start:end]
        if start % torch.empty((), dtype=dtype).element_size():  # not aligned for a view of this type: its own copy
            raw = raw.clone()
        out[key] = raw.view(dtype).reshape(shape)
    return out, stored


def _read_widened(fh, name: str, base: int, entries: list[Entry], offsets: list[int], total: int):
    """The entries read into one buffer of `total` bytes at `offsets`, float16 / bfloat16 widened to float32."""
    data = torch.empty(total, dtype=torch.uint8)
    scratch = torch.empty(0, dtype=torch.uint8)
    out = {}
    for (key, dtype, shape, start, end), at in sorted(zip(entries, offsets), key=lambda e: e[0][3]):
        size = end - start
        fh.seek(base + start)
        if dtype not in WIDENED:
            if _read_into(fh, memoryview(data[at : at + size].numpy())) != size:
                raise _bad(name, "the data is truncated")
            out[key] = data[at : at + size].view(dtype).reshape(shape)
            continue
        target = data[at : at + 2 * size].view(torch.float32)  # (elements,)
        if scratch.numel() < min(size, CHUNK):
            scratch = torch.empty(min(size, CHUNK), dtype=torch.uint8)
        for first in range(0, size, CHUNK):
            k = min(CHUNK, size - first)
            if _read_into(fh, memoryview(scratch[:k].numpy())) != k:
                raise _bad(name, "the data is truncated")
            target[first // 2 : (first + k) // 2].copy_(scratch[:k].view(dtype))
        out[key] = target.reshape(shape)
    return out
