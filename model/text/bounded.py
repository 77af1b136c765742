"""Reading a visitor's text as tokens with work bounded by the tokens wanted, not by the text.

A tokenizer file decides how many tokens a character becomes: a sentencepiece normalization rule can rewrite `a`
as 2,000 `z`s, so 20,000 typed characters became 40 million tokens, and every `vocab.encode(text)` of the whole
text paid for all of them. Two bounds, both stated here:

- `read_bounded(vocab, text, limit)` encodes the text in pieces of at most CHUNK_CHARS characters (cut before a
  space where there is one, so every piece starts a word as it would in the whole text) and stops as soon as more
  than `limit` tokens were counted. Its work is at most (limit + CHUNK_CHARS) characters' worth, whatever the
  text's length; the ids it returns are those of the whole prefix it read, encoded in one go (exactly what the
  model reads of it), and `complete` says whether that prefix is the whole text.
- `worst_expansion(vocab)` encodes each of PROBE characters alone when a tokenizer is loaded; `check_expansion`
  refuses a tokenizer that turns one of them into more than MAX_EXPANSION tokens (byte fallback of a 4-byte
  character gives 4 pieces and a word marker: 5). A rule on a character outside the probe is still bounded by
  read_bounded: it costs at most one piece's expansion beyond the limit.

A visitor's tokenizer file is code of a kind (regular expressions, normalization rules) run by native libraries:
- `guarded(call, ...)` turns anything a tokenizer library raises, a BaseException included (a Rust panic of the
  tokenizers library is a pyo3_runtime.PanicException, which no `except Exception` catches and which otherwise ends
  the session's script thread), into TokenizerFailed, a ValueError whose message is an i18n Message;
- read_bounded stops with TokenizerFailed once its encoding took more than ENCODE_SECONDS (checked between pieces,
  each piece at most CHUNK_CHARS characters); a visitor's tokenizer in the server runs behind a fence
  (model/text/fence.py) that cuts one call at what is left of that time (seconds_left);
- `check_probes(vocab, origin)` runs at load: every character of the Basic Multilingual Plane in blocks of 256
  (a block that makes many tokens is read again character by character, as check_expansion does), and the
  adversarial texts of ADVERSARIAL (a run of one character, then one it does not match: what makes a backtracking
  regular expression take exponential time); a tokenizer that fails on one, or takes more than PROBE_SECONDS of CPU
  time on one, is refused with a message saying so.

Pure Python: the vocabulary objects of model/text/tokenizer.py and model/checkpoints/formats/ (anything with
encode and the optional prepend_bos).
"""

from __future__ import annotations

import time
from contextvars import ContextVar
from dataclasses import dataclass

from i18n import M_, N_

CHUNK_CHARS = 256  # characters per piece at most
MIN_CHUNK = 16  # characters per piece at least (near the limit, pieces shrink to the room left)
MAX_EXPANSION = 16  # tokens one character may become, at most, for a tokenizer to be accepted
MAX_RESYNC = 4  # exact re-encodings of the prefix read when pieces' counts and the whole's disagree

# One character of each script a visitor may type, the ASCII letters, digits and punctuation, and characters
# that normalizers commonly rewrite (ligatures, full-width forms, compatibility letters).
PROBE = (
    "".join(chr(c) for c in range(0x21, 0x7F))
    + "àéîõüßçñøåæœÀÉÎÕÜ¡¿«»°±²³µ·×÷"
    + "ΑαΒβΓγΔδΩωЖжЯяЩщ"
    + "אבגابتअआকখกขაბ"
    + "一二三中文字日本語あいうアイウ한국어"
    + "ﬁﬂﬀＡＢａｂ１２！？ⅠⅡ①②ℌℕ™…—–‘’“”€£¥₩"
    + "😀👍🎉"
)


ENCODE_SECONDS = 10.0  # the most seconds read_bounded spends encoding one text
PROBE_SECONDS = 0.5  # the most CPU seconds one probe text (256 characters, or 61) may take at load: ~2 ms is usual
BLOCK = 256  # characters per block of the load-time scan
BLOCK_TOKENS = 4 * BLOCK + 64  # a block making more tokens is checked character by character
ADVERSARIAL = tuple(ch * 60 + ("b" if ch == "a" else "!" if ch != "!" else "?") for ch in map(chr, range(0x20, 0x7F)))


class TokenizerFailed(ValueError):
    """A tokenizer library failed or took too long on a text; its message is an i18n Message."""


TOKENIZER_FAILED = N_(
    "The tokenizer of this model failed on this text (its library stopped with an internal error); the model "
    "cannot read it. Try another text."
)
TOKENIZER_SLOW = N_(
    "The tokenizer of this model took more than {seconds} s on this text; reading stopped. Try a shorter text."
)
PROBE_FAILED = N_(
    "{origin}: this tokenizer fails on a test text ({what}): its library stops with an internal error, as a "
    "regular expression that backtracks without end does. It is not used."
)
PROBE_SLOW = N_(
    "{origin}: this tokenizer takes {seconds} s on a test text ({what}) of {n} characters, more than its budget "
    "of {budget} s (a regular expression or normalization rule that backtracks). It is not used."
)
_RAISED_THROUGH = (KeyboardInterrupt, SystemExit, GeneratorExit)


def guarded(call, *args, error: type[Exception] = TokenizerFailed, message=None):
    """call(*args); whatever it raises, a BaseException of a native library included, becomes `error` with
    `message` (default TOKENIZER_FAILED). An interrupt or an exit of the interpreter is not caught."""
    try:
        return call(*args)
    except _RAISED_THROUGH:
        raise
    except TokenizerFailed:
        if error is TokenizerFailed and message is None:  # already said why (a fenced call past its time)
            raise
        raise error(message if message is not None else M_(TOKENIZER_FAILED)) from None
    except BaseException:  # noqa: BLE001 - a Rust panic (pyo3_runtime.PanicException) derives from BaseException
        raise error(message if message is not None else M_(TOKENIZER_FAILED)) from None


def _encode(vocab, text: str) -> list[int]:
    return guarded(vocab.encode, text)


_DEADLINE: ContextVar[float | None] = ContextVar("encode_deadline", default=None)  # read_bounded's, in this thread


def seconds_left() -> float:
    """How long one encode call may take: what is left of the running read_bounded's ENCODE_SECONDS, else all of
    them (a fenced vocabulary's call is cut there: model/text/fence.py)."""
    deadline = _DEADLINE.get()
    return ENCODE_SECONDS if deadline is None else max(0.0, deadline - time.monotonic())


@dataclass
class BoundedText:
    """What read_bounded read of a text."""

    text: str  # the prefix read: the whole text when complete, else the text up to where counting stopped
    ids: list[int]  # vocab.encode(text) of that prefix (a <s> in front when the vocabulary puts one there)
    complete: bool  # the whole text was read: len(content ids) is its exact token count


def content_count(vocab, ids: list[int]) -> int:
    """Tokens of content in vocab.encode(...)'s ids: without the <s> some vocabularies put in front."""
    return len(ids) - (1 if getattr(vocab, "prepend_bos", False) and ids else 0)


def _piece_end(text: str, start: int, size: int) -> int:
    """Where a piece of at most `size` characters from `start` ends: before the last space inside it (so the
    next piece begins with the space, as the word does in the whole text), else after `size` characters."""
    end = start + size
    if end >= len(text):
        return len(text)
    space = max(text.rfind(" ", start + 1, end + 1), text.rfind("\n", start + 1, end + 1))
    return space if space > start else end


def read_bounded(vocab, text: str, limit: int) -> BoundedText:
    """Encode `text` until more than `limit` content tokens were seen, in pieces; never the rest of the text.

    When the whole text has at most `limit` tokens (or a few more, by a piece's boundary), it is read whole:
    complete=True and ids = vocab.encode(text). Otherwise text is the prefix read (ending at a piece's end, at
    least `limit` + 1 tokens: what a model that reads `limit` tokens reads of the whole), complete=False."""
    deadline = time.monotonic() + ENCODE_SECONDS
    token = _DEADLINE.set(deadline)
    try:
        return _read_bounded(vocab, text, max(0, int(limit)), deadline)
    finally:
        _DEADLINE.reset(token)


def _read_bounded(vocab, text: str, limit: int, deadline: float) -> BoundedText:
    pos, counted, resyncs = 0, 0, 0
    while pos < len(text):
        room = limit + 1 - counted
        end = _piece_end(text, pos, min(CHUNK_CHARS, max(MIN_CHUNK, room)))
        counted += content_count(vocab, _encode(vocab, text[pos:end]))
        pos = end
        if time.monotonic() > deadline:
            raise TokenizerFailed(M_(TOKENIZER_SLOW, seconds=format(ENCODE_SECONDS, "g")))
        if counted > limit and pos < len(text):
            ids = _encode(vocab, text[:pos])  # the pieces' sum can differ from the whole at their boundaries
            exact = content_count(vocab, ids)
            if exact > limit or resyncs >= MAX_RESYNC:
                return BoundedText(text[:pos], ids, False)
            counted, resyncs = exact, resyncs + 1
    ids = _encode(vocab, text)
    return BoundedText(text, ids, True)


def bounded_ids(vocab, text: str, limit: int) -> list[int]:
    """vocab.encode(text) for a caller that keeps at most `limit` content tokens: the same first limit + 1 (or
    more) ids, with the work bounded by the limit (read_bounded)."""
    return read_bounded(vocab, text, limit).ids


def worst_expansion(vocab, probe: str = PROBE) -> tuple[int, str]:
    """(the most tokens one probe character becomes, that character), each character encoded alone."""
    worst, which = 0, ""
    for ch in probe:
        n = content_count(vocab, _encode(vocab, ch))
        if n > worst:
            worst, which = n, ch
    return worst, which


class ExpandingTokenizer(ValueError):
    """A tokenizer that turns one character into more than MAX_EXPANSION tokens; its message is an i18n Message."""


EXPANSION_REFUSED = N_(
    "{origin}: this tokenizer turns the single character “{char}” into {n} tokens; this app accepts "
    "tokenizers that make at most {max} tokens of one character (its normalization rewrites text into much "
    "longer text)."
)


def check_expansion(vocab, origin: str, error: type[Exception] = ExpandingTokenizer, probe: str = PROBE) -> int:
    """The vocabulary's worst expansion over the probe; `error` (a Message saying so) when above MAX_EXPANSION.
    With the default probe, the load-time probes too (check_probes): every caller that loads a tokenizer calls this."""
    try:
        worst, which = worst_expansion(vocab, probe)
    except TokenizerFailed as err:
        raise error(err.args[0]) from None
    if worst > MAX_EXPANSION:
        raise error(M_(EXPANSION_REFUSED, origin=origin, char=which, n=worst, max=MAX_EXPANSION))
    if probe is PROBE:
        check_probes(vocab, origin, error)
    return worst


def _blocks():
    """The Basic Multilingual Plane's characters (surrogates left out) in blocks of BLOCK."""
    for start in range(0, 0x10000, BLOCK):
        if not 0xD800 <= start < 0xE000:
            yield start, "".join(map(chr, range(max(start, 1), start + BLOCK)))


def _timed(vocab, text: str, origin: str, what: str, error: type[Exception]) -> list[int]:
    start = time.thread_time()  # CPU seconds of this thread: a loaded machine's waits do not count
    ids = guarded(vocab.encode, text, error=error, message=M_(PROBE_FAILED, origin=origin, what=what))
    seconds = time.thread_time() - start
    if seconds > PROBE_SECONDS:
        raise error(M_(PROBE_SLOW, origin=origin, what=what, seconds=format(seconds, ".2f"), n=len(text),
                       budget=format(PROBE_SECONDS, "g")))  # fmt: skip
    return ids


def check_probes(vocab, origin: str, error: type[Exception] = ExpandingTokenizer) -> None:
    """Run the load-time probes (module docstring): refuse, with `error` and a Message saying why, a tokenizer
    that fails on a probe text, takes more than PROBE_SECONDS on one, or makes more than MAX_EXPANSION tokens of a
    character of the Basic Multilingual Plane."""
    for text in ADVERSARIAL:
        _timed(vocab, text, origin, f"U+{ord(text[0]):04X} x 60", error)
    for start, block in _blocks():
        ids = _timed(vocab, block, origin, f"U+{start:04X}..U+{start + BLOCK - 1:04X}", error)
        if content_count(vocab, ids) > BLOCK_TOKENS:
            check_expansion(vocab, origin, error, probe=block)
