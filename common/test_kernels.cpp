// Tests of the plumbing every kernel goes through: the registry and its C view, the static switch,
// the device check on made-up GPUs (CPU only), and on a GPU, every launcher (forward, backward, GEMM)
// captured into a CUDA graph and replayed.
#include <doctest/doctest.h>
#include <dlfcn.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "common/lib/cuda_check.h"
#include "common/lib/device.h"
#include "common/lib/dispatch.h"
#include "common/lib/kernel.h"
#include "common/tools/attention_check.h"
#include "common/tools/check.h"
#include "common/tools/device_buffer.h"
#include "common/tools/gemm_check.h"
#include "common/tools/gpu_test.h"

using namespace fs;

namespace {

std::vector<int> archs_of(const fs_kernel_info& k) { return std::vector<int>(k.archs, k.archs + k.num_archs); }

}  // namespace

FS_CPU_TEST_CASE("FLASHSTAGES_ONLY selects whole versions and whole sub-rungs by name") {
  using fs::testing::only_selects;
  CHECK(only_selects(nullptr, "stage05/v4"));
  CHECK(only_selects("", "stage05/v4"));
  CHECK(only_selects("stage05/v4", "stage05/v4"));
  CHECK(only_selects("stage04/v6,stage05/v4", "stage05/v4"));
  CHECK(only_selects("stage07/gemm", "stage07/gemm/v2"));
  CHECK(only_selects("stage05", "stage05/v1"));
  CHECK_FALSE(only_selects("stage05/v4", "stage05/v3"));
  CHECK_FALSE(only_selects("stage05/v1", "stage05/v10"));  // a prefix must end at a '/'
  CHECK_FALSE(only_selects("stage0", "stage05/v1"));
  CHECK_FALSE(only_selects(",", "stage05/v1"));
}

FS_CPU_TEST_CASE("registry: every stage's versions in order and each with a C entry and a consistent description") {
  const auto& all = all_kernels();
  REQUIRE(all.size() >= 16);
  CHECK(fs_kernel_count() == int(all.size()));
  CHECK(fs_kernel_at(-1) == nullptr);
  CHECK(fs_kernel_at(fs_kernel_count()) == nullptr);
  std::set<std::string> entries, names;
  std::string previous;
  for (int i = 0; i < fs_kernel_count(); ++i) {
    const fs_kernel_info* info = fs_kernel_at(i);
    REQUIRE(info == &all[i]->info);
    INFO(all[i]->qualified());
    CHECK(entries.insert(info->entry).second);
    CHECK(names.insert(all[i]->qualified()).second);
    // Stage, then version order, by number (v10 after v9).
    const std::string key = std::string(info->stage) + "/" + std::string(7 - std::strlen(info->version), '0') +
                            (info->version + 1);
    CHECK(key > previous);
    previous = key;
    CHECK(dlsym(RTLD_DEFAULT, info->entry) != nullptr);  // the C entry it names exists
    CHECK(std::strlen(info->technique) > 10);
    CHECK(info->num_archs > 0);
    CHECK(info->in_dtypes != 0);
    if (info->problem == FS_PROBLEM_ATTENTION || info->problem == FS_PROBLEM_ATTENTION_BWD) {
      // One run pointer, the one of its kind.
      CHECK(bool(all[i]->run_attention) == (info->problem == FS_PROBLEM_ATTENTION));
      CHECK(bool(all[i]->run_attention_bwd) == (info->problem == FS_PROBLEM_ATTENTION_BWD));
      CHECK(bool(all[i]->extra_bytes));
      // O (or the gradients) in the input's type; bf16 for fp8 inputs (stage 07 attention v9).
      CHECK(info->out_dtypes == (info->in_dtypes == dtype_bit(DType::FP8_E4M3) ? dtype_bit(DType::BF16) : info->in_dtypes));
      CHECK(info->max_head_dim > 0);
    } else {
      CHECK(info->problem == FS_PROBLEM_GEMM);
      CHECK(bool(all[i]->run_gemm));
    }
  }
  CHECK(find_kernels("stage04").size() == 6);
  CHECK(find_kernels("stage05").size() == 11);
  CHECK(find_kernels("stage05/v1").size() == 1);  // not v10 too
  CHECK(find_kernels("stage04/v3").size() == 1);
  CHECK(find_kernels("stage0").empty());  // a prefix must end at a '/'
  CHECK(find_kernels("stage04/v9").empty());
}

FS_CPU_TEST_CASE("layouts: the versions that take strides say so / the others refuse a strided problem by name") {
  // What issue 53 gave strides: every stage 07 attention forward, stage 04's v4 kernel (v4, v5) and v6,
  // stage 05's v10 backward; and every stage 07 attention backward (issue 54: its TMA maps take the
  // strides as the forward's do). Every other attention version takes the contiguous layout alone.
  const std::set<std::string> strided = {"stage04/v4", "stage04/v5", "stage04/v6", "stage05/v10"};
  for (const KernelDesc* k : all_kernels()) {
    if (!k->is_attention() && !k->is_attention_bwd()) {
      CHECK(k->info.strided == 0);
      continue;
    }
    INFO(k->qualified());
    const bool takes = strided.count(k->qualified()) > 0 || std::string(k->info.stage) == "stage07/attention" ||
                       std::string(k->info.stage) == "stage07/attention_bwd";
    CHECK(k->info.strided == int(takes));
    CHECK(k->attention.strided == takes);
    // Its first dtype and head_dim, 16-byte aligned fake tensors, laid out [B, N, H, D]: validation alone
    // (no device), so the refusal is the version's own.
    AttentionParams p{};
    p.batch = 2, p.heads = 4, p.seq_q = 17, p.seq_k = 33;
    p.head_dim = k->attention.num_head_dims ? k->attention.head_dims[0] : std::min(64, k->attention.max_head_dim);
    p.dtype = 0;
    while (!(k->attention.dtypes & (1u << p.dtype))) ++p.dtype;
    if (p.dtype == FS_FP8_E4M3) p.q_descale = p.k_descale = p.v_descale = 1.0f;
    p.q = reinterpret_cast<const void*>(0x1000000);
    p.k = reinterpret_cast<const void*>(0x2000000);
    p.v = reinterpret_cast<const void*>(0x3000000);
    p.o = reinterpret_cast<void*>(0x4000000);
    const int64_t h = p.heads, d = p.head_dim;
    const int64_t q_strides[3] = {p.seq_q * h * d, d, h * d}, kv_strides[3] = {p.seq_k * h * d, d, h * d};
    for (int i = 0; i < 3; ++i) {
      p.q_strides[i] = p.o_strides[i] = q_strides[i];
      p.k_strides[i] = p.v_strides[i] = kv_strides[i];
    }
    Status st;
    if (k->is_attention()) {
      st = validate(p, k->attention);
    } else {
      AttentionBwdParams b{};
      b.fwd = p;
      b.fwd.lse = reinterpret_cast<float*>(0x5000000);
      b.d_o = reinterpret_cast<const void*>(0x6000000);
      b.dq = reinterpret_cast<void*>(0x7000000);
      b.dk = reinterpret_cast<void*>(0x8000000);
      b.dv = reinterpret_cast<void*>(0x9000000);
      st = validate(b, k->attention);
    }
    if (takes)
      CHECK(st == Status::Success);
    else
      CHECK(st == Status::UnsupportedLayout);
  }
}

FS_CPU_TEST_CASE("static switch: one list gives the instances and what the kernel takes") {
  using Dts = Dtypes<DType::FP16, DType::BF16>;
  using Dims = HeadDims<32, 64, 128>;
  int seen = 0;
  CHECK(Dims::dispatch(64, [&](auto d) { return seen = decltype(d)::value, Status::Success; }) == Status::Success);
  CHECK(seen == 64);
  CHECK(Dims::dispatch(96, [&](auto) { return Status::Success; }) == Status::UnsupportedHeadDim);
  CHECK(Dims::dispatch(256, [&](auto) { return Status::Success; }) == Status::UnsupportedHeadDim);
  CHECK(Dts::dispatch(FS_BF16, [&](auto t) {
          return std::is_same_v<typename decltype(t)::type, __nv_bfloat16> ? Status::Success : Status::CudaError;
        }) == Status::Success);
  CHECK(Dts::dispatch(FS_FP32, [&](auto) { return Status::Success; }) == Status::UnsupportedDtype);
  CHECK(Dts::dispatch(42, [&](auto) { return Status::Success; }) == Status::UnsupportedDtype);
  CHECK(dispatch_bool(true, [](auto b) { return decltype(b)::value ? Status::Success : Status::CudaError; }) ==
        Status::Success);
  constexpr AttentionSupport s = attention_support<Dts, Dims>(16, true);
  static_assert(s.dtypes == (dtype_bit(DType::FP16) | dtype_bit(DType::BF16)));
  static_assert(s.num_head_dims == 3 && s.head_dims[2] == 128 && s.max_head_dim == 128);
  static_assert(Dims::max_of([](auto d) { return std::size_t(decltype(d)::value) * 2; }) == 256);
  // Every stage 04 version takes exactly the head_dims its dispatch has instances for.
  for (const KernelDesc* k : find_kernels("stage04")) {
    INFO(k->qualified());
    CHECK(std::vector<int>(k->info.head_dims, k->info.head_dims + k->info.num_head_dims) ==
          std::vector<int>{32, 64, 128, 256});
  }
}

FS_CPU_TEST_CASE("device check: decided from the device's properties alone — on made-up GPUs") {
  const KernelDesc& v7 = *find_kernels("stage06/v7").at(0);
  const KernelDesc& v1 = *find_kernels("stage04/v1").at(0);
  // stage 06 v7 asks for more than 99 KiB per block: an sm_86 (RTX 30xx, 99 KiB) cannot run it, an
  // A100 (163 KiB) or an H100 (227 KiB) can, whatever architectures this build carries.
  REQUIRE(v7.info.smem_bytes > 99 * 1024);
  const int cc = archs_of(v7.info).front();
  DeviceProps small{0, cc, 99 * 1024, 84, 6u << 20}, large{0, cc, 227 * 1024, 132, 50u << 20};
  CHECK(device_supports(v7.info, small) == Status::UnsupportedDevice);
  CHECK(unsupported_reason(v7.info, small).find("99 KiB") != std::string::npos);
  CHECK(device_supports(v7.info, large) == Status::Success);
  CHECK(unsupported_reason(v7.info, large).empty());
  // A compute capability older than all the build's code (sm_75) runs nothing.
  const DeviceProps old_gpu{0, 75, 227 * 1024, 132, 50u << 20};
  CHECK(device_supports(v1.info, old_gpu) == Status::UnsupportedDevice);
  CHECK(unsupported_reason(v1.info, old_gpu).find("sm_75") != std::string::npos);
  // Every listed capability runs its machine code.
  for (int listed : archs_of(v1.info))
    CHECK(device_supports(v1.info, {0, listed, 227 * 1024, 1, 1}) == Status::Success);
  // A newer GPU than any the build has machine code for (a hypothetical sm_130) runs the PTX, where the
  // version carries some (stage 04 does unless the build pins architectures without it).
  const DeviceProps new_gpu{0, 130, 227 * 1024, 132, 50u << 20};
  CHECK(device_supports(v1.info, new_gpu) == (v1.info.ptx_arch > 0 ? Status::Success : Status::UnsupportedDevice));
  CHECK(fs_kernel_check_device(nullptr, 0) == FS_ERR_NULL_POINTER);
}

FS_CPU_TEST_CASE("device check: PTX runs on its own architecture and every newer GPU while machine code runs on its list alone") {
  fs_kernel_info sass_only{};  // machine code for sm_80 (8.0, 8.6, 8.7, 8.9) and sm_90, no PTX
  sass_only.num_archs = 5;
  const int listed[] = {80, 86, 87, 89, 90};
  for (int i = 0; i < 5; ++i) sass_only.archs[i] = listed[i];
  fs_kernel_info with_ptx = sass_only;  // the same, and compute_90's PTX
  with_ptx.ptx_arch = 90;
  for (int cc : {80, 86, 89, 90}) {
    INFO("sm_", cc);
    CHECK(device_supports(sass_only, {0, cc, 227 * 1024, 1, 1}) == Status::Success);
    CHECK(device_supports(with_ptx, {0, cc, 227 * 1024, 1, 1}) == Status::Success);
  }
  for (int cc : {100, 120}) {  // Blackwell: no machine code, the driver compiles the PTX
    INFO("sm_", cc);
    const DeviceProps dev{0, cc, 227 * 1024, 1, 1};
    CHECK(device_supports(sass_only, dev) == Status::UnsupportedDevice);
    CHECK(device_supports(with_ptx, dev) == Status::Success);
    CHECK(unsupported_reason(sass_only, dev).find("sm_" + std::to_string(cc) + " is not among") != std::string::npos);
  }
  const DeviceProps turing{0, 75, 227 * 1024, 1, 1};  // older than any of it
  CHECK(device_supports(with_ptx, turing) == Status::UnsupportedDevice);
  CHECK(unsupported_reason(with_ptx, turing).find("from its PTX, sm_90 and newer") != std::string::npos);
  // PTX older than the machine code (compute_80 beside sm_90 only) reaches 8.x too.
  fs_kernel_info hopper{};
  hopper.num_archs = 1;
  hopper.archs[0] = 90;
  hopper.ptx_arch = 80;
  CHECK(device_supports(hopper, {0, 86, 227 * 1024, 1, 1}) == Status::Success);
  CHECK(device_supports(hopper, turing) == Status::UnsupportedDevice);
}

FS_CPU_TEST_CASE("device check through the C interface without a GPU is FS_ERR_CUDA") {
  if (!testing::missing_gpu()) {
    testing::record_skip();
    MESSAGE("SKIPPED: this machine has a GPU (the graph test below runs every kernel on it)");
    return;
  }
  CHECK(fs_kernel_check_device(fs_kernel_at(0), 0) == FS_ERR_CUDA);
}

namespace {

// Captures `launch` on a non-blocking stream in global mode (the strictest: any call that is not
// allowed during a capture fails it), instantiates the graph, then replays it twice.
void capture_and_replay(const std::function<Status(cudaStream_t)>& launch, const std::function<void()>& before_replay) {
  cudaStream_t stream;
  FS_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  FS_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const Status st = launch(stream);
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  INFO("launch during capture: ", std::string(status_name(st)), " (", std::string(last_cuda_error()),
       "); end of capture: ", std::string(cudaGetErrorString(end)));
  REQUIRE(st == Status::Success);
  REQUIRE(end == cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  FS_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 2; ++replay) {
    before_replay();
    // The poison is a cudaMemset on the legacy default stream, which a non-blocking stream does not
    // wait for: without this the replay and the poison race (initcheck's timing lost that race).
    FS_CUDA_CHECK(cudaDeviceSynchronize());
    FS_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    FS_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  FS_CUDA_CHECK(cudaGraphExecDestroy(exec));
  FS_CUDA_CHECK(cudaGraphDestroy(graph));
  FS_CUDA_CHECK(cudaStreamDestroy(stream));
}

// The first type a kernel takes, and a head_dim it takes (64 where it can).
DType first_dtype(uint32_t set) {
  for (DType t : kAllDtypes)
    if (set & dtype_bit(t)) return t;
  return DType::FP32;
}
int64_t some_head_dim(const KernelDesc& k) {
  if (k.info.num_head_dims == 0) return 64;
  const int* end = k.info.head_dims + k.info.num_head_dims;
  return std::find(k.info.head_dims, end, 64) != end ? 64 : k.info.head_dims[0];
}

}  // namespace

FS_GPU_TEST_CASE("every launcher can be captured into a CUDA graph — and the replays are right") {
  FS_SKIP_WITHOUT_GPU();
  uint64_t seed = 30000;
  for (const KernelDesc* k : all_kernels()) {
    if (!testing::runs_here(*k)) continue;
    INFO(k->qualified());
    if (k->is_attention()) {
      const DType t = first_dtype(k->info.in_dtypes);
      const AttentionParams shape = attention_shape(2, 3, 100, 130, some_head_dim(*k), t, /*causal=*/true);
      AttentionFixture fixture(shape, ++seed);
      // Once outside a capture first, as a program would before capturing (v5 tunes here).
      REQUIRE(fixture.run(*k).status == Status::Success);
      capture_and_replay([&](cudaStream_t s) { return launch(*k, fixture.params(), s); },
                         [&] { fixture.poison_outputs(); });
      const AttentionCheck c = fixture.compare();
      INFO("O: ", c.o.str(), "  LSE: ", c.lse.str());
      CHECK(c.passed(attention_tolerance(t), lse_tolerance(t)));
    } else if (k->is_attention_bwd()) {
      const DType t = first_dtype(k->info.in_dtypes);
      const AttentionParams shape = attention_shape(2, 3, 100, 130, some_head_dim(*k), t, /*causal=*/true);
      AttentionBwdFixture fixture(shape, ++seed);
      REQUIRE(fixture.run(*k).status == Status::Success);
      // Without delta: the version's workspace is allocated and freed inside the graph too.
      AttentionBwdParams p = fixture.params();
      p.delta = nullptr;
      capture_and_replay([&](cudaStream_t s) { return launch(*k, p, s); }, [&] { fixture.poison_outputs(); });
      const AttentionBwdCheck c = fixture.compare(/*with_delta=*/false);
      INFO("dQ: ", c.dq.str(), "  dK: ", c.dk.str(), "  dV: ", c.dv.str());
      CHECK(c.passed(backward_tolerance(t)));
    } else {
      const DType ab = first_dtype(k->info.in_dtypes);
      // B stored N×K where the version takes nothing else (stage 07's int8: its only layout).
      const bool trans_b = !k->gemm.takes_layout(false, false);
      GemmCase g = gemm_case(100, 130, 70, ab, first_dtype(k->info.out_dtypes), false, trans_b);
      g.integers = ab != DType::FP32;
      g.shape.lda = 80, g.shape.ldb = trans_b ? 80 : 144;  // rows of 16-element multiples: what stage 07's TMA reads
      GemmFixture fixture(g, ++seed);
      capture_and_replay([&](cudaStream_t s) { return launch(*k, fixture.params(), s); }, [&] { fixture.reset_c(); });
      const GemmCheck c = fixture.compare();
      INFO("C: ", c.c.str());
      CHECK(gemm_passed(g, c));
    }
  }
}

FS_GPU_TEST_CASE("variable-length launches can be captured too: nothing is read on the host") {
  FS_SKIP_WITHOUT_GPU();
  // Packed batches of three entries, the lengths in device memory, max_seq_q given and not.
  const std::vector<int32_t> cu_q{0, 40, 41, 100}, cu_k{0, 50, 80, 130};
  DeviceBuffer<int32_t> d_cu_q(cu_q), d_cu_k(cu_k);
  uint64_t seed = 31000;
  for (const KernelDesc* k : all_kernels()) {
    if (!k->is_attention() || !k->attention.varlen || !testing::runs_here(*k)) continue;
    for (int64_t max_seq_q : {int64_t(0), int64_t(59)}) {
      INFO(k->qualified(), " max_seq_q=", max_seq_q);
      // One head, packed [H, total, D]: the same memory as a dense B = 1, H = 1 problem of the totals.
      const DType t = first_dtype(k->info.in_dtypes);
      AttentionFixture fixture(attention_shape(1, 1, 100, 130, 64, t), ++seed, /*max_heads=*/-1);
      AttentionParams p = fixture.params();
      p.batch = 3;
      p.cu_seqlens_q = d_cu_q.get();
      p.cu_seqlens_k = d_cu_k.get();
      p.max_seq_q = max_seq_q;
      REQUIRE(launch(*k, p, nullptr) == Status::Success);
      FS_CUDA_CHECK(cudaDeviceSynchronize());
      DeviceBuffer<unsigned char> eager(std::size_t(100 * 64) * dtype_size(t));
      FS_CUDA_CHECK(cudaMemcpy(eager.get(), p.o, eager.bytes(), cudaMemcpyDeviceToDevice));
      capture_and_replay([&](cudaStream_t s) { return launch(*k, p, s); }, [&] { fixture.poison_outputs(); });
      // The replay writes exactly what the eager launch wrote (the eager one is checked in stage 04's tests).
      std::vector<unsigned char> a(eager.bytes()), b(eager.bytes());
      FS_CUDA_CHECK(cudaMemcpy(a.data(), eager.get(), a.size(), cudaMemcpyDeviceToHost));
      FS_CUDA_CHECK(cudaMemcpy(b.data(), p.o, b.size(), cudaMemcpyDeviceToHost));
      CHECK(a == b);
    }
  }
}

FS_GPU_TEST_CASE("stage04 v5 called for the first time inside a capture takes v4's shape and still tunes later") {
  FS_SKIP_WITHOUT_GPU();
  const KernelDesc& v5 = *find_kernels("stage04/v5").at(0);
  if (!testing::runs_here(v5)) return;
  // A key no earlier call of this process has tuned: D = 32, bf16, causal.
  const AttentionParams shape = attention_shape(1, 2, 77, 200, 32, DType::BF16, /*causal=*/true);
  AttentionFixture fixture(shape, 32000);
  capture_and_replay([&](cudaStream_t s) { return launch(v5, fixture.params(), s); },
                     [&] { fixture.poison_outputs(); });
  const AttentionCheck c = fixture.compare();
  CHECK(c.passed(attention_tolerance(DType::BF16), lse_tolerance(DType::BF16)));
  // Outside the capture the same key is tuned and the result stays right.
  CHECK(fixture.run(v5).passed(attention_tolerance(DType::BF16), lse_tolerance(DType::BF16)));
}
