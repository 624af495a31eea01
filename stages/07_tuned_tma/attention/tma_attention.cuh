// What the stage 07 attention versions share, kept once so that each vN_*.cuh shows only its own idea:
// the shared-memory tile one TMA load fills and wgmma reads (its loads, its matrix descriptors), and,
// for the warp-specialized versions v2 to v10, the block itself: its warpgroups and registers, its tile
// shapes, its shared memory and mbarriers, and the producer warpgroup's whole work.
//
// The tile. A [rows][D] tile in shared memory is D/64 panels side by side, panel p holding columns
// 64p .. 64p+63 of every row: `rows` rows of 128 bytes (64 16-bit elements, one row of the 128-byte
// swizzle), 1024-byte atoms of 8 rows, chunk c of row r stored at chunk c ^ (r % 8) — what a TMA load
// with CU_TENSOR_MAP_SWIZZLE_128B writes and sm90::matrix_descriptor_sw128 describes.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/sm90.cuh"

namespace fs::flash_tma {

// Elements of ElemBytes bytes in one 128-byte panel row: 64 16-bit ones, 128 fp8 ones (v9).
template <int ElemBytes>
constexpr int kPanelCols = 128 / ElemBytes;

// Thread 0 fills a [rows][D] tile with one TMA box per panel: rows first .. first + rows - 1 of `plane`
// (rows past the plane's end arrive as zeros), counted on `bar`.
template <int D, int ElemBytes = 2>
__device__ __forceinline__ void load_tile(unsigned char* tile, const CUtensorMap* map, int rows, int64_t first,
                                          int64_t plane, uint64_t* bar) {
  constexpr int kCols = kPanelCols<ElemBytes>;
#pragma unroll
  for (int p = 0; p < D / kCols; ++p)
    sm90::tma_load_3d(tile + p * rows * 128, map, kCols * p, int32_t(first), int32_t(plane), bar);
}

// ---- Sequences inside the maps' planes ---------------------------------------------------------
// The tensor maps see Q, K and V as planes of rows (launch.cuh): one plane per (batch entry, head) of
// Nq or Nk rows for dense and padded batches, one per head of all the entries' rows for packed ones.
// A Sequence's q_row0 / k_row0 count rows from the start of the tensor, so the plane is their quotient
// by the plane's rows and the sequence's first row within it the remainder.
struct PlaneRow {
  int64_t plane;  // the map's third coordinate
  int64_t row;    // the sequence's first row within the plane
};
__device__ __forceinline__ PlaneRow plane_row(int64_t row0, int64_t plane_rows) {
  return {row0 / plane_rows, row0 % plane_rows};
}

// TMA stops a box only at the plane's end, not at a sequence's: a tile that runs past the last row of
// its sequence brings the padding (padded batches) or the next entry's rows (packed ones). The keys
// among them are masked in S (-inf by a select, whatever they hold), but P = 0 times a NaN or an
// infinity in V is NaN, and so is a query row's NaN times the zero it is to be written as; so those
// rows of Q's tile and of the last V tile are zeroed in shared memory before any product reads them,
// as stage 04's loads zero-fill them. For a tile of `rows` rows that starts `first` rows into a
// sequence of n rows (n > first) whose first row is row `begin` of a plane of `plane_rows`: the first
// such row, or `rows` when none lies inside the plane (dense batches: past the sequence's end is past
// the plane's, and TMA writes zeros there itself).
__device__ __forceinline__ int first_foreign_row(int64_t first, int rows, int64_t n, int64_t begin,
                                                 int64_t plane_rows) {
  const int64_t keep = n - first;
  return keep < rows && begin + n < plane_rows ? int(keep) : rows;
}

// Rows `from` .. rows − 1 of a landed [rows][D] tile set to zero, 16 bytes per store, by `count`
// threads of which this is number `index`: in each panel they are one run of bytes (the swizzle moves
// 16-byte chunks only within a row). Each thread then makes its stores visible to the async proxy,
// through which wgmma reads shared memory; a barrier after it publishes them.
template <int D, int ElemBytes = 2>
__device__ __forceinline__ void zero_rows(unsigned char* tile, int rows, int from, int index, int count) {
  const int chunks = (rows - from) * 8;  // per panel
  for (int e = index; e < D / kPanelCols<ElemBytes> * chunks; e += count)
    *reinterpret_cast<uint4*>(tile + e / chunks * rows * 128 + from * 128 + e % chunks * 16) = make_uint4(0, 0, 0, 0);
  sm90::fence_proxy_async();
}

// The descriptor of the 16-column (k) slice ks of rows first .. first + 63 (A) or of all rows (B) of a
// K-major tile whose panels are `rows` rows high (Q as A, K_j as B of S = Q·K_jᵀ, k = the head
// dimension): panel ks / 4, 32 bytes per 16 columns inside its 128-byte rows, 128 bytes per row of
// offset (whole atoms of 8 rows, so the swizzle's phase is kept); SBO = one atom (the next 8 rows); LBO
// unused (16 k stay inside one row).
// The descriptor of row `first` is encoded once and the slice's offset added to it: ks is a
// compile-time constant in every caller's unrolled loop, so each further slice costs one add.
__device__ __forceinline__ uint64_t k_major_descriptor(uint32_t tile, int rows, int first, int ks) {
  return sm90::matrix_descriptor_advance(sm90::matrix_descriptor_sw128(tile + first * 128, 16, 1024),
                                         ks / 4 * rows * 128 + ks % 4 * 32);
}

// The descriptor of rows 16·kk .. 16·kk + 15 of V_j [Bc][D] as the B operand of O += P·V_j (k = keys,
// n = the head dimension, stored n-contiguous: N-major): two atoms of 8 key rows per 16 keys; SBO = one
// atom (the next 8 keys); LBO = one panel (the next 64 columns of D, Bc rows × 128 bytes further).
__device__ __forceinline__ uint64_t v_descriptor(uint32_t tile, int rows, int kk) {
  return sm90::matrix_descriptor_advance(sm90::matrix_descriptor_sw128(tile, rows * 128, 1024), kk * 2048);
}

// A consumer warpgroup's products, for its element type T: kK, the k of one wgmma; s(), the k slices of
// S = Q_c·K_jᵀ (Q's rows `first` .. first + 63 of a tile of `q_rows`, K_j's Bc rows), issued; pv(), the
// slices of O += P·V_j with P from registers (Bc / kK A fragments), issued; to_a(), P's fp32 scores as those
// fragments. The caller commits and waits. For fp16 and bf16 here (a k slice is 16 elements, 32 bytes);
// fp8 brings its own (v9_fp8.cuh).
template <class T>
struct Products {
  static constexpr int kK = 16;

  template <int kBc, int D>
  static __device__ __forceinline__ void s(float (&acc)[kBc / 2], uint32_t q_tile, int q_rows, int first,
                                           uint32_t k_tile) {
#pragma unroll
    for (int ks = 0; ks < D / 16; ++ks)
      sm90::wgmma_m64nNk16<kBc, T, false, false>(acc, k_major_descriptor(q_tile, q_rows, first, ks),
                                                 k_major_descriptor(k_tile, kBc, 0, ks), ks > 0);
  }
  template <int kBc, int D>
  static __device__ __forceinline__ void pv(float (&acc)[D / 2], const uint32_t (&pa)[kBc / 16][4],
                                            uint32_t v_tile) {
#pragma unroll
    for (int kk = 0; kk < kBc / 16; ++kk)
      sm90::wgmma_m64nNk16_rs<D, T, /*kTransB=*/true>(acc, pa[kk], v_descriptor(v_tile, kBc, kk), true);
  }
  // Two neighbouring 8-column blocks of S per 16-key fragment: the accumulator's layout is the A operand's.
  template <int kNT>
  static __device__ __forceinline__ void to_a(uint32_t (&pa)[kNT / 2][4], const float (&p)[kNT][4]) {
#pragma unroll
    for (int kk = 0; kk < kNT / 2; ++kk) attn::a_from_c<T>(pa[kk], p[2 * kk], p[2 * kk + 1]);
  }
};

// ---- The warp-specialized block of v2 to v10 ---------------------------------------------------------
// A producer warpgroup and kConsumers consumer warpgroups per Br = 64 · kConsumers query rows of one
// (batch entry, head): warpgroup 0 the producer (one of its threads issues every TMA load), warpgroup
// c + 1 the consumer of rows 64c .. 64c + 63, its warp w rows 16w .. 16w+15 of those. Two consumers
// (384 threads) in v2 to v6, three (512) in v7.
namespace ws {

constexpr int kWarpgroup = 128;

// This thread's warpgroup, threadIdx.x / 128, broadcast from lane 0. The compiler cannot tell that a
// quotient of threadIdx.x is the same in every lane of a warp; a shuffle from lane 0 it can. What a
// consumer computes from it (its rows of sQ, its key blocks, the stages, the matrix descriptors) is
// then kept in uniform registers, where wgmma reads its descriptors, instead of per-thread registers
// copied over (R2UR) before every wgmma.
__device__ __forceinline__ int warpgroup() { return __shfl_sync(0xffffffffu, int(threadIdx.x) / kWarpgroup, 0); }

// The register split of a block of `threads` threads (__launch_bounds__(threads, 1)): the launch gives
// every thread 65536 / threads registers (in steps of 8: 168 for 384 threads, 128 for 512); the
// producer's setmaxnreg.dec keeps 24 of them, and the consumers' .inc takes what that returns, shared
// out: 128 × (168 − 24) = 256 × (240 − 168) with two consumers, 128 × (128 − 24) ≥ 384 × (160 − 128)
// with three. So the .inc never waits for registers the block does not have.
constexpr int kProducerRegs = 24;
constexpr int launch_regs(int threads) { return 65536 / threads / 8 * 8; }
constexpr int consumer_regs(int consumers) {
  return ((1 + consumers) * kWarpgroup * launch_regs((1 + consumers) * kWarpgroup) - kWarpgroup * kProducerRegs) /
         (consumers * kWarpgroup) / 8 * 8;
}
static_assert(consumer_regs(2) == 240 && consumer_regs(3) == 160, "the splits the comments above state");

// Keys per block (S: 64 × Bc per consumer). As many as the registers allow beside P and O, so that the
// fixed work of a block (row max and sum across the quad, alpha, the waits) is spread over more keys:
// 128 at D ≤ 128, 64 at D = 256. At D = 64 the launch takes Bc = 192 for long key sequences
// (Nk ≥ kWideFromKeys): measured 1.00–1.09× Bc = 128 over v2–v4 at N = 8192, but 0.88–0.93× at N = 512,
// where 192-key blocks overshoot the keys by 12.5%. At D = 128 a larger Bc leaves room for 2 stages
// only, and v3 and v4, which hold blocks j − 1 and j at once, then leave the producer no stage to fill
// ahead: Bc = 160 and 192 measured 0.72–0.84× (README, "Tile sizes per head dim"). v7's three consumers
// have 160 registers each, and take Bc = 128 at D = 64 and 64 at D = 128 (v7_three_consumers.cuh).
constexpr int default_bc(int D) { return D <= 128 ? 128 : 64; }
constexpr int kWideBc = 192;                 // D = 64, long sequences
constexpr int64_t kWideFromKeys = 4096;      // Nk from which the launch takes it

// ElemBytes: 2 (fp16, bf16), or 1 (v9's fp8, whose V_j tile is Vᵀ: [D][Bc], as many bytes as [Bc][D]).
// KApart: the consumers release K_j's half of a stage as soon as S_j is done and V_j's once P_j·V_j is
// (v10), instead of the whole stage after P_j·V_j; the producer refills each half on its own release.
template <int D, int Bc = default_bc(D), int Consumers = 2, int ElemBytes = 2, bool KApart = false>
struct Config {
  static constexpr int kD = D;
  static constexpr int kConsumers = Consumers;
  static constexpr int kBr = Consumers * 64;  // query rows per block: 64 per consumer warpgroup
  static constexpr int kBc = Bc;
  static constexpr int kElemBytes = ElemBytes;
  static constexpr bool kKApart = KApart;
  static constexpr int kStages = D == 64 ? 4 : D == 128 ? 3 : 2;
  static constexpr int kThreads = (1 + Consumers) * kWarpgroup;      // the producer warpgroup first
  static constexpr int kConsumerWarps = Consumers * kWarpgroup / 32;  // the arrivals that release a stage
  static constexpr int kConsumerRegs = consumer_regs(Consumers);
  static constexpr int kQBytes = kBr * D * ElemBytes;   // sQ: [Br][D]
  static constexpr int kKVBytes = kBc * D * ElemBytes;  // sK or sV: [Bc][D]
  static constexpr int kStageBytes = 2 * kKVBytes;  // K_j then V_j
  // 1024-byte alignment slack, sQ, the stages, then q_full, full_k, full_v, empty [kStages], q_landed and
  // v_landed, and with KApart empty_k [kStages].
  static constexpr std::size_t kSmemBytes = 1024 + std::size_t(kQBytes) + std::size_t(kStages) * kStageBytes +
                                            (3 + (KApart ? 4 : 3) * kStages) * sizeof(uint64_t);
  static_assert(D * ElemBytes % 128 == 0, "whole 128-byte panels");
  static_assert(kSmemBytes <= 227 * 1024, "what one block may have on an H100");
};
// The default tile of each head dim. The registry states each version's largest block as the largest of
// these (max_smem_bytes): the wide tile must not exceed it.
template <int D>
using DefaultConfig = Config<D>;
static_assert(Config<64, kWideBc>::kSmemBytes <= Config<128>::kSmemBytes, "the D = 128 block is the largest");

// The block's shared memory, from the first 1024-byte boundary of the dynamic allocation (where the
// swizzle pattern starts; the runtime promises 16): sQ [Br][D], kStages × (K_j [Bc][D], V_j [Bc][D]),
// then the barriers.
//   q_full        Q has landed: the producer's expect_tx arrival and the bytes; used once (phase 0)
//   full_k[st]    K_j, V_j of the block in stage st have landed (a consumer can start S = Q·K_jᵀ
//   full_v[st]    before V_j is in); for a tile with rows past the sequence's end, the one arrival of
//                 the producer warp once it has zeroed them (q_full and the last block's full_v)
//   empty[st]     the block in stage st is no longer read: one arrival per consumer warp (KApart: V_j)
//   empty_k[st]   KApart only: K_j in stage st is no longer read (S_j is done), one arrival per consumer warp
//   q_landed      Q's tile or the last V tile has landed, when it holds rows past the sequence's end
//   v_landed      (first_foreign_row): the producer warp zeroes them, then arrives on q_full or full_v;
//                 each used at most once (phase 0)
// Each stage's barriers count its uses, one phase per use u (key block j = kStages·u + st), so phase u
// has parity u & 1. A parity names its phase only while the barrier cannot run two phases ahead of its
// waiter, and it cannot: full_*[st] phase u + 1 needs the refill that waits for empty[st] (empty_k[st])
// phase u, which needs every consumer warp done with use u, and the other way round.
template <class Cfg>
struct Smem {
  using C = Cfg;
  unsigned char* sQ;
  unsigned char* sKV;
  uint64_t* q_full;
  uint64_t* full_k;
  uint64_t* full_v;
  uint64_t* empty;
  uint64_t* q_landed;
  uint64_t* v_landed;
  uint64_t* empty_k;  // KApart only

  __device__ explicit Smem(unsigned char* raw) {
    sQ = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
    sKV = sQ + C::kQBytes;
    q_full = reinterpret_cast<uint64_t*>(sKV + C::kStages * C::kStageBytes);
    full_k = q_full + 1;
    full_v = full_k + C::kStages;
    empty = full_v + C::kStages;
    q_landed = empty + C::kStages;
    v_landed = q_landed + 1;
    empty_k = v_landed + 1;
  }

  // In 32 bits: a key block index is below Nk / 64, and Nk < 2^31 (encode_tensor_map refuses longer
  // tensors: a TMA row coordinate is an int32). The 64-bit division by kStages = 3 would cost some 30
  // instructions per wait (ncu's instruction mix of the consumers' loop showed them).
  static __device__ __forceinline__ int stage_of(int64_t j) { return int(uint32_t(j) % C::kStages); }
  static __device__ __forceinline__ uint32_t parity_of(int64_t j) { return uint32_t(j) / C::kStages & 1; }
  __device__ __forceinline__ unsigned char* k_tile(int64_t j) const { return sKV + stage_of(j) * C::kStageBytes; }

  // Thread 0, before the block's one __syncthreads.
  __device__ __forceinline__ void init_barriers() const {
    sm90::mbarrier_init(q_full, 1);  // the producer's expect_tx arrival, then the bytes
    for (int st = 0; st < C::kStages; ++st) {
      sm90::mbarrier_init(&full_k[st], 1);
      sm90::mbarrier_init(&full_v[st], 1);
      sm90::mbarrier_init(&empty[st], C::kConsumerWarps);  // one arrival per consumer warp
      if constexpr (C::kKApart) sm90::mbarrier_init(&empty_k[st], C::kConsumerWarps);
    }
    sm90::mbarrier_init(q_landed, 1);
    sm90::mbarrier_init(v_landed, 1);
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA unit that completes them
  }

  // A consumer warp's release of key block j's stage (KApart: of V_j): one of the kConsumerWarps arrivals
  // that let the producer refill it. Lane 0 speaks for the warp, after the warp's wait for the products
  // that read it.
  __device__ __forceinline__ void release(int64_t j) const {
    if (threadIdx.x % 32 == 0) sm90::mbarrier_arrive(&empty[stage_of(j)]);
  }
  // KApart: the same for K_j alone, once S_j is done; otherwise nothing (release frees K_j with V_j).
  __device__ __forceinline__ void release_k(int64_t j) const {
    if constexpr (C::kKApart)
      if (threadIdx.x % 32 == 0) sm90::mbarrier_arrive(&empty_k[stage_of(j)]);
  }

  // A block the tile loads but this consumer does not read (a causal first half's last block; all of
  // them for a half with no real row): released once it has landed — not sooner: an arrival for use
  // u + 1 of a stage made before its use u completed would count towards use u, and free the stage
  // under the other consumer. With KApart, K_j's landing shows only that K's half of use u was
  // released, so V's half waits for V_j's.
  __device__ __forceinline__ void release_skipped(int64_t j) const {
    sm90::mbarrier_wait_parity(&full_k[stage_of(j)], parity_of(j));
    release_k(j);
    if constexpr (C::kKApart) sm90::mbarrier_wait_parity(&full_v[stage_of(j)], parity_of(j));
    release(j);
  }
};

// The producer warp's part for a tile that holds rows past its sequence's end (first_foreign_row): wait
// for it to land on `landed`, zero those rows, and hand it to the consumers with the one arrival that
// completes `publish` (q_full or full_v[st], which then waits for no bytes).
template <int D, int ElemBytes>
__device__ __forceinline__ void zero_and_publish(unsigned char* tile, int rows, int from, uint64_t* landed,
                                                 uint64_t* publish) {
  sm90::mbarrier_wait_parity(landed, 0);
  zero_rows<D, ElemBytes>(tile, rows, from, threadIdx.x % 32, 32);
  __syncwarp();  // every lane's zeros, and its fence, before the arrival that publishes them
  if (threadIdx.x % 32 == 0) sm90::mbarrier_arrive(publish);
}

// How the producer fills V_j's tile from the keys `key` .. key + Bc − 1 of a plane: here as K_j's, [Bc][D]
// rows of keys. v9 brings its own (Vᵀ_j: [D][Bc], the keys along a row), whose rows are not keys, so
// rows past a sequence's end cannot be zeroed there (kKeyRows; v9 takes dense batches, which have none).
struct VRows {
  static constexpr bool kKeyRows = true;
  template <class C>
  static __device__ __forceinline__ void load(unsigned char* tile, const CUtensorMap* map, int64_t key,
                                              int64_t plane, uint64_t* bar) {
    load_tile<C::kD, C::kElemBytes>(tile, map, C::kBc, key, plane, bar);
  }
};

// The producer warpgroup's whole work: give its registers back (a warpgroup instruction), then one
// thread loads Q once and K_j, V_j for n_blocks key blocks of the tile from block `first` on (0; a
// split-KV block's slice starts later: the stages count from the slice's first block), up to kStages
// blocks ahead of the consumers; its warp zeroes what Q's tile and the last V tile hold past the
// sequence's end. Without kLoadQ it loads no Q (tmQ unused): v6's consumers fill sQ themselves, from
// several heads' rows, which no TMA box is, and q_full goes unused. VTile loads V_j (VRows, or v9's Vᵀ_j).
// No producer thread touches shared memory or a barrier afterwards: its warps may leave, the loads in
// flight complete on their barriers whether or not the issuing thread still runs, and the consumers
// wait for every one of them before they leave.
template <class C, class T, bool kLoadQ = true, class VTile = VRows>
__device__ __forceinline__ void produce(const Smem<C>& sm, const CUtensorMap* tmQ, const CUtensorMap* tmK,
                                        const CUtensorMap* tmV, const attn::Args<T>& a, const attn::Sequence& s,
                                        int64_t n_blocks, int64_t first = 0) {
  constexpr int D = C::kD, E = C::kElemBytes;
  sm90::setmaxnreg_dec<kProducerRegs>();
  if (threadIdx.x >= 32 || n_blocks == 0) return;
  const bool issuer = threadIdx.x == 0;
  const PlaneRow q = plane_row(s.q_row0, a.seq_q), kv = plane_row(s.k_row0, a.seq_k);
  const int64_t last = n_blocks - 1;  // stages count from `first`; rows of K and V from block 0
  const int q_from = kLoadQ ? first_foreign_row(s.q0, C::kBr, s.nq, q.row, a.seq_q) : C::kBr;
  const int v_from =
      VTile::kKeyRows ? first_foreign_row((first + last) * C::kBc, C::kBc, s.nk, kv.row, a.seq_k) : C::kBc;
  // K_j, then V_j once `v_free` (if any) has completed its phase of that parity.
  auto load_kv = [&](int64_t j, uint64_t* v_free, uint32_t parity) {
    const int st = Smem<C>::stage_of(j);
    unsigned char* sK = sm.k_tile(j);
    uint64_t* v_bar = j == last && v_from < C::kBc ? sm.v_landed : &sm.full_v[st];
    sm90::mbarrier_arrive_expect_tx(&sm.full_k[st], C::kKVBytes);
    const int64_t row = kv.row + (first + j) * C::kBc;
    load_tile<D, E>(sK, tmK, C::kBc, row, kv.plane, &sm.full_k[st]);
    if (v_free) sm90::mbarrier_wait_parity(v_free, parity);
    sm90::mbarrier_arrive_expect_tx(v_bar, C::kKVBytes);
    VTile::template load<C>(sK + C::kKVBytes, tmV, row, kv.plane, v_bar);
  };
  const int64_t prologue = n_blocks < C::kStages ? n_blocks : C::kStages;  // stages free from the start
  if (issuer) {
    if constexpr (kLoadQ) {
      uint64_t* q_bar = q_from < C::kBr ? sm.q_landed : sm.q_full;
      sm90::mbarrier_arrive_expect_tx(q_bar, C::kQBytes);
      load_tile<D, E>(sm.sQ, tmQ, C::kBr, q.row + s.q0, q.plane, q_bar);
    }
    for (int64_t j = 0; j < prologue; ++j) load_kv(j, nullptr, 0);
  }
  // Q's zeros go in while the first blocks are on their way: the consumers need Q before they can free
  // a stage for the blocks after them.
  if (q_from < C::kBr) zero_and_publish<D, E>(sm.sQ, C::kBr, q_from, sm.q_landed, sm.q_full);
  if (issuer)
    for (int64_t j = prologue; j < n_blocks; ++j) {
      // A stage's next use needs its last one (key block j − kStages) released by every consumer warp:
      // the phase of the opposite parity. The wait's acquire, after their wgmma_wait_group and arrivals,
      // orders the tensor cores' reads of the stage before the TMA writes issued below. KApart: K_j
      // waits for K_{j-kStages} alone, released a softmax and a P·V earlier than V_{j-kStages}.
      const int st = Smem<C>::stage_of(j);
      const uint32_t parity = Smem<C>::parity_of(j) ^ 1;
      if constexpr (C::kKApart) {
        sm90::mbarrier_wait_parity(&sm.empty_k[st], parity);
        load_kv(j, &sm.empty[st], parity);
      } else {
        sm90::mbarrier_wait_parity(&sm.empty[st], parity);
        load_kv(j, nullptr, 0);
      }
    }
  if (v_from < C::kBc)
    zero_and_publish<D, E>(sm.k_tile(last) + C::kKVBytes, C::kBc, v_from, sm.v_landed,
                           &sm.full_v[Smem<C>::stage_of(last)]);
}

}  // namespace ws

}  // namespace fs::flash_tma
