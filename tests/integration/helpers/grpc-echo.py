"""A gRPC server over TLS for the egress tests (Debian's python3-grpcio, no generated code):
/airlock.Echo/Call answers with what it saw, "auth=<authorization metadata> body=<request>",
and puts the authorization it saw in its trailing metadata (x-seen-auth). Every call's
authorization is also written, one per line, to the log file.

usage: grpc-echo.py PORT CERT KEY LOG
"""
import sys
from concurrent import futures

import grpc


def main():
    port, cert, key, log = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]

    def call(request, context):
        md = dict(context.invocation_metadata())
        auth = md.get("authorization", "")
        with open(log, "a") as f:
            f.write(auth + "\n")
        context.set_trailing_metadata((("x-seen-auth", auth),))
        return b"auth=" + auth.encode() + b" body=" + request

    handler = grpc.method_handlers_generic_handler(
        "airlock.Echo", {"Call": grpc.unary_unary_rpc_method_handler(call)})
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    server.add_generic_rpc_handlers((handler,))
    creds = grpc.ssl_server_credentials(((open(key, "rb").read(), open(cert, "rb").read()),))
    server.add_secure_port("127.0.0.1:" + port, creds)
    server.start()
    print("ready", flush=True)
    server.wait_for_termination()


main()
