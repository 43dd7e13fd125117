"""gRPC server of bench/proxy-h2.sh (Debian's python3-grpcio, no generated code), over TLS:
/bench.Echo/Call answers a unary call with its request when the call's authorization metadata
is "Bearer " + $BENCH_TOKEN (the real token), and with PERMISSION_DENIED otherwise, so that
every call the client counts as answered carried the real token to the server.

usage: grpc-server.py PORT CERT KEY WORKERS   (prints "ready" once it listens)
"""
import os
import sys
from concurrent import futures

import grpc


def main():
    port, cert, key, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    want = "Bearer " + os.environ["BENCH_TOKEN"]

    def call(request, context):
        for k, v in context.invocation_metadata():
            if k == "authorization":
                if v == want:
                    return request
                break
        context.abort(grpc.StatusCode.PERMISSION_DENIED, "not the real token")

    handler = grpc.method_handlers_generic_handler(
        "bench.Echo", {"Call": grpc.unary_unary_rpc_method_handler(call)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=workers))
    server.add_generic_rpc_handlers((handler,))
    creds = grpc.ssl_server_credentials(((open(key, "rb").read(), open(cert, "rb").read()),))
    server.add_secure_port("127.0.0.1:" + port, creds)
    server.start()
    print("ready", flush=True)
    server.wait_for_termination()


main()
