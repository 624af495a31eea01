/*
 * flashstages — the C interface of the shared library.
 *
 * Every stage's launcher is exported here with C linkage so that C, Python (ctypes) and other
 * languages can call any stage. The C++ code uses these same types (common/lib/attention.h and
 * gemm.h wrap them), so there is one definition of each problem and one list of status codes.
 * fs_kernel_count / fs_kernel_at describe every launcher: what it takes and which GPUs it runs on.
 *
 * Tensors are row-major [B, H, Nq, D] for Q and O, [B, KVH, Nk, D] for K and V (KVH = H unless kv_heads
 * says otherwise: grouped-query attention) and [B, H, Nq] (fp32) for LSE: contiguous, unless the strides
 * of fs_attention_params lay Q, K, V and O out otherwise ([B, N, H, D], a slice of a packed QKV tensor).
 * Every entry validates its arguments before it launches anything; a non-zero return means nothing
 * was written. fs_status_name / fs_status_message name every code.
 */
#ifndef FLASHSTAGES_H
#define FLASHSTAGES_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define FS_API __declspec(dllexport)
#else
#define FS_API __attribute__((visibility("default")))
#endif

/* Status codes. Append only: the numbers are part of the ABI. */
typedef enum fs_status {
  FS_SUCCESS = 0,
  FS_ERR_NULL_POINTER = 1,         /* a required tensor pointer is null */
  FS_ERR_INVALID_SIZE = 2,         /* a size is zero or negative, or the sizes pass a limit: a tensor's bytes
                                      past 64 bits or past the device's memory, a grid dimension or a
                                      TMA extent past the hardware's */
  FS_ERR_UNSUPPORTED_HEAD_DIM = 3, /* this kernel has no instance for head_dim */
  FS_ERR_UNSUPPORTED_DTYPE = 4,    /* this kernel does not take this element type */
  FS_ERR_MISALIGNED_POINTER = 5,   /* a pointer is not aligned as the kernel's vector loads need, or an
                                      output overlaps another tensor (backward) */
  FS_ERR_UNSUPPORTED_MASK = 6,     /* causal with seq_q > seq_k: some rows would see no key */
  FS_ERR_INVALID_SCALE = 7,        /* scale is NaN or infinite; a descale negative, NaN, infinite, or set for a
                                      dtype other than fp8 */
  FS_ERR_OUT_OF_MEMORY = 8,        /* the kernel's workspace could not be allocated (any version that keeps
                                      scores, fp32 partials, dQ or delta in device memory) */
  FS_ERR_CUDA = 9,                 /* the CUDA runtime reported an error (no device, launch failure) */
  FS_ERR_INVALID_SEQLENS = 10,     /* seq_lens / cu_seqlens are inconsistent, or this kernel takes none */
  FS_ERR_INVALID_LEADING_DIM = 11, /* a GEMM leading dimension is smaller than its matrix's row */
  FS_ERR_UNSUPPORTED_DEVICE = 12,  /* this kernel has no code for the current GPU, needs more shared memory,
                                      or its clusters of blocks do not fit (stage 07 gemm v5, v7-v12) */
  FS_ERR_INVALID_KV_HEADS = 13,    /* kv_heads is negative, larger than heads, or does not divide heads */
  FS_ERR_UNSUPPORTED_LAYOUT = 14,  /* this GEMM kernel does not take this pair of transposes (trans_a, trans_b):
                                      stage 07's int8 version reads A stored M×K and B stored N×K alone; this
                                      attention kernel takes contiguous tensors alone (no strides) */
  FS_ERR_INVALID_STRIDES = 15      /* an attention tensor's strides are negative, make two of its rows overlap,
                                      do not fit in 64 bits, or are not the multiple of 16 bytes this kernel's
                                      loads need */
} fs_status;

/* Element types. A kernel's set of types is a bit mask: bit (1 << dtype). */
typedef enum fs_dtype {
  FS_FP32 = 0,
  FS_FP16 = 1,
  FS_BF16 = 2,
  FS_INT8 = 3,
  FS_INT32 = 4,
  FS_FP8_E4M3 = 5 /* 8-bit float, 4 exponent and 3 mantissa bits, largest finite value 448 (stage 07 attention v9:
                     Q, K, V in it with per-tensor scales, O in bf16) */
} fs_dtype;

/* One attention problem: O = softmax(scale · Q Kᵀ [+ causal mask]) V, and LSE = log Σ exp(scale · S). */
typedef struct fs_attention_params {
  int64_t batch;     /* B */
  int64_t heads;     /* H */
  int64_t seq_q;     /* Nq: query rows per head */
  int64_t seq_k;     /* Nk: key/value rows per head */
  int64_t head_dim;  /* D */
  float scale;       /* softmax scale; 0 means 1/sqrt(D) */
  int32_t causal;    /* non-zero: query i sees keys j <= i + (Nk - Nq) (bottom-right aligned) */
  int32_t dtype;     /* fs_dtype of Q, K, V and O (fp8: O is bf16, see q_descale) */
  const void* q;     /* [B, H, Nq, D] */
  const void* k;     /* [B, KVH, Nk, D] (KVH: see kv_heads) */
  const void* v;     /* [B, KVH, Nk, D] */
  void* o;           /* [B, H, Nq, D] */
  float* lse;        /* [B, H, Nq] natural-log LSE of the scaled scores; may be null (not written) */
  /* Variable lengths (stage 04, stage 07's attention; for the backward stage 05's v2-v10 and stage 07's):
   * both null for dense batches, at most one set. Device arrays.
   * seq_lens [B]: padded batches; entry b uses its first seq_lens[b] query rows and key rows
   *   (<= seq_q and <= seq_k); its query rows past that get O = 0 and LSE = -inf.
   * cu_seqlens_q / cu_seqlens_k [B+1]: packed batches; entry b owns rows cu[b] .. cu[b+1]-1 of
   *   Q (O, LSE) and K, V, stored [H, total, D] and [KVH, total, D] (so seq_q / seq_k are the totals, cu[B]).
   * The launchers never read these arrays on the host (so they can be captured into a CUDA graph):
   * the kernels check each entry on the device and write nothing for an entry that breaks the
   * rules. fs_check_varlen checks a layout on the host, once, and names what is wrong. */
  const int32_t* seq_lens;
  const int32_t* cu_seqlens_q;
  const int32_t* cu_seqlens_k;
  /* Packed batches: the most query rows of any entry, or 0 for "unknown" (then seq_q, the total).
   * It sizes the grid: every entry gets ceil(max_seq_q / Br) query tiles per head, so a tight value
   * saves launching tiles that hold no row. fs_check_varlen computes it. An entry longer than
   * max_seq_q breaks the rules (see above). Ignored for dense and padded batches. Stage 07's backward
   * also sizes its fp32 dQ workspace by it: B·H·max_seq_q·D floats, B times Q's size when unknown. */
  int64_t max_seq_q;
  /* K/V heads, KVH (grouped-query attention): 0 means heads (multi-head attention, every query head
   * has its own K and V). Otherwise 1 <= kv_heads <= heads and heads is a multiple of it: K and V hold
   * kv_heads heads, and query head h reads K/V head h / (heads / kv_heads), so each K/V head serves a
   * group of heads / kv_heads consecutive query heads. kv_heads = 1 is multi-query attention. */
  int64_t kv_heads;
  /* Packed batches, the backward (stage 05): the most key rows of any entry, or 0 for "unknown" (then
   * seq_k, the total). It sizes the backward's grid of key blocks as max_seq_q sizes the forward's
   * grid of query tiles; an entry with more keys breaks the backward's rules (its gradients are written
   * nowhere). fs_check_varlen computes it. The forward kernels do not read it. */
  int64_t max_seq_k;
  /* fp8 inputs (dtype FS_FP8_E4M3): per-tensor dequantization scales. Q, K and V stand for
   * q_descale · Q, k_descale · K and v_descale · V: whoever quantized a tensor x stored x / s (s = amax / 448
   * uses e4m3's whole range) and passes s here. The kernel computes softmax(scale · q kᵀ) v of those values
   * and writes O in bf16 ([B, H, Nq, D], 2 bytes an element). 0 means 1. For every other dtype they must
   * be 0: a scale that would be ignored is refused (FS_ERR_INVALID_SCALE), as is a negative, NaN or
   * infinite one. */
  float q_descale;
  float k_descale;
  float v_descale;
  /* The layouts: each tensor's element strides {batch, head, row}, so that element (b, h, n, d) of Q is
   * q[b·q_strides[0] + h·q_strides[1] + n·q_strides[2] + d] (K, V, O alike; K and V with their KVH heads).
   * D is always contiguous; LSE is always [B, H, Nq] contiguous. All three zero: the contiguous layout
   * above ({H·Nq·D, Nq·D, D} for Q and O, {KVH·Nk·D, Nk·D, D} for K and V), so a caller that leaves
   * them zero keeps today's layout. FlashAttention's and most models' [B, N, H, D] is {N·H·D, D, H·D}; a
   * Q sliced from a packed QKV tensor [B, N, 3, H, D] is {N·3·H·D, D, 3·H·D}. No copy is made.
   * Rules (FS_ERR_INVALID_STRIDES otherwise): no stride negative; the rows the strides address never
   * overlap (sorted by size, each stride is at least the extent of the smaller ones; a stride whose
   * count is 1 is ignored, as is the batch stride of packed batches, whose tensors are [H, total, D]
   * with strides {0, head, row}); the last element's offset fits in 64 bits; and for a kernel that needs
   * aligned rows, every stride a multiple of 16 bytes. A kernel that takes contiguous tensors alone
   * (fs_kernel_info.strided = 0) refuses any other layout with FS_ERR_UNSUPPORTED_LAYOUT; strides that
   * spell out the contiguous layout are the contiguous layout. The backward (fs_attention_bwd_params):
   * a gradient has the layout of what it is the gradient of — dQ Q's strides, dK K's, dV V's, and dO
   * O's. */
  int64_t q_strides[3];
  int64_t k_strides[3];
  int64_t v_strides[3];
  int64_t o_strides[3];
} fs_attention_params;

/* One GEMM: C = alpha · op(A) · op(B) + beta · C, row-major. op(A) is M×K: A is stored M×K (lda >= K),
 * or K×M when trans_a (lda >= M). op(B) is K×N: B is stored K×N (ldb >= N), or N×K when trans_b
 * (ldb >= K). C is M×N (ldc >= N). beta = 0 never reads C. */
typedef struct fs_gemm_params {
  int64_t m, n, k;
  int32_t trans_a, trans_b;
  int32_t ab_dtype;  /* fs_dtype of A and B */
  int32_t c_dtype;   /* fs_dtype of C */
  float alpha, beta;
  const void* a;
  int64_t lda;
  const void* b;
  int64_t ldb;
  void* c;
  int64_t ldc;
} fs_gemm_params;

FS_API const char* fs_status_name(int status);    /* "FS_ERR_NULL_POINTER" */
FS_API const char* fs_status_message(int status); /* one sentence for a person */

/* ---- What the library holds ----------------------------------------------------------------- */

/* Which params struct a launcher takes. Append only. */
typedef enum fs_problem {
  FS_PROBLEM_ATTENTION = 0,     /* fs_attention_params: the forward pass */
  FS_PROBLEM_GEMM = 1,          /* fs_gemm_params */
  FS_PROBLEM_ATTENTION_BWD = 2  /* fs_attention_bwd_params: the backward pass */
} fs_problem;

/* One launcher, as the library describes it. */
typedef struct fs_kernel_info {
  const char* entry;      /* the C entry that runs it: "fs_flash_fwd_v3" */
  const char* stage;      /* "stage04" */
  const char* version;    /* "v3" */
  const char* technique;  /* one line: what this version does */
  int32_t problem;        /* fs_problem */
  uint32_t in_dtypes;     /* bit (1 << fs_dtype) per type it takes: Q, K, V (attention), A, B (GEMM) */
  uint32_t out_dtypes;    /* per type it writes: O, or dQ, dK, dV (attention: the input's type, bf16 for fp8), C (GEMM) */
  int32_t num_head_dims;  /* attention: how many entries of head_dims hold; 0: any head_dim <= max_head_dim */
  int32_t head_dims[8];
  int32_t max_head_dim;
  int32_t num_archs;      /* the GPUs it runs as machine code, as compute capabilities (major·10 + minor): */
  int32_t archs[16];      /*   exactly those this build carries machine code for */
  uint64_t smem_bytes;    /* the dynamic shared memory a block needs: a GPU must allow that much per block */
  int32_t strided;        /* attention: non-zero when it takes the strides of fs_attention_params (any layout
                             with D contiguous); 0: contiguous tensors alone (FS_ERR_UNSUPPORTED_LAYOUT) */
  int32_t ptx_arch;       /* the PTX it carries, as a compute capability (80: compute_80), 0 for none: a GPU
                             of that capability or newer that archs does not list compiles it at its first
                             launch (JIT) and runs it too; no GPU older than every entry runs it */
  int32_t keeps_scores;   /* attention: non-zero when it keeps N×N scores (or P and dS) in DRAM, memory that
                             grows with Nq·Nk: the picking entries never run it, its own entry does */
} fs_kernel_info;

FS_API int fs_kernel_count(void);
FS_API const fs_kernel_info* fs_kernel_at(int index); /* null outside 0 .. fs_kernel_count() - 1 */
/* FS_SUCCESS when the kernel can run on CUDA device `device`, FS_ERR_UNSUPPORTED_DEVICE when it
 * cannot (fs_status_message says why in general), FS_ERR_CUDA when there is no such device. */
FS_API int fs_kernel_check_device(const fs_kernel_info* kernel, int device);

/* ---- Attention -------------------------------------------------------------------------------- */

/* The C entries are declared in flashstages_entries.h (included at the end of this file), which CMake
 * writes from each stage's list of versions: <name>_vN for version N of a stage, all of a stage's entries
 * with the same arguments. `stream` is a cudaStream_t (null: the default stream). They return once the
 * work is queued; errors in queued work surface at the next synchronization. The versions that pick a
 * configuration by timing (stage 04 v5 and v6, stage 06 v11) time their candidates on `stream` at the
 * first call of each shape and wait for them there (FLASHSTAGES_AUTOTUNE=0 skips the timing). Versions
 * that keep scores, partials, dQ or delta in device memory allocate it per call (FS_ERR_OUT_OF_MEMORY).
 * fs_kernel_at describes each (the dtypes, head_dims and GPUs it takes).
 *
 * Forward attention, fs_attention_params: stages 01-03 fs_naive_v1, fs_tiled_v1, fs_online_softmax_v1;
 * stage 04 (tensor-core FlashAttention forward) fs_flash_fwd_vN. Layouts other than the contiguous one
 * (the strides of fs_attention_params): stage 04's v4, v5 and v6, stage 05's v10 and every stage 07
 * attention version take them (fs_kernel_info.strided); the others refuse them with
 * FS_ERR_UNSUPPORTED_LAYOUT, and fs_attention_forward / fs_attention_backward pick among those that take
 * them. */

/* Checks a variable-length layout on the host, once, outside the launch path: copies seq_lens or
 * cu_seqlens_q/k to the host, synchronizes `stream`, and returns FS_ERR_INVALID_SEQLENS (values that
 * do not fit the sizes: a length outside 0 .. min(seq_q, seq_k); offsets that do not start at 0,
 * decrease, or do not end at the totals) or FS_ERR_UNSUPPORTED_MASK (causal, an entry with more
 * queries than keys). For packed batches it sets params->max_seq_q and params->max_seq_k. Dense params
 * return FS_SUCCESS. */
FS_API int fs_check_varlen(fs_attention_params* params, void* stream);

/* ---- Attention backward ---------------------------------------------------------------------- */

/* One attention backward problem: given dO = ∂L/∂O, the gradients dQ, dK, dV of the forward problem
 * `fwd`. It holds the forward's sizes, scale, mask, dtype and layout, its inputs Q, K, V, and what the
 * forward wrote, which the backward reads: fwd.o (O) and fwd.lse (LSE, required here). Every field a
 * later version adds to fs_attention_params is a field of the backward problem too.
 *   delta_i = Σ_c dO_ic O_ic,  P = exp(scale · Q Kᵀ - LSE),  dP = dO Vᵀ,  dS = P ∘ (dP - delta),
 *   dV = Pᵀ dO,  dQ = scale · dS K,  dK = scale · dSᵀ Q.
 * No output may overlap an input or another output (FS_ERR_MISALIGNED_POINTER: the pointer is not
 * where the kernel can use it); with strides, outputs that interleave without sharing an element (dQ,
 * dK, dV in one packed [B, N, 3, H, D] tensor, with the same strides) are apart. Layouts: dO has O's
 * strides, dQ Q's, dK K's, dV V's (fwd.q_strides ...); delta is [B, H, Nq] contiguous, as LSE. */
typedef struct fs_attention_bwd_params {
  fs_attention_params fwd; /* the forward problem; o and lse are read, never written */
  const void* d_o;         /* dO [B, H, Nq, D], in fwd.dtype, laid out as O (fwd.o_strides) */
  void* dq;                /* [B, H, Nq, D], in fwd.dtype, laid out as Q (fwd.q_strides) */
  void* dk;                /* [B, KVH, Nk, D], in fwd.dtype, laid out as K (fwd.k_strides) */
  void* dv;                /* [B, KVH, Nk, D], in fwd.dtype, laid out as V (fwd.v_strides) */
  float* delta;            /* [B, H, Nq] fp32: rowsum(dO ∘ O); may be null (not written) */
  /* Non-zero: dQ is bitwise the same on every run with the same inputs (no unordered atomic adds).
   * Every version that takes the flag keeps that promise; dK, dV and delta always are. */
  int32_t deterministic;
} fs_attention_bwd_params;

/* Stage 05 (FlashAttention backward): fs_flash_bwd_vN, one entry per version, all taking
 * fs_attention_bwd_params. v10 takes the strides (any layout with D contiguous, every stride a multiple of
 * 16 bytes), on its atomic path and its deterministic one. */

/* Stage 07, part 3 (FlashAttention backward on Hopper, sm_90a alone: FS_ERR_UNSUPPORTED_DEVICE on any
 * other GPU): fs_flash_bwd_tma_vN, all taking fs_attention_bwd_params; fp16 and bf16, head_dim 64 and 128,
 * dense, padded and packed batches, grouped K/V (dK, dV [B, KVH, Nk, D]: the sums over each group), the
 * strides, and the deterministic flag. */

/* ---- GEMM ------------------------------------------------------------------------------------- */

/* Stage 06 (GEMM): fs_gemm_vN, all taking fs_gemm_params. Pointers need only their element alignment;
 * any M, N, K >= 1. v1-v5: SIMT, ab_dtype FS_FP32, c_dtype FS_FP32. v6, v7: WMMA, ab_dtype FS_FP16,
 * c_dtype FS_FP32 or FS_FP16. v8: WMMA, ab_dtype FS_INT8, c_dtype FS_INT32 (alpha·acc + beta·C rounded
 * to nearest). v9: mma.sync, ab_dtype FS_FP16 or FS_BF16, c_dtype FS_FP32, FS_FP16 or FS_BF16. v10:
 * mma.sync, ab_dtype FS_INT8, c_dtype FS_INT32 (as v8). v11: v9's types, with v9's tile configuration or
 * another picked by timing at the first call for each (GPU, types, transposes, M, N, K). v12, v13: v9's
 * and v10's types; blocks whose tile lies inside M and N, with K a multiple of the k-tile, copy without
 * bounds checks where A and B have 16-byte rows (16-byte aligned bases, lda and ldb times the element
 * size multiples of 16); the other blocks run v9's and v10's loop, and narrower rows v9 and v10
 * themselves. v14: v12's types and rules, and its blocks at M's and N's edges and with K's tail copy
 * without checks too where the sizes keep 16-byte copies. v15: v13's types, with v14's rules at 16- and
 * 8-byte rows; narrower rows run v10. v16: v15's types; with A untransposed and B transposed, rows that
 * are not 16-byte aligned are first repacked into a workspace of (M + N)·K' bytes (K' = K rounded up to
 * 64; FS_ERR_OUT_OF_MEMORY when the device's memory pool cannot supply it), then v15 runs on the copies;
 * otherwise v16 is v15.
 *
 * Stage 07 gemm: fs_gemm_tma_vN, Hopper only (sm_90a; FS_ERR_UNSUPPORTED_DEVICE on any other GPU),
 * fs_gemm_params. ab_dtype FS_FP16 or FS_BF16, c_dtype FS_FP32, FS_FP16 or FS_BF16, every transpose,
 * any M, N, K from 1 to 2^31 - 1 (TMA's coordinates; else FS_ERR_INVALID_SIZE). A and B are read by TMA: their
 * bases 16-byte aligned (else
 * FS_ERR_MISALIGNED_POINTER) and lda, ldb times the element size multiples of 16 bytes below 2^40 (else
 * FS_ERR_INVALID_LEADING_DIM); C needs only its element alignment. From v7 on, 16-bit C with beta = 0,
 * N a multiple of 8 and C's base and ldc 16-byte multiples is written by TMA stores, any other C as v5
 * writes it. v6 alone is int8: ab_dtype FS_INT8, c_dtype FS_INT32 (alpha·acc + beta·C rounded to
 * nearest, as stage 06 v8 and v10); A stored M×K and B stored N×K alone (trans_a = 0, trans_b = 1:
 * integer wgmma reads both operands k-contiguous), FS_ERR_UNSUPPORTED_LAYOUT for the other three. */

/* ---- Stage 07 attention ---------------------------------------------------------------------- */

/* Stage 07 attention: fs_flash_fwd_tma_vN, the FlashAttention forward on Hopper only (sm_90a;
 * FS_ERR_UNSUPPORTED_DEVICE on any other GPU), fs_attention_params as stage 04: fp16 or bf16, head_dim
 * 64, 128 or 256 (FS_ERR_UNSUPPORTED_HEAD_DIM otherwise), grouped-query K/V, the causal mask, any scale,
 * padded and packed batches; Q, K, V, O 16-byte aligned (TMA; else FS_ERR_MISALIGNED_POINTER); any layout
 * through the strides, each a multiple of 16 bytes (TMA's strides; else FS_ERR_INVALID_STRIDES): the
 * tensor maps are 4D, (D, N, heads, batch entries), with the tensors' own strides. v9 alone
 * is fp8: dtype FS_FP8_E4M3 with q_descale, k_descale, v_descale, O in bf16; head_dim 128; dense batches
 * (seq_lens, cu_seqlens: FS_ERR_INVALID_SEQLENS); grouped-query K/V, the causal mask, any scale. It
 * allocates a workspace for Vᵀ, B·KVH·128·(Nk rounded up to 32) bytes (FS_ERR_OUT_OF_MEMORY if it
 * cannot). */

/* ---- The fastest version, picked ------------------------------------------------------------ */

/* fs_attention_forward, fs_attention_backward and fs_gemm run, of every version this library holds,
 * the one measured fastest for the problem on this GPU that takes it: they are not versions (the
 * registry does not list them) but a choice among them. The choice comes from the pick table
 * (common/lib/pick_table.inc, generated by scripts/make_pick_table.py from the benchmark JSON in
 * results/): on a GPU of the same name as a measured one, else of the same compute capability (the
 * reference GPU first), the benchmark point nearest the problem (the same dtype, head_dim, mask,
 * grouping and layout where measured; the nearest sizes) ranks the versions measured there, and the
 * first that takes the problem runs. Where no measured GPU matches, or no ranked version takes the
 * problem, the newest version that takes it runs (the last in stage and version order). A version
 * without a measured row is never picked by the table, and a version that keeps N×N scores in DRAM
 * (stages 01-02, stage 05 v0: memory that grows with Nq·Nk) is never picked at all; call its own entry
 * to run it. Errors: those of the version picked; where no version takes the problem, the refusal of
 * the one the table ranks first (or the newest), its reason naming a score-keeping version that would
 * take it. */
FS_API int fs_attention_forward(const fs_attention_params* params, void* stream);
FS_API int fs_attention_backward(const fs_attention_bwd_params* params, void* stream);
FS_API int fs_gemm(const fs_gemm_params* params, void* stream);

/* What those entries would run, and why, without running it: fills `pick` and returns FS_SUCCESS, or
 * the error the entry would return (pick->kernel then null, pick->why the reason). */
typedef struct fs_pick {
  const fs_kernel_info* kernel; /* the version picked (fs_kernel_at's description), or null */
  char why[320];                /* one line: the table's GPU and point, and the version's time there or how far
                                   behind the fastest it is near the problem; or the rule */
} fs_pick;
FS_API int fs_pick_attention_forward(const fs_attention_params* params, fs_pick* pick);
FS_API int fs_pick_attention_backward(const fs_attention_bwd_params* params, fs_pick* pick);
FS_API int fs_pick_gemm(const fs_gemm_params* params, fs_pick* pick);

#ifdef __cplusplus
}
#endif

/* Every version's C entry, generated (see "Attention" above). */
#include "flashstages_entries.h"

#endif /* FLASHSTAGES_H */
