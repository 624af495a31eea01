// Tests of the picking entries (common/lib/pick.h): on made-up GPUs (CPU), the order in which they try
// the versions, read from the pick table and the registry; on a GPU, that fs_attention_forward,
// fs_attention_backward and fs_gemm compute what the fp64 reference computes and refuse what no
// version takes, and that fs_pick_* names the version they run.
#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

#include "common/lib/kernel.h"
#include "common/lib/pick.h"
#include "common/tools/attention_check.h"
#include "common/tools/check.h"
#include "common/tools/compare.h"
#include "common/tools/gemm_check.h"
#include "common/tools/gpu_test.h"

using namespace fs;

namespace {

// The reference GPU of the table (its first), and its square-grid point at D, N, causal, dtype.
const PickGpu& reference_gpu() { return pick_table().gpus[0]; }

const PickAttentionPoint* square_point(int32_t problem, DType t, int64_t d, int64_t n, bool causal) {
  const PickTable table = pick_table();
  const PickGpu& g = reference_gpu();
  for (int i = g.first_attention; i < g.first_attention + g.attention_count; ++i) {
    const PickAttentionPoint& pt = table.attention[i];
    if (pt.problem == problem && pt.dtype == int32_t(t) && !pt.deterministic && pt.head_dim == d && pt.seq_q == n &&
        pt.seq_k == n && bool(pt.causal) == causal && !pt.packed && pt.kv_heads == pt.heads)
      return &pt;
  }
  return nullptr;
}

// Whether `version` is level with the fastest at a point (within kPickTieBand of its time there): the
// versions the entries try first, in the order of their standing near the problem.
template <class Point>
bool level_at(const Point& pt, const std::string& version) {
  for (const PickRanked& r : pt.ranked)
    if (r.version && version == r.version) return double(r.ms) <= kPickTieBand * double(pt.ranked[0].ms);
  return false;
}

std::vector<std::string> names(const std::vector<PickCandidate>& list) {
  std::vector<std::string> out;
  for (const PickCandidate& c : list) out.push_back(c.kernel->qualified());
  return out;
}

}  // namespace

FS_CPU_TEST_CASE("pick table: every version it ranks is in the registry and every GPU's points are in range") {
  const PickTable table = pick_table();
  REQUIRE(table.gpu_count > 0);
  std::set<std::string> registry;
  for (const KernelDesc* k : all_kernels()) registry.insert(k->qualified());
  int attention = 0, gemm = 0;
  for (int g = 0; g < table.gpu_count; ++g) {
    const PickGpu& gpu = table.gpus[g];
    INFO(gpu.name);
    CHECK(gpu.first_attention == attention);
    CHECK(gpu.first_gemm == gemm);
    attention += gpu.attention_count;
    gemm += gpu.gemm_count;
    for (int i = gpu.first_attention; i < gpu.first_attention + gpu.attention_count; ++i)
      for (const PickRanked& r : table.attention[i].ranked)
        if (r.version) CHECK_MESSAGE(registry.count(r.version), r.version);
    for (int i = gpu.first_gemm; i < gpu.first_gemm + gpu.gemm_count; ++i)
      for (const PickRanked& r : table.gemm[i].ranked)
        if (r.version) CHECK_MESSAGE(registry.count(r.version), r.version);
  }
}

FS_CPU_TEST_CASE("pick: at a measured point the versions level there come first and then its ranking in order") {
  const PickGpu& gpu = reference_gpu();
  const PickAttentionPoint* pt = square_point(FS_PROBLEM_ATTENTION, DType::FP16, 128, 8192, false);
  REQUIRE(pt != nullptr);
  const AttentionParams p = attention_shape(pt->batch, pt->heads, 8192, 8192, 128, DType::FP16);
  const std::vector<PickCandidate> list = pick_candidates(p, gpu.name, gpu.cc);
  REQUIRE(list.size() >= 2);
  CHECK(level_at(*pt, list[0].kernel->qualified()));
  CHECK(list[0].why.find("level with the fastest") == 0);
  CHECK(list[0].why.find(gpu.folder) != std::string::npos);
  // Every level version before any other, each once; the point's other ranked versions after them in
  // the table's order.
  int level = 0;
  for (const PickRanked& r : pt->ranked) level += r.version && level_at(*pt, r.version);
  REQUIRE(level >= 1);
  for (int i = 0; i < level; ++i) CHECK(level_at(*pt, list[i].kernel->qualified()));
  for (int r = level, i = level; r < kPickRanked && pt->ranked[r].version; ++r, ++i) {
    CHECK(list[i].kernel->qualified() == pt->ranked[r].version);
    CHECK(list[i].why.find("the measured point nearest the problem") != std::string::npos);
  }
  // Each version once, and every forward version of the registry among them (the rule's tail) but
  // those that keep N×N scores.
  const std::vector<std::string> n = names(list);
  CHECK(std::set<std::string>(n.begin(), n.end()).size() == n.size());
  int forwards = 0;
  for (const KernelDesc* k : all_kernels()) forwards += k->is_attention() && !k->info.keeps_scores;
  CHECK(int(list.size()) == forwards);
  for (const PickCandidate& c : list) CHECK(c.kernel->is_attention());
}

FS_CPU_TEST_CASE("pick: a GPU of the reference's architecture under another name takes the reference's ranking") {
  const PickGpu& gpu = reference_gpu();
  const PickAttentionPoint* pt = square_point(FS_PROBLEM_ATTENTION, DType::BF16, 64, 2048, true);
  REQUIRE(pt != nullptr);
  const AttentionParams p = attention_shape(pt->batch, pt->heads, 2048, 2048, 64, DType::BF16, true);
  const std::vector<PickCandidate> list = pick_candidates(p, "A made-up GPU", gpu.cc);
  REQUIRE(!list.empty());
  CHECK(names(list) == names(pick_candidates(p, gpu.name, gpu.cc)));
  CHECK(level_at(*pt, list[0].kernel->qualified()));
}

FS_CPU_TEST_CASE("pick: a measured GPU without points of a problem takes them from one of its architecture") {
  // A partial folder (GEMMs alone, say) must not send its GPU's attention calls to the rule.
  const PickTable table = pick_table();
  const AttentionParams p = attention_shape(2, 16, 4096, 4096, 128, DType::FP16);
  for (int g = 0; g < table.gpu_count; ++g) {
    const PickGpu& gpu = table.gpus[g];
    bool has_forward = false;
    for (int i = gpu.first_attention; i < gpu.first_attention + gpu.attention_count; ++i)
      has_forward |= table.attention[i].problem == FS_PROBLEM_ATTENTION;
    const PickGpu* donor = nullptr;  // the first GPU of its architecture with forward points
    for (int o = 0; o < table.gpu_count && !donor; ++o)
      for (int i = table.gpus[o].first_attention;
           table.gpus[o].cc == gpu.cc && i < table.gpus[o].first_attention + table.gpus[o].attention_count; ++i)
        if (table.attention[i].problem == FS_PROBLEM_ATTENTION) donor = &table.gpus[o];
    const std::vector<PickCandidate> list = pick_candidates(p, gpu.name, gpu.cc);
    REQUIRE(!list.empty());
    INFO(gpu.name);
    const std::string from = std::string("results/") + (has_forward ? gpu.folder : donor ? donor->folder : "-");
    if (has_forward || donor) CHECK(list[0].why.find(from) != std::string::npos);
  }
}

FS_CPU_TEST_CASE("pick: on an unmeasured architecture the newest version comes first") {
  const AttentionParams p = attention_shape(2, 4, 300, 300, 64, DType::FP16);
  const std::vector<PickCandidate> list = pick_candidates(p, "A GPU from the future", 999);
  std::vector<const KernelDesc*> forwards;  // every forward but those that keep N×N scores
  for (const KernelDesc* k : all_kernels())
    if (k->is_attention() && !k->info.keeps_scores) forwards.push_back(k);
  REQUIRE(list.size() == forwards.size());
  for (std::size_t i = 0; i < list.size(); ++i) CHECK(list[i].kernel == forwards[forwards.size() - 1 - i]);
  CHECK(list[0].why.find("no GPU named A GPU from the future or of sm_999") != std::string::npos);
}

FS_CPU_TEST_CASE("pick: the backward ranks backward points and a deterministic call its own rows first") {
  const PickGpu& gpu = reference_gpu();
  const PickAttentionPoint* pt = square_point(FS_PROBLEM_ATTENTION_BWD, DType::FP16, 128, 4096, false);
  REQUIRE(pt != nullptr);
  AttentionBwdParams p{};
  p.fwd = attention_shape(pt->batch, pt->heads, 4096, 4096, 128, DType::FP16);
  std::vector<PickCandidate> list = pick_candidates(p, gpu.name, gpu.cc);
  REQUIRE(!list.empty());
  CHECK(level_at(*pt, list[0].kernel->qualified()));
  for (const PickCandidate& c : list) CHECK(c.kernel->is_attention_bwd());
  // Deterministic: the first candidate is the fastest at the nearest deterministic row, where measured.
  p.deterministic = 1;
  list = pick_candidates(p, gpu.name, gpu.cc);
  REQUIRE(!list.empty());
  bool measured = false;
  const PickTable table = pick_table();
  for (int i = gpu.first_attention; i < gpu.first_attention + gpu.attention_count; ++i)
    measured |= table.attention[i].problem == FS_PROBLEM_ATTENTION_BWD && table.attention[i].deterministic;
  if (measured) CHECK(list[0].why.find("deterministic") != std::string::npos);
}

FS_CPU_TEST_CASE("pick: a GEMM ranks the GEMM points of its operand type") {
  const PickGpu& gpu = reference_gpu();
  const PickTable table = pick_table();
  for (int i = gpu.first_gemm; i < gpu.first_gemm + gpu.gemm_count; ++i) {
    const PickGemmPoint& pt = table.gemm[i];
    GemmParams p{};
    p.m = pt.m, p.n = pt.n, p.k = pt.k;
    p.ab_dtype = pt.ab_dtype;
    const std::vector<PickCandidate> list = pick_candidates(p, gpu.name, gpu.cc);
    REQUIRE(!list.empty());
    // The first candidate is level with the fastest at the point (another point of the same sizes and
    // type may be the nearest only if it measured the same versions level).
    INFO(pt.m, "x", pt.n, "x", pt.k);
    CHECK(level_at(pt, list[0].kernel->qualified()));
    for (const PickCandidate& c : list) CHECK(c.kernel->info.problem == FS_PROBLEM_GEMM);
  }
}

FS_CPU_TEST_CASE("pick: a version whose memory grows with Nq*Nk is marked and never a candidate") {
  // The mark follows the memory: doubling Nq and Nk at least triples extra_bytes exactly where it is set.
  for (const KernelDesc* k : all_kernels()) {
    if (k->info.problem == FS_PROBLEM_GEMM || !k->extra_bytes) continue;
    const double small = double(k->extra_bytes(attention_shape(4, 8, 2048, 2048, 64, DType::FP16)));
    const double large = double(k->extra_bytes(attention_shape(4, 8, 4096, 4096, 64, DType::FP16)));
    INFO(k->qualified(), ": ", small, " -> ", large, " bytes");
    CHECK(k->info.keeps_scores == (large >= 3 * small));
  }
  const std::vector<AttentionParams> shapes = {attention_shape(2, 4, 300, 300, 64, DType::FP16),
                                               attention_shape(1, 2, 17, 17, 256, DType::BF16)};
  for (const AttentionParams& p : shapes)
    for (const PickGpu* gpu : {&reference_gpu(), static_cast<const PickGpu*>(nullptr)}) {
      AttentionBwdParams b{};
      b.fwd = p;
      for (const std::vector<PickCandidate>& list :
           {pick_candidates(p, gpu ? gpu->name : "A GPU from the future", gpu ? gpu->cc : 999),
            pick_candidates(b, gpu ? gpu->name : "A GPU from the future", gpu ? gpu->cc : 999)})
        for (const PickCandidate& c : list) {
          INFO(c.kernel->qualified(), " at D = ", p.head_dim);
          CHECK_FALSE(c.kernel->info.keeps_scores);
        }
    }
}

FS_CPU_TEST_CASE("pick through the C interface: null pointers and no GPU are named errors") {
  fs_pick pick{};
  CHECK(fs_pick_attention_forward(nullptr, &pick) == FS_ERR_NULL_POINTER);
  const AttentionParams p = attention_shape(1, 1, 16, 16, 64, DType::FP16);
  CHECK(fs_pick_attention_forward(&p, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_attention_forward(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_attention_backward(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  CHECK(fs_gemm(nullptr, nullptr) == FS_ERR_NULL_POINTER);
  if (!testing::missing_gpu()) {
    testing::record_skip();
    MESSAGE("SKIPPED the no-GPU half: this machine has a GPU (the GPU cases below pick on it)");
    return;
  }
  CHECK(fs_pick_attention_forward(&p, &pick) == FS_ERR_CUDA);
  CHECK(pick.kernel == nullptr);
  CHECK(std::string(pick.why).find("no GPU") == 0);
}

FS_GPU_TEST_CASE("fs_attention_forward runs the picked version and matches fp64 at odd sizes in every dtype") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 70000;
  struct Case {
    int64_t b, h, kvh, nq, nk, d;
    DType t;
    bool causal;
  };
  const Case cases[] = {{2, 4, 4, 1000, 1000, 128, DType::FP16, true}, {1, 8, 2, 17, 300, 64, DType::BF16, false},
                        {3, 2, 2, 1, 517, 128, DType::FP16, true},     {1, 2, 2, 77, 77, 256, DType::BF16, true},
                        {1, 2, 2, 100, 130, 32, DType::FP16, false},   {1, 2, 2, 33, 65, 64, DType::FP32, false}};
  for (const Case& c : cases) {
    AttentionParams shape = attention_shape(c.b, c.h, c.nq, c.nk, c.d, c.t, c.causal);
    shape.kv_heads = c.kvh;
    AttentionFixture fixture(shape, ++seed);
    AttentionParams p = fixture.params();
    fs_pick pick{};
    const int picked = fs_pick_attention_forward(&p, &pick);
    INFO(describe(shape), " picked ", pick.kernel ? pick.kernel->entry : "nothing", ": ", pick.why);
    REQUIRE(picked == FS_SUCCESS);
    fixture.poison_outputs();
    REQUIRE(fs_attention_forward(&p, nullptr) == FS_SUCCESS);
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    const AttentionCheck check = fixture.compare();
    INFO("O: ", check.o.str(), "  LSE: ", check.lse.str());
    CHECK(check.passed(attention_tolerance(c.t), lse_tolerance(c.t)));
  }
}

FS_GPU_TEST_CASE("fs_attention_backward and fs_gemm run the picked version and match fp64") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 71000;
  for (int deterministic : {0, 1}) {
    const AttentionParams shape = attention_shape(2, 4, 211, 300, 128, DType::FP16, true);
    AttentionBwdFixture fixture(shape, ++seed);
    AttentionBwdParams p = fixture.params();
    p.deterministic = deterministic;
    fs_pick pick{};
    REQUIRE(fs_pick_attention_backward(&p, &pick) == FS_SUCCESS);
    INFO("deterministic=", deterministic, " picked ", pick.kernel->entry, ": ", pick.why);
    fixture.poison_outputs();
    REQUIRE(fs_attention_backward(&p, nullptr) == FS_SUCCESS);
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    const AttentionBwdCheck check = fixture.compare();
    INFO("dQ: ", check.dq.str(), "  dK: ", check.dk.str(), "  dV: ", check.dv.str());
    CHECK(check.passed(backward_tolerance(DType::FP16)));
  }
  for (DType ab : {DType::FP16, DType::BF16, DType::INT8, DType::FP32}) {
    const DType c_type = ab == DType::INT8 ? DType::INT32 : DType::FP32;
    GemmCase g = gemm_case(1000, 517, 333, ab, c_type, false, ab == DType::INT8);
    g.integers = ab != DType::FP32;
    GemmFixture fixture(g, ++seed);
    GemmParams p = fixture.params();
    fs_pick pick{};
    REQUIRE(fs_pick_gemm(&p, &pick) == FS_SUCCESS);
    INFO(describe(g), " picked ", pick.kernel->entry, ": ", pick.why);
    fixture.reset_c();
    REQUIRE(fs_gemm(&p, nullptr) == FS_SUCCESS);
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    CHECK(gemm_passed(g, fixture.compare()));
  }
}

namespace {

// The picking entries as the run of a version's descriptor: run_strided validates with the descriptor
// (stage 04's v4, stage 05's v10: strided, on every GPU this build runs on), then the entry picks again.
// Each also asks which version it runs, on the params it runs (run_strided's buffers, laid out by the
// strides: a query on the fixture's contiguous buffers would find the strided outputs overlapping).
fs_pick last_pick{};
Status run_picked_forward(const AttentionProblem& pr, cudaStream_t stream) {
  if (const int st = fs_pick_attention_forward(&pr.p, &last_pick); st != FS_SUCCESS) return Status(st);
  return Status(fs_attention_forward(&pr.p, stream));
}
Status run_picked_backward(const AttentionBwdProblem& pr, cudaStream_t stream) {
  if (const int st = fs_pick_attention_backward(&pr.p, &last_pick); st != FS_SUCCESS) return Status(st);
  return Status(fs_attention_backward(&pr.p, stream));
}

}  // namespace

// A strided problem ([B, N, H, D], packed QKV slices): the entries pick among the versions that take
// strides (fs_pick names one whose fs_kernel_info.strided is set) and compute what fp64 computes.
FS_GPU_TEST_CASE("the picking entries run strided layouts on a version that takes strides") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 73000;
  const AttentionParams shapes[] = {attention_shape(2, 4, 100, 130, 128, DType::FP16, true),
                                    attention_shape(2, 8, 1, 517, 64, DType::BF16, false)};
  for (AttentionParams shape : shapes) {
    shape.kv_heads = shape.seq_q == 1 ? 2 : 0;
    AttentionFixture fixture(shape, ++seed);
    for (const StridedLayout& layout : {bnhd_layout(shape), packed_qkv_layout(shape)}) {
      last_pick = {};
      const AttentionCheck check =
          fixture.run_strided(kernel_with_run(*find_kernels("stage04/v4").at(0), run_picked_forward), layout);
      INFO(describe(shape), " ", layout.name, " picked ",
           last_pick.kernel ? last_pick.kernel->entry : "nothing", ": ", last_pick.why);
      REQUIRE(check.status == Status::Success);
      CHECK(last_pick.kernel->strided == 1);
      INFO("O: ", check.o.str(), "  LSE: ", check.lse.str());
      CHECK(check.passed(attention_tolerance(dtype_of(shape)), lse_tolerance(dtype_of(shape))));
    }
  }
  const AttentionParams shape = attention_shape(2, 4, 211, 300, 128, DType::FP16, true);
  AttentionBwdFixture fixture(shape, ++seed);
  KernelDesc picked_bwd = *find_kernels("stage05/v10").at(0);
  picked_bwd.run_attention_bwd = run_picked_backward;
  for (const StridedLayout& layout : {bnhd_layout(shape), packed_qkv_layout(shape)}) {
    last_pick = {};
    const AttentionBwdCheck check = fixture.run_strided(picked_bwd, fixture.params(), layout);
    INFO(layout.name, " picked ", last_pick.kernel ? last_pick.kernel->entry : "nothing", ": ", last_pick.why);
    REQUIRE(check.status == Status::Success);
    CHECK(last_pick.kernel->strided == 1);
    INFO("dQ: ", check.dq.str(), "  dK: ", check.dk.str(), "  dV: ", check.dv.str());
    CHECK(check.passed(backward_tolerance(DType::FP16)));
  }
}

FS_GPU_TEST_CASE("the picking entries refuse what no version takes with the first candidate's code") {
  FS_SKIP_WITHOUT_GPU();
  AttentionFixture fixture(attention_shape(1, 2, 64, 64, 64, DType::FP16), 72000);
  AttentionParams p = fixture.params();
  p.head_dim = 1024;  // no version takes it
  fs_pick pick{};
  const int code = fs_pick_attention_forward(&p, &pick);
  CHECK(code == FS_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK(pick.kernel == nullptr);
  p = fixture.params();
  p.seq_q = 0;
  CHECK(fs_attention_forward(&p, nullptr) == fs_pick_attention_forward(&p, &pick));
  CHECK(pick.kernel == nullptr);
  // head_dim 96: stages 01-02 take it, and keep the N×N scores, so the entry refuses and names them.
  AttentionFixture d96(attention_shape(1, 2, 100, 130, 96, DType::FP16), 72002);
  p = d96.params();
  CHECK(fs_pick_attention_forward(&p, &pick) == FS_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK(std::string(pick.why).find("stage01/v1 takes it but keeps") != std::string::npos);
  CHECK(fs_attention_forward(&p, nullptr) == FS_ERR_UNSUPPORTED_HEAD_DIM);
  // head_dim 256 backward: only stage 05's v0 takes it, and it keeps P and dS (N×N) in DRAM, so the
  // entry refuses it and its reason says which version would run it by name.
  AttentionBwdFixture bwd(attention_shape(1, 2, 17, 17, 256, DType::FP16), 72001);
  AttentionBwdParams b = bwd.params();
  const int bwd_code = fs_pick_attention_backward(&b, &pick);
  CHECK(bwd_code == FS_ERR_UNSUPPORTED_HEAD_DIM);
  CHECK(pick.kernel == nullptr);
  INFO(pick.why);
  CHECK(std::string(pick.why).find("stage05/v0 takes it but keeps") != std::string::npos);
  CHECK(fs_attention_backward(&b, nullptr) == bwd_code);
}
