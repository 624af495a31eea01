// flashstages — the sm_90a PTX instructions the Hopper kernels (stage 07) are built from, one wrapper
// each, named after the instruction, in the style of sm80.cuh. Each comment says what the instruction
// does in plain loop terms. Code that includes this header must be compiled for sm_90a: wgmma exists
// on no other architecture (not even sm_100), and the stage 07 object library is built for 90a alone.
//
//   mbarrier_init               mbarrier.init.shared::cta.b64                 a barrier expecting `count` arrivals
//   fence_mbarrier_init         fence.mbarrier_init.release.cluster           the inits, visible to the async proxy (TMA)
//   mbarrier_arrive             mbarrier.arrive.shared::cta.b64               one arrival
//   mbarrier_arrive_expect_tx   mbarrier.arrive.expect_tx.shared::cta.b64     one arrival, and "wait for N more bytes too"
//   mbarrier_try_wait_parity    mbarrier.try_wait.parity.shared::cta.b64      has the phase of this parity completed?
//   mbarrier_wait_parity        a loop around try_wait: until it has
//   fence_proxy_async           fence.proxy.async.shared::cta                 plain stores to shared memory, visible to TMA/wgmma
//   fence_proxy_async_global    fence.proxy.async.global                      global memory: the async proxy's writes and the generic ones, ordered
//   tma_load_2d                 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
//                               one box of a 2D tensor, global → shared, counted on an mbarrier
//   tma_load_2d_multicast       the same ….multicast::cluster: one read of the box, written to several blocks of the cluster
//   tma_load_4d                 cp.async.bulk.tensor.4d…: one box of a 4D tensor (attention: [B][H][rows][D], any strides)
//   tma_store_2d                cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group   one box, shared → global
//   cp_async_bulk_commit_group  cp.async.bulk.commit_group                    close a group of those stores
//   cp_async_bulk_wait_group_read<N>  cp.async.bulk.wait_group.read N         until they have read their shared source
//   cp_async_bulk_wait_group<N> cp.async.bulk.wait_group N                    until they have completed, writes and all
//   bulk_reduce_add_f32         cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32   dst[i] += src[i], shared → global
//   cluster_ctarank             mov.u32 %cluster_ctarank                      this block's rank in its cluster
//   mapa_shared_cluster         mapa.shared::cluster.u32                      the address of the same shared variable in another block
//   mbarrier_arrive_cluster     mbarrier.arrive.shared::cluster.b64           one arrival on another block's barrier
//   barrier_cluster_arrive      barrier.cluster.arrive.release                \ together: __syncthreads for every thread of
//   barrier_cluster_wait        barrier.cluster.wait.acquire                  / every block of the cluster
//   wgmma_fence                 wgmma.fence.sync.aligned                      accumulators settled before wgmma reads them
//   wgmma_commit_group          wgmma.commit_group.sync.aligned               close a group of wgmma.mma_async
//   wgmma_wait_group<N>         wgmma.wait_group.sync.aligned N               wait until at most N groups are in flight
//   wgmma_m64nNk16<N, T, ...>   wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}.{f16,bf16}   D (64×N) += A·B
//   wgmma_m64nNk16_rs<N, T, …>  the same with A from registers (attention: P, the softmax's output)
//   wgmma_m64nNk32_s8<N>        wgmma.mma_async.sync.aligned.m64nNk32.s32.s8.s8   D (64×N, int32) += A·B, int8 in
//   wgmma_m64nNk32_e4m3<N>      wgmma.mma_async.sync.aligned.m64nNk32.f32.e4m3.e4m3   D (64×N) += A·B, fp8 in
//   wgmma_m64nNk32_e4m3_rs<N>   the same with A from registers (attention v9: P in fp8)
//   matrix_descriptor_sw128     the 64-bit shared-memory matrix descriptor wgmma reads A and B through
//   matrix_descriptor_advance   the same descriptor, its start address moved on (a helper: one integer add)
//   wgmma_fence_operand         no instruction: keeps the compiler from moving accumulator reads across a wait
//                               (and keeps wgmma_m64nNk16_rs's A registers live until it)
//   stmatrix_x4                 stmatrix.sync.aligned.m8n8.x4.shared.b16      four 8×8 16-bit matrices, registers → shared
//   stmatrix_x4_trans           stmatrix….x4.trans.shared.b16                 the same, each matrix stored transposed
//   bar_sync                    bar.sync id, n                                __syncthreads for n threads of the block
//   bar_arrive                  bar.arrive id, n                              the same barrier, arrived at without waiting
//   setmaxnreg_dec<N>           setmaxnreg.dec.sync.aligned.u32 N             this warpgroup gives registers back: N per thread
//   setmaxnreg_inc<N>           setmaxnreg.inc.sync.aligned.u32 N             this warpgroup takes registers: N per thread
//
// Why hand-written PTX rather than CCCL's cuda::ptx. The CUDA Toolkit's libcu++ wraps the mbarrier,
// fence, cp.async.bulk.tensor and cluster instructions above (cuda::ptx::mbarrier_init,
// mbarrier_arrive_expect_tx, mbarrier_try_wait_parity, fence_proxy_async, fence_mbarrier_init,
// cp_async_bulk_tensor, barrier_cluster_arrive, get_sreg_cluster_ctarank, in <cuda/ptx>); it has no
// wgmma, and no mapa (cooperative_groups' cluster_group::map_shared_rank is its generic-address form). Each wrapper below names its cuda::ptx counterpart. They emit the
// same single instruction, so there is no speed difference to measure (the 20% fast.cu reports is
// against cuda::barrier, the C++ barrier object with its own arrival protocol, which nothing here
// uses). This header writes the PTX out anyway: (1) the instruction string is the lesson, next to
// the wgmma ones that must be hand-written regardless; (2) the project builds with CUDA 12.5 and
// newer, and which cuda::ptx overloads exist moves with the toolkit (the shared::cta form of
// cp.async.bulk.tensor, for one, needs PTX ISA 8.6, CUDA 12.8); raw PTX of ISA 8.0 compiles the same
// everywhere from 12.0 on.
//
// The proxies. TMA and wgmma reach shared memory through the "async proxy", ordinary loads and
// stores through the "generic proxy"; the two are ordered only by an mbarrier completion or a
// fence.proxy.async. In the stage 07 kernels the operand tiles are written only by TMA and read only
// by wgmma, and each tile's mbarrier completion orders the two, so the fence they need is the one after
// mbarrier.init (a generic write the TMA unit must see). Gemm v7 adds the other direction: its
// threads write C's tile with stmatrix (generic) and a TMA store reads it (async), with a
// fence.proxy.async between.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "common/device/sm80.cuh"

namespace fs::sm90 {

using sm80::smem_address;

// ---- mbarrier: a counter of arrivals and of bytes, with a phase bit ------------------------------
// A barrier object is 8 bytes of shared memory. Its current phase completes when `count` arrivals
// have been made and every byte announced by expect_tx has landed (complete_tx, from TMA); then the
// phase bit flips and the counts reset for the next phase. Waiting is by phase parity: phase 0, 2, 4 …
// has parity 0, phase 1, 3, 5 … parity 1. In loop terms, for a barrier guarding a buffer that is
// filled again and again:
//   for (use = 0; ; ++use) { wait until phase `use` completed, i.e. try_wait.parity(use & 1) is true; … }

// Initializes the barrier for `count` arrivals per phase (phase 0, nothing arrived). One thread does
// it, before any other thread touches the barrier. cuda::ptx::mbarrier_init.
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_address(bar)), "r"(count) : "memory");
}

// Orders this thread's earlier mbarrier.init before later operations of the async proxy, so a TMA
// load that signals the barrier finds it initialized (a __syncthreads() then publishes it to the
// other threads; a cluster barrier to the other blocks of a cluster, and to their TMA multicasts:
// hence .cluster). cuda::ptx::fence_mbarrier_init.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
}

// One arrival: `arrived += 1`, and if that completes the phase (and no bytes are pending) the phase
// flips. Release semantics: this thread's earlier memory operations are visible to whoever waits on
// the phase. The barrier's state before the arrival is returned by the instruction and dropped here.
// cuda::ptx::mbarrier_arrive.
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile(
      "{\n"
      ".reg .b64 state;\n"
      "mbarrier.arrive.shared::cta.b64 state, [%0];\n"
      "}\n" ::"r"(smem_address(bar))
      : "memory");
}

// One arrival that also announces `bytes` more bytes to wait for: `pending_bytes += bytes; arrived += 1`.
// The phase cannot complete until the TMA copies naming this barrier have delivered those bytes
// (each decrements pending_bytes as its data lands). Issued before the copies it announces.
// cuda::ptx::mbarrier_arrive_expect_tx.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile(
      "{\n"
      ".reg .b64 state;\n"
      "mbarrier.arrive.expect_tx.shared::cta.b64 state, [%0], %1;\n"
      "}\n" ::"r"(smem_address(bar)),
      "r"(bytes)
      : "memory");
}

// Whether the phase of parity `parity` has completed: true once the barrier's current phase has moved
// past it. The hardware may suspend the thread a while before answering false, so a loop around it
// does not burn issue slots. Acquire semantics: once it returns true, every write the phase made
// visible (the TMA'd bytes, the arriving threads' stores) can be read. cuda::ptx::mbarrier_try_wait_parity.
__device__ __forceinline__ bool mbarrier_try_wait_parity(uint64_t* bar, uint32_t parity) {
  uint32_t done;
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
      "selp.u32 %0, 1, 0, p;\n"
      "}\n"
      : "=r"(done)
      : "r"(smem_address(bar)), "r"(parity)
      : "memory");
  return done != 0;
}

// `while (!phase_completed(parity)) {}`.
__device__ __forceinline__ void mbarrier_wait_parity(uint64_t* bar, uint32_t parity) {
  while (!mbarrier_try_wait_parity(bar, parity)) {
  }
}

// Makes this thread's earlier plain (generic-proxy) shared-memory writes visible to later async-proxy
// operations (TMA, wgmma) — the fence a kernel needs when it writes a tile itself and then hands it to
// wgmma. cuda::ptx::fence_proxy_async(cuda::ptx::space_shared).
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// The same fence for global memory: this thread's accesses through the generic proxy (loads, stores, a
// release or an acquire) and those of its bulk copies and reductions (the async proxy) ordered with each
// other. Between a completed bulk reduction and the release that announces it, and between the acquire
// that learns of another block's and the bulk reduction that must follow it.
// cuda::ptx::fence_proxy_async(cuda::ptx::space_global).
__device__ __forceinline__ void fence_proxy_async_global() { asm volatile("fence.proxy.async.global;\n" ::: "memory"); }

// ---- TMA: the Tensor Memory Accelerator ----------------------------------------------------------
// Copies one box of a 2D tensor from global to shared memory. `tensor_map` (a CUtensorMap in
// parameter, constant or global memory; a __grid_constant__ kernel parameter here) holds the tensor's
// base address, its two extents and its row stride, the box size, and the swizzle. (c0, c1) is the
// box's first element: c0 along the contiguous dimension, c1 the row. In loop terms, with the box
// (box0 × box1) and the tensor (dim0 × dim1, row stride ld):
//   for (r < box1) for (c < box0)
//     dst[swizzle(r * box0 + c)] = (c1 + r < dim1 && c0 + c < dim0) ? src[(c1 + r) * ld + c0 + c] : 0;
//   pending_bytes(bar) -= box0 * box1 * sizeof(element);   // always the whole box, zeros included
// done by one thread's one instruction, asynchronously: the issuing thread goes on at once, and the
// barrier tells everyone when the bytes have landed. Elements outside the tensor read nothing and
// arrive as zeros, which is how a kernel's tails in M, N and K cost no code. The destination must be
// 128-byte aligned (1024 for the 128-byte swizzle to start its pattern at row 0, as the wgmma
// descriptors below assume). The .shared::cluster destination of this (PTX ISA 8.0) form is this
// block's own shared memory when the kernel is not launched as a cluster.
// cuda::ptx::cp_async_bulk_tensor(space_cluster, space_global, …).
__device__ __forceinline__ void tma_load_2d(void* dst, const void* tensor_map, int32_t c0, int32_t c1, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::
          "r"(smem_address(dst)),
      "l"(reinterpret_cast<uint64_t>(tensor_map)), "r"(c0), "r"(c1), "r"(smem_address(bar))
      : "memory");
}

// tma_load_2d, multicast: the box is read from global memory (L2) once and written to the same
// shared-memory offset `dst` in every block of the cluster whose bit is set in `cta_mask` (bit r:
// the block of rank r, this one included if its bit is set), and in each of them it counts down
// the mbarrier at the same offset as `bar`. In loop terms, next to tma_load_2d's:
//   box = read_box(tensor_map, c0, c1);                    // once
//   for (r < cluster size) if (cta_mask >> r & 1) {
//     block(r).dst[…] = box;  pending_bytes(block(r).bar) -= box bytes;
//   }
// Every receiving block must therefore expect these bytes on its own barrier (its expect_tx counts
// them), and must have the destination free: the issuer has to know that all of them are done
// reading it. cuda::ptx::cp_async_bulk_tensor(space_cluster, space_global, …, ctaMask).
__device__ __forceinline__ void tma_load_2d_multicast(void* dst, const void* tensor_map, int32_t c0, int32_t c1,
                                                      uint64_t* bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(smem_address(dst)),
      "l"(reinterpret_cast<uint64_t>(tensor_map)), "r"(c0), "r"(c1), "r"(smem_address(bar)), "h"(cta_mask)
      : "memory");
}

// tma_load_2d two dimensions up: the box's first element is (c0, c1, c2, c3), c2 and c3 selecting a
// plane of the tensor by two coordinates, each with a stride of its own (the stage 07 attention maps:
// c0 along D, c1 a row of one head's sequence, c2 the head, c3 the batch entry; TensorMap4d). In loop
// terms
//   for (r < box1) for (c < box0)
//     dst[swizzle(r * box0 + c)] = (c3 < dim3 && c2 < dim2 && c1 + r < dim1 && c0 + c < dim0)
//                                  ? src[c3 * ld3 + c2 * ld2 + (c1 + r) * ld1 + c0 + c] : 0;
// so a box that runs past a plane's last row is zero-filled there instead of reading the next plane,
// whatever order the strides come in: a tile of keys past the end of one head's sequence reads zeros,
// not the next head's keys.
// cuda::ptx::cp_async_bulk_tensor(space_cluster, space_global, …) with four coordinates.
__device__ __forceinline__ void tma_load_4d(void* dst, const void* tensor_map, int32_t c0, int32_t c1, int32_t c2,
                                            int32_t c3, uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], "
      "[%6];\n" ::"r"(smem_address(dst)),
      "l"(reinterpret_cast<uint64_t>(tensor_map)), "r"(c0), "r"(c1), "r"(c2), "r"(c3), "r"(smem_address(bar))
      : "memory");
}

// The other direction: one box of shared memory (laid out as tma_load_2d writes it, the same swizzle)
// copied into the 2D tensor, element (c0, c1) first. In loop terms
//   for (r < box1) for (c < box0)
//     if (c1 + r < dim1 && c0 + c < dim0) dst[(c1 + r) * ld + c0 + c] = src[swizzle(r * box0 + c)];
// so the parts of a box outside the tensor are not written (a tile's tails in M and N cost no code
// here either, and a box wholly outside writes nothing). One thread issues it and goes on; the copy
// belongs to that thread's current "bulk group" (cp_async_bulk_commit_group closes it), and the
// thread learns from cp_async_bulk_wait_group_read when the copy has read the shared memory, which
// may then be written again. The shared-memory writes it copies must be visible to the async proxy
// first: fence_proxy_async by every writing thread, then a barrier before the issuing thread goes.
// cuda::ptx::cp_async_bulk_tensor(space_global, space_shared, …).
__device__ __forceinline__ void tma_store_2d(const void* tensor_map, int32_t c0, int32_t c1, const void* src) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                   reinterpret_cast<uint64_t>(tensor_map)),
               "r"(c0), "r"(c1), "r"(smem_address(src))
               : "memory");
}

// Closes this thread's bulk copies issued since the last commit (tma_store_2d) into one bulk group.
// cuda::ptx::cp_async_bulk_commit_group.
__device__ __forceinline__ void cp_async_bulk_commit_group() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }

// Waits until at most N of this thread's committed bulk groups are still reading their shared-memory
// sources (.read: the writes to global memory may still be under way; they need no waiting for, as
// they complete before the kernel is seen to finish). cuda::ptx::cp_async_bulk_wait_group_read.
template <int N>
__device__ __forceinline__ void cp_async_bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}

// The same wait, until the groups have completed: their writes to global memory performed, and visible
// to this thread. What a thread needs before it tells another block (a release at GPU scope) that the
// data is there. cuda::ptx::cp_async_bulk_wait_group.
template <int N>
__device__ __forceinline__ void cp_async_bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}

// `bytes` bytes of fp32 in shared memory added element by element into global memory, in L2: in loop terms
//   for (i < bytes / 4) atomicAdd(&dst[i], src[i]);
// as one instruction of one thread, a member of its bulk group as tma_store_2d's copies are (the same
// commit, the same waits; the shared source must be visible to the async proxy first). Each element's
// add is atomic, so blocks may add into the same rows at once; the order of their adds is not fixed.
// dst and src 16-byte aligned, bytes a multiple of 16. cuda::ptx::cp_reduce_async_bulk(space_global,
// space_shared, op_add, …).
__device__ __forceinline__ void bulk_reduce_add_f32(float* dst, const void* src, uint32_t bytes) {
  asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;\n" ::"l"(dst),
               "r"(smem_address(src)), "r"(bytes)
               : "memory");
}

// ---- clusters: blocks that run at once on neighbouring SMs and reach each other's shared memory --
// A kernel launched with a cluster shape (__cluster_dims__, or the launch attribute) runs its blocks
// in groups that the hardware starts together, on SMs of one GPC. The blocks of a cluster can address
// each other's shared memory (the .shared::cluster space: every block's shared memory at its own
// window) and arrive on each other's mbarriers; barrier.cluster is their __syncthreads.

// This block's rank in its cluster, 0 .. cluster size − 1 (for a 1D cluster of n along x, blockIdx.x % n).
// cuda::ptx::get_sreg_cluster_ctarank; cooperative_groups::this_cluster().block_rank().
__device__ __forceinline__ uint32_t cluster_ctarank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
  return rank;
}

// The .shared::cluster address of the variable at `p` in this block's shared memory as it lies in
// block `rank`'s: the same offset, in that block's window. In loop terms
// `return window(rank) + (smem_address(p) − window(this block))`. The result is for instructions
// that take a .shared::cluster address (mbarrier_arrive_cluster), not a pointer to dereference.
// No cuda::ptx wrapper; cooperative_groups::this_cluster().map_shared_rank(p, rank) returns the
// generic-address form.
__device__ __forceinline__ uint32_t mapa_shared_cluster(const void* p, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(smem_address(p)), "r"(rank));
  return remote;
}

// One arrival on an mbarrier of any block of the cluster (`remote_bar` from mapa_shared_cluster):
// mbarrier_arrive's `arrived += 1` on that block's barrier. The default semantics (.release.cta), as
// CUTLASS's ClusterBarrier::arrive(cta_id) issues it: enough for a consumer's release of a stage whose
// reads were the tensor cores' (complete at its wgmma.wait_group) and whose next writer is the other
// block's TMA. The .release.cluster form orders every earlier memory access of the thread at cluster
// scope, and costs it: ptxas put a MEMBAR, an L1 invalidate and an error barrier before each arrival, and
// in stage 07 gemm v5 those stalls took 44% of the warps' samples and half its speed (ncu, H100,
// results/nvidia-h100-80gb-hbm3/logs/ncu_stage07_gemm_v5_4096_2026-11-23.txt). The state is not
// returned (`_`): it belongs to the other block. cuda::ptx::mbarrier_arrive(…, space_cluster, …).
__device__ __forceinline__ void mbarrier_arrive_cluster(uint32_t remote_bar) {
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote_bar) : "memory");
}

// The cluster-wide barrier, in two halves: every thread of every block of the cluster arrives, then
// waits until all (that have not exited) have arrived. In loop terms, `arrive` then `wait` is
//   __syncthreads(), over every thread of the cluster instead of the block's.
// The arrive releases this thread's earlier writes (an mbarrier.init, a remote arrival), the wait
// acquires everyone's. Between the two a thread may do work that needs no one (not used here). The
// plain (not .aligned) forms: the threads of a warp need not reach them converged.
// cuda::ptx::barrier_cluster_arrive(sem_release) and barrier_cluster_wait(sem_acquire);
// cooperative_groups::this_cluster().sync() does both.
__device__ __forceinline__ void barrier_cluster_arrive() { asm volatile("barrier.cluster.arrive.release;\n" ::: "memory"); }

__device__ __forceinline__ void barrier_cluster_wait() { asm volatile("barrier.cluster.wait.acquire;\n" ::: "memory"); }

// ---- wgmma: warpgroup matrix multiply-accumulate --------------------------------------------------
// A warpgroup is 4 consecutive warps (128 threads, the first warp's index a multiple of 4). Together
// they issue one wgmma.mma_async: a 64×N×16 product whose A and B tiles are read from shared memory
// by the tensor cores themselves (no ldmatrix, no fragments in registers) and whose 64×N fp32
// accumulator is spread over the 128 threads' registers. The instruction is asynchronous, and three
// companions order it:
//   wgmma_fence();                 // before the first wgmma of a batch: earlier register writes settled
//   wgmma_m64nNk16(...) × n;       // issued, not finished
//   wgmma_commit_group();          // the batch so far becomes one group
//   wgmma_wait_group<0>();         // until every group has finished (<1>: all but the newest)
// Only after the wait may the accumulators be read, or the shared tiles the batch read be overwritten.

// Accumulator registers that wgmma writes asynchronously: the asm statements below are ordered among
// themselves, but an ordinary read of an accumulator (the epilogue) could be scheduled by the compiler
// between a wgmma and its wait. This empty asm "rewrites" every register after the wait, so no read
// can move above it. No instruction is emitted.
template <int R>
__device__ __forceinline__ void wgmma_fence_operand(float (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}
// The same for int32 accumulators (wgmma_m64nNk32_s8).
template <int R>
__device__ __forceinline__ void wgmma_fence_operand(int32_t (&d)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+r"(d[i])::"memory");
}

// The same for the A fragments of wgmma_m64nNk16_rs, which must stay unchanged until the wgmma that
// reads them has completed: "rewritten" after the wait, they are live through it, so the compiler
// cannot hand their registers to anything else while the tensor cores may still read them.
template <int R>
__device__ __forceinline__ void wgmma_fence_operand(uint32_t (&a)[R]) {
#pragma unroll
  for (int i = 0; i < R; ++i) asm volatile("" : "+r"(a[i])::"memory");
}

// All earlier writes of the warpgroup's registers (accumulators included) are done before any later
// wgmma.mma_async reads them. Required before the first wgmma of a batch.
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }

// Closes the wgmma.mma_async issued since the last commit into one group.
__device__ __forceinline__ void wgmma_commit_group() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }

// Waits until at most N committed groups are still in flight.
template <int N>
__device__ __forceinline__ void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

// The shared-memory matrix descriptor: where a 64×16 (A) or N×16 (B) operand tile lies and how it
// is laid out. 64 bits, every byte quantity in units of 16 bytes (the low 4 bits dropped):
//   bits  0–13  start address >> 4        (shared addresses < 256 KiB: 14 bits are enough)
//   bits 14–15  0
//   bits 16–29  leading-dimension byte offset (LBO) >> 4
//   bits 30–31  0
//   bits 32–45  stride-dimension byte offset (SBO) >> 4
//   bits 46–48  0
//   bits 49–51  base offset: 0, because every tile starts on a 1024-byte boundary, where the
//               128-byte swizzle pattern starts (otherwise (pattern start >> 7) & 7)
//   bits 52–61  0
//   bits 62–63  swizzle: 1 = 128-byte (0 none, 2 64-byte, 3 32-byte)
// With the 128-byte swizzle the tile is made of "atoms" of 8 rows × 128 bytes (1024 bytes), a row
// being 64 16-bit elements along the tile's contiguous dimension, 16-byte chunk c of row r stored at
// chunk c ^ (r % 8): exactly what a TMA load with CU_TENSOR_MAP_SWIZZLE_128B writes. The two offsets
// say where the atoms are:
//   K-major tile (k contiguous: A untransposed, B transposed): rows are m (or n), 128 bytes = 64 k.
//     SBO = bytes from rows 0–7 to rows 8–15 (1024 for 128-byte rows); LBO is not used (the 16 k of
//     one instruction are 32 bytes of a row) and is set to 16 bytes, the value the PTX ISA assumes.
//   MN-major tile (m or n contiguous: A transposed, B untransposed): rows are k, 128 bytes = 64 m (n).
//     SBO = bytes from k rows 0–7 to k rows 8–15 (1024); LBO = bytes from m (n) 0–63 to 64–127, the
//     next 64-wide panel.
// Moving along k within a tile is moving the start address: +32 bytes per 16 k (K-major, inside the
// 128-byte row; the hardware applies the XOR to the address it computes, so the row's swizzle stays
// right), +2048 bytes per 16 k (MN-major: two atoms of 8 k rows).
__device__ __forceinline__ uint64_t matrix_descriptor_sw128(uint32_t start, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  auto encode = [](uint32_t x) { return uint64_t((x & 0x3FFFF) >> 4); };
  return encode(start) | encode(lbo_bytes) << 16 | encode(sbo_bytes) << 32 | uint64_t(1) << 62;
}

// The same descriptor with its start address `bytes` further on (a multiple of 16): the next k slice
// or the next panel of a tile whose descriptor was built once. Shared addresses stay below 256 KiB, so
// the start field (bits 0–13, the address >> 4) never carries into bit 14: one 32-bit add of the low
// word is the whole update. In a kernel's inner loop this is one IADD per wgmma where rebuilding the
// descriptor from the address costs five instructions (the mask, shift and OR of the encoding).
__device__ __forceinline__ uint64_t matrix_descriptor_advance(uint64_t desc, uint32_t bytes) {
  return (desc & 0xFFFFFFFF00000000ull) | uint32_t(uint32_t(desc) + (bytes >> 4));
}

// The accumulator registers of one m64nN instruction, spelled out for the asm statements below (an
// asm operand list cannot be written as a loop): 16 at a time, and 8 for the n80 shape.
#define FS_SM90_D16(p)                                                                                           \
  "+f"((p)[0]), "+f"((p)[1]), "+f"((p)[2]), "+f"((p)[3]), "+f"((p)[4]), "+f"((p)[5]), "+f"((p)[6]), "+f"((p)[7]), \
      "+f"((p)[8]), "+f"((p)[9]), "+f"((p)[10]), "+f"((p)[11]), "+f"((p)[12]), "+f"((p)[13]), "+f"((p)[14]),     \
      "+f"((p)[15])
#define FS_SM90_D8(p) \
  "+f"((p)[0]), "+f"((p)[1]), "+f"((p)[2]), "+f"((p)[3]), "+f"((p)[4]), "+f"((p)[5]), "+f"((p)[6]), "+f"((p)[7])
#define FS_SM90_REGS_32                                                       \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define FS_SM90_REGS_40 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39}"
#define FS_SM90_REGS_64                                                               \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "         \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define FS_SM90_REGS_128                                                                        \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "                   \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "           \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "           \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "           \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "           \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "           \
  "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
  "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define FS_SM90_REGS_96 \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
  "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
  "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
  "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
  "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
  "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95}"
// One instruction: the accumulator list, then A's and B's descriptors, scale-d (a predicate made from
// `accumulate`), scale-a = scale-b = 1 (no negation), and the two transpose immediates.
// FS_SM90_OPS_AFTER_n names the operand numbers of those five after n accumulators; FS_SM90_WGMMA
// passes its arguments on through one more macro so that this list is split into five first.
#define FS_SM90_WGMMA(...) FS_SM90_WGMMA_IMPL(__VA_ARGS__)
#define FS_SM90_WGMMA_IMPL(SHAPE, TYPE, REGS, DA, DB, SD, TA, TB, ...)                                       \
  asm volatile("{\n"                                                                                    \
               ".reg .pred p;\n"                                                                        \
               "setp.ne.b32 p, " SD ", 0;\n"                                                            \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE " " REGS ", " DA ", " DB        \
               ", p, 1, 1, " TA ", " TB ";\n"                                                            \
               "}\n"                                                                                    \
               : __VA_ARGS__                                                                            \
               : "l"(desc_a), "l"(desc_b), "r"(int32_t(accumulate)), "n"(int32_t(kTransA)),           \
                 "n"(int32_t(kTransB))                                                                  \
               : "memory")
#define FS_SM90_OPS_AFTER_32 "%32", "%33", "%34", "%35", "%36"
#define FS_SM90_OPS_AFTER_40 "%40", "%41", "%42", "%43", "%44"
#define FS_SM90_OPS_AFTER_64 "%64", "%65", "%66", "%67", "%68"
#define FS_SM90_OPS_AFTER_96 "%96", "%97", "%98", "%99", "%100"
#define FS_SM90_OPS_AFTER_128 "%128", "%129", "%130", "%131", "%132"

// D(64×N, fp32) = A(64×16)·B(16×N) + (accumulate ? D : 0), A and B read from shared memory through
// their descriptors, T = __half or __nv_bfloat16. In loop terms, for the 128 threads together:
//   for (m < 64) for (n < N) { float s = accumulate ? D[m][n] : 0; for (k < 16) s += A[m][k] * B[k][n]; D[m][n] = s; }
// kTransA = false: A's tile is K-major (A[m][k] at row m, element k); true: M-major (row k, element m).
// kTransB = false: B's tile is K-major (B[k][n] at row n, element k); true: N-major (row k, element n).
// (The PTX ISA's "transpose" is relative to K-major, cuBLAS's column-major view: a row-major B that is
// not transposed is N-major, kTransB = true.)
// D's layout over the warpgroup (the m16n8 accumulator layout of mma.sync, sm80.cuh, stacked): warp w
// owns rows 16w .. 16w+15; lane 4g+t of it holds, for each n8 block j = 0 .. N/8-1,
//   d[4j + 0], d[4j + 1] = D[16w + g][8j + 2t], D[16w + g][8j + 2t + 1]
//   d[4j + 2], d[4j + 3] = D[16w + g + 8][8j + 2t], D[16w + g + 8][8j + 2t + 1]
// N = 64, 80, 128, 192 or 256 here (any multiple of 8 up to 256 exists; these are the ones the kernels use).
template <int N, class T, bool kTransA, bool kTransB>
__device__ __forceinline__ void wgmma_m64nNk16(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b, bool accumulate) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "fp16 or bf16 operands");
  static_assert(N == 64 || N == 80 || N == 128 || N == 192 || N == 256,
                "m64n64k16, m64n80k16, m64n128k16, m64n192k16 or m64n256k16");
  constexpr bool kHalf = std::is_same_v<T, __half>;
  if constexpr (N == 64) {
    if constexpr (kHalf)
      FS_SM90_WGMMA("m64n64k16", "f16", FS_SM90_REGS_32, FS_SM90_OPS_AFTER_32, FS_SM90_D16(d), FS_SM90_D16(d + 16));
    else
      FS_SM90_WGMMA("m64n64k16", "bf16", FS_SM90_REGS_32, FS_SM90_OPS_AFTER_32, FS_SM90_D16(d), FS_SM90_D16(d + 16));
  } else if constexpr (N == 80) {
    if constexpr (kHalf)
      FS_SM90_WGMMA("m64n80k16", "f16", FS_SM90_REGS_40, FS_SM90_OPS_AFTER_40, FS_SM90_D16(d), FS_SM90_D16(d + 16),
                    FS_SM90_D8(d + 32));
    else
      FS_SM90_WGMMA("m64n80k16", "bf16", FS_SM90_REGS_40, FS_SM90_OPS_AFTER_40, FS_SM90_D16(d), FS_SM90_D16(d + 16),
                    FS_SM90_D8(d + 32));
  } else if constexpr (N == 128) {
    if constexpr (kHalf)
      FS_SM90_WGMMA("m64n128k16", "f16", FS_SM90_REGS_64, FS_SM90_OPS_AFTER_64, FS_SM90_D16(d), FS_SM90_D16(d + 16),
                    FS_SM90_D16(d + 32), FS_SM90_D16(d + 48));
    else
      FS_SM90_WGMMA("m64n128k16", "bf16", FS_SM90_REGS_64, FS_SM90_OPS_AFTER_64, FS_SM90_D16(d), FS_SM90_D16(d + 16),
                    FS_SM90_D16(d + 32), FS_SM90_D16(d + 48));
  } else if constexpr (N == 192) {
    if constexpr (kHalf)
      FS_SM90_WGMMA("m64n192k16", "f16", FS_SM90_REGS_96, FS_SM90_OPS_AFTER_96, FS_SM90_D16(d), FS_SM90_D16(d + 16),
                    FS_SM90_D16(d + 32), FS_SM90_D16(d + 48), FS_SM90_D16(d + 64), FS_SM90_D16(d + 80));
    else
      FS_SM90_WGMMA("m64n192k16", "bf16", FS_SM90_REGS_96, FS_SM90_OPS_AFTER_96, FS_SM90_D16(d), FS_SM90_D16(d + 16),
                    FS_SM90_D16(d + 32), FS_SM90_D16(d + 48), FS_SM90_D16(d + 64), FS_SM90_D16(d + 80));
  } else {
    if constexpr (kHalf)
      FS_SM90_WGMMA("m64n256k16", "f16", FS_SM90_REGS_128, FS_SM90_OPS_AFTER_128, FS_SM90_D16(d), FS_SM90_D16(d + 16),
                    FS_SM90_D16(d + 32), FS_SM90_D16(d + 48), FS_SM90_D16(d + 64), FS_SM90_D16(d + 80),
                    FS_SM90_D16(d + 96), FS_SM90_D16(d + 112));
    else
      FS_SM90_WGMMA("m64n256k16", "bf16", FS_SM90_REGS_128, FS_SM90_OPS_AFTER_128, FS_SM90_D16(d), FS_SM90_D16(d + 16),
                    FS_SM90_D16(d + 32), FS_SM90_D16(d + 48), FS_SM90_D16(d + 64), FS_SM90_D16(d + 80),
                    FS_SM90_D16(d + 96), FS_SM90_D16(d + 112));
  }
}

// The form with A in registers: four 32-bit registers per thread hold the thread's share of the
// 64×16 A tile, laid out as the A fragment of mma.sync.m16n8k16 (sm80.cuh) for the rows of its warp
// (warp w: rows 16w .. 16w+15; lane 4g+t: a[0] = A[16w+g][2t, 2t+1], a[1] = A[16w+g+8][2t, 2t+1],
// a[2] = A[16w+g][8+2t, 8+2t+1], a[3] = A[16w+g+8][8+2t, 8+2t+1], each a pair of T). That is the
// layout of two neighbouring n8 blocks of an accumulator (d[4j..4j+3], d[4j+4..4j+7]) once rounded to
// T, so a product's output can be the next product's A without a trip through shared memory: the
// attention forward's O += P·V with P = softmax(S) still in the registers S = Q·Kᵀ left it in.
// There is no transpose for A (registers are always "K-major"); B as in wgmma_m64nNk16. In loop terms
// it is wgmma_m64nNk16 with A read from the 128 threads' registers. The registers must not change
// until the wgmma has completed (wgmma_wait_group), as the accumulators.
#define FS_SM90_WGMMA_RS(...) FS_SM90_WGMMA_RS_IMPL(__VA_ARGS__)
#define FS_SM90_WGMMA_RS_IMPL(SHAPE, TYPE, REGS, A, DB, SD, TB, ...)                                         \
  asm volatile("{\n"                                                                                    \
               ".reg .pred p;\n"                                                                        \
               "setp.ne.b32 p, " SD ", 0;\n"                                                            \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE " " REGS ", " A ", " DB        \
               ", p, 1, 1, " TB ";\n"                                                                   \
               "}\n"                                                                                    \
               : __VA_ARGS__                                                                            \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int32_t(accumulate)),   \
                 "n"(int32_t(kTransB))                                                                  \
               : "memory")
#define FS_SM90_OPS_RS_AFTER_32 "{%32, %33, %34, %35}", "%36", "%37", "%38"
#define FS_SM90_OPS_RS_AFTER_64 "{%64, %65, %66, %67}", "%68", "%69", "%70"
#define FS_SM90_OPS_RS_AFTER_128 "{%128, %129, %130, %131}", "%132", "%133", "%134"

template <int N, class T, bool kTransB>
__device__ __forceinline__ void wgmma_m64nNk16_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                                  bool accumulate) {
  static_assert(std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>, "fp16 or bf16 operands");
  static_assert(N == 64 || N == 128 || N == 256, "m64n64k16, m64n128k16 or m64n256k16");
  constexpr bool kHalf = std::is_same_v<T, __half>;
  if constexpr (N == 64) {
    if constexpr (kHalf)
      FS_SM90_WGMMA_RS("m64n64k16", "f16", FS_SM90_REGS_32, FS_SM90_OPS_RS_AFTER_32, FS_SM90_D16(d), FS_SM90_D16(d + 16));
    else
      FS_SM90_WGMMA_RS("m64n64k16", "bf16", FS_SM90_REGS_32, FS_SM90_OPS_RS_AFTER_32, FS_SM90_D16(d),
                       FS_SM90_D16(d + 16));
  } else if constexpr (N == 128) {
    if constexpr (kHalf)
      FS_SM90_WGMMA_RS("m64n128k16", "f16", FS_SM90_REGS_64, FS_SM90_OPS_RS_AFTER_64, FS_SM90_D16(d),
                       FS_SM90_D16(d + 16), FS_SM90_D16(d + 32), FS_SM90_D16(d + 48));
    else
      FS_SM90_WGMMA_RS("m64n128k16", "bf16", FS_SM90_REGS_64, FS_SM90_OPS_RS_AFTER_64, FS_SM90_D16(d),
                       FS_SM90_D16(d + 16), FS_SM90_D16(d + 32), FS_SM90_D16(d + 48));
  } else {
    if constexpr (kHalf)
      FS_SM90_WGMMA_RS("m64n256k16", "f16", FS_SM90_REGS_128, FS_SM90_OPS_RS_AFTER_128, FS_SM90_D16(d),
                       FS_SM90_D16(d + 16), FS_SM90_D16(d + 32), FS_SM90_D16(d + 48), FS_SM90_D16(d + 64),
                       FS_SM90_D16(d + 80), FS_SM90_D16(d + 96), FS_SM90_D16(d + 112));
    else
      FS_SM90_WGMMA_RS("m64n256k16", "bf16", FS_SM90_REGS_128, FS_SM90_OPS_RS_AFTER_128, FS_SM90_D16(d),
                       FS_SM90_D16(d + 16), FS_SM90_D16(d + 32), FS_SM90_D16(d + 48), FS_SM90_D16(d + 64),
                       FS_SM90_D16(d + 80), FS_SM90_D16(d + 96), FS_SM90_D16(d + 112));
  }
}

// The integer form: int32 accumulators ("+r"), and after them only the descriptors and scale-d, for
// integer wgmma has neither scale-a/b (no negation of integers) nor transpose immediates.
#define FS_SM90_D16_S32(p)                                                                                       \
  "+r"((p)[0]), "+r"((p)[1]), "+r"((p)[2]), "+r"((p)[3]), "+r"((p)[4]), "+r"((p)[5]), "+r"((p)[6]), "+r"((p)[7]), \
      "+r"((p)[8]), "+r"((p)[9]), "+r"((p)[10]), "+r"((p)[11]), "+r"((p)[12]), "+r"((p)[13]), "+r"((p)[14]),     \
      "+r"((p)[15])
#define FS_SM90_WGMMA_S8(...) FS_SM90_WGMMA_S8_IMPL(__VA_ARGS__)
#define FS_SM90_WGMMA_S8_IMPL(SHAPE, REGS, DA, DB, SD, ...)                                            \
  asm volatile("{\n"                                                                              \
               ".reg .pred p;\n"                                                                  \
               "setp.ne.b32 p, " SD ", 0;\n"                                                      \
               "wgmma.mma_async.sync.aligned." SHAPE ".s32.s8.s8 " REGS ", " DA ", " DB ", p;\n"   \
               "}\n"                                                                              \
               : __VA_ARGS__                                                                      \
               : "l"(desc_a), "l"(desc_b), "r"(int32_t(accumulate))                               \
               : "memory")
#define FS_SM90_OPS_S8_AFTER_128 "%128", "%129", "%130"

// D(64×N, int32) = A(64×32)·B(32×N) + (accumulate ? D : 0), A and B signed 8-bit, read from shared
// memory through their descriptors. In loop terms, for the 128 threads together:
//   for (m < 64) for (n < N) {
//     int32_t s = accumulate ? D[m][n] : 0;
//     for (k < 32) s += int32_t(A[m][k]) * int32_t(B[k][n]);
//     D[m][n] = s;
//   }
// exactly, in integers (no .satfinite: a sum past the int32 range would wrap; with int8 inputs each
// product is at most 2^14 in size, so K up to 131071 cannot get there).
// Both tiles must be K-major: A[m][k] at row m, byte k; B[k][n] at row n, byte k. Integer wgmma has
// no transpose bits (they exist for 16-bit types only, whose transpose the hardware does on 16-bit
// elements), so an operand stored m- or n-contiguous must be rewritten before it can be read. Byte
// for byte a K-major int8 tile is a 16-bit one: 128-byte rows, the same 128-byte swizzle and
// descriptors, 32 bytes of k per instruction (here 32 int8, there 16 fp16), so the instruction does
// twice the multiply-adds of wgmma_m64nNk16 from the same shared-memory bytes, at the tensor cores'
// int8 rate, twice their fp16 one.
// D's layout over the warpgroup is wgmma_m64nNk16's, with int32 in place of fp32. N = 256 only: the
// one shape the kernel uses.
template <int N>
__device__ __forceinline__ void wgmma_m64nNk32_s8(int32_t (&d)[N / 2], uint64_t desc_a, uint64_t desc_b,
                                                  bool accumulate) {
  static_assert(N == 256, "m64n256k32");
  FS_SM90_WGMMA_S8("m64n256k32", FS_SM90_REGS_128, FS_SM90_OPS_S8_AFTER_128, FS_SM90_D16_S32(d),
                   FS_SM90_D16_S32(d + 16), FS_SM90_D16_S32(d + 32), FS_SM90_D16_S32(d + 48), FS_SM90_D16_S32(d + 64),
                   FS_SM90_D16_S32(d + 80), FS_SM90_D16_S32(d + 96), FS_SM90_D16_S32(d + 112));
}

// The fp8 forms: e4m3 A and B, fp32 accumulators. Like the integer form they have no transpose
// immediates (both tiles K-major), but keep scale-a and scale-b (1: no negation); A from shared memory
// through its descriptor, or (_rs) from four registers per thread.
#define FS_SM90_WGMMA_E4M3(...) FS_SM90_WGMMA_E4M3_IMPL(__VA_ARGS__)
#define FS_SM90_WGMMA_E4M3_IMPL(SHAPE, REGS, DA, DB, SD, ...)                                              \
  asm volatile("{\n"                                                                                  \
               ".reg .pred p;\n"                                                                      \
               "setp.ne.b32 p, " SD ", 0;\n"                                                          \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32.e4m3.e4m3 " REGS ", " DA ", " DB ", p, 1, 1;\n" \
               "}\n"                                                                                  \
               : __VA_ARGS__                                                                          \
               : "l"(desc_a), "l"(desc_b), "r"(int32_t(accumulate))                                   \
               : "memory")
#define FS_SM90_WGMMA_E4M3_RS(...) FS_SM90_WGMMA_E4M3_RS_IMPL(__VA_ARGS__)
#define FS_SM90_WGMMA_E4M3_RS_IMPL(SHAPE, REGS, A, DB, SD, ...)                                           \
  asm volatile("{\n"                                                                                  \
               ".reg .pred p;\n"                                                                      \
               "setp.ne.b32 p, " SD ", 0;\n"                                                          \
               "wgmma.mma_async.sync.aligned." SHAPE ".f32.e4m3.e4m3 " REGS ", " A ", " DB ", p, 1, 1;\n"  \
               "}\n"                                                                                  \
               : __VA_ARGS__                                                                          \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(int32_t(accumulate))     \
               : "memory")
#define FS_SM90_OPS_E4M3_AFTER_64 "%64", "%65", "%66"
#define FS_SM90_OPS_E4M3_RS_AFTER_64 "{%64, %65, %66, %67}", "%68", "%69"

// D(64×N, fp32) = A(64×32)·B(32×N) + (accumulate ? D : 0), A and B fp8 e4m3 (1 sign, 4 exponent, 3 mantissa
// bits), read from shared memory through their descriptors. In loop terms, for the 128 threads together:
//   for (m < 64) for (n < N) { float s = accumulate ? D[m][n] : 0; for (k < 32) s += A[m][k] * B[k][n]; D[m][n] = s; }
// at the tensor cores' fp8 rate, twice their fp16 one. As for int8, both tiles are K-major (A[m][k] at row m,
// byte k; B[k][n] at row n, byte k), and byte for byte they are 16-bit tiles: 128-byte rows of 128 k, the
// same swizzle and descriptors, 32 bytes of k per instruction. D's layout is wgmma_m64nNk16's. N = 128: the
// one shape the kernels use.
template <int N>
__device__ __forceinline__ void wgmma_m64nNk32_e4m3(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b,
                                                    bool accumulate) {
  static_assert(N == 128, "m64n128k32");
  FS_SM90_WGMMA_E4M3("m64n128k32", FS_SM90_REGS_64, FS_SM90_OPS_E4M3_AFTER_64, FS_SM90_D16(d), FS_SM90_D16(d + 16),
                     FS_SM90_D16(d + 32), FS_SM90_D16(d + 48));
}

// The same with A from registers: four 32-bit registers per thread, four e4m3 each, laid out as the A
// fragment of mma.sync.m16n8k32 for the rows of its warp (warp w: rows 16w .. 16w+15; lane 4g+t:
//   a[0] = A[16w+g][4t .. 4t+3],       a[1] = A[16w+g+8][4t .. 4t+3],
//   a[2] = A[16w+g][16+4t .. 16+4t+3], a[3] = A[16w+g+8][16+4t .. 16+4t+3], the lowest byte first).
// Unlike the 16-bit form this is not the accumulator's layout: there a thread holds columns 2t, 2t+1 of
// each 8-column block (wgmma_m64nNk16), so the 32 columns a thread's four accumulator blocks give it
// are 2t, 2t+1, 8+2t, 9+2t, 16+2t, … — a caller either moves bytes between lanes or, when k is a sum's
// index (attention's keys), lets a[·] hold its own columns and reorders B's rows to match.
template <int N>
__device__ __forceinline__ void wgmma_m64nNk32_e4m3_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t desc_b,
                                                       bool accumulate) {
  static_assert(N == 128, "m64n128k32");
  FS_SM90_WGMMA_E4M3_RS("m64n128k32", FS_SM90_REGS_64, FS_SM90_OPS_E4M3_RS_AFTER_64, FS_SM90_D16(d),
                        FS_SM90_D16(d + 16), FS_SM90_D16(d + 32), FS_SM90_D16(d + 48));
}

#undef FS_SM90_WGMMA
#undef FS_SM90_WGMMA_RS
#undef FS_SM90_WGMMA_E4M3
#undef FS_SM90_WGMMA_E4M3_IMPL
#undef FS_SM90_WGMMA_E4M3_RS
#undef FS_SM90_WGMMA_E4M3_RS_IMPL
#undef FS_SM90_OPS_E4M3_AFTER_64
#undef FS_SM90_OPS_E4M3_RS_AFTER_64
#undef FS_SM90_WGMMA_RS_IMPL
#undef FS_SM90_WGMMA_IMPL
#undef FS_SM90_WGMMA_S8
#undef FS_SM90_WGMMA_S8_IMPL
#undef FS_SM90_OPS_AFTER_128
#undef FS_SM90_OPS_AFTER_96
#undef FS_SM90_OPS_AFTER_64
#undef FS_SM90_OPS_AFTER_40
#undef FS_SM90_OPS_AFTER_32
#undef FS_SM90_OPS_RS_AFTER_32
#undef FS_SM90_OPS_RS_AFTER_64
#undef FS_SM90_OPS_RS_AFTER_128
#undef FS_SM90_OPS_S8_AFTER_128
#undef FS_SM90_REGS_128
#undef FS_SM90_REGS_96
#undef FS_SM90_REGS_64
#undef FS_SM90_REGS_40
#undef FS_SM90_REGS_32
#undef FS_SM90_D16
#undef FS_SM90_D8
#undef FS_SM90_D16_S32

// ---- A warpgroup's accumulators into shared memory --------------------------------------------
// Four 8×8 matrices of 16-bit elements, from the registers of a warp to shared memory, in the
// layout an mma accumulator fragment has them: matrix i is in register r_i, lane l holding row l / 4,
// columns 2·(l % 4) and 2·(l % 4) + 1 (low half first) — the pairs (d[4j], d[4j + 1]) and (d[4j + 2],
// d[4j + 3]) of a wgmma accumulator, once converted to 16 bits. Lane l gives the address of one row:
// row l % 8 of matrix l / 8, 16 bytes. In loop terms, for the warp together:
//   for (i < 4) for (row < 8) for (col < 8) *(row_address[8 * i + row] + 2 * col) = r_i of lane 4 * row + col / 2,
//                                                                                     half col % 2
// The 8 rows of one matrix are written in one shared-memory pass when their 16-byte chunks fall in 8
// different bank groups (a 128-byte swizzle does that). No cuda::ptx wrapper.
__device__ __forceinline__ void stmatrix_x4(void* row_address, uint32_t r0, uint32_t r1, uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(smem_address(row_address)),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// stmatrix_x4 with each matrix transposed on its way: lane l's pair (row l / 4, columns 2·(l % 4), +1)
// of matrix i lands in memory row 2·(l % 4) (and + 1) at column l / 4, so that memory row k of matrix i,
// at the address lane 8·i + k gives, holds column k of the registers' matrix. In loop terms:
//   for (i < 4) for (row < 8) for (col < 8) *(row_address[8 * i + col] + 2 * row) = r_i of lane 4 * row + col / 2,
//                                                                                     half col % 2
// The attention backward stores dS this way from dSᵀ's A fragments (keys as rows) as [query][key] rows.
// `row_address` is a shared-space address (smem_address), as the backward keeps its tiles' addresses.
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t row_address, uint32_t r0, uint32_t r1, uint32_t r2,
                                                  uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(row_address), "r"(r0),
               "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// A barrier for some warps of the block: waits until `threads` threads (a multiple of 32) have
// reached barrier `id` (1 … 15; 0 is __syncthreads'), and orders their shared-memory accesses as
// __syncthreads does. In loop terms, __syncthreads() over a named subset of the block. What lets one
// warpgroup meet without the others. No cuda::ptx wrapper (CUTLASS: NamedBarrier::sync).
__device__ __forceinline__ void bar_sync(uint32_t id, uint32_t threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// The other half of bar_sync: counts this warp's threads as arrived at barrier `id` and goes on
// without waiting. In loop terms, `arrived(id) += 32` per warp; the threads that bar_sync on the same
// id and count wait until arrivals and their own add up to `threads`. What lets one warpgroup wave
// another on (stage 07 attention v4's turns) without waiting itself. No cuda::ptx wrapper (CUTLASS:
// NamedBarrier::arrive).
__device__ __forceinline__ void bar_arrive(uint32_t id, uint32_t threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// ---- setmaxnreg: moving registers from one warpgroup to another ---------------------------------
// A block's registers are handed out at launch, the same number to every thread: the kernel's register
// count (ptxas -v). On sm_90a a warpgroup may change its own share while it runs: .dec gives registers
// back to a pool the block keeps, .inc takes them from that pool, waiting until it holds enough. In
// loop terms, for the 128 threads of one warpgroup together:
//   dec:  pool += 128 * (regs - N);  regs = N;
//   inc:  while (pool < 128 * (N - regs)) {}  pool -= 128 * (N - regs);  regs = N;
// so a warp-specialized kernel launched with R registers per thread can leave its load warpgroup with
// few and give its math warpgroups more than R. The rules (PTX ISA, setmaxnreg): N is a multiple of
// 8 from 24 to 256; every warp of the warpgroup executes the same instruction (a condition around it
// must be the same for the whole warpgroup); .dec must not raise the count nor .inc lower it; and
// the kernel's register count must be fixed when it is compiled (__launch_bounds__ with a minimum
// number of blocks, or -maxrregcount), otherwise the instruction may do nothing. Registers gained by
// .inc start undefined; ptxas allocates them, no kernel code sees that. cuda::ptx::setmaxnreg_dec,
// cuda::ptx::setmaxnreg_inc.
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "a multiple of 8 from 24 to 256");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256, "a multiple of 8 from 24 to 256");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

}  // namespace fs::sm90
