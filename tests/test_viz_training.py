"""The Training page's animation (viz/training_figs.py): one frame per snapshot, each frame the snapshot's own map."""

import numpy as np
import pytest

from model import capture, load_checkpoint
from model.checkpoints.demos import list_demos
from model.checkpoints.snapshots import list_snapshots
from tasks.gold import gold_example
from viz.tokens import capture_rows
from viz.training_figs import FRAME_MS, training_animation


def _maps(n: int, t: int = 3, s: int = 4) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.dirichlet(np.ones(s), size=t).astype(np.float32) for _ in range(n)]


def test_one_frame_per_snapshot_with_play_pause_and_a_step_slider():
    maps = _maps(3)
    fig = training_animation(maps, [0, 4, 8], ["a", "b", "c"], ["w", "x", "y", "z"], ["s0", "s4", "s8"], start=1)
    assert [f.name for f in fig.frames] == ["0", "4", "8"]
    for frame, m, title in zip(fig.frames, maps, ["s0", "s4", "s8"], strict=True):
        np.testing.assert_allclose(np.asarray(frame.data[0].z), m)
        assert frame.traces == (0,) and frame.layout.title.text == title
    np.testing.assert_allclose(np.asarray(fig.data[0].z), maps[1])  # the step chosen shows first
    assert fig.layout.title.text == "s4" and fig.layout.sliders[0].active == 1
    assert [s.label for s in fig.layout.sliders[0].steps] == ["0", "4", "8"]
    assert [list(s.args[0]) for s in fig.layout.sliders[0].steps] == [["0"], ["4"], ["8"]]
    play, pause = fig.layout.updatemenus[0].buttons
    assert play.label.endswith("Play") and play.method == "animate" and play.args[1]["frame"]["duration"] == FRAME_MS
    assert play.args[1]["fromcurrent"] and pause.label.endswith("Pause")
    assert fig.layout.height <= 520  # controls included, within the chart's box


def test_the_controls_text_is_of_the_charts_size():
    fig = training_animation(_maps(2), [0, 1], ["a", "b", "c"], list("wxyz"), ["t0", "t1"], tick_px=18)
    assert fig.layout.sliders[0].font.size == 18
    assert fig.layout.updatemenus[0].font.size == 18 and fig.layout.xaxis.tickfont.size == 18


def test_mismatched_inputs_are_refused():
    with pytest.raises(ValueError, match="one of each per snapshot"):
        training_animation(_maps(2), [0, 1, 2], ["a", "b", "c"], list("wxyz"), ["t0", "t1"])
    with pytest.raises(ValueError, match="start 2"):
        training_animation(_maps(2), [0, 1], ["a", "b", "c"], list("wxyz"), ["t0", "t1"], start=2)


def test_each_frame_is_the_capture_of_its_snapshot():
    """From the shipped demo's snapshots: frame i holds the head-averaged cross-attention of snapshot i."""
    demo = next(d for d in list_demos() if (d.path / "snapshots").is_dir())
    snaps = list_snapshots(demo.path)
    text = demo.examples[0]
    target = gold_example(demo.card, text).target  # every snapshot reads the same decoder input, as on the page
    caps = []
    for s in snaps.items:
        model, tokenizer = load_checkpoint(s.path)
        caps.append(capture(model, tokenizer, text, target=target))
    maps = [c.cross[-1].mean(0) for c in caps]
    fig = training_animation(
        maps, snaps.steps, capture_rows(caps[0], "cross"), caps[0].source_tokens, [f"{s}" for s in snaps.steps]
    )
    assert len(fig.frames) == len(snaps.items) == len(snaps.steps) > 1
    for frame, c in zip(fig.frames, caps, strict=True):
        np.testing.assert_allclose(np.asarray(frame.data[0].z), c.cross[-1].mean(0), atol=1e-6)
