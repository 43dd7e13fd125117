"""The broker's wire protocol, for the integration tests (see docs/BROKER.md).

A frame is: u32 JSON length, u32 payload length (big-endian), the JSON object, the payload.
"""

import json
import socket
import struct

_next_id = [0]


def connect(path, timeout=10.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s


def send_frame(s, body, payload=b""):
    s.sendall(struct.pack(">II", len(body), len(payload)) + body + payload)


def _read_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed by the broker")
        buf += chunk
    return buf


def read_frame(s):
    """The next answer: (the JSON object, the payload bytes)."""
    jl, pl = struct.unpack(">II", _read_exact(s, 8))
    return json.loads(_read_exact(s, jl)), _read_exact(s, pl)


def call(s, op, payload=b"", **fields):
    """Sends one request of protocol version 1 and returns (answer, payload)."""
    _next_id[0] += 1
    req = {"v": 1, "id": _next_id[0], "op": op}
    req.update(fields)
    send_frame(s, json.dumps(req).encode(), payload)
    return read_frame(s)


def open_session(s, credentials, **fields):
    answer, _ = call(s, "open", policy_hash="0" * 64, credentials=credentials, **fields)
    return answer


def is_closed(s, timeout=5.0):
    """Whether the broker closed s (EOF within timeout)."""
    s.settimeout(timeout)
    try:
        while True:
            if not s.recv(4096):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False
