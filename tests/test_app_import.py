"""The sidebar opens checkpoints of other implementations: format shown, heads asked for, vocabularies optional."""

import re

import torch

from harness.reference.annotated import ann_make_model
from tests.apptest_helpers import charts, messages, open_page
from tests.i18n_helpers import matching, msgid, rendered

NO_VOCAB_FILE = msgid(" This model has no vocabulary file: type token ids from 0 to {last}, e.g. 12 7 431.")
LOAD_FAILED = msgid("Could not load this model: {message}")

SRC = ["<unk>", "<pad>", "<s>", "</s>", "the", "red", "car", "sees", "a", "dog"]
TGT = ["<unk>", "<pad>", "<s>", "</s>", "la", "voiture", "rouge", "voit", "un", "chien", "<blank>"]


def annotated_file(tmp_path, heads=4):
    torch.manual_seed(0)
    model = ann_make_model(len(SRC), len(TGT), N=2, d_model=32, d_ff=64, h=heads, max_len=80)
    path = tmp_path / "annotated.pt"
    torch.save(model.state_dict(), path)
    return path


def test_a_state_dict_runs_on_token_ids_until_a_vocabulary_is_given(tmp_path):
    path = annotated_file(tmp_path)
    at = open_page("attention", f"path:{path}", text="4 5 6")
    assert not at.exception, at.exception
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "Annotated Transformer" in captions
    assert at.sidebar.selectbox(key="model_heads").value == 8  # the default; 32 / 8 = 4 dims per head
    assert rendered("No vocabulary given: type token ids, e.g. 12 7 431; tokens show as <id 12>.") in messages(at)
    ticks = charts(at)[0]["layout"]["xaxis"]["ticktext"]
    assert ticks[1:4] == [
        "&lt;id 4&gt;",
        "&lt;id 5&gt;",
        "&lt;id 6&gt;",
    ]  # after the <s> this format starts sources with
    at.sidebar.selectbox(key="model_heads").set_value(4).run()
    at.segmented_control(key="att_view").set_value("grid").run()
    assert not at.exception
    assert len(charts(at)[0]["data"]) == 4  # the head grid now has four heads
    assert at.query_params["model_heads"] == "4"


def test_words_without_a_vocabulary_are_refused_with_a_hint(tmp_path):
    at = open_page("attention", f"path:{annotated_file(tmp_path)}", text="the red car")
    assert re.search(matching(NO_VOCAB_FILE, last=9), messages(at)) and not charts(at)


def test_an_unknown_file_is_explained_in_the_sidebar(tmp_path):
    blob = tmp_path / "random.pt"
    blob.write_bytes(bytes(range(256)) * 64)
    at = open_page("attention", f"path:{blob}")
    assert not at.exception
    assert re.search(matching(LOAD_FAILED), " ".join(e.value for e in at.sidebar.error))


def test_a_pickle_with_code_is_refused(tmp_path):
    class Evil:
        def __reduce__(self):
            return (exec, ("open('/tmp/should-not-exist-app', 'w').write('x')",))

    path = tmp_path / "evil.pt"
    torch.save({"state_dict": Evil()}, path)
    at = open_page("attention", f"path:{path}")
    errors = " ".join(e.value for e in at.sidebar.error)
    assert re.search(matching(LOAD_FAILED), errors) and "pickle" in errors.lower()
    from pathlib import Path

    assert not Path("/tmp/should-not-exist-app").exists()
