"""What needs no service: errors by status, events, results, request building."""

import base64
import os
import sys
import tempfile
import unittest
import zipfile

import airlock
from airlock import client as _client
from airlock.errors import error_from_response
from airlock.process import Event, ProcessResult


class ErrorsTest(unittest.TestCase):
    def test_status_picks_the_class(self):
        cases = {400: airlock.InvalidRequest, 401: airlock.Unauthorized, 403: airlock.Forbidden,
                 404: airlock.NotFound, 405: airlock.MethodNotAllowed, 409: airlock.Conflict,
                 413: airlock.TooLarge, 422: airlock.Unsupported,
                 429: airlock.TooManyRequests, 507: airlock.NoSpace, 500: airlock.ServerError,
                 503: airlock.ServerError, 418: airlock.AirlockError}
        for status, cls in cases.items():
            e = error_from_response(status, {"error": {"code": "x", "message": "m",
                                                       "field": "f"}})
            self.assertIs(type(e), cls, status)
            self.assertIsInstance(e, airlock.AirlockError)
            self.assertEqual((e.status, e.code, e.message, e.field), (status, "x", "m", "f"))

    def test_exec_kinds(self):
        e = error_from_response(500, {"error": {"kind": "setup_failed", "message": "no"}})
        self.assertIsInstance(e, airlock.SetupFailed)
        self.assertIsInstance(e, airlock.ServerError)
        self.assertEqual(e.code, "setup_failed")
        self.assertIsNone(e.field)

    def test_a_body_that_is_not_json(self):
        e = error_from_response(502, None, "Bad gateway\n")
        self.assertEqual((type(e), e.message, e.code), (airlock.ServerError, "Bad gateway", None))
        self.assertIn("502", str(e))

    def test_command_failed(self):
        r = _client.ExecResult({"error": None, "exit_code": 3, "stdout": "", "stderr": ""})
        with self.assertRaises(airlock.CommandFailed) as cm:
            r.check()
        self.assertIs(cm.exception.result, r)
        self.assertEqual(cm.exception.exit_code, 3)
        timed = _client.ExecResult({"error": None, "exit_code": 124, "timed_out": True})
        with self.assertRaises(airlock.CommandFailed) as cm:
            timed.check()
        self.assertIn("timed out", str(cm.exception))


class EventsTest(unittest.TestCase):
    def test_text_and_bytes(self):
        t = Event({"type": "stdout", "data": "héllo"})
        self.assertEqual((t.text, t.bytes), ("héllo", "héllo".encode()))
        b = Event({"type": "stderr", "data_base64": base64.b64encode(b"\xff\x00").decode()})
        self.assertEqual(b.bytes, b"\xff\x00")
        self.assertEqual(b.text, "\ufffd\x00")
        self.assertEqual(Event({"type": "exit", "exit_code": 2})["exit_code"], 2)

    def test_process_result(self):
        r = ProcessResult({"exit_code": 0, "signal": None, "timed_out": False}, b"a\xff", b"", 0)
        self.assertTrue(r.ok)
        self.assertEqual(r.stdout, "a\ufffd")
        self.assertIs(r.check(), r)
        bad = ProcessResult({"exit_code": None, "error": "the command did not run"}, b"", b"", 0)
        self.assertFalse(bad.ok)
        self.assertRaises(airlock.CommandFailed, bad.check)


class RequestTest(unittest.TestCase):
    def test_files_from_a_mapping(self):
        self.assertEqual(_client._files_field({"a.txt": "x", "b.bin": b"\xff"}),
                         [{"path": "a.txt", "content": "x"}, {"path": "b.bin", "base64": "/w=="}])
        entries = [{"path": "c", "content": "y", "executable": True}]
        self.assertEqual(_client._files_field(entries), entries)

    def test_exec_request(self):
        req = _client._exec_request("command", None, ["ls", "-l"], "5s", None, _client._UNSET,
                                    {"K": "V"}, None, {"memory": None, "policy": "p.json"})
        self.assertEqual(req, {"language": "command", "timeout": "5s", "argv": ["ls", "-l"],
                               "env": {"K": "V"}, "policy": "p.json"})
        req = _client._exec_request("python", "1", None, 1, None, None, None, None, {})
        self.assertIn("input", req)  # None is a JSON value too
        self.assertRaises(TypeError, _client._exec_request, "command", None, "ls", 1, None,
                          _client._UNSET, None, None, {})

    def test_addresses(self):
        self.assertEqual(airlock.Client("/x/s.sock").address, "/x/s.sock")
        c = airlock.Client(url="http://127.0.0.1:9/api/", token="t" * 16)
        self.assertEqual(c._transport.path("/v1/health", {"path": "a b", "x": True}),
                         "/api/v1/health?path=a%20b&x=true")
        self.assertEqual(c._transport.headers()["Authorization"], "Bearer " + "t" * 16)
        self.assertRaises(ValueError, airlock.Client, url="ftp://x")
        self.assertRaises(ValueError, airlock.Client, "/s", url="http://x:1")

    def test_no_service_is_a_connect_error(self):
        with tempfile.TemporaryDirectory() as d:
            c = airlock.Client(os.path.join(d, "none.sock"))
            with self.assertRaises(airlock.ConnectError) as cm:
                c.health()
            self.assertIn("none.sock", str(cm.exception))


class BuildTest(unittest.TestCase):
    """The in-tree build backend makes a wheel with the package and its metadata."""

    def test_wheel(self):
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        sys.path.insert(0, here)
        try:
            import _build_backend as backend
        finally:
            sys.path.remove(here)
        self.assertEqual(backend.get_requires_for_build_wheel(), [])
        with tempfile.TemporaryDirectory() as d:
            name = backend.build_wheel(d)
            self.assertEqual(name, "airlock_client-%s-py3-none-any.whl" % airlock.__version__)
            with zipfile.ZipFile(os.path.join(d, name)) as z:
                names = z.namelist()
                meta = z.read("airlock_client-%s.dist-info/METADATA"
                              % airlock.__version__).decode()
            for want in ("airlock/__init__.py", "airlock/client.py", "airlock/py.typed"):
                self.assertIn(want, names)
            self.assertIn("Name: airlock-client", meta)
            sdist = backend.build_sdist(d)
            self.assertTrue(os.path.exists(os.path.join(d, sdist)))


if __name__ == "__main__":
    unittest.main()
