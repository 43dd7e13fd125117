#!/usr/bin/env python3
"""An agent-framework provider backed by airlock, through its Python client (python/).

Two ways to use it:

1. As a command, one call per run: reads one JSON object on stdin,
       {"argv": ["python3", "-c", "..."], "cwd": "/host/project", "vars": {"K": "V"},
        "secrets": {"GITHUB_TOKEN": {"value": "ghp_...", "hosts": ["api.github.com"]}}}
   runs argv in a sandbox over cwd (the workspace), with vars as its environment and each
   secret as a credential: the program sees only a surrogate in $NAME, and the egress proxy
   swaps it for the real value on the secret's hosts only. Prints {"stdout", "stderr",
   "exitCode"}. The real values reach airlock through the environment of an `airlock serve` the
   provider starts for the call (credential source "env", read by the embedded broker), never
   through the request, the policy or the sandbox.

2. As a library: `Tools` is what an agent framework registers as its tools (run code, read,
   write and list files, run a command and stream its output), all in one session that lives
   as long as the agent does. `--demo` shows them.

The service: $AIRLOCK_SOCKET (or $AIRLOCK_URL and $AIRLOCK_TOKEN) when set; otherwise (and
always for secrets) an `airlock serve` of the provider's own on a private socket ($AIRLOCK
names the binary).

usage: examples/provider.py < call.json      (as root for network rules)
       examples/provider.py --demo
"""

import json
import os
import re
import sys
from contextlib import ExitStack
from typing import Callable, Dict, List, Optional

try:
    import airlock
except ImportError:  # run from the repository without `pip install ./python`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
    import airlock

NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def service(stack: ExitStack, env: Optional[Dict[str, str]] = None) -> airlock.Client:
    """The configured service, or (with env: always) a serve of our own for as long as the
    stack lasts."""
    if env is None and (os.environ.get("AIRLOCK_SOCKET") or os.environ.get("AIRLOCK_URL")):
        return airlock.Client()
    server = stack.enter_context(airlock.LocalServer(args=["--no-broker"], env=env))
    return server.client()


# ---- 1. one call: {argv, cwd, vars, secrets} -> {stdout, stderr, exitCode} ----

def build_request(call):
    argv, cwd = call["argv"], call.get("cwd") or os.getcwd()
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("argv must be a non-empty list of strings")
    env_for_airlock = None
    credentials, rules = [], []
    for name, secret in (call.get("secrets") or {}).items():
        if not NAME.match(name):
            raise ValueError("secret name %r is not a variable name" % name)
        if env_for_airlock is None:
            env_for_airlock = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
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
        "argv": argv,
        "env": {k: str(v) for k, v in (call.get("vars") or {}).items()},
        "timeout": call.get("timeout", 300),
        "policy": policy,
    }
    return request, env_for_airlock


def one_call() -> int:
    call = json.load(sys.stdin)
    try:
        request, env = build_request(call)
    except (KeyError, TypeError, ValueError) as e:
        json.dump({"stdout": "", "stderr": "provider: %s\n" % e, "exitCode": 2}, sys.stdout)
        return 2
    try:
        with ExitStack() as stack:
            r = service(stack, env).exec("command", **request)
        out = {"stdout": r.stdout, "stderr": r.stderr, "exitCode": r.exit_code}
    except airlock.AirlockError as e:
        out = {"stdout": "", "stderr": "airlock: %s: %s\n" % (e.code or "error", e.message),
               "exitCode": 125}
    json.dump(out, sys.stdout)
    print()
    return 0


# ---- 2. tools for an agent ----

class Tools:
    """An agent's tools over one airlock session (a fresh workspace unless a policy or a
    workspace is given). Each returns what a model reads: text, or a small dict."""

    def __init__(self, client: airlock.Client, **session_args) -> None:
        self.session = client.create_session(**session_args)

    def run_code(self, code: str, language: str = "python", timeout: int = 60) -> dict:
        r = self.session.exec(language, code, timeout=timeout)
        return {"stdout": r.stdout, "stderr": r.stderr, "exit_code": r.exit_code,
                "timed_out": r.timed_out}

    def write_file(self, path: str, content: str) -> str:
        self.session.files.write(path, content)
        return "wrote %d bytes to %s" % (len(content.encode()), path)

    def read_file(self, path: str) -> str:
        try:
            return self.session.files.read_text(path, errors="replace")
        except airlock.NotFound:
            return "no such file: %s" % path

    def list_files(self, path: str = "") -> List[str]:
        return [e.path + ("/" if e.is_dir else "") for e in self.session.files.list(path)]

    def run_command(self, command: str, on_output: Optional[Callable[[str], None]] = None,
                    timeout: str = "5m") -> dict:
        """Runs a shell command in the session, its output passed to on_output as it comes
        (a UI, a log), and returns how it ended."""
        p = self.session.run(command, timeout=timeout, on_stdout=on_output,
                             on_stderr=on_output)
        r = p.wait()
        return {"exit_code": r.exit_code, "timed_out": r.timed_out,
                "output": (r.stdout + r.stderr)[-4000:]}

    def close(self) -> None:
        self.session.delete()


def demo() -> int:
    with ExitStack() as stack:
        tools = Tools(service(stack), ttl="10m")
        stack.callback(tools.close)
        print("run_code:", tools.run_code("print(6 * 7)")["stdout"].strip())
        print(tools.write_file("hello.py", "import sys\nprint('hello from', sys.argv[1])\n"))
        print("list_files:", tools.list_files())
        print("read_file:", tools.read_file("hello.py").splitlines()[0])

        def show(text):
            for line in text.splitlines():
                print("streamed:", line, flush=True)

        end = tools.run_command("for i in 1 2 3; do echo tick $i; sleep 0.2; done; "
                                "python3 hello.py the-session", on_output=show)
        print("run_command:", end["exit_code"])
    return 0


if __name__ == "__main__":
    sys.exit(demo() if sys.argv[1:] == ["--demo"] else one_call())
