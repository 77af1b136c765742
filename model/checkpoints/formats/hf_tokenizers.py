"""The tokenizers of Hugging Face T5, BART and mBART folders, read offline by the libraries made for them.

    T5 (T5Tokenizer):       spiece.model (sentencepiece); ids are the model's own (<pad> 0, </s> 1, <unk> 2),
                            then `extra_ids` sentinels <extra_id_0> .. counted down from the top. Text ends with </s>.
    mBART (MBartTokenizer): sentencepiece.bpe.model in fairseq's numbering: <s> 0, <pad> 1, </s> 2, <unk> 3,
                            piece p at its sentencepiece id + 1, then the language codes, then <mask>.
                            Source text: pieces </s> src_lang; the decoder starts from the config's start
                            token, then the forced language code.
    BART (BartTokenizer):   vocab.json + merges.txt, byte-level BPE (the tokenizers library); text is
                            <s> pieces </s>, the decoder starts from </s>, then the forced <s>.

Each side is one vocabulary object with the interface of model/text/tokenizer.py (encode, decode, token,
detokenize, the special ids, len, to_dict) plus `prepend_bos` (encode puts one token in front: BART's
<s>, mBART's forced language code on the target side) and `after_eos` (ids after </s> in a source:
mBART's language code). Ids outside the model's embeddings are refused when the files are read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from i18n import M_

from ...text.bounded import TokenizerFailed, check_expansion, guarded, seconds_left
from ..checkpoint import CheckpointError
from ..safe_io import read_bytes, read_json, regular_file
from ..tokenizer_budget import charge

SPM_MAX_BYTES = 64 * 2**20  # a 250k-piece sentencepiece model is about 5 MB
MERGES_MAX_BYTES = 64 * 2**20  # GPT-2 / BART merges.txt: 456 KB

# mBART-cc25's 25 language codes, in the order MBartTokenizer numbers them after the pieces.
MBART_LANGUAGE_CODES = (
    "ar_AR cs_CZ de_DE en_XX es_XX et_EE fi_FI fr_XX gu_IN hi_IN it_IT ja_XX kk_KZ ko_KR lt_LT lv_LV my_MM ne_NP "
    "nl_XX ro_RO ru_RU si_LK tr_TR vi_VN zh_CN"
).split()


def _sentencepiece(path: Path, folder: str):
    try:
        import sentencepiece
    except ImportError:
        raise CheckpointError(
            M_("reading this tokenizer needs the sentencepiece package: pip install sentencepiece")
        ) from None
    charge([(path, "sentencepiece")], folder)  # counted before it is parsed
    data = read_bytes(path, SPM_MAX_BYTES)
    try:
        return sentencepiece.SentencePieceProcessor(model_proto=data)
    except (OSError, RuntimeError, TypeError) as err:
        raise CheckpointError(
            M_(
                "{folder}: {file} is not a readable sentencepiece model ({problem})",
                folder=folder,
                file=path.name,
                problem=str(err),
            )
        ) from None


MASK_TOKENS = ("[MASK]", "<mask>")  # the masked-LM token of BERT-like and BART-like vocabularies


class HFVocab:
    """One side of a Hugging Face tokenizer: the library splits text into pieces, `ids` numbers them."""

    level = "subword"

    def __init__(
        self,
        kind: str,
        size: int,
        specials: Mapping[str, int],
        added: Mapping[str, int],
        prefix: Sequence[int] = (),
        after_eos: Sequence[int] = (),
    ):
        self.kind, self.size = kind, size
        self.pad_id, self.bos_id, self.eos_id, self.unk_id = (specials[k] for k in ("pad", "bos", "eos", "unk"))
        self.added = dict(added)  # token -> id of the specials and codes beyond the library's pieces
        self._added_tokens = {i: t for t, i in self.added.items()}
        self.prefix, self.after_eos = list(prefix), list(after_eos)
        self.prepend_bos = bool(self.prefix)

    def __len__(self) -> int:
        return self.size

    @property
    def mask_id(self) -> int | None:
        """The id of the mask token (BERT's [MASK], BART's <mask>) where the tokenizer has one."""
        return next((self.added[t] for t in MASK_TOKENS if t in self.added), None)

    _fence = None  # a Fence (model/text/fence.py) where the server runs this tokenizer in a helper process

    def encode(self, text: str) -> list[int]:
        """The text's ids; TokenizerFailed (a ValueError) when the library fails on it, a Rust panic included, or
        (fenced) takes longer than the time left to read the text (bounded.seconds_left)."""
        if self._fence is not None:
            return self.prefix + self._fence(text, seconds_left())
        return self.prefix + guarded(self.piece_ids, text)

    def fence(self) -> None:
        """From now on, the library's encoding runs in a helper process with a time limit per call."""
        from ...text.fence import Fence

        if self._fence is None:
            self._fence = Fence(self.piece_ids, self.join)

    def unfence(self) -> None:
        """Stop the helper process (a released model's tokenizer); encoding runs here again."""
        fence, self._fence = self._fence, None
        if fence is not None:
            fence.close()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state.pop("_fence", None)  # a helper process belongs to the process that started it
        return state

    def token(self, i: int) -> str:
        i = int(i)
        if i in self._added_tokens:
            return self._added_tokens[i]
        return self.piece(i) or f"<id {i}>"

    def decode(self, ids: Iterable[int]) -> list[str]:
        return [self.token(int(i)) for i in ids]

    def detokenize(self, symbols: Sequence[str]) -> str:
        """The text of the pieces (specials left out). Fenced, the library's decoder runs in the helper; where it
        fails or takes too long there, the pieces are shown as they are rather than nothing."""
        pieces = [s for s in symbols if s not in self.added and not s.startswith("<id ")]
        if self._fence is None:
            return self.join(pieces).strip()
        try:
            return self._fence.join(pieces, seconds_left()).strip()
        except TokenizerFailed:
            return "".join(pieces).strip()

    def to_dict(self) -> dict:
        return {"kind": self.kind, "size": self.size, "pad_id": self.pad_id, "bos_id": self.bos_id,
                "eos_id": self.eos_id, "unk_id": self.unk_id, "added": self.added, "prefix": self.prefix,
                "after_eos": self.after_eos}  # fmt: skip

    # what each library supplies
    def piece_ids(self, text: str) -> list[int]:
        raise NotImplementedError

    def piece(self, i: int) -> str | None:
        raise NotImplementedError

    def join(self, pieces: list[str]) -> str:
        raise NotImplementedError


class SentencePieceVocab(HFVocab):
    """Pieces from a sentencepiece model; model id = sentencepiece id + offset (fairseq: 1), its <unk> -> unk_id."""

    def __init__(self, spm, offset: int, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.spm, self.offset = spm, offset
        self._spm_unk = spm.unk_id()

    def piece_ids(self, text: str) -> list[int]:
        return [self.unk_id if p == self._spm_unk else p + self.offset for p in self.spm.encode(text)]

    def piece(self, i: int) -> str | None:
        p = i - self.offset
        if not 0 <= p < self.spm.get_piece_size() or self.spm.is_control(p) or self.spm.is_unknown(p):
            return None
        return self.spm.id_to_piece(p)

    def join(self, pieces: list[str]) -> str:
        return self.spm.decode_pieces(pieces)


class ByteLevelVocab(HFVocab):
    """Byte-level BPE (vocab.json + merges.txt) through the tokenizers library, as BartTokenizer."""

    def __init__(self, bpe, ids: Mapping[str, int], *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.bpe = bpe
        self._tokens = {i: t for t, i in ids.items()}

    def piece_ids(self, text: str) -> list[int]:
        return self.bpe.encode(text, add_special_tokens=False).ids

    def piece(self, i: int) -> str | None:
        return self._tokens.get(i)

    def join(self, pieces: list[str]) -> str:
        ids = [self.bpe.token_to_id(p) for p in pieces]
        return self.bpe.decode([i for i in ids if i is not None])


def _check_specials(folder: str, what: str, found: Mapping[str, int], config: Mapping[str, int]) -> None:
    """The tokenizer's </s> and <pad> must be the ids config.json decodes with."""
    for token, field in (("</s>", "eos_token_id"), ("<pad>", "pad_token_id")):
        if found[token] != config[field]:
            raise CheckpointError(
                M_(
                    "{folder}: {what} has {token} at id {id}, but config.json {field} is {want}",
                    folder=folder,
                    what=what,
                    token=token,
                    id=found[token],
                    field=field,
                    want=config[field],
                )
            )


def _check_range(folder: str, ids: Iterable[int], size: int, what: str) -> None:
    outside = sum(1 for i in ids if not 0 <= i < size)
    if outside:
        raise CheckpointError(
            M_(
                "{folder}: the tokenizer ({what}) has {n} token ids outside the model's {size} embeddings; "
                "it does not belong to this model",
                folder=folder,
                what=what,
                n=outside,
                size=size,
            )
        )


def t5_vocab(folder: Path, size: int, pad: int, eos: int, start: int, extra_ids: int) -> SentencePieceVocab:
    spm = _sentencepiece(folder / "spiece.model", folder.name)
    n = spm.get_piece_size()
    _check_range(folder.name, range(n + extra_ids), size, "spiece.model")
    _check_specials(folder.name, "spiece.model", {"</s>": spm.eos_id(), "<pad>": spm.pad_id()},
                    {"eos_token_id": eos, "pad_token_id": pad})  # fmt: skip
    specials = {"pad": pad, "bos": start, "eos": eos, "unk": spm.unk_id()}
    names = {spm.id_to_piece(i): i for i in range(n) if spm.is_control(i) or spm.is_unknown(i)}
    added = {**names, **{f"<extra_id_{i}>": n + extra_ids - 1 - i for i in range(extra_ids)}}
    vocab = SentencePieceVocab(spm, 0, "t5", size, specials, added)
    check_expansion(vocab, f"{folder.name}/spiece.model", CheckpointError)  # a rule that multiplies text: refused
    return vocab


def mbart_vocabs(
    folder: Path, size: int, src_lang: str, start: int, forced: int | None, pad: int = 1, eos: int = 2
) -> tuple[SentencePieceVocab, SentencePieceVocab]:
    spm = _sentencepiece(folder / "sentencepiece.bpe.model", folder.name)
    n = spm.get_piece_size()
    codes = {code: n + 1 + i for i, code in enumerate(MBART_LANGUAGE_CODES)}
    added = {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3, **codes, "<mask>": n + 1 + len(codes)}
    _check_range(folder.name, added.values(), size, "sentencepiece.bpe.model")
    _check_specials(folder.name, "sentencepiece.bpe.model", added, {"eos_token_id": eos, "pad_token_id": pad})
    if not isinstance(src_lang, str) or src_lang not in codes:
        raise CheckpointError(
            M_("{folder}: tokenizer_config.json names a source language that mBART does not have", folder=folder.name)
        )
    specials = {"pad": 1, "bos": 0, "eos": 2, "unk": 3}
    source = SentencePieceVocab(spm, 1, "mbart", size, specials, added, after_eos=[codes[src_lang]])
    target_specials = {**specials, "bos": start}
    target = SentencePieceVocab(
        spm, 1, "mbart", size, target_specials, added, prefix=[] if forced is None else [forced]
    )
    check_expansion(source, f"{folder.name}/sentencepiece.bpe.model", CheckpointError)
    return source, target


def bart_vocabs(
    folder: Path, size: int, start: int, forced: int | None, pad: int = 1, eos: int = 2
) -> tuple[ByteLevelVocab, ByteLevelVocab]:
    try:
        from tokenizers import ByteLevelBPETokenizer
    except ImportError:
        raise CheckpointError(
            M_("reading a BART tokenizer needs the tokenizers package: pip install tokenizers")
        ) from None
    merges = folder / "merges.txt"
    vocab_json = folder / "vocab.json"  # read by json here, then with merges.txt by the tokenizers library
    charge([(vocab_json, "json"), (vocab_json, "bpe"), (merges, "bpe")], folder.name)
    ids = read_json(vocab_json, origin=f"{folder.name}/vocab.json")
    if not isinstance(ids, dict) or not all(type(v) is int for v in ids.values()):
        raise CheckpointError(M_("{name} must map each token to an integer id", name="vocab.json"))
    _check_range(folder.name, ids.values(), size, "vocab.json")
    missing = [t for t in ("<s>", "<pad>", "</s>", "<unk>") if t not in ids]
    if missing:
        raise CheckpointError(M_("{folder}: vocab.json lacks {tokens}", folder=folder.name, tokens=", ".join(missing)))
    read_bytes(merges, MERGES_MAX_BYTES)  # bounded, a regular file
    try:
        bpe = ByteLevelBPETokenizer(str(folder / "vocab.json"), str(merges), add_prefix_space=False)
    except Exception as err:  # the library's own exception type is not exported
        raise CheckpointError(
            M_(
                "{folder}: vocab.json and merges.txt are not a byte-level BPE tokenizer ({problem})",
                folder=folder.name,
                problem=str(err)[:200],
            )  # fmt: skip
        ) from None
    _check_specials(folder.name, "vocab.json", ids, {"eos_token_id": eos, "pad_token_id": pad})
    specials = {"pad": ids["<pad>"], "bos": ids["<s>"], "eos": ids["</s>"], "unk": ids["<unk>"]}
    added = {t: ids[t] for t in ("<s>", "<pad>", "</s>", "<unk>", "<mask>") if t in ids}
    source = ByteLevelVocab(bpe, ids, "bart", size, specials, added, prefix=[ids["<s>"]])
    target = ByteLevelVocab(
        bpe, ids, "bart", size, {**specials, "bos": start}, added, prefix=[] if forced is None else [forced]
    )
    check_expansion(source, f"{folder.name}/vocab.json", CheckpointError)
    return source, target


def has_files(folder: Path, names: Iterable[str]) -> bool:
    """All of the tokenizer files are there (regular files; anything else is refused when read)."""
    present = [(folder / n).exists() for n in names]
    if any(present) and not all(present):
        raise CheckpointError(
            M_("{folder}: the tokenizer needs all of {files}", folder=folder.name, files=", ".join(names))
        )
    for n in names:
        if (folder / n).exists():
            regular_file(folder / n)
    return all(present)
