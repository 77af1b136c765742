"""A stranger's checkpoint read in a limited worker and its tokenizer behind a fence: the rows of
`python -m benchmarks.bench_hostile --checked [--sessions 5] [--changes 5] [--soak 500]`.

One real `streamlit run app.py` (loopback only) with an allowed folder holding a tiny GPT-2 (3 layers of 32), the same
with a pre-tokenizer that backtracks on runs of "ab" (`(ab|abab)+x`: it passes the load-time probes, each run of 30
"ab" holds one encode call about a second), and a GPT-2 of the real small shape (12 layers of 768, vocabulary 50,257:
498 MB of weights) built here. Rows:

- the ordinary room (`--sessions` sessions on the reverse demo, a new input every `--interval` s) with a newcomer's
  five links, then with a visitor who opens the slow tokenizer's folder with 10 runs of "ab" x 30: the room's p95 in
  each phase and their ratio (target <= 1.5x), the visitor's page's seconds to its answer (target: a message within
  the encode budget, ENCODE_SECONDS, plus the load);
- the same link alone (the room idle): seconds to the answer, and whether it is the slow-tokenizer message;
- a visitor who opens the real-size GPT-2 folder and leaves once its loading worker runs: seconds from leaving until
  no worker of the server is left (target <= 2 s);
- `--soak` inputs in all (five sessions over the pages, one of them on the tiny GPT-2 folder): the server's RSS after
  the first 50 and after all of them (target: within 100 MB).

Printed with the date, the load average (the machine is shared: nine people's tests and benchmarks on 2 cores) and
tracebacks (pages and server log).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import tempfile
import time
import urllib.parse
from pathlib import Path

from benchmarks.bench_classroom import pct
from benchmarks.common import table
from harness.browser import AppServer, chromium
from harness.stream_client import BackMsg, StreamSession, distinct_texts, feed, rss_bytes

SLOW_REGEX = "(ab|abab)+x"
SLOW_TEXT = ("ab" * 30 + " ") * 10
SOAK_PAGES = ["", "inside", "positional", "decoding"]


def checked_models(root: Path) -> dict[str, Path]:
    import torch
    import transformers

    from benchmarks.hostile_files import edit_tokenizer, gpt2_folder

    tiny = gpt2_folder(root / "gpt2")
    slow = Path(shutil.copytree(tiny, root / "slow"))
    edit_tokenizer(slow, pre_tokenizer={"type": "Split", "pattern": {"Regex": SLOW_REGEX}, "behavior": "Isolated",
                                        "invert": False})  # fmt: skip
    big = root / "gpt2-small-shape"
    big.mkdir()
    shutil.copy(tiny / "tokenizer.json", big / "tokenizer.json")
    end = json.loads((tiny / "config.json").read_text())["eos_token_id"]
    torch.manual_seed(0)
    transformers.GPT2LMHeadModel(
        transformers.GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768, n_layer=12, n_head=12,
                                bos_token_id=end, eos_token_id=end)
    ).save_pretrained(str(big))  # fmt: skip
    return {"gpt2": tiny, "slow": slow, "big": big}


def children(pid: int) -> list[int]:
    out = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            pass
    return out


async def leave_while_loading(server: AppServer, folder: Path) -> tuple[float, float]:
    """A visitor opens `folder` and leaves 1 s after a worker of the server is seen: (seconds until the worker was
    seen, seconds from leaving until no child process of the server is left)."""
    pid = server.process.pid
    quiet_until = time.perf_counter() + 30
    while children(pid) and time.perf_counter() < quiet_until:  # the previous rows' helpers go with their sessions
        await asyncio.sleep(0.1)
    async with StreamSession(server.origin) as s:
        s.page, s.query = "", urllib.parse.urlencode({"model": f"path:{folder}", "text": "hello"})
        msg = BackMsg()
        msg.rerun_script.query_string, msg.rerun_script.page_name = s.query, s.page
        await s.ws.send(msg.SerializeToString())
        started = time.perf_counter()

        async def drain() -> None:
            try:
                while True:
                    await s.ws.recv()
            except Exception:  # noqa: BLE001 - the connection closes
                pass

        reader = asyncio.create_task(drain())
        while not children(pid) and time.perf_counter() - started < 60:
            await asyncio.sleep(0.02)
        seen = time.perf_counter() - started
        await asyncio.sleep(1.0)
        if not children(pid):
            return seen, float("nan")
        left = time.perf_counter()
        await s.ws.close()
        reader.cancel()
    while children(pid) and time.perf_counter() - left < 120:
        await asyncio.sleep(0.02)
    return seen, time.perf_counter() - left


async def slow_alone(server: AppServer, folder: Path) -> tuple[float, bool]:
    """The slow tokenizer's link again, the room idle: (seconds to the page's answer, whether the answer is the
    slow-tokenizer message)."""
    from model.text.bounded import TOKENIZER_SLOW

    async with StreamSession(server.origin) as s:
        run = await s.open("", model=f"path:{folder}", text=SLOW_TEXT)
    said = TOKENIZER_SLOW.split("{")[0]  # the message's words up to its first value, as the page shows it (English)
    return run.seconds, any(said in e for e in run.errors)


async def soak(server: AppServer, total: int, sessions: int, gpt2: Path) -> tuple[int, int, int, list]:
    """`total` inputs over `sessions` sessions (the last one on the GPT-2 folder): (RSS after the first 50, RSS at the
    end, inputs done, exceptions)."""
    pid, done, marks, exceptions = server.process.pid, [0], {}, []
    per = total // sessions + 1
    texts = distinct_texts(sessions * per, seed=11)

    def after(i, run) -> None:
        done[0] += 1
        exceptions.extend(run.exceptions)
        if done[0] == 50:
            marks[50] = rss_bytes(pid)

    await asyncio.gather(*(
        feed(server.origin, SOAK_PAGES[i % len(SOAK_PAGES)], texts[i * per:(i + 1) * per], after=after,
             model=f"path:{gpt2}" if i == sessions - 1 else "demo:reverse")
        for i in range(sessions)
    ))  # fmt: skip
    return marks.get(50, 0), rss_bytes(pid), done[0], exceptions


def room_server(tmp: Path, build) -> tuple[dict[str, Path], AppServer]:
    """In `tmp`: models/ (what `build` writes there, the server's model folder), cache/ (its cache) and app/ (its
    copy of the app); (those models, the server, not started yet)."""
    from model.checkpoints.serving import ENV

    for name in ("models", "app", "cache"):
        (tmp / name).mkdir()
    models = build(tmp / "models")
    os.environ[ENV] = str(tmp / "models")
    os.environ["VIZ_CACHE_DIR"] = str(tmp / "cache")
    return models, AppServer(tmp / "app")


def main_checked(args, phase) -> None:
    """The rows of the module docstring; `phase` is bench_hostile's (the ordinary room beside one visitor's links)."""
    from model.text.bounded import ENCODE_SECONDS

    all_texts = distinct_texts(3 * args.sessions * (args.changes + 1), seed=7)
    per = args.changes + 1
    texts = [all_texts[i * per : (i + 1) * per] for i in range(3 * args.sessions)]
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        models, server = room_server(tmp, checked_models)
        try:
            with chromium() as browser:
                server.first_visit(browser)
            start_rss = rss_bytes(server.process.pid)
            quiet = phase(server, args, texts[: args.sessions], hostile=False)
            slow_link = [("", {"model": f"path:{models['slow']}", "text": SLOW_TEXT})]
            loud = phase(server, args, texts[args.sessions : 2 * args.sessions], True, links=slow_link)
            alone = asyncio.run(slow_alone(server, models["slow"]))
            seen, stopped = asyncio.run(leave_while_loading(server, models["big"]))
            at50, at_end, done, soak_exceptions = asyncio.run(soak(server, args.soak, 5, models["gpt2"]))
            log_tracebacks = server.log().count("Traceback")
        finally:
            server.stop()
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    base = pct(quiet["changes"], 0.95)
    during = pct(loud["changes"], 0.95)
    answer = " ".join(f"{sec:.1f} ({status})" for _, sec, status in loud["hostile"])
    rows = [
        ["room p95 with a newcomer's 5 links / with the slow tokenizer's visitor (s)", f"{base:.2f} / {during:.2f}",
         f"{during / base:.2f}x", "<= 1.5x", "yes" if during <= 1.5 * base else "NO"],
        ["the slow tokenizer's page: seconds to its answer (a message)", answer, "-",
         f"<= {ENCODE_SECONDS:g} s + the load", "-"],
        ["the same page alone, the room idle: seconds to its answer / the slow-tokenizer message shown",
         f"{alone[0]:.1f} / {'yes' if alone[1] else 'no'}", "-", f"<= {ENCODE_SECONDS:g} s + the page", "-"],
        ["real-size GPT-2 folder: worker seen after (s) / stopped after the visitor left (s)",
         f"{seen:.1f} / {stopped:.2f}", "-", "<= 2 s", "yes" if stopped <= 2 else "NO"],
        [f"server RSS after 50 / after {done} inputs (MB)", f"{at50 / 2**20:.0f} / {at_end / 2**20:.0f}",
         f"{(at_end - at50) / 2**20:+.0f} MB", "<= +100 MB", "yes" if at_end - at50 <= 100 * 2**20 else "NO"],
        ["tracebacks: pages (room, visitor, soak) / server log",
         f"{len(quiet['exceptions']) + len(loud['exceptions'])} / {len(soak_exceptions)} / {log_tracebacks}", "-",
         "0", "yes" if not (loud["exceptions"] or soak_exceptions or log_tracebacks) else "NO"],
    ]  # fmt: skip
    print(
        f"\n{args.sessions} ordinary sessions (reverse demo), a new input every {args.interval:g} s, {args.changes} "
        f"changes each; {stamp}; load average {load} at the end (a shared machine: 2 cores, other people's tests "
        f"and benchmarks running); server RSS {start_rss / 2**20:.0f} MB after the first visit"
    )
    print(
        table(["measured", "value", "ratio / change", "target", "met"], rows, title="a stranger's checkpoint, checked")
    )
