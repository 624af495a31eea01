// Ceilings tests: each kernel computes exactly what its benchmark counts. On small-integer inputs every
// sum is exact, so a loop the compiler shortened or an operand register read in the wrong place shows
// up as a wrong value. The mma cases build each warp's A, B and D as matrices, pack them into lane
// registers by the layouts documented in common/device/sm80.cuh, and check D + iters·A·B lane by lane:
// they test those layout comments as much as the kernels.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ceilings/ceilings.h"
#include "common/lib/numeric.h"
#include "common/lib/random.h"
#include "common/tools/check.h"
#include "common/tools/device_buffer.h"
#include "common/tools/gpu_test.h"

using namespace fs;
using namespace fs::ceilings;

namespace {

constexpr int kIters = 37;                // trips of every loop: odd, so unrolled loops run their remainder
constexpr Grid kGrid{3, kIters};          // 3 blocks: 24 warps, each with its own matrices
constexpr int kLanes = 32;

template <class T>
uint16_t bits16(float x) {
  const T h = from_float<T>(x);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

// Lane 4·g + t of an m16n8kK tile (sm80.cuh): row g or g + 8 of A and C, column g of B.
struct LaneIndex {
  int g, t;
  explicit LaneIndex(int lane) : g(lane / 4), t(lane % 4) {}
};

// One warp's problem: A (16 × K), B (K × 8), D0 (16 × 8 per chain), small integers.
struct WarpTiles {
  int k;
  std::vector<int> a, b, d0;  // row-major: a[m·k + kk], b[kk·8 + n], d0[(chain·16 + m)·8 + n]
  int64_t expected(int chain, int m, int n) const {
    int64_t dot = 0;
    for (int kk = 0; kk < k; ++kk) dot += int64_t(a[m * k + kk]) * b[kk * 8 + n];
    return d0[(chain * 16 + m) * 8 + n] + int64_t(kIters) * dot;
  }
};

WarpTiles random_tiles(int k, uint64_t seed) {
  WarpTiles w{k, {}, {}, {}};
  for (int i = 0; i < 16 * k; ++i) w.a.push_back(uniform_int(seed, i, -3, 3));
  for (int i = 0; i < k * 8; ++i) w.b.push_back(uniform_int(seed + 1, i, -3, 3));
  for (int i = 0; i < kChains * 16 * 8; ++i) w.d0.push_back(uniform_int(seed + 2, i, -50, 50));
  return w;
}

// The C/D fragment: c[r] = C[g + 8·(r / 2)][2t + r % 2].
int c_row(const LaneIndex& l, int r) { return l.g + 8 * (r / 2); }
int c_col(const LaneIndex& l, int r) { return 2 * l.t + r % 2; }

// Appends one warp's D0 of every chain in lane-register order: lane, chain, register.
template <class V>
void pack_d(const WarpTiles& t, std::vector<V>* d) {
  for (int lane = 0; lane < kLanes; ++lane) {
    const LaneIndex l(lane);
    for (int c = 0; c < kChains; ++c)
      for (int r = 0; r < 4; ++r) d->push_back(V(t.d0[(c * 16 + c_row(l, r)) * 8 + c_col(l, r)]));
  }
}

// How many accumulator values, in the same order, differ from D0 + iters·A·B.
template <class V>
int count_wrong(const std::vector<WarpTiles>& tiles, const std::vector<V>& got) {
  int wrong = 0;
  for (std::size_t w = 0; w < tiles.size(); ++w)
    for (int lane = 0; lane < kLanes; ++lane) {
      const LaneIndex l(lane);
      for (int c = 0; c < kChains; ++c)
        for (int r = 0; r < 4; ++r)
          wrong += double(got[((int64_t(w) * kLanes + lane) * kChains + c) * 4 + r]) !=
                   double(tiles[w].expected(c, c_row(l, r), c_col(l, r)));  // a NaN never equals
    }
  return wrong;
}

template <class T>
void check_mma_m16n8k16(const Grid& grid = kGrid) {
  const int warps = int(grid.warps());
  std::vector<WarpTiles> tiles;
  std::vector<uint32_t> a, b;
  std::vector<float> d;
  for (int w = 0; w < warps; ++w) {
    const WarpTiles& t = tiles.emplace_back(random_tiles(16, 100 + 10 * w));
    for (int lane = 0; lane < kLanes; ++lane) {
      const LaneIndex l(lane);
      // a[r] = A[g + 8·(r % 2)][2t + 8·(r / 2) .. +1], the lower column in the low half.
      for (int r = 0; r < 4; ++r) {
        const int row = l.g + 8 * (r % 2), col = 2 * l.t + 8 * (r / 2);
        a.push_back(bits16<T>(float(t.a[row * 16 + col])) | uint32_t(bits16<T>(float(t.a[row * 16 + col + 1]))) << 16);
      }
      // b[r] = B[2t + 8·r .. +1][g], the lower k in the low half.
      for (int r = 0; r < 2; ++r) {
        const int kk = 2 * l.t + 8 * r;
        b.push_back(bits16<T>(float(t.b[kk * 8 + l.g])) | uint32_t(bits16<T>(float(t.b[(kk + 1) * 8 + l.g]))) << 16);
      }
    }
    pack_d(t, &d);
  }
  DeviceBuffer<uint32_t> da(a), db(b);
  DeviceBuffer<float> dd(d), out(d.size());
  out.poison();
  mma_m16n8k16<T>(grid, da.get(), db.get(), dd.get(), out.get());
  const std::vector<float> got = out.download();
  const int wrong = count_wrong(tiles, got);
  CHECK_MESSAGE(wrong == 0, wrong << " of " << got.size() << " accumulator values differ from D + iters·A·B");
}

}  // namespace

FS_GPU_TEST_CASE("ceilings: every kernel fills the GPU with at least one block per SM") {
  FS_SKIP_WITHOUT_GPU();
  int sms = 0;
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (Kernel k : {Kernel::Ffma, Kernel::MmaF16, Kernel::MmaBf16, Kernel::MmaS8, Kernel::Ex2, Kernel::Lds32,
                   Kernel::Lds128, Kernel::Copy}) {
    const int64_t blocks = full_wave_blocks(k);
    CHECK(blocks >= sms);
    CHECK(blocks % sms == 0);
  }
}

FS_GPU_TEST_CASE("ceilings: ffma runs every trip (x + iters·b: exact on integers)") {
  FS_SKIP_WITHOUT_GPU();
  const std::vector<float> in = random_ints<float>(kGrid.threads() * kChains, 1, -100, 100);
  DeviceBuffer<float> din(in), out(in.size());
  out.poison();
  ffma(kGrid, din.get(), 1.0f, 3.0f, out.get());
  const std::vector<float> got = out.download();
  int wrong = 0;
  for (std::size_t i = 0; i < in.size(); ++i) wrong += got[i] != in[i] + 3.0f * kIters;
  CHECK_MESSAGE(wrong == 0, wrong << " of " << in.size() << " values wrong");
}

FS_GPU_TEST_CASE("ceilings: mma.sync m16n8k16 fp16 gives D + iters·A·B in the documented fragment layout") {
  FS_SKIP_WITHOUT_GPU();
  check_mma_m16n8k16<__half>();
}

FS_GPU_TEST_CASE("ceilings: mma.sync m16n8k16 bf16 gives D + iters·A·B in the documented fragment layout") {
  FS_SKIP_WITHOUT_GPU();
  check_mma_m16n8k16<__nv_bfloat16>();
}

FS_GPU_TEST_CASE("ceilings: one block per SM reserves more than half an SM's shared memory — and the mma loop gives the same results") {
  FS_SKIP_WITHOUT_GPU();
  int sms = 0, per_sm = 0;
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  FS_CUDA_CHECK(cudaDeviceGetAttribute(&per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));
  const Grid g = one_block_per_sm(kIters);
  CHECK(g.blocks == sms);
  CHECK(2 * g.reserved_smem > std::size_t(per_sm));
  // The same exact results as kGrid's, launched with that reservation (its opt-in past 48 KB).
  check_mma_m16n8k16<__half>(Grid{kGrid.blocks, kIters, g.reserved_smem});
}

FS_GPU_TEST_CASE("ceilings: mma.sync m16n8k32 s8 gives D + iters·A·B in the documented fragment layout") {
  FS_SKIP_WITHOUT_GPU();
  const int warps = int(kGrid.warps());
  std::vector<WarpTiles> tiles;
  std::vector<uint32_t> a, b;
  std::vector<int32_t> d;
  auto byte = [](int v) { return uint32_t(uint8_t(int8_t(v))); };
  for (int w = 0; w < warps; ++w) {
    const WarpTiles& t = tiles.emplace_back(random_tiles(32, 500 + 10 * w));
    for (int lane = 0; lane < kLanes; ++lane) {
      const LaneIndex l(lane);
      // a[r] = A[g + 8·(r % 2)][4t + 16·(r / 2) .. +3], byte j holding column 4t + j.
      for (int r = 0; r < 4; ++r) {
        const int row = l.g + 8 * (r % 2), col = 4 * l.t + 16 * (r / 2);
        uint32_t reg = 0;
        for (int j = 0; j < 4; ++j) reg |= byte(t.a[row * 32 + col + j]) << (8 * j);
        a.push_back(reg);
      }
      // b[r] = B[4t + 16·r .. +3][g], byte j holding k = 4t + 16·r + j.
      for (int r = 0; r < 2; ++r) {
        uint32_t reg = 0;
        for (int j = 0; j < 4; ++j) reg |= byte(t.b[(4 * l.t + 16 * r + j) * 8 + l.g]) << (8 * j);
        b.push_back(reg);
      }
    }
    pack_d(t, &d);
  }
  DeviceBuffer<uint32_t> da(a), db(b);
  DeviceBuffer<int32_t> dd(d), out(d.size());
  out.poison();
  mma_m16n8k32_s8(kGrid, da.get(), db.get(), dd.get(), out.get());
  const std::vector<int32_t> got = out.download();
  const int wrong = count_wrong(tiles, got);
  CHECK_MESSAGE(wrong == 0, wrong << " of " << got.size() << " accumulator values differ from D + iters·A·B");
}

FS_GPU_TEST_CASE("ceilings: ex2 iterates x -> 2^(-x) (within ex2.approx's error of the fp64 iteration)") {
  FS_SKIP_WITHOUT_GPU();
  const std::vector<float> in = random_uniform<float>(kGrid.threads() * kChains, 7, 0.0f, 1.0f);
  DeviceBuffer<float> din(in), out(in.size());
  out.poison();
  ex2(kGrid, din.get(), out.get());
  const std::vector<float> got = out.download();
  double worst = 0.0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    double x = in[i];
    for (int it = 0; it < kIters; ++it) x = std::exp2(-x);  // a contraction: |d/dx 2^-x| <= ln 2
    worst = std::fmax(worst, std::isnan(got[i]) ? INFINITY : std::fabs(got[i] - x));
  }
  CHECK_MESSAGE(worst < 1e-5, "largest difference from the fp64 iteration: " << worst);
}

FS_GPU_TEST_CASE("ceilings: shared-memory loads read every value on every trip (32- and 128-bit)") {
  FS_SKIP_WITHOUT_GPU();
  for (int width : {1, 4}) {
    CAPTURE(width);
    const std::vector<float> values = random_ints<float>(std::size_t(kThreads) * kChains * width, 9, -4, 4);
    DeviceBuffer<float> dv(values), out(kGrid.threads());
    out.poison();
    (width == 1 ? lds32 : lds128)(kGrid, dv.get(), out.get(), nullptr);
    const std::vector<float> got = out.download();
    int wrong = 0;
    for (int64_t t = 0; t < kGrid.threads(); ++t) {
      const int64_t x = t % kThreads;  // every block stages the same values
      float sum = 0.0f;
      for (int c = 0; c < kChains; ++c)
        for (int j = 0; j < width; ++j) sum += values[(c * kThreads + x) * width + j];
      wrong += got[t] != kIters * sum;
    }
    CHECK_MESSAGE(wrong == 0, wrong << " of " << got.size() << " sums wrong");
  }
}

FS_GPU_TEST_CASE("ceilings: the copy moves every element (a count that is no multiple of the grid)") {
  FS_SKIP_WITHOUT_GPU();
  const int64_t count = 1001;
  const std::vector<float> in = random_uniform<float>(4 * count, 11);
  DeviceBuffer<float> din(in), out(in.size());
  out.poison();
  copy(2, reinterpret_cast<const float4*>(din.get()), reinterpret_cast<float4*>(out.get()), count);
  CHECK(out.download() == in);
}
