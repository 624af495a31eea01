// One way to turn run-time values into template instances: a static switch.
//
// A kernel is compiled for a few element types and head_dims and for both values of some flags. A
// list below names those instances once, and that one list gives both
//   - what the kernel takes (Dtypes::kMask, HeadDims::kValues): the validation and the library's
//     description of the kernel (fs_kernel_info) are built from it, and
//   - the dispatch: Dtypes::dispatch(dtype, f) calls f(DtypeTag<t>{}) for the listed t equal to the
//     run-time dtype, HeadDims::dispatch(d, f) calls f(std::integral_constant<int, D>{}).
// so the two cannot disagree. A value not in the list is an error (UnsupportedDtype,
// UnsupportedHeadDim), never a silent default instance. Each dispatch is a fold over the list: for
// HeadDims<32, 64, 128> it stands for
//   if (d == 32) return f(32); if (d == 64) return f(64); if (d == 128) return f(128);
//   return Status::UnsupportedHeadDim;
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "common/lib/dtype.h"
#include "common/lib/status.h"

namespace fs {

// A compile-time element type: its run-time code and its C++ type.
template <DType t>
struct DtypeTag {
  static constexpr DType value = t;
  using type = typename Element<t>::type;
};

template <DType... Ts>
struct Dtypes {
  static constexpr uint32_t kMask = (0u | ... | dtype_bit(Ts));

  template <class F>
  static Status dispatch(int32_t dtype, F&& f) {
    Status st = Status::UnsupportedDtype;
    ((dtype == static_cast<int32_t>(Ts) && (st = f(DtypeTag<Ts>{}), true)) || ...);
    return st;
  }
};

template <int... Ds>
struct HeadDims {
  static constexpr int kCount = sizeof...(Ds);
  static constexpr int kValues[] = {Ds...};
  static constexpr int kMax = std::max({Ds...});

  static constexpr bool contains(int64_t d) { return ((d == Ds) || ...); }

  template <class F>
  static Status dispatch(int64_t d, F&& f) {
    Status st = Status::UnsupportedHeadDim;
    ((d == Ds && (st = f(std::integral_constant<int, Ds>{}), true)) || ...);
    return st;
  }

  // The largest f(D) over the list, at compile time: e.g. the shared memory the biggest instance needs.
  template <class F>
  static constexpr std::size_t max_of(F f) {
    std::size_t m = 0;
    ((m = f(std::integral_constant<int, Ds>{}) > m ? f(std::integral_constant<int, Ds>{}) : m), ...);
    return m;
  }
};

// Kernels whose head_dim is a run-time loop bound (stages 01 and 02): any value from 1 to kMax.
template <int Max>
struct AnyHeadDim {
  static constexpr int kCount = 0;
  static constexpr int kMax = Max;
  static constexpr bool contains(int64_t d) { return d >= 1 && d <= Max; }
};

// Calls f(std::true_type{}) or f(std::false_type{}): a flag (causal, a transpose) as a template argument.
template <class F>
Status dispatch_bool(bool b, F&& f) {
  return b ? f(std::true_type{}) : f(std::false_type{});
}

}  // namespace fs
