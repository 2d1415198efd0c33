// pt_render_report: renders report.html from a report.json and, optionally, a trace file (any format the
// importers read) or a synthetic step of N events. Used by bench_html.sh and for screenshots.
//   pt_render_report REPORT.json OUT.html [TRACE | --synthetic-events N]
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "profile_train/model/report_json.h"
#include "profile_train/report/writers.h"
#include "profile_train/trace/importer.h"
#include "profile_train/trace/model.h"

namespace model = profile_train::model;

using namespace profile_train;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: pt_render_report REPORT.json OUT.html [TRACE | --synthetic-events N]\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json report = nlohmann::json::parse(ss.str(), nullptr, false);
  if (report.is_discarded()) {
    std::cerr << argv[1] << ": not valid JSON\n";
    return 2;
  }
  trace::Trace trace;
  bool have_trace = false;
  if (argc >= 5 && std::string(argv[3]) == "--synthetic-events") {
    // One step window from the report (or [0, 100 ms]) filled with N back-to-back kernels + launches.
    const long n = std::atol(argv[4]);
    int64_t start = 0, dur = 100'000'000;
    if (report.contains("steps") && report["steps"].contains("per_step") && !report["steps"]["per_step"].empty()) {
      start = report["steps"]["per_step"][0].value("start_ns", int64_t{0});
      report["steps"]["per_step"] = nlohmann::json::array({report["steps"]["per_step"][0]});
      dur = static_cast<int64_t>(report["steps"]["per_step"][0].value("duration_ms", 100.0) * 1e6);
      report["steps"]["median_ms"] = dur / 1e6;
    }
    for (long i = 0; i < n; ++i) {
      trace::Event e;
      e.start_ns = start + (dur * i) / n;
      e.dur_ns = std::max<int64_t>(1, dur / n - 50);
      const bool gpu = i % 2 == 0;
      e.cat = gpu ? trace::Category::kKernel : trace::Category::kRuntime;
      e.is_gpu = gpu;
      e.pid = gpu ? 0 : 1;
      e.tid = gpu ? 7 : 1;
      e.device = gpu ? 0 : -1;
      e.name = trace.strings.intern(gpu ? "kernel_" + std::to_string(i % 97) : "cudaLaunchKernel");
      trace.events.push_back(e);
    }
    trace.finalize();
    have_trace = true;
  } else if (argc >= 4) {
    const auto t0 = std::chrono::steady_clock::now();
    auto loaded = trace::load_trace(argv[3]);
    if (!loaded.ok()) {
      std::cerr << loaded.status().message() << "\n";
      return loaded.status().exit_code();
    }
    trace = std::move(*loaded);
    have_trace = true;
    std::cerr << "loaded " << trace.events.size() << " events in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto typed = model::report_from_json(report);
  if (!typed.ok()) {
    std::cerr << typed.status().message() << "\n";
    return typed.status().exit_code();
  }
  Status s = report::write_html(*typed, have_trace ? &trace : nullptr, argv[2]);
  if (!s.ok()) {
    std::cerr << s.message() << "\n";
    return s.exit_code();
  }
  std::cerr << "rendered " << argv[2] << " in "
            << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s\n";
  return 0;
}
