// The collectives a rank ran (reports/REPORT_FORMAT.md "Collectives"): what each moves, at what bandwidth, how
// much of it compute hides. One analyzer of build_typed_report; the job summary (job.h) matches the instances
// across ranks.
//
// Where each collective comes from, strongest evidence first:
//   timing   GPU: the communication kernels (kernel_class.h), one kernel one call; no GPU activity: the host
//            ranges of the collectives' execution (gloo:* on the process group's worker threads; an nccl:* range is
//            only the host's enqueue and times nothing); neither: the Python shim's records of each call
//            (facts.collectives, `run`).
//   args     the kernel's own Kineto collective args (PyTorch >= 2.1: trace::CollectiveArgs), else those of the
//            operator that launched it (record_param_comms by External id), else of the communication operators
//            around its launch on the launching thread; else the kind from a c10d::* / nccl:* name and the size
//            from an nccl:* / gloo:* range's recorded inputs ("Input Dims", "Input type"); else the shim's record
//            of the call the launch happened in; else the kind from the kernel name (ncclKernel_AllReduce_...,
//            which NCCL names SendRecv for every kind that runs as point-to-point: read last, never for sizes).
// Bandwidth follows nccl-tests (doc/PERFORMANCE.md, https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md):
//   algbw = S / t; busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (all_gather, reduce_scatter, all_to_all),
//   1 (broadcast, reduce, send/recv); S = the output bytes for all_gather, the input bytes otherwise; GB = 1e9 B.
//   A rank's own durations include the time it waited for its peers: the job summary splits that off.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "profile_train/model/report.h"

namespace profile_train::analysis {

struct Ctx;
struct GpuSpec;
struct RoleRanges;

// nccl-tests' name of a collective from a "Collective name" arg, a c10d::* / nccl:* / gloo:* name or a DDP/shim
// kind: all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv, barrier, gather,
// scatter; "other" for a collective it does not know; "" for what is not one ("wait", coalescing markers).
std::string collective_kind(std::string_view name);
// The kind an NCCL/RCCL kernel's name spells ("ncclKernel_AllReduce_RING_LL_Sum_float" -> all_reduce), "" when
// the name spells none.
std::string collective_kind_of_kernel(std::string_view kernel_name);

// A dtype as torch names it, and its element size, from a c10 ScalarType name ("Float", "BFloat16") or a Kineto
// "Input type" entry ("float", "c10::BFloat16", "long int"); nullopt for anything else.
struct DtypeInfo {
  std::string name;
  int bytes = 0;
};
std::optional<DtypeInfo> collective_dtype(std::string_view text);

// nccl-tests' bus-bandwidth factor of `kind` over `n` ranks; nullopt when n is unknown (< 2) and the factor
// depends on it, or the kind moves no payload (barrier).
std::optional<double> bus_factor(std::string_view kind, int64_t n);
// nccl-tests' S (bytes) for one call: all_gather its output, reduce_scatter its whole input, send/recv what it
// moves, every other kind its input; nullopt when the counts it needs are unknown (-1).
std::optional<int64_t> collective_bytes(std::string_view kind, int64_t in_nelems, int64_t out_nelems, int elem_bytes,
                                        int64_t group_size);
// The message-size bucket of the collectives table ("<1 KB", "1-10 KB", ..., ">=1 GB", "unknown").
std::string size_bucket(std::optional<int64_t> bytes);
// The elements of a Kineto "Input Dims" rendering's tensors, summed ("[[8, 1024], [], [16]]" -> 8208); nullopt
// when it names no tensor or was cut.
std::optional<int64_t> tensor_elements(std::string_view dims);

// The section over the steady-state steps of `c`; nullopt when the window has no collective. `facts`: the
// report's facts (facts.collectives, the shim's records); `spec`: the GPU's table entry (its link), or null.
std::optional<model::Collectives> collectives_section(const Ctx& c, const RoleRanges& roles,
                                                      const nlohmann::json& facts, const GpuSpec* spec);

}  // namespace profile_train::analysis
