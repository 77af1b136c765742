"""The running app under load, offline: four browser sessions at once (one per page below), and bad uploads beside a working session.

Bad uploads include hostile archives (a bad CRC, an encrypted member, an unknown compression method, a
zip bomb): each is answered in the uploading session only, while another session keeps typing.

One Chromium, one browser context per session (its own cookies and websocket, as separate people
have), all talking to one `streamlit run app.py` that shares one loaded model between them.
"""

from __future__ import annotations

import os
import urllib.request
import zipfile

import numpy as np
import pytest

from tests.browser_helpers import (
    Watch,
    letters_checkpoint,
    plot_data,
    screenshot,
    sidebar_errors,
    type_input,
    upload_field,
    wait_text,
    wait_ticks,
    wait_title,
)
from tests.i18n_helpers import rendered
from tests.zip_helpers import bad_crc_zip, encrypted_zip, ratio_bomb_zip, unknown_method_zip

LOAD_FAILED = rendered("Could not load this model: {message}", message="")  # the start of every such error

EOS = "</s>"
# Four different inputs, then four others: lengths 1..11 so that no two sessions draw the same axes. Four sessions
# on two cores already run reruns side by side (the suite's time is spent on what eight would add: waiting).
FIRST = ["a", "hb", "ebcfa", "habcdefg"]
SECOND = ["hgfedcbahgf", "ceceaceca", "gahha", "hh"]


def source(text: str) -> list[str]:
    return [*text, EOS]


@pytest.fixture(scope="module")
def letters(tmp_path_factory):
    return letters_checkpoint(tmp_path_factory.mktemp("load_model"))


@pytest.fixture(scope="module")
def reference(letters):
    """What each input's encoder self-attention must look like (last layer, head average), computed here."""
    from model import capture, load_checkpoint

    model, tokenizer = load_checkpoint(letters)
    return lambda text: capture(model, tokenizer, text).encoder_self[-1].mean(axis=0)


def assert_own_attention(watches, texts, reference):
    """Each session shows its own tokens on both axes and its own input's attention in the heatmap."""
    for w, text in zip(watches, texts):
        wait_ticks(w, source(text), source(text))
    for w, text in zip(watches, texts):
        np.testing.assert_allclose(plot_data(w.page), reference(text), atol=1e-5, err_msg=f"session with {text!r}")


def test_four_sessions_at_once_each_see_their_own_input(browser, server, letters, reference):
    assert len(set(FIRST + SECOND)) == 8
    model = f"path:{letters}"
    watches = [Watch(browser, server.origin) for _ in FIRST]
    try:
        for w, text in zip(watches, FIRST):  # all four load before any is waited for
            w.goto(server.url(model=model, text=text, att_kind="encoder_self"), wait_until="commit")
        assert_own_attention(watches, FIRST, reference)

        for w, text in zip(watches, SECOND):  # all four type at once: four reruns run together on the server
            type_input(w.page, text)
        assert_own_attention(watches, SECOND, reference)

        # The server still answers every page, for all four at once.
        pages = ["", "positional", "decoding", "model"]  # the attention page is the app's root
        for w, page, text in zip(watches, pages, SECOND):
            w.goto(server.url(page, model=model, text=text), wait_until="commit")
        for w, page, text in zip(watches, pages, SECOND):
            if page == "":
                wait_ticks(w, source(text))
            elif page == "positional":
                wait_title(w, "PE matrix: 100 positions × 16 dimensions, base 10000")
            elif page == "decoding":
                wait_text(w, "Step 1 of")
                wait_ticks(w, source(text), plot="Cross-attention of the new position")
            else:
                wait_text(w, rendered("Shapes in attention"))
        with urllib.request.urlopen(server.origin + "/_stcore/health", timeout=10) as r:
            assert r.read().strip() == b"ok"
        for w in watches:
            w.assert_clean()
    finally:
        for w in watches:
            w.close()


def bad_uploads(folder, letters):
    """(file, what the sidebar must say) for four files that are not checkpoints."""
    blob = folder / "blob.pt"
    blob.write_bytes(np.random.default_rng(0).bytes(50 * 2**20))  # a random 50 MB blob
    data = (letters / "model.safetensors").read_bytes()
    truncated = folder / "truncated.zip"  # a checkpoint folder whose weights were cut off halfway
    with zipfile.ZipFile(truncated, "w") as z:
        z.writestr("letters/model.safetensors", data[: len(data) // 2])
        z.write(letters / "config.json", "letters/config.json")
        z.write(letters / "tokenizer.json", "letters/tokenizer.json")
    text = folder / "notes.txt"
    text.write_text("These are my lecture notes, not a model.\n" * 20)
    broken = folder / "broken.zip"
    broken.write_bytes(b"PK\x03\x04" + os.urandom(4096))
    hostile = {
        "crc.zip": bad_crc_zip(),
        "locked.zip": encrypted_zip(),
        "method.zip": unknown_method_zip(),
        "bomb.zip": ratio_bomb_zip(),
    }
    for name, data in hostile.items():
        (folder / name).write_bytes(data)
    return [
        (blob, "blob.pt is a file that holds no checkpoint format I know"),
        (truncated, "model.safetensors is not a readable safetensors file"),
        (text, "notes.txt is a file that holds no checkpoint format I know"),
        (broken, "broken.zip is not a readable .zip file"),
        (folder / "crc.zip", "config.json in crc.zip fails its CRC check"),
        (folder / "locked.zip", "config.json in locked.zip is encrypted"),
        (
            folder / "method.zip",
            "config.json in method.zip is compressed with AES encryption, which this server does not read",
        ),
        (folder / "bomb.zip", "model.safetensors in bomb.zip expands"),
    ]


def test_bad_uploads_are_explained_in_that_session_only(browser, server, letters, tmp_path):
    model = f"path:{letters}"
    uploader, other = Watch(browser, server.origin), Watch(browser, server.origin)
    try:
        other.goto(server.url(model=model, text="cafe"))
        uploader.goto(server.url(model=model, text="cafe"))
        wait_ticks(other, source("cafe"))
        wait_ticks(uploader, source("cafe"))
        files = upload_field(uploader)

        texts = ["bead", "dace", "fade", "hag", "cab", "ace", "bad", "gab"]
        for (path, expected), text in zip(bad_uploads(tmp_path, letters), texts, strict=True):
            files.set_input_files(str(path))
            type_input(other.page, text)  # the other session works while the upload is read
            error = wait_text(uploader, expected).inner_text()
            assert error.startswith(LOAD_FAILED), error
            assert str(tmp_path) not in error and "upload-" not in error  # names the file, not the server's copy
            wait_ticks(other, source(text))
            assert sidebar_errors(other.page) == []
            assert other.page.get_by_text(LOAD_FAILED).count() == 0
            if path.name == "blob.pt":
                screenshot(uploader.page, "e2e_bad_upload")
        uploader.assert_clean()
        other.assert_clean()
    finally:
        uploader.close()
        other.close()
