"""User-supplied vocabularies for checkpoints that carry none: token lists in, `VocabLists` out.

Accepted (one file for both sides, or one file per side):
- JSON: a list of tokens ["<unk>", "<pad>", ...] (id = position); {"source": [...], "target": [...]}
  (also "src"/"tgt"); or a token -> id map {"<unk>": 0, ...} whose ids are exactly 0..n-1.
- Text: one token per line, id = line number from 0 (only the line ending is removed).
- The Annotated Transformer's vocab.pt (torch.save((vocab_src, vocab_tgt))): pickled torchtext
  vocabularies, read with the inert unpickler (nothing in it runs) and searched for their token lists.
- A Python list of strings (for callers that already hold the tokens).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from i18n import M_, NM_

from ..checkpoint import CheckpointError
from ..safe_io import JSON_MAX_BYTES, parse_json, read_bytes
from ..tokenizer_budget import charge
from .safe_pickle import InertObject, load_inert_pickle, looks_like_pickle

VocabSpec = Union[str, "os.PathLike[str]", Sequence[str]]

EXPORT_HINT = M_(
    "Export the token lists where torchtext is installed and give the JSON instead: {code}",
    code="import json, torch; src, tgt = torch.load('vocab.pt'); "
    "json.dump({'source': src.get_itos(), 'target': tgt.get_itos()}, open('vocab.json', 'w'))",
)


@dataclass
class VocabLists:
    """Token lists read from one vocabulary file; a single list serves both sides (source is target)."""

    source: list[str]
    target: list[str]
    origin: str  # the file name (for messages)


def _check(tokens: list[str], origin: str) -> list[str]:
    if not tokens:
        raise CheckpointError(M_("{origin}: the vocabulary is empty", origin=origin))
    bad = [i for i, t in enumerate(tokens) if not isinstance(t, str)]
    if bad:
        raise CheckpointError(
            M_("{origin}: vocabulary entries must be strings; entry {entry} is not", origin=origin, entry=bad[0])
        )
    dupes = [t for t, n in Counter(tokens).items() if n > 1]
    if dupes:  # counted, not quoted: the tokens are the file's contents
        first = tokens.index(dupes[0], tokens.index(dupes[0]) + 1)
        n = len(dupes)
        raise CheckpointError(
            NM_(
                "{origin}: {n} token occurs more than once (the first repeat is entry {first}), which would make ids ambiguous",
                "{origin}: {n} tokens occur more than once (the first repeat is entry {first}), which would make ids ambiguous",
                n,
                origin=origin,
                first=first,
            )
        )
    return list(tokens)


def _from_json(data: Any, origin: str) -> VocabLists:
    if isinstance(data, list):
        tokens = _check(data, origin)
        return VocabLists(tokens, tokens, origin)
    if isinstance(data, dict):
        src = next((data[k] for k in ("source", "src") if k in data), None)
        tgt = next((data[k] for k in ("target", "tgt") if k in data), None)
        if src is not None or tgt is not None:
            if src is None or tgt is None:
                raise CheckpointError(
                    M_("{origin}: a two-sided vocabulary needs both 'source' and 'target' lists", origin=origin)
                )
            return VocabLists(_check(src, origin + " (source)"), _check(tgt, origin + " (target)"), origin)
        if data and all(isinstance(v, int) for v in data.values()):
            ids = sorted(data.values())
            if ids != list(range(len(ids))):
                raise CheckpointError(
                    M_(
                        "{origin}: a token -> id map must use the ids 0..{last} exactly once",
                        origin=origin,
                        last=len(ids) - 1,
                    )
                )
            tokens = [tok for tok, _ in sorted(data.items(), key=lambda kv: kv[1])]
            return VocabLists(tokens, tokens, origin)
    raise CheckpointError(
        M_(
            "{origin}: expected a JSON list of tokens, {example} or a token -> id map",
            origin=origin,
            example='{"source": [...], "target": [...]}',
        )
    )


def _from_text(text: str, origin: str) -> VocabLists:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the file's final newline
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    empty = [i + 1 for i, line in enumerate(lines) if line == ""]
    if empty:
        raise CheckpointError(
            M_(
                "{origin}: line {line} is empty; a vocabulary file holds one token on every line",
                origin=origin,
                line=empty[0],
            )
        )
    tokens = _check(lines, origin)
    return VocabLists(tokens, tokens, origin)


def string_lists(obj: Any, depth: int = 0) -> list[list[str]]:
    """Every non-empty list of strings inside an unpickled structure (InertObject records included)."""
    if depth > 12:
        return []
    if isinstance(obj, list) and obj and all(isinstance(x, str) for x in obj):
        return [obj]
    children: list[Any] = []
    if isinstance(obj, (list, tuple)):
        children = list(obj)
    elif isinstance(obj, dict):
        children = list(obj.values())
    elif isinstance(obj, InertObject):
        children = [obj.state, obj.args, obj.items, obj.elements, obj.kwargs]
    return [found for child in children for found in string_lists(child, depth + 1)]


def torchtext_tokens(obj: Any) -> list[str] | None:
    """The token list (itos) of one pickled vocabulary object, or None.

    torchtext >= 0.12 pickles its C++ vocabulary as ("version", [default index], itos, []); the legacy
    torchtext Vocab keeps an "itos" entry in its __dict__. Either way the longest list of strings is itos.
    """
    if isinstance(obj, InertObject) and isinstance(obj.state, dict) and isinstance(obj.state.get("itos"), list):
        return obj.state["itos"]
    lists = string_lists(obj)
    return max(lists, key=len) if lists else None


def _from_pickle(path: Path) -> VocabLists:
    obj = load_inert_pickle(path)
    origin = path.name
    if isinstance(obj, dict):
        pair = [next((obj[k] for k in keys if k in obj), None) for keys in (("source", "src"), ("target", "tgt"))]
        parts = pair if all(p is not None for p in pair) else [obj]
    elif isinstance(obj, (tuple, list)) and len(obj) == 2 and not all(isinstance(x, str) for x in obj):
        parts = list(obj)
    else:
        parts = [obj]
    found = [torchtext_tokens(p) for p in parts]
    if not found or any(tokens is None for tokens in found):
        raise CheckpointError(
            M_(
                "{origin}: no token list found in this pickled vocabulary (nothing in it was run). {hint}",
                origin=origin,
                hint=EXPORT_HINT,
            )
        )
    source = _check(found[0], origin)
    target = _check(found[-1], origin) if len(found) > 1 else source
    return VocabLists(source, target, origin)


def read_vocabulary(spec: VocabSpec) -> VocabLists:
    """Read a vocabulary file (JSON, text, or a pickled torchtext vocab.pt) or take a list of tokens."""
    if not isinstance(spec, (str, os.PathLike)):
        tokens = _check(list(spec), "the given token list")
        return VocabLists(tokens, tokens, "the given token list")
    path = Path(spec)
    if not path.exists():
        raise CheckpointError(M_("vocabulary file {name} does not exist", name=path.name))
    charge([(path, "json")], path.name)  # a token list costs about what a JSON one does: counted before parsing
    raw = read_bytes(path, JSON_MAX_BYTES)
    if looks_like_pickle(raw[:4]) or path.suffix in (".pt", ".pth", ".pkl"):
        return _from_pickle(path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise CheckpointError(
            M_("{name}: a vocabulary file must be UTF-8 text ({problem})", name=path.name, problem=str(err))
        ) from None
    if path.suffix == ".json":
        return _from_json(parse_json(text, path.name), path.name)
    if text.lstrip()[:1] in ("[", "{"):  # JSON without the .json name; a text file may start with "[PAD]"
        try:
            data = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            data = None
        if data is not None:
            return _from_json(parse_json(text, path.name), path.name)
    return _from_text(text, path.name)
