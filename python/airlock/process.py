"""Processes in a session: started with :meth:`airlock.Session.run`, their output streamed as
events while they run."""

import base64
import http.client
import json
import signal as _signal
import socket
import threading
import time
from typing import (TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Union)

from ._transport import decode_json
from .errors import AirlockError, CommandFailed, StreamError, error_from_response

if TYPE_CHECKING:  # pragma: no cover
    from .client import Session

__all__ = ["Event", "ProcessResult", "Process"]

OutputCallback = Callable[[str], None]


class Event:
    """One event of a process's stream.

    ``type`` is ``"start"``, ``"stdout"``, ``"stderr"``, ``"dropped"`` (output the service no
    longer kept: ``events`` says how many) or ``"exit"`` (the result's fields). Output events
    carry ``data`` (text) or ``data_base64`` (bytes that are not UTF-8); :attr:`bytes` and
    :attr:`text` give either as bytes or as text.
    """

    __slots__ = ("type", "raw")

    def __init__(self, raw: Dict[str, Any]) -> None:
        self.raw = raw
        self.type: str = raw.get("type", "")

    @property
    def bytes(self) -> bytes:
        """An output event's bytes (b"" for other events)."""
        if "data_base64" in self.raw:
            return base64.b64decode(self.raw["data_base64"])
        return str(self.raw.get("data", "")).encode("utf-8")

    @property
    def text(self) -> str:
        """An output event's text (bytes that are not UTF-8 replaced by U+FFFD)."""
        if "data" in self.raw:
            return str(self.raw["data"])
        return self.bytes.decode("utf-8", "replace")

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def __repr__(self) -> str:
        if self.type in ("stdout", "stderr"):
            return "Event(%s, %r)" % (self.type, self.text)
        return "Event(%s, %r)" % (self.type, self.raw)


class ProcessResult:
    """How a process ended (its exit event) and everything it wrote (as far as it was kept).

    Attributes: ``exit_code`` (124 on timeout; None when it had none), ``signal``,
    ``timed_out``, ``oom_killed``, ``duration_ms``, ``violations``, ``error`` (set when the
    command could not run), ``stdout``/``stderr`` (text) and ``stdout_bytes``/``stderr_bytes``,
    ``dropped`` (events the service no longer kept) and ``raw`` (the exit event).
    """

    def __init__(self, raw: Dict[str, Any], stdout: bytes, stderr: bytes, dropped: int) -> None:
        self.raw = raw
        self.stdout_bytes = stdout
        self.stderr_bytes = stderr
        self.dropped = dropped
        self.exit_code: Optional[int] = raw.get("exit_code")
        self.signal: Optional[Any] = raw.get("signal")
        self.timed_out: bool = bool(raw.get("timed_out"))
        self.oom_killed: bool = bool(raw.get("oom_killed"))
        self.duration_ms: Optional[float] = raw.get("duration_ms")
        self.violations: List[Dict[str, Any]] = raw.get("violations") or []
        self.error: Optional[Any] = raw.get("error")

    @property
    def stdout(self) -> str:
        return self.stdout_bytes.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        return self.stderr_bytes.decode("utf-8", "replace")

    @property
    def ok(self) -> bool:
        """True when it ran and exited 0 (no signal, timeout, memory kill or error)."""
        return (self.exit_code == 0 and not self.error and not self.timed_out
                and not self.oom_killed and not self.signal)

    def check(self) -> "ProcessResult":
        """Returns itself when :attr:`ok`, else raises :class:`airlock.CommandFailed`."""
        if not self.ok:
            raise CommandFailed(self)
        return self

    def __repr__(self) -> str:
        return "ProcessResult(exit_code=%r, timed_out=%r, stdout=%r, stderr=%r)" % (
            self.exit_code, self.timed_out, _short(self.stdout), _short(self.stderr))


def _short(s: str, n: int = 60) -> str:
    return s if len(s) <= n else s[:n] + "..."


class _Stream:
    """An NDJSON event stream being read (a thread of its own reads it into the process)."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse,
                 sock: Optional[socket.socket]) -> None:
        self.conn, self.resp, self.sock = conn, resp, sock
        self.closed = False

    def readline(self) -> bytes:
        return self.resp.readline()

    def hang_up(self) -> None:
        """From any thread: the reader then sees the end, and the service the hang-up."""
        self.closed = True
        if self.sock is not None:
            try:
                self.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self) -> None:
        """From the reader's thread only (http.client is not for two threads at once)."""
        self.hang_up()
        self.conn.close()


class Process:
    """A command running (or ended) in a session.

    A process started without ``detach`` comes with the stream that started it: closing it
    (:meth:`close`, leaving a ``with`` block, or the program ending) hangs up, and the service
    then kills the process if it still runs. A detached process (or one looked up with
    :meth:`airlock.Session.process`) attaches to its output when it is first iterated or
    waited for: the service replays the output it kept, then follows; hanging up that stream
    kills nothing.

    Iterate it for :class:`Event` objects (each iteration starts from the first event);
    :meth:`wait` for the :class:`ProcessResult`. ``on_stdout`` and ``on_stderr`` callbacks are
    called with each piece of text from the thread that reads the stream.
    """

    def __init__(self, session: "Session", info: Dict[str, Any], *,
                 stream: Optional[_Stream] = None, owner: bool = False,
                 on_stdout: Optional[OutputCallback] = None,
                 on_stderr: Optional[OutputCallback] = None) -> None:
        self.session = session
        self.info: Dict[str, Any] = {k: v for k, v in info.items() if k != "type"}
        self.id: str = info["id"]
        self.argv: List[str] = list(info.get("argv") or [])
        self.terminal: bool = bool(info.get("terminal"))
        self.detached: bool = bool(info.get("detached", not owner))
        self._owner = owner
        self._on_stdout, self._on_stderr = on_stdout, on_stderr
        self._cond = threading.Condition()
        self._events: List[Event] = []
        self._stdout = bytearray()
        self._stderr = bytearray()
        self._dropped = 0
        self._exit: Optional[Event] = None
        self._failure: Optional[AirlockError] = None
        self._stream: Optional[_Stream] = None
        self._reader: Optional[threading.Thread] = None
        self._attaching = threading.Lock()
        if stream is not None:
            self._attach(stream, first=Event(info))

    # ---- the stream ----

    def _attach(self, stream: _Stream, first: Optional[Event] = None) -> None:
        self._stream = stream
        if first is not None:
            self._add(first)
        self._reader = threading.Thread(target=self._read, name="airlock-" + self.id,
                                        daemon=True)
        self._reader.start()

    def _ensure_stream(self) -> None:
        with self._attaching:
            with self._cond:
                if self._stream is not None or self._exit is not None:
                    return
            self._open_output()

    def _open_output(self) -> None:
        path = self.session._path("/processes/%s/output" % self.id)
        conn, resp, sock = self.session.client._transport.open("GET", path, timeout=None)
        if resp.status != 200:
            try:
                data = resp.read()
            finally:
                conn.close()
            raise error_from_response(resp.status, decode_json(data), data.decode("utf-8",
                                                                                  "replace"))
        with self._cond:
            # A replay starts from the first event again.
            self._events.clear()
            self._stdout.clear()
            self._stderr.clear()
            self._dropped = 0
            self._failure = None
        self._attach(_Stream(conn, resp, sock))

    def _add(self, ev: Event) -> None:
        cb = None
        with self._cond:
            if ev.type == "start":
                if any(e.type == "start" for e in self._events):
                    return
                self.info.update({k: v for k, v in ev.raw.items() if k != "type"})
            elif ev.type == "stdout":
                self._stdout += ev.bytes
                cb = self._on_stdout
            elif ev.type == "stderr":
                self._stderr += ev.bytes
                cb = self._on_stderr
            elif ev.type == "dropped":
                self._dropped += int(ev.get("events") or 0)
            elif ev.type == "exit":
                self._exit = ev
            self._events.append(ev)
            self._cond.notify_all()
        if cb is not None:
            try:
                cb(ev.text)
            except Exception:  # a callback's failure is its own
                pass

    def _read(self) -> None:
        stream = self._stream
        assert stream is not None
        failure: Optional[AirlockError] = None
        try:
            while True:
                line = stream.readline()
                if not line:
                    break
                line = line.strip()
                if not line:
                    continue
                try:
                    raw = json.loads(line)
                except ValueError:
                    failure = StreamError("an event that is not JSON: %r" % line[:200])
                    break
                ev = Event(raw)
                self._add(ev)
                if ev.type == "exit":
                    break
        except Exception as e:  # noqa: BLE001 - whatever broke the stream is its failure
            if not stream.closed:
                failure = StreamError("the stream of process %s broke off: %s" % (self.id, e))
        finally:
            stream.close()
            with self._cond:
                if self._exit is None and failure is None:
                    failure = StreamError("the stream of process %s ended before its exit"
                                          % self.id)
                if self._exit is None:
                    self._failure = failure
                if self._stream is stream:
                    self._stream = None
                self._cond.notify_all()

    # ---- reading ----

    def __iter__(self) -> Iterator[Event]:
        """Every event from the first: those seen so far, then the rest as they come. Ends
        after the exit event; raises :class:`airlock.StreamError` if the stream broke off."""
        self._ensure_stream()
        i = 0
        while True:
            with self._cond:
                while i >= len(self._events) and self._stream is not None:
                    self._cond.wait()
                if i < len(self._events):
                    ev = self._events[i]
                    i += 1
                elif self._failure is not None:
                    raise self._failure
                else:
                    return
            yield ev
            if ev.type == "exit":
                return

    def wait(self, timeout: Optional[float] = None, *, check: bool = False) -> ProcessResult:
        """Waits for the process to end and returns its result.

        Args:
            timeout: seconds to wait at most; then :class:`TimeoutError` is raised and the
                process goes on (None: as long as it runs).
            check: raise :class:`airlock.CommandFailed` unless it exited 0.
        """
        self._ensure_stream()
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            while self._exit is None and self._stream is not None:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise TimeoutError("process %s still runs after %ss" % (self.id, timeout))
                self._cond.wait(left)
            if self._exit is None:
                raise self._failure or StreamError("process %s: no exit event" % self.id)
            result = ProcessResult({k: v for k, v in self._exit.raw.items() if k != "type"},
                                   bytes(self._stdout), bytes(self._stderr), self._dropped)
        return result.check() if check else result

    @property
    def stdout(self) -> str:
        """The text written to stdout so far (as far as this client has read it)."""
        with self._cond:
            return self._stdout.decode("utf-8", "replace")

    @property
    def stderr(self) -> str:
        with self._cond:
            return self._stderr.decode("utf-8", "replace")

    @property
    def exit_code(self) -> Optional[int]:
        """The exit code once the exit event was read, else None."""
        with self._cond:
            return self._exit.get("exit_code") if self._exit is not None else None

    def poll(self) -> Optional[ProcessResult]:
        """The result if the exit event was read already, else None (never blocks)."""
        with self._cond:
            ended = self._exit is not None
        return self.wait() if ended else None

    # ---- control ----

    def _post(self, what: str, body: Any = None, query: Optional[Dict[str, Any]] = None) -> None:
        self.session.client._transport.request(
            "POST", self.session._path("/processes/%s/%s" % (self.id, what)), body=body,
            query=query)

    def write_stdin(self, data: Union[str, bytes], *, eof: bool = False) -> None:
        """Writes to its stdin (started with ``stdin=True``, or a terminal). ``eof`` closes
        stdin afterwards (a terminal gets its EOF character instead)."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        self._post("stdin", body=bytes(data), query={"eof": True} if eof else None)

    def close_stdin(self) -> None:
        """Closes its stdin: the program reads end of file."""
        self._post("stdin", body=b"", query={"eof": True})

    def signal(self, sig: Union[str, int, _signal.Signals]) -> None:
        """Sends a signal: INT, TERM, HUP, QUIT, USR1, USR2 or KILL (a name, ``"SIGINT"``, a
        number or a :class:`signal.Signals`)."""
        if isinstance(sig, _signal.Signals):
            sig = sig.name
        self._post("signal", body={"signal": sig})

    def kill(self) -> None:
        """Sends SIGKILL."""
        self.signal("KILL")

    def resize(self, cols: int, rows: int) -> None:
        """A new size for its terminal (started with ``terminal=True``)."""
        self._post("resize", body={"cols": int(cols), "rows": int(rows)})

    def refresh(self) -> Dict[str, Any]:
        """Asks the service for the process: ``{"id", "argv", "terminal", "detached",
        "running", "exit"}``."""
        info = self.session.client._transport.request(
            "GET", self.session._path("/processes/%s" % self.id))
        self.info.update(info)
        return info

    @property
    def running(self) -> bool:
        """Whether it still runs (asks the service unless the exit event was read)."""
        with self._cond:
            if self._exit is not None:
                return False
        return bool(self.refresh().get("running"))

    def delete(self) -> None:
        """Kills it and makes the service forget it."""
        self.session.client._transport.request(
            "DELETE", self.session._path("/processes/%s" % self.id))

    def close(self) -> None:
        """Hangs up this client's stream: a process started without ``detach`` is then killed
        if it still runs. Does nothing more for a detached one."""
        with self._cond:
            stream = self._stream
        if stream is not None:
            stream.hang_up()
        reader = self._reader
        if reader is not None and reader is not threading.current_thread():
            reader.join(5)

    def __enter__(self) -> "Process":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "ended" if self._exit is not None else "running"
        return "<Process %s %r %s>" % (self.id, self.argv, state)
