r"""A test upstream that checks AWS SigV4 signatures with the REAL keys, as AWS would.

usage: sigv4-upstream.py PORT LOG CERT KEY   (the real keys in $REAL_AKID, $REAL_SECRET and
                                              $REAL_TOKEN)

The expected signature is computed by botocore's own signer (botocore.auth) over the request as
received: the method, path and query, the headers the signature names, the payload hash (the
x-amz-content-sha256 header, UNSIGNED-PAYLOAD for a presigned S3 URL, else the SHA-256 of the
body). The credential must name the real key id and the token must be the real one. A body
signed chunk by chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD, and -TRAILER) must have every chunk
and the trailers signed along the real key's chain, checked here by a verifier written from
AWS's description; its data is what is logged. Answers
200 with a minimal body each client parses (S3 ListBucket, STS GetCallerIdentity, else "ok"),
403 with an AWS-style error otherwise. Every request is one JSON line in LOG: method, path,
headers, body, verdict. Prints "ready" once it listens.
"""

import hashlib
import hmac
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AKID, SECRET, TOKEN = os.environ["REAL_AKID"], os.environ["REAL_SECRET"], os.environ["REAL_TOKEN"]
LOCK = threading.Lock()

STS_OK = (b'<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/">'
          b"<GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/airlock</Arn>"
          b"<UserId>AIDAAIRLOCKTEST</UserId><Account>123456789012</Account>"
          b"</GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId>"
          b"</ResponseMetadata></GetCallerIdentityResponse>")
S3_LIST_OK = (b'<?xml version="1.0" encoding="UTF-8"?>'
              b'<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
              b"<Name>bucket</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys>"
              b"<IsTruncated>false</IsTruncated></ListBucketResult>")


def signing_key(date, region, service):
    k = ("AWS4" + SECRET).encode()
    for part in (date, region, service, "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    return k


def dechunk(body, key, stamp, scope, seed, trailer):
    """The data of an aws-chunked body each of whose signatures the real key made; raises
    ValueError otherwise."""
    def link(kind, prev, *hashes):
        sts = "\n".join([kind, stamp, scope, prev] + list(hashes))
        return hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()

    data, prev, rest = b"", seed, body
    empty = hashlib.sha256(b"").hexdigest()
    while True:
        line, rest = rest.split(b"\r\n", 1)
        size, sig = line.split(b";chunk-signature=")
        size = int(size, 16)
        chunk, rest = rest[:size], rest[size:]
        want = link("AWS4-HMAC-SHA256-PAYLOAD", prev, empty, hashlib.sha256(chunk).hexdigest())
        if not hmac.compare_digest(want, sig.decode()):
            raise ValueError("a chunk signature is not the real key's")
        prev, data = want, data + chunk
        if size == 0:
            break
        if rest[:2] != b"\r\n":
            raise ValueError("a chunk is not followed by CRLF")
        rest = rest[2:]
    if not trailer:
        if rest != b"\r\n":
            raise ValueError("the body does not end after its last chunk")
        return data
    lines, canonical = rest.split(b"\r\n"), b""
    for i, l in enumerate(lines):
        if l.startswith(b"x-amz-trailer-signature:"):
            want = link("AWS4-HMAC-SHA256-TRAILER", prev, hashlib.sha256(canonical).hexdigest())
            if not hmac.compare_digest(want, l[24:].decode()) or lines[i + 1:] != [b"", b""]:
                raise ValueError("the trailer signature is not the real key's")
            return data
        canonical += l + b"\n"
    raise ValueError("the trailers have no signature")


def check(method, target, headers, body):
    """None when the request is signed with the real keys, else why not."""
    parts = urlsplit(target)
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    presigned = "X-Amz-Signature" in query
    if presigned:
        cred, signed = query["X-Amz-Credential"], query["X-Amz-SignedHeaders"]
        sig, stamp = query["X-Amz-Signature"], query["X-Amz-Date"]
        token = query.get("X-Amz-Security-Token")
    else:
        auth = headers.get("authorization", "")
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            return "not signed"
        fields = dict(f.strip().split("=", 1) for f in auth[17:].split(","))
        cred, signed, sig = fields["Credential"], fields["SignedHeaders"], fields["Signature"]
        stamp = headers.get("x-amz-date", "")
        token = headers.get("x-amz-security-token")
    key_id, date, region, service, _ = cred.split("/")
    if key_id != AKID:
        return "the credential is not the real key id"
    if token != TOKEN:
        return "the session token is not the real one"
    if stamp[:8] != date:
        return "date"
    creds = Credentials(AKID, SECRET, TOKEN)
    if presigned:
        auth = (S3SigV4QueryAuth(creds, service, region, 300) if service == "s3"
                else SigV4Auth(creds, service, region))
        q = "&".join(p for p in parts.query.split("&") if not p.startswith("X-Amz-Signature="))
        url = "https://" + headers["host"] + parts.path + ("?" + q if q else "")
    else:
        auth = (S3SigV4Auth if service == "s3" else SigV4Auth)(creds, service, region)
        url = "https://" + headers["host"] + target
    req = AWSRequest(method=method, url=url, data=body)
    for name in signed.split(";"):
        req.headers[name] = headers.get_all(name)
    req.context["timestamp"] = stamp
    if service == "s3" and not presigned and not req.headers.get("X-Amz-Content-SHA256"):
        return "s3 without x-amz-content-sha256"
    want = auth.signature(auth.string_to_sign(req, auth.canonical_request(req)), req)
    if not hmac.compare_digest(want, sig):
        return "SignatureDoesNotMatch"
    streaming = headers.get("x-amz-content-sha256", "")
    if streaming.startswith("STREAMING-AWS4-HMAC-SHA256-PAYLOAD"):
        data = dechunk(body, signing_key(date, region, service), stamp,
                       "/".join([date, region, service, "aws4_request"]), sig,
                       streaming.endswith("-TRAILER"))
        if len(data) != int(headers.get("x-amz-decoded-content-length")):
            return "x-amz-decoded-content-length"
        return data
    return None


class Headers:
    def __init__(self, msg):
        self.items = [(k.lower(), v) for k, v in msg.items()]

    def get(self, k, default=None):
        for n, v in self.items:
            if n == k:
                return v
        return default

    def get_all(self, k):
        return ",".join(" ".join(v.split()) for n, v in self.items if n == k)

    def __getitem__(self, k):
        return self.get(k)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def handle_any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        h = Headers(self.headers)
        try:
            why = check(self.command, self.path, h, body)
        except Exception as e:  # a malformed request is a refusal too
            why = "error: %r" % (e,)
        if isinstance(why, bytes):  # an aws-chunked body, verified: its data
            body, why = why, None
        with LOCK, open(sys.argv[2], "a") as f:
            f.write(json.dumps({"method": self.command, "path": unquote(self.path),
                                "headers": h.items, "body": body.decode("latin-1"),
                                "verdict": why or "ok"}) + "\n")
        if why:
            out, status = ("<Error><Code>SignatureDoesNotMatch</Code><Message>%s</Message>"
                           "</Error>" % why).encode(), 403
        elif b"GetCallerIdentity" in body:
            out, status = STS_OK, 200
        elif self.command == "GET" and "list-type=2" in self.path:
            out, status = S3_LIST_OK, 200
        elif self.command == "PUT":
            out, status = b"", 200
        else:
            out, status = b"ok " + body, 200
        self.send_response(status)
        self.send_header("Content-Type", "text/xml")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = handle_any


def main():
    srv = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(sys.argv[3], sys.argv[4])
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print("ready", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()
