"""HTTP/1.1 to airlock serve, over its Unix socket or TCP, with http.client."""

import http.client
import json
import os
import socket
import ssl
import urllib.parse
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from .errors import AirlockError, ConnectError, error_from_response

USER_AGENT = "airlock-python/0.1.0"


class UnixHTTPConnection(http.client.HTTPConnection):
    """An HTTPConnection to a Unix socket (the Host header says ``airlock``)."""

    def __init__(self, path: str, timeout: Optional[float] = None) -> None:
        super().__init__("airlock", timeout=timeout)
        self.socket_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(self.timeout)
            s.connect(self.socket_path)
        except BaseException:
            s.close()
            raise
        self.sock = s


def default_socket() -> str:
    """Where ``airlock serve`` listens by default: $AIRLOCK_SOCKET, else root's
    /run/airlock/serve.sock, else $XDG_RUNTIME_DIR/airlock/serve.sock."""
    env = os.environ.get("AIRLOCK_SOCKET")
    if env:
        return env
    if os.geteuid() == 0:
        return "/run/airlock/serve.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR") or "/run/user/%d" % os.geteuid()
    return os.path.join(runtime, "airlock", "serve.sock")


Body = Union[None, bytes, Dict[str, Any]]


class Transport:
    """Opens a connection per request: requests may run at once from several threads, and a
    stream holds its connection for as long as it lasts."""

    def __init__(self, socket_path: Optional[str] = None, url: Optional[str] = None,
                 token: Optional[str] = None, timeout: Optional[float] = 60.0,
                 ssl_context: Optional[ssl.SSLContext] = None) -> None:
        self.timeout = timeout
        self.token = token
        self.ssl_context = ssl_context
        self.prefix = ""
        if url:
            u = urllib.parse.urlsplit(url)
            if u.scheme not in ("http", "https") or not u.hostname:
                raise ValueError("url: %r is not http://HOST:PORT or https://HOST:PORT" % url)
            self.scheme, self.host, self.port = u.scheme, u.hostname, u.port
            self.prefix = u.path.rstrip("/")
            self.socket_path = None
            self.where = url
        else:
            self.scheme, self.host, self.port = "unix", None, None
            self.socket_path = socket_path or default_socket()
            self.where = self.socket_path

    def connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self.socket_path is not None:
            return UnixHTTPConnection(self.socket_path, timeout=timeout)
        if self.scheme == "https":
            return http.client.HTTPSConnection(self.host, self.port, timeout=timeout,
                                               context=self.ssl_context)
        return http.client.HTTPConnection(self.host, self.port, timeout=timeout)

    def headers(self, extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
        h = {"User-Agent": USER_AGENT}
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        if extra:
            h.update(extra)
        return h

    def path(self, path: str, query: Optional[Mapping[str, Any]] = None) -> str:
        full = self.prefix + path
        if query:
            items = [(k, _query_value(v)) for k, v in query.items() if v is not None]
            if items:
                full += "?" + urllib.parse.urlencode(items, quote_via=urllib.parse.quote)
        return full

    def open(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
             body: Body = None, headers: Optional[Mapping[str, str]] = None,
             timeout: Any = "default"
             ) -> Tuple[http.client.HTTPConnection, http.client.HTTPResponse, socket.socket]:
        """Sends a request and returns its connection, response (headers read, body not) and
        socket. ``body``: a dict (sent as JSON), bytes (as they are) or None."""
        h = dict(headers or {})
        data: Optional[bytes] = None
        if isinstance(body, dict):
            data = json.dumps(body).encode()
            h.setdefault("Content-Type", "application/json")
        elif body is not None:
            data = bytes(body)
            h.setdefault("Content-Type", "application/octet-stream")
        if data is None and method in ("POST", "PUT"):
            data = b""
        conn = self.connection(self.timeout if timeout == "default" else timeout)
        try:
            try:
                conn.request(method, self.path(path, query), body=data, headers=self.headers(h))
            except (BrokenPipeError, ConnectionResetError):
                # The service may have answered (413) and closed before it read the body.
                if conn.sock is None:
                    raise
            sock = conn.sock
            resp = conn.getresponse()
        except (FileNotFoundError, ConnectionRefusedError) as e:
            conn.close()
            raise ConnectError("no airlock serve at %s (%s); start one with `airlock serve`"
                               % (self.where, e.strerror or e)) from e
        except socket.timeout as e:
            conn.close()
            raise ConnectError("%s %s: no answer from %s in time" % (method, path, self.where)) \
                from e
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise ConnectError("%s %s: %s" % (method, path, e)) from e
        return conn, resp, sock

    def request(self, method: str, path: str, *, query: Optional[Mapping[str, Any]] = None,
                body: Body = None, ok: Tuple[int, ...] = (200, 201, 204),
                timeout: Any = "default", raw: bool = False) -> Any:
        """Sends a request and reads its answer: decoded JSON (or bytes with ``raw``, or None
        for an empty body). A status not in ``ok`` raises the error of its kind."""
        conn, resp, _ = self.open(method, path, query=query, body=body, timeout=timeout)
        try:
            try:
                data = resp.read()
            except (OSError, http.client.HTTPException) as e:
                raise ConnectError("%s %s: the answer broke off: %s" % (method, path, e)) from e
            if resp.status not in ok:
                raise error_from_response(resp.status, decode_json(data),
                                          data.decode("utf-8", "replace"))
            if raw:
                return data
            if not data:
                return None
            try:
                return json.loads(data)
            except ValueError as e:
                raise AirlockError("%s %s: the answer is not JSON" % (method, path),
                                   status=resp.status) from e
        finally:
            conn.close()


def decode_json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


def _query_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)
