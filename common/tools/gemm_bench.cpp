#include "common/tools/gemm_bench.h"

#include <stdexcept>
#include <string>

#include "common/lib/flops.h"
#include "common/lib/random.h"
#include "common/tools/bench.h"
#include "common/tools/check.h"
#include "common/tools/device_buffer.h"

namespace fs::bench {

namespace {

// One problem on the device: uniform [-1, 1] inputs (int8: the whole int8 range), C written only.
struct Problem {
  DeviceBuffer<unsigned char> a, b, c;
  GemmParams p{};
  std::unique_ptr<GemmPeer> peer;

  Problem(const GemmShape& s, int32_t ab_dtype, int32_t c_dtype, bool trans_b) {
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

std::string shape_name(const GemmShape& s) {
  return "M:" + std::to_string(s.m) + "/N:" + std::to_string(s.n) + "/K:" + std::to_string(s.k);
}

// `kernel` null: the peer.
void add(const DeviceInfo& dev, const KernelDesc* kernel, const char* peer_name, const GemmPeerFactory& make_peer,
         const GemmShape& s, int32_t ab_dtype, int32_t c_dtype, bool trans_b) {
  const std::string prefix = kernel ? kernel->qualified() : std::string(peer_name);
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
        pr.peer = make_peer(pr.p);
        return;
      }
      // One checked launch: a refused problem must stop the run, not be timed as an empty launch.
      if (const Status st = launch(*kernel, pr.p, nullptr); st != Status::Success)
        throw std::runtime_error(name + ": " + status_name(st));
    };
    w.launch = [=] {
      Problem& pr = **problem;
      if (kernel) launch(*kernel, pr.p, nullptr);
      else pr.peer->run(pr.p, nullptr);
    };
    return w;
  });
}

}  // namespace

void register_gemm_stage(const DeviceInfo& dev, const char* stage, const char* peer_name,
                         const GemmPeerFactory& peer, const GemmShape& s, DType ab, DType c, bool trans_b) {
  add(dev, nullptr, peer_name, peer, s, int32_t(ab), int32_t(c), trans_b);
  for (const KernelDesc* k : find_kernels(stage))
    if (in_set(k->gemm.ab_dtypes, int32_t(ab)) && in_set(k->gemm.c_dtypes, int32_t(c)) && runs_on(*k, dev))
      add(dev, k, peer_name, peer, s, int32_t(ab), int32_t(c), trans_b);
}

}  // namespace fs::bench
