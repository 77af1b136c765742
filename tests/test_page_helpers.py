"""The helpers the Compare, Inside and Training pages moved into ui/: their plain parts, without a page run."""

from __future__ import annotations

from i18n import language_scope
from model.analysis.compare import Mismatch
from model.checkpoints.demos import list_demos
from model.checkpoints.snapshots import list_snapshots
from tests.i18n_helpers import msgid_starting, rendered
from ui.views.compare_models import mismatch_message
from ui.views.training_snapshots import checkpoint_folder, stored_bytes

LAYERS = msgid_starting("A has {a} layers for this kind of attention, B has {b}")


def test_a_mismatch_is_said_with_both_models_values():
    assert mismatch_message(Mismatch("layers", 3, 2)).startswith(rendered(LAYERS, a=3, b=2))
    assert "(A: 5 tokens, B: 4)" in mismatch_message(Mismatch("source_tokens", list("abcde"), list("abcd")))
    # decoder inputs (model.analysis.compare.decoder_inputs: without <s>) as text, escaped for Markdown
    said = mismatch_message(Mismatch("target_tokens", ["la", "*x*"], ["le"]))
    assert "“la \\*x\\*”" in said and "“le”" in said
    with language_scope("zh"):
        assert mismatch_message(Mismatch("heads", 4, 2)).startswith("A 每层有 4 个头")


def test_snapshots_are_found_for_a_demo_and_never_for_an_upload():
    demo = next(d for d in list_demos() if (d.path / "snapshots").is_dir())
    assert checkpoint_folder(f"demo:{demo.name}|heads=0") == demo.path
    assert checkpoint_folder("upload:abc") is None and checkpoint_folder("demo:no-such-demo") is None
    snaps = list_snapshots(demo.path)
    assert stored_bytes(snaps) == sum((s.path / "model.safetensors").stat().st_size for s in snaps.items) > 0
