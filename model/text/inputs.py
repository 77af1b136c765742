"""Turning what a user typed into model inputs, reporting what had to be cut."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from i18n import M_, N_, NM_, Message, join_messages

from .bounded import TokenizerFailed, bounded_ids, read_bounded
from .tokenizer import SPECIALS, IdVocab, Tokenizer, Vocab, clean_text


@dataclass
class SourceInput:
    ids: list[int]  # source ids ending with </s>, at most max_len of them
    tokens: list[str]  # the same as strings
    truncated: int  # how many typed tokens were cut to fit max_len (exact up to count_limit tokens; then at least)


def prepare_source(model: nn.Module, tokenizer: Tokenizer, text: str) -> SourceInput:
    """Tokenize the source, cut it to the model's max_len (keeping room for </s>), append </s>
    (and what the vocabulary puts after it: mBART's language code)."""
    vocab = tokenizer.source
    after = list(getattr(vocab, "after_eos", ()))
    room = model.config.max_len - 1 - len(after)
    # what check_text counts, no more (model/text/bounded.py): the tokens cut are counted, the work stays bounded
    ids = bounded_ids(vocab, text, count_limit(room))
    truncated = max(0, len(ids) - room)
    ids = ids[:room] + [vocab.eos_id] + after
    return SourceInput(ids, vocab.decode(ids), truncated)


def text_room(config) -> int:
    """How many tokens of the typed text the model reads (check_text's max_tokens): a decoder-only model reads its
    one sequence whole (max_len, nothing appended: prepare_sequence); a model with an encoder keeps one place for
    </s> (max_len - 1: prepare_source)."""
    return config.max_len if not config.has_encoder else config.max_len - 1


def prepare_sequence(model: nn.Module, tokenizer: Tokenizer, text: str, target: str | None = None) -> SourceInput:
    """A decoder-only model's one sequence: the text's ids as the family's tokenizer gives them (its BOS in front
    when the family adds one, no </s> appended), then the target's ids when given, cut to max_len."""
    ids = tokenizer.source.encode(text)  # the same vocabulary as the target's (the target's may be ids given)
    if target is not None:
        extra = tokenizer.target.encode(target)
        prefix = list(getattr(tokenizer.target, "prefix", ()))
        ids += extra[len(prefix) :] if prefix and extra[: len(prefix)] == prefix else extra
    room = model.config.max_len
    return SourceInput(ids[:room], tokenizer.target.decode(ids[:room]), max(0, len(ids) - room))


def prepare_target(model: nn.Module, vocab: Vocab, text: str) -> tuple[list[int], int]:
    """Decoder input ids for a given target text: <s> then the text's ids, cut to max_len; and how many were cut."""
    room = model.config.max_len - 1
    ids = bounded_ids(vocab, text, room)
    return [vocab.bos_id] + ids[:room], max(0, len(ids) - room)


def device_of(model: nn.Module) -> torch.device:
    return next(model.parameters()).device


def as_batch(model: nn.Module, ids: list[int]) -> torch.Tensor:
    """(1, T) long tensor on the model's device."""
    return torch.tensor([ids], dtype=torch.long, device=device_of(model))


def require_eval(model: nn.Module) -> None:
    if model.training:
        raise ValueError("the model is in training mode (dropout on); call model.eval() before capturing or decoding")


@dataclass
class InputCheck:
    """What the app should say about a typed text before running the model."""

    text: str  # the text the model will read (control characters removed)
    errors: list[str]  # reasons not to run at all (i18n Messages: translate where shown, _(message))
    warnings: list[str]  # things the user should know, the model still runs (Messages too)
    unknown: list[str]  # distinct symbols the vocabulary does not know
    complete: bool = True  # the whole text was tokenized; False: `text` is the prefix read (model/text/bounded.py)


def count_limit(max_tokens: int) -> int:
    """How many tokens check_text counts before it stops reading a text: twice what the model reads, and 1,024
    more (a longer text is cut; its message then says "more than" this many). Ordinary texts are counted exactly."""
    return 2 * max(0, max_tokens) + 1024


def _content_ids(vocab, text: str) -> list[int]:
    """The ids of the text itself, without a <s> that some vocabularies put in front."""
    ids = vocab.encode(text)
    return ids[1:] if getattr(vocab, "prepend_bos", False) else ids


WHAT = {"input": N_("input"), "target": N_("target")}  # what check_text's messages call the text
MAX_LEN_CUT = N_(
    "The {what} has {n} tokens but this model reads at most {room}: cut after “{kept}” ({dropped} tokens dropped)."
)  # check_text's warning when the model's max_len cuts a text (model/analysis/budget.py replaces it when it cuts more)
MAX_LEN_CUT_LONG = N_(
    "The {what} has more than {n} tokens (counting stopped there) but this model reads at most {room}: "
    "cut after “{kept}”."
)  # the same when the text was too long to count to its end (read_bounded stopped)
CUTS = (MAX_LEN_CUT, MAX_LEN_CUT_LONG)
QUOTED = 12  # unknown symbols check_text names; more are counted ("... and 3 more")
KEPT = 40  # characters of the kept text that check_text's warning about a cut quotes


def check_limits() -> dict[str, int]:
    """check_text's numbers, as data (the lecture pack's page checks typed text by them)."""
    return {"quoted": QUOTED, "kept": KEPT}


def check_text(text: str, vocab, max_tokens: int, what: str = "input", count_to: int | None = None) -> InputCheck:
    """Clean pasted text and say what is wrong with it, in words meant for the person who typed it.

    vocab: any side vocabulary (Vocab, ListVocab, IdVocab, a sentencepiece vocabulary);
    max_tokens: how many tokens the model reads (max_len minus the special token).
    count_to: fewer tokens than that, when the page will read no more (the work budget's room): the text is then
    counted only to count_limit(count_to), and a longer one is said to be "more than" that many.
    Errors and warnings are i18n Messages (English as str; _(message) in the reader's language).
    """
    try:
        return _check_text(text, vocab, max_tokens, what, count_to)
    except TokenizerFailed as err:  # a visitor's tokenizer failed (a Rust panic) or ran out of time on this text
        return InputCheck(clean_text(text), [err.args[0]], [], [], False)


def _check_text(text: str, vocab, max_tokens: int, what: str, count_to: int | None = None) -> InputCheck:
    cleaned = clean_text(text)
    counted = max_tokens if count_to is None else min(max_tokens, count_to)
    read = read_bounded(vocab, cleaned, count_limit(counted))  # the work is bounded by the model, not the text
    errors, warnings = [], []
    name = M_(WHAT.get(what, what))
    dropped = sum(1 for ch in text if not ch.isspace() and ch not in cleaned)
    if dropped:
        warnings.append(
            NM_(
                "Removed {n} control or invisible character from the {what}.",
                "Removed {n} control or invisible characters from the {what}.",
                dropped,
                what=name,
            )
        )
    symbols = vocab.split(read.text) if hasattr(vocab, "split") else read.text.split()
    if not symbols:
        errors.append(M_("The {what} is empty: type some text, or pick an example.", what=name))
        return InputCheck(cleaned, errors, warnings, [])
    unknown = list(dict.fromkeys(s for s in symbols if all(i == vocab.unk_id for i in _content_ids(vocab, s))))
    if unknown and len(unknown) == len(set(symbols)):
        if isinstance(vocab, IdVocab):
            hint = M_(
                " This model has no vocabulary file: type token ids from 0 to {last}, e.g. 12 7 431.",
                last=len(vocab) - 1,
            )
        else:
            known = sorted(set(getattr(vocab, "tokens", ())) - set(SPECIALS))
            hint = (
                M_(" It knows {n} symbols, e.g. {examples}.", n=len(known), examples=" ".join(known[:20]))
                if known
                else ""
            )
        errors.append(
            M_(
                "None of the {what}'s symbols are in this model's vocabulary ({symbols}).{hint}",
                what=name,
                symbols=_quote(unknown),
                hint=hint,
            )
        )
    elif unknown:
        warnings.append(M_("Not in the vocabulary, read as <unk>: {symbols}.", symbols=_quote(unknown)))
    ids = read.ids[1:] if getattr(vocab, "prepend_bos", False) else read.ids
    room = max_tokens - (1 if getattr(vocab, "prepend_bos", False) else 0) - len(getattr(vocab, "after_eos", ()))
    if len(ids) > room:
        kept = vocab.detokenize(vocab.decode(ids[:room]))
        template = MAX_LEN_CUT if read.complete else MAX_LEN_CUT_LONG
        warnings.append(M_(template, what=name, n=len(ids), room=room, kept=kept[-KEPT:], dropped=len(ids) - room))
    return InputCheck(read.text, errors, warnings, unknown, read.complete)


def _quote(symbols: list[str], limit: int = QUOTED) -> Message:
    shown = join_messages(", ", (f"“{s}”" if s.strip() else M_("a space") for s in symbols[:limit]))
    return M_("{shown} and {n} more", shown=shown, n=len(symbols) - limit) if len(symbols) > limit else shown
