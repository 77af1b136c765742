"""A visitor's tokenizer run in a helper process, with a time limit on every call.

A native tokenizer library cannot be stopped inside one call: the thread that runs the tokenizers library's regular
expression on a text that makes it backtrack is held until the library returns, and a time check between calls
(read_bounded's) comes after. The load-time probes (model/text/bounded.py) refuse what they can find; a rule that
backtracks on a text they do not try still could hold a session's thread. So the server runs a visitor's tokenizer
through a `Fence`:

- the first call forks a helper process from the server (it holds the same tokenizer, copy-on-write; nothing is
  pickled), limited by the operating system to the address space it had at the fork plus the tokenizer budget; it
  ends when the server does (its pipe closes; not PR_SET_PDEATHSIG, which fires when the forking *thread* ends, and
  every Streamlit run has a thread of its own);
- each call sends the text over a pipe (a JSON line; the ids come back as a line of numbers, a decoded text as a
  JSON string: nothing is unpickled, and an answer longer than ANSWER_BYTES is not read) and waits at most
  `seconds` (the caller's time left, at most ENCODE_SECONDS): encoding a text, and joining pieces back into text
  (the library's decoder, whose rules a visitor's tokenizer.json writes as well); past it, or when the helper dies, the helper is killed (SIGKILL) and TokenizerFailed says why
  (TOKENIZER_SLOW, TOKENIZER_FAILED); the next call forks a fresh one (and a helper that had ended before a call,
  killed from outside, is replaced once within that call);
- the helper runs at a lower priority (NICE): a rule that backtracks for its whole time limit takes what the
  room's sessions leave of the cores, not their share;
- calls from several sessions take turns (one helper, one lock): encoding is a millisecond, a call that hangs is
  cut at its limit;
- `close()` (or the vocabulary being collected) kills the helper;
- in a process forked from the server later (a limited worker of ui/serving/workers.py, which the operating system bounds
  already), calls run the library there, directly: the server's helper and its pipe stay the server's.

Pure Python and os: no torch, no streamlit.
"""

from __future__ import annotations

import os
import resource
import signal
import threading
import time
import weakref
from collections.abc import Callable

from i18n import M_

from .bounded import ENCODE_SECONDS, TOKENIZER_FAILED, TOKENIZER_SLOW, TokenizerFailed, guarded

HELPER_MB = 256  # address space a helper may add to what it had at the fork (the tokenizer budget's default)
ANSWER_BYTES = 64 * 2**20  # the longest answer line the server reads from a helper
NICE = 10  # the helper's priority below the server's: a slow tokenizer takes the cores the room leaves


def _close_inherited(keep: set[int]) -> None:
    """Close every descriptor the helper inherited from the server but `keep` and 0-2: the server's listening socket
    and its visitors' connections (a connection the server closes must close), its files."""
    try:
        fds = [int(n) for n in os.listdir("/proc/self/fd")]
    except OSError:  # no /proc: the usual range
        fds = list(range(3, 1024))
    for fd in fds:
        if fd > 2 and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _serve(fns: dict[str, Callable], requests: int, answers: int, memory: int) -> None:
    """In the helper: for every request read from `requests` (a JSON line: the operation and its argument),
    fns[operation](argument), answered on `answers` as one line: the status, then the ids as decimal numbers
    ("encode") or the text as a JSON string of ASCII ("join"): nothing the server could be made to run. Never
    returns."""
    import json

    try:
        os.setpgid(0, 0)
        os.nice(NICE)  # a visitor's tokenizer yields the cores to the server's sessions
        _close_inherited({requests, answers})
        with open("/proc/self/statm") as f:
            cap = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE") + memory
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
        with os.fdopen(requests, "rb") as inbox, os.fdopen(answers, "wb") as outbox:
            while True:
                line = inbox.readline()
                if not line:
                    break
                operation, argument = json.loads(line)
                try:
                    result = guarded(fns[operation], argument)  # a panic, a MemoryError: TokenizerFailed
                    if operation == "encode":
                        answer = " ".join(["ok", *(str(int(i)) for i in result)])
                    else:
                        answer = "ok " + json.dumps(str(result), ensure_ascii=True)
                except TokenizerFailed:
                    answer = "failed"
                outbox.write(answer.encode("ascii") + b"\n")
                outbox.flush()
    finally:
        os._exit(0)


def kill_child(pid: int) -> None:
    """SIGKILL a forked child (its process group when it leads one) and reap it; a child already gone is fine."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


class Fence:
    """fn(text) -> list of ids (a call), join(pieces) -> text (`join`), each run in a helper process with a time
    limit per call (module docstring)."""

    def __init__(
        self,
        fn: Callable[[str], list[int]],
        join: Callable[[list[str]], str] | None = None,
        memory: int = HELPER_MB * 2**20,
    ):
        self._fns = {"encode": fn, "join": join or "".join}
        self._memory = memory
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._send = self._receive = None
        self._owner = os.getpid()  # the process whose helper this is
        self._finalizer = weakref.finalize(self, Fence._stop_pid, [None], self._owner)
        self.forks = 0  # helpers started so far (a fresh one after each kill)

    @staticmethod
    def _stop_pid(box: list, owner: int) -> None:
        pid = box[0]
        box[0] = None
        if pid is not None and os.getpid() == owner:  # never from a forked worker: the helper is its parent's
            kill_child(pid)

    def _start(self) -> None:
        requests_r, requests_w = os.pipe()
        answers_r, answers_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the helper
            os.close(requests_w)
            os.close(answers_r)
            _serve(self._fns, requests_r, answers_w, self._memory)
        os.close(requests_r)
        os.close(answers_w)
        self._pid, self.forks = pid, self.forks + 1
        self._send, self._receive = os.fdopen(requests_w, "wb"), os.fdopen(answers_r, "rb")
        self._finalizer.detach()
        self._owner = os.getpid()
        self._finalizer = weakref.finalize(self, Fence._stop_pid, [pid], self._owner)

    def _stop(self) -> None:
        for f in (self._send, self._receive):
            if f is not None:
                try:
                    f.close()
                except OSError:
                    pass
        self._send = self._receive = None
        self._finalizer()  # kills and reaps the helper
        self._pid = None

    def close(self) -> None:
        if os.getpid() != self._owner:
            return
        with self._lock:
            self._stop()

    def __call__(self, text: str, seconds: float) -> list[int]:
        """fn(text) in the helper; TokenizerFailed when it takes more than `seconds` or fails (the message names
        ENCODE_SECONDS, the budget `seconds` is what is left of). A helper that had ended before this call (killed
        from outside) is replaced once; one that dies on this text fails it."""
        return self._call("encode", text, seconds)

    def join(self, pieces: list[str], seconds: float) -> str:
        """join(pieces) in the helper (the library's decoder, whose rules the visitor wrote too), as a call."""
        return self._call("join", [str(p) for p in pieces], seconds)

    def _call(self, operation: str, argument, seconds: float):
        if os.getpid() != self._owner:  # a forked worker: bounded by its own limits, the pipe is its parent's
            return guarded(self._fns[operation], argument)
        deadline = time.monotonic() + max(0.0, seconds)
        with self._lock:
            for attempt in range(2):
                fresh = self._pid is None
                if fresh:
                    self._start()
                answer = self._ask(operation, argument, deadline)
                if answer is not None:
                    break
                self._stop()  # no answer: the helper is gone
                if fresh or attempt:
                    raise TokenizerFailed(M_(TOKENIZER_FAILED))
            kind, result = answer
            if kind == "slow":
                self._stop()
                raise TokenizerFailed(M_(TOKENIZER_SLOW, seconds=format(ENCODE_SECONDS, "g")))
            if kind != "ok":
                raise TokenizerFailed(M_(TOKENIZER_FAILED))
            return result

    def _ask(self, operation: str, argument, deadline: float) -> tuple[str, object] | None:
        """The helper's answer, ("slow", None) past the deadline, or None when the helper is gone or its answer is
        not one: longer than ANSWER_BYTES, or not of the operation's form."""
        import json
        import select

        try:
            self._send.write(json.dumps([operation, argument]).encode() + b"\n")
            self._send.flush()
            ready, _, _ = select.select([self._receive], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                return "slow", None
            line = self._receive.readline(ANSWER_BYTES)
            if not line.endswith(b"\n"):  # gone, or an answer past the bound (the rest is unread: restart)
                return None
            status, _, rest = line.decode("ascii").rstrip("\n").partition(" ")
            if status == "failed" and not rest:
                return status, None
            if status != "ok":
                return None
            if operation == "encode":  # "ok 84 260 …": nothing to unpickle
                return status, [int(n) for n in rest.split()]
            text = json.loads(rest)  # a JSON string, nothing else
            return (status, text) if isinstance(text, str) else None
        except (OSError, EOFError, ValueError, TypeError):
            return None
