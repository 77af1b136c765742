"""`transformer-viz atlas`: the local run writes the atlas of head_scores; the same shards as Ray tasks on a local
Ray instance (127.0.0.1) merge into exactly the local result."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from cli import atlas as cli_atlas
from cli.main import main as cli_main
from model import head_scores, load_checkpoint, save_checkpoint
from tests.conftest import DECODER_ONLY, letters_model

TEXTS = ["abcabcabc", "hello world", "ponmlk", "aaaa", "dcba", "the cat", "abcdefg", "gfedcba", "zz", "abab"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("atlas") / "tiny"
    save_checkpoint(*letters_model(list("abcdefghijklmnopqrstuvwxyz "), seed=2, **DECODER_ONLY), out)
    return out


def test_the_command_writes_the_atlas_of_head_scores(folder, tmp_path):
    texts = tmp_path / "corpus.txt"
    texts.write_text("\n".join(TEXTS) + "\n\n", encoding="utf-8")
    out = tmp_path / "deep" / "atlas.json"
    assert cli_main(["atlas", str(folder), "--texts", str(texts), "--out", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    model, tok = load_checkpoint(folder)
    want = head_scores(model, tok, "previous_token", texts=TEXTS)
    np.testing.assert_allclose(data["scores"]["previous_token"], want, atol=1e-12)
    np.testing.assert_allclose(data["scores"]["induction"], head_scores(model, tok, "induction"), atol=1e-12)
    assert set(data["switch_off"]) == set(data["roles"]) and len(data["labels"]["corpus"]) == len(TEXTS)
    assert cli_main(["atlas", str(folder), "--texts", str(tmp_path / "missing.txt"), "--out", str(out)]) == 1


def test_ray_tasks_merge_into_exactly_the_local_atlas(folder):
    ray = pytest.importorskip("ray")
    local = cli_atlas.compute(folder, TEXTS, switch_off=False)
    root = str(Path(__file__).resolve().parents[1])
    for attempt in range(2):  # Ray gives its node a fixed 30 s to register, which a loaded machine may miss
        try:
            ray.init(
                num_cpus=1,
                include_dashboard=False,
                log_to_driver=False,
                _node_ip_address="127.0.0.1",
                runtime_env={"env_vars": {"PYTHONPATH": root}},
            )
            break
        except Exception as err:  # Ray raises a bare Exception for it
            ray.shutdown()
            if "timed out during startup" not in str(err):
                raise
    else:
        pytest.skip("Ray's local node did not start within its own 30 s, twice (an overloaded machine)")
    try:
        remote = cli_atlas.compute(folder, TEXTS, switch_off=False, ray_address="auto")
    finally:
        ray.shutdown()
    assert json.dumps(remote.to_json()) == json.dumps(local.to_json())
