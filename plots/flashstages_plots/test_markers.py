#!/usr/bin/env python3
"""Tests of markers.py: value markers' expressions, and markers in files through main().

    python3 plots/flashstages_plots/test_markers.py      (plots/test_plot_results.py runs every test)
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # plots/, the package's parent

from flashstages_plots.results import load_results  # noqa: E402
from flashstages_plots.markers import MarkerError, render_value  # noqa: E402
from flashstages_plots.testing import LADDER_FIXTURE, TempDirTest, load, run_main, write_results  # noqa: E402


class ValueMarkerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.results = load(LADDER_FIXTURE, ceilings=True)

    def value(self, body: str) -> str:
        return render_value(body, self.results)[1]

    def check_values(self, cases):
        for body, expected in cases:
            with self.subTest(body=body):
                self.assertEqual(self.value(body), expected)

    def test_fields(self):
        v2 = "[stage04/v2/fp16/D:128/N:8192/causal:0]"
        self.check_values([
            (f"{v2} | .1f", "360.0"),
            (f"{v2}.tflops | .1f", "360.0"),
            (f"{v2}.ms | .4f", "3.0542"),
            (f"{v2}.us | .0f", "3054"),
            (f"{v2}.gbps | .2f", "88.24"),
            ("[stage01/v1/fp32/D:128/N:8192/causal:0].extra_mib | .0f", "8192"),
            ("[ceiling/mma_m16n8k16/fp16].per_sm_clk | .0f", "2495"),
            ("[ceiling/ex2/fp32].gops | .0f", "4050"),
            ("[cublaslt/int8/M:4096/N:4096/K:4096] | .0f", "1300"),
        ])

    def test_arithmetic_and_context(self):
        v1, v2 = "[stage04/v1/fp16/D:128/N:8192/causal:0]", "[stage04/v2/fp16/D:128/N:8192/causal:0]"
        self.check_values([
            (f"{v2}/{v1} | .3f", "2.118"),  # no spaces: '/' in names is no division
            (f"100 * {v2} / {{peak_fp16_tflops}} | .1f", "33.6"),
            (f"{v2} / {{peak_fp16_tflops}} | .0%", "34%"),
            (f"-({v2} - {v1}) / 2 + 1e1 | .1f", "-85.0"),
            ("{sm_clock_mhz} * {num_sms} | .0f", "261360"),
            ("2 + 3 * 4 | .0f", "14"),
            (f"max({v1}, {v2}) / {v1} | .3f", "2.118"),
            (f"min({v1}, {v2}, 1e4) | .0f", "170"),
            ("max(1, -(2 - 5)) | .0f", "3"),
            # The same benchmark with its params in another order, or with its run options.
            ("[stage04/v2/fp16/causal:0/N:8192/D:128] | .0f", "360"),
            ("[stage04/v2/fp16/D:128/N:8192/causal:0/repeats:5/manual_time] | .0f", "360"),
        ])

    def test_only_arithmetic_is_evaluated(self):
        for body in ("__import__('os').system('true') | .0f", "2 ** 3 | .0f", "7 // 2 | .0f", "7 % 2 | .0f",
                     "abs(-1) | .0f", "'7' | s", "1 if 1 else 2 | .0f", "True | .0f", "+1 | .0f",
                     "[cublas/fp16/M:4096/N:4096/K:4096] .ms | .0f", "(1, 2) | .0f", "[1, 2] | .0f",
                     "_term0 | .0f", "x | .0f", "1; 2 | .0f", "[a] [b] | .0f", "{1: 2} | .0f",
                     "max(1) | .0f", "max() | .0f", "max(*[1, 2]) | .0f", "max(1, 2, key=1) | .0f",
                     "sum(1, 2) | .0f", "math.floor(1.5) | .0f"):
            with self.assertRaises(MarkerError, msg=body):
                self.value(body)

    def test_errors_say_what_is_wrong(self):
        cases = {
            "[stage04/v9/fp16/D:128/N:8192/causal:0] | .0f":
                re.escape("no benchmark [stage04/v9/fp16/D:128/N:8192/causal:0] in ") + ".*did you mean "
                + re.escape("[stage04/v2/fp16/D:128/N:8192/causal:0]"),
            "[stage04/v2/fp16/D:128/N:8192/causal:0].gflops | .0f": "unknown field .gflops",
            "[stage04/v2/fp16/D:128/N:8192/causal:0].per_sm_clk | .0f": "has no per_sm_clk counter",
            "[cublas/fp16/M:4096/N:4096/K:4096].extra_mib | .0f": "has no extra_bytes counter",
            "{peak_fp64_tflops} | .0f": r"no context key \{peak_fp64_tflops\}",
            "{gpu_name} | .0f": "is 'fixture GPU', not a number",
            "1 / (2 - 2) | .0f": r"division by zero: 2 - 2 is 0",
            "[stage04/v2/fp16/D:128/N:8192/causal:0] | ": "no format",
            "[stage04/v2/fp16/D:128/N:8192/causal:0]": r"no '\| FORMAT'",
            " | .0f": "no expression",
            "1 | .0d": "format '.0d' does not apply",
            "[] | .0f": "an empty name",
        }
        for body, pattern in cases.items():
            with self.assertRaisesRegex(MarkerError, pattern, msg=body):
                self.value(body)

    def test_escaped_pipe_in_a_table_cell(self):
        self.assertEqual(self.value(r"[stage04/v2/fp16/D:128/N:8192/causal:0] \| .0f"), "360")

    def test_context_keys_must_agree(self):
        with tempfile.TemporaryDirectory() as tmp:
            folder = write_results(Path(tmp) / "r", LADDER_FIXTURE)
            doc = json.loads((folder / "stage02.json").read_text(encoding="utf-8"))
            doc["context"]["sm_clock_mhz"] = "1755"
            (folder / "stage02.json").write_text(json.dumps(doc), encoding="utf-8")
            results = load_results(folder)
        with self.assertRaisesRegex(MarkerError, "sm_clock_mhz.*differs.*stage02.json says 1755"):
            render_value("{sm_clock_mhz} | .0f", results)


class MarkerFileTest(TempDirTest):
    """Value markers in files, through main(): what changes, what stays, what fails."""

    def setUp(self):
        super().setUp()
        self.results = write_results(self.tmp / "results", LADDER_FIXTURE, ceilings=True)

    def main(self, *args: str) -> tuple[int, str]:
        return run_main(["--results", str(self.results), "--no-plots", *args])

    V2 = "[stage04/v2/fp16/D:128/N:8192/causal:0]"

    def test_markdown_markers_rewritten_examples_left_alone(self):
        text = (f"v2 reaches <!-- value: {self.V2} | .0f -->1<!-- /value --> TFLOPS, "
                f"<!-- value: {self.V2} / [stage04/v1/fp16/D:128/N:8192/causal:0] | .2f --><!-- /value -->× v1.\n"
                f"| v2 | <!-- value: {self.V2} \\| .1f -->9<!-- /value --> |\n"
                f"Write `<!-- value: [NAME] | .1f -->364<!-- /value -->` for a number.\n"
                "```markdown\n"
                "<!-- value: [stage99/v1/fp16/D:1/N:1/causal:0] | .0f -->364<!-- /value -->\n"
                "```\n")
        doc = self.write("doc.md", text)
        status, log = self.main("--readme", str(doc))
        self.assertEqual(status, 0, log)
        self.assertEqual(doc.read_text(encoding="utf-8"), text.replace("-->1<!--", "-->360<!--")
                         .replace("| .2f --><!--", "| .2f -->2.12<!--").replace("-->9<!--", "-->360.0<!--"))

    def test_sources_with_crlf_keep_every_other_byte(self):
        text = ("// v2_kernel.cuh\r\n"
                f"// measured: <!-- value: {self.V2} | .0f -->300<!-- /value --> TFLOPS (stage04.json)\r\n"
                f"// `<!-- value: {self.V2}.ms | .2f -->0<!-- /value -->` ms: backticks mean nothing here\r\n"
                "int x;  \r\n")
        src = self.write("v2_kernel.cuh", text)
        status, log = self.main("--readme", str(src))
        self.assertEqual(status, 0, log)
        self.assertEqual(src.read_bytes().decode("utf-8"),
                         text.replace("-->300<!--", "-->360<!--").replace("-->0<!--", "-->3.05<!--"))

    def test_bad_markers_fail_with_file_line_and_marker_and_change_nothing(self):
        good = self.write("good.md", f"<!-- value: {self.V2} | .0f -->1<!-- /value -->\n")
        bad_text = ("fine line\n"
                    "<!-- value: [stage04/v7/fp16/D:128/N:8192/causal:0] | .0f -->1<!-- /value -->\n"
                    f"<!-- value: {self.V2}.speed | .0f -->1<!-- /value -->\n"
                    "<!-- value: {peak_fp8_tflops} | .0f -->1<!-- /value -->\n"
                    "<!-- value: 1 / 0 | .0f -->1<!-- /value -->\n"
                    f"<!-- value: {self.V2} | .0f -->1 and no end\n"
                    "stray <!-- /value --> closer\n"
                    "<!-- value: 1 | .0f no end of the comment\n"
                    f"<!-- value: {self.V2} .0f -->1<!-- /value -->\n")
        bad = self.write("bad.md", bad_text)
        status, log = self.main("--readme", str(good), "--readme", str(bad))
        self.assertEqual(status, 1)
        for line, marker, reason in (
                (2, "<!-- value: [stage04/v7/fp16/D:128/N:8192/causal:0] | .0f -->", "no benchmark"),
                (3, f"<!-- value: {self.V2}.speed | .0f -->", "unknown field .speed"),
                (4, "<!-- value: {peak_fp8_tflops} | .0f -->", "no context key {peak_fp8_tflops}"),
                (5, "<!-- value: 1 / 0 | .0f -->", "division by zero"),
                (6, f"<!-- value: {self.V2} | .0f -->", "no '<!-- /value -->' after it"),
                (7, "'<!-- /value -->'", "closes no"),
                (8, "'<!-- value: 1 | .0f no end of the comment'", "no '-->' on its line"),
                (9, f"<!-- value: {self.V2} .0f -->", "no '| FORMAT'")):
            self.assertRegex(log, re.escape(f"error: {bad}:{line}: {marker}") + ".*" + re.escape(reason))
        self.assertEqual(bad.read_text(encoding="utf-8"), bad_text)
        self.assertEqual(good.read_text(encoding="utf-8"), f"<!-- value: {self.V2} | .0f -->1<!-- /value -->\n")

    def test_check_lists_stale_writes_nothing_draws_nothing(self):
        text = ("# Doc\n\n"
                f"v2 is <!-- value: {self.V2} / [stage04/v1/fp16/D:128/N:8192/causal:0] | .2f -->"
                "1.21<!-- /value -->×.\n"
                "<!-- results:ladder:begin -->\nold\n<!-- results:ladder:end -->\n")
        doc = self.write("doc.md", text)
        before = doc.stat().st_mtime_ns
        out = self.tmp / "png"
        status, log = run_main(["--results", str(self.results), "--readme", str(doc), "--check", "--out", str(out)])
        self.assertEqual(status, 1, log)
        self.assertIn(f"stale: {doc}:3: value {self.V2} / [stage04/v1/fp16/D:128/N:8192/causal:0] says 1.21, "
                      "the results give 2.12\n", log)
        self.assertIn(f"stale: {doc}:4: block results:ladder differs from what the results give", log)
        self.assertEqual((doc.read_text(encoding="utf-8"), doc.stat().st_mtime_ns), (text, before))
        self.assertFalse(out.exists())

        status, log = self.main("--readme", str(doc))
        self.assertEqual(status, 0, log)
        status, log = self.main("--readme", str(doc), "--check")
        self.assertEqual(status, 0, log)
        self.assertIn(f"every generated table and number matches {self.results}", log)


if __name__ == "__main__":
    unittest.main(verbosity=2)
