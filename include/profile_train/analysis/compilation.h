// The compiled program in a trace (reports/REPORT_FORMAT.md "Compilation"): torch.compile's ranges and
// kernels, CUDA-graph replays, and dynamo's counters from the shim's facts.compile.
//
// What each range is (PyTorch's own record_function names, torch 2.0-2.11):
//   "Torch-Compiled Region: F/C"          torch/_dynamo/eval_frame.py: a dynamo frame entered (frame F, compile C);
//                                          a graph break's resume function is a frame of its own, nested in its
//                                          caller's region
//   "CompiledFunction"                     torch/_functorch/_aot_autograd: the forward graph of a training region
//   "CompiledFunctionBackward"             its backward (autograd node; "autograd::engine::evaluate_function: ..." around it)
//   "## Call CompiledFxGraph <key> ##"     torch/_inductor/output_code.py: one Inductor graph call (inference too)
//   "<name> (dynamo_timed)", compile_fx*,  torch/_dynamo/utils.py dynamo_timed: compilation work
//     *compile_inner*
// Kernels Inductor generates are named triton_<kind>_fused_<ops>_<n> (torch/_inductor/codegen/triton.py,
// config.triton.descriptive_names; "triton__0d1d2d" before 2.1) and cpp_fused_<ops>_<n> on the CPU
// (codegen/cpp.py; a host range only with config.cpp.enable_kernel_profile). A CUDA graph replays its kernels
// under one cudaGraphLaunch / hipGraphLaunch call (their correlation id is the launch's).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "profile_train/model/report.h"

namespace profile_train::analysis {

struct Ctx;

enum class CompiledRange { kNone, kFrame, kForwardGraph, kBackwardGraph, kInductorGraph };
// What a host range's name says it is.
CompiledRange compiled_range_of(std::string_view name);
// torch.compile's own compilation work (dynamo_timed ranges, compile_fx, compile_inner).
bool is_compile_range(std::string_view name);

struct InductorName {
  std::string kind;                     // pointwise, reduction, persistent_reduction, template, foreach, cpp, other
  std::optional<std::string> fused_ops; // "add_cos_sin"; null when the name does not carry them
};
// An Inductor-generated kernel's name read, or nullopt when the name is not one.
std::optional<InductorName> parse_inductor_kernel(std::string_view name);

// The section: from the steady-state steps of `c` and the recorded facts (facts.compile). nullopt when neither
// shows compilation.
std::optional<model::Compilation> compilation_section(const Ctx& c, const nlohmann::json& facts);

}  // namespace profile_train::analysis
