"""Hostile .zip files for the upload tests: built with zipfile, then their headers changed byte by byte."""

from __future__ import annotations

import io
import struct
import zipfile

CENTRAL, LOCAL = b"PK\x01\x02", b"PK\x03\x04"


def _patch(data: bytes, signature: bytes, offset: int, fmt: str, value: int) -> bytes:
    """Set one field (struct format fmt, at offset from each header with this signature) in every such header."""
    out = bytearray(data)
    start = out.find(signature)
    while start >= 0:
        struct.pack_into(fmt, out, start + offset, value)
        start = out.find(signature, start + 4)
    return bytes(out)


def plain_zip(files: dict[str, bytes], method: int = zipfile.ZIP_STORED) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=method) as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buffer.getvalue()


def bad_crc_zip(payload: bytes = b"0123456789" * 100) -> bytes:
    data = bytearray(plain_zip({"ckpt/config.json": payload}))
    at = data.find(payload)
    data[at + 5] ^= 0xFF  # the stored bytes no longer match the CRC in the headers
    return bytes(data)


def encrypted_zip() -> bytes:
    """A member whose headers say 'encrypted' (general purpose flag bit 0)."""
    data = plain_zip({"ckpt/config.json": b"{}"})
    return _patch(_patch(data, CENTRAL, 8, "<H", 0x1), LOCAL, 6, "<H", 0x1)


def unknown_method_zip(method: int = 99) -> bytes:
    """A member compressed with a method number zipfile does not know (99 is AES in WinZip's scheme)."""
    data = plain_zip({"ckpt/config.json": b"{}"})
    return _patch(_patch(data, CENTRAL, 10, "<H", method), LOCAL, 8, "<H", method)


def ratio_bomb_zip(mb: int = 8) -> bytes:
    """mb MB of zeros deflated to a few KB: a ratio of about 1000."""
    return plain_zip({"ckpt/model.safetensors": bytes(mb * 2**20)}, zipfile.ZIP_DEFLATED)


def huge_declared_zip(size: int = 3 * 2**30) -> bytes:
    """A small member whose central directory declares `size` bytes uncompressed (and as many compressed)."""
    data = plain_zip({"ckpt/model.safetensors": b"x" * 64})
    return _patch(_patch(data, CENTRAL, 20, "<I", size), CENTRAL, 24, "<I", size)


def many_members_zip(n: int = 500) -> bytes:
    return plain_zip({f"ckpt/f{i}.txt": b"x" for i in range(n)})
