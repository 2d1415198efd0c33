// RAII NVTX push/pop. Names follow reports/REPORT_FORMAT.md ("Step and phase annotation names") so that
// `profile-train run` finds the same step structure as for a Python script traced by Kineto.
// Without the NVTX3 headers (PT_WORKLOAD_HAVE_NVTX=0) the ranges compile to nothing.
#pragma once

#include <string>

#if PT_WORKLOAD_HAVE_NVTX
#include <nvtx3/nvToolsExt.h>
#endif

namespace profile_train::workload {

inline constexpr const char* kRangeDataWait = "enumerate(DataLoader)#WorkloadDataLoader.__next__";
inline constexpr const char* kRangeH2d = "## h2d ##";
inline constexpr const char* kRangeForward = "## forward ##";
inline constexpr const char* kRangeBackward = "## backward ##";

class NvtxRange {
 public:
  // `enabled` = false makes the range a no-op (warm-up steps are not annotated).
  NvtxRange(const char* name, bool enabled) : enabled_(enabled) {
#if PT_WORKLOAD_HAVE_NVTX
    if (enabled_) nvtxRangePushA(name);
#else
    (void)name;
#endif
  }
  NvtxRange(const std::string& name, bool enabled) : NvtxRange(name.c_str(), enabled) {}
  ~NvtxRange() {
#if PT_WORKLOAD_HAVE_NVTX
    if (enabled_) nvtxRangePop();
#endif
  }
  NvtxRange(const NvtxRange&) = delete;
  NvtxRange& operator=(const NvtxRange&) = delete;

 private:
  bool enabled_;
};

}  // namespace profile_train::workload
