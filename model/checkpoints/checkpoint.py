"""This project's checkpoint format: a folder of three plain files, no pickled code anywhere.

    model.safetensors   the weights (each tied tensor stored once, under its first name)
    config.json         TransformerConfig as JSON
    tokenizer.json      the source and target vocabularies (see tokenizer.py)
    card.json           optional: free-form metadata (task, training command, accuracy, ...)

Every problem on loading raises CheckpointError naming the file, the key and the shapes involved.
The readers here are the building blocks of formats/ (formats/native.py is this folder as a format);
load_checkpoint, which opens any format, is in loading.py above both.
"""

from __future__ import annotations

import contextvars
import dataclasses
import functools
import json
from pathlib import Path
from typing import Any

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file
from torch import nn

from i18n import M_, join_messages, message_of

from ..network.config import TransformerConfig
from ..network.positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding, sinusoidal_encoding
from ..network.transformer import Transformer
from ..text.tokenizer import Tokenizer
from .errors import CheckpointError
from .safe_io import check_safetensors_header, read_json
from .safetensors_read import keeps_mapping, read_private
from .tokenizer_budget import charge

WEIGHTS, CONFIG, TOKENIZER, CARD = "model.safetensors", "config.json", "tokenizer.json", "card.json"


def unique_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """The state dict with each shared tensor kept once, under the first name it appears with."""
    seen: set[tuple[int, int, tuple[int, ...]]] = set()
    out = {}
    for name, tensor in model.state_dict().items():
        ident = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tuple(tensor.shape))
        if ident in seen:
            continue
        seen.add(ident)
        out[name] = tensor.detach().contiguous().cpu()
    return out


def save_checkpoint(
    model: Transformer, tokenizer: Tokenizer, path: str | Path, card: dict[str, Any] | None = None
) -> Path:
    """Write the checkpoint folder (created if needed) and return its path."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    save_file(unique_state(model), str(folder / WEIGHTS), metadata={"format": "transformer-viz/1"})
    (folder / CONFIG).write_text(json.dumps(model.config.to_dict(), indent=1), encoding="utf-8")
    tokenizer.save(folder / TOKENIZER)
    if card is not None:
        (folder / CARD).write_text(json.dumps(card, indent=1, ensure_ascii=False), encoding="utf-8")
    return folder


def missing_file(path: Path) -> CheckpointError:
    """The error for a file a checkpoint folder lacks, named with its folder."""
    return CheckpointError(M_("{name} is missing from {folder}", name=path.name, folder=str(path.parent)))


def _read_json(path: Path) -> Any:
    """A bounded JSON file of the folder (see safe_io); a missing one is named with its folder."""
    if not path.exists():
        raise missing_file(path)
    return read_json(path)


def load_config(folder: Path, data: Any = None) -> TransformerConfig:
    """TransformerConfig from the folder's config.json (or its already parsed `data`), limits checked."""
    try:
        return TransformerConfig.from_dict(_read_json(folder / CONFIG) if data is None else data)
    except (TypeError, ValueError) as err:
        if isinstance(err, CheckpointError):
            raise
        raise CheckpointError(M_("{file}: {problem}", file=CONFIG, problem=message_of(err))) from err


def load_tokenizer(folder: Path) -> Tokenizer:
    try:
        if (folder / TOKENIZER).exists():  # its token list parsed by json: counted before it is read
            charge([(folder / TOKENIZER, "json")], folder.name)
        data = _read_json(folder / TOKENIZER)
        if not isinstance(data, dict):
            raise CheckpointError(M_("{file} must hold a JSON object", file=TOKENIZER))
        return Tokenizer.from_dict(data)
    except (TypeError, ValueError, KeyError) as err:
        if isinstance(err, CheckpointError):
            raise
        raise CheckpointError(M_("{file}: {problem}", file=TOKENIZER, problem=message_of(err))) from err


def skeleton(config: TransformerConfig) -> Transformer:
    """The Transformer's structure with uninitialised parameters (torch.empty: memory reserved, not touched)
    and no random initialisation, which costs more than reading a base model's file. Its parameters say
    which tensors to load and their shapes; materialize() then replaces them.

    (Not the meta device: the first meta operation in a process imports torch's Python decompositions,
    several seconds. Not a TorchFunctionMode that drops the fills either: it sees every torch call of the
    construction, and cost a base model's load more than its skipped work saved.)"""
    sinusoidal = config.positional == "sinusoidal"
    token = _SKIP_INIT.set(True)
    try:  # sinusoid tables are built (or taken from the file) by materialize, not twice
        model = Transformer(dataclasses.replace(config, max_len=1) if sinusoidal else config)
    finally:
        _SKIP_INIT.reset(token)
    model.config = config
    for module in model.modules():
        if isinstance(module, SinusoidalPositionalEncoding):
            module.max_len = config.max_len  # its table is a placeholder until materialize()
    return model


# Inside skeleton() (this context only: other threads and sessions are not affected) the modules' own
# reset_parameters, which draw every parameter at random, return at once. Every module of the Transformer that
# initialises a parameter does it there: torch's Linear, Embedding and LayerNorm, and this project's
# Transformer and LearnedPositionalEncoding (StdNorm's ones and zeros cost nothing).
_SKIP_INIT: contextvars.ContextVar[bool] = contextvars.ContextVar("skeleton_skips_init", default=False)
_INITIALISED = (nn.Linear, nn.Embedding, nn.LayerNorm, Transformer, LearnedPositionalEncoding)


def _skippable(cls: type[nn.Module]) -> None:
    """Wrap cls.reset_parameters once so that it does nothing inside skeleton()."""
    original = cls.__dict__["reset_parameters"]
    if getattr(original, "skipped_in_skeleton", False):
        return

    @functools.wraps(original)
    def reset_parameters(self, *args, **kwargs):
        if _SKIP_INIT.get():
            return None
        return original(self, *args, **kwargs)

    reset_parameters.skipped_in_skeleton = True
    cls.reset_parameters = reset_parameters


for _cls in _INITIALISED:
    _skippable(_cls)


@functools.lru_cache(maxsize=1)  # read-only: one table is kept (10 MB at 5000 x 512); both sides share it
def sinusoid(max_len: int, d_model: int, base: float, layout: str) -> torch.Tensor:
    """The exact sinusoid table, computed once for both sides of a model and for checking a stored table."""
    return sinusoidal_encoding(max_len, d_model, base, layout)


def expected_shapes(model: nn.Module) -> dict[str, tuple[int, ...]]:
    """Name -> shape of every parameter, each tied parameter once under its first name (as save_checkpoint stores it)."""
    return {name: tuple(p.shape) for name, p in model.named_parameters()}


def _own(tensor: torch.Tensor, copy: bool, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """CPU storage of `dtype` (float32, or bfloat16 kept as stored) that belongs to the model: another type is cast
    (a new tensor anyway); a tensor of a memory-mapped file is copied (a file overwritten later must not change, or
    crash, a loaded model)."""
    tensor = tensor.detach()
    if tensor.dtype != dtype:
        return tensor.to(dtype)
    return tensor.clone() if copy else tensor


def materialize(
    model: Transformer,
    tensors: dict[str, torch.Tensor],
    *,
    copy: bool,
    tables: dict[str, torch.Tensor] | None = None,
    dtype: torch.dtype = torch.float32,
) -> Transformer:
    """Give a skeleton's parameters the loaded tensors (names as expected_shapes; shapes checked by the caller).

    copy=False adopts tensors the loader read into private memory (no second pass over a base model's
    246 MB); copy=True copies them (memory-mapped files). dtype: the float type of every parameter (bfloat16: a
    bfloat16 checkpoint kept as stored, hf_common.weights; positional tables stay float32). Sinusoid tables (non-persistent buffers) come
    from `tables` ("source"/"target": a checkpoint's own stored table) or are computed.
    """
    real: dict[int, nn.Parameter] = {}
    for prefix, module in model.named_modules():
        for name, p in list(module._parameters.items()):
            if p is not None:
                if id(p) not in real:
                    real[id(p)] = nn.Parameter(
                        _own(tensors[f"{prefix}.{name}" if prefix else name], copy, dtype),
                        requires_grad=p.requires_grad,
                    )
                module._parameters[name] = real[id(p)]
        if isinstance(module, SinusoidalPositionalEncoding):
            stored = (tables or {}).get({"src_pe": "source", "tgt_pe": "target"}.get(prefix, ""))
            c = model.config
            module.table = (
                _own(stored[: module.max_len], copy)
                if stored is not None
                else sinusoid(c.max_len, c.d_model, c.pe_base, c.pe_layout).clone()
            )
    return model.eval()


def read_native_weights(model: Transformer, path: Path, *, mapped: bool | None = None) -> dict[str, torch.Tensor]:
    """The safetensors file's tensors after checking every key and shape against the model (a skeleton will do).

    Memory-mapped: the model adopts views of the mapping as they are (materialize(copy=False)), as transformers
    does. Where the operator sets VIZ_MAP_WEIGHTS=0 (safetensors_read.keeps_mapping) read once into the process's
    own memory instead (safetensors_read.read_private), so that a file overwritten later cannot change or crash it.
    mapped=True maps it whatever the setting: a file nobody else writes (model.checkpoints.handoff's)."""
    if not path.exists():
        raise missing_file(path)
    check_safetensors_header(path)  # regular file, bounded header and tensor count
    try:
        stored = load_file(str(path)) if (keeps_mapping() if mapped is None else mapped) else read_private(path)
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise CheckpointError(unreadable_safetensors(path.name, err)) from err
    expected = expected_shapes(model)
    missing = [k for k in expected if k not in stored]
    unexpected = [k for k in stored if k not in expected]
    wrong = [
        M_("{key}: file has {found}, the config needs {needed}", key=k, found=tuple(stored[k].shape), needed=v)
        for k, v in expected.items()
        if k in stored and tuple(stored[k].shape) != v
    ]
    problems = []
    if missing:
        problems.append(M_("missing keys: {keys}", keys=", ".join(missing[:8]) + _more(missing)))
    if unexpected:
        problems.append(M_("unexpected keys: {keys}", keys=", ".join(unexpected[:8]) + _more(unexpected)))
    if wrong:
        problems.append(M_("wrong shapes: {shapes}", shapes=join_messages("; ", wrong[:8])))
    if problems:
        raise CheckpointError(
            M_(
                "{name} does not match {config}: {problems}",
                name=path.name,
                config=CONFIG,
                problems=join_messages(" | ", problems),
            )
        )
    return stored


def _more(items: list, shown: int = 8) -> str:
    return f" (+{len(items) - shown} more)" if len(items) > shown else ""


def unreadable_safetensors(name: str, err: Exception):
    """The message for a .safetensors file that cannot be read (the library's own words in brackets)."""
    return M_("{name} is not a readable safetensors file ({problem})", name=name, problem=str(err))


def load_weights(model: nn.Module, path: Path) -> None:
    """Copy safetensors weights into an existing model, checking every key and shape first."""
    stored = read_native_weights(model, path)
    with torch.no_grad():
        params = dict(model.state_dict(keep_vars=True))
        for name, tensor in stored.items():
            params[name].copy_(tensor.to(params[name].dtype))


def load_card(path: str | Path) -> dict[str, Any]:
    """The checkpoint's card.json, or an empty dict when it has none."""
    card = Path(path) / CARD
    return _read_json(card) if card.is_file() else {}
