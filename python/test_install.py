"""The package installs offline and finds the library by itself: `pip install --no-build-isolation
--no-deps ./python` into a fresh target folder, then, from another folder, `import flashstages` finds
the library of the checkout it was installed from. Exit code 77 (skipped) when this Python cannot build
a wheel offline (setuptools older than 70.1 without the `wheel` package).

    python3 python/test_install.py
"""
import importlib.util
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def can_build_wheels():
    if importlib.util.find_spec("wheel"):
        return True
    try:
        import setuptools
        return tuple(int(x) for x in setuptools.__version__.split(".")[:2]) >= (70, 1)
    except ImportError:
        return False


def main():
    if not can_build_wheels():
        print("SKIPPED: this Python cannot build a wheel offline (no `wheel` package, setuptools < 70.1)")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        target = os.path.join(tmp, "site")
        install = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation", "--no-deps",
                                  "--no-index", "--quiet", "--target", target, HERE], capture_output=True, text=True)
        if install.returncode != 0:
            print(install.stdout, install.stderr)
            return 1
        environment = {k: v for k, v in os.environ.items() if k not in ("FLASHSTAGES_LIBRARY", "PYTHONPATH")}
        environment["PYTHONPATH"] = target
        code = "import flashstages; print(flashstages.__file__); print(flashstages.find_library())"
        found = subprocess.run([sys.executable, "-c", code], cwd=tmp, capture_output=True, text=True, env=environment)
        print(found.stdout, found.stderr)
        if found.returncode != 0:
            return 1
        module, library = found.stdout.split()
        checkout = os.path.dirname(HERE)
        ok = module.startswith(target) and library.startswith(os.path.join(checkout, "build"))
        print("installed copy imported from the target, library found in the checkout's build tree:", ok)
        return 0 if ok else 1
    # the build folder pip leaves in the source tree is ignored by git (.gitignore)


if __name__ == "__main__":
    sys.exit(main())
