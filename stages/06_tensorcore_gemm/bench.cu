// Stage 06 benchmarks: every version next to its cuBLAS peer ("kernel 0", same binary, same inputs),
// at square 1024–8192 and a few non-square and odd shapes.
//   stage06/v1..v5/fp32/M:m/N:n/K:k   and  cublas/fp32/…     (A, B untransposed)
//   stage06/v6,v7,v9/fp16/…  (fp16 out)  and  cublas/fp16/…
//   stage06/v9/bf16/…        (bf16 out)  and  cublas/bf16/…
//   stage06/v8,v10/int8/…    (int32 out) and  cublaslt/int8/…   (B transposed: cuBLASLt's int8 layout)
// Counters: TFLOPS (for int8 these are integer operations, TOPS) and GB/s of the least traffic.
#include <memory>
#include <stdexcept>
#include <string>

#include "common/lib/flops.h"
#include "common/lib/random.h"
#include "common/tools/bench.h"
#include "common/tools/check.h"
#include "common/tools/cublas_gemm.h"
#include "common/tools/device_buffer.h"

namespace fs::bench {

namespace {

struct Mnk {
  int64_t m, n, k;
};
// Square powers of two, then K = 1000 (not a multiple of the tile depth; for int8 its rows are not
// 16-byte aligned either) beside its aligned neighbour K = 1024 (the no-cliff rule compares the two),
// an all-odd cube and a wide-K rectangle.
const Mnk kShapes[] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {4096, 4096, 4096}, {8192, 8192, 8192},
                       {4096, 4096, 1000}, {4096, 4096, 1024}, {1000, 1000, 1000}, {2048, 2048, 8192}};

// One problem on the device: uniform [-1, 1] inputs (int8: the whole int8 range), C written only.
struct Problem {
  DeviceBuffer<unsigned char> a, b, c;
  GemmParams p{};
  std::unique_ptr<CublasGemm> peer;

  Problem(const Mnk& s, int32_t ab_dtype, int32_t c_dtype, bool trans_b) {
    const std::size_t in = dtype_size(DType(ab_dtype)), out = dtype_size(DType(c_dtype));
    a = DeviceBuffer<unsigned char>(std::size_t(s.m * s.k) * in);
    b = DeviceBuffer<unsigned char>(std::size_t(s.k * s.n) * in);
    c = DeviceBuffer<unsigned char>(std::size_t(s.m * s.n) * out);
    fill(a.get(), std::size_t(s.m * s.k), ab_dtype, 1);
    fill(b.get(), std::size_t(s.k * s.n), ab_dtype, 2);
    p.m = s.m;
    p.n = s.n;
    p.k = s.k;
    p.trans_b = trans_b;
    p.ab_dtype = ab_dtype;
    p.c_dtype = c_dtype;
    p.alpha = 1.0f;
    p.a = a.get();
    p.lda = s.k;
    p.b = b.get();
    p.ldb = trans_b ? s.k : s.n;
    p.c = c.get();
    p.ldc = s.n;
  }
  static void fill(void* ptr, std::size_t n, int32_t dtype, uint64_t seed) {
    if (dtype == FS_INT8) FS_CHECK_STATUS(fill_random_device(ptr, n, DType::INT8, seed, -128.0f, 127.0f));
    else FS_CHECK_STATUS(fill_random_device(ptr, n, static_cast<DType>(dtype), seed));
  }
};

std::string shape_name(const Mnk& s) {
  return "M:" + std::to_string(s.m) + "/N:" + std::to_string(s.n) + "/K:" + std::to_string(s.k);
}

// `kernel` null: the cuBLAS peer.
void add(const DeviceInfo& dev, const KernelDesc* kernel, const Mnk& s, int32_t ab_dtype, int32_t c_dtype,
         bool trans_b) {
  const std::string prefix = kernel ? kernel->qualified() : std::string(ab_dtype == FS_INT8 ? "cublaslt" : "cublas");
  const std::string name = prefix + "/" + dtype_name(DType(ab_dtype)) + "/" + shape_name(s);
  register_timed(dev, name, [=] {
    auto problem = std::make_shared<std::unique_ptr<Problem>>();  // made by setup, outside timing
    TimedWork w;
    w.flops = gemm_flops(s.m, s.n, s.k);
    w.bytes = gemm_min_bytes(s.m, s.n, s.k, double(dtype_size(DType(ab_dtype))), double(dtype_size(DType(c_dtype))),
                             /*reads_c=*/false);
    w.setup = [=] {
      *problem = std::make_unique<Problem>(s, ab_dtype, c_dtype, trans_b);
      Problem& pr = **problem;
      if (!kernel) {
        pr.peer = std::make_unique<CublasGemm>(pr.p);
        return;
      }
      // One checked launch: a refused problem must stop the run, not be timed as an empty launch.
      if (const Status st = launch(*kernel, pr.p, nullptr); st != Status::Success)
        throw std::runtime_error(name + ": " + status_name(st));
    };
    w.launch = [=] {
      Problem& pr = **problem;
      if (kernel) launch(*kernel, pr.p, nullptr);
      else pr.peer->run(pr.p);
    };
    return w;
  });
}

// The peer, then every version of the stage that takes these types (and runs on this GPU).
void add_all(const DeviceInfo& dev, const Mnk& s, DType ab, DType c, bool trans_b) {
  add(dev, nullptr, s, int32_t(ab), int32_t(c), trans_b);
  for (const KernelDesc* k : find_kernels("stage06"))
    if (in_set(k->gemm.ab_dtypes, int32_t(ab)) && in_set(k->gemm.c_dtypes, int32_t(c)) && runs_on(*k, dev))
      add(dev, k, s, int32_t(ab), int32_t(c), trans_b);
}

}  // namespace

void register_benchmarks(const DeviceInfo& dev) {
  for (const Mnk& s : kShapes) {
    add_all(dev, s, DType::FP32, DType::FP32, false);
    add_all(dev, s, DType::FP16, DType::FP16, false);
    add_all(dev, s, DType::BF16, DType::BF16, false);
    add_all(dev, s, DType::INT8, DType::INT32, true);  // cuBLASLt's int8 layout: B transposed
  }
}

}  // namespace fs::bench
