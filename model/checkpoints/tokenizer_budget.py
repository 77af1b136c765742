"""The memory a tokenizer's files take to read, counted from their sizes before any of them is parsed.

A 57 MB vocab.json (2.5 M entries) cost +950 MB while loading and kept +500 MB, within every byte limit of
safe_io: the bytes were bounded, the structures parsed from them were not. Each kind of file costs a measured
multiple of its size (benchmarks/bench_hostile.py's "huge vocab.json" row measures it; the factors below are
upper bounds of what was measured on CPython 3.11 with tokenizers 0.2x and sentencepiece 0.2):

    json           a token list or token -> id map parsed by json (str and int objects, a dict): 10 bytes a byte
    bpe            the same vocab.json and merges.txt read again by the tokenizers library (Rust maps): 16
    sentencepiece  a sentencepiece model proto (pieces, scores, the normalizer's tables): 8
    tokenizers     a whole tokenizer.json given to the tokenizers library (Tokenizer.from_str, never parsed by json
                   here): 18 (16.4 measured at its peak on a 9.8 MB BPE file of 400,000 tokens and merges)

`charge(files, origin)` adds the files' costs and refuses, before anything is parsed, a folder whose tokenizer
would take more than $VIZ_TOKENIZER_MB (default 256 MB): real tokenizers take far less (BART's vocab.json and
merges.txt: 30 MB by these factors; mBART's 5 MB sentencepiece model: 40 MB).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from i18n import M_, N_

from ..env import positive_int
from .errors import CheckpointError
from .safe_io import regular_file, size_text

ENV = "VIZ_TOKENIZER_MB"
DEFAULT_MB = 256
FACTORS = {
    "json": 10,
    "bpe": 16,
    "sentencepiece": 8,
    "tokenizers": 18,
}  # bytes of memory per byte of file, by how it is read

TOO_LARGE = N_(
    "{origin}: reading its tokenizer files ({files}: {size}) would take about {need} of memory, more than this "
    "server's tokenizer budget of {budget}. A tokenizer for a model of this app's size is a few MB."
)


def budget_from_environment() -> int:
    """$VIZ_TOKENIZER_MB in bytes (default 256 MB); a value that is not a positive integer gives the default."""
    return positive_int(ENV, DEFAULT_MB) * 2**20


def cost(files: Iterable[tuple[str | Path, str]]) -> tuple[int, int]:
    """(bytes on disk, bytes of memory to read them) of (path, kind) pairs; kinds are the keys of FACTORS
    (a file read twice, e.g. by json and by the tokenizers library, is listed twice). Only stat() is called."""
    size = need = 0
    for path, kind in files:
        n = regular_file(path).st_size
        size, need = size + n, need + n * FACTORS[kind]
    return size, need


def charge(files: Iterable[tuple[str | Path, str]], origin: str, budget: int | None = None) -> int:
    """The memory reading these files takes; CheckpointError (a Message saying the sizes) above the budget."""
    files = list(files)
    size, need = cost(files)
    return _charged(size, need, ", ".join(dict.fromkeys(Path(p).name for p, _ in files)), origin, budget)


def charge_bytes(size: int, factor: int, what: str, origin: str, budget: int | None = None) -> int:
    """charge() for bytes already in memory (`what` names them): size x factor, refused above the budget."""
    return _charged(size, size * factor, what, origin, budget)


def _charged(size: int, need: int, names: str, origin: str, budget: int | None) -> int:
    budget = budget_from_environment() if budget is None else budget
    if need > budget:
        raise CheckpointError(
            M_(
                TOO_LARGE,
                origin=origin,
                files=names,
                size=size_text(size),
                need=size_text(need),
                budget=size_text(budget),
            )
        )
    return need
