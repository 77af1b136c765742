"""The tokenizers of decoder-only and encoder-only Hugging Face folders (GPT-2, Llama, Qwen2, BERT), read offline
by the libraries made for them:

    tokenizer.json            any "fast" tokenizer (byte-level BPE of GPT-2 / Qwen2 / Llama 3, WordPiece of BERT,
                              the sentencepiece-style BPE of Llama 2), through the `tokenizers` library
    tokenizer.model           Llama's sentencepiece model (the "slow" LlamaTokenizer), through `sentencepiece`
    vocab.json + merges.txt   GPT-2's byte-level BPE files, through `tokenizers`
    vocab.txt                 BERT's WordPiece vocabulary, through `tokenizers`

Which special tokens a text gets is the tokenizer's own rule, read from the file, never written here by family:
for tokenizer.json its post-processor (the ids it puts before a text are the vocabulary's prefix: Llama's BOS,
BERT's [CLS]; the one it puts after is BERT's [SEP], the end token an encoder's source ends with); for
tokenizer.model the add_bos_token / add_eos_token of tokenizer_config.json (defaults as LlamaTokenizer's).
Files are bounded before they are parsed and every id they hold must lie inside the model's embeddings.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from i18n import M_

from ...text.bounded import check_expansion, guarded
from ..checkpoint import CheckpointError
from ..safe_io import JSON_MAX_BYTES, check_shape, check_shape_members, read_bytes, read_json
from ..tokenizer_budget import charge
from .hf_tokenizers import HFVocab, SentencePieceVocab, _check_range, _sentencepiece

VOCAB_TXT_MAX_BYTES = 16 * 2**20  # BERT's vocab.txt: 230 KB
PROBE = "a b"  # a text every tokenizer splits into some pieces: where the post-processor's specials go


def _library():
    try:
        import tokenizers
    except ImportError:
        raise CheckpointError(
            M_("reading this tokenizer needs the tokenizers package: pip install tokenizers")
        ) from None
    return tokenizers


class LibraryVocab(HFVocab):
    """Pieces from a `tokenizers.Tokenizer` (without its specials; the prefix holds those it puts in front)."""

    def __init__(self, tok, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tok = tok

    def piece_ids(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids

    def piece(self, i: int) -> str | None:
        return self.tok.id_to_token(i)

    def join(self, pieces: list[str]) -> str:
        ids = [self.tok.token_to_id(p) for p in pieces]
        return self.tok.decode([i for i in ids if i is not None], skip_special_tokens=True)


def _unreadable(folder: str, file: str, err: Exception) -> CheckpointError:
    return CheckpointError(
        M_(
            "{folder}: {file} is not a tokenizer this app can read ({problem})",
            folder=folder,
            file=file,
            problem=str(err)[:200],
        )
    )


def _surroundings(tok) -> tuple[list[int], list[int]]:
    """(ids the post-processor puts before a text, ids it puts after it)."""
    bare = tok.encode(PROBE, add_special_tokens=False).ids
    full = tok.encode(PROBE, add_special_tokens=True).ids
    for start in range(len(full) - len(bare) + 1):
        if full[start : start + len(bare)] == bare:
            return full[:start], full[start + len(bare) :]
    return [], []


def _specials(tok, ids: Mapping[str, int | None], prefix: list[int], suffix: list[int]) -> dict[str, int]:
    """pad, bos, eos, unk ids: the config's where it has them, else what the post-processor adds (BERT: [CLS] in
    front, [SEP] after), else the tokenizer's own unknown token, else 0."""
    unk_name = getattr(tok.model, "unk_token", None)
    unk = tok.token_to_id(unk_name) if isinstance(unk_name, str) else None
    bos = ids.get("bos") if ids.get("bos") is not None else (prefix[0] if prefix else None)
    eos = ids.get("eos") if ids.get("eos") is not None else (suffix[0] if suffix else None)
    fallback = next((i for i in (eos, bos, unk) if i is not None), 0)
    pad = ids.get("pad")
    return {
        "pad": fallback if pad is None else pad,
        "bos": fallback if bos is None else bos,
        "eos": fallback if eos is None else eos,
        "unk": fallback if unk is None else unk,
    }


def _added(tok, specials: Mapping[str, int]) -> dict[str, int]:
    """Token -> id of the special tokens (added tokens marked special, and the four roles)."""
    added = {}
    for i, token in tok.get_added_tokens_decoder().items():
        if token.special:
            added[token.content] = i
    for i in specials.values():
        name = tok.id_to_token(i)
        if name is not None:
            added.setdefault(name, i)
    return added


def _checked(folder: Path, file: str, tok, size: int) -> None:
    """Every id of the vocabulary (added tokens too) inside the model's `size` embeddings."""
    _check_range(folder.name, tok.get_vocab(with_added_tokens=True).values(), size, file)


def library_vocab(
    folder: Path, size: int, kind: str, ids: Mapping[str, int | None], *, keep_suffix: bool = False
) -> LibraryVocab | None:
    """The folder's tokenizer.json, else vocab.json + merges.txt, else vocab.txt; None when it has none.

    ids: the config's "pad", "bos", "eos" (None where it has none). keep_suffix: the token the post-processor puts
    after a text becomes the vocabulary's end token (an encoder's source ends with it: BERT's [SEP])."""
    lib = _library()
    if (folder / "tokenizer.json").exists():
        file = "tokenizer.json"
        text = _bounded_tokenizer_json(folder, size)
        try:
            tok = lib.Tokenizer.from_str(text)
        except Exception as err:  # the library's own exception type is not exported
            raise _unreadable(folder.name, file, err) from None
    elif (folder / "vocab.json").exists() and (folder / "merges.txt").exists():
        file = "vocab.json"
        charge([(folder / "vocab.json", "json"), (folder / "vocab.json", "bpe"), (folder / "merges.txt", "bpe")],
               folder.name)  # fmt: skip
        vocab = read_json(folder / "vocab.json", origin=f"{folder.name}/vocab.json")
        if not isinstance(vocab, dict) or not all(type(v) is int for v in vocab.values()):
            raise CheckpointError(M_("{name} must map each token to an integer id", name="vocab.json"))
        _check_range(folder.name, vocab.values(), size, file)
        read_bytes(folder / "merges.txt", 64 * 2**20)
        try:
            tok = lib.Tokenizer(lib.models.BPE.from_file(str(folder / "vocab.json"), str(folder / "merges.txt")))
            tok.pre_tokenizer = lib.pre_tokenizers.ByteLevel(add_prefix_space=False)
            tok.decoder = lib.decoders.ByteLevel()
        except Exception as err:
            raise _unreadable(folder.name, file, err) from None
    elif (folder / "vocab.txt").exists():
        file = "vocab.txt"
        charge([(folder / "vocab.txt", "bpe")], folder.name)
        read_bytes(folder / "vocab.txt", VOCAB_TXT_MAX_BYTES)
        tok_cfg = _tokenizer_config(folder)
        lower = tok_cfg.get("do_lower_case", True)
        try:
            tok = lib.BertWordPieceTokenizer(str(folder / "vocab.txt"), lowercase=lower is not False)
        except Exception as err:
            raise _unreadable(folder.name, file, err) from None
    else:
        return None
    _checked(folder, file, tok, size)
    prefix, suffix = guarded(_surroundings, tok, error=CheckpointError)
    specials = _specials(tok, ids, prefix, suffix if keep_suffix else [])
    vocab = LibraryVocab(tok, kind, size, specials, _added(tok, specials), prefix=prefix)
    check_expansion(vocab, f"{folder.name}/{file}", CheckpointError)  # a rule that multiplies text, or backtracks
    return vocab


MEMBERS_PER_ID = 8  # a token's vocabulary entry, or an added token's 7 fields
MEMBERS_SLACK = 4096  # the normalizer's, pre-tokenizer's, post-processor's and decoder's own fields


def _bounded_tokenizer_json(folder: Path, size: int) -> str:
    """The text of tokenizer.json, refused before the tokenizers library parses it when its cost (its size by the
    tokenizer budget) is over the budget, or when it holds more entries than a model of `size` embeddings can
    number (every vocabulary entry and added token must be an id below `size`): both counted from the bytes."""
    path, origin = folder / "tokenizer.json", f"{folder.name}/tokenizer.json"
    charge([(path, "tokenizers")], folder.name)
    data = read_bytes(path, JSON_MAX_BYTES)
    check_shape(data, origin, None)  # nesting
    most = MEMBERS_PER_ID * size + MEMBERS_SLACK
    if data.count(b":") > most and (members := check_shape_members(data)) > most:
        raise CheckpointError(
            M_(
                "{origin} holds about {n} entries, more than a tokenizer of this model's {size} embeddings can "
                "hold; it was not parsed",
                origin=origin,
                n=members,
                size=size,
            )
        )
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise CheckpointError(M_("{origin} is not UTF-8 text", origin=origin)) from None


def _tokenizer_config(folder: Path) -> dict:
    if not (folder / "tokenizer_config.json").exists():
        return {}
    data = read_json(folder / "tokenizer_config.json", origin=f"{folder.name}/tokenizer_config.json")
    return data if isinstance(data, dict) else {}


def sentencepiece_vocab(folder: Path, size: int, kind: str, ids: Mapping[str, int | None]) -> SentencePieceVocab:
    """Llama's tokenizer.model: ids are sentencepiece's own; BOS in front when tokenizer_config.json's
    add_bos_token (default true, as LlamaTokenizer)."""
    spm = _sentencepiece(folder / "tokenizer.model", folder.name)
    n = spm.get_piece_size()
    _check_range(folder.name, range(n), size, "tokenizer.model")
    add_bos = _tokenizer_config(folder).get("add_bos_token", True) is not False
    bos = ids.get("bos") if ids.get("bos") is not None else spm.bos_id()
    eos = ids.get("eos") if ids.get("eos") is not None else spm.eos_id()
    _check_range(folder.name, [i for i in (bos, eos) if i is not None and i >= 0], size, "tokenizer.model")
    specials = {"pad": ids.get("pad") if ids.get("pad") is not None else eos, "bos": bos, "eos": eos,
                "unk": spm.unk_id()}  # fmt: skip
    added = {spm.id_to_piece(i): i for i in range(n) if spm.is_control(i) or spm.is_unknown(i)}
    vocab = SentencePieceVocab(spm, 0, kind, size, specials, added, prefix=[bos] if add_bos else [])
    check_expansion(vocab, f"{folder.name}/tokenizer.model", CheckpointError)
    return vocab


def folder_vocab(
    folder: Path, size: int, kind: str, ids: Mapping[str, int | None], *, keep_suffix: bool = False
) -> HFVocab | None:
    """The folder's tokenizer, whichever files it has (tokenizer.json first), or None without any."""
    vocab = library_vocab(folder, size, kind, ids, keep_suffix=keep_suffix)
    if vocab is None and (folder / "tokenizer.model").exists():
        vocab = sentencepiece_vocab(folder, size, kind, ids)
    return vocab
