"""CPU test of the stage executables' command lines: --help answers with every flag, its default and
the exit codes; the flags are those README.md's table and common/tools/runner.h list; a bad flag or
value is refused with a message that names it, exit code 2, before any GPU is looked for (so on a
machine without one the message is still about the flag); valid flags without a GPU exit 77.

    python3 common/test_cli.py build/.../stage01_naive build/.../stage03_online_softmax \
        build/.../stage04_flash_fwd build/.../stage06_gemm build/.../stage05_flash_bwd build/.../stage07_gemm \
        build/.../stage07_attention build/.../stage06_cublaslt_algos build/.../stage07_attention_bwd
"""
import os
import re
import subprocess
import sys
import unittest

EXES = {}
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NO_GPU = 77  # fs::kExitNoGpu: the flags were fine, no usable GPU, nothing run


def run(exe, *args):
    p = subprocess.run([EXES[exe], *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def help_flags(exe):
    """The long flags --help lists, from its option column (not from the descriptions' text)."""
    code, out = run(exe, "--help")
    assert code == 0, out
    return {m.group(1) for m in re.finditer(r"^\s+(?:-\w,)?(--[a-z][a-z-]*)", out, re.MULTILINE)}


def reached_the_gpu_check(code, out):
    """A run whose flags were taken: 0 on a GPU, 77 and the reason without one."""
    return code == (NO_GPU if "no NVIDIA GPU or driver was found" in out else 0)


def documented_flags(path, line, rows):
    """{row: the flags it names} from the line of `path` that the pattern `line` finds for each row."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        text = f.read()
    found = {}
    for row in rows:
        m = re.search(line.format(row=row), text, re.MULTILINE)
        assert m, f"{path} has no line for '{row}'"
        found[row] = set(re.findall(r"--[a-z][a-z-]*", m.group(1)))
    return found


class CommandLine(unittest.TestCase):
    def test_help_lists_every_flag_with_its_default(self):
        for exe, flags in (("stage01", ["--batch", "--heads", "--kv-heads", "--seq", "--seq-k", "--dim", "--causal", "--scale",
                                        "--dtype", "--check", "--check-heads", "--repeats", "--version"]),
                           ("stage06", ["--m", "--n", "--k", "--dtype", "--c-dtype", "--trans-a", "--trans-b",
                                        "--alpha", "--beta", "--check", "--check-rows", "--repeats", "--version"]),
                           ("stage07", ["--m", "--n", "--k", "--dtype", "--c-dtype", "--trans-a", "--trans-b",
                                        "--alpha", "--beta", "--check", "--check-rows", "--repeats", "--version",
                                        "=fp16", "stage06/v9", "stage07/gemm/v1"]),
                           ("stage07a", ["--batch", "--heads", "--kv-heads", "--seq", "--seq-k", "--dim", "--causal",
                                         "--scale", "--dtype", "--check", "--repeats", "--version", "=fp16",
                                         "stage01/v1", "stage04/v5", "stage07/attention/v1"])):
            for spelling in ("--help", "-h"):
                with self.subTest(exe=exe, spelling=spelling):
                    code, out = run(exe, spelling)
                    self.assertEqual(code, 0, out)
                    for flag in flags:
                        self.assertIn(flag, out)
                    self.assertIn("=4096", out)  # a default, shown beside its flag
                    self.assertNotIn("GPU", out.splitlines()[0])

    def test_the_documented_flags_are_the_flags(self):
        # README.md's table and runner.h's list against --help, both ways: a flag --help has and they lack
        # (--kv-heads once) fails, as does one they name that no executable takes.
        readme = documented_flags("README.md", r"^\| {row}[^|]*\|([^\n]*)\|$",
                                  ("attention", "backward", "GEMM", "every one"))
        header = documented_flags("common/tools/runner.h", r"^// {row}[^:]*:([^\n]*)$",
                                  ("Attention", "Backward", "GEMM", "Both"))
        attention = readme["attention"] | readme["every one"]
        gemm = readme["GEMM"] | readme["every one"]
        for exe, documented, listed in (
                ("stage01", attention, header["Attention"] | header["Both"]),
                ("stage03", attention, header["Attention"] | header["Both"]),
                ("stage04", attention, header["Attention"] | header["Both"]),
                ("stage07a", attention, header["Attention"] | header["Both"]),
                ("stage05", attention | readme["backward"], header["Attention"] | header["Backward"] | header["Both"]),
                ("stage07b", attention | readme["backward"], header["Attention"] | header["Backward"] | header["Both"]),
                ("stage06", gemm, header["GEMM"] | header["Both"]),
                ("stage07", gemm, header["GEMM"] | header["Both"])):
            with self.subTest(exe=exe):
                flags = help_flags(exe)
                self.assertEqual(flags, documented, "README.md's table of flags")
                self.assertEqual(flags, listed, "common/tools/runner.h's list")

    def test_help_and_readme_give_the_exit_codes(self):
        for exe in ("stage01", "stage05", "stage06", "stage06algos"):
            with self.subTest(exe=exe):
                code, out = run(exe, "--help")
                self.assertEqual(code, 0, out)
                self.assertIn(f"Exit codes: 0 done, every check passed; 1 a wrong result or a failed launch; 2 a bad "
                              f"flag (refused before any GPU is looked for); {NO_GPU} no usable GPU, nothing run.", out)
        with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
            readme = " ".join(f.read().split())
        self.assertIn(f"Exit codes: 0 every version checked passed, 1 a wrong result or a failed launch, 2 a bad "
                      f"flag, {NO_GPU} no usable GPU", readme)

    def refused(self, exe, args, names):
        with self.subTest(exe=exe, args=args):
            code, out = run(exe, *args)
            self.assertEqual(code, 2, out)
            self.assertIn("error:", out)
            self.assertIn(names, out)
            self.assertNotIn("no NVIDIA GPU", out)
            self.assertNotIn("no CUDA GPU", out)

    def test_bad_values_name_their_flag(self):
        for args, names in ((["--seq", "0"], "--seq"), (["--seq=0"], "--seq"), (["--seq", "0", "--batch", "2"], "--seq"),
                            (["--seq", "-5"], "--seq"), (["--seq", "abc"], "--seq"), (["--heads", "-1"], "--heads"),
                            (["--batch", "0"], "--batch"), (["--scale", "nan"], "--scale"), (["--repeats", "0"], "--repeats"),
                            (["--dtype", "fp64"], "--dtype"), (["--version", "v9"], "--version"),
                            (["--bogus", "1"], "--bogus"), (["extra"], "extra"), (["--seq"], "--seq"),
                            (["--causal", "--seq", "20", "--seq-k", "10"], "--causal"),
                            (["--heads", "4", "--kv-heads", "3"], "--kv-heads"), (["--kv-heads", "0"], "--kv-heads"),
                            (["--heads", "2", "--kv-heads", "4"], "--kv-heads"),
                            (["--batch", str(1 << 62), "--seq", "1"], "too large")):
            self.refused("stage01", args, names)

    def test_flags_take_only_the_values_they_document(self):
        # Switches take 0, 1, false or true (a bare flag is true); integers are decimal. CLI11 alone took
        # --causal=2 as true, --check 2 as 1, --seq 010 as octal 8 and --trans-a 0x1 as 1.
        for exe, args, names in (("stage01", ["--causal=2"], "--causal: takes 0, 1, false or true, got '2'"),
                                 ("stage01", ["--causal=yes"], "--causal: takes 0, 1, false or true, got 'yes'"),
                                 ("stage01", ["--causal=-1"], "--causal"), ("stage01", ["--causal=01"], "--causal"),
                                 ("stage05", ["--deterministic=2"], "--deterministic: takes 0, 1, false or true"),
                                 ("stage05", ["--deterministic=on"], "--deterministic"),
                                 ("stage01", ["--check", "2"], "--check: takes 0, 1, false or true, got '2'"),
                                 ("stage06", ["--check", "yes"], "--check"), ("stage06", ["--check", "-1"], "--check"),
                                 ("stage01", ["--seq", "0x10"], "--seq: expects a decimal integer, got '0x10'"),
                                 ("stage01", ["--seq", "1e3"], "--seq: expects a decimal integer"),
                                 ("stage01", ["--dim", "64.0"], "--dim: expects a decimal integer"),
                                 ("stage01", ["--heads", "+4"], "--heads: expects a decimal integer"),
                                 ("stage01", ["--repeats", "0b11"], "--repeats: expects a decimal integer"),
                                 ("stage01", ["--check-heads", "1_000"], "--check-heads: expects a decimal integer"),
                                 ("stage06", ["--trans-a", "0x1"], "--trans-a: expects a decimal integer"),
                                 ("stage06", ["--trans-b", "2"], "--trans-b: must be 0 to 1, got 2"),
                                 ("stage06", ["--m", "010.5"], "--m: expects a decimal integer"),
                                 ("stage06algos", ["--m", "0x100"], "--m: expects a decimal integer"),
                                 ("stage06algos", ["--repeats", "1001"], "--repeats: must be 1 to 1000")):
            self.refused(exe, args, names)
        # 010 is ten: the refusal quotes the sizes as read (octal 010 would be 8, and 09 no number at all).
        self.refused("stage01", ["--causal", "--seq", "010", "--seq-k", "09"], "(--seq 10, --seq-k 9)")
        for args in (["--causal"], ["--causal=1"], ["--causal=true"], ["--causal=0"], ["--causal=false"],
                     ["--causal", "--causal=0"], ["--check", "false"], ["--check=1"]):
            with self.subTest(args=args):
                code, out = run("stage01", "--seq", "17", "--repeats", "1", "--version", "v1", *args)
                self.assertNotIn("error:", out)
                self.assertTrue(reached_the_gpu_check(code, out), out)
        code, out = run("stage05", "--deterministic", "--seq", "17", "--dim", "64", "--version", "v2", "--repeats", "1")
        self.assertTrue(reached_the_gpu_check(code, out), out)

    def test_stage07_attention_names_what_the_hopper_versions_do_not_take(self):
        # D = 32 is stage 04's, not stage 07's (the 128-byte swizzle needs 64-element rows): refused by
        # the stage's own versions, before any GPU is looked for.
        self.refused("stage07a", ["--dim", "32"], "is not a head_dim any fp16 version takes (64, 128, 256)")
        # v9 takes fp8 alone, at D = 128 alone: named by what it takes, not by what the 16-bit versions do.
        self.refused("stage07a", ["--dtype", "fp8_e4m3", "--dim", "64"],
                     "is not a head_dim stage07/attention/v9 takes (128)")
        self.refused("stage07a", ["--dtype", "fp16", "--version", "v9"], "is not taken by stage07/attention/v9")
        self.refused("stage07a", ["--dtype", "fp32"], "--dtype")
        self.refused("stage07a", ["--seq", "0"], "--seq")

    def test_stage07_attention_bwd_refuses_before_any_gpu(self):
        # The backward rung: its own versions' head_dims (64, 128), its flags' rules, before any GPU.
        for args, names in ((["--seq", "0"], "--seq"), (["--version", "v99"], "--version"), (["--bogus"], "--bogus"),
                            (["--causal=2"], "--causal"), (["--deterministic=2"], "--deterministic"),
                            (["--dim", "256"], "--dim"), (["--dtype", "fp32"], "--dtype"),
                            (["--heads", "4", "--kv-heads", "3"], "must divide --heads"),
                            (["--causal", "--seq", "20", "--seq-k", "10"], "--causal")):
            self.refused("stage07b", args, names)
        code, out = run("stage07b", "--seq", "17", "--dim", "64", "--deterministic", "--version", "v12", "--repeats", "1")
        self.assertTrue(reached_the_gpu_check(code, out), out)

    def test_the_stage_own_versions_decide_what_is_taken(self):
        # Stage 03's baselines would take D = 96, its own kernel does not; stage 04 takes no fp32.
        self.refused("stage03", ["--dim", "96"], "--dim")
        self.refused("stage04", ["--dtype", "fp32"], "--dtype")
        self.refused("stage04", ["--dim", "48"], "--dim")
        self.refused("stage06", ["--m", "0"], "--m")
        self.refused("stage06", ["--dtype", "int8", "--c-dtype", "fp16"], "--c-dtype")
        self.refused("stage06", ["--version", "v99"], "--version")
        # Stage 05: v1 takes fp32 at D = 32, 64, 128 only; v0 takes fp16 and any D up to 256, so
        # --dim 96 is refused only together with --version v1 (and its dtype: the default is v2's fp16).
        self.refused("stage05", ["--dim", "300"], "--dim")
        self.refused("stage05", ["--dtype", "fp32", "--dim", "96", "--version", "v1"], "--dim")
        self.refused("stage05", ["--dtype", "fp16", "--version", "v1"], "--dtype")
        self.refused("stage05", ["--causal", "--seq", "20", "--seq-k", "10"], "--causal")
        # Grouped K/V heads: both take a grouping (the backward sums dK, dV over it), neither a non-divisor.
        self.refused("stage04", ["--heads", "4", "--kv-heads", "3"], "must divide --heads")
        self.refused("stage05", ["--heads", "6", "--kv-heads", "4"], "must divide --heads")
        # v2: fp16 and bf16 at D = 64, 128 only.
        self.refused("stage05", ["--dtype", "fp32", "--version", "v2"], "--dtype")
        self.refused("stage05", ["--dtype", "fp16", "--dim", "32", "--version", "v2"], "--dim")
        # Stage 07 takes fp16, bf16 and int8 (v6, B stored N×K alone), and reads A and B with TMA: tight
        # rows of 17 fp16 are 34 bytes, of 24 int8 24 bytes, not multiples of 16.
        self.refused("stage07", ["--dtype", "fp32"], "--dtype")
        self.refused("stage07", ["--dtype", "int8", "--trans-b", "0"], "--trans-b 1")
        self.refused("stage07", ["--dtype", "int8", "--trans-a", "1"], "stage07/gemm/v6 takes")
        self.refused("stage07", ["--dtype", "int8", "--c-dtype", "fp32"], "--c-dtype")
        self.refused("stage07", ["--dtype", "int8", "--k", "24"], "16 int8")
        self.refused("stage07", ["--k", "17"], "--k")
        self.refused("stage07", ["--m", "1000", "--n", "20", "--k", "64"], "--n")
        self.refused("stage07", ["--version", "v99"], "--version")
        # A bare v9 is stage 07's own (which refuses 34-byte rows), not its baseline stage06/v9 (which
        # takes them): only the full name reaches the baseline.
        self.refused("stage07", ["--version", "v9", "--k", "17"], "stage07/gemm/v9")
        code, out = run("stage07", "--version", "stage06/v9", "--k", "17", "--m", "64", "--n", "64", "--repeats", "1")
        self.assertNotIn("error:", out)  # taken: on to the GPU check (without a GPU it says so, exit 77)
        self.assertTrue(reached_the_gpu_check(code, out), out)

    def test_benchmarks_follow_the_tests_rule_without_a_gpu(self):
        # No GPU: skipped (77) and said so, or a failure with FLASHSTAGES_REQUIRE_GPU=1; never a silent 0.
        if "bench" not in EXES:
            self.skipTest("the benchmarks are not built (FLASHSTAGES_BUILD_BENCHMARKS=OFF)")
        env = {k: v for k, v in os.environ.items() if k != "FLASHSTAGES_REQUIRE_GPU"}
        plain = subprocess.run([EXES["bench"], "--benchmark_filter=NONE"], capture_output=True, text=True, env=env)
        if "no NVIDIA GPU" not in plain.stdout + plain.stderr:
            self.assertEqual(plain.returncode, 0, plain.stdout + plain.stderr)  # a GPU: nothing matched, nothing run
            return
        self.assertEqual(plain.returncode, 77, plain.stdout)
        self.assertIn("SKIPPED", plain.stdout)
        required = subprocess.run([EXES["bench"], "--benchmark_filter=NONE"], capture_output=True, text=True,
                                  env={**env, "FLASHSTAGES_REQUIRE_GPU": "1"})
        self.assertEqual(required.returncode, 1, required.stdout + required.stderr)

    def test_backward_stage_lists_its_own_flag(self):
        for exe, baseline in (("stage05", "stage05/v0"), ("stage07b", "stage05/v10")):
            with self.subTest(exe=exe):
                code, out = run(exe, "--help")
                self.assertEqual(code, 0, out)
                for flag in ("--seq", "--dim", "--causal", "--deterministic", "--version", "--check-heads"):
                    self.assertIn(flag, out)
                self.assertIn(baseline, out)
        code, out = run("stage04", "--help")
        self.assertNotIn("--deterministic", out)  # a forward stage has nothing to make deterministic

    def test_cublaslt_algos_tool(self):
        # stage06_cublaslt_algos: its own flags, the same rules (help with defaults, code 2 before any GPU,
        # 77 without one).
        code, out = run("stage06algos", "--help")
        self.assertEqual(code, 0, out)
        for flag in ("--m", "--n", "--k", "--dtype", "--repeats", "--configs", "4096"):
            self.assertIn(flag, out)
        for args, names in ((["--m", "0"], "--m"), (["--k", "x"], "--k"), (["--dtype", "int8"], "--dtype"),
                            (["--repeats", "0"], "--repeats"), (["--configs", "1:2"], "--configs"),
                            (["--configs", "pick,21:24:-1"], "--configs"), (["--configs", "21:24:12x"], "--configs"),
                            (["--bogus"], "--bogus")):
            self.refused("stage06algos", args, names)
        code, out = run("stage06algos", "--m", "64", "--n", "64", "--k", "64", "--repeats", "1")
        self.assertTrue(reached_the_gpu_check(code, out), out)

    def test_valid_flags_reach_the_gpu_check(self):
        # With valid flags the executable goes on to look for a GPU: without one it says so plainly and
        # exits 77, its own code, not a bad flag's 2.
        code, out = run("stage04", "--seq", "17", "--dim", "64", "--causal=1", "--version", "v3", "--check", "0",
                        "--repeats", "1")
        if "no NVIDIA GPU or driver was found" in out:
            self.assertEqual(code, NO_GPU, out)
            self.assertIn("nothing run", out)
            self.assertNotIn("error:", out)
            self.assertNotIn("insufficient", out.splitlines()[-1].split("(")[0])
        else:
            self.assertEqual(code, 0, out)


if __name__ == "__main__":
    names = ("stage01", "stage03", "stage04", "stage06", "stage05", "stage07", "stage07a", "stage06algos", "stage07b",
             "bench")
    if len(sys.argv) < 10:
        sys.exit("usage: test_cli.py stage01 stage03 stage04 stage06 stage05 stage07 stage07a stage06algos stage07b "
                 "[stage01_bench] (paths to the executables; stage07a: stage07_attention, stage06algos: "
                 "stage06_cublaslt_algos, stage07b: stage07_attention_bwd)")
    given = [a for a in sys.argv[1:] if not a.startswith("-")]
    EXES.update(zip(names, given))
    del sys.argv[1:1 + len(given)]
    unittest.main(verbosity=2)
