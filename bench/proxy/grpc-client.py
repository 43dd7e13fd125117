"""gRPC client of bench/proxy-h2.sh (Debian's python3-grpcio): one channel (one HTTP/2
connection), INFLIGHT unary calls of /bench.Echo/Call kept in flight on it, each carrying the
metadata "authorization: Bearer $TOKEN" and a 100-byte request; WARMUP seconds untimed, then
SECONDS timed. Prints one line: "grpc-result calls=N errors=N seconds=S" (calls answered with
the request echoed in the timed part; errors: any other outcome).

usage: grpc-client.py TARGET CAFILE NAME WARMUP SECONDS INFLIGHT
  TARGET host:port; CAFILE the roots to verify the server with; NAME the name to verify
  (the TLS server name, when TARGET is an address)
"""
import os
import sys
import threading
import time

import grpc


def main():
    target, cafile, name = sys.argv[1], sys.argv[2], sys.argv[3]
    warmup, seconds, inflight = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    md = (("authorization", "Bearer " + os.environ["TOKEN"]),)
    body = b"x" * 100
    options = []
    if not target.startswith(name + ":"):
        options.append(("grpc.ssl_target_name_override", name))
    creds = grpc.ssl_channel_credentials(root_certificates=open(cafile, "rb").read())
    ch = grpc.secure_channel(target, creds, options=options)
    call = ch.unary_unary("/bench.Echo/Call")
    call(body, metadata=md, timeout=10)  # connected, and answered once

    lock = threading.Lock()
    done = threading.Event()
    state = {"timing": False, "calls": 0, "errors": 0, "open": 0}
    closed = threading.Condition(lock)

    def finished(f):
        with lock:
            if state["timing"]:
                try:
                    ok = f.result() == body
                except grpc.RpcError:
                    ok = False
                state["calls" if ok else "errors"] += 1
            if done.is_set():
                state["open"] -= 1
                closed.notify()
                return
        issue()

    def issue():
        f = call.future(body, metadata=md, timeout=30)
        f.add_done_callback(finished)

    with lock:
        state["open"] = inflight
    for _ in range(inflight):
        issue()
    time.sleep(warmup)
    with lock:
        state["timing"] = True
    t0 = time.monotonic()
    time.sleep(seconds)
    with lock:
        state["timing"] = False
        elapsed = time.monotonic() - t0
        calls, errors = state["calls"], state["errors"]
        done.set()
        closed.wait_for(lambda: state["open"] == 0, timeout=30)
    # One write(), newline included: the clients of a run share one pipe, and a line must not
    # be split by another's (seen: two lines run together, the run lost).
    sys.stdout.flush()
    os.write(1, b"grpc-result calls=%d errors=%d seconds=%.3f\n" % (calls, errors, elapsed))
    ch.close()


main()
