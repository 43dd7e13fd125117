#!/usr/bin/env bash
# AWS SigV4 through the egress proxy, with Debian's botocore (python3-botocore) inside the
# sandbox and an upstream of the test's own (TLS, test CA) that checks every signature with the
# REAL keys, with botocore's own signer (helpers/sigv4-upstream.py):
#   the sandbox holds an AWS-shaped surrogate key id, a surrogate secret and a surrogate session
#   token; S3 calls signed in the header (ListObjectsV2, PutObject), an STS call whose body the
#   proxy hashes (GetCallerIdentity), a presigned S3 URL fetched with urllib, and S3 PUTs whose
#   body is signed chunk by chunk (aws-chunked, with and without signed trailers; the chunks are
#   signed in the client by a signer of the test's own, as botocore signs none) all reach the
#   upstream signed with the real key, the real token in place, every chunk signed again;
#   refused with 403, each never reaching an upstream: a region and a service outside the
#   credential's scope, a signature made with another secret, the key used on a host the
#   credential is not bound to, the raw surrogate secret in a header; a chunk signed with another
#   secret cuts its request short (its head went out first) and nothing of it is accepted;
#   the refusals are credential violations, the swaps are audited; no real value in the audit,
#   in airlock's output, or in the memory of the sandbox's client after its calls.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

PY=/usr/bin/python3
"$PY" -c 'import botocore' 2>/dev/null || it_skip "Debian's python3-botocore is not installed"

rand() { head -c 300 /dev/urandom | base64 -w0 | tr -dc "$2" | head -c "$1"; }
real_akid=ASIA$(rand 16 'A-Z0-9')
real_secret=$(rand 38 'A-Za-z0-9')/+
real_token=IQoJb3JpZ2luX2VjE$(rand 200 'A-Za-z0-9')/+=
export REAL_AKID=$real_akid REAL_SECRET=$real_secret REAL_TOKEN=$real_token
export IT_OTHER=other-$(rand 32 'a-z0-9')
sp=$(it_port)

it_test_pki aws.test other.test

up=$IT_TMP/upstream.jsonl
: >"$up"
"$PY" "$IT_SOURCE_ROOT/tests/integration/helpers/sigv4-upstream.py" "$sp" "$up" \
	"$pki/srv.pem" "$pki/srv.key" >"$IT_TMP/up.out" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
wait_for 10 grep -q ready "$IT_TMP/up.out"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "aws.test", "port": $sp, "action": "allow"},
            {"destination": "other.test", "port": $sp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $sp, "action": "allow"}],
  "resolve": {"aws.test": "127.0.0.1", "other.test": "127.0.0.1"}},
 "credentials": [
  {"name": "aws", "source": {"type": "env", "var": "REAL_AKID"},
   "injection": {"type": "env_var", "var_name": "AWS_ACCESS_KEY_ID"}, "hosts": ["aws.test"],
   "aws": {"secret_access_key": "aws-secret", "session_token": "aws-token",
           "regions": ["us-east-1"], "services": ["s3", "sts"]}},
  {"name": "aws-secret", "source": {"type": "env", "var": "REAL_SECRET"},
   "injection": {"type": "env_var", "var_name": "AWS_SECRET_ACCESS_KEY"}, "hosts": ["aws.test"]},
  {"name": "aws-token", "source": {"type": "env", "var": "REAL_TOKEN"},
   "injection": {"type": "env_var", "var_name": "AWS_SESSION_TOKEN"}, "hosts": ["aws.test"]},
  {"name": "other", "source": {"type": "env", "var": "IT_OTHER"},
   "injection": {"type": "env_var", "var_name": "OTHER_TOKEN"}, "hosts": ["other.test"]}]}
EOF

cat >"$WS/client.py" <<EOF
import base64, hashlib, hmac, os, time, urllib.error, urllib.request, zlib
import botocore.session
from botocore.config import Config
from botocore.exceptions import ClientError
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

E = "https://aws.test:$sp"
def r(name, value):
    print("%s=%s" % (name, value), flush=True)

def client(service, region="us-east-1", endpoint=E, secret=None):
    s = botocore.session.get_session()
    if secret:
        s.set_credentials(os.environ["AWS_ACCESS_KEY_ID"], secret, os.environ["AWS_SESSION_TOKEN"])
    cfg = Config(signature_version="s3v4", s3={"addressing_style": "path"},
                 retries={"max_attempts": 1})
    return s.create_client(service, region_name=region, endpoint_url=endpoint, config=cfg)

def call(name, fn):
    try:
        out = fn()
        r(name, "%d %s" % (out["ResponseMetadata"]["HTTPStatusCode"], out.get("Account", out.get("Name", ""))))
    except ClientError as e:
        r(name, e.response["ResponseMetadata"]["HTTPStatusCode"])
    except Exception as e:
        r(name, "error %s" % type(e).__name__)

def fetch(name, req):
    try:
        with urllib.request.urlopen(req, timeout=10) as f:
            r(name, "%d %s" % (f.status, f.read().decode()))
    except urllib.error.HTTPError as e:
        r(name, e.code)
    except Exception as e:
        r(name, "error %s" % e)

r("akid", os.environ["AWS_ACCESS_KEY_ID"])
r("secret", os.environ["AWS_SECRET_ACCESS_KEY"])
r("token", os.environ["AWS_SESSION_TOKEN"])
s3 = client("s3")
call("s3_list", lambda: s3.list_objects_v2(Bucket="bucket"))
call("s3_put", lambda: s3.put_object(Bucket="bucket", Key="dir/a b+c.txt", Body=b"hello sigv4"))
call("sts", lambda: client("sts").get_caller_identity())
url = s3.generate_presigned_url("get_object", Params={"Bucket": "bucket", "Key": "dir/a b.txt"},
                                ExpiresIn=300)
r("presigned_form", "X-Amz-Credential=" + os.environ["AWS_ACCESS_KEY_ID"] in url)
fetch("presigned", url)
call("wrong_region", lambda: client("s3", region="eu-west-1").list_objects_v2(Bucket="bucket"))
q = AWSRequest(method="GET", url=E + "/?Action=DescribeRegions&Version=2016-11-15")
SigV4Auth(botocore.session.get_session().get_credentials(), "ec2", "us-east-1").add_auth(q)
fetch("wrong_service", urllib.request.Request(q.url, headers=dict(q.headers)))
call("wrong_secret", lambda: client("s3", secret="x" * 40).list_objects_v2(Bucket="bucket"))
call("other_host", lambda: client("s3", endpoint="https://other.test:$sp").list_objects_v2(Bucket="bucket"))
fetch("raw_secret", urllib.request.Request(E + "/leak-secret",
                                           headers={"X-Leak": os.environ["AWS_SECRET_ACCESS_KEY"]}))
# A signature that does not sign the Host, and a presigned URL dated 300 days ahead: either made
# with the real key would be usable elsewhere or later (found by the red team).
import datetime
import botocore.auth as ba
from botocore.auth import S3SigV4QueryAuth
creds = botocore.session.get_session().get_credentials()
class NoHost(SigV4Auth):
    def headers_to_sign(self, request):
        h = super().headers_to_sign(request)
        del h["host"]
        return h
q = AWSRequest(method="GET", url=E + "/bucket/leak-nohost",
               headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
NoHost(creds, "s3", "us-east-1").add_auth(q)
fetch("no_host", urllib.request.Request(q.url, headers=dict(q.headers)))
real_datetime = ba.datetime.datetime
class Later(real_datetime):
    @classmethod
    def utcnow(cls):
        return real_datetime.utcnow() + datetime.timedelta(days=300)
ba.datetime.datetime = Later
q = AWSRequest(method="GET", url=E + "/bucket/leak-future")
S3SigV4QueryAuth(creds, "s3", "us-east-1", expires=604800).add_auth(q)
ba.datetime.datetime = real_datetime
fetch("future_presigned", q.url)
# Chunk signing (botocore signs no chunks; Java's and Go's SDKs and the CRT do): the head signed
# by botocore with the surrogate secret, each chunk (and the trailers) chained from it here, as
# AWS describes it, with the surrogate secret (or, bad, another one).
def chunked_put(name, key, data, size, trailer=False, bad=False):
    h = {"x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" + ("-TRAILER" if trailer else ""),
         "Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data))}
    if trailer:
        h["x-amz-trailer"] = "x-amz-checksum-crc32"
    q = AWSRequest(method="PUT", url=E + "/bucket/" + key, headers=h)
    SigV4Auth(creds, "s3", "us-east-1").add_auth(q)
    stamp = q.headers["X-Amz-Date"]
    scope = stamp[:8] + "/us-east-1/s3/aws4_request"
    prev = q.headers["Authorization"].rsplit("Signature=", 1)[1]
    k = ("AWS4" + ("x" * 40 if bad else os.environ["AWS_SECRET_ACCESS_KEY"])).encode()
    for part in (stamp[:8], "us-east-1", "s3", "aws4_request"):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    def link(kind, *hashes):
        sts = "\n".join([kind, stamp, scope, prev] + list(hashes))
        return hmac.new(k, sts.encode(), hashlib.sha256).hexdigest()
    empty, wire = hashlib.sha256(b"").hexdigest(), b""
    for i in list(range(0, len(data), size)) + [len(data)]:
        chunk = data[i:i + size]
        prev = link("AWS4-HMAC-SHA256-PAYLOAD", empty, hashlib.sha256(chunk).hexdigest())
        wire += b"%x;chunk-signature=%s\r\n" % (len(chunk), prev.encode()) + chunk
        if chunk or not trailer:
            wire += b"\r\n"
    if trailer:
        crc = base64.b64encode(zlib.crc32(data).to_bytes(4, "big")).decode()
        t = "x-amz-checksum-crc32:" + crc + "\n"
        wire += t.replace("\n", "\r\n").encode() + b"x-amz-trailer-signature:"
        wire += link("AWS4-HMAC-SHA256-TRAILER", hashlib.sha256(t.encode()).hexdigest()).encode()
        wire += b"\r\n\r\n"
    fetch(name, urllib.request.Request(q.url, data=wire, method="PUT", headers=dict(q.headers)))
chunked_put("chunked", "chunked", bytes(range(256)) * 280, 65536)
chunked_put("chunked_trailer", "chunked-trailer", b"trailer data " * 300, 1024, trailer=True)
chunked_put("chunked_bad", "cut-chunked", b"forged" * 100, 256, bad=True)

# Memory: the host scans this process now, while it sleeps (a file the host makes in the
# workspace may be seen late through FUSE's caches: the host checks instead that the process was
# still there when the scan ended).
open("/workspace/scan-ready", "w").write(os.environ["AWS_ACCESS_KEY_ID"])
time.sleep(8)
EOF

# The host's side of the memory scan (helpers/mem-scan.py): every readable mapping of the client,
# searched for the real values and (to show that the scan sees the process) the surrogate key id.
(
	wait_for 60 test -e "$WS/scan-ready"
	pid=$(pgrep -f "^$PY /workspace/client.py" | head -n 1)
	sur=$(cat "$WS/scan-ready")
	"$PY" "$IT_SOURCE_ROOT/tests/integration/helpers/mem-scan.py" "$pid" \
		"real_akid=$real_akid" "real_secret=$real_secret" "real_token=$real_token" \
		"surrogate_akid=$sur" >"$IT_TMP/scan.out" 2>&1
	kill -0 "$pid" 2>/dev/null && echo alive >>"$IT_TMP/scan.out"
) &
scanner=$!

sb_run -p "$policy" --upstream-ca "$pki/ca.pem" --audit "$IT_TMP/audit.jsonl" --json \
	-- "$PY" /workspace/client.py
wait "$scanner"
assert_eq 0 "$AL_RC" "the sandbox with an AWS key runs"
json_get "$IT_TMP/al.out" 'd["stdout"]' >"$IT_TMP/probe.out"
get() { sed -n "s/^$1=//p" "$IT_TMP/probe.out" | head -n 1; }

akid=$(get akid)
assert_match '^ASIA[A-Z0-9]{16}$' "$akid" "the sandbox holds an AWS-shaped surrogate key id"
assert_ne "$real_akid" "$akid" "... not the real one"
assert_ne "$real_secret" "$(get secret)" "the sandbox holds a surrogate secret access key"
assert_match '^[A-Za-z0-9+/]{40}$' "$(get secret)" "... shaped like AWS's (40 characters of base64's alphabet)"
assert_ne "$real_token" "$(get token)" "... and a surrogate session token"

assert_eq "200 bucket" "$(get s3_list)" "S3 ListObjectsV2 (signed header) reaches the upstream signed with the real key"
assert_eq "200 " "$(get s3_put)" "S3 PutObject (signed header, a key to encode) too"
assert_eq "200 123456789012" "$(get sts)" "STS GetCallerIdentity (the body hashed by the proxy) too"
assert_eq True "$(get presigned_form)" "botocore presigns with the surrogate key id in the query"
assert_eq "200 ok " "$(get presigned)" "a presigned S3 URL fetched with urllib reaches the upstream signed with the real key"
ok=$("$PY" -c 'import json, sys; print(sum(json.loads(l)["verdict"] == "ok" for l in open(sys.argv[1])))' "$up")
assert_eq 6 "$ok" "the upstream verified six signatures with the real keys (and every chunk of two bodies)"
assert_eq 0 "$(grep -v cut-chunked "$up" | grep -c '"verdict": "[^o]')" "and refused none: nothing reached it with a bad signature"
body_of() { "$PY" -c 'import json, sys
print(" ".join(str(len(e["body"])) + ":" + e["verdict"] for e in map(json.loads, open(sys.argv[1])) if e["path"] == sys.argv[2]))' "$up" "$1"; }
assert_eq "200 " "$(get chunked)" "an S3 PUT signed chunk by chunk reaches the upstream, every chunk signed again with the real key"
assert_eq "71680:ok" "$(body_of /bucket/chunked)" "... with all its data"
assert_eq "200 " "$(get chunked_trailer)" "... and one with signed trailers (a CRC32 checksum)"
assert_eq "3900:ok" "$(body_of /bucket/chunked-trailer)" "... with all its data"
assert_eq 403 "$(get chunked_bad)" "a chunk signed with another secret is refused (403)"
assert_eq 0 "$(grep -c '"/bucket/cut-chunked".*"verdict": "ok"' "$up")" "... and the upstream accepted nothing of it (its head went out, its body was cut short)"
assert_ne 0 "$(grep -c "$real_akid" "$up")" "the upstream saw the real key id"
assert_ne 0 "$(grep -cF "$real_token" "$up")" "and the real session token"
assert_eq 0 "$(grep -c "$akid" "$up")" "no surrogate key id reached the upstream"
assert_eq 0 "$(grep -cF "$(get token)" "$up")" "no surrogate token reached the upstream"
assert_eq 0 "$(grep -cF "$real_secret" "$up")" "the real secret never went on the wire"

assert_eq 403 "$(get wrong_region)" "a region outside the credential's scope is refused (403)"
assert_eq 403 "$(get wrong_service)" "a service outside the credential's scope is refused (403)"
assert_eq 403 "$(get wrong_secret)" "a signature the surrogate secret does not verify is refused (403)"
assert_eq 403 "$(get other_host)" "the key on a host its credential is not bound to is refused (403)"
assert_eq 403 "$(get no_host)" "a signature that does not sign the Host is refused (403)"
assert_eq 403 "$(get future_presigned)" "a presigned URL dated 300 days ahead is refused (403)"
assert_eq 403 "$(get raw_secret)" "the raw surrogate secret in a header is refused (403)"
assert_eq 0 "$(grep -c 'leak\|eu-west-1\|DescribeRegions\|"other.test' "$up")" "no refused request reached an upstream"

audit=$IT_TMP/audit.jsonl
count() { "$PY" -c '
import json, sys
print(sum(1 for l in open(sys.argv[1]) if eval(sys.argv[2], {"e": json.loads(l)})))' "$audit" "$1"; }
assert_ne 0 "$(count 'e.get("kind") == "credential" and e.get("action") == "swap" and e.get("credential") == "aws" and e.get("where", "").startswith("sigv4")')" \
	"the audit records the key id swapped into signatures"
assert_ne 0 "$(count 'e.get("kind") == "credential" and e.get("credential") == "aws-token"')" \
	"... and the session token"
# (a violation's detail is cut short)
for what in "scope eu-west-1/s3 is" "scope us-east-1/ec2 is" "signature of the request does not" \
	"other.test:$sp SigV4 credential: refused" "surrogate of an AWS secret access key" \
	"SigV4 signature of a chunk"; do
	assert_eq true "$(json_get "$IT_TMP/al.out" "any(v['kind'] == 'credential' and '$what' in v['detail'] for v in d['violations'])")" \
		"the refusal ($what) is a credential violation in the result"
done
for v in "$real_akid" "$real_secret" "$real_token"; do
	assert_eq 0 "$(cat "$audit" "$IT_TMP/al.out" "$IT_TMP/al.err" | grep -cF -- "$v")" \
		"no real value (${v:0:6}...) in the audit or airlock's output"
done

assert_eq alive "$(sed -n 2p "$IT_TMP/scan.out")" \
	"the host scanned the client's memory after its calls, while it still ran"
assert_match '^real_akid=0 real_secret=0 real_token=0 surrogate_akid=[1-9]' \
	"$(head -n 1 "$IT_TMP/scan.out")" \
	"no real value in the memory of the sandbox's client (which the scan sees: it finds the surrogate)"

it_finish
