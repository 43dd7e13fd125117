"""A test upstream for the egress proxy: HTTP/1.1 on 127.0.0.1, optionally TLS.

usage: upstream.py PORT LOG [--tls CERT KEY] [--root DIR]

Every request is logged to LOG as one JSON line (method, path, headers, body length, the body's
text when short), so a test can see exactly what reached the upstream. Answers:
  /echo-headers   the request's headers as JSON (a real credential value in them comes back in
                  the response: the proxy must turn it back into the surrogate)
  /big?n=N        N bytes
  anything else   a file under --root when it exists, else "hello from upstream\n"
Prints "ready" on stdout once it listens.
"""

import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

LOCK = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "it-upstream"

    def log_message(self, *args):
        pass

    def record(self, body):
        entry = {
            "method": self.command,
            "path": self.path,
            "headers": [[k, v] for k, v in self.headers.items()],
            "body_len": len(body),
            "body": body.decode("latin-1") if len(body) <= 4096 else "",
        }
        with LOCK, open(self.server.log_path, "a") as f:
            f.write(json.dumps(entry) + "\n")

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

    def reply(self, code, body, ctype="text/plain"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        body = self.read_body()
        self.record(body)
        url = urlsplit(self.path)
        if url.path == "/echo-headers":
            doc = {k: v for k, v in self.headers.items()}
            self.reply(200, json.dumps(doc).encode(), "application/json")
            return
        if url.path == "/big":
            n = int(parse_qs(url.query).get("n", ["1024"])[0])
            self.reply(200, b"x" * n, "application/octet-stream")
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

    do_GET = do_POST = do_PUT = do_HEAD = handle_any


def main():
    port, log_path = int(sys.argv[1]), sys.argv[2]
    args = sys.argv[3:]
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    server.log_path = log_path
    server.root = None
    while args:
        if args[0] == "--tls":
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            ctx.load_cert_chain(args[1], args[2])
            server.socket = ctx.wrap_socket(server.socket, server_side=True)
            args = args[3:]
        elif args[0] == "--root":
            server.root = args[1]
            args = args[2:]
        else:
            sys.exit("unknown argument " + args[0])
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
