"""Turning what a user typed into model inputs, reporting what had to be cut."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from .tokenizer import Tokenizer, Vocab


@dataclass
class SourceInput:
    ids: list[int]  # source ids ending with </s>, at most max_len of them
    tokens: list[str]  # the same as strings
    truncated: int  # how many typed tokens were cut to fit max_len


def prepare_source(model: nn.Module, tokenizer: Tokenizer, text: str) -> SourceInput:
    """Tokenize the source, cut it to the model's max_len (keeping room for </s>), append </s>."""
    vocab = tokenizer.source
    ids = vocab.encode(text)
    room = model.config.max_len - 1
    truncated = max(0, len(ids) - room)
    ids = ids[:room] + [vocab.eos_id]
    return SourceInput(ids, vocab.decode(ids), truncated)


def prepare_target(model: nn.Module, vocab: Vocab, text: str) -> tuple[list[int], int]:
    """Decoder input ids for a given target text: <s> then the text's ids, cut to max_len; and how many were cut."""
    ids = vocab.encode(text)
    room = model.config.max_len - 1
    return [vocab.bos_id] + ids[:room], max(0, len(ids) - room)


def device_of(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def as_batch(model: nn.Module, ids: list[int]) -> torch.Tensor:
    """(1, T) long tensor on the model's device."""
    return torch.tensor([ids], dtype=torch.long, device=device_of(model))


def require_eval(model: nn.Module) -> None:
    if model.training:
        raise ValueError("the model is in training mode (dropout on); call model.eval() before capturing or decoding")
