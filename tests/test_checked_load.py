"""A visitor's checkpoint is read, probed and converted in a limited worker; the server maps the checked result and
runs the visitor's tokenizer behind a fence (a helper process whose every call has a time limit).

One tiny GPT-2 folder (tests/hf_one_stack.py) built once per module; each test copies it."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import threading

import pytest
import torch

from model import CheckpointError, load_checkpoint
from model.checkpoints import handoff
from model.checkpoints.tokenizer_budget import TOO_LARGE
from model.text import bounded
from tests.hf_one_stack import BUILDERS
from ui.serving.workers import CANCELLED, OUT_OF_MEMORY, WorkerStopped
from ui.shell import model_picker

pytestmark = pytest.mark.filterwarnings("ignore")

SLOW_REGEX = "(ab|abab)+x"  # backtracks on runs of "ab" (2^n ways), passes the probes' runs of one character
SLOW_RUN = "ab" * 30 + " "  # about a second of backtracking each, short of Oniguruma's retry limit (no panic)


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory):
    return BUILDERS["gpt2"](tmp_path_factory.mktemp("checked")).folder


@pytest.fixture
def folder(gpt2, tmp_path):
    return shutil.copytree(gpt2, tmp_path / gpt2.name)


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """The handoff's private folders are made here, so a test can see that none is left behind."""
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(root))
    return root


def message(err: pytest.ExceptionInfo):
    return err.value.args[0]


def test_parsing_probing_and_converting_happen_in_the_worker_and_the_server_maps_the_result(
    folder, private_tmp, monkeypatch
):
    """In the server process, any parse of a file (json, the tokenizers library's from_str), the tokenizer's probes
    and the format's load fail the test; they run normally in the worker (another process). The model and tokenizer
    that come back are those of a load in one process, and the weights are a mapping of a file already deleted."""
    server = os.getpid()
    expected_model, expected_tok = load_checkpoint(folder)

    def only_in_the_worker(real):
        def call(*args, **kwargs):
            ours = isinstance(args[0], str) and '"data_offsets"' in args[0]  # the worker's weights' header, bounded
            assert os.getpid() != server or ours, "a visitor's file was read in the server process"
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(json, "loads", only_in_the_worker(json.loads))
    monkeypatch.setattr(
        "tokenizers.Tokenizer.from_str", only_in_the_worker(__import__("tokenizers").Tokenizer.from_str)
    )
    monkeypatch.setattr(bounded, "check_probes", only_in_the_worker(bounded.check_probes))
    monkeypatch.setattr(handoff, "load_checkpoint", only_in_the_worker(handoff.load_checkpoint))

    model, tok = model_picker._read_checked(str(folder), None, ())
    state, expected = model.state_dict(), expected_model.state_dict()
    assert state.keys() == expected.keys() and all(torch.equal(state[k], expected[k]) for k in state)
    text = "the cat sat on a mat"
    assert tok.source.encode(text) == expected_tok.source.encode(text)
    assert list(private_tmp.iterdir()) == []  # the worker's files are gone; the model keeps the mapping
    handoff.unfence(tok)


def test_a_load_that_outgrows_the_workers_memory_stops_there(folder, private_tmp, monkeypatch):
    def swell(*args, **kwargs):
        return bytearray(64 * 2**30)  # far beyond the worker's address space

    monkeypatch.setattr(handoff, "load_checkpoint", swell)
    with pytest.raises(WorkerStopped) as err:
        model_picker._read_checked(str(folder), None, ())
    assert message(err).template == OUT_OF_MEMORY
    assert list(private_tmp.iterdir()) == []


def test_the_visitor_leaving_stops_the_load(folder, private_tmp, monkeypatch):
    monkeypatch.setattr(handoff, "load_checkpoint", lambda *a, **k: threading.Event().wait())  # never returns
    monkeypatch.setattr(model_picker, "session_gone", lambda: True)
    with pytest.raises(WorkerStopped) as err:
        model_picker._read_checked(str(folder), None, ())
    assert message(err).template == CANCELLED
    assert list(private_tmp.iterdir()) == []


def test_the_tokenizers_bytes_are_counted_against_the_budget_before_they_are_unpickled(tmp_path, monkeypatch):
    monkeypatch.setenv("VIZ_TOKENIZER_MB", "1")

    def refuse(*args, **kwargs):
        raise AssertionError("unpickled before it was counted")

    monkeypatch.setattr(handoff.pickle, "loads", refuse)
    config = load_checkpoint("checkpoints/reverse")[0].config.to_dict()
    checked = handoff.Checked(str(tmp_path), config, b"x" * 2**17, "upload.zip")  # 128 KB x 18 > 1 MB
    with pytest.raises(CheckpointError) as err:
        handoff.open_checked(checked)
    assert message(err).template == TOO_LARGE and message(err).values["origin"] == "upload.zip"


def slow_tokenizer(folder) -> None:
    data = json.loads((folder / "tokenizer.json").read_text())
    data["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": SLOW_REGEX}, "behavior": "Isolated",
                             "invert": False}  # fmt: skip
    (folder / "tokenizer.json").write_text(json.dumps(data))


def test_a_tokenizer_slow_on_a_visitors_text_is_cut_inside_one_call_and_the_page_gets_a_message(folder, monkeypatch):
    """A pre-tokenizer that passes the load-time probes but backtracks on runs of "ab": one piece of the text
    holds the encoding for seconds. The fence kills its helper at the time limit (inside the call: the next call
    needs a fresh helper), check_text answers with the slow-tokenizer message, and the tokenizer reads the next text."""
    from model.text.inputs import check_text

    slow_tokenizer(folder)
    _, tok = model_picker._read_checked(str(folder), None, ())  # the probes passed
    assert tok.source.encode("a b") == load_checkpoint(folder)[1].source.encode("a b")
    fence = tok.source._fence
    assert fence.forks == 1
    monkeypatch.setattr(bounded, "ENCODE_SECONDS", 0.3)  # well under one run's backtracking
    check = check_text(SLOW_RUN * 4, tok.source, 40)
    assert [e.template for e in check.errors] == [bounded.TOKENIZER_SLOW]
    assert fence._pid is None  # the helper that was stuck was killed, not waited for
    assert check_text("a b c", tok.source, 40).errors == []
    assert fence.forks == 2
    handoff.unfence(tok)


def test_a_released_models_tokenizer_helper_stops(folder):
    from ui.serving import held_models

    model, tok = model_picker._read_checked(str(folder), None, ())
    tok.source.encode("a b")
    pid = tok.source._fence._pid
    os.kill(pid, 0)  # running
    held_models._stop_helpers((model, tok))
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert tok.source._fence is None and tok.source.encode("a b")  # encoding here again


def test_a_fenced_tokenizer_pickles_without_its_helper(folder):
    _, tok = model_picker._read_checked(str(folder), None, ())
    tok.source.encode("a b")
    copy = pickle.loads(pickle.dumps(tok))
    assert copy.source._fence is None and copy.source.encode("a b") == tok.source.encode("a b")
    handoff.unfence(tok)


def test_a_worker_forked_from_the_server_encodes_by_itself_and_leaves_the_servers_helper_alone(folder):
    from ui.serving.workers import run_limited

    _, tok = model_picker._read_checked(str(folder), None, ())
    expected = tok.source.encode("the cat sat")
    pid = tok.source._fence._pid
    fence = tok.source._fence

    def in_the_worker():
        ids = tok.source.encode("the cat sat")
        fence.close()  # a no-op there
        return ids, fence._pid

    assert run_limited(in_the_worker) == (expected, pid)
    assert fence._pid == pid and tok.source.encode("the cat sat") == expected and fence.forks == 1
    handoff.unfence(tok)


def test_an_upload_whose_load_did_not_finish_is_not_refused(monkeypatch):
    """A load its worker did not finish (cancelled, past the deadline) may be tried again: the upload's files stay
    and no refusal is remembered; a load that failed on the file is refused as before."""
    from i18n import M_

    refused = []
    monkeypatch.setattr(model_picker, "refuse_upload", lambda upload, err, remember: refused.append(err))
    model_picker._refuse_upload(object(), WorkerStopped(M_(CANCELLED)), remember=True)
    assert refused == []
    model_picker._refuse_upload(object(), CheckpointError("bad file"), remember=True)
    assert [str(e) for e in refused] == ["bad file"]


def test_the_helper_outlives_the_thread_that_started_it_and_a_killed_one_is_replaced(folder):
    """Each Streamlit run has a thread of its own: the helper started in one serves the next. A helper killed from
    outside between two calls is replaced at the next call, which answers."""
    import signal

    _, tok = model_picker._read_checked(str(folder), None, ())
    expected = load_checkpoint(folder)[1].source.encode("the cat sat")
    first = threading.Thread(target=tok.source.encode, args=("a b",))
    first.start()
    first.join()
    fence = tok.source._fence
    assert tok.source.encode("the cat sat") == expected and fence.forks == 1
    os.kill(fence._pid, signal.SIGKILL)
    assert tok.source.encode("the cat sat") == expected and fence.forks == 2
    handoff.unfence(tok)


def test_a_visitors_card_is_read_in_a_worker_and_bounded_by_what_a_card_holds(folder, monkeypatch):
    from model.checkpoints import safe_io

    (folder / "card.json").write_text(json.dumps({"examples": ["abc"], "task": "x" * 2**20}))  # 1 MB: not a card
    with pytest.raises(CheckpointError) as err:
        model_picker._card(str(folder), 1.0)
    assert message(err).values["name"] == "card.json"
    assert safe_io.SMALL_JSON_MAX_BYTES < (folder / "card.json").stat().st_size
    monkeypatch.setattr(model_picker, "load_card", lambda path: os.getpid())
    assert model_picker._card(str(folder), 2.0) != os.getpid()


@pytest.mark.parametrize("kind", ["annotated", "native"])
def test_the_handoff_keeps_every_tensor_and_table_of_other_formats(kind, tmp_path):
    """A PyTorch state_dict (the Annotated Transformer's: one sinusoid table for both sides) and this project's own
    folder come back from the worker as a load in one process gives them, the shared table shared again."""
    from harness.reference.annotated import ann_make_model

    if kind == "annotated":
        torch.manual_seed(0)
        path = tmp_path / "annotated.pt"
        torch.save(ann_make_model(10, 11, N=2, d_model=32, d_ff=64, h=4, max_len=80).state_dict(), path)
        options = {"n_heads": 4}
    else:
        path, options = "checkpoints/reverse", {}
    expected, _ = load_checkpoint(path, **options)
    model, tok = model_picker._read_checked(str(path), options.get("n_heads"), ())
    state, want = model.state_dict(), expected.state_dict()
    assert state.keys() == want.keys() and all(torch.equal(state[k], want[k]) for k in state)
    for side in ("src_pe", "tgt_pe"):
        assert torch.equal(getattr(model, side).table, getattr(expected, side).table)
    shared = expected.src_pe.table.data_ptr() == expected.tgt_pe.table.data_ptr()
    assert (model.src_pe.table.data_ptr() == model.tgt_pe.table.data_ptr()) == shared
    assert model.config == expected.config and not model.training


def test_the_helper_keeps_none_of_the_servers_descriptors(folder, tmp_path):
    """A file the server holds open (as its listening socket and its visitors' connections) is not held by the
    helper: a connection the server closes closes."""
    held = open(tmp_path / "held", "w")  # noqa: SIM115 - open across the fork on purpose
    try:
        _, tok = model_picker._read_checked(str(folder), None, ())
        tok.source.encode("a b")
        helper = tok.source._fence._pid
        targets = [os.readlink(f"/proc/{helper}/fd/{n}") for n in os.listdir(f"/proc/{helper}/fd")]
        assert str(tmp_path / "held") not in targets and len(targets) <= 5  # 0-2 and its two pipe ends
        handoff.unfence(tok)
    finally:
        held.close()


def test_joining_pieces_back_into_text_runs_in_the_helper_and_a_slow_decoder_shows_the_pieces(folder, monkeypatch):
    """The library's decoder (rules a visitor's tokenizer.json writes as well) runs in the helper: the text comes back
    as the unfenced decoder writes it, from another process. A decoder past its time limit is cut there, and the
    pieces are shown as they are."""
    import time

    plain = load_checkpoint(folder)[1].target
    vocab_class = type(plain)
    real_join = vocab_class.join

    def join(self, pieces):  # where it ran, then what it wrote; seconds long on a piece with "cat"
        if any("cat" in p for p in pieces):
            time.sleep(30)
        return f"{os.getpid()}|{real_join(self, pieces)}"

    monkeypatch.setattr(vocab_class, "join", join)  # before the fence takes the bound method
    _, tok = model_picker._read_checked(str(folder), None, ())
    pieces = tok.target.decode(tok.target.encode("the dog ran"))
    ran_in, _, text = tok.target.detokenize(pieces).partition("|")
    assert int(ran_in) not in (os.getpid(), 0) and text == real_join(plain, pieces).strip()
    monkeypatch.setattr(bounded, "ENCODE_SECONDS", 0.3)
    pieces = tok.target.decode(tok.target.encode("the cat sat"))
    started = time.monotonic()
    assert tok.target.detokenize(pieces) == "".join(pieces).strip()
    assert time.monotonic() - started < 10 and tok.target._fence._pid is None  # the stuck helper was killed
    handoff.unfence(tok)
