r"""A test upstream for the egress proxy: HTTP/1.1 on 127.0.0.1, optionally TLS.

usage: upstream.py PORT LOG [--tls CERT KEY] [--root DIR] [--conn-log FILE]

Every request is logged to LOG as one JSON line (method, path, headers, body length, the body's
text when short, its connection's number and its own on that connection), so a test can see
exactly what reached the upstream; with --conn-log, each connection's opening and end too
({"conn": N, "event": "open" or "close"}). Answers:
  /echo-headers   the request's headers as JSON (a real credential value in them comes back in
                  the response: the proxy must turn it back into the surrogate)
  /big?n=N[&seed=S][&te=chunked|close]
                  N bytes ("x" each, or random from seed S), framed by Content-Length, in
                  chunks of 64 KiB, or by the connection's end
  /big-sha?n=N&seed=S
                  the SHA-256 (hex) of /big's random N bytes from seed S
  /sha256         the SHA-256 (hex) of the request's body
  /ignore-body    "ignored": the request's body is not read, and so is taken for the next
                  request on the connection (a server that ignores a GET's body)
  /echo-enc?enc=E the request's Authorization value encoded as E: json (every other byte as
                  \u00XX, the case alternating, '/' as \/), pct-upper, pct-lower (every byte
                  %XX), pct-mixed (every other byte, lower case), hex-lower, hex-upper, b64, gzip
                  (with Content-Encoding: gzip), gzip-bare (the same bytes without it)
  /last[?enc=E]   the Authorization value of the latest request before this one that had one
                  (read from LOG, so upstreams sharing a LOG share it), encoded as E when
                  given: a host that shows a value sent on another connection
  /conn           "conn=N n=K auth=A": the connection's number, the request's on it, and its
                  Authorization (keep-alive: a test sees which connection served it)
  /junk-after     as /conn, then 0.3 s later an answer no request asked for on the same
                  connection, which stays open
  /linger-close   as /conn, then 0.3 s later the connection's end, though the answer said
                  nothing of it (a server's keep-alive timeout)
  /until-close    as /conn, without Content-Length: the body ends with the connection
  /drop-next      as /conn; the connection's next request is read, logged and not answered:
                  the connection ends (a keep-alive timeout that crossed that request)
  /reset-next     as /drop-next, but the end is a reset
  anything else   a file under --root when it exists, else "hello from upstream\n"
Prints "ready" on stdout once it listens.
"""

import base64
import gzip
import hashlib
import json
import os
import random
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()
CONNS = [0]


def encode(value, enc):
    """value (bytes) in one of the forms of /echo-enc."""
    if enc == "json":
        out, k = [], 0
        for i, c in enumerate(value):
            if i % 2 == 0:
                out.append(("\\u00%02X" if k % 2 else "\\u00%02x") % c)
                k += 1
            elif c == ord("/"):
                out.append("\\/")
            else:
                out.append(chr(c))
        return ('{"auth":"' + "".join(out) + '"}').encode()
    if enc in ("pct-upper", "pct-lower", "pct-mixed"):
        fmt = "%%%02X" if enc == "pct-upper" else "%%%02x"
        step = 2 if enc == "pct-mixed" else 1
        return ("a=" + "".join(fmt % c if i % step == 0 else chr(c)
                               for i, c in enumerate(value))).encode()
    if enc == "b64":
        return base64.b64encode(value)
    if enc == "hex-lower":
        return value.hex().encode()
    if enc == "hex-upper":
        return value.hex().upper().encode()
    if enc in ("gzip", "gzip-bare"):
        return gzip.compress(value)
    return value


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "it-upstream"

    def log_message(self, *args):
        pass

    def conn_event(self, event):
        if self.server.conn_log:
            with LOCK, open(self.server.conn_log, "a") as f:
                f.write(json.dumps({"conn": self.conn, "event": event}) + "\n")

    def setup(self):
        super().setup()
        with LOCK:
            CONNS[0] += 1
            self.conn = CONNS[0]
        self.n = 0
        self.drop_next = None
        self.conn_event("open")

    def finish(self):
        try:
            super().finish()
        finally:
            self.conn_event("close")

    def conn_answer(self, path):
        """/conn and its variants (see the usage)."""
        auth = self.headers.get("Authorization", "")
        body = ("conn=%d n=%d auth=%s" % (self.conn, self.n, auth)).encode()
        if path == "/until-close":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            self.wfile.write(body)
            self.close_connection = True
            return
        self.reply(200, body)
        if path in ("/drop-next", "/reset-next"):
            self.drop_next = path
            return
        if path == "/conn":
            return
        self.wfile.flush()
        time.sleep(0.3)
        if path == "/junk-after":
            self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!")
            self.wfile.flush()
        else:
            self.close_connection = True

    def record(self, body):
        entry = {
            "method": self.command,
            "path": self.path,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_len": len(body),
            "body": body.decode("latin-1") if len(body) <= 4096 else "",
            "conn": self.conn,
            "n": self.n,
        }
        with LOCK, open(self.server.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

    def last_auth(self):
        """The Authorization value of the latest logged request before this one that had one."""
        with LOCK, open(self.server.log_path) as f:
            entries = [json.loads(line) for line in f if line.strip()]
        for entry in reversed(entries[:-1]):
            for k, v in entry["headers"]:
                if k.lower() == "authorization":
                    return v.encode()
        return b""

    def read_body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def reply(self, code, body, ctype="text/plain", headers=None):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def big(self, path, q):
        """/big and /big-sha (see the usage)."""
        n = int(q.get("n", ["1024"])[0])
        seed = q.get("seed", [None])[0]
        data = b"x" * n if seed is None else random.Random(int(seed)).randbytes(n)
        if path == "/big-sha":
            self.reply(200, hashlib.sha256(data).hexdigest().encode())
            return
        te = q.get("te", [""])[0]
        if not te:
            self.reply(200, data, "application/octet-stream")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if te == "chunked":
            self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if te == "chunked":
            for i in range(0, n, 65536):
                piece = data[i:i + 65536]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
        else:
            self.wfile.write(data)
            self.close_connection = True

    def handle_any(self):
        self.n += 1
        if urlsplit(self.path).path == "/ignore-body":
            self.record(b"")
            self.reply(200, b"ignored")
            return
        body = self.read_body()
        self.record(body)
        if self.drop_next:
            self.close_connection = True
            if self.drop_next == "/reset-next":
                self.connection.setsockopt(
                    socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                )
                socket.socket.close(self.connection)
            return
        url = urlsplit(self.path)
        if url.path in ("/conn", "/junk-after", "/linger-close", "/until-close",
                        "/drop-next", "/reset-next"):
            self.conn_answer(url.path)
            return
        if url.path == "/echo-headers":
            doc = {k: v for k, v in self.headers.items()}
            self.reply(200, json.dumps(doc).encode(), "application/json")
            return
        if url.path == "/echo-enc":
            enc = parse_qs(url.query).get("enc", [""])[0]
            value = self.headers.get("Authorization", "").encode()
            body, headers = encode(value, enc), {}
            if enc == "gzip":
                headers["Content-Encoding"] = "gzip"
            self.reply(200, body, "application/octet-stream", headers)
            return
        if url.path == "/last":
            enc = parse_qs(url.query).get("enc", [""])[0]
            self.reply(200, encode(self.last_auth(), enc), "application/octet-stream")
            return
        if url.path in ("/big", "/big-sha"):
            self.big(url.path, parse_qs(url.query))
            return
        if url.path == "/sha256":
            self.reply(200, hashlib.sha256(body).hexdigest().encode())
            return
        root = self.server.root
        if root:
            path = os.path.realpath(os.path.join(root, url.path.lstrip("/")))
            if path.startswith(os.path.realpath(root) + os.sep) and os.path.isfile(path):
                with open(path, "rb") as f:
                    self.reply(200, f.read(), "application/octet-stream")
                return
            if os.path.realpath(root) != path and url.path not in ("/", ""):
                self.reply(404, b"not found\n")
                return
        self.reply(200, b"hello from upstream\n")

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = handle_any


def main():
    port, log_path = int(sys.argv[1]), sys.argv[2]
    args = sys.argv[3:]
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.log_path = log_path
    server.root = None
    server.conn_log = None
    while args:
        if args[0] == "--tls":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(args[1], args[2])
            server.socket = ctx.wrap_socket(server.socket, server_side=True)
            args = args[3:]
        elif args[0] == "--conn-log":
            server.conn_log = args[1]
            args = args[2:]
        elif args[0] == "--root":
            server.root = args[1]
            args = args[2:]
        else:
            sys.exit("unknown argument " + args[0])
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
