#!/usr/bin/env python3
"""An agent-framework provider backed by airlock.

Reads one JSON object on stdin:
    {"argv": ["python3", "-c", "..."], "cwd": "/host/project", "vars": {"K": "V"},
     "secrets": {"GITHUB_TOKEN": {"value": "ghp_...", "hosts": ["api.github.com"]}}}
runs argv in an airlock sandbox over cwd (the workspace), with vars as its environment and each
secret as a credential: the program sees only a surrogate in $NAME, and the egress proxy swaps
it for the real value on the secret's hosts only. Prints {"stdout", "stderr", "exitCode"}.

The real values reach airlock through its own environment (credential source "env", read by the
embedded broker), never through the request, the policy or the sandbox.

usage: examples/provider.py < call.json   (as root for network rules; AIRLOCK names the binary)
"""

import json
import os
import re
import subprocess
import sys

AIRLOCK = os.environ.get("AIRLOCK", "airlock")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def build_request(call):
    argv, cwd = call["argv"], call.get("cwd") or os.getcwd()
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a non-empty list of strings")
    env_for_airlock = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    credentials, rules = [], []
    for name, secret in (call.get("secrets") or {}).items():
        if not NAME.match(name):
            raise ValueError("secret name %r is not a variable name" % name)
        carrier = "AIRLOCK_PROVIDER_SECRET_" + name
        env_for_airlock[carrier] = secret["value"]
        hosts = secret.get("hosts") or []
        credentials.append({
            "name": name.lower().replace("_", "-"),
            "source": {"type": "env", "var": carrier},
            "injection": {"type": "env_var", "var_name": name},
            "hosts": hosts,
        })
        rules += [{"destination": h, "port": 443, "action": "allow"} for h in hosts]
    policy = {
        "workspace": {"root": os.path.abspath(cwd)},
        "credentials": credentials,
        "network": {"default": "deny", "rules": rules},
        "labels": ["provider:example"],
    }
    request = {
        "language": "command",
        "argv": argv,
        "env": {k: str(v) for k, v in (call.get("vars") or {}).items()},
        "timeout": call.get("timeout", 300),
        "policy": policy,
    }
    return request, env_for_airlock


def main():
    call = json.load(sys.stdin)
    try:
        request, env = build_request(call)
    except (KeyError, TypeError, ValueError) as e:
        json.dump({"stdout": "", "stderr": "provider: %s\n" % e, "exitCode": 2}, sys.stdout)
        return 2
    proc = subprocess.run([AIRLOCK, "exec", "--no-broker"], input=json.dumps(request),
                          capture_output=True, text=True, env=env)
    try:
        result = json.loads(proc.stdout)
    except ValueError:
        result = {"error": {"kind": "setup_failed", "message": proc.stderr.strip()}}
    if result.get("error"):
        out = {"stdout": "", "stderr": "airlock: %s: %s\n" % (result["error"]["kind"],
                                                              result["error"]["message"]),
               "exitCode": 125}
    else:
        out = {"stdout": result["stdout"], "stderr": result["stderr"],
               "exitCode": result["exit_code"]}
    json.dump(out, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
