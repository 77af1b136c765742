"""The one registry of checkpoint formats, and the protocol every format module implements.

A format is one module with:
    NAME: str          short name (format=..., FORMATS keys, error messages)
    TITLE: str         human-readable name (the sidebar caption, docs)
    detect(src: Source) -> bool                      does this path hold this format? (cheap: shapes, not bytes)
    inspect(src: Source) -> CheckpointInfo           what the app must ask before loading (heads, vocabularies)
    load(src: Source, options: LoadOptions) -> (Transformer, Tokenizer)   the model, in eval mode
A `Source` (source.py) carries the path and caches every file it reads, so detect, inspect and load in
one call read each file once. Detection tries REGISTRY in order; the first format that says yes wins.

Adding a format: write model/checkpoints/formats/<name>.py with the five names above (a state_dict format can
delegate its three functions to state_dicts.py, as annotated.py does; a Llama-like Hugging Face family is a table
of hf_decoder.py) and add its name to MODULES.
The sidebar, the error messages and the docs (`python -m model.checkpoints.formats`) read this list.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from i18n import M_, join_messages, message_of

from ...network.transformer import Transformer
from ...registry import Provides, Registry
from ...text.tokenizer import Tokenizer
from ..checkpoint import CheckpointError
from .common import listing
from .source import CheckpointInfo, LoadOptions, Source, UnknownContent
from .vocab_files import VocabSpec

# the format modules of this package, in detection order: a new format (a new Hugging Face family) is one line here
MODULES = (
    "marian",
    "t5",
    "bart",
    "gpt2",
    "llama",
    "mistral",
    "gemma2",
    "gemma3",
    "phi3",
    "olmo2",
    "qwen3",
    "bert",
    "native",
    "annotated",
    "gordic",
    "torch_tutorial",
)
FORMAT_REGISTRY = Registry(__package__, MODULES, Provides(("NAME", "TITLE", "detect", "inspect", "load")))
REGISTRY: tuple[ModuleType, ...] = tuple(FORMAT_REGISTRY.values())  # the format modules, in detection order
FORMATS: dict[str, str] = {fmt.NAME: fmt.TITLE for fmt in REGISTRY}  # NAME -> title


def hugging_face_families() -> str:
    """ "MarianMT, T5 and flan-T5, BART, mBART": the Hugging Face model types the formats with MODEL_TYPES open."""
    return join_messages(", ", (M_(title) for fmt in REGISTRY for title in getattr(fmt, "MODEL_TYPES", {}).values()))


def known_formats() -> str:
    """ "name: title; ..." for error messages."""
    return join_messages("; ", (M_("{name}: {title}", name=name, title=title) for name, title in FORMATS.items()))


def by_name(name: str) -> ModuleType:
    for fmt in REGISTRY:
        if fmt.NAME == name:
            return fmt
    raise CheckpointError(M_("unknown format {name}; known: {known}", name=repr(name), known=", ".join(FORMATS)))


def detect(src: Source) -> ModuleType:
    """The first registered format that recognises `src`; a CheckpointError listing the known ones otherwise."""
    try:
        for fmt in REGISTRY:
            if fmt.detect(src):
                return fmt
    except UnknownContent as err:
        raise CheckpointError(
            M_("{problem} Known formats: {known}", problem=message_of(err), known=known_formats())
        ) from None
    if src.is_dir and not src.has("config.json"):  # no config.json, no model.safetensors
        raise CheckpointError(
            M_(
                "{name} is a folder that holds none of the checkpoint formats I know: {known}",
                name=src.name,
                known=known_formats(),
            )  # fmt: skip
        )
    if src.is_dir:  # only a Hugging Face config.json of another model type gets here
        raise CheckpointError(
            M_(
                "{name}/config.json describes a Hugging Face model of another kind (not named here); "
                "of Hugging Face models these families can be imported: {families}",
                name=src.name,
                families=hugging_face_families(),
            )
        )
    raise CheckpointError(
        M_(
            "{name}: a state_dict that matches none of the formats I know ({known}); its first keys: {keys}",
            name=src.name,
            known=known_formats(),
            keys=listing(src.weights().state, 6),
        )
    )


def resolve(src: Source, format: str | None) -> ModuleType:
    """The named format (checked against the contents) or the detected one."""
    if format is None:
        return detect(src)
    fmt = by_name(format)
    if not fmt.detect(src):
        found = detect(src)
        raise CheckpointError(
            M_(
                "{name} does not look like {format}; its contents are those of {found}",
                name=src.name,
                format=fmt.TITLE,
                found=found.TITLE,
            )
        )
    return fmt


def detect_format(path: str | Path) -> str:
    """The format NAME of a checkpoint folder or file; CheckpointError when none fits."""
    return detect(Source(path, mmap=True)).NAME


def inspect(path: str | Path) -> CheckpointInfo:
    src = Source(path, mmap=True)  # names, shapes and dtypes only
    return resolve(src, None).inspect(src)


def load(
    path: str | Path, format: str | None = None, **options: VocabSpec | int | None
) -> tuple[Transformer, Tokenizer]:
    """(model in eval mode, tokenizer) of any registered format; each file is read once."""
    src = Source(path)
    return resolve(src, format).load(src, LoadOptions(**options))
