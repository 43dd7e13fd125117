"""Both ends of a relayed TCP connection, for test-egress-relay-keeps-every-byte.

  relay-peer.py serve PORT          the host's end on 127.0.0.1:PORT (prints "ready")
  relay-peer.py check HOST PORT [CASE...]
                                    the sandbox's end: runs each case (or those named) through
                                    the proxy and prints "NAME=ok" or "NAME=FAIL: why", one line
                                    each

Each connection starts with a line naming its case:
  upload            the client sends 24 MiB (or 100 bytes) and ends its side; the server
                    answers with the count and SHA-256 of what it got, after the end
  download N        the server sends N bytes and closes; the client reads the first MiB slowly
  drip N            the server sends 64 KiB (bulk), then N one-byte segments while the client
                    is not reading, then closes
  pingpong N        N small request/answer exchanges on the connection
  echo              the server sends back what it gets, as it comes, until the client's end
                    (also with urgent data in the middle)
"""

import hashlib
import random
import socket
import socketserver
import sys
import threading
import time

MiB = 1 << 20


def data(n, seed):
    return random.Random(seed).randbytes(n)


def read_line(f):
    line = f.readline(256)
    return line.decode().split()


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        s = self.request
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        words = read_line(self.rfile)
        if not words:
            return
        case = words[0]
        if case == "upload":
            h, n = hashlib.sha256(), 0
            while True:
                b = self.rfile.read1(65536)
                if not b:
                    break
                h.update(b)
                n += len(b)
            s.sendall(b"%d %s\n" % (n, h.hexdigest().encode()))
        elif case == "download":
            s.sendall(data(int(words[1]), 1))
        elif case == "drip":
            s.sendall(data(64 * 1024, 2))
            for i in range(int(words[1])):
                s.send(bytes([i % 251]))
        elif case == "pingpong":
            for i in range(int(words[1])):
                if read_line(self.rfile) != ["ping", str(i)]:
                    return
                s.sendall(b"pong %d\n" % i)
        elif case == "echo":
            while True:
                b = self.rfile.read1(65536)
                if not b:
                    break
                s.sendall(b)
        s.shutdown(socket.SHUT_WR)
        # What the client sends after (nothing) is read until its end, so that the close is
        # not a reset.
        while s.recv(65536):
            pass


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


def serve(port):
    srv = Server(("127.0.0.1", port), Handler)
    print("ready", flush=True)
    srv.serve_forever()


def connect(host, port, case):
    s = socket.create_connection((host, port), timeout=20)
    s.sendall(case.encode() + b"\n")
    return s


def read_all(s):
    out = bytearray()
    while True:
        b = s.recv(65536)
        if not b:
            return bytes(out)
        out += b


def case_upload(host, port):
    s = connect(host, port, "upload")
    body = data(24 * MiB, 3)
    s.sendall(body)
    s.shutdown(socket.SHUT_WR)
    got = read_all(s).split()
    want = [str(len(body)).encode(), hashlib.sha256(body).hexdigest().encode()]
    return got == want, "server got %r, sent %r" % (got, want)


def case_upload_small(host, port):
    # The request and the end at once, most likely queued together before the proxy reads
    # them: a short read must not be taken for all there is when the end has come too.
    s = socket.create_connection((host, port), timeout=20)
    body = b"0123456789" * 10
    s.sendall(b"upload\n" + body)
    s.shutdown(socket.SHUT_WR)
    got = read_all(s).split()
    want = [b"100", hashlib.sha256(body).hexdigest().encode()]
    return got == want, "server got %r, sent %r" % (got, want)


def case_download(host, port):
    n = 24 * MiB
    s = connect(host, port, "download %d" % n)
    out = bytearray()
    # The first MiB a KiB at a time, slowly: the proxy's buffers and the pipe fill up.
    while len(out) < MiB:
        b = s.recv(1024)
        if not b:
            break
        out += b
        time.sleep(0.0005)
    out += read_all(s)
    return bytes(out) == data(n, 1), "got %d bytes of %d (or different ones)" % (len(out), n)


def case_drip(host, port):
    n = 3000
    s = connect(host, port, "drip %d" % n)
    time.sleep(1.5)  # not reading while the segments queue
    out = read_all(s)
    want = data(64 * 1024, 2) + bytes(i % 251 for i in range(n))
    return out == want, "got %d bytes of %d (or different ones)" % (len(out), len(want))


def case_pingpong(host, port):
    n = 3000
    s = connect(host, port, "pingpong %d" % n)
    f = s.makefile("rb")
    for i in range(n):
        s.sendall(b"ping %d\n" % i)
        line = f.readline()
        if line != b"pong %d\n" % i:
            return False, "exchange %d got %r" % (i, line)
    s.shutdown(socket.SHUT_WR)
    rest = f.read()
    return rest == b"", "after the last exchange: %r" % rest[:64]


def case_echo(host, port):
    s = connect(host, port, "echo")
    body = data(8 * MiB, 4)

    def send():
        # In pieces of every size, so that small and large reads alternate in the proxy.
        rnd, i = random.Random(5), 0
        while i < len(body):
            k = rnd.choice((1, 7, 100, 1500, 16384, 16385, 200000))
            s.sendall(body[i:i + k])
            i += k
        s.shutdown(socket.SHUT_WR)

    t = threading.Thread(target=send)
    t.start()
    out = read_all(s)
    t.join()
    return out == body, "got %d bytes of %d (or different ones)" % (len(out), len(body))


def case_urgent(host, port):
    # Urgent data in the middle: a TCP read stops at its mark, with bytes after it queued, so
    # a short read there must not be taken for all there is. The urgent byte itself is not
    # relayed as such (the proxy reads without SO_OOBINLINE, as most readers do).
    # No end follows (an announced end makes the proxy read on anyway): the echo of the bytes
    # after the mark is awaited first.
    for i in range(20):
        s = connect(host, port, "echo")
        s.sendall(b"abc")
        s.send(b"X", socket.MSG_OOB)
        s.sendall(b"def")
        got = b""
        try:
            while len(got) < 6:
                b = s.recv(6 - len(got))
                if not b:
                    break
                got += b
        except socket.timeout:
            return False, "round %d: the echo stalled after %r" % (i, got)
        s.shutdown(socket.SHUT_WR)
        got += read_all(s)
        if got != b"abcdef":
            return False, "round %d got %r" % (i, got)
    return True, ""


def check(host, port, only):
    for name, fn in (("upload", case_upload), ("upload_small", case_upload_small),
                     ("download", case_download),
                     ("drip", case_drip), ("pingpong", case_pingpong), ("echo", case_echo),
                     ("urgent", case_urgent)):
        if only and name not in only:
            continue
        try:
            ok, why = fn(host, port)
        except OSError as e:
            ok, why = False, repr(e)
        print("%s=%s" % (name, "ok" if ok else "FAIL: " + why), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(int(sys.argv[2]))
    else:
        check(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
