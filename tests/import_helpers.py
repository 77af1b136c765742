"""Shared pieces of the importer tests: running this project's model with its own recording hooks,
and comparing logits and every attention map with a reference model's."""

from __future__ import annotations

import torch

from model import record

KINDS = ("encoder_self", "decoder_self", "cross")
TOL = 1e-5


def perturb(model: torch.nn.Module, seed: int = 0, scale: float = 0.2) -> None:
    """Add noise to every parameter (norm gains and biases included) so that a swapped or skipped tensor shows."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * scale)


def id_batch(
    src_vocab: int,
    tgt_vocab: int,
    first_src: int | None,
    first_tgt: int,
    pad: int,
    src_len: int = 7,
    tgt_len: int = 5,
    seed: int = 0,
):
    """(src (2, S), tgt (2, T)) of ordinary ids (>= 4), the second row padded at the end of both sides.

    first_src / first_tgt: the start token of each side (None: sources start with a word).
    """
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, src_vocab, (2, src_len), generator=g)
    tgt = torch.randint(4, tgt_vocab, (2, tgt_len), generator=g)
    if first_src is not None:
        src[:, 0] = first_src
    tgt[:, 0] = first_tgt
    src[1, src_len - 2 :] = pad
    tgt[1, tgt_len - 1 :] = pad
    return src, tgt


@torch.no_grad()
def our_run(model, src: torch.Tensor, tgt: torch.Tensor):
    """(logits (B, T, V), {kind: [per-layer (B, H, q, k)]}) recorded by this project's own hooks."""
    with record(model) as rec:
        logits = model(src, tgt)
    return logits, {kind: [rec.attention[(kind, i)][-1] for i in rec.layers(kind)] for kind in KINDS}


def assert_maps_equal(ours: dict, ref: dict, tol: float = TOL) -> None:
    for kind in KINDS:
        assert len(ours[kind]) == len(ref[kind]) >= 2, kind
        for layer, (a, b) in enumerate(zip(ours[kind], ref[kind])):
            assert a.shape == b.shape, (kind, layer, a.shape, b.shape)
            err = (a - b).abs().max().item()
            assert err < tol, f"{kind} layer {layer}: max difference {err}"


def assert_close(a: torch.Tensor, b: torch.Tensor, tol: float = TOL) -> None:
    assert a.shape == b.shape, (a.shape, b.shape)
    err = (a - b).abs().max().item()
    assert err < tol, f"max difference {err}"


def save_torchtext_like_vocab(path, source: list[str], target: list[str], monkeypatch, legacy: bool = False) -> None:
    """torch.save((vocab_src, vocab_tgt), path) as the Annotated Transformer does, with stand-ins for
    torchtext's classes that pickle the same way (torchtext itself is not installed here).

    torchtext >= 0.12: torchtext.vocab.vocab.Vocab (an nn.Module) holding a torchtext._torchtext.Vocab,
    whose pickled state is ("version", [default index], itos, []). legacy=True: torchtext.vocab.Vocab with
    freqs / itos / stoi / unk_index in its __dict__. The stand-ins are gone before anything reads the file.
    """
    import collections
    import sys
    import types

    from torch import nn

    class CppVocab:
        def __init__(self, itos):
            self.itos = list(itos)

        def __getstate__(self):
            return ("0.0.2", [self.itos.index("<unk>")], self.itos, [])

        def __setstate__(self, state):
            self.itos = state[2]

    class ModuleVocab(nn.Module):
        def __init__(self, vocab):
            super().__init__()
            self.vocab = vocab

    class LegacyVocab:
        def __init__(self, itos):
            self.freqs = collections.Counter({t: 3 for t in itos})
            self.itos = list(itos)
            self.unk_index = 0
            self.stoi = collections.defaultdict(int, {t: i for i, t in enumerate(itos)})
            self.vectors = None

    with monkeypatch.context() as m:
        for name, cls, module in (
            ("Vocab", CppVocab, "torchtext._torchtext"),
            ("Vocab", ModuleVocab, "torchtext.vocab.vocab"),
            ("Vocab", LegacyVocab, "torchtext.vocab"),
        ):
            cls.__module__, cls.__qualname__, cls.__name__ = module, name, name
        mods = {
            n: types.ModuleType(n)
            for n in ("torchtext", "torchtext._torchtext", "torchtext.vocab", "torchtext.vocab.vocab")
        }
        mods["torchtext._torchtext"].Vocab = CppVocab
        mods["torchtext.vocab.vocab"].Vocab = ModuleVocab
        mods["torchtext.vocab"].Vocab = LegacyVocab
        for n, mod in mods.items():
            m.setitem(sys.modules, n, mod)
        if legacy:
            pair = (LegacyVocab(source), LegacyVocab(target))
        else:
            pair = (ModuleVocab(CppVocab(source)), ModuleVocab(CppVocab(target)))
        torch.save(pair, path)


def _file_mappings(folder) -> list[tuple[int, int]]:
    """Address ranges of this process's memory maps of the folder's safetensors files (/proc/self/maps)."""
    from pathlib import Path

    names = {str(p.resolve()) for p in Path(folder).glob("*.safetensors")}
    ranges = []
    with open("/proc/self/maps") as fh:
        for line in fh:
            fields = line.split(maxsplit=5)
            if len(fields) == 6 and fields[5].strip() in names:
                start, end = (int(x, 16) for x in fields[0].split("-"))
                ranges.append((start, end))
    return ranges


def assert_loaded_without_copies(folder, monkeypatch) -> None:
    """Loading copies no weight: by default every parameter is a view of the weights file's memory map (as
    transformers' from_pretrained keeps them); with VIZ_MAP_WEIGHTS=0 (the app server's default) every parameter is a
    view of the one buffer the file was read into, so loading holds the weights once at its peak."""
    from model import load_checkpoint

    monkeypatch.delenv("VIZ_MAP_WEIGHTS", raising=False)
    model, _ = load_checkpoint(folder)
    ranges = _file_mappings(folder)
    assert ranges
    for name, p in model.named_parameters():
        assert any(start <= p.data_ptr() < end for start, end in ranges), name
    monkeypatch.setenv("VIZ_MAP_WEIGHTS", "0")
    model, _ = load_checkpoint(folder)
    assert len({p.untyped_storage().data_ptr() for p in model.parameters()}) == 1
