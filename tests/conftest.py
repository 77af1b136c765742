import os
import shutil
import sys
from copy import deepcopy
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from model import Tokenizer, TransformerConfig, Vocab, build_model  # noqa: E402

# One torch thread for the whole suite, set once here. Two intra-op threads per process spin when other work
# holds the cores (CI machines are shared): the same tests then take several times longer. The app servers
# that browser tests start set their own thread count (see app.py).
torch.set_num_threads(1)

LETTERS = list("abcdefghijklmnopqrstuvwxyz ")

# How the two pytest-xdist workers share the suite (pytest.ini: --dist loadgroup): each file's tests stay on one
# worker, so a file's browser and server fixtures start once; the two files that open eight browser sessions at
# once share one group, so they never run at the same time (together they made each other several times slower).
SAME_WORKER = {"test_e2e_load.py": "eight sessions", "test_proxy.py": "eight sessions"}


def pytest_collection_modifyitems(items):
    for item in items:
        item.add_marker(pytest.mark.xdist_group(SAME_WORKER.get(item.path.name, item.path.name)))


@pytest.fixture
def char_tokenizer() -> Tokenizer:
    vocab = Vocab.build(LETTERS, level="char")
    return Tokenizer(vocab, vocab)


def make_tiny(tokenizer: Tokenizer, seed: int = 0, **overrides) -> torch.nn.Module:
    """A small random model; three heads and asymmetric layer counts catch axis mix-ups."""
    config = TransformerConfig.preset(
        "tiny",
        src_vocab_size=len(tokenizer.source),
        tgt_vocab_size=len(tokenizer.target),
        **{"d_model": 24, "n_heads": 3, "n_encoder_layers": 3, "n_decoder_layers": 2, **overrides},
    )
    return build_model(config, seed=seed)


def letters_model(letters, seed: int = 0, **config) -> tuple[torch.nn.Module, Tokenizer]:
    """(model in eval mode, tokenizer) of a random model over the characters of `letters` (both sides), its
    configuration `config` beside the vocabulary sizes."""
    vocab = Vocab.build(letters, level="char")
    cfg = TransformerConfig(src_vocab_size=len(vocab), tgt_vocab_size=len(vocab), **config)
    return build_model(cfg, seed=seed).eval(), Tokenizer(vocab, vocab)


# a small decoder-only model (pre-LN, RoPE, tied embeddings): the head atlas's tests
DECODER_ONLY = dict(shape="decoder-only", n_encoder_layers=0, n_decoder_layers=2, d_model=16, n_heads=2, d_ff=32,
                    dropout=0.0, norm_first=True, positional="rope", max_len=64, share_embeddings=True,
                    tie_generator=True)  # fmt: skip


@pytest.fixture
def tiny(char_tokenizer):
    return make_tiny(char_tokenizer)


@pytest.fixture(scope="session", autouse=True)
def allow_test_folders(tmp_path_factory):
    """The suite's servers (AppTest in this process, `streamlit run` children) may open pytest's temp folders.

    Opening server folders is off unless the operator names some (model/checkpoints/serving.py); tests that check the
    refusals set or clear the variable themselves (monkeypatch).
    """
    from model.checkpoints.serving import ENV

    before = os.environ.get(ENV)
    os.environ[ENV] = str(tmp_path_factory.getbasetemp())
    yield
    if before is None:
        os.environ.pop(ENV, None)
    else:
        os.environ[ENV] = before


@pytest.fixture(scope="session", autouse=True)
def workers_at_the_servers_priority():
    """The suite's workers run at the server's priority (servers started by tests inherit the variable): on a busy
    CI machine every other process is the suite's own, not a room to yield to, and a worker at a lower priority
    would wait behind them for its whole deadline. tests/test_workers.py checks the lower priority itself."""
    from ui.serving.workers import NICE_ENV

    before = os.environ.get(NICE_ENV)
    os.environ[NICE_ENV] = "0"
    yield
    if before is None:
        os.environ.pop(NICE_ENV, None)
    else:
        os.environ[NICE_ENV] = before


@pytest.fixture(scope="session", autouse=True)
def private_result_cache(tmp_path_factory):
    """Results kept on disk under a checkpoint's digest (ui/serving/disk_cache.py) go to a folder of this run, not to the
    home folder: every run computes what it checks (servers started by tests inherit the variable)."""
    from ui.serving.disk_cache import ENV_DIR

    before = os.environ.get(ENV_DIR)
    os.environ[ENV_DIR] = str(tmp_path_factory.mktemp("result-cache"))
    yield
    if before is None:
        os.environ.pop(ENV_DIR, None)
    else:
        os.environ[ENV_DIR] = before


@pytest.fixture
def deferred(monkeypatch):
    """file name -> the callable a download button registered (Streamlit calls it when the button is pressed)."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    registered = {}
    real = MediaFileManager.add_deferred

    def record(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        registered[file_name] = data_callable
        return real(self, data_callable, mimetype, coordinates, file_name=file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", record)
    return registered


@pytest.fixture
def copy(built, tmp_path):
    """copy(name): a fresh copy of the test module's `built[name]` folder, to damage (its `built` fixture: name ->
    folder, made once per module)."""

    def make(name: str):
        return shutil.copytree(built[name], tmp_path / built[name].name)

    return make


@pytest.fixture
def no_model_built(monkeypatch):
    """Fails the test if a Transformer is constructed (the refusal must come before any tensor)."""

    def refuse(self, config):
        raise AssertionError("a Transformer was built")

    monkeypatch.setattr("model.network.transformer.Transformer.__init__", refuse)


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium per browser-test module (skips the module when Chromium or playwright is missing)."""
    from tests.browser_helpers import chromium

    with chromium() as b:
        yield b


@pytest.fixture(scope="module")
def server(request, tmp_path_factory, browser):  # browser first: without Chromium the test skips before a server starts
    """One app server per browser-test module, visited once so that later pages load warm."""
    from tests.browser_helpers import AppServer

    srv = AppServer(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]))
    try:
        srv.first_visit(browser)
        yield srv
    finally:
        srv.stop()


@pytest.fixture
def watch(browser, server):
    """A fresh browser window on the module's server, closed after the test."""
    from tests.browser_helpers import Watch

    w = Watch(browser, server.origin)
    yield w
    w.close()


def without_positions(model):
    """A copy of `model` whose positional tables are zero: the reference for switching positions off."""
    other = deepcopy(model)
    for _, module in other.positional_encodings():
        module.table.zero_()
    return other
