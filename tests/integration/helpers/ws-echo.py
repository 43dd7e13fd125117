"""A WebSocket echo server for the egress tests (Debian's python3-websockets): TLS on one port
(certificate and key given), plain on another, both on 127.0.0.1. Each connection's request head
and each message received are one JSON line in LOG; each message is answered with "echo:" and
the message. Prints "ready" once it listens.

usage: ws-echo.py LOG TLS_PORT CERT KEY PLAIN_PORT"""
import asyncio
import json
import ssl
import sys

import websockets

log_path, tls_port, cert, key, plain_port = sys.argv[1:6]


def log(**event):
    with open(log_path, "a") as f:
        f.write(json.dumps(event) + "\n")


async def handler(ws, path):
    host = ws.request_headers.get("Host", "")
    log(host=host, path=path, headers={k.lower(): v for k, v in ws.request_headers.raw_items()},
        extensions=[type(e).__name__ for e in ws.extensions])
    try:
        async for message in ws:
            text = message if isinstance(message, str) else message.decode("latin-1")
            log(host=host, path=path, message=text, binary=not isinstance(message, str))
            await ws.send("echo:" + text)
    except websockets.ConnectionClosed as e:
        log(host=host, path=path, closed=e.code)


async def main():
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    async with websockets.serve(handler, "127.0.0.1", int(tls_port), ssl=ctx), \
            websockets.serve(handler, "127.0.0.1", int(plain_port)):
        print("ready", flush=True)
        await asyncio.Future()


asyncio.run(main())
