"""Issue 30, part 3: heavy work in a child process with OS limits, stopped when nobody waits for it.

Every test starts real child processes (ui/serving/workers.py forks this one) and checks them from outside: the child's
pid is gone after the call, the parent's memory did not take the child's allocations."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest

from model.analysis import attribution as attr
from model.analysis.jobs import attribute_methods
from ui.serving.workers import CANCELLED, OUT_OF_MEMORY, PAST_DEADLINE, Limits, WorkerStopped, run_limited, widget_key


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not running: its state in /proc says so
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def spin(seconds: float, progress=None) -> int:
    """Report this process's pid, then burn CPU for `seconds` (the work a visitor leaves behind)."""
    progress(os.getpid(), 0)
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return n


def allocate(n_bytes: int, progress=None) -> int:
    progress(os.getpid(), 0)
    block = np.ones(n_bytes // 8)  # touched: resident, not only reserved
    return int(block.sum())


def fail() -> None:
    raise ValueError("a bad setting")


def test_the_result_is_the_same_as_in_process(tiny, char_tokenizer):
    here = attribute_methods(tiny, char_tokenizer, "abcab", None, ["occlusion", "grad_x_input"])
    there = run_limited(
        attribute_methods, tiny, char_tokenizer, "abcab", None, ["occlusion", "grad_x_input"], limits=Limits(2**30, 30)
    )
    for method in ("occlusion", "grad_x_input"):
        assert isinstance(there[method], attr.Attribution)
        np.testing.assert_allclose(there[method].scores, here[method].scores, rtol=1e-6, atol=1e-9)


def test_an_error_in_the_worker_is_raised_here():
    with pytest.raises(ValueError, match="a bad setting"):
        run_limited(fail, limits=Limits(2**30, 10))


def test_the_memory_limit_stops_the_worker_not_the_server():
    before = _rss()
    pids = []
    with pytest.raises(WorkerStopped) as err:
        run_limited(allocate, 2 * 2**30, progress=True, on_progress=lambda p, _: pids.append(p) if p > 0 else None,
                    limits=Limits(256 * 2**20, 30))  # fmt: skip
    assert err.value.args[0].template == OUT_OF_MEMORY and err.value.args[0].values["limit"] == "256 MB"
    assert pids and not _alive(pids[0])
    assert _rss() - before < 50 * 2**20


def niceness_here() -> int:
    return os.getpriority(os.PRIO_PROCESS, 0)


@pytest.mark.parametrize("setting", ["10", "0", "oops"])
def test_the_worker_runs_below_the_servers_priority_as_the_operator_sets_it(monkeypatch, setting):
    from ui.serving.workers import DEFAULT_NICE, NICE_ENV

    monkeypatch.setenv(NICE_ENV, setting)
    lowered = {"10": 10, "0": 0}.get(setting, DEFAULT_NICE)  # not a niceness: the default
    assert run_limited(niceness_here) == min(19, niceness_here() + lowered)


def test_the_deadline_stops_the_worker():
    pids = []
    started = time.monotonic()
    with pytest.raises(WorkerStopped) as err:
        run_limited(spin, 30, progress=True, on_progress=lambda p, _: pids.append(p) if p > 0 else None,
                    limits=Limits(2**30, 1.0))  # fmt: skip
    assert err.value.args[0].template == PAST_DEADLINE and err.value.args[0].values["seconds"] == 1
    assert time.monotonic() - started < 1.0 + 2.0
    assert pids and not _alive(pids[0])


def test_a_cancelled_run_stops_within_two_seconds():
    """The visitor leaves (should_stop turns true) while the worker computes: it is killed within 2 s."""
    pids, left = [], []

    def progress(p, _):
        if p > 0:
            pids.append(p)
            left.append(time.monotonic())

    with pytest.raises(WorkerStopped) as err:
        run_limited(spin, 30, progress=True, on_progress=progress, should_stop=lambda: bool(left),
                    limits=Limits(2**30, 60))  # fmt: skip
    stopped = time.monotonic()
    assert err.value.args[0].template == CANCELLED
    assert stopped - left[0] < 2.0 and not _alive(pids[0])


def test_an_interrupted_wait_kills_the_worker():
    """A Streamlit rerun or a departed session raises inside the wait (at a progress update): the child goes."""
    pids = []

    class Rerun(Exception):
        pass

    def progress(p, _):
        if p > 0:
            pids.append(p)
        elif pids:
            raise Rerun

    started = time.monotonic()
    with pytest.raises(Rerun):
        run_limited(spin, 30, progress=True, on_progress=progress, limits=Limits(2**30, 60))
    assert time.monotonic() - started < 2.0 and not _alive(pids[0])


def double(x: int, progress=None) -> int:
    progress(1, 2)
    return 2 * x


def test_a_cancelled_job_waits_for_run_again():
    """In a page: the result under a progress bar; once cancelled (the Cancel button's flag), the same job is not
    started again but said to be cancelled, until "Run again" is pressed."""
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from tests.test_workers import double
        from ui.serving.workers import WorkerStopped, run_with_progress

        try:
            st.write(f"result {run_with_progress(double, 21, progress=True, key=('job', 1), label='Working')}")
        except WorkerStopped as stopped:
            st.error(stopped.args[0])

    at = AppTest.from_function(script, default_timeout=60).run()
    assert [m.value for m in at.markdown] == ["result 42"] and not at.exception
    assert [b.label for b in at.button] == []  # the Cancel button went with the finished job's bar
    at.session_state["_worker_cancelled"] = ("job", 1)  # what pressing Cancel leaves behind
    at.run()
    assert [e.value for e in at.error] == [CANCELLED] and not at.markdown
    at.button(key=widget_key("worker_again", ("job", 1))).click().run()
    assert [m.value for m in at.markdown] == ["result 42"] and not at.error


def test_one_page_run_may_start_several_jobs():
    """The overview runs the summaries' job, then the thumbnails' job, in one run: each has its own bar and Cancel."""
    from streamlit.testing.v1 import AppTest

    def script():
        import streamlit as st

        from tests.test_workers import double
        from ui.serving.workers import run_with_progress

        first = run_with_progress(double, 21, progress=True, key=("job", 1), label="Working")
        second = run_with_progress(double, 4, progress=True, key=("job", 2), label="Working")
        st.write(f"results {first} {second}")

    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception and [m.value for m in at.markdown] == ["results 42 8"]


def test_a_large_answer_is_received_once_into_the_memory_its_arrays_keep():
    """The child's answer of 64 MB costs the parent about that much at its peak, not two or three times it (the
    pickled bytes, their copy and the arrays): the peak of what Python and numpy allocate here, traced."""
    import tracemalloc

    n = 16 * 2**20

    def answer():
        return {"kept": np.full(n, 0.5, dtype=np.float32), "strided": np.ones((6, 4))[:, ::2], "name": "x"}

    tracemalloc.start()
    try:
        got = run_limited(answer)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert float(got["kept"].sum()) == 0.5 * n and got["kept"].size == n
    assert got["strided"].tolist() == [[1.0, 1.0]] * 6 and got["name"] == "x"
    assert peak < 1.3 * 4 * n  # 64 MB of float32 arrived; a copy on the way would make it 128


def test_tensors_and_arrays_of_an_answer_travel_out_of_band_and_come_back_equal():
    """A worker's answer (a lazy capture holds torch tensors, bfloat16 ones when the weights are kept so) is
    pickled with every array's and tensor's bytes out of band: the message itself stays small, and each part is
    read into the memory its tensor keeps."""
    import torch

    from ui.serving.workers import dumps, loads

    g = torch.Generator().manual_seed(0)
    answer = {"q": torch.randn(64, 128, generator=g), "k": torch.randn(8, 32, generator=g).to(torch.bfloat16),
              "view": torch.arange(24.0).reshape(4, 6).t(), "ids": np.arange(1000), "empty": torch.zeros(0, 3),
              "grad": torch.ones(2, requires_grad=True), "name": "cap"}  # fmt: skip
    head, parts = dumps(answer)
    assert len(head) < 2000 and sum(p.nbytes for p in parts) >= 64 * 128 * 4 + 8 * 32 * 2 + 24 * 4 + 8000
    back = loads(head, [bytearray(p) for p in parts])
    for name in ("q", "k", "view", "empty"):
        assert back[name].dtype == answer[name].dtype and back[name].shape == answer[name].shape
        assert torch.equal(back[name], answer[name])
    assert np.array_equal(back["ids"], answer["ids"]) and back["grad"].requires_grad and back["name"] == "cap"
