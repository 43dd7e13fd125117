"""The errors the client raises: one class per kind of refusal, all :class:`AirlockError`.

The service answers a refusal with a 4xx or 5xx and ``{"error": {"code", "message", "field"}}``;
an exec that did not run answers with its result, whose ``error`` is ``{"kind", "message"}``.
Both become the class of their HTTP status, with ``code`` (or the exec's ``kind``), ``message``,
``field`` and, for exec, the whole ``result``.
"""

from typing import Any, Dict, Optional

__all__ = [
    "AirlockError",
    "ConnectError",
    "InvalidRequest",
    "Unauthorized",
    "Forbidden",
    "NotFound",
    "MethodNotAllowed",
    "Conflict",
    "TooLarge",
    "Unsupported",
    "TooManyRequests",
    "NoSpace",
    "ServerError",
    "SetupFailed",
    "StreamError",
    "CommandFailed",
    "error_from_response",
]


class AirlockError(Exception):
    """Anything the service refused, or that kept a request from reaching it.

    Attributes:
        status: the HTTP status (``None`` when there was no answer).
        code: the error's code (``"not_found"``, ``"invalid_request"``, ...) or, for exec, its
            kind (``"unsupported_language"``, ``"setup_failed"``, ...).
        message: what the service said.
        field: the request's field at fault (a body field, a query argument such as ``path``,
            a header), or ``None``.
        body: the decoded JSON body of the answer, when it had one.
    """

    def __init__(self, message: str, *, status: Optional[int] = None, code: Optional[str] = None,
                 field: Optional[str] = None, body: Any = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.code = code
        self.field = field
        self.body = body

    def __str__(self) -> str:
        parts = []
        if self.status is not None:
            parts.append(str(self.status))
        if self.code:
            parts.append(self.code)
        prefix = " ".join(parts)
        field = " (field: %s)" % self.field if self.field else ""
        return "%s: %s%s" % (prefix, self.message, field) if prefix else self.message + field

    @property
    def result(self) -> Optional["Any"]:
        """For an exec that did not run: its result (an :class:`airlock.ExecResult`)."""
        return getattr(self, "_result", None)


class ConnectError(AirlockError):
    """The service could not be reached (no socket, nothing listening, connection dropped)."""


class InvalidRequest(AirlockError):
    """400: the request is malformed; ``field`` names what is wrong when the service knows."""


class Unauthorized(AirlockError):
    """401: TCP without the right bearer token."""


class Forbidden(AirlockError):
    """403: this user may not use the service, or the workspace's rules refuse the path (or it
    is a symbolic link, which is never followed)."""


class NotFound(AirlockError):
    """404: no such session, process, file, checkpoint or endpoint."""


class MethodNotAllowed(AirlockError):
    """405: the endpoint has no such method."""


class Conflict(AirlockError):
    """409: a folder where a file is meant, a folder that is not empty, a process without a
    terminal or without stdin."""


class TooLarge(AirlockError):
    """413: the body is larger than the service takes."""


class Unsupported(AirlockError):
    """422: exec's ``unsupported_language`` or ``unsupported_policy``: this machine cannot run
    the language, or cannot enforce (or has not admitted) the policy."""


class TooManyRequests(AirlockError):
    """429: a per-client limit (requests and streams at once, sessions, processes)."""


class NoSpace(AirlockError):
    """507: the workspace's quota is used up."""


class ServerError(AirlockError):
    """5xx: the service failed."""


class SetupFailed(ServerError):
    """500 from exec: the sandbox could not be built (``setup_failed``)."""


class StreamError(AirlockError):
    """A process's event stream broke off before its exit event."""


class CommandFailed(AirlockError):
    """Raised by ``check=True`` (or ``result.check()``): the program ran but did not succeed
    (a non-zero exit code, a signal, a timeout or the memory limit). ``result`` holds it."""

    def __init__(self, result: Any) -> None:
        what = "exit code %s" % result.exit_code
        if getattr(result, "timed_out", False):
            what = "timed out"
        elif getattr(result, "oom_killed", False):
            what = "killed at its memory limit"
        elif getattr(result, "signal", None):
            what = "killed by signal %s" % result.signal
        super().__init__("the command failed: %s" % what, code="command_failed")
        self._result = result

    @property
    def exit_code(self) -> Optional[int]:
        return self._result.exit_code


_BY_STATUS = {
    400: InvalidRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    413: TooLarge,
    422: Unsupported,
    429: TooManyRequests,
    507: NoSpace,
}


def error_from_response(status: int, body: Any, text: str = "") -> AirlockError:
    """The exception for an answer with this status and (decoded JSON) body."""
    err: Dict[str, Any] = {}
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
    code = err.get("code") or err.get("kind")
    message = err.get("message") or text.strip() or "HTTP %d" % status
    cls = _BY_STATUS.get(status)
    if cls is None:
        cls = ServerError if status >= 500 else AirlockError
    if status == 500 and code == "setup_failed":
        cls = SetupFailed
    return cls(message, status=status, code=code, field=err.get("field"), body=body)
