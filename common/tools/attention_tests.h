// Checks every attention stage's tests share, forward and backward: odd sizes against fp64, bad inputs,
// error paths.
// They use doctest's CHECK, so they report each failing shape and carry on with the next.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/tools/attention_check.h"
#include "common/tools/gpu_test.h"

namespace fs::testing {

// N = 1, 17, 1000 and Nq ≠ Nk (both ways), with B·H > 1, for each head_dim: one query row over 1000
// keys and 17 rows over one key among them; causal and not (causal only where Nq <= Nk). Under the
// sanitizer (sanitizer_sizes()) 1000 becomes 200 and 1023 becomes 223: still several tiles with tails.
// Every case draws fresh inputs from its own seed.
std::vector<AttentionParams> odd_shapes(DType dtype, const std::vector<int64_t>& dims);

// K/V with fewer heads than Q, for each head_dim, causal and not (causal only where Nq <= Nk):
// grouped-query (H = 4, KVH = 2) and multi-query (H = 4 or 6, KVH = 1) at odd sizes, mostly with
// B > 1 so that a wrong batch stride shows too; and decoding, Nq = 1 against Nk = 1000 and against a
// long Nk (4097 and 16384; 200, 517 and 1100 under the sanitizer), GQA and MQA.
std::vector<AttentionParams> gqa_shapes(DType dtype, const std::vector<int64_t>& dims);

// Poisoned outputs, fp64 reference for every head, O and LSE within the dtype's tolerance; for
// fp16/bf16 with `naive` given, the error is also at most 2× the naive stage's on the same inputs.
void check_against_reference(const KernelDesc& kernel, const AttentionParams& shape, uint64_t seed,
                             const KernelDesc* naive = nullptr);
// The same checks for each of `kernels` on one problem of `shape` (its fp64 reference, the slow part on
// the host, and the naive stage's run made once): a stage that checks all its versions on the same shapes
// calls this per shape with the versions that take it.
void check_each_against_reference(const std::vector<const KernelDesc*>& kernels, const AttentionParams& shape,
                                  uint64_t seed, const KernelDesc* naive = nullptr);

// Null pointers, non-positive sizes, sizes that overflow or exceed the GPU's memory, kv_heads that is
// negative, larger than heads or not a divisor of it, a non-finite scale, a descale that is no scale or
// would be ignored (fs_attention_params: fp8's), an impossible causal mask and a non-float dtype each
// return their code and leave O and LSE untouched. `ok` must be a shape the
// kernel accepts, with at least 2 heads.
void check_rejects_bad_inputs(const KernelDesc& kernel, const AttentionParams& ok);

// A bad input built from `ok` by `make_bad` returns `expected` and writes nothing.
void check_rejected(const KernelDesc& kernel, const AttentionParams& ok,
                    const std::function<void(AttentionParams&)>& make_bad, Status expected);

// FS_ERR_CUDA: the launcher is called on the legacy default stream while another stream is being
// captured in global mode (an implicit dependency the runtime refuses); the launcher must report it,
// not crash.
void check_reports_cuda_error(const KernelDesc& kernel, const AttentionParams& ok);

// ---- Strided layouts (fs_attention_params' strides) ----------------------------------------------

// Shapes for the strided layouts at head_dim d, each with B > 1 so that a wrong batch stride shows: N = 17,
// Nq ≠ Nk both ways, causal (where Nq <= Nk), grouped-query (H = 4 over 2 K/V heads) and multi-query
// decoding (Nq = 1 over a few key blocks).
std::vector<AttentionParams> strided_shapes(DType dtype, int64_t d);

// The problem laid out [B, N, H, D] and as Q, K, V slices of one packed QKV tensor with O's rows padded
// (attention_check.h: bnhd_layout, packed_qkv_layout), run by `kernel` from those buffers: O and LSE
// against fp64 within the dtype's tolerance, for fp16/bf16 with `naive` given at most 2× the naive
// stage's error on the same inputs (run contiguous), and every byte outside O's view as it was.
void check_strided_layouts(const KernelDesc& kernel, const AttentionParams& shape, uint64_t seed,
                           const KernelDesc* naive = nullptr);

// The backward through the same two layouts (dQ, dK, dV slices of one packed tensor in the second, dO
// with O's padded rows): three launches each as check_bwd_against_reference (with delta, without, and
// deterministic twice: dQ the same bytes), every byte outside the gradients' views as it was.
void check_bwd_strided_layouts(const KernelDesc& kernel, const AttentionParams& shape, uint64_t seed);

// A kernel that takes no strides (fs_kernel_info.strided 0) refuses a [B, N, H, D] problem with
// FS_ERR_UNSUPPORTED_LAYOUT; one that takes them refuses strides that are negative, make rows overlap
// or break its 16 bytes with FS_ERR_INVALID_STRIDES. Nothing written either way. `ok`: a shape the
// kernel accepts, with B, H > 1.
void check_layout_refusals(const KernelDesc& kernel, const AttentionParams& ok);
void check_bwd_layout_refusals(const KernelDesc& kernel, const AttentionParams& ok);

// ---- Variable-length batches --------------------------------------------------------------------

// A batch of variable-length sequences. Padded: [B, H, seq_q, D] with lens[b] rows used of each;
// packed: [H, total, D] with entry b at rows cu[b] .. cu[b+1]-1. K and V the same with KVH heads
// (kv_heads, 0: H).
struct Varlen {
  int64_t batch, heads, d;
  bool causal;
  std::vector<int32_t> lens;        // padded: [B]
  int64_t seq_q = 0, seq_k = 0;     // padded: the padded lengths; packed: the totals
  std::vector<int32_t> cu_q, cu_k;  // packed: [B+1]
  int64_t kv_heads = 0;             // grouped-query attention: K/V heads, each read by H / KVH query heads

  bool packed() const { return !cu_q.empty(); }
  int64_t kvh() const { return kv_heads ? kv_heads : heads; }
  // Where (b, h) starts in Q/O (and LSE) and in K/V (its K/V head is h / G), and its lengths.
  int64_t q_row0(int64_t b, int64_t h) const { return packed() ? h * seq_q + cu_q[b] : (b * heads + h) * seq_q; }
  int64_t k_row0(int64_t b, int64_t h) const {
    const int64_t kv = h / (heads / kvh());
    return packed() ? kv * seq_k + cu_k[b] : (b * kvh() + kv) * seq_k;
  }
  int64_t nq(int64_t b) const { return packed() ? cu_q[b + 1] - cu_q[b] : lens[b]; }
  int64_t nk(int64_t b) const { return packed() ? cu_k[b + 1] - cu_k[b] : lens[b]; }
  int64_t rows(int64_t b) const { return packed() ? nq(b) : seq_q; }  // rows of O written
  int64_t k_rows(int64_t b) const { return packed() ? nk(b) : seq_k; }  // rows of dK, dV written
  int64_t q_total() const { return (packed() ? 1 : batch) * heads * seq_q; }
  int64_t k_total() const { return (packed() ? 1 : batch) * kvh() * seq_k; }
};

// Runs `kernel` on the batch in `dtype` (fp16 or bf16) and checks every row of O and LSE against
// fp64, entry by entry: rows that take part within the dtype's tolerance, the others (padding, or no
// key at all) exactly O = 0 and LSE = -inf. Inputs are random in [-1, 1] and the padding of a padded
// batch (rows past lens[b] of Q, K and V) is NaN: a kernel that lets a row past a sequence's end
// into a product writes NaN somewhere. Packed batches run twice: with max_seq_q = 0 ("unknown") and
// with the value fs_check_varlen computes.
void check_varlen_batch(const KernelDesc& kernel, const Varlen& batch, DType dtype, uint64_t seed);

// Padded and packed batches at head_dim d, causal and not, fp16 and bf16: entries of 200, 0 and 77
// rows padded to 200 queries and 230 keys; packed entries with no query or no key, Nq ≠ Nk.
void check_varlen_layouts(const KernelDesc& kernel, int64_t d, uint64_t seed);

// The same layouts at head_dim d with 4 query heads over 2 K/V heads, and over 1.
void check_varlen_grouped(const KernelDesc& kernel, int64_t d, uint64_t seed);

// For a kernel that takes strides: padded (causal, fp16) and packed (fp16, causal bf16, and 4 query heads
// over 2 K/V heads) batches with every tensor laid out by position — padded [B, N, H, D], packed
// [total, H, D] (FlashAttention's varlen layout) — checked as check_varlen_batch checks them.
void check_varlen_by_position(const KernelDesc& kernel, int64_t d, uint64_t seed);

// Layouts whose lengths break a rule (a padded length past min(Nq, Nk); packed offsets that end before
// the total, pass it or decrease; a causal entry with more queries than keys; an entry longer than
// max_seq_q): fs_check_varlen names each, and a launch writes nothing for the entries that break it
// (checked on the device) while it computes the others.
void check_bad_layouts(const KernelDesc& kernel);

// ---- Backward ------------------------------------------------------------------------------------

// One problem, fp64 reference for every head, three launches: as params() gives it (dQ, dK, dV and
// delta within the dtype's backward tolerance; for fp16/bf16 with `naive` given, each at most 2× the
// naive version's error on the same inputs); without delta (the rest still right, the delta buffer
// untouched); and deterministic, twice (right, and dQ bitwise the same both times). Outputs poisoned
// before each launch.
void check_bwd_against_reference(const KernelDesc& kernel, const AttentionParams& shape, uint64_t seed,
                                 const KernelDesc* naive = nullptr);
// The same checks on a problem made once: a stage that checks all its versions on the same shapes builds
// one fixture per shape (its fp64 reference, the slow part on the host) and calls this for each version.
void check_bwd_against_reference(const KernelDesc& kernel, AttentionBwdFixture& problem, const KernelDesc* naive = nullptr);

// Logits far outside the usual range (|scale·S| up to about 1e4, the scale ±`magnitude`): every
// gradient and delta finite.
void check_bwd_extreme_logits(const KernelDesc& kernel, const AttentionParams& shape, uint64_t seed);

// A bad backward input built from `ok` by `make_bad` returns `expected` and writes nothing.
void check_bwd_rejected(const KernelDesc& kernel, const AttentionParams& ok,
                        const std::function<void(AttentionBwdParams&)>& make_bad, Status expected);

// Everything check_rejects_bad_inputs() tries on the forward problem, and the backward's own: a null
// lse, d_o, dq, dk or dv; d_o, dq, delta misaligned (by one byte: no kernel takes that); an output on top
// of an input or of another output, wholly or in part; seq_lens or cu_seqlens to a version that takes
// none, and to one that takes them, fields that cannot describe a layout (padded and packed at once,
// cu_seqlens_q without cu_seqlens_k, max_seq_k past seq_k, max_seq_q negative). `ok` must be a shape the
// kernel accepts.
void check_bwd_rejects_bad_inputs(const KernelDesc& kernel, const AttentionParams& ok);

// FS_ERR_CUDA, provoked as check_reports_cuda_error() provokes it.
void check_bwd_reports_cuda_error(const KernelDesc& kernel, const AttentionParams& ok);

// A backward C entry (fs_flash_bwd_v3, fs_flash_bwd_tma_v1, ...) and what sets it apart from the others,
// for check_bwd_c_entry.
struct BwdEntry {
  std::string name;                                      // the version it launches, for the report
  int (*launch)(const fs_attention_bwd_params*, void*);  // the entry
  int32_t dtype;                                         // one it takes: the valid problem's
  int32_t refused_dtype;                                 // one it refuses (FS_ERR_UNSUPPORTED_DTYPE)
  int64_t refused_head_dim;                              // one it refuses (FS_ERR_UNSUPPORTED_HEAD_DIM)
  int dq_misaligned_by;  // bytes past a 64 KiB boundary that dQ may not start at (1 refuses every
                         // version; 8 only one that needs 16 bytes, as TMA does)
  bool varlen;           // takes seq_lens and cu_seqlens (fs_kernel_info.varlen)
};

// The C entry with made-up pointers, which no check may read: a null params, null lse and dv, Nq = 0, an
// infinite scale, `refused_dtype`, `refused_head_dim`, a causal mask with Nq > Nk, dQ and delta
// misaligned, length fields that cannot describe a layout (or, to an entry that takes none, seq_lens at
// all) and kv_heads that is more than heads or no divisor of them each return their code before any
// device call. Without a GPU the valid problem, and MQA (2 query heads on 1 K/V head), get FS_ERR_CUDA
// from the runtime, not a crash; with one that path is reported skipped (the GPU cases cover it).
void check_bwd_c_entry(const BwdEntry& entry);

// ---- Variable-length backward --------------------------------------------------------------------

// Runs the backward of `kernel` on the batch in `dtype` (fp16 or bf16) and checks every row against the
// fp64 backward, entry by entry. Inputs: Q, K, V and dO random in [-1, 1]; O and LSE the fp64 forward's
// (O rounded to the dtype, LSE to fp32), O = 0 and LSE = -inf for the rows of an entry with no key, as
// the forward writes them; the padding of a padded batch (rows past lens[b] of Q, K, V, dO, O and LSE)
// NaN, so that a kernel that reads it writes NaN somewhere. dQ and delta of the rows that take part, and
// dK and dV (sums over each group's query heads), within the dtype's backward tolerance; every other
// row exactly 0: padding, dQ and delta of an entry with no key, dK and dV of an entry with no query.
// Three launches as in check_bwd_against_reference, outputs poisoned before each: with delta, without
// (its buffer untouched), deterministic twice (dQ bitwise the same). Packed batches run each with
// max_seq_q = max_seq_k = 0 ("unknown") and with the values fs_check_varlen computes (checked: the
// longest entry's query and key counts).
void check_bwd_varlen_batch(const KernelDesc& kernel, const Varlen& batch, DType dtype, uint64_t seed);

// check_varlen_layouts' batches through the backward: padded with entries of 200, 0 and 77 rows (200
// queries, 230 keys) causal and not, in fp16 and bf16; packed with an entry that has no key (fp16) and,
// causal, one that has no query (bf16).
void check_bwd_varlen_layouts(const KernelDesc& kernel, int64_t d, uint64_t seed);

// check_varlen_grouped's batches through the backward: 4 query heads over 2 K/V heads, and over 1.
void check_bwd_varlen_grouped(const KernelDesc& kernel, int64_t d, uint64_t seed);

// check_varlen_by_position's batches through the backward of a kernel that takes strides: every tensor,
// gradients included, laid out by position (padded [B, N, H, D], packed [total, H, D]).
void check_bwd_varlen_by_position(const KernelDesc& kernel, int64_t d, uint64_t seed);

// check_bad_layouts' layouts through the backward, and its own rule: a packed entry with more keys than
// max_seq_k. For every entry, its rows of dQ and of dK are all left unwritten if it breaks a rule (checked
// on the device) and all written if not; the launch returns Success either way.
void check_bwd_bad_layouts(const KernelDesc& kernel);

}  // namespace fs::testing
