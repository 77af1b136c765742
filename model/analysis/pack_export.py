"""The model and tokenizer as plain data for the lecture pack's in-page forward pass (viz/pack_model.js).

    spec = live_spec(model, tokenizer)        # a dict, JSON-ready: config, tokenizer, tensor index
    spec["weights"]                           # base64 of every tensor, little-endian float32, one after another

Each tensor appears once (shared embeddings and a tied output layer point at the same entry), under the
module names of model/network/transformer.py; the index gives its offset (in numbers) and shape. A model the page
cannot run (a positional kind or tokenizer the script does not implement, or more than max_bytes of weights)
raises Unsupported with a sentence saying why: the builder writes a pack without the live model then.
"""

from __future__ import annotations

import base64

import numpy as np
import torch
from torch import nn

from i18n import M_

from ..text.tokenizer import Tokenizer, Vocab

MAX_BYTES = 12_000_000  # float32 weights a pack may carry: base64 makes 16 MB of it, above the 15 MB budget
JS_POSITIONAL = ("sinusoidal", "learned", "none", "rope", "alibi", "relative")  # viz/pack_model.js: one function each
JS_ACTIVATIONS = ("relu", "gelu", "silu")
JS_NORMS = ("layernorm", "std")


class Unsupported(ValueError):
    """The page cannot run this model; the message (an i18n Message) says why."""


def _check(model: nn.Module, tokenizer: Tokenizer, max_bytes: int) -> None:
    cfg = model.config
    if cfg.positional not in JS_POSITIONAL:
        raise Unsupported(
            M_(
                "the page cannot run positions of kind “{kind}” yet (it runs: {kinds})",
                kind=cfg.positional,
                kinds=", ".join(JS_POSITIONAL),
            )  # fmt: skip
        )
    if cfg.activation not in JS_ACTIVATIONS or cfg.norm not in JS_NORMS:
        raise Unsupported(M_("the page cannot run this model's activation or norm"))
    if cfg.ff_gated or cfg.rescale_output or cfg.embed_norm or cfg.forced_bos_id is not None:
        raise Unsupported(
            M_("the page cannot run a gated feed-forward, an embedding norm, a rescaled output or a forced first token")
        )
    if not all(type(v) is Vocab for v in (tokenizer.source, tokenizer.target)):
        raise Unsupported(M_("the page runs only this project's own tokenizers (characters or words)"))
    size = 4 * sum(int(t.numel()) for t in _unique_tensors(model).values())
    if size > max_bytes:
        raise Unsupported(
            M_(
                "its weights take {mb} MB, above the {limit} MB a pack carries",
                mb=f"{size / 1e6:.1f}",
                limit=f"{max_bytes / 1e6:.0f}",
            )  # fmt: skip
        )


def _unique_tensors(model: nn.Module) -> dict[str, torch.Tensor]:
    """Parameters by name, each stored tensor once (the first name of a shared one)."""
    seen: dict[int, str] = {}
    out: dict[str, torch.Tensor] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in seen:
            continue
        seen[id(p)] = name
        out[name] = p.detach()
    return out


def _positions(model: nn.Module) -> dict:
    """What a positional kind needs beyond the weights. T5's relative bias: each stack's bucket of every relative
    position -R..R (key - query), from the model's own bucket function (float32 logs, so the page need not repeat
    them bit for bit), R = min(max_distance, max_len - 1): farther keys share the bucket of distance R."""
    cfg = model.config
    if cfg.positional != "relative":
        return {}
    reach = min(cfg.relative_max_distance, cfg.max_len - 1)
    keys = torch.arange(2 * reach + 1)
    out: dict = {"reach": reach}
    for side, module in model.positional_encodings():
        out[side] = module.buckets(torch.tensor([reach]), keys)[0].tolist()  # key - query = -R .. R
    return out


def live_spec(model: nn.Module, tokenizer: Tokenizer, max_bytes: int = MAX_BYTES) -> dict:
    """Everything the page needs to run `model` (see the module docstring); Unsupported says why not."""
    _check(model, tokenizer, max_bytes)
    cfg = model.config
    index: dict[str, dict] = {}
    chunks, offset = [], 0
    ids: dict[int, str] = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) in ids:  # shared embeddings, a tied output layer: the same entry
            index[name] = index[ids[id(p)]]
            continue
        ids[id(p)] = name
        array = p.detach().float().cpu().numpy().astype("<f4")
        index[name] = {"offset": offset, "shape": list(array.shape)}
        chunks.append(array.ravel())
        offset += array.size
    weights = np.concatenate(chunks) if chunks else np.zeros(0, dtype="<f4")
    return {
        "config": {**cfg.to_dict(), "has_final_norm": cfg.has_final_norm, "extra": {}},
        "positions": _positions(model),
        "tokenizer": {
            "source": tokenizer.source.to_dict(),
            "target": tokenizer.target.to_dict(),
        },
        "index": index,
        "weights": base64.b64encode(weights.tobytes()).decode("ascii"),
        "n_bytes": int(weights.nbytes),
    }
