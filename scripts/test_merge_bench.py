#!/usr/bin/env python3
"""scripts/merge_bench.py: a filtered re-run replaces whole benchmarks in place, adds the new ones,
records where they came from, and refuses files from two GPUs without writing anything."""
import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent / "merge_bench.py"


def rows(name: str, ms: float) -> list[dict]:
    """A benchmark as Google Benchmark writes it with repetitions: iteration rows, then aggregates."""
    out = [{"name": name, "run_name": name, "run_type": "iteration", "real_time": ms} for _ in range(2)]
    out += [{"name": f"{name}_{agg}", "run_name": name, "run_type": "aggregate", "aggregate_name": agg,
             "real_time": ms} for agg in ("mean", "median")]
    return out


def doc(gpu: str, date: str, benchmarks: dict[str, float]) -> dict:
    return {"context": {"gpu_name": gpu, "date": date},
            "benchmarks": [r for name, ms in benchmarks.items() for r in rows(name, ms)]}


class MergeBenchTest(unittest.TestCase):
    def merge(self, full: dict, rerun: dict) -> tuple[int, dict, str]:
        with tempfile.TemporaryDirectory() as tmp:
            a, b = Path(tmp) / "full.json", Path(tmp) / "rerun.json"
            a.write_text(json.dumps(full))
            b.write_text(json.dumps(rerun))
            done = subprocess.run([sys.executable, str(SCRIPT), str(a), str(b)], capture_output=True, text=True)
            return done.returncode, json.loads(a.read_text()), done.stderr

    def test_replaces_in_place_and_appends(self):
        full = doc("H100", "day 1", {"v1/M:1": 1.0, "v9/M:1": 2.0, "cublas/M:1": 3.0})
        rerun = doc("H100", "day 2", {"v9/M:1": 20.0, "v11/M:1": 11.0})
        rc, merged, err = self.merge(full, rerun)
        self.assertEqual(rc, 0, err)
        self.assertIn("1 benchmarks replaced, 1 appended", err)
        names = [r["run_name"] for r in merged["benchmarks"]]
        self.assertEqual(names, ["v1/M:1"] * 4 + ["v9/M:1"] * 4 + ["cublas/M:1"] * 4 + ["v11/M:1"] * 4)
        times = {r["run_name"]: r["real_time"] for r in merged["benchmarks"]}
        self.assertEqual(times, {"v1/M:1": 1.0, "v9/M:1": 20.0, "cublas/M:1": 3.0, "v11/M:1": 11.0})
        self.assertEqual(merged["context"]["rerun_1_date"], "day 2")
        self.assertEqual(merged["context"]["rerun_1_benchmarks"], "2")
        self.assertEqual(merged["context"]["date"], "day 1")

    def test_a_second_rerun_is_numbered_after_the_first(self):
        full = doc("H100", "day 1", {"v9/M:1": 2.0})
        full["context"].update({"rerun_1_date": "day 2", "rerun_1_benchmarks": "1"})
        rc, merged, err = self.merge(full, doc("H100", "day 3", {"v9/M:1": 4.0}))
        self.assertEqual(rc, 0, err)
        self.assertEqual(merged["context"]["rerun_2_date"], "day 3")

    def test_two_gpus_are_refused_and_nothing_is_written(self):
        full = doc("H100", "day 1", {"v9/M:1": 2.0})
        rc, merged, err = self.merge(full, doc("H200", "day 2", {"v9/M:1": 4.0}))
        self.assertNotEqual(rc, 0)
        self.assertIn("different GPUs", err)
        self.assertEqual(merged, full)


if __name__ == "__main__":
    unittest.main(verbosity=2)
