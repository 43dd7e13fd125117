"""The client: :class:`Client` (the service), :class:`Session` (a sandbox that lasts),
:class:`Files` (its workspace), :class:`ExecResult`."""

import base64
import ssl
from typing import (IO, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union)

from ._transport import Transport, decode_json
from .errors import AirlockError, CommandFailed, NotFound, error_from_response
from .process import OutputCallback, Process, _Stream

__all__ = ["Client", "Session", "Sandbox", "Files", "FileInfo", "ExecResult"]

Duration = Union[int, float, str]
FilesArg = Union[None, Mapping[str, Union[str, bytes]], Sequence[Mapping[str, Any]]]

DEFAULT_EXEC_TIMEOUT: Duration = 60


class ExecResult:
    """The result of an exec request (``airlock exec``'s result object).

    Attributes: ``stdout``, ``stderr`` (up to 1 MiB each; ``stdout_truncated``,
    ``stderr_truncated``), ``exit_code`` (124 on timeout, 127 command not found), ``signal``,
    ``timed_out``, ``oom_killed``, ``compile_error`` (rust), ``duration_ms``, ``output`` (the
    JSON the program wrote to ``$AIRLOCK_RESULT``), ``output_error``, ``policy_hash``,
    ``violations`` (``[{kind, detail, count}]``), ``labels``, ``error`` (None when it ran) and
    ``raw`` (the whole object; ``result["field"]`` reads it too).
    """

    def __init__(self, raw: Dict[str, Any]) -> None:
        self.raw = raw
        self.error: Optional[Dict[str, Any]] = raw.get("error")
        self.stdout: str = raw.get("stdout") or ""
        self.stderr: str = raw.get("stderr") or ""
        self.stdout_truncated: bool = bool(raw.get("stdout_truncated"))
        self.stderr_truncated: bool = bool(raw.get("stderr_truncated"))
        self.exit_code: Optional[int] = raw.get("exit_code")
        self.signal: Optional[Any] = raw.get("signal")
        self.timed_out: bool = bool(raw.get("timed_out"))
        self.oom_killed: bool = bool(raw.get("oom_killed"))
        self.compile_error: bool = bool(raw.get("compile_error"))
        self.duration_ms: Optional[float] = raw.get("duration_ms")
        self.output: Any = raw.get("output")
        self.output_error: Optional[str] = raw.get("output_error")
        self.policy_hash: Optional[str] = raw.get("policy_hash")
        self.violations: List[Dict[str, Any]] = raw.get("violations") or []
        self.labels: List[str] = raw.get("labels") or []

    @property
    def ok(self) -> bool:
        """True when the program ran and exited 0 (no signal, timeout or memory kill)."""
        return (not self.error and self.exit_code == 0 and not self.timed_out
                and not self.oom_killed and not self.signal)

    def check(self) -> "ExecResult":
        """Returns itself when :attr:`ok`, else raises :class:`airlock.CommandFailed`."""
        if not self.ok:
            raise CommandFailed(self)
        return self

    def __getitem__(self, key: str) -> Any:
        return self.raw[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.raw.get(key, default)

    def __repr__(self) -> str:
        return "ExecResult(exit_code=%r, timed_out=%r, stdout=%r, stderr=%r)" % (
            self.exit_code, self.timed_out, self.stdout[:60], self.stderr[:60])


def _files_field(files: FilesArg) -> Optional[List[Dict[str, Any]]]:
    """A request's ``files``: a list of entries as they are, or {path: text or bytes}."""
    if files is None:
        return None
    if isinstance(files, Mapping):
        out = []
        for path, content in files.items():
            if isinstance(content, (bytes, bytearray, memoryview)):
                out.append({"path": path, "base64": base64.b64encode(bytes(content)).decode()})
            else:
                out.append({"path": path, "content": str(content)})
        return out
    return [dict(f) for f in files]


def _exec_request(language: str, code: Optional[str], argv: Optional[Sequence[str]],
                  timeout: Duration, stdin: Optional[str], input: Any, env: Optional[Mapping[str, str]],
                  files: FilesArg, extra: Mapping[str, Any]) -> Dict[str, Any]:
    req: Dict[str, Any] = {"language": language, "timeout": timeout}
    if code is not None:
        req["code"] = code
    if argv is not None:
        if isinstance(argv, str):
            raise TypeError("argv: a list of strings, not a string")
        req["argv"] = list(argv)
    if stdin is not None:
        req["stdin"] = stdin
    if input is not _UNSET:
        req["input"] = input
    if env is not None:
        req["env"] = dict(env)
    f = _files_field(files)
    if f is not None:
        req["files"] = f
    for k, v in extra.items():
        if v is not None:
            req[k] = v
    return req


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


_UNSET: Any = _Unset()


def _run_exec(client: "Client", path: str, req: Dict[str, Any], check: bool,
              request_timeout: Optional[float]) -> ExecResult:
    conn, resp, _ = client._transport.open("POST", path, body=req, timeout=request_timeout)
    try:
        data = resp.read()
    except OSError as e:
        raise AirlockError("%s: the answer broke off: %s" % (path, e)) from e
    finally:
        conn.close()
    body = decode_json(data)
    if resp.status != 200 or not isinstance(body, dict):
        err = error_from_response(resp.status, body, data.decode("utf-8", "replace"))
        if isinstance(body, dict) and isinstance(body.get("error"), dict) \
                and "kind" in body["error"]:
            err._result = ExecResult(body)  # type: ignore[attr-defined]
        raise err
    result = ExecResult(body)
    return result.check() if check else result


class FileInfo:
    """A workspace entry: ``name``, ``path`` (relative to the workspace), ``type`` (``"file"``,
    ``"directory"``, ``"symlink"``, ``"other"``), ``size``, ``mode`` (``"0644"``), ``mtime``."""

    def __init__(self, raw: Dict[str, Any], path: str) -> None:
        self.raw = raw
        self.name: str = raw.get("name") or path.rsplit("/", 1)[-1]
        self.path = path
        self.type: str = raw.get("type", "")
        self.size: int = raw.get("size", 0)
        self.mode: str = raw.get("mode", "")
        self.mtime: Any = raw.get("mtime")

    @property
    def is_dir(self) -> bool:
        return self.type == "directory"

    @property
    def is_file(self) -> bool:
        return self.type == "file"

    def __repr__(self) -> str:
        return "FileInfo(%r, %s, %d bytes)" % (self.path, self.type, self.size)


def _join(folder: str, name: str) -> str:
    folder = folder.strip("/")
    return "%s/%s" % (folder, name) if folder else name


class Files:
    """A session's workspace files, through its workspace filesystem as the sandbox sees it:
    the policy's read, write and deny rules, its quota and its audit apply. Paths are relative
    to the workspace, without ``.`` or ``..``; no symbolic link is followed."""

    def __init__(self, session: "Session") -> None:
        self._session = session

    def _req(self, method: str, what: str, path: str, **kw: Any) -> Any:
        q = dict(kw.pop("query", {}))
        q["path"] = path
        return self._session.client._transport.request(
            method, self._session._path("/files" + what), query=q, **kw)

    def read(self, path: str) -> bytes:
        """A file's bytes (up to 64 MiB)."""
        return self._req("GET", "/content", path, raw=True)

    def read_text(self, path: str, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self.read(path).decode(encoding, errors)

    def write(self, path: str, data: Union[str, bytes, bytearray, IO[bytes]], *,
              executable: bool = False, parents: bool = True) -> None:
        """Replaces a file whole (text is written as UTF-8; a binary file object is read
        whole). ``parents`` (default True) makes missing folders; ``executable`` sets its
        execute bits."""
        if isinstance(data, str):
            body = data.encode("utf-8")
        elif isinstance(data, (bytes, bytearray, memoryview)):
            body = bytes(data)
        else:
            body = data.read()
        self._req("PUT", "/content", path, body=body,
                  query={"executable": executable or None, "parents": parents or None})

    def list(self, path: str = "") -> List[FileInfo]:
        """A folder's entries (default: the workspace's top), sorted by name; what the rules
        hide is not listed."""
        return [FileInfo(e, _join(path, e.get("name", ""))) for e in self._req("GET", "", path)]

    def stat(self, path: str) -> FileInfo:
        return FileInfo(self._req("GET", "/stat", path), path)

    def exists(self, path: str) -> bool:
        """Whether the sandbox would see it (False for what the rules deny)."""
        try:
            self.stat(path)
            return True
        except NotFound:
            return False

    def remove(self, path: str) -> None:
        """Removes a file, or a folder that is empty (:class:`airlock.Conflict` if not)."""
        self._req("DELETE", "", path)

    def walk(self, path: str = "") -> Iterable[FileInfo]:
        """Every entry under a folder, depth first (links are not followed)."""
        for e in self.list(path):
            yield e
            if e.is_dir:
                yield from self.walk(e.path)


class Session:
    """A sandbox that lasts: its workspace, processes and network state are shared by every
    command run in it, until it is deleted or its TTL passes.

    Use it as a context manager to delete it on leaving the block. ``info`` holds what the
    service said about it last (``id``, ``pid``, ``owner``, ``started``, ``expires``,
    ``ttl_left_s``, ``policy_hash``, ``workspace``, ``cpu_usec``, ``memory_bytes``, ...).
    """

    def __init__(self, client: "Client", info: Dict[str, Any]) -> None:
        self.client = client
        self.info = info
        self.id: str = info["id"]
        self.files = Files(self)
        self._deleted = False

    def _path(self, sub: str = "") -> str:
        return "/v1/sessions/%s%s" % (self.id, sub)

    @property
    def workspace(self) -> Optional[str]:
        """The workspace's folder on the host."""
        return self.info.get("workspace")

    def refresh(self) -> Dict[str, Any]:
        """Asks the service for the session again (usage, TTL left); :class:`airlock.NotFound`
        once it ended."""
        self.info = self.client._transport.request("GET", self._path())
        return self.info

    def exec(self, language: str, code: Optional[str] = None, *,
             argv: Optional[Sequence[str]] = None, timeout: Duration = DEFAULT_EXEC_TIMEOUT,
             stdin: Optional[str] = None, input: Any = _UNSET,
             env: Optional[Mapping[str, str]] = None, files: FilesArg = None,
             check: bool = False, request_timeout: Optional[float] = None,
             **fields: Any) -> ExecResult:
        """Runs an exec request in this session (its policy, workspace and memory): see
        :meth:`Client.exec`."""
        req = _exec_request(language, code, argv, timeout, stdin, input, env, files, fields)
        return _run_exec(self.client, self._path("/exec"), req, check, request_timeout)

    def run_code(self, code: str, language: str = "python", **kw: Any) -> ExecResult:
        """``exec(language, code, ...)``: a snippet of code, python by default."""
        return self.exec(language, code, **kw)

    def run(self, cmd: Union[str, Sequence[str]], *, env: Optional[Mapping[str, str]] = None,
            cwd: Optional[str] = None, timeout: Optional[Duration] = None,
            terminal: bool = False, cols: Optional[int] = None, rows: Optional[int] = None,
            stdin: bool = False, detach: bool = False,
            on_stdout: Optional[OutputCallback] = None,
            on_stderr: Optional[OutputCallback] = None) -> Process:
        """Starts a command and returns its :class:`Process` at once, its output streaming.

        Args:
            cmd: argv (a list), or a string run by ``/bin/sh -c``.
            env: variables over the session's environment (``AIRLOCK_*`` are airlock's).
            cwd: a folder to run it in (``/workspace`` is the workspace).
            timeout: a duration (``"30s"``) or seconds: SIGTERM, then SIGKILL 2 s later.
            terminal: a pty of its own (``cols`` x ``rows``, default 80x24); stdout and stderr
                are then one stream, reported as stdout.
            stdin: keep a stdin pipe open for :meth:`Process.write_stdin` (default: /dev/null;
                a terminal is always writable).
            detach: the process outlives this client's stream; its output is kept and
                replayed to whoever attaches (:meth:`Process.wait`, iteration).
            on_stdout, on_stderr: called with each piece of output text as it comes.
        """
        argv = ["/bin/sh", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        if cwd is not None:
            argv = ["/bin/sh", "-c", 'cd -- "$0" && exec "$@"', cwd] + argv
        body: Dict[str, Any] = {"argv": argv}
        for k, v in (("env", dict(env) if env is not None else None), ("timeout", timeout),
                     ("cols", cols), ("rows", rows)):
            if v is not None:
                body[k] = v
        for k, flag in (("terminal", terminal), ("stdin", stdin), ("detach", detach)):
            if flag:
                body[k] = True
        t = self.client._transport
        conn, resp, sock = t.open("POST", self._path("/processes"), body=body,
                                  headers={"Accept": "application/x-ndjson"}, timeout=None)
        if resp.status == 201:
            try:
                info = decode_json(resp.read())
            finally:
                conn.close()
            return Process(self, info, on_stdout=on_stdout, on_stderr=on_stderr)
        if resp.status != 200:
            try:
                data = resp.read()
            finally:
                conn.close()
            raise error_from_response(resp.status, decode_json(data),
                                      data.decode("utf-8", "replace"))
        stream = _Stream(conn, resp, sock)
        try:
            first = decode_json(resp.readline())
        except OSError as e:
            stream.close()
            raise AirlockError("the process's stream broke off: %s" % e) from e
        if not isinstance(first, dict) or first.get("type") != "start":
            stream.close()
            raise AirlockError("the process's stream did not start with its start event")
        return Process(self, first, stream=stream, owner=True, on_stdout=on_stdout,
                       on_stderr=on_stderr)

    def process(self, id: str) -> Process:
        """A process of this session by its id (``"p-3"``): attach to its output by iterating
        or waiting."""
        info = self.client._transport.request("GET", self._path("/processes/%s" % id))
        return Process(self, info)

    def processes(self) -> List[Process]:
        """The processes this client started in the session (running, or ended in the last
        10 minutes)."""
        return [Process(self, i) for i in
                self.client._transport.request("GET", self._path("/processes"))]

    def checkpoint(self, name: str) -> None:
        """Copies the workspace aside as ``name`` (``[A-Za-z0-9._-]``), its processes stopped
        meanwhile."""
        self.client._transport.request("POST", self._path("/checkpoints"), body={"name": name},
                                       timeout=None)

    def restore(self, name: str) -> None:
        """Makes the workspace checkpoint ``name``'s again (:class:`airlock.NotFound` for an
        unknown one)."""
        self.client._transport.request("POST", self._path("/restore"), body={"name": name},
                                       timeout=None)

    def delete(self) -> None:
        """Ends the session: its processes are killed, its sandbox stopped (a fresh workspace
        is removed with it). Deleting one that ended already is not an error."""
        if self._deleted:
            return
        try:
            self.client._transport.request("DELETE", self._path())
        except NotFound:
            pass
        self._deleted = True

    close = delete
    kill = delete

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.delete()

    def __repr__(self) -> str:
        return "<Session %s workspace=%r>" % (self.id, self.workspace)


class Client:
    """A connection to ``airlock serve``.

    Args:
        socket: the Unix socket (default: ``$AIRLOCK_SOCKET``, else root's
            ``/run/airlock/serve.sock``, else ``$XDG_RUNTIME_DIR/airlock/serve.sock``).
        url: ``http://HOST:PORT`` of a ``--listen`` service instead (default:
            ``$AIRLOCK_URL`` when no socket is given).
        token: the bearer token of a TCP service (default: ``$AIRLOCK_TOKEN``).
        timeout: seconds to wait for an answer to requests other than exec and streams.
        ssl_context: for an ``https://`` url behind a TLS proxy.
    """

    def __init__(self, socket: Optional[str] = None, *, url: Optional[str] = None,
                 token: Optional[str] = None, timeout: Optional[float] = 60.0,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        import os

        if socket is not None and url is not None:
            raise ValueError("give socket or url, not both")
        if socket is None and url is None:
            url = os.environ.get("AIRLOCK_URL") or None
        if token is None:
            token = os.environ.get("AIRLOCK_TOKEN") or None
        self._transport = Transport(socket_path=socket, url=url, token=token, timeout=timeout,
                                    ssl_context=ssl_context)

    @property
    def address(self) -> str:
        """The socket's path or the url."""
        return self._transport.where

    def health(self) -> Dict[str, Any]:
        """``{"status": "ok", "version", "api", "uptime_s", "sessions", "processes"}``."""
        return self._transport.request("GET", "/v1/health")

    def capabilities(self) -> Dict[str, Any]:
        """What this machine can enforce and run (``airlock capabilities --json``)."""
        return self._transport.request("GET", "/v1/capabilities")

    def exec(self, language: str, code: Optional[str] = None, *,
             argv: Optional[Sequence[str]] = None, timeout: Duration = DEFAULT_EXEC_TIMEOUT,
             stdin: Optional[str] = None, input: Any = _UNSET,
             env: Optional[Mapping[str, str]] = None, files: FilesArg = None,
             memory: Optional[Union[str, int]] = None, policy: Any = None,
             workspace: Optional[str] = None, check: bool = False,
             request_timeout: Optional[float] = None, **fields: Any) -> ExecResult:
        """Runs a program in a sandbox of its own, made for it and removed afterwards.

        Args:
            language: ``"python"``, ``"javascript"``, ``"typescript"``, ``"rust"``,
                ``"shell"``, ``"wasm"`` (``code``: base64) or ``"command"`` (``argv``).
            code: the program.
            argv: the command (``"command"``) or the program's arguments.
            timeout: seconds or a duration (``"30s"``), at most 24 h (default 60 s).
            stdin: its stdin; input: any JSON, on stdin when ``stdin`` is not given and at
                ``$AIRLOCK_INPUT``.
            env: variables set in the sandbox.
            files: ``{"path": text or bytes}``, or the request's own list of ``{"path",
                "content" | "base64", "executable"}``, written into the workspace first.
            memory: a size (``"512Mi"``) or bytes.
            policy: an inline policy (a dict) or a file name of the service's
                ``--policy-dir``; workspace: a host folder (where the service allows either).
            check: raise :class:`airlock.CommandFailed` unless the program exited 0.
            request_timeout: seconds to wait for the answer (default: as long as it runs;
                the service ends it at ``timeout``).
            fields: any other field of the request, as it is.

        Returns the :class:`ExecResult`. A request that did not run raises the error of its
        kind (:class:`airlock.InvalidRequest`, :class:`airlock.Unsupported`,
        :class:`airlock.SetupFailed`), with the result as ``.result``.
        """
        extra = dict(fields, memory=memory, policy=policy, workspace=workspace)
        req = _exec_request(language, code, argv, timeout, stdin, input, env, files, extra)
        return _run_exec(self, "/v1/exec", req, check, request_timeout)

    def run_code(self, code: str, language: str = "python", **kw: Any) -> ExecResult:
        """``exec(language, code, ...)``: a snippet of code, python by default."""
        return self.exec(language, code, **kw)

    def create_session(self, *, ttl: Optional[Duration] = None, policy: Any = None,
                       workspace: Optional[str] = None,
                       memory: Optional[str] = None) -> "Session":
        """Starts a session.

        Args:
            ttl: how long it lasts unless deleted first: a duration (``"30m"``; ``"0"``:
                until deleted or the service stops) or seconds (default 1 h).
            policy: an inline policy (a dict) or a file name of the service's
                ``--policy-dir``.
            workspace: a host folder as its workspace (where allowed); without a policy or a
                workspace, it gets a fresh empty one, removed when it ends.
            memory: a size (``"512Mi"``), no more than the policy's.
        """
        body = {k: v for k, v in (("ttl", ttl), ("policy", policy), ("workspace", workspace),
                                  ("memory", memory)) if v is not None}
        info = self._transport.request("POST", "/v1/sessions", body=body, ok=(201,),
                                       timeout=None)
        return Session(self, info)

    def session(self, **kw: Any) -> "Session":
        """:meth:`create_session`, to use as ``with client.session(ttl="10m") as s:``."""
        return self.create_session(**kw)

    def get_session(self, id: str) -> "Session":
        """One of this client's sessions by its id (:class:`airlock.NotFound` otherwise)."""
        return Session(self, self._transport.request("GET", "/v1/sessions/%s" % id))

    def sessions(self) -> List["Session"]:
        """This client's live sessions (another client's are not listed)."""
        return [Session(self, i) for i in self._transport.request("GET", "/v1/sessions")]

    def __repr__(self) -> str:
        return "<airlock.Client %s>" % self.address


class Sandbox(Session):
    """A session with a client of its own, for code that needs only one:

    >>> with Sandbox.create(ttl="10m") as sb:
    ...     sb.files.write("main.py", "print(1)")
    ...     print(sb.run(["python3", "main.py"]).wait().stdout)
    """

    @classmethod
    def create(cls, *, ttl: Optional[Duration] = None, policy: Any = None,
               workspace: Optional[str] = None, memory: Optional[str] = None,
               **client_args: Any) -> "Sandbox":
        """Starts a session; ``client_args`` go to :class:`Client` (socket, url, token)."""
        s = Client(**client_args).create_session(ttl=ttl, policy=policy, workspace=workspace,
                                                  memory=memory)
        return cls(s.client, s.info)

    @classmethod
    def connect(cls, id: str, **client_args: Any) -> "Sandbox":
        """An existing session of this client's by its id."""
        s = Client(**client_args).get_session(id)
        return cls(s.client, s.info)
