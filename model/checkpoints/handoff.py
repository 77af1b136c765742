"""A visitor's checkpoint read in one process and used in another: the reader's checked result, as files to map.

The app reads a checkpoint that a visitor brought (an allowed server folder, an upload) in a limited worker
(ui/serving/workers.py): every config and tokenizer file, the weights' headers, the tokenizer's load-time probes
(model/text/bounded.py) and the conversion to this project's model all run there, under the worker's memory, CPU
and deadline, and stop when the visitor leaves. `check_checkpoint` is what the worker runs; it writes into a private
folder the server made:

    weights.safetensors   every parameter as the model holds it (float32; each tied tensor once)
    tables.safetensors    the sinusoid tables the model holds (a checkpoint may store its own)

and returns a `Checked` record: that folder, the config as a dict of numbers and strings, and the tokenizer as
bytes (pickled: the libraries' own serializations, the tokenizers library's JSON or sentencepiece's model proto).

`open_checked` runs in the server, and parses nothing a visitor wrote: the config is checked again by
TransformerConfig's own limits; the tokenizer's bytes are counted against the tokenizer budget by their size (the
costliest factor of tokenizer_budget) before they are unpickled; the weights are memory-mapped (never copied) after
their header is bounded and every key and shape checked against the config. The mapping stays valid when the folder
is deleted, which the caller does at once. The tokenizer it returns is fenced: its library's encoding runs in a
helper process with a time limit per call (model/text/fence.py); `unfence` stops the helper when the model goes.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file

from i18n import M_

from ..network.config import TransformerConfig
from ..network.positional import SinusoidalPositionalEncoding
from ..network.transformer import Transformer
from ..text.tokenizer import Tokenizer
from .checkpoint import CheckpointError, load_config, materialize, read_native_weights, skeleton, unique_state
from .loading import load_checkpoint
from .safe_io import check_safetensors_header
from .tokenizer_budget import FACTORS, charge_bytes

WEIGHTS, TABLES = "weights.safetensors", "tables.safetensors"
SIDES = {"src_pe": "source", "tgt_pe": "target"}  # the model's sinusoid modules, as materialize() names their tables


@dataclass(frozen=True)
class Checked:
    """What the worker hands the server: the folder of the checked files, the config, the pickled tokenizer."""

    folder: str
    config: dict[str, Any]
    tokenizer: bytes
    origin: str  # the checkpoint's name (its folder or file name), for messages


def check_checkpoint(path: str | Path, folder: str | Path, **options: Any) -> Checked:
    """In the worker: load the checkpoint at `path` (every format of the registry, options as load_checkpoint's),
    then write what the server maps into `folder` (which must exist, private to this process)."""
    model, tokenizer = load_checkpoint(path, **options)
    out = Path(folder)
    save_file(unique_state(model), str(out / WEIGHTS))
    tables = {
        SIDES[name]: module.table.detach().contiguous()
        for name, module in model.named_modules()
        if isinstance(module, SinusoidalPositionalEncoding) and name in SIDES
    }
    if "source" in tables and "target" in tables and tables["target"].data_ptr() == tables["source"].data_ptr():
        del tables["target"]  # one table for both sides (as the model holds it): stored once, shared again on open
    if tables:
        save_file(tables, str(out / TABLES))
    blob = pickle.dumps(tokenizer, protocol=pickle.HIGHEST_PROTOCOL)
    return Checked(str(out), model.config.to_dict(), blob, Path(path).name)


class _TokenizerUnpickler(pickle.Unpickler):
    """Unpickles what check_checkpoint pickled, and nothing else: only this project's tokenizer classes, the
    tokenizers and sentencepiece libraries' own objects, and plain containers may be named; any other global (a
    function to call, a class of another module) is refused."""

    PLAIN = {
        ("builtins", n) for n in ("list", "dict", "set", "frozenset", "tuple", "bytes", "bytearray", "str", "int",
                                   "float", "bool", "complex", "slice", "range")
    } | {("collections", "OrderedDict"), ("collections", "Counter"), ("collections", "defaultdict"),
         ("copyreg", "_reconstructor"), ("builtins", "object"), ("re", "_compile"), ("enum", "Enum")}  # fmt: skip

    def find_class(self, module: str, name: str):
        if (
            (module, name) in self.PLAIN
            or module.split(".")[0] in ("tokenizers", "sentencepiece")
            or (module.startswith("model.") and not name.startswith("_"))
        ):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a checked tokenizer")


def _unpickle_tokenizer(blob: bytes) -> Tokenizer:
    import io

    try:
        tokenizer = _TokenizerUnpickler(io.BytesIO(blob)).load()
    except (pickle.UnpicklingError, EOFError, AttributeError, ImportError) as err:
        raise CheckpointError(M_("The checked tokenizer could not be read back: {problem}", problem=str(err))) from err
    if not isinstance(tokenizer, Tokenizer):
        raise CheckpointError(M_("The checked tokenizer could not be read back: {problem}", problem="not a tokenizer"))
    return tokenizer


def open_checked(checked: Checked) -> tuple[Transformer, Tokenizer]:
    """In the server: the model (its weights mapped from the worker's file) and the tokenizer, nothing a visitor
    wrote parsed here (module docstring); CheckpointError when anything is out of its bounds."""
    folder = Path(checked.folder)
    config: TransformerConfig = load_config(folder, checked.config)  # the config's limits, as for any folder
    charge_bytes(len(checked.tokenizer), max(FACTORS.values()), "tokenizer", checked.origin)
    tokenizer = _unpickle_tokenizer(checked.tokenizer)
    model = skeleton(config)
    stored = read_native_weights(model, folder / WEIGHTS, mapped=True)
    tables = None
    if (folder / TABLES).exists():
        check_safetensors_header(folder / TABLES)
        tables = {k: v for k, v in load_file(str(folder / TABLES)).items() if k in SIDES.values()}
        tables.setdefault("target", tables.get("source"))
    fence(tokenizer)
    with torch.no_grad():
        return materialize(model, stored, copy=False, tables=tables), tokenizer


def _library_vocabs(tokenizer: Tokenizer) -> list:
    """The tokenizer's vocabularies run by a native library (those with fence()), each once."""
    return [v for v in {id(v): v for v in (tokenizer.source, tokenizer.target)}.values() if hasattr(v, "fence")]


def fence(tokenizer: Tokenizer) -> None:
    """Run the tokenizer's native libraries in helper processes with a time limit per call (model/text/fence.py)."""
    for vocab in _library_vocabs(tokenizer):
        vocab.fence()


def unfence(tokenizer: Tokenizer) -> None:
    """Stop the tokenizer's helper processes (a released model)."""
    for vocab in _library_vocabs(tokenizer):
        vocab.unfence()
