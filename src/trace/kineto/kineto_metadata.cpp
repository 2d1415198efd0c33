// Kineto metadata: process / thread name events, deviceProperties / computeProperties, distributedInfo,
// baseTimeNanoseconds and the other top-level members next to traceEvents.
#include "kineto/kineto_parser.h"

namespace profile_train::trace::kineto {

void KinetoParser::import_metadata(const RawEvent& e) {
  if (!e.has_meta_name) return;
  if (e.name == "process_name") {
    trace_.meta.process_names[resolve_id(e.pid)] = std::string(utf8_safe(trim(e.meta_name), &utf8_scratch_));
  } else if (e.name == "thread_name") {
    trace_.meta.thread_names[{resolve_id(e.pid), resolve_id(e.tid)}] =
        std::string(utf8_safe(trim(e.meta_name), &utf8_scratch_));
  }
}

std::string KinetoParser::scalar_text(int hd) {
  const char c = r_.peek();
  if (c == '"') return std::string(utf8_safe(r_.read_string(), &utf8_scratch_));
  if (c == '-' || JsonReader::is_digit(c)) return std::string(r_.read_number().text);
  r_.skip_value(hd);
  return {};
}

void KinetoParser::parse_devices(int hd, bool compute_props, std::vector<DeviceInfo>* out) {
  if (r_.peek() != '[') {
    r_.skip_value(hd);
    trace_.quality.notes.push_back(std::string(compute_props ? "computeProperties" : "deviceProperties") +
                                   " is not a list; ignored");
    return;
  }
  check_depth(hd + 1);
  r_.expect('[');
  if (r_.try_close(']')) return;
  do {
    if (r_.peek() != '{') {
      r_.skip_value(hd + 1);
      continue;
    }
    check_depth(hd + 2);
    r_.expect('{');
    DeviceInfo d;
    d.id = static_cast<int32_t>(out->size());
    bool amd_keys = false;
    int64_t warp = -1;
    if (!r_.try_close('}')) {
      do {
        const std::string k(r_.read_string());
        r_.expect(':');
        if (k == "name") {
          if (r_.peek() == '"') d.name = std::string(utf8_safe(r_.read_string(), &utf8_scratch_));
          else r_.skip_value(hd + 2);
          continue;
        }
        const char c = r_.peek();
        if (!(c == '-' || JsonReader::is_digit(c))) {
          r_.skip_value(hd + 2);
          continue;
        }
        int64_t v = 0;
        if (!detail::number_to_i64(r_.read_number(), &v)) continue;
        const auto i32 = [](int64_t x) { return static_cast<int32_t>(std::clamp<int64_t>(x, -1, INT32_MAX)); };
        if (k == "id") d.id = i32(v);
        else if (k == "computeMajor" || k == "major") d.compute_major = i32(v);
        else if (k == "computeMinor" || k == "minor") d.compute_minor = i32(v);
        else if (k == "numSms" || k == "multiProcessorCount") d.num_sms = i32(v);
        else if (k == "maxThreadsPerMultiprocessor" || k == "maxThreadsPerMultiProcessor") d.max_threads_per_sm = i32(v);
        else if (k == "maxThreadsPerBlock") d.max_threads_per_block = i32(v);
        else if (k == "regsPerMultiprocessor") d.regs_per_sm = i32(v);
        else if (k == "sharedMemPerMultiprocessor") d.shared_mem_per_sm = v;
        else if (k == "maxSharedMemoryPerMultiProcessor") {
          d.shared_mem_per_sm = v;
          amd_keys = true;
        } else if (k == "totalGlobalMem") d.total_memory_bytes = v;
        else if (k == "warpSize") warp = v;
      } while (r_.next_or_close('}'));
    }
    const bool amd_name = d.name.find("AMD") != std::string::npos || d.name.find("Radeon") != std::string::npos ||
                          d.name.find("Instinct") != std::string::npos;
    if (amd_name || amd_keys || warp == 64) d.vendor = "amd";
    else if (!d.name.empty()) d.vendor = "nvidia";
    out->push_back(std::move(d));
  } while (r_.next_or_close(']'));
}

void KinetoParser::parse_distributed(int hd) {
  if (r_.peek() != '{') {
    r_.skip_value(hd);
    return;
  }
  check_depth(hd + 1);
  r_.expect('{');
  if (r_.try_close('}')) return;
  int32_t rank = -1, world = -1;
  std::string backend;
  do {
    const std::string_view k = r_.read_string();
    r_.expect(':');
    const char c = r_.peek();
    if ((k == "rank" || k == "world_size") && (c == '-' || JsonReader::is_digit(c))) {
      int64_t v = -1;
      if (detail::number_to_i64(r_.read_number(), &v) && v >= 0 && v <= INT32_MAX)
        (k == "rank" ? rank : world) = static_cast<int32_t>(v);
    } else if (k == "backend" && c == '"') {
      backend = std::string(utf8_safe(r_.read_string(), &utf8_scratch_));
    } else {
      r_.skip_value(hd + 1);
    }
  } while (r_.next_or_close('}'));
  trace_.meta.rank = rank;
  trace_.meta.world_size = world;
  trace_.meta.distributed_backend = backend;
}

// One top-level member other than traceEvents; `hd` is the depth holding its value (1).
void KinetoParser::parse_top_member(std::string_view key, int hd) {
  if (key == "deviceProperties" || key == "computeProperties") {
    std::vector<DeviceInfo> devs;
    parse_devices(hd, key == "computeProperties", &devs);
    saw_device_props_ = true;
    empty_device_props_ = devs.empty();
    devices_ = std::move(devs);
  } else if (key == "distributedInfo") {
    saw_distributed_ = true;
    parse_distributed(hd);
  } else if (key == "baseTimeNanoseconds") {
    const char c = r_.peek();
    int64_t v = 0;
    if ((c == '-' || JsonReader::is_digit(c)) && detail::number_to_i64(r_.read_number(), &v)) {
      base_time_ns_ = v;
      has_base_time_ = true;
    } else {
      if (c != '-' && !JsonReader::is_digit(c)) r_.skip_value(hd);
      trace_.quality.notes.push_back("baseTimeNanoseconds is not an integer; ignored");
    }
  } else if (key == "schemaVersion") {
    saw_schema_ = true;
    trace_.meta.format_version = scalar_text(hd);
  } else if (key == "cupti_version" || key == "cuda_runtime_version" || key == "cuda_driver_version" ||
             key == "roctracer_version" || key == "hip_runtime_version" || key == "hip_driver_version") {
    std::string v = scalar_text(hd);
    if (!v.empty()) trace_.meta.versions[std::string(key)] = std::move(v);
  } else {
    // displayTimeUnit (a viewer hint: ts/dur are always µs), traceName, INFO/ERROR logs, run flags, ...
    r_.skip_value(hd);
  }
}

}  // namespace profile_train::trace::kineto
