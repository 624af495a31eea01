#!/usr/bin/env python3
"""Tests for plots/plot_results.py over plots/fixtures/sample_results.json.

    python3 plots/test_plot_results.py        (exit status non-zero on failure; CTest runs this)

The fixture maps file names to Google Benchmark documents, as a results folder would hold them:
stage01 (naive, one run each, times in ms), stage03 v1/v2 (3 repetitions with mean/median/
stddev aggregates; v2 aggregates only), sdpa_flash (median aggregates, one extra B/H shape) and
a GEMM file (stage06 v1/v2 and cuBLAS, one non-square shape, one errored row).
"""

import contextlib
import io
import json
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import plot_results as pr  # noqa: E402  (imported after the path is set)

FIXTURE = HERE / "fixtures" / "sample_results.json"

try:
    import matplotlib  # noqa: F401
    HAVE_MATPLOTLIB = True
except ImportError:
    HAVE_MATPLOTLIB = False

README = """# Stage 03

Text before, with trailing spaces   \n\
<!-- results:attention:stage03/v2:begin -->
stale table
<!-- results:attention:stage03/v2:end -->

Between the blocks.

<!-- results:gemm:stage06/v2:begin -->
<!-- results:gemm:stage06/v2:end -->

```markdown
<!-- results:not-a-block:begin -->
an example inside a code fence is left alone
<!-- results:not-a-block:end -->
```

<!-- results:memory:begin -->
<!-- results:memory:end -->
Text after, no final newline"""


def write_results(folder: Path) -> None:
    """Lay the fixture out as a results folder: one JSON file per stage."""
    for file_name, doc in json.loads(FIXTURE.read_text(encoding="utf-8")).items():
        (folder / file_name).write_text(json.dumps(doc, indent=1), encoding="utf-8")


def run_main(argv: list[str]) -> tuple[int, str]:
    """main(argv) with its output captured; returns (exit status, stdout + stderr)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        status = pr.main(argv)
    return status, out.getvalue()


def block(text: str, name: str) -> str:
    begin = f"<!-- results:{name}:begin -->"
    end = f"<!-- results:{name}:end -->"
    return text[text.index(begin) + len(begin):text.index(end)]


class ParseNameTest(unittest.TestCase):
    def test_attention(self):
        n = pr.parse_name("stage03/v1/fp32/D:64/N:4096/causal:1")
        self.assertEqual((n.series, n.dtype), ("stage03/v1", "fp32"))
        self.assertEqual((n.get("D"), n.get("N"), n.get("causal")), (64, 4096, 1))
        self.assertEqual(n.kind, "attention")

    def test_peer_and_extra_params(self):
        n = pr.parse_name("sdpa_flash/fp16/D:128/N:8192/causal:0/B:2/H:16")
        self.assertEqual((n.series, n.dtype), ("sdpa_flash", "fp16"))
        self.assertEqual((n.get("B"), n.get("H")), (2, 16))
        self.assertEqual(pr.attention_family(n), None)  # B·N = 16384, H = 2048/128: the default rule
        off = pr.parse_name("sdpa_flash/fp16/D:128/N:4096/causal:0/B:2/H:16")
        self.assertEqual(pr.attention_family(off), (2, 16))

    def test_gemm(self):
        n = pr.parse_name("cublas/fp16/M:4096/N:4096/K:4096")
        self.assertEqual((n.series, n.dtype, n.kind), ("cublas", "fp16", "gemm"))
        n = pr.parse_name("stage06/v3/fp16/M:4096/N:2048/K:1000")
        self.assertEqual((n.series, n.get("M"), n.get("N"), n.get("K")), ("stage06/v3", 4096, 2048, 1000))

    def test_run_options_and_aggregate_suffix_are_dropped(self):
        plain = pr.parse_name("stage03/v1/fp16/D:64/N:1024/causal:0")
        for decorated, aggregate in [
            ("stage03/v1/fp16/D:64/N:1024/causal:0/manual_time", None),
            ("stage03/v1/fp16/D:64/N:1024/causal:0/repeats:5/manual_time_median", "median"),
            ("stage03/v1/fp16/D:64/N:1024/causal:0/min_time:0.500/iterations:20/real_time", None),
            ("stage03/v1/fp16/D:64/N:1024/causal:0_stddev", None),
        ]:
            self.assertEqual(pr.parse_name(decorated, aggregate), plain, decorated)

    def test_unknown_params_kept_and_other_kind(self):
        n = pr.parse_name("stage09/v1/bf16/D:64/N:512/causal:0/window:256")
        self.assertEqual(n.get("window"), 256)
        self.assertEqual(pr.parse_name("BM_memcpy/bytes:1024").kind, "other")


class SelectRunsTest(unittest.TestCase):
    def row(self, t, run_type="iteration", aggregate=None, tflops=1.0, **extra):
        name = "stage03/v1/fp16/D:64/N:1024/causal:0/repeats:3/manual_time"
        r = {"name": name + (f"_{aggregate}" if aggregate else ""), "run_name": name,
             "run_type": run_type, "real_time": t, "time_unit": "us", "TFLOPS": tflops, "GB/s": 1.0}
        if aggregate:
            r["aggregate_name"] = aggregate
        r.update(extra)
        return r

    def test_median_aggregate_wins(self):
        rows = [self.row(10.0, tflops=3.0), self.row(12.0, tflops=2.5), self.row(30.0, tflops=1.0),
                self.row(17.3, "aggregate", "mean", tflops=2.2), self.row(12.0, "aggregate", "median", tflops=2.5),
                self.row(8.0, "aggregate", "stddev", tflops=0.9), self.row(0.46, "aggregate", "cv", tflops=0.4)]
        (run,) = pr.select_runs(rows, "x.json")
        self.assertEqual((run.time_us, run.tflops, run.picked), (12.0, 2.5, "median"))

    def test_iteration_rows_without_aggregates_give_their_median_not_the_best(self):
        rows = [self.row(10.0, tflops=3.0), self.row(30.0, tflops=1.0), self.row(12.0, tflops=2.5)]
        (run,) = pr.select_runs(rows, "x.json")
        self.assertEqual((run.time_us, run.picked), (12.0, "iteration"))

    def test_time_units_and_errored_rows(self):
        rows = [self.row(1.5, time_unit="ms"),
                {"name": "stage03/v1/fp16/D:64/N:2048/causal:0", "run_type": "iteration",
                 "real_time": 0, "time_unit": "us", "error_occurred": True, "error_message": "oom"}]
        (run,) = pr.select_runs(rows, "x.json")
        self.assertAlmostEqual(run.time_us, 1500.0)

    def test_fixture_uses_medians(self):
        with tempfile.TemporaryDirectory() as tmp:
            write_results(Path(tmp))
            results = pr.load_results(Path(tmp))
        by_name = {(r.name.series, r.name.dtype, r.name.params): r for r in results.runs}
        v1 = by_name[("stage03/v1", "fp16", (("D", 64), ("N", 1024), ("causal", 0)))]
        self.assertEqual((v1.tflops, v1.picked), (38.0, "median"))  # mean 37.11, best 39.14
        naive = by_name[("stage01/naive", "fp16", (("D", 64), ("N", 1024), ("causal", 0)))]
        self.assertEqual(naive.picked, "iteration")
        self.assertAlmostEqual(naive.time_us, 65447.1)  # written in ms
        self.assertEqual(results.contexts["sdpa.json"]["torch_version"], "2.9.0+cu128")
        self.assertFalse(any(r.name.get("M") == 8192 for r in results.runs))  # errored row dropped
        self.assertEqual(len(results.of_kind("gemm")), 12)
        self.assertEqual(len(results.of_kind("attention")), 12 * 4 + 1)


class CommandLineTest(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)
        self.results = self.tmp / "results"
        self.results.mkdir()
        write_results(self.results)

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, name: str, text: str) -> Path:
        path = self.tmp / name
        path.write_bytes(text.encode("utf-8"))
        return path

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed: figures not tested")
    def test_pngs_are_written(self):
        out = self.tmp / "png"
        status, log = run_main(["--results", str(self.results), "--out", str(out)])
        self.assertEqual(status, 0, log)
        expected = {f"attention_fp16_D{d}_causal{c}.png" for d in (64, 128) for c in (0, 1)}
        expected |= {"attention_memory_D64.png", "attention_memory_D128.png", "gemm_fp16.png"}
        self.assertEqual({p.name for p in out.iterdir()}, expected)
        for path in out.iterdir():
            self.assertEqual(path.read_bytes()[:8], b"\x89PNG\r\n\x1a\n", path.name)

    def test_readme_blocks_rewritten_and_rest_preserved(self):
        readme = self.write("README.md", README)
        status, log = run_main(["--results", str(self.results), "--readme", str(readme), "--no-plots"])
        self.assertEqual(status, 0, log)
        new = readme.read_text(encoding="utf-8")

        attention = block(new, "attention:stage03/v2")
        self.assertNotIn("stale table", attention)
        for needed in ("NVIDIA H100 80GB HBM3", "CUDA 13.0", "SM 1980 MHz", "`stage03.json`",
                       "`sdpa.json`", "generated by plots/plot_results.py — do not edit by hand",
                       "**fp16, D = 128, causal**", "| stage01/naive |", "| stage03/v2 |",
                       "| sdpa_flash |", "| series \\ N | 1024 | 2048 | 4096 |"):
            self.assertIn(needed, attention)
        self.assertNotIn("stage03/v1", attention)  # the prefix picks v2 only
        self.assertEqual(attention.count("| stage03/v2 |"), 4)  # D 64/128 × two masks

        gemm = block(new, "gemm:stage06/v2")
        self.assertIn("| stage06/v2 | 170 | 232 | 294 |", gemm)
        self.assertIn("| cublas |", gemm)
        self.assertIn("4096×4096×1000", gemm)  # the non-square shape gets its own table
        self.assertNotIn("stage06/v1", gemm)

        memory = block(new, "memory")
        self.assertIn("| stage01/naive (fp16) | 2048 | 4096 | 8192 |", memory)
        self.assertIn("| stage03/v2 (fp16) | 0 | 0 | 0 |", memory)

        # Everything outside the blocks, markers included, is unchanged byte for byte.
        def outside(text):
            for name in ("attention:stage03/v2", "gemm:stage06/v2", "memory"):
                begin = text.index(f"<!-- results:{name}:begin -->") + len(f"<!-- results:{name}:begin -->")
                text = text[:begin] + "<>" + text[text.index(f"<!-- results:{name}:end -->"):]
            return text
        self.assertEqual(outside(new), outside(README))
        self.assertIn("an example inside a code fence is left alone", new)

        # A second run changes nothing.
        status, _ = run_main(["--results", str(self.results), "--readme", str(readme), "--no-plots"])
        self.assertEqual((status, readme.read_text(encoding="utf-8")), (0, new))

    def test_several_prefixes_joined_by_plus(self):
        readme = self.write("README.md", "<!-- results:attention:stage03/v1+stage03/v2:begin -->\n"
                                         "<!-- results:attention:stage03/v1+stage03/v2:end -->\n")
        status, log = run_main(["--results", str(self.results), "--readme", str(readme), "--no-plots"])
        self.assertEqual(status, 0, log)
        attention = block(readme.read_text(encoding="utf-8"), "attention:stage03/v1+stage03/v2")
        self.assertIn("| stage03/v1 |", attention)
        self.assertIn("| stage03/v2 |", attention)
        self.assertIn("| stage01/naive |", attention)

    def test_crlf_files_keep_their_line_ends(self):
        text = "Intro\r\n<!-- results:gemm:begin -->\r\n<!-- results:gemm:end -->\r\nEnd\r\n"
        readme = self.write("crlf.md", text)
        status, log = run_main(["--results", str(self.results), "--readme", str(readme), "--no-plots"])
        self.assertEqual(status, 0, log)
        new = readme.read_bytes().decode("utf-8")
        self.assertTrue(new.startswith("Intro\r\n<!-- results:gemm:begin -->\r\n"))
        self.assertTrue(new.endswith("\r\n<!-- results:gemm:end -->\r\nEnd\r\n"))
        self.assertNotIn("\n", new.replace("\r\n", ""))

    def test_unknown_block_fails_and_changes_no_file(self):
        good = self.write("good.md", README)
        bad = self.write("bad.md", "<!-- results:gemm:begin -->\n<!-- results:gemm:end -->\n"
                                   "<!-- results:attentoin:begin -->\n<!-- results:attentoin:end -->\n")
        status, log = run_main(["--results", str(self.results), "--readme", str(good),
                                "--readme", str(bad), "--no-plots"])
        self.assertNotEqual(status, 0)
        self.assertIn("unknown results block 'attentoin'", log)
        self.assertEqual(good.read_text(encoding="utf-8"), README)
        self.assertTrue(bad.read_text(encoding="utf-8").startswith("<!-- results:gemm:begin -->\n<!--"))

    def test_missing_end_marker_fails(self):
        bad = self.write("bad.md", "<!-- results:gemm:begin -->\nno end\n")
        status, log = run_main(["--results", str(self.results), "--readme", str(bad), "--no-plots"])
        self.assertNotEqual(status, 0)
        self.assertIn("no matching end marker", log)

    def test_file_without_markers_untouched(self):
        plain = self.write("plain.md", "# Nothing to do\n\nSome `<!-- results:gemm:begin -->` inline.\n")
        before = plain.stat().st_mtime_ns
        status, log = run_main(["--results", str(self.results), "--readme", str(plain), "--no-plots"])
        self.assertEqual(status, 0, log)
        self.assertEqual(plain.stat().st_mtime_ns, before)

    def test_empty_results_folder_fails(self):
        empty = self.tmp / "empty"
        empty.mkdir()
        status, log = run_main(["--results", str(empty), "--no-plots"])
        self.assertEqual(status, 1)
        self.assertIn("no *.json", log)


if __name__ == "__main__":
    unittest.main(verbosity=2)
