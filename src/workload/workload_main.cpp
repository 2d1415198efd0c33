// `profile-train-workload`: options, the run, progress lines, --result and facts-<pid>.json. No LibTorch
// besides the CUDA availability check.
#include "workload_main.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <torch/cuda.h>

#include "profile_train/format/protocol.h"
#include "results.h"
#include "train.h"

namespace profile_train::workload {
namespace {

Status write_json_atomically(const std::filesystem::path& path, const nlohmann::json& j) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return IoError(tmp + ": cannot open for writing");
    out << j.dump(2) << "\n";
    if (!out) return IoError(tmp + ": write failed");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return IoError(path.string() + ": " + ec.message());
  return Status::Ok();
}

}  // namespace

int workload_main(int argc, const char* const* argv) {
  auto parsed = parse_options(argc, argv);
  if (!parsed.ok()) {
    std::cerr << "profile-train-workload: " << parsed.status().message() << "\n";
    return kExitBadInput;
  }
  if (parsed->help_requested) {
    std::cout << parsed->help_text;
    return kExitOk;
  }
  const WorkloadOptions& o = parsed->options;
  if (o.device == DeviceChoice::kCuda && !torch::cuda::is_available()) {
    std::cerr << "profile-train-workload: --device cuda: LibTorch sees no CUDA device on this machine\n";
    return kExitBadInput;
  }
  const ModelConfig mc = ModelConfig::for_options(o);
  std::cout << "profile-train-workload: model=" << to_string(o.model) << " " << shape_json(o).dump()
            << " batch=" << o.effective_batch_size()
            << " workers=" << o.workers << " amp=" << to_string(o.amp) << " optimizer=" << to_string(o.optimizer)
            << (o.fused ? " (fused)" : o.foreach ? " (foreach)" : "") << " steps=" << o.steps
            << " warmup=" << o.warmup;
  const auto planted = o.planted.names();
  if (!planted.empty()) {
    std::cout << " planted=";
    for (size_t i = 0; i < planted.size(); ++i) std::cout << (i ? "," : "") << planted[i];
  }
  std::cout << std::endl;

  // Facts for `profile-train run` (PROFILE_TRAIN_OUT is its capture folder): written once set up, so a run
  // cut short still has them, and again at the end with the memory peak.
  const char* facts_dir = std::getenv(profile_train::agent::protocol::kEnvOut);
  const std::filesystem::path facts_path =
      facts_dir != nullptr && *facts_dir != '\0'
          ? std::filesystem::path(facts_dir) / (std::string(profile_train::agent::protocol::kFactsFilePrefix) + std::to_string(::getpid()) +
                                                   std::string(profile_train::agent::protocol::kFactsFileExtension))
          : std::filesystem::path();
  auto write_facts = [&](const TrainResult& r) {
    if (facts_path.empty()) return Status::Ok();
    return write_json_atomically(facts_path, facts_json(o, r));
  };

  const int64_t every = std::max<int64_t>(1, o.steps / 5);
  auto result = train(
      o, mc,
      [&](int64_t i, const StepTiming& t) {
    if ((i + 1) % every == 0 || i + 1 == o.steps) {
      char line[160];
      std::snprintf(line, sizeof line, "  step %lld/%lld  %.2f ms (data wait %.2f ms)\n",
                    static_cast<long long>(i + 1), static_cast<long long>(o.steps), t.step_ms, t.data_ms);
      std::cout << line << std::flush;
    }
      },
      [&](const TrainResult& setup) {
        if (Status st = write_facts(setup); !st.ok()) std::cerr << "profile-train-workload: " << st.message() << "\n";
      });
  if (!result.ok()) {
    std::cerr << "profile-train-workload: " << result.status().message() << "\n";
    return result.status().exit_code();
  }
  const TrainResult& r = *result;
  const auto steps = summarize([&] {
    std::vector<double> v;
    for (const auto& t : r.timings) v.push_back(t.step_ms);
    return v;
  }());
  char line[256];
  std::snprintf(line, sizeof line,
                "device %s: %.1f samples/s, step %.2f ms median, data wait %.1f%% of the step, loss %.4f -> %.4f\n",
                r.device.c_str(), r.samples_per_s, steps.median, 100.0 * r.data_wait_fraction,
                r.losses.empty() ? 0.0 : r.losses.front(), r.losses.empty() ? 0.0 : r.losses.back());
  std::cout << line << std::flush;

  int rc = kExitOk;
  if (!o.result_path.empty()) {
    Status s = write_json_atomically(o.result_path, result_json(o, r));
    if (!s.ok()) {
      std::cerr << "profile-train-workload: " << s.message() << "\n";
      rc = s.exit_code();
    }
  }
  if (Status st = write_facts(r); !st.ok()) {
    std::cerr << "profile-train-workload: " << st.message() << "\n";
    rc = st.exit_code();
  }
  return rc;
}

}  // namespace profile_train::workload
