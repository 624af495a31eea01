"""The package's build backend (PEP 517, PEP 660), written with the standard library alone, so that
`pip install ./python` works on a stock python3 and offline: no setuptools and no `wheel` package to
fetch or to have (setuptools before 70.1 cannot build a wheel without `wheel`, and pip's usual way
round that, an isolated build environment, downloads them).

It builds what setuptools built for this package: a pure-Python wheel of flashstages/ whose
metadata is pyproject.toml's [project] table, with one file added, flashstages/_checkout.py, the
checkout the wheel was built from, so that the installed package finds that checkout's build tree
(build/<preset>/common/libflashstages.so) wherever it is installed. The editable wheel (pip install
-e) holds a .pth file that puts python/ on the path instead. The sdist carries _checkout.py with it,
so that a wheel built from the unpacked sdist (python -m build) still names the checkout.

A wheel is a zip archive: the package's files, and a NAME-VERSION.dist-info/ folder with METADATA (the
core metadata: name, version, summary, the README), WHEEL (the format and the tag: py3-none-any, pure
Python) and RECORD (every file with its sha256 and size).
"""
import base64
import hashlib
import io
import json
import os
import re
import tarfile
import zipfile

SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/
CHECKOUT = os.path.dirname(SOURCE)
PACKAGE = "flashstages"
# The fixed time given to every archive member: the same sources make the same wheel (zip cannot
# store times before 1980).
EPOCH = (1980, 1, 1, 0, 0, 0)
EPOCH_SECONDS = 315532800  # the same, in seconds since 1970 (UTC), for the sdist's tar members


def project_table(text):
    """The [project] table of pyproject.toml. A reader for what that table holds, not for TOML at large:
    one `key = "string"` or `key = {text = "string"}` per line, and comments; anything else is refused
    by name (python/test_install.py holds this reader to tomllib on the whole file)."""
    table, inside = {}, False
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if line.startswith("["):
            inside = line == "[project]"
            continue
        if not inside or not line or line.startswith("#"):
            continue
        # A TOML basic string without escapes other than JSON's reads as a JSON string.
        m = re.fullmatch(r'([A-Za-z0-9_-]+)\s*=\s*(?:("(?:[^"\\]|\\.)*")|\{\s*text\s*=\s*("(?:[^"\\]|\\.)*")\s*\})'
                         r'\s*(?:#.*)?', line)
        if not m:
            raise ValueError(f"pyproject.toml:{number}: {line!r}: this backend reads strings and "
                             f"{{text = \"...\"}} alone in [project] (python/_backend/flashstages_backend.py)")
        key, string, text_value = m.groups()
        table[key] = json.loads(string) if string is not None else {"text": json.loads(text_value)}
    for key in ("name", "version"):
        if key not in table:
            raise ValueError(f"pyproject.toml: [project] has no {key}")
    return table


def _project():
    with open(os.path.join(SOURCE, "pyproject.toml"), encoding="utf-8") as f:
        return project_table(f.read())


def _metadata(project):
    """Core metadata 2.1, the README as the long description."""
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {project['version']}"]
    if "description" in project:
        lines.append(f"Summary: {project['description']}")
    if "license" in project:
        lines.append(f"License: {project['license']['text']}")
    if "requires-python" in project:
        lines.append(f"Requires-Python: {project['requires-python']}")
    body = ""
    if "readme" in project:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(SOURCE, project["readme"]), encoding="utf-8") as f:
            body = f.read()
    return "\n".join(lines) + "\n\n" + body


def _package_files():
    """(path in the archive, path on disk) of every module of the package; _checkout.py is written."""
    files = []
    for name in sorted(os.listdir(os.path.join(SOURCE, PACKAGE))):
        if name.endswith(".py") and name != "_checkout.py":
            files.append((f"{PACKAGE}/{name}", os.path.join(SOURCE, PACKAGE, name)))
    return files


def _checkout_module():
    """flashstages/_checkout.py: the one from an unpacked sdist, else this checkout's."""
    carried = os.path.join(SOURCE, PACKAGE, "_checkout.py")
    if os.path.exists(carried):
        with open(carried, "rb") as f:
            return f.read()
    return (f'"""Written at install time: the checkout this copy was built from."""\n'
            f"CHECKOUT = {CHECKOUT!r}\n").encode()


def _write_wheel(wheel_directory, members):
    """The wheel of `members` ((archive path, bytes) pairs) and its dist-info; returns its file name."""
    project = _project()
    name, version = project["name"], project["version"]
    dist_info = f"{name}-{version}.dist-info"
    members = list(members) + [
        (f"{dist_info}/METADATA", _metadata(project).encode()),
        (f"{dist_info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: flashstages_backend\nRoot-Is-Purelib: true\n"
                               b"Tag: py3-none-any\n"),
    ]
    record = io.StringIO()
    for path, data in members:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{path},sha256={digest},{len(data)}\n")
    record.write(f"{dist_info}/RECORD,,\n")
    members.append((f"{dist_info}/RECORD", record.getvalue().encode()))
    filename = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as wheel:
        for path, data in members:
            info = zipfile.ZipInfo(path, EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            wheel.writestr(info, data)
    return filename


def _read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- The hooks pip calls (PEP 517: build_wheel, build_sdist; PEP 660: build_editable) ----------

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    members = [(path, _read(disk)) for path, disk in _package_files()]
    members.append((f"{PACKAGE}/_checkout.py", _checkout_module()))
    return _write_wheel(wheel_directory, members)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file's lines are added to sys.path at start-up: python/ itself, where flashstages/ is. The
    # package then finds the checkout from its own path (_capi.library_candidates), no _checkout.py.
    return _write_wheel(wheel_directory, [(f"{PACKAGE}.pth", (SOURCE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    root = f"{project['name']}-{project['version']}"
    members = [("pyproject.toml", _read(os.path.join(SOURCE, "pyproject.toml"))),
               ("PKG-INFO", _metadata(project).encode()),
               ("_backend/flashstages_backend.py", _read(os.path.abspath(__file__)))]
    if "readme" in project:
        members.append((project["readme"], _read(os.path.join(SOURCE, project["readme"]))))
    members += [(path, _read(disk)) for path, disk in _package_files()]
    members.append((f"{PACKAGE}/_checkout.py", _checkout_module()))
    filename = f"{root}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as sdist:
        for path, data in members:
            info = tarfile.TarInfo(f"{root}/{path}")
            info.size, info.mode, info.mtime = len(data), 0o644, EPOCH_SECONDS
            sdist.addfile(info, io.BytesIO(data))
    return filename
