"""A client for ``airlock serve``, the HTTP API of airlock (a Linux sandbox for AI agents).

Standard library only. ::

    from airlock import Client

    client = Client()                                  # the default Unix socket
    print(client.exec("python", "print(6 * 7)").stdout)

    with client.session(ttl="10m") as s:               # deleted at the end of the block
        s.files.write("data.txt", "hello\\n")
        proc = s.run(["sh", "-c", "cat data.txt; sleep 1; echo done"])
        for event in proc:                             # start, stdout..., exit
            print(event)
        print(proc.wait().exit_code)
"""

from .client import Client, ExecResult, FileInfo, Files, Sandbox, Session
from .errors import (AirlockError, CommandFailed, Conflict, ConnectError, Forbidden,
                     InvalidRequest, MethodNotAllowed, NoSpace, NotFound, ServerError,
                     SetupFailed, StreamError, TooLarge, TooManyRequests, Unauthorized,
                     Unsupported)
from .process import Event, Process, ProcessResult
from .server import LocalServer

__version__ = "0.1.0"

__all__ = [
    "Client", "Session", "Sandbox", "Files", "FileInfo", "ExecResult",
    "Process", "ProcessResult", "Event", "LocalServer",
    "AirlockError", "ConnectError", "InvalidRequest", "Unauthorized", "Forbidden", "NotFound",
    "MethodNotAllowed", "Conflict", "TooLarge", "Unsupported", "TooManyRequests", "NoSpace",
    "ServerError", "SetupFailed", "StreamError", "CommandFailed",
]
