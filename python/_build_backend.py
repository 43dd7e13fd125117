"""A PEP 517 build backend for airlock-client, standard library only.

pip builds a project in an isolated environment with the build requirements it names, fetched
from an index: setuptools would make `pip install ./python` fail without a network. This backend
needs nothing: it reads pyproject.toml's [project] table and zips the `airlock` package into a
wheel (and an sdist, and an editable wheel that points at this folder).
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "airlock"
SDIST_FILES = ["pyproject.toml", "_build_backend.py", "README.md"]
SDIST_TREES = [PACKAGE, "tests"]


# ---- metadata ----

def _project():
    path = os.path.join(HERE, "pyproject.toml")
    try:
        import tomllib  # Python 3.11+
    except ImportError:
        tomllib = None
    if tomllib:
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    # Older Pythons: the few forms this file uses (strings, lists of strings, {text = "..."}).
    with open(path, encoding="utf-8") as f:
        text = f.read()
    section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.M | re.S).group(1)
    project = {}
    for m in re.finditer(r'^([A-Za-z_-]+)\s*=\s*("(?:[^"\\]|\\.)*"|\[.*?\]|\{.*?\})', section,
                         re.M | re.S):
        key, value = m.group(1), m.group(2)
        strings = re.findall(r'"((?:[^"\\]|\\.)*)"', value)
        if value.startswith("["):
            project[key] = strings
        elif value.startswith("{"):
            project[key] = {"text": strings[0]} if strings else {}
        else:
            project[key] = strings[0]
    return project


def _dist_name(project):
    return re.sub(r"[-_.]+", "_", project["name"]).lower()


def _metadata(project):
    lines = [
        "Metadata-Version: 2.1",
        "Name: " + project["name"],
        "Version: " + project["version"],
    ]
    if project.get("description"):
        lines.append("Summary: " + project["description"])
    if project.get("requires-python"):
        lines.append("Requires-Python: " + project["requires-python"])
    if isinstance(project.get("license"), dict) and project["license"].get("text"):
        lines.append("License: " + project["license"]["text"])
    for c in project.get("classifiers", []):
        lines.append("Classifier: " + c)
    body = ""
    readme = project.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(HERE, readme), encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _date_time():
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))  # 1980-01-01
    return time.gmtime(max(epoch, 315532800))[:6]


# ---- wheels ----

def _record_hash(data):
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _package_files():
    root = os.path.join(HERE, PACKAGE)
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith((".pyc", ".pyo")):
                continue
            full = os.path.join(folder, name)
            out.append((os.path.relpath(full, HERE).replace(os.sep, "/"), full))
    return out


def _write_wheel(wheel_directory, entries):
    """entries: [(archive name, bytes)]; the dist-info is added. Returns the wheel's name."""
    project = _project()
    dist = _dist_name(project)
    info = "%s-%s.dist-info" % (dist, project["version"])
    wheel = "%s-%s-py3-none-any.whl" % (dist, project["version"])
    entries = list(entries) + [
        (info + "/METADATA", _metadata(project).encode()),
        (info + "/WHEEL", b"Wheel-Version: 1.0\nGenerator: airlock _build_backend\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
        (info + "/top_level.txt", (PACKAGE + "\n").encode()),
    ]
    record = "".join("%s,%s,%d\n" % (n, _record_hash(d), len(d)) for n, d in entries)
    record += info + "/RECORD,,\n"
    entries.append((info + "/RECORD", record.encode()))
    path = os.path.join(wheel_directory, wheel)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            zi = zipfile.ZipInfo(name, _date_time())
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return wheel


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(n, _read(p)) for n, p in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    pth = "%s.pth" % _dist_name(_project())
    return _write_wheel(wheel_directory, [(pth, (HERE + "\n").encode())])


def _prepare_metadata(metadata_directory):
    project = _project()
    info = "%s-%s.dist-info" % (_dist_name(project), project["version"])
    os.makedirs(os.path.join(metadata_directory, info), exist_ok=True)
    with open(os.path.join(metadata_directory, info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(project))
    return info


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory, config_settings=None):
    return _prepare_metadata(metadata_directory)


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


# ---- sdist ----

def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    base = "%s-%s" % (_dist_name(project), project["version"])
    members = [(n, os.path.join(HERE, n)) for n in SDIST_FILES]
    for tree in SDIST_TREES:
        for folder, dirs, files in os.walk(os.path.join(HERE, tree)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if not name.endswith((".pyc", ".pyo")):
                    full = os.path.join(folder, name)
                    members.append((os.path.relpath(full, HERE), full))
    path = os.path.join(sdist_directory, base + ".tar.gz")
    mtime = int(time.mktime(_date_time() + (0, 0, -1)))
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        def add(name, data):
            ti = tarfile.TarInfo(base + "/" + name)
            ti.size, ti.mtime, ti.mode = len(data), mtime, 0o644
            tar.addfile(ti, io.BytesIO(data))
        for name, full in members:
            add(name.replace(os.sep, "/"), _read(full))
        add("PKG-INFO", _metadata(project).encode())
    return base + ".tar.gz"
