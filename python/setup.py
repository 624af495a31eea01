"""Builds the flashstages package (the metadata is in pyproject.toml). One addition: the installed
package records the checkout it was built from, so that it finds that checkout's build tree
(build/<preset>/common/libflashstages.so) wherever it is installed."""
import os

from setuptools import setup
from setuptools.command.build_py import build_py

CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class BuildPy(build_py):
    def run(self):
        super().run()
        with open(os.path.join(self.build_lib, "flashstages", "_checkout.py"), "w") as f:
            f.write(f'"""Written at install time: the checkout this copy was built from."""\nCHECKOUT = {CHECKOUT!r}\n')


setup(cmdclass={"build_py": BuildPy})
