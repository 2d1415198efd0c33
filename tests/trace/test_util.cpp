#include "test_util.h"

#include <unistd.h>
#include <zlib.h>

#include <atomic>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace profile_train::trace::testing {

std::string gzip_bytes(std::string_view data) {
  z_stream zs{};
  if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("deflateInit2");
  std::string out(deflateBound(&zs, data.size()) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  zs.avail_in = static_cast<uInt>(data.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  const int rc = deflate(&zs, Z_FINISH);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate");
  out.resize(zs.total_out);
  return out;
}

std::string read_maybe_gzip(const std::filesystem::path& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // gzread passes plain files through
  if (f == nullptr) throw std::runtime_error("gzopen " + path.string());
  std::string out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

TempFile::TempFile(std::string_view contents, const std::string& suffix, bool gzip) {
  static std::atomic<int> counter{0};
  const auto dir = std::filesystem::temp_directory_path() / ("pt_trace_tests_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  path_ = dir / ("t" + std::to_string(counter++) + suffix + (gzip ? ".gz" : ""));
  std::ofstream f(path_, std::ios::binary);
  if (gzip) {
    const std::string z = gzip_bytes(contents);
    f.write(z.data(), static_cast<std::streamsize>(z.size()));
  } else {
    f.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  }
}

TempFile::~TempFile() {
  std::error_code ec;
  std::filesystem::remove(path_, ec);
}

StatusOr<Trace> load_json(std::string_view json, bool gzip, const LoadOptions& opt) {
  TempFile f(json, ".json", gzip);
  return load_trace(f.path(), opt);
}

std::string model_text(const Trace& t) {
  std::ostringstream o;
  o << t.events.size() << " events, " << t.strings.size() << " strings, " << t.op_inputs.size() << " inputs, "
    << t.memory.size() << " memory, " << t.devices.size() << " devices\n";
  for (size_t i = 0; i < t.strings.size(); ++i) o << t.strings.get(static_cast<StringId>(i)) << '\n';
  for (const Event& e : t.events)
    o << e.start_ns << ' ' << e.dur_ns << ' ' << e.pid << ' ' << e.tid << ' ' << e.correlation << ' ' << e.external_id
      << ' ' << e.bytes << ' ' << e.name << ' ' << static_cast<int>(e.cat) << ' ' << static_cast<int>(e.copy_kind)
      << ' ' << static_cast<int>(e.src_mem) << ' ' << static_cast<int>(e.dst_mem) << ' '
      << static_cast<int>(e.sync_kind) << ' ' << e.is_gpu << ' ' << e.collective << ' ' << e.device << ' '
      << e.grid_blocks << ' ' << e.block_threads << ' ' << e.registers_per_thread << ' ' << e.shared_mem_bytes << ' '
      << e.blocks_per_sm << ' ' << e.occupancy_pct << ' ' << e.inputs << '\n';
  for (const OpInputs& in : t.op_inputs) o << in.dims << '|' << in.types << '|' << in.concrete << '\n';
  for (const MemorySample& m : t.memory)
    o << m.ts_ns << ' ' << m.device_type << ' ' << m.device_id << ' ' << m.bytes_delta << ' ' << m.total_allocated << ' '
      << m.total_reserved << ' ' << m.addr << ' ' << m.pid << ' ' << m.tid << '\n';
  for (const DeviceInfo& d : t.devices)
    o << d.id << ' ' << d.name << ' ' << d.vendor << ' ' << d.compute_major << ' ' << d.compute_minor << ' ' << d.num_sms
      << ' ' << d.max_threads_per_sm << ' ' << d.max_threads_per_block << ' ' << d.regs_per_sm << ' '
      << d.shared_mem_per_sm << ' ' << d.total_memory_bytes << '\n';
  const TraceMeta& m = t.meta;
  o << m.format << '|' << m.steps_from_capture << '|' << m.format_version << '|' << m.producer << '|' << m.base_time_ns
    << '|' << m.rank << '|' << m.world_size << '|' << m.distributed_backend << '|' << m.main_pid << '|'
    << m.gpu_capture_attempted << '|' << m.gpu_capture_status << '\n';
  for (const auto& [k, v] : m.versions) o << "version " << k << '=' << v << '\n';
  for (const auto& [k, v] : m.thread_names) o << "thread " << k.first << ',' << k.second << '=' << v << '\n';
  for (const auto& [k, v] : m.process_names) o << "process " << k << '=' << v << '\n';
#define PT_MODEL_TEXT_COUNTER(name, problem, label) o << #name << '=' << t.quality.name << ' ';
  PT_DATA_QUALITY_COUNTERS(PT_MODEL_TEXT_COUNTER)
#undef PT_MODEL_TEXT_COUNTER
  o << t.quality.agent_internal_errors << ' ' << t.quality.missing_device_properties << '\n';
  for (const std::string& n : t.quality.notes) o << n << '\n';
  o << t.facts.dump() << '\n';
  return o.str();
}

std::string kineto_doc(std::string_view events, std::string_view extra_top_level) {
  std::ostringstream s;
  s << "{\n  \"schemaVersion\": 1,\n";
  if (!extra_top_level.empty()) s << extra_top_level << ",\n";
  s << "  \"traceEvents\": [\n" << events << "\n  ]\n}\n";
  return s.str();
}

}  // namespace profile_train::trace::testing
