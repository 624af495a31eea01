"""The package installs on a stock python3, offline, and finds the library by itself.

  - The build backend (_backend/flashstages_backend.py) runs on the standard library alone: a wheel,
    an editable wheel and an sdist are built with site-packages shut out (python -S: no setuptools,
    no `wheel`), and the wheel's RECORD, METADATA and WHEEL are what an installer checks.
  - Its reader of pyproject.toml's [project] table agrees with tomllib (Python 3.11 on).
  - `pip install --no-index --no-deps ./python`, with and without --no-build-isolation, into a fresh
    target folder; then, from another folder, `import flashstages` finds the library of the checkout
    it was installed from. `pip install -e` into a fresh virtual environment imports python/ itself.

Exit code 77 (skipped) only where this Python has no pip (Debian's python3 without python3-pip), and
the editable case is left out, said so, where it cannot make a virtual environment (no python3-venv).

    python3 python/test_install.py
"""
import base64
import csv
import hashlib
import importlib.util
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import unittest
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
BACKEND = os.path.join(HERE, "_backend")
CHECKOUT = os.path.dirname(HERE)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def clean_environment(**extra):
    """This environment without what would point the package at a library or a path of its own."""
    env = {k: v for k, v in os.environ.items() if k not in ("FLASHSTAGES_LIBRARY", "PYTHONPATH")}
    env.update(extra)
    return env


def find_in(target, where):
    """flashstages' file and the library it finds (None: none), imported with `target` first on the path,
    from `where`."""
    code = ("import flashstages\nprint(flashstages.__file__)\n"
            "try:\n    print(flashstages.find_library())\nexcept FileNotFoundError:\n    print('none')")
    found = run([sys.executable, "-c", code], cwd=where, env=clean_environment(PYTHONPATH=target))
    if found.returncode != 0:
        raise AssertionError(found.stdout + found.stderr)
    module, library = found.stdout.split()
    return module, None if library == "none" else library


def built_library():
    """This checkout's libflashstages, where a preset has built it."""
    for preset in ("gpu", "release", "h100", "ci", "debug"):
        path = os.path.join(CHECKOUT, "build", preset, "common", "libflashstages.so")
        if os.path.exists(path):
            return path
    return None


class Backend(unittest.TestCase):
    """The backend alone, on the standard library: what pip would get from it."""

    def build(self, hook, directory):
        # -S: no site-packages, so neither setuptools nor wheel can be imported, even where installed.
        code = ("import importlib.util, sys; sys.path.insert(0, sys.argv[1]); import flashstages_backend as b;"
                "assert not importlib.util.find_spec('setuptools') and not importlib.util.find_spec('wheel');"
                f"print(b.{hook}(sys.argv[2]))")
        p = run([sys.executable, "-S", "-c", code, BACKEND, directory], cwd=HERE)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return os.path.join(directory, p.stdout.strip())

    def check_record(self, wheel):
        """Every member but RECORD is listed with its sha256 and size; RECORD lists itself without."""
        names = wheel.namelist()
        record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
        rows = list(csv.reader(io.StringIO(wheel.read(record_name).decode())))
        self.assertEqual(sorted(r[0] for r in rows), sorted(names))
        for path, digest, size in rows:
            if path == record_name:
                self.assertEqual((digest, size), ("", ""))
                continue
            data = wheel.read(path)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            self.assertEqual(digest, "sha256=" + expected, path)
            self.assertEqual(int(size), len(data), path)

    def test_wheel(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = self.build("build_wheel", tmp)
            self.assertEqual(os.path.basename(path), "flashstages-0.1.0-py3-none-any.whl")
            with zipfile.ZipFile(path) as wheel:
                self.check_record(wheel)
                names = set(wheel.namelist())
                for module in os.listdir(os.path.join(HERE, "flashstages")):
                    if module.endswith(".py"):
                        self.assertIn(f"flashstages/{module}", names)
                checkout = wheel.read("flashstages/_checkout.py").decode()
                self.assertIn(repr(CHECKOUT), checkout)
                metadata = wheel.read("flashstages-0.1.0.dist-info/METADATA").decode()
                for line in ("Metadata-Version: 2.1", "Name: flashstages", "Version: 0.1.0", "Requires-Python: >=3.9",
                             "License: MIT", "Description-Content-Type: text/markdown"):
                    self.assertIn(line + "\n", metadata)
                self.assertIn("\n\n# flashstages for Python\n", metadata)  # the README, after a blank line
                self.assertIn("Tag: py3-none-any\n", wheel.read("flashstages-0.1.0.dist-info/WHEEL").decode())
                self.assertFalse([n for n in names if "__pycache__" in n or n.endswith(".pyc")])

    def test_editable_wheel_and_sdist(self):
        with tempfile.TemporaryDirectory() as tmp:
            with zipfile.ZipFile(self.build("build_editable", tmp)) as wheel:
                self.check_record(wheel)
                self.assertEqual(wheel.read("flashstages.pth").decode(), HERE + "\n")
            with tarfile.open(self.build("build_sdist", tmp)) as sdist:
                names = set(sdist.getnames())
                for member in ("pyproject.toml", "PKG-INFO", "README.md", "_backend/flashstages_backend.py",
                               "flashstages/__init__.py", "flashstages/_capi.py", "flashstages/_checkout.py"):
                    self.assertIn("flashstages-0.1.0/" + member, names)

    def test_the_project_table_reads_as_tomllib_reads_it(self):
        sys.path.insert(0, BACKEND)
        try:
            import flashstages_backend
        finally:
            sys.path.remove(BACKEND)
        with open(os.path.join(HERE, "pyproject.toml"), encoding="utf-8") as f:
            text = f.read()
        ours = flashstages_backend.project_table(text)
        self.assertEqual(ours["name"], "flashstages")
        if importlib.util.find_spec("tomllib"):
            import tomllib
            self.assertEqual(ours, tomllib.loads(text)["project"])
        # What it cannot read it refuses by line, rather than reading it wrong.
        with self.assertRaises(ValueError) as caught:
            flashstages_backend.project_table('[project]\nname = "x"\ndependencies = ["numpy"]\n')
        self.assertIn("pyproject.toml:3", str(caught.exception))


class Pip(unittest.TestCase):
    """pip install ./python, offline (--no-index), as the README says it."""

    def install(self, *options):
        with tempfile.TemporaryDirectory() as tmp:
            target = os.path.join(tmp, "site")
            p = run([sys.executable, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check",
                     *options, "--target", target, HERE], cwd=tmp)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            module, library = find_in(target, tmp)
            self.assertTrue(module.startswith(target), module)  # the installed copy, not python/
            # The library of the checkout it was built from (its build tree); where the checkout has none
            # built, the lookup still runs (it finds one installed elsewhere, or none).
            if built_library():
                self.assertTrue(library and library.startswith(os.path.join(CHECKOUT, "build")), library)

    def test_install_with_build_isolation(self):
        self.install()

    def test_install_without_build_isolation(self):
        self.install("--no-build-isolation")

    def test_editable_install(self):
        with tempfile.TemporaryDirectory() as tmp:
            venv = os.path.join(tmp, "venv")
            made = run([sys.executable, "-m", "venv", venv])
            if made.returncode != 0:
                self.skipTest(f"{sys.executable} -m venv failed (Debian: apt-get install python3-venv): "
                              f"{made.stderr.strip().splitlines()[-1:]}")
            python = os.path.join(venv, "bin", "python")
            p = run([python, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check",
                     "-e", HERE], cwd=tmp, env=clean_environment())
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            code = "import flashstages; print(flashstages.__file__)"
            found = run([python, "-c", code], cwd=tmp, env=clean_environment())
            self.assertEqual(found.stdout.strip(), os.path.join(HERE, "flashstages", "__init__.py"), found.stderr)


def main():
    if not importlib.util.find_spec("pip"):
        print(f"SKIPPED: {sys.executable} has no pip (Debian: apt-get install python3-pip)")
        return 77
    suite = unittest.TestSuite(unittest.defaultTestLoader.loadTestsFromTestCase(c) for c in (Backend, Pip))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    return 0 if result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
