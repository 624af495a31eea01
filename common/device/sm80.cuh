// flashstages — the sm_80 PTX instructions the kernels are built from, one wrapper each, named after
// the instruction. Every one of them exists from sm_80 (Ampere) on, and Hopper runs them too — but for
// red_global_add_v4_f32, the vector form of the reduction beside it, which sm_90 added (a caller picks
// between the two with __CUDA_ARCH__). What Hopper adds for its own kernels (TMA, mbarrier, wgmma)
// gets a header of its own, sm90.cuh, in the same style.
//
//   mma_m16n8k16          mma.sync.aligned.m16n8k16.row.col.f32.{f16,bf16}.{f16,bf16}.f32   D = A·B + D
//   mma_m16n8k32_s8       mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32                  D = A·B + D
//   ldmatrix_x4           ldmatrix.sync.aligned.m8n8.x4.shared.b16     four 8×8 tiles → fragments
//   ldmatrix_x4_trans     the same, transposed on the way (a tile whose rows are k)
//   cp_async_cg_16        cp.async.cg.shared.global, 16 bytes global → shared, no registers
//   cp_async_cg_16_zfill  the same with a source size: 0 reads nothing and writes 16 zero bytes
//   cp_async_ca<N>        cp.async.ca.shared.global, N = 4, 8 or 16 bytes (.cg takes 16 only)
//   cp_async_ca_zfill<N>  the same with a source size
//   cp_async_commit_group / cp_async_wait_group<N>   close a group of copies / wait until <= N pend
//   ex2_approx_ftz        ex2.approx.ftz.f32: 2^x on the special-function unit, one instruction
//   ld_shared_v4_f32      ld.shared.v4.f32: four floats from a 16-byte aligned shared address, one LDS.128
//   st_shared_v4_f32      st.shared.v4.f32: four floats to a 16-byte aligned shared address, one STS.128
//   red_global_add_f32    red.global.add.f32: *p += x in global memory, atomically, no value returned
//   red_global_add_v4_f32 red.global.add.v4.f32: p[0..3] += x0..x3, one 16-byte reduction (sm_90 and later)
//
// The m16n8k16 fragment layouts (docs/04_flash_fwd.md draws them): with lane = 4·g + t (g = lane / 4
// is the "group", t = lane % 4 the thread in it):
//   A 16×16 (row-major): a[0] = A[g][2t..2t+1]     a[1] = A[g+8][2t..2t+1]
//                        a[2] = A[g][2t+8..2t+9]   a[3] = A[g+8][2t+8..2t+9]
//   B 16×8  (k × n):     b[0] = B[2t..2t+1][g]     b[1] = B[2t+8..2t+9][g]
//   C 16×8  (fp32):      c[0..1] = C[g][2t..2t+1]  c[2..3] = C[g+8][2t..2t+1]
// Two fp16/bf16 values travel in one 32-bit register, the lower column (or k) in the low half.
// The m16n8k32 int8 layouts are the same with four values per register (k four times as wide):
//   A 16×32:  a[0] = A[g][4t..4t+3]   a[1] = A[g+8][4t..4t+3]   a[2] = A[g][4t+16..]   a[3] = A[g+8][4t+16..]
//   B 32×8:   b[0] = B[4t..4t+3][g]   b[1] = B[4t+16..4t+19][g]
//   C 16×8 (int32) as above.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace fs::sm80 {

// D = A·B + D for one 16×8 output tile, k = 16, fp32 accumulators. T is __half or __nv_bfloat16.
// Not volatile: it only reads and writes registers, so the compiler may schedule it like arithmetic
// (the shared-memory instructions below stay volatile: they must not move across barriers).
template <class T>
__device__ __forceinline__ void mma_m16n8k16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<T, __half>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// D = A·B + D for one 16×8 int32 tile, k = 32, signed 8-bit operands: twice the k of the fp16 form in
// the same registers, and (Ampere, Hopper) twice its rate. The sum wraps modulo 2^32 like int32 adds.
__device__ __forceinline__ void mma_m16n8k32_s8(int32_t (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Lanes 8i..8i+7 give the shared-memory addresses of the 16-byte rows of tile i; register r[i]
// receives tile i laid out as an mma fragment: lane 4·g + t holds row g, elements 2t and 2t+1.
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row_address));
}

// The same, transposed: lane 4·g + t holds column g, elements (rows) 2t and 2t+1.
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t row_address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(row_address));
}

// The 32-bit shared-memory address of a generic pointer into shared memory, as ldmatrix and
// cp.async take it.
__device__ __forceinline__ uint32_t smem_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Copies 16 bytes global → shared without passing through registers, cached in L2 only (.cg: the tile
// is reused from shared memory, not L1). Both addresses 16-byte aligned, all 16 source bytes valid.
__device__ __forceinline__ void cp_async_cg_16(void* dst, const void* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_address(dst)), "l"(src));
}

// The same, reading only the first src_bytes (0 or 16 here) and zero-filling the rest: with 0 nothing
// is read, so a row past the end of a matrix becomes zeros without a separate store.
__device__ __forceinline__ void cp_async_cg_16_zfill(void* dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_address(dst)), "l"(src),
               "r"(src_bytes));
}

// Copies N = 4, 8 or 16 bytes global → shared (both addresses N-byte aligned): `memcpy(dst, src, N)`,
// done asynchronously, in the same commit groups as the 16-byte copies. The .ca form, cached in L1 too,
// is the one that takes sizes below 16.
template <int N>
__device__ __forceinline__ void cp_async_ca(void* dst, const void* src) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(smem_address(dst)), "l"(src), "n"(N));
}

// The same, reading only the first src_bytes (0 or N here) and zero-filling the rest: the loop
// `for (i < N) dst[i] = i < src_bytes ? src[i] : 0;`, done asynchronously.
template <int N>
__device__ __forceinline__ void cp_async_ca_zfill(void* dst, const void* src, int src_bytes) {
  static_assert(N == 4 || N == 8 || N == 16, "cp.async copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(smem_address(dst)), "l"(src), "n"(N),
               "r"(src_bytes));
}

// Closes the group of copies this thread issued since the last commit.
__device__ __forceinline__ void cp_async_commit_group() { asm volatile("cp.async.commit_group;\n" ::); }

// Waits until at most N committed groups of this thread are still in flight.
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// *p += x in global memory, atomically, with nothing returned: the reduction form of atom.add, which
// needs no reply from the memory system (atomicAdd with its result unused usually becomes the same).
__device__ __forceinline__ void red_global_add_f32(float* p, float x) {
  asm volatile("red.global.add.f32 [%0], %1;\n" ::"l"(p), "f"(x) : "memory");
}

// p[0..3] += x0..x3 in global memory, with nothing returned: the loop
// `for (i < 4) red_global_add_f32(p + i, x[i]);` as one instruction, one 16-byte request instead of
// four 4-byte ones. Each of the four additions is atomic; the four together are not one atomic
// operation. p must be 16-byte aligned. PTX ISA 8.1, sm_90 and later only (ptxas refuses it for an
// older target: "requires .target sm_90 or higher"), and only in the global space; no .v2 or .v4 form
// of red exists for f32 before sm_90.
__device__ __forceinline__ void red_global_add_v4_f32(float* p, float x0, float x1, float x2, float x3) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"l"(p), "f"(x0), "f"(x1), "f"(x2), "f"(x3)
               : "memory");
}

// 2^x in one MUFU instruction (relative error about 2^-22; subnormal results flush to 0, ex2(-inf) = 0).
// Plain exp2f adds range handling around the same instruction unless the build uses --use_fast_math.
__device__ __forceinline__ float ex2_approx_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// Four floats from shared memory at a 16-byte aligned address (of the shared window: smem_address), in
// one LDS.128 whatever the compiler can prove about the pointer; volatile, so it stays after the barrier
// wait that precedes it in program order.
__device__ __forceinline__ float4 ld_shared_v4_f32(uint32_t addr) {
  float4 v;
  asm volatile("ld.shared.v4.f32 {%0, %1, %2, %3}, [%4];\n" : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(addr)
               : "memory");
  return v;
}

// The store's twin. Through a 32-bit shared address, not a generic pointer: a generic store costs a
// 64-bit address per distinct target (two registers each, worked out once and kept live by the
// compiler when they repeat every loop turn), where this takes one base register and immediate offsets.
__device__ __forceinline__ void st_shared_v4_f32(uint32_t addr, float4 v) {
  asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "f"(v.x), "f"(v.y), "f"(v.z), "f"(v.w)
               : "memory");
}

// ---- Packing two 16-bit values into one fragment register ----------------------------------------

// Two floats rounded to T and packed: lo in bits 0..15, hi in bits 16..31.
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  if constexpr (std::is_same_v<T, __half>) {
    const __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}

// Two 16-bit values packed the same way (for fragments gathered one element at a time).
__device__ __forceinline__ uint32_t pack2_bits(uint16_t lo, uint16_t hi) { return uint32_t(lo) | (uint32_t(hi) << 16); }

}  // namespace fs::sm80
