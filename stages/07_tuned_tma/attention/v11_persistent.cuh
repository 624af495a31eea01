// flashstages · stage 07 attention · v11 — persistent blocks: v7's tiles, one block per SM drawing them
// from a counter until none is left, so that one tile's end overlaps the next tile's start (fp16, bf16;
// D = 64, 128, 256).
//
// What changes from v7 (one block per query tile, which loads Q, streams its key blocks, stores O and
// leaves; the next block on that SM starts from nothing): the grid is one block per SM, and each runs
// tile after tile, the first its blockIdx.x, every next one drawn one tile ahead from a counter in
// global memory (atomicAdd). Q has two buffers where they fit (D = 64 and 128): the producer loads the
// next tile's Q into the other one while this tile runs, and a buffer is refilled once every consumer
// has finished its last S = Q·K_jᵀ there (a new barrier, q_empty, per buffer); the next tile's key
// blocks load as stages free up. The stages' uses and every barrier's phase run on from tile to tile
// (ws::Consumer's kRunOn).
// Why it is faster: where tiles are short (N = 512: 4 key blocks at D = 64) a tile's prologue (Q and
// K_0 in flight) and epilogue (O to memory) are a large share of its time, and one block fills an SM's
// shared memory, so nothing else runs under them; here the next tile's loads do. A counter, not a static
// stride: a block that drew short causal tiles draws more (longest first: locate's reverse order).
// What it costs: an atomic per tile, a 4-byte counter zeroed on the stream before each launch, a second
// Q buffer's shared memory, and 8 more registers for the producer, which now decodes tiles.
//
// Run: build/h100/stages/07_tuned_tma/attention/stage07_attention --dtype fp16 --seq 512 --dim 64 --batch 32 --heads 32 --version v11
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/device/attention.cuh"
#include "common/device/online_softmax.cuh"
#include "common/device/sm90.cuh"
#include "stages/07_tuned_tma/attention/block.cuh"
#include "stages/07_tuned_tma/attention/mainloop.cuh"
#include "stages/07_tuned_tma/attention/producer.cuh"
#include "stages/07_tuned_tma/attention/tiles.cuh"

namespace fs::flash_tma::v11 {

using namespace fs::attn;
using ws::Consumer;
using ws::kWarpgroup;

// v7's tiles (three consumers at D = 64 and 128, over 128 and 80 keys; v3's two at D = 256) with what a
// persistent block adds: a second Q buffer where it fits (D = 64 and 128: 177 and 217 KiB; not at
// D = 256), so that the next tile's Q loads under the whole of this one; past the barriers, each Q
// buffer's q_empty, the second's q_full and the tile slots (8 bytes each, the slots together). And
// another register split: the producer now decodes a tile and carries the loop from tile to tile, which
// in v7's 24 registers spilled 80 to 140 bytes (ptxas). It keeps 32, and the consumers keep v7's 160
// each (three) or take 232 (two, at D = 256): ptxas spills nothing in the consumers, and a few dozen
// bytes in the producer, once per tile, where no product waits on them. Giving the producer 40 would
// leave three consumers 152, and ptxas then serializes their wgmma (C7512).
template <int D>
using Tile = ws::Config<D, D == 64 ? 128 : D == 128 ? 80 : ws::default_bc(D), D <= 128 ? 3 : 2>;
template <int D>
struct Config : Tile<D> {
  using Base = Tile<D>;
  static constexpr std::size_t kExtraBarrierBytes = 4 * sizeof(uint64_t);
  static constexpr int kQBuffers = Base::kSmemBytes + Base::kQBytes + kExtraBarrierBytes <= 227 * 1024 ? 2 : 1;
  static constexpr std::size_t kSmemBytes =
      Base::kSmemBytes + std::size_t(kQBuffers - 1) * Base::kQBytes + kExtraBarrierBytes;
  static constexpr int kProducerRegs = 32;
  static constexpr int kConsumerRegs = ws::consumer_regs(Base::kConsumers, kProducerRegs);
  static_assert(kSmemBytes <= 227 * 1024, "what one block may have on an H100");
  static_assert(kConsumerRegs == (Base::kConsumers == 3 ? 160 : 232), "the splits the comment above states");
  static_assert(Base::kQBytes % 1024 == 0, "a second Q buffer keeps the 1024-byte swizzle alignment");
};

// v7's shared memory (ws::Smem: sQ, the stages, their barriers), after a second Q buffer where there is
// one (ws::Smem's layout shifted by it: both buffers start on a 1024-byte boundary), and, past the
// barriers:
//   q_empty[b]  every consumer warp is done with Q buffer b for its tile (its last S product has
//               completed) and has read the tile's slot: one arrival per consumer warp; the producer may
//               load a later tile's Q there
//   q_full of buffer 1 (buffer 0's is ws::Smem's): its Q has landed, and its slot is written
//   tile[b]     the query tile whose Q is in buffer b (locate's index), or −1 once the counter is spent:
//               written by the producer's lane 0 before its arrival on that buffer's q_full, read by each
//               consumer warp's lane 0 (the lane that arrives on q_empty) after its wait on it
// Tile t of a block takes buffer t % kQBuffers. Each buffer's q_full and q_empty go through one phase per
// tile that takes the buffer, q_landed and v_landed one per tile that zeroes rows past its sequence's end;
// each side keeps their parities.
template <class C>
struct Smem : ws::Smem<C> {
  using Base = ws::Smem<C>;
  uint64_t* q_empty0;  // q_empty of buffer 0; buffer 1's follows it, then buffer 1's q_full
  int32_t* tile;       // [2]

  __device__ explicit Smem(unsigned char* raw) : Base(raw + (C::kQBuffers - 1) * C::kQBytes) {
    q_empty0 = Base::v_landed + 1;
    tile = reinterpret_cast<int32_t*>(q_empty0 + 3);
  }
  // Buffer b's Q, its q_full and its q_empty (by arithmetic: an array of pointers indexed at run time
  // would live in local memory). Buffer 1 lies just before ws::Smem's sQ.
  __device__ __forceinline__ unsigned char* q_buffer(int b) const { return Base::sQ - b * C::kQBytes; }
  __device__ __forceinline__ uint64_t* q_full_of(int b) const { return b == 0 ? Base::q_full : q_empty0 + 2; }
  __device__ __forceinline__ uint64_t* q_empty(int b) const { return q_empty0 + b; }
  // Thread 0, before the block's one __syncthreads (Base's init ends with the fence that covers these).
  __device__ __forceinline__ void init_barriers() const {
    for (int b = 0; b < C::kQBuffers; ++b) sm90::mbarrier_init(q_empty(b), C::kConsumerWarps);
    if (C::kQBuffers == 2) sm90::mbarrier_init(q_full_of(1), 1);
    Base::init_barriers();
  }
  // Tile t of the block: its buffer, and the phase of that buffer's barriers it takes.
  static __device__ __forceinline__ int buffer_of(uint32_t t) { return int(t % C::kQBuffers); }
  static __device__ __forceinline__ uint32_t phase_of(uint32_t t) { return t / C::kQBuffers & 1; }
};

// Tile x (locate's order: tiles of one (b, h) together, causal ones longest first) in 32 bits, and the
// planes and rows of its Q, K and V as the tensor maps name them: what locate and q_plane_row /
// kv_plane_row give, without their 64-bit divisions, which the producer cannot afford in its registers.
// The consumers decode a tile with it too, so both sides count the same key blocks by construction.
// A tile index is below 2^31 (the launch checks), and so are B·H, q_tiles and a plane: the sequence of
// (b, h) is plane b·H + h of Q (packed: plane h, from its entry's first row) and plane b·KVH + h / G of
// K and V. An entry that breaks the length rules has no key block, so its planes are never loaded.
// The rows in a plane in 32 bits, as a TMA coordinate is (encode_tensor_map refuses longer planes).
struct TileRows {
  Sequence s;
  Plane q_plane, kv_plane;
  int32_t q_row, kv_row;  // the sequence's first row in its plane
};
template <class T>
__device__ __forceinline__ TileRows tile_rows(const Args<T>& a, int Br, int x) {
  const uint32_t q_tiles = uint32_t(a.q_tiles), bh = uint32_t(x) / q_tiles, in_bh = uint32_t(x) % q_tiles;
  const uint32_t b = bh / uint32_t(a.heads), h = bh % uint32_t(a.heads), kvh = h / uint32_t(a.group);
  const uint32_t tile = a.causal ? q_tiles - 1 - in_bh : in_bh;  // locate's reverse_tiles
  TileRows t;
  t.s = sequence_of(a, bh, b, h, int64_t(tile) * Br);
  const bool packed = a.cu_seqlens_q != nullptr;
  t.q_plane = {int32_t(h), packed ? 0 : int32_t(b)};
  t.kv_plane = {int32_t(kvh), packed ? 0 : int32_t(b)};
  t.q_row = packed ? int32_t(t.s.q_row0 - int64_t(h) * a.seq_q) : 0;
  t.kv_row = packed ? int32_t(t.s.k_row0 - int64_t(kvh) * a.seq_k) : 0;
  return t;
}

// The stages' uses counted modulo 2·kStages, the period of a use's stage and parity (block.cuh): what
// the producer and the consumers carry from tile to tile, in 32 bits however many tiles a block runs.
template <class C>
__device__ __forceinline__ uint32_t next_use(uint32_t use, int64_t n_blocks) {
  return uint32_t((use + uint64_t(n_blocks)) % (2 * C::kStages));
}

// The producer warpgroup's whole work: give its registers back, then tile after tile (the first is
// blockIdx.x, each next one drawn from *counter while this one loads), as ws::produce does for one:
// Q once the consumers have freed sQ, then K_j and V_j up to kStages blocks ahead, over every tile in
// one sequence of the stages' uses. Warp 0 alone: lane 0 issues, the warp zeroes rows past a sequence's
// end and carries the tile index. With no tile left it publishes −1 and leaves; the loads in flight
// complete on their barriers, and the consumers wait for each before they leave.
// It runs in the registers setmaxnreg leaves it (Config::kProducerRegs), so what it carries is small:
// the tile in 32 bits, the uses modulo 2·kStages, in one register the parities of q_landed and v_landed
// and the count of its tiles (which gives each tile's Q buffer and that buffer's phase). A barrier's
// first wait is for the parity before its first phase, which a fresh barrier counts as complete: the
// first kStages waits on `empty` and the first on each `q_empty` pass at once, with no test for "first".
template <class C, class T>
__device__ __forceinline__ void produce_tiles(const Smem<C>& sm, const CUtensorMap* tmQ, const CUtensorMap* tmK,
                                              const CUtensorMap* tmV, const Args<T>& a, unsigned int* counter,
                                              int tiles) {
  constexpr int D = C::kD, E = C::kElemBytes;
  sm90::setmaxnreg_dec<C::kProducerRegs>();
  if (threadIdx.x >= 32) return;
  const bool issuer = threadIdx.x == 0;
  int tile = int(blockIdx.x);
  uint32_t use = 0;     // the stages' uses so far, modulo 2·kStages
  uint32_t phases = 0;  // q_landed's parity (kQLanded), v_landed's (kVLanded), then the tiles so far
  constexpr uint32_t kQLanded = 1, kVLanded = 2, kTile = 4;
  for (;; phases += kTile) {
    // The next tile, drawn now: the atomic's round trip to L2 runs under this tile's loads. Each block
    // draws once per tile after its first and once more to learn it is done: the counter ends at `tiles`.
    uint32_t next = 0;
    if (issuer && tile < tiles) next = gridDim.x + atomicAdd(counter, 1u);
    next = __shfl_sync(0xffffffffu, next, 0);
    // The tile's Q buffer and its slot are free once every consumer warp has finished the S products
    // of the tile that had them before (kQBuffers tiles back).
    const int b = Smem<C>::buffer_of(phases / kTile);
    sm90::mbarrier_wait_parity(sm.q_empty(b), Smem<C>::phase_of(phases / kTile) ^ 1);
    if (tile >= tiles) {
      if (issuer) {
        sm.tile[b] = -1;
        sm90::mbarrier_arrive(sm.q_full_of(b));  // the phase completes on this arrival alone: no bytes
      }
      return;
    }
    const TileRows t = tile_rows(a, C::kBr, tile);
    const Sequence& s = t.s;
    const int n_blocks = int(key_blocks(s, C::kBr, C::kBc, a.causal));  // < Nk / 64 < 2^31
    const int last = n_blocks - 1;
    const int q_from = n_blocks > 0 ? first_foreign_row(s.q0, C::kBr, s.nq, t.q_row, a.seq_q) : C::kBr;
    const int v_from =
        n_blocks > 0 ? first_foreign_row(int64_t(last) * C::kBc, C::kBc, s.nk, t.kv_row, a.seq_k) : C::kBc;
    if (issuer) {
      sm.tile[b] = tile;  // before the arrival on q_full (or, zeroed, the warp's) that publishes it
      if (n_blocks == 0) {
        sm90::mbarrier_arrive(sm.q_full_of(b));  // nothing to read: the index alone, its rows get zeros
      } else {
        uint64_t* q_bar = q_from < C::kBr ? sm.q_landed : sm.q_full_of(b);
        sm90::mbarrier_arrive_expect_tx(q_bar, C::kQBytes);
        load_tile<D, E>(sm.q_buffer(b), tmQ, C::kBr, t.q_row + s.q0, t.q_plane, q_bar);
      }
    }
    if (q_from < C::kBr) {
      ws::zero_and_publish<D, E>(sm.q_buffer(b), C::kBr, q_from, sm.q_landed, sm.q_full_of(b),
                                 (phases & kQLanded) != 0);
      phases ^= kQLanded;
    }
    if (issuer)
      for (int j = 0; j < n_blocks; ++j) {
        // Use u of the stages needs use u − kStages released by every consumer warp (the phase of the
        // opposite parity): that may be a block of the previous tile, whose consumers are still on it.
        // The wait's acquire orders their tensor cores' reads before the TMA writes below.
        const uint32_t u = use + uint32_t(j);
        const int st = ws::Smem<C>::stage_of(u);
        sm90::mbarrier_wait_parity(&sm.empty[st], ws::Smem<C>::parity_of(u) ^ 1);
        // K_j, then V_j (on v_landed when its rows past the sequence's end are to be zeroed).
        unsigned char* sK = sm.k_tile(u);
        uint64_t* v_bar = j == last && v_from < C::kBc ? sm.v_landed : &sm.full_v[st];
        const int32_t row = t.kv_row + j * C::kBc;  // below the plane's rows: an int32 coordinate
        sm90::mbarrier_arrive_expect_tx(&sm.full_k[st], C::kKVBytes);
        load_tile<D, E>(sK, tmK, C::kBc, row, t.kv_plane, &sm.full_k[st]);
        sm90::mbarrier_arrive_expect_tx(v_bar, C::kKVBytes);
        load_tile<D, E>(sK + C::kKVBytes, tmV, C::kBc, row, t.kv_plane, v_bar);
      }
    if (v_from < C::kBc) {
      const uint32_t u = use + uint32_t(last);
      ws::zero_and_publish<D, E>(sm.k_tile(u) + C::kKVBytes, C::kBc, v_from, sm.v_landed,
                                 &sm.full_v[ws::Smem<C>::stage_of(u)], (phases & kVLanded) != 0);
      phases ^= kVLanded;
    }
    use = next_use<C>(use, n_blocks);
    tile = next < uint32_t(tiles) ? int(next) : tiles;  // past the last: `tiles` (next may not fit an int)
  }
}

// grid: at most one persistent block per SM (and per tile) of 1 + C::kConsumers warpgroups, over `tiles`
// = B·H·ceil(Nq / Br) query tiles (attn::locate, Br = 192 or 128). tmQ: Q as [B][H][Nq][D] with boxes of
// 64 columns × Br rows; tmK, tmV: K and V as [B][KVH][Nk][D], boxes of 64 × Bc (launch.cuh). counter: 0
// at the launch; the tiles after the grid's first gridDim.x are handed out by it.
template <class T, class C>
__global__ void __launch_bounds__(C::kThreads, 1)
    flash_tma_v11_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                         const __grid_constant__ CUtensorMap tmV, const Args<T> a, unsigned int* counter,
                         int tiles) {
  extern __shared__ unsigned char smem_raw[];
  const Smem<C> sm(smem_raw);
  const int wg = ws::warpgroup();

  if (threadIdx.x == 0) sm.init_barriers();
  __syncthreads();  // the barriers are initialized; from here on the warpgroups meet only through them
  if (wg == 0) {
    produce_tiles(sm, &tmQ, &tmK, &tmV, a, counter, tiles);
    return;
  }

  sm90::setmaxnreg_inc<C::kConsumerRegs>();
  uint32_t use = 0;  // the stages' uses of the earlier tiles modulo 2·kStages, as the producer counts them
  for (uint32_t n = 0;; ++n) {  // the block's n-th tile: Q buffer b, that buffer's phase q_parity
    const int b = Smem<C>::buffer_of(n);
    const uint32_t q_parity = Smem<C>::phase_of(n);
    sm90::mbarrier_wait_parity(sm.q_full_of(b), q_parity);  // the tile's index and (if it has key blocks) Q
    // Lane 0 alone reads the slot and hands the index to its warp: the arrival on q_empty that lets the
    // producer write the slot again is lane 0's (release_q), so the read and the arrival are one thread's,
    // in program order. (Every lane reading, then __syncwarp before lane 0's arrival, is ordered too under
    // the PTX model, bar.warp.sync before a cumulative release, but racecheck reported it: NOTES.md.)
    int tile = 0;
    if (threadIdx.x % 32 == 0) tile = *static_cast<volatile int32_t*>(&sm.tile[b]);
    tile = __shfl_sync(0xffffffffu, tile, 0);
    if (tile < 0) break;
    const Sequence s = tile_rows(a, C::kBr, tile).s;  // the producer's decode: the same key blocks
    const int64_t n_blocks = key_blocks(s, C::kBr, C::kBc, a.causal);
    Consumer<T, C, /*kSlice=*/false, /*kRunOn=*/true> w(a, s, sm, wg - 1);
    w.use0 = use;
    w.q_parity = q_parity;
    w.q_full = sm.q_full_of(b);
    w.q_empty = sm.q_empty(b);
    w.q_addr = sm90::smem_address(sm.q_buffer(b));
    // v7's rounds (v3's). The warp hands its Q buffer back (release_q) as soon as its last S has
    // completed, inside first() or finish() (the slot was read above), so that a later tile's Q can load
    // there; a warp whose rows need no key block hands it back at once.
    ws::run_rounds(w, sm, n_blocks);
    w.store();
    use = next_use<C>(use, n_blocks);
  }
}

}  // namespace fs::flash_tma::v11
