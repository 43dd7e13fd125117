#!/usr/bin/env bash
# AWS SigV4 over HTTP/2: the sandbox signs with botocore (its surrogate key id and secret) and
# sends with curl --http2 to an h2 upstream of the test's own (Node's http2, TLS with a test CA)
# that logs every request; each logged request is then checked with the REAL keys by the same
# botocore verifier the HTTP/1.1 test uses (helpers/sigv4-upstream.py's check()):
#   a header-signed S3 request and a presigned S3 URL reach the upstream over h2 signed with the
#   real key, the real token in place; a region outside the credential's scope and a signature
#   made with another secret are refused on their stream (403) and never reach the upstream.
. "${IT_LIB:-$(dirname "$0")/lib.sh}"
it_setup

PY=/usr/bin/python3
"$PY" -c 'import botocore' 2>/dev/null || it_skip "Debian's python3-botocore is not installed"

rand() { head -c 300 /dev/urandom | base64 -w0 | tr -dc "$2" | head -c "$1"; }
export REAL_AKID=ASIA$(rand 16 'A-Z0-9') REAL_SECRET=$(rand 38 'A-Za-z0-9')/+
export REAL_TOKEN=IQoJb3JpZ2luX2VjE$(rand 120 'A-Za-z0-9')/+=
hp=$(it_port)

it_test_pki aws.test

up=$IT_TMP/upstream.jsonl
: >"$up"
cat >"$IT_TMP/h2-log.cjs" <<'EOF2'
// An h2 upstream that logs each request (method, path, headers, body) as a JSON line, answers 200.
const fs = require('fs'), http2 = require('http2');
const [port, cert, key, log] = process.argv.slice(2);
const srv = http2.createSecureServer({key: fs.readFileSync(key), cert: fs.readFileSync(cert)});
srv.on('stream', (stream, headers) => {
	const chunks = [];
	stream.on('data', (d) => chunks.push(d));
	stream.on('end', () => {
		fs.appendFileSync(log, JSON.stringify({method: headers[':method'], path: headers[':path'],
			headers, body: Buffer.concat(chunks).toString('latin1')}) + '\n');
		stream.respond({':status': 200});
		stream.end('ok');
	});
	stream.on('error', () => {});
});
srv.listen(Number(port), '127.0.0.1', () => console.log('ready'));
EOF2
node "$IT_TMP/h2-log.cjs" "$hp" "$pki/srv.pem" "$pki/srv.key" "$up" >"$IT_TMP/up.out" 2>&1 &
IT_UPSTREAMS="$IT_UPSTREAMS $!"
wait_for 10 grep -q ready "$IT_TMP/up.out"

policy=$IT_TMP/policy.json
write_policy "$policy" <<EOF2
{"workspace": {"root": "$WS"},
 "network": {"default": "deny",
  "rules": [{"destination": "aws.test", "port": $hp, "action": "allow"},
            {"destination": "127.0.0.0/8", "port": $hp, "action": "allow"}],
  "resolve": {"aws.test": "127.0.0.1"}},
 "credentials": [
  {"name": "aws", "source": {"type": "env", "var": "REAL_AKID"},
   "injection": {"type": "env_var", "var_name": "AWS_ACCESS_KEY_ID"}, "hosts": ["aws.test"],
   "aws": {"secret_access_key": "aws-secret", "session_token": "aws-token",
           "regions": ["us-east-1"], "services": ["s3"]}},
  {"name": "aws-secret", "source": {"type": "env", "var": "REAL_SECRET"},
   "injection": {"type": "env_var", "var_name": "AWS_SECRET_ACCESS_KEY"}, "hosts": ["aws.test"]},
  {"name": "aws-token", "source": {"type": "env", "var": "REAL_TOKEN"},
   "injection": {"type": "env_var", "var_name": "AWS_SESSION_TOKEN"}, "hosts": ["aws.test"]}]}
EOF2

cat >"$WS/client.py" <<EOF2
import os, subprocess
import botocore.session
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

E = "https://aws.test:$hp"
env = os.environ
def curl(name, url, headers):
    args = ["curl", "-s", "--http2", "--noproxy", "*", "-o", "/dev/null",
            "-w", "%{http_version} %{http_code}", url]
    for k, v in headers.items():
        args += ["-H", "%s: %s" % (k, v)]
    print("%s=%s" % (name, subprocess.run(args, capture_output=True, text=True).stdout), flush=True)

def signed(name, region="us-east-1", secret=None):
    creds = Credentials(env["AWS_ACCESS_KEY_ID"], secret or env["AWS_SECRET_ACCESS_KEY"],
                        env["AWS_SESSION_TOKEN"])
    q = AWSRequest(method="GET", url=E + "/bucket?list-type=2&prefix=a%20b")
    q.headers["x-amz-content-sha256"] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    S3SigV4Auth(creds, "s3", region).add_auth(q)
    curl(name, q.url, dict(q.headers))

signed("header")
s = botocore.session.get_session()
s3 = s.create_client("s3", region_name="us-east-1", endpoint_url=E,
                     config=Config(signature_version="s3v4", s3={"addressing_style": "path"}))
curl("presigned", s3.generate_presigned_url("get_object", Params={"Bucket": "bucket", "Key": "k"},
                                            ExpiresIn=300), {})
signed("wrong_region", region="eu-west-1")
signed("wrong_secret", secret="x" * 40)
EOF2

sb_run -p "$policy" --upstream-ca "$pki/ca.pem" --audit "$IT_TMP/audit.jsonl" --json \
	-- "$PY" /workspace/client.py
assert_eq 0 "$AL_RC" "the sandbox signs and sends over HTTP/2"
json_get "$IT_TMP/al.out" 'd["stdout"]' >"$IT_TMP/probe.out"
get() { sed -n "s/^$1=//p" "$IT_TMP/probe.out" | head -n 1; }
assert_eq "2 200" "$(get header)" "a header-signed request goes over HTTP/2 and is answered"
assert_eq "2 200" "$(get presigned)" "... a presigned URL too"
assert_eq "2 403" "$(get wrong_region)" "a region outside the credential's scope is refused on its stream"
assert_eq "2 403" "$(get wrong_secret)" "a signature made with another secret is refused on its stream"
assert_eq 2 "$(grep -c . "$up")" "only the two good requests reached the upstream"

verdicts=$("$PY" - "$IT_SOURCE_ROOT/tests/integration/helpers/sigv4-upstream.py" "$up" <<'EOF2'
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("sigv4_upstream", sys.argv[1])
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)

class H:
    def __init__(self, d):
        self.d = {k: v for k, v in d.items() if not k.startswith(":")}
        self.d.setdefault("host", d.get(":authority"))
    def get(self, k, default=None):
        return self.d.get(k, default)
    def get_all(self, k):
        v = self.d.get(k, "")
        return ",".join(" ".join(x.split()) for x in (v if isinstance(v, list) else [v]))
    def __getitem__(self, k):
        return self.d.get(k)

for line in open(sys.argv[2]):
    e = json.loads(line)
    print(m.check(e["method"], e["path"], H(e["headers"]), e["body"].encode("latin1")))
EOF2
)
assert_eq "None None" "$(echo $verdicts)" "each request the upstream got verifies with the REAL keys"
assert_not_contains "$(cat "$IT_TMP/probe.out")" "$REAL_SECRET" "the sandbox never saw the real secret"
assert_eq 0 "$(grep -c "$REAL_SECRET" "$IT_TMP/audit.jsonl" "$up" | awk -F: '{s += $2} END {print s}')" \
	"the real secret is in neither the audit nor on the wire (only signatures made with it)"
it_finish
