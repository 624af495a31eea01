#!/usr/bin/env python3
"""Tests of make_pick_table.py without a GPU, on a fixture folder (scripts/fixtures/pick_table/, one
stage07_attention_bwd.json of invented times): the backward rung's rows enter the backward's table
beside stage 05's, under the registry's names (stage07/attention_bwd/vN), and never the forward's.

    python3 scripts/test_make_pick_table.py
"""
from __future__ import annotations

import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_pick_table as mpt  # noqa: E402

FIXTURE = HERE / "fixtures" / "pick_table"
GRID_D128_N8192 = (128, 0, 2, 16, 16, 8192, 8192, 0)  # head_dim, causal, B, H, KVH, Nq, Nk, packed


class BackwardRungTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.name, cls.cc, cls.times = mpt.read_gpu(FIXTURE)

    def test_context(self):
        self.assertEqual((self.name, self.cc), ("Fixture GPU", 90))

    def test_backward_rows_join_stage05s(self):
        point = self.times[("bwd", "fp16", False, GRID_D128_N8192)]
        # The median row alone (not the mean), the peer (sdpa_cudnn_bwd) left out.
        self.assertEqual(dict(point), {"stage07/attention_bwd/v1": [2.0], "stage05/v10": [3.0],
                                       "stage07/attention_bwd/v99": [0.1]})
        self.assertEqual(dict(self.times[("bwd", "fp16", True, GRID_D128_N8192)]),
                         {"stage07/attention_bwd/v1": [2.5]})

    def test_points_off_and_on_the_grid(self):
        self.assertIn("stage07/attention_bwd/v1",
                      self.times[("bwd", "bf16", False, (64, 1, 8, 32, 32, 2048, 2048, 0))])
        self.assertIn("stage07/attention_bwd/v1",  # grouped K/V: KVH from the name
                      self.times[("bwd", "fp16", False, (128, 1, 2, 16, 4, 8192, 8192, 0))])
        # A row that reports an error is no time.
        self.assertNotIn(("bwd", "fp16", False, (64, 0, 32, 32, 32, 512, 512, 0)), self.times)

    def test_forward_rung_stays_forward(self):
        self.assertEqual(dict(self.times[("fwd", "fp16", False, GRID_D128_N8192)]), {"stage07/attention/v8": [0.9]})
        self.assertFalse(any(v.startswith("stage07/attention_bwd/") for (problem, *_), by in self.times.items()
                             if problem == "fwd" for v in by))

    def test_ranked_in_the_backward_table(self):
        known = set(mpt.version_techniques(mpt.ROOT))
        self.assertIn("stage07/attention_bwd/v1", known)  # the name stages/07_tuned_tma/attention_bwd/v1.cu registers
        original = mpt.gpu_folders
        mpt.gpu_folders = lambda: [FIXTURE]
        try:
            gpus = mpt.tables(known)
        finally:
            mpt.gpu_folders = original
        points = {(p["problem"], p["deterministic"], p["dtype"], p["shape"]): p["ranked"] for p in gpus[0]["points"]}
        # v99 is not in the registry: left out; v1 ranks before stage 05's v10, fastest first.
        self.assertEqual(points[("bwd", False, "fp16", GRID_D128_N8192)],
                         [("stage07/attention_bwd/v1", 2.0), ("stage05/v10", 3.0)])
        text = mpt.render(gpus)
        self.assertIn('{FS_PROBLEM_ATTENTION_BWD, FS_FP16, 0, 128, 0, 2, 16, 16, 8192, 8192, 0, '
                      '{{"stage07/attention_bwd/v1", 2.0000f}, {"stage05/v10", 3.0000f}}},', text)
        self.assertIn('{FS_PROBLEM_ATTENTION, FS_FP16, 0, 128, 0, 2, 16, 16, 8192, 8192, 0, '
                      '{{"stage07/attention/v8", 0.9000f}}},', text)


class OlderFolderTest(unittest.TestCase):
    """A GPU of the reference's architecture keeps a problem's points only where it measured every
    version the reference did; one of another architecture keeps its own."""

    @staticmethod
    def folder(root: Path, name: str, gpu: str, cc: str, rows: dict[str, float]) -> Path:
        import json
        path = root / name
        path.mkdir()
        bench = [{"name": f"{n}_median", "aggregate_name": "median", "real_time": ms, "time_unit": "ms"}
                 for n, ms in rows.items()]
        (path / "stage07.json").write_text(json.dumps({"context": {"gpu_name": gpu, "compute_capability": cc},
                                                       "benchmarks": bench}))
        return path

    def test_a_folder_behind_the_reference_leaves_that_problem_to_it(self):
        import tempfile
        fwd, bwd = "stage07/attention/v{}/fp16/D:128/N:8192/causal:0", "stage{}/fp16/D:128/N:8192/causal:0"
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            ref = self.folder(root, "ref", "Reference GPU", "9.0",
                              {fwd.format(8): 1.0, bwd.format("05/v10"): 3.0, bwd.format("07/attention_bwd/v1"): 2.0})
            older = self.folder(root, "older", "Older run", "9.0", {fwd.format(8): 1.1, bwd.format("05/v10"): 3.1})
            other = self.folder(root, "other", "Other architecture", "8.0", {bwd.format("05/v10"): 5.0})
            original = mpt.gpu_folders
            mpt.gpu_folders = lambda: [ref, older, other]
            try:
                gpus = mpt.tables({"stage07/attention/v8", "stage05/v10", "stage07/attention_bwd/v1"})
            finally:
                mpt.gpu_folders = original
        problems = {g["gpu"]: sorted({p["problem"] for p in g["points"]}) for g in gpus}
        # The older folder never timed the backward rung: its backward calls take the reference's ranking.
        self.assertEqual(problems, {"Reference GPU": ["bwd", "fwd"], "Older run": ["fwd"],
                                    "Other architecture": ["bwd"]})


if __name__ == "__main__":
    unittest.main(verbosity=2)
