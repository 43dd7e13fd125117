"""Starting an ``airlock serve`` of one's own: for tests, examples and programs that want a
private service for as long as they run."""

import os
import shutil
import signal
import subprocess
import tempfile
import threading
from typing import Any, List, Optional, Sequence

from .client import Client
from .errors import AirlockError

__all__ = ["LocalServer"]


class LocalServer:
    """Runs ``airlock serve --socket PATH`` until :meth:`stop` (or the end of a ``with``
    block): SIGTERM, and serve stops the sessions it started.

    Args:
        binary: the airlock binary (default: ``$AIRLOCK``, else ``airlock`` on PATH).
        socket: the socket's path (default: ``serve.sock`` in a new private folder).
        args: more options for ``airlock serve`` (``["--policy", "p.json"]``,
            ``["--no-broker"]``, ...).
        env: its environment (default: this process's).
        startup_timeout: seconds to wait for it to listen.

    >>> with LocalServer() as srv:
    ...     print(srv.client().exec("python", "print(42)").stdout)
    """

    def __init__(self, binary: Optional[str] = None, socket: Optional[str] = None,
                 args: Sequence[str] = (), env: Optional[dict] = None,
                 startup_timeout: float = 30.0) -> None:
        self.binary = binary or os.environ.get("AIRLOCK") or shutil.which("airlock") or "airlock"
        self._dir: Optional[str] = None
        if socket is None:
            self._dir = tempfile.mkdtemp(prefix="airlock-serve-")
            socket = os.path.join(self._dir, "serve.sock")
        self.socket = socket
        self.args: List[str] = list(args)
        self.env = env
        self.startup_timeout = startup_timeout
        self.proc: Optional[subprocess.Popen] = None
        self.stderr_path = os.path.join(self._dir or tempfile.gettempdir(),
                                        "serve-%d.err" % os.getpid())

    def start(self) -> "LocalServer":
        """Starts it and waits until it listens (it prints the socket's path then)."""
        if self.proc is not None:
            return self
        err = open(self.stderr_path, "wb")
        try:
            self.proc = subprocess.Popen([self.binary, "serve", "--socket", self.socket]
                                         + self.args, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.PIPE, stderr=err, env=self.env)
        except OSError as e:
            raise AirlockError("cannot run %s: %s (give binary= or $AIRLOCK)"
                               % (self.binary, e.strerror or e)) from e
        finally:
            err.close()
        line: List[bytes] = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(self.startup_timeout)
        if not line or not line[0].strip():
            self.stop()
            raise AirlockError("airlock serve did not start: %s" % self.stderr().strip())
        return self

    def stderr(self) -> str:
        """What serve wrote to stderr so far."""
        try:
            with open(self.stderr_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def client(self, **kw: Any) -> Client:
        """A :class:`airlock.Client` of this service."""
        return Client(self.socket, **kw)

    def stop(self, timeout: float = 30.0) -> Optional[int]:
        """SIGTERM, then SIGKILL after ``timeout`` seconds; returns its exit status."""
        proc, self.proc = self.proc, None
        status = None
        if proc is not None:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                status = proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                status = proc.wait()
            if proc.stdout:
                proc.stdout.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
        return status

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
