"""The client against a real `airlock serve` (the binary in $AIRLOCK), as root, with real
sandboxes: tests/integration/test-python-client.sh runs these. Skipped without $AIRLOCK or
root."""

import json
import os
import shutil
import signal
import socket
import stat
import tempfile
import time
import unittest

import airlock

AIRLOCK = os.environ.get("AIRLOCK")


def needs_service(cls):
    if not AIRLOCK:
        return unittest.skip("AIRLOCK (the airlock binary) is not set")(cls)
    if os.geteuid() != 0:
        return unittest.skip("needs root (as the integration tests)")(cls)
    return cls


class ServiceCase(unittest.TestCase):
    server_args = []

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="airlock-py-")
        os.chmod(cls.tmp, 0o755)
        cls.server = airlock.LocalServer(AIRLOCK, args=cls.server_args).start()
        cls.client = cls.server.client()

    @classmethod
    def tearDownClass(cls):
        status = cls.server.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)
        if status != 0:
            raise AssertionError("airlock serve exited %s: %s" % (status, cls.server.stderr()))


@needs_service
class ExecTest(ServiceCase):
    def test_health_and_capabilities(self):
        h = self.client.health()
        self.assertEqual((h["status"], h["api"]), ("ok", "v1"))
        caps = self.client.capabilities()
        self.assertIn("python", caps["languages"])

    def test_python(self):
        r = self.client.exec("python", "import sys; print(6 * 7); print('e', file=sys.stderr)",
                             timeout=30)
        self.assertEqual((r.stdout, r.stderr, r.exit_code, r.ok), ("42\n", "e\n", 0, True))
        self.assertIsNone(r.error)
        self.assertEqual(r["exit_code"], 0)
        self.assertTrue(r.policy_hash)

    def test_a_failure_is_a_result(self):
        r = self.client.exec("command", argv=["/bin/sh", "-c", "exit 3"], timeout="30s")
        self.assertEqual((r.exit_code, r.ok), (3, False))
        with self.assertRaises(airlock.CommandFailed) as cm:
            self.client.exec("shell", "exit 5", timeout=30, check=True)
        self.assertEqual(cm.exception.result.exit_code, 5)

    def test_stdin_input_env_files_and_output(self):
        r = self.client.exec("shell", 'cat; echo "$GREETING"; cat given.txt; od -An -tx1 bin',
                             stdin="from stdin\n", env={"GREETING": "hi"},
                             files={"given.txt": "given\n", "bin": b"\xff\x01"}, timeout=30)
        self.assertEqual(r.stdout.split("\n")[:3], ["from stdin", "hi", "given"])
        self.assertEqual(r.stdout.split()[-2:], ["ff", "01"])
        code = ("import json, os\n"
                "d = json.load(open(os.environ['AIRLOCK_INPUT']))\n"
                "json.dump({'sum': sum(d['n'])}, open(os.environ['AIRLOCK_RESULT'], 'w'))\n")
        r = self.client.run_code(code, input={"n": [1, 2, 3]}, timeout=30)
        self.assertEqual(r.output, {"sum": 6}, r.stderr)

    def test_timeout(self):
        r = self.client.exec("python", "import time\nprint('started', flush=True)\n"
                             "time.sleep(60)", timeout=1)
        self.assertEqual((r.timed_out, r.exit_code, r.stdout), (True, 124, "started\n"))
        self.assertRaises(airlock.CommandFailed, r.check)

    def test_refusals_are_typed(self):
        with self.assertRaises(airlock.InvalidRequest) as cm:
            self.client.exec("cobol", "1", timeout=5)
        e = cm.exception
        self.assertEqual((e.status, e.code), (400, "invalid_request"))
        self.assertIn("cobol", e.message)
        self.assertIsNotNone(e.result)
        self.assertEqual(e.result.error["kind"], "invalid_request")
        with self.assertRaises(airlock.InvalidRequest) as cm:
            self.client.exec("python", "1", timeout=5, colour="blue")
        self.assertIn("colour", str(cm.exception))
        with self.assertRaises(airlock.TooLarge) as cm:
            self.client.exec("python", "#" * (17 << 20), timeout=5)
        self.assertEqual(cm.exception.code, "too_large")

    def test_an_exec_whose_client_goes_is_killed(self):
        marker = "py-hangup-%d" % os.getpid()
        with self.assertRaises(airlock.ConnectError):
            self.client.exec("shell", "sleep 300 # %s" % marker, timeout=600,
                             request_timeout=2)

        def gone():
            return not any(marker.encode() in _cmdline(p) for p in os.listdir("/proc")
                           if p.isdigit())
        self.assertTrue(_wait_for(gone, 20), "the sandbox of the exec went with its client")


def _cmdline(pid):
    try:
        with open("/proc/%s/cmdline" % pid, "rb") as f:
            return f.read()
    except OSError:
        return b""


def _wait_for(cond, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.1)
    return cond()


@needs_service
class SessionTest(ServiceCase):
    def test_lifecycle(self):
        with self.client.session(ttl="10m") as s:
            self.assertTrue(s.id.startswith("s-"))
            self.assertTrue(s.workspace and os.path.isdir(s.workspace))
            self.assertIn(s.id, [x.id for x in self.client.sessions()])
            again = self.client.get_session(s.id)
            self.assertEqual(again.workspace, s.workspace)
            info = s.refresh()
            self.assertGreater(info["ttl_left_s"], 500)
            workspace = s.workspace
        self.assertNotIn(s.id, [x.id for x in self.client.sessions()])
        with self.assertRaises(airlock.NotFound) as cm:
            self.client.get_session(s.id)
        self.assertEqual(cm.exception.status, 404)
        self.assertTrue(_wait_for(lambda: not os.path.exists(workspace), 10),
                        "the fresh workspace goes with the session")
        s.delete()  # twice is fine

    def test_bad_fields_name_the_field(self):
        with self.assertRaises(airlock.InvalidRequest) as cm:
            self.client.create_session(ttl="soon")
        self.assertEqual(cm.exception.field, "ttl")
        with self.assertRaises(airlock.InvalidRequest) as cm:
            self.client.create_session(memory="lots")
        self.assertEqual(cm.exception.field, "memory")
        self.assertRaises(airlock.NotFound, self.client.get_session, "s-00000000")

    def test_exec_in_a_session_shares_its_workspace(self):
        with self.client.session() as s:
            s.files.write("note.txt", "from the API")
            r = s.exec("shell", "cat note.txt; echo back > back.txt", timeout=30)
            self.assertEqual(r.stdout, "from the API")
            self.assertEqual(s.files.read_text("back.txt"), "back\n")
            r = s.run_code("import os; print(os.getcwd())", timeout=30)
            self.assertEqual(r.stdout.strip(), "/workspace")
            with self.assertRaises(airlock.InvalidRequest):
                s.exec("shell", "true", timeout=30, memory="64Mi")

    def test_sandbox_of_its_own(self):
        with airlock.Sandbox.create(socket=self.server.socket, ttl=600) as sb:
            self.assertEqual(sb.run(["echo", "hi"]).wait().stdout, "hi\n")
            other = airlock.Sandbox.connect(sb.id, socket=self.server.socket)
            self.assertEqual(other.workspace, sb.workspace)
        self.assertRaises(airlock.NotFound, other.refresh)


@needs_service
class FilesTest(ServiceCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ws = os.path.join(cls.tmp, "ws")
        os.mkdir(cls.ws)
        with open(os.path.join(cls.ws, "secret.txt"), "w") as f:
            f.write("do not read")
        policy = {"workspace": {"root": cls.ws, "read": ["**"], "write": ["src/**"],
                                "deny": ["secret*"]}}
        cls.session = cls.client.create_session(policy=policy, ttl="10m")

    @classmethod
    def tearDownClass(cls):
        cls.session.delete()
        super().tearDownClass()

    def test_write_read_list_stat_remove(self):
        f = self.session.files
        f.write("src/deep/hello.txt", "hello")
        with open(os.path.join(self.ws, "src/deep/hello.txt")) as h:
            self.assertEqual(h.read(), "hello")
        self.assertEqual(f.read("src/deep/hello.txt"), b"hello")
        [e] = f.list("src/deep")
        self.assertEqual((e.name, e.path, e.type, e.size, e.is_file),
                         ("hello.txt", "src/deep/hello.txt", "file", 5, True))
        self.assertTrue(f.stat("src").is_dir)
        self.assertIn("src/deep/hello.txt", [x.path for x in f.walk()])
        self.assertTrue(f.exists("src/deep/hello.txt"))
        self.assertRaises(airlock.Conflict, f.remove, "src/deep")
        self.assertRaises(airlock.Conflict, f.read, "src/deep")
        f.remove("src/deep/hello.txt")
        self.assertFalse(f.exists("src/deep/hello.txt"))
        self.assertRaises(airlock.NotFound, f.read, "src/deep/hello.txt")

    def test_binary_and_executable(self):
        f = self.session.files
        data = bytes(range(256)) * 1000
        f.write("src/blob", data)
        self.assertEqual(f.read("src/blob"), data)
        f.write("src/run.sh", b"#!/bin/sh\necho ran\n", executable=True)
        self.assertTrue(os.stat(os.path.join(self.ws, "src/run.sh")).st_mode & stat.S_IXUSR)
        self.assertEqual(self.session.run(["./src/run.sh"]).wait(30).stdout, "ran\n")

    def test_the_rules_hold(self):
        f = self.session.files
        with self.assertRaises(airlock.Forbidden) as cm:
            f.write("top.txt", "x")
        self.assertEqual(cm.exception.field, "path")
        self.assertFalse(os.path.exists(os.path.join(self.ws, "top.txt")))
        self.assertRaises(airlock.NotFound, f.read, "secret.txt")
        self.assertNotIn("secret.txt", [e.name for e in f.list()])
        with self.assertRaises(airlock.InvalidRequest) as cm:
            f.read("../etc/passwd")
        self.assertEqual(cm.exception.field, "path")
        self.assertRaises(airlock.InvalidRequest, f.read, "/etc/passwd")
        os.makedirs(os.path.join(self.ws, "src"), exist_ok=True)
        link = os.path.join(self.ws, "src", "link")
        if not os.path.lexists(link):
            os.symlink("/etc/passwd", link)
        self.assertRaises(airlock.Forbidden, f.read, "src/link")
        f.write("src/parentless/x", "x")  # parents by default
        with self.assertRaises(airlock.NotFound):
            f.write("src/none/x", "x", parents=False)

    def test_checkpoint_and_restore(self):
        s = self.session
        s.files.write("src/state", "one")
        s.checkpoint("cp1")
        s.files.write("src/state", "two")
        s.restore("cp1")
        self.assertEqual(s.files.read_text("src/state"), "one")
        with self.assertRaises(airlock.NotFound) as cm:
            s.restore("nope")
        self.assertEqual(cm.exception.field, "name")


@needs_service
class ProcessTest(ServiceCase):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.session = cls.client.create_session(ttl="10m")

    @classmethod
    def tearDownClass(cls):
        cls.session.delete()
        super().tearDownClass()

    def test_events_stream_in_order(self):
        p = self.session.run(["/bin/sh", "-c", "echo out; echo err >&2; printf '\\377'; exit 4"])
        self.assertTrue(p.id.startswith("p-"))
        events = list(p)
        self.assertEqual((events[0].type, events[-1].type), ("start", "exit"))
        self.assertEqual(b"".join(e.bytes for e in events if e.type == "stdout"), b"out\n\xff")
        self.assertIn("data_base64", [k for e in events for k in e.raw])
        r = p.wait()
        self.assertEqual((r.exit_code, r.stdout_bytes, r.stderr, r.ok), (4, b"out\n\xff",
                                                                         "err\n", False))
        self.assertEqual(list(p), events)  # a second iteration replays what was read
        self.assertIsNotNone(p.poll())
        self.assertFalse(p.running)

    def test_a_string_runs_in_a_shell_with_env_and_cwd(self):
        self.session.files.write("sub/x", "")
        seen = []
        r = self.session.run('echo "$A $0"; pwd; echo e >&2', env={"A": "a"}, cwd="sub",
                             on_stdout=seen.append, on_stderr=seen.append).wait(30)
        self.assertEqual(r.stdout, "a /bin/sh\n/workspace/sub\n")
        self.assertEqual("".join(seen).count("\n"), 3)
        with self.assertRaises(airlock.CommandFailed):
            self.session.run("exit 2").wait(30, check=True)

    def test_stdin(self):
        p = self.session.run(["sh", "-c", "read a; echo got $a; cat"], stdin=True)
        p.write_stdin("one\n")
        p.write_stdin(b"two\n")
        p.close_stdin()
        self.assertEqual(p.wait(30).stdout, "got one\ntwo\n")
        q = self.session.run(["cat"])
        with self.assertRaises(airlock.Conflict):
            q.write_stdin("x")
        q.wait(30)

    def test_signal_and_kill(self):
        p = self.session.run(["sh", "-c", "trap 'echo int; exit 9' INT; echo ready; "
                              "while :; do sleep 0.05; done"])
        for ev in p:
            if ev.type == "stdout" and "ready" in ev.text:
                p.signal(signal.SIGINT)
        r = p.wait(30)
        self.assertEqual((r.exit_code, r.stdout), (9, "ready\nint\n"))
        q = self.session.run(["sleep", "300"])
        q.kill()
        self.assertNotEqual(q.wait(30).exit_code, 0)
        with self.assertRaises(airlock.InvalidRequest) as cm:
            q.signal("STOP")
        self.assertEqual(cm.exception.field, "signal")

    def test_wait_timeout_and_process_timeout(self):
        p = self.session.run(["sleep", "5"])
        with self.assertRaises(TimeoutError):
            p.wait(0.5)
        p.close()  # hangs up: the process is killed
        r = self.session.run(["sleep", "60"], timeout="1s").wait(30)
        self.assertTrue(r.timed_out)

    def test_hanging_up_kills_unless_detached(self):
        marker = "py-stream-%d" % os.getpid()
        with self.session.run(["sh", "-c", "echo up; exec sleep 301 # " + marker]) as p:
            for ev in p:
                if ev.type == "stdout":
                    break

        def gone():
            r = self.session.exec("shell", "ps -e -o args= | grep -c '^sleep 301' || true",
                                  timeout=30)
            return r.stdout.strip() == "0"
        self.assertTrue(_wait_for(gone, 15), "a process whose stream hung up is killed")

    def test_detached_replay_terminal_resize(self):
        p = self.session.run(["/bin/sh", "-c", "stty size; read x; echo got $x; stty size"],
                             terminal=True, detach=True, cols=100, rows=30)
        self.assertTrue(p.detached)
        self.assertIn(p.id, [x.id for x in self.session.processes()])
        again = self.session.process(p.id)
        self.assertTrue(_wait_for(lambda: "30 100" in _output(again), 10))
        p.resize(120, 40)
        p.write_stdin("hello\n")
        r = again.wait(30)
        out = r.stdout.replace("\r", "")
        self.assertEqual(out.split("\n")[:4], ["30 100", "hello", "got hello", "40 120"])
        self.assertEqual(r.exit_code, 0)
        self.assertFalse(self.session.process(p.id).running)
        self.assertEqual(self.session.process(p.id).wait().stdout, r.stdout)
        p.delete()
        self.assertRaises(airlock.NotFound, self.session.process, p.id)
        with self.assertRaises(airlock.Conflict):
            self.session.run(["true"], detach=True).resize(10, 10)

    def test_bad_input_names_the_field(self):
        with self.assertRaises(airlock.InvalidRequest) as cm:
            self.session.run([])
        self.assertEqual(cm.exception.field, "argv")
        with self.assertRaises(airlock.InvalidRequest) as cm:
            self.session.run(["x"], cols=0)
        self.assertEqual(cm.exception.field, "cols")
        self.assertRaises(airlock.NotFound, self.session.process, "p-999999")


def _output(process):
    """The output a process has written so far (a replay that does not follow)."""
    t = process.session.client._transport
    data = t.request("GET", process.session._path("/processes/%s/output" % process.id),
                     query={"follow": False}, raw=True)
    return "".join(json.loads(l).get("data", "") for l in data.splitlines() if l.strip())


@needs_service
class LimitsTest(ServiceCase):
    server_args = ["--max-sessions", "1"]

    def test_too_many_sessions(self):
        with self.client.session(ttl=60):
            with self.assertRaises(airlock.TooManyRequests) as cm:
                self.client.create_session(ttl=60)
            self.assertEqual((cm.exception.status, cm.exception.code), (429, "too_many_sessions"))


@needs_service
class TcpTest(unittest.TestCase):
    """--listen on loopback with a bearer token."""

    def test_token(self):
        tmp = tempfile.mkdtemp(prefix="airlock-py-")
        try:
            token = os.path.join(tmp, "token")
            with open(token, "w") as f:
                f.write("a-token-of-the-test-%d\n" % os.getpid())
            os.chmod(token, 0o600)
            policy = os.path.join(tmp, "policy.json")
            with open(policy, "w") as f:
                json.dump({}, f)
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            args = ["--listen", "127.0.0.1:%d" % port, "--token-file", token, "-p", policy]
            with airlock.LocalServer(AIRLOCK, args=args) as srv:
                url = "http://127.0.0.1:%d" % port
                with self.assertRaises(airlock.Unauthorized) as cm:
                    airlock.Client(url=url, token="wrong-token-wrong-token").health()
                self.assertEqual(cm.exception.field, "Authorization")
                c = airlock.Client(url=url, token="a-token-of-the-test-%d" % os.getpid())
                self.assertEqual(c.health()["status"], "ok")
                self.assertEqual(c.exec("shell", "echo tcp", timeout=30).stdout, "tcp\n")
                self.assertEqual(srv.client().health()["status"], "ok")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
