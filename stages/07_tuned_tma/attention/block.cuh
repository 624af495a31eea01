// Stage 07 attention, role header: the warp-specialized block of v2 to v11 — its warpgroups and their
// registers, its tile configuration, its shared memory and the mbarriers through which the producer
// (producer.cuh) and the consumers (mainloop.cuh) meet.
//
// A producer warpgroup and kConsumers consumer warpgroups per Br = 64 · kConsumers query rows of one
// (batch entry, head): warpgroup 0 the producer (one of its threads issues every TMA load), warpgroup
// c + 1 the consumer of rows 64c .. 64c + 63, its warp w rows 16w .. 16w+15 of those. Two consumers
// (384 threads) in v2 to v6 and v9, three (512) in v7, v8, v10 and v11 at D = 64 and 128.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/device/sm90.cuh"

namespace fs::flash_tma::ws {

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
constexpr int consumer_regs(int consumers, int producer_regs = kProducerRegs) {
  return ((1 + consumers) * kWarpgroup * launch_regs((1 + consumers) * kWarpgroup) - kWarpgroup * producer_regs) /
         (consumers * kWarpgroup) / 8 * 8;
}
static_assert(consumer_regs(2) == 240 && consumer_regs(3) == 160, "the splits the comments above state");

// Keys per block (S: 64 × Bc per consumer). As many as the registers allow beside P and O, so that the
// fixed work of a block (row max and sum across the quad, alpha, the waits) is spread over more keys:
// 128 at D ≤ 128, 64 at D = 256. At D = 64 the launch takes Bc = 192 for long key sequences
// (Nk ≥ kWideFromKeys): 192-key blocks pay on long sequences and cost on short ones, where they
// overshoot the keys by 12.5%. At D = 128 a larger Bc leaves room for 2 stages only, and v3 and v4,
// which hold blocks j − 1 and j at once, then leave the producer no stage to fill ahead (the stage
// README, v7; the measurements: NOTES.md). v7's three consumers have 160
// registers each, and take Bc = 128 at D = 64 and 80 at D = 128 (v7_three_consumers.cuh).
constexpr int default_bc(int D) { return D <= 128 ? 128 : 64; }
constexpr int kWideBc = 192;                 // D = 64, long sequences
constexpr int64_t kWideFromKeys = 4096;      // Nk from which the launch takes it

// ElemBytes: 2 (fp16, bf16), or 1 (fp8, whose V_j tile is Vᵀ: [D][Bc], as many bytes as [Bc][D]).
template <int D, int Bc = default_bc(D), int Consumers = 2, int ElemBytes = 2>
struct Config {
  static constexpr int kD = D;
  static constexpr int kConsumers = Consumers;
  static constexpr int kBr = Consumers * 64;  // query rows per block: 64 per consumer warpgroup
  static constexpr int kBc = Bc;
  static constexpr int kElemBytes = ElemBytes;
  static constexpr int kStages = D == 64 ? 4 : D == 128 ? 3 : 2;
  static constexpr int kThreads = (1 + Consumers) * kWarpgroup;      // the producer warpgroup first
  static constexpr int kConsumerWarps = Consumers * kWarpgroup / 32;  // the arrivals that release a stage
  static constexpr int kConsumerRegs = consumer_regs(Consumers);
  static constexpr int kQBytes = kBr * D * ElemBytes;   // sQ: [Br][D]
  static constexpr int kKVBytes = kBc * D * ElemBytes;  // sK or sV: [Bc][D]
  static constexpr int kStageBytes = 2 * kKVBytes;  // K_j then V_j
  // 1024-byte alignment slack, sQ, the stages, then q_full, full_k, full_v, empty [kStages], q_landed and
  // v_landed.
  static constexpr std::size_t kSmemBytes = 1024 + std::size_t(kQBytes) + std::size_t(kStages) * kStageBytes +
                                            (3 + 3 * kStages) * sizeof(uint64_t);
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
//   q_full        Q has landed: the producer's expect_tx arrival and the bytes; used once (phase 0;
//                 v11: one phase per tile of its buffer, v11_persistent.cuh)
//   full_k[st]    K_j, V_j of the block in stage st have landed (a consumer can start S = Q·K_jᵀ
//   full_v[st]    before V_j is in); for a tile with rows past the sequence's end, the one arrival of
//                 the producer warp once it has zeroed them (q_full and the last block's full_v)
//   empty[st]     the block in stage st is no longer read: one arrival per consumer warp
//   q_landed      Q's tile or the last V tile has landed, when it holds rows past the sequence's end
//   v_landed      (first_foreign_row): the producer warp zeroes them, then arrives on q_full or full_v;
//                 each used at most once (phase 0; v11: once per tile that zeroes rows)
// Each stage's barriers count its uses, one phase per use u (key block j = kStages·u + st), so phase u
// has parity u & 1. A parity names its phase only while the barrier cannot run two phases ahead of its
// waiter, and it cannot: full_*[st] phase u + 1 needs the refill that waits for empty[st] phase u,
// which needs every consumer warp done with use u, and the other way round.
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

  __device__ explicit Smem(unsigned char* raw) {
    sQ = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t(1023));
    sKV = sQ + C::kQBytes;
    q_full = reinterpret_cast<uint64_t*>(sKV + C::kStages * C::kStageBytes);
    full_k = q_full + 1;
    full_v = full_k + C::kStages;
    empty = full_v + C::kStages;
    q_landed = empty + C::kStages;
    v_landed = q_landed + 1;
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
    }
    sm90::mbarrier_init(q_landed, 1);
    sm90::mbarrier_init(v_landed, 1);
    sm90::fence_mbarrier_init();  // the inits are seen by the TMA unit that completes them
  }

  // A consumer warp's release of key block j's stage: one of the kConsumerWarps arrivals that let the
  // producer refill it. Lane 0 speaks for the warp, after the warp's wait for the products that read it.
  __device__ __forceinline__ void release(int64_t j) const {
    if (threadIdx.x % 32 == 0) sm90::mbarrier_arrive(&empty[stage_of(j)]);
  }

  // A block the tile loads but this consumer does not read (a causal first half's last block; all of
  // them for a half with no real row): released once its K has landed — not sooner: an arrival for use
  // u + 1 of a stage made before its use u completed would count towards use u, and free the stage
  // under the other consumer. V_j may still be landing: the consumer that reads the block waits for it
  // (full_v) before its own arrival, which empty needs too.
  __device__ __forceinline__ void release_skipped(int64_t j) const {
    sm90::mbarrier_wait_parity(&full_k[stage_of(j)], parity_of(j));
    release(j);
  }
};

}  // namespace fs::flash_tma::ws
