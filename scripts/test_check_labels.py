#!/usr/bin/env python3
"""scripts/check_labels.py: a test with neither label, or with both, is named and fails the check; a
test with one of them (and labels of its own besides) passes; a binary not built is named, not failed."""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "check_labels.py"


def test(name: str, *labels: str) -> dict:
    """A test as `ctest --show-only=json-v1` lists it (LABELS left out when it has none, as ctest does)."""
    props = [{"name": "SKIP_RETURN_CODE", "value": 77}]
    if labels:
        props.append({"name": "LABELS", "value": list(labels)})
    return {"name": name, "command": ["/bin/true"], "properties": props}


class CheckLabelsTest(unittest.TestCase):
    def check(self, *tests: dict) -> tuple[int, str]:
        with tempfile.TemporaryDirectory() as tmp:
            listing = Path(tmp) / "listing.json"
            listing.write_text(json.dumps({"kind": "ctestInfo", "tests": list(tests)}))
            p = subprocess.run([sys.executable, str(SCRIPT), "--listing", str(listing)], capture_output=True, text=True)
            return p.returncode, p.stdout + p.stderr

    def test_one_label_each_passes(self):
        code, out = self.check(test("a cpu case", "cpu"), test("a gpu case", "gpu"), test("a script", "cpu", "slow"))
        self.assertEqual(code, 0, out)
        self.assertIn("3 tests: 2 labelled cpu, 1 labelled gpu", out)

    def test_neither_or_both_fail_by_name(self):
        code, out = self.check(test("labelled", "cpu"), test("lost its label"), test("both", "cpu", "gpu"),
                               test("another label only", "stage04"))
        self.assertEqual(code, 1, out)
        for name in ("'lost its label'", "'both'", "'another label only'"):
            self.assertIn(name, out)
        self.assertNotIn("'labelled'", out)

    def test_a_binary_not_built_is_named_not_failed(self):
        code, out = self.check(test("a cpu case", "cpu"), test("stage04_test_NOT_BUILT-b858cb2"))
        self.assertEqual(code, 0, out)
        self.assertIn("not built", out)
        self.assertIn("stage04_test_NOT_BUILT", out)

    def test_no_tests_at_all_fails(self):
        code, out = self.check()
        self.assertEqual(code, 1, out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
