"""The one registry of checkpoint formats: every format implements detect / inspect / load on a shared
Source, each file is read once per call, and a new format is one module plus one registry line."""

import types
from collections import Counter

import pytest
import torch

from harness.reference.annotated import ann_make_model
from model import CheckpointError, load_checkpoint, save_checkpoint
from model.checkpoints.formats import FORMATS, REGISTRY, CheckpointInfo, inspect_checkpoint, known_formats, registry
from scripts import docs_families
from tests.conftest import make_tiny


def test_every_format_module_implements_the_protocol():
    assert [fmt.NAME for fmt in REGISTRY] == list(FORMATS)
    assert [fmt.__name__.rsplit(".", 1)[-1] for fmt in REGISTRY] == list(registry.MODULES)  # one line per format
    names = [fmt.NAME for fmt in REGISTRY]
    core = ["marian", "t5", "bart", "gpt2", "llama", "bert", "transformer-viz", "annotated", "gordic", "torch-tutorial"]
    assert [n for n in names if n in core] == core  # detection order: the state_dict formats last
    assert names[-4:] == core[-4:]
    for fmt in REGISTRY:
        assert isinstance(fmt.TITLE, str) and FORMATS[fmt.NAME] == fmt.TITLE
        assert all(callable(getattr(fmt, step)) for step in ("detect", "inspect", "load")), fmt.NAME
        assert f"{fmt.NAME}: {fmt.TITLE}" in known_formats()


@pytest.fixture
def counted(monkeypatch):
    """Counts torch.load calls (with their mmap flag) and JSON files read, by file name."""
    calls = Counter()
    real_load = torch.load

    def load(path, *args, **kwargs):
        calls[("torch.load", str(path).rsplit("/", 1)[-1], kwargs.get("mmap"))] += 1
        return real_load(path, *args, **kwargs)

    from model.checkpoints.formats import source

    real_read_json = source.read_json

    def read_json(path, *args, **kwargs):
        calls[("json", str(path).rsplit("/", 1)[-1])] += 1
        return real_read_json(path, *args, **kwargs)

    monkeypatch.setattr(torch, "load", load)
    monkeypatch.setattr(source, "read_json", read_json)
    return calls


@pytest.mark.parametrize("mapping", [None, "0"])
def test_a_state_dict_file_is_read_once_per_load_and_mapped_not_read_on_inspect(
    tmp_path, counted, monkeypatch, mapping
):
    """One torch.load per load, detection and loading sharing it: the archive mapped by default (as transformers),
    read into private memory with VIZ_MAP_WEIGHTS=0 (the app server's default); inspecting maps it, reads nothing."""
    if mapping is None:
        monkeypatch.delenv("VIZ_MAP_WEIGHTS", raising=False)
    else:
        monkeypatch.setenv("VIZ_MAP_WEIGHTS", mapping)
    torch.save(ann_make_model(10, 11, N=2, d_model=8, d_ff=16, h=2, max_len=30).state_dict(), tmp_path / "a.pt")
    load_checkpoint(tmp_path / "a.pt", n_heads=2)
    assert counted == Counter({("torch.load", "a.pt", mapping is None): 1})  # detect and load share the one read
    counted.clear()
    inspect_checkpoint(tmp_path / "a.pt")
    assert counted == Counter({("torch.load", "a.pt", True): 1})


def test_a_folder_reads_each_json_once(tmp_path, char_tokenizer, counted):
    save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "ours")
    load_checkpoint(tmp_path / "ours")
    assert counted[("json", "config.json")] == 1  # detection and loading share it


def test_a_new_format_is_one_module_and_one_registry_line(tmp_path, monkeypatch, char_tokenizer):
    """What adding a format takes: a module with NAME, TITLE, detect, inspect, load; then one line in REGISTRY."""
    save_checkpoint(make_tiny(char_tokenizer), char_tokenizer, tmp_path / "ckpt")
    (tmp_path / "ckpt" / "MARKER").write_text("")
    native = registry.by_name("transformer-viz")
    fmt = types.ModuleType("marked")
    fmt.NAME, fmt.TITLE = "marked", "a marked checkpoint folder"
    fmt.detect = lambda src: src.has("MARKER")
    fmt.inspect = lambda src: CheckpointInfo(
        str(src.path), fmt.NAME, fmt.TITLE, False, False, 24, 27, 27, notes="marked"
    )
    fmt.load = native.load
    monkeypatch.setattr(registry, "REGISTRY", (fmt, *registry.REGISTRY))  # the one registry line
    monkeypatch.setattr(registry, "FORMATS", {f.NAME: f.TITLE for f in registry.REGISTRY})
    assert inspect_checkpoint(tmp_path / "ckpt").notes == "marked"
    assert load_checkpoint(tmp_path / "ckpt")[0].config.d_model == 24
    assert "marked: a marked checkpoint folder" in registry.known_formats()
    torch.save({"x.weight": torch.zeros(2)}, tmp_path / "x.pt")
    with pytest.raises(CheckpointError, match="marked: a marked checkpoint folder"):
        load_checkpoint(tmp_path / "x.pt")


def test_both_readmes_list_every_registered_format():
    """The docs follow the registry: a new format that the READMEs and the documentation site (docs/, its Chinese
    pages under docs/zh/) do not mention fails here."""
    from pathlib import Path

    from i18n import _, language_scope

    root = Path(__file__).resolve().parents[1]
    site = sorted((root / "docs").glob("*.md"))
    zh_site = sorted((root / "docs" / "zh").glob("*.md"))
    # the pages as the site shows them: the families' table made from the registry in place of its marker
    english = "\n".join(docs_families.expand(p.read_text(), "en") for p in [root / "README.md", *site])
    chinese = "\n".join(docs_families.expand(p.read_text(), "zh") for p in [root / "README.zh.md", *zh_site])
    for page in (root / "docs" / "families.md", root / "docs" / "zh" / "families.md"):
        assert docs_families.MARKER in page.read_text(), page
    for fmt in REGISTRY:
        assert f"`{fmt.NAME}`" in english, fmt.NAME
        if getattr(fmt, "MODEL_TYPES", None):  # the Hugging Face families: by title in both languages
            assert fmt.TITLE in english, fmt.TITLE
            with language_scope("zh"):
                assert _(fmt.TITLE) in chinese, fmt.NAME
    families = registry.hugging_face_families()
    assert families.startswith("MarianMT, T5 and flan-T5, BART, mBART, GPT-2, Llama, Qwen2, ")
    assert families.endswith(", BERT") and all(
        name in families for fmt in REGISTRY for name in getattr(fmt, "MODEL_TYPES", {}).values()
    )
