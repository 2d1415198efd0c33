// Native capture format reader (owner: agent component). Format: src/agent/FORMAT.md,
// layout: include/profile_train/format/native_format.h.
#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "importers/importers_internal.h"
#include "native/native_chunks.h"
#include "profile_train/format/native_format.h"
#include "profile_train/trace/native_reader.h"

namespace profile_train::trace {
namespace native {
namespace {

CopyKind to_copy(uint8_t v) { return v <= 5 ? static_cast<CopyKind>(v) : CopyKind::kUnknown; }
MemoryKind to_mem(uint8_t v) { return v <= 4 ? static_cast<MemoryKind>(v) : MemoryKind::kUnknown; }
SyncKind to_sync(uint8_t v) { return v <= 4 ? static_cast<SyncKind>(v) : SyncKind::kUnknown; }

// Adds one parsed file's events to `t`.
void add_file(Trace& t, const ParsedFile& f, int64_t& step_ranges) {
  const int64_t pid = jint(f.meta, "pid", f.header.pid);
  auto& q = t.quality;
  t.meta.source_files.push_back(f.path.string());
  const std::string pname = jstr(f.meta, "process_name");
  if (!pname.empty()) t.meta.process_names[pid] = pname;

  int64_t unknown_names = 0;
  auto name_of = [&](uint32_t id) -> StringId {
    if (id == 0) return 0;
    auto it = f.strings.find(id);
    if (it == f.strings.end()) {
      ++unknown_names;
      return t.strings.intern("<unknown name>");
    }
    return t.strings.intern(it->second);
  };
  // Start/end ranges may end on another thread, whose chunk can precede the start's in the file.
  std::unordered_map<int64_t, const fmt::Record*> open_starts;
  for (const fmt::Record& r : f.records)
    if (r.kind == static_cast<uint8_t>(fmt::RecordKind::kRangeStart)) open_starts[r.corr] = &r;

  // CLOCK_MONOTONIC is never negative; with both ends >= 0 no duration or span below can overflow.
  int64_t bad_times = 0, bad_memory = 0;
  auto bad_time = [](const fmt::Record& r) {
    return r.start_ns < 0 || (r.kind != static_cast<uint8_t>(fmt::RecordKind::kMemory) && r.end_ns < 0);
  };
  for (const fmt::Record& r : f.records) {
    ++q.events_total;
    if (bad_time(r)) {
      ++bad_times;
      ++q.malformed_events;
      continue;
    }
    Event e;
    e.start_ns = r.start_ns;
    e.dur_ns = r.end_ns - r.start_ns;
    if (e.dur_ns < 0) {
      ++q.negative_durations;
      e.dur_ns = 0;
    }
    switch (static_cast<fmt::RecordKind>(r.kind)) {
      case fmt::RecordKind::kRange:
      case fmt::RecordKind::kMark: {
        e.cat = Category::kUserAnnotation;
        e.pid = pid;
        e.tid = static_cast<int64_t>(r.tid);
        e.name = name_of(r.name);
        if (r.kind == static_cast<uint8_t>(fmt::RecordKind::kMark)) e.dur_ns = 0;
        if (t.strings.get(e.name).rfind("ProfilerStep#", 0) == 0) ++step_ranges;
        break;
      }
      case fmt::RecordKind::kRangeStart:
        continue;  // emitted with its end
      case fmt::RecordKind::kRangeEnd: {
        auto it = open_starts.find(r.corr);
        if (it == open_starts.end()) continue;  // its start was outside the capture window
        const fmt::Record& s = *it->second;
        if (bad_time(s)) continue;  // counted with the start record
        e.cat = Category::kUserAnnotation;
        e.pid = pid;
        e.tid = static_cast<int64_t>(s.tid);
        e.name = name_of(s.name);
        e.start_ns = s.start_ns;
        e.dur_ns = std::max<int64_t>(0, r.end_ns - s.start_ns);
        open_starts.erase(it);
        break;
      }
      case fmt::RecordKind::kThreadName: {
        auto it = f.strings.find(r.name);
        if (it != f.strings.end()) t.meta.thread_names[{pid, static_cast<int64_t>(r.tid)}] = it->second;
        continue;
      }
      case fmt::RecordKind::kKernel:
      case fmt::RecordKind::kMemcpy:
      case fmt::RecordKind::kMemset:
      case fmt::RecordKind::kSync: {
        e.is_gpu = true;
        e.device = r.device;
        e.pid = r.device >= 0 ? r.device : 0;
        e.tid = static_cast<int64_t>(r.tid);
        e.correlation = r.corr;
        const auto kind = static_cast<fmt::RecordKind>(r.kind);
        if (kind == fmt::RecordKind::kKernel) {
          e.cat = Category::kKernel;
          e.name = name_of(r.name);
          e.grid_blocks = static_cast<uint64_t>(r.value);
          e.block_threads = r.x0;
          e.registers_per_thread = static_cast<int32_t>(r.x1);
          e.shared_mem_bytes = static_cast<int32_t>(r.x2);
        } else if (kind == fmt::RecordKind::kMemcpy) {
          e.cat = Category::kMemcpy;
          e.copy_kind = to_copy(r.a);
          e.src_mem = to_mem(r.b);
          e.dst_mem = to_mem(r.c);
          e.bytes = r.value;
          static const char* kNames[] = {"Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memcpy HtoH",
                                         "Memcpy PtoP"};
          std::string n = kNames[static_cast<int>(e.copy_kind)];
          if (e.copy_kind == CopyKind::kHtoD) n += e.src_mem == MemoryKind::kPinned ? " (Pinned -> Device)"
                                                                                   : " (Pageable -> Device)";
          if (e.copy_kind == CopyKind::kDtoH) n += e.dst_mem == MemoryKind::kPinned ? " (Device -> Pinned)"
                                                                                   : " (Device -> Pageable)";
          e.name = t.strings.intern(n);
        } else if (kind == fmt::RecordKind::kMemset) {
          e.cat = Category::kMemset;
          e.dst_mem = to_mem(r.c);
          e.bytes = r.value;
          e.name = t.strings.intern("Memset (Device)");
        } else {
          e.cat = Category::kSync;
          e.sync_kind = to_sync(r.a);
          static const char* kNames[] = {"cuda_sync", "Event Sync", "Stream Wait Event", "Stream Sync",
                                         "Context Sync"};
          e.name = t.strings.intern(kNames[static_cast<int>(e.sync_kind)]);
          if (r.tid == UINT32_MAX) e.tid = -1;
        }
        break;
      }
      case fmt::RecordKind::kRuntime:
      case fmt::RecordKind::kDriver: {
        e.cat = r.kind == static_cast<uint8_t>(fmt::RecordKind::kRuntime) ? Category::kRuntime : Category::kDriver;
        e.pid = pid;
        e.tid = static_cast<int64_t>(r.tid);
        e.correlation = r.corr;
        auto it = f.strings.find(r.name);
        e.name = t.strings.intern(it == f.strings.end() ? std::string("<unknown api>") : strip_api_version(it->second));
        break;
      }
      case fmt::RecordKind::kMemory: {
        // No device has 2^50 bytes (1 PiB); larger deltas are damage, and summing them would overflow.
        if (r.value > (int64_t{1} << 50) || r.value < -(int64_t{1} << 50)) {
          ++bad_memory;
          ++q.malformed_events;
          continue;
        }
        MemorySample m;
        m.ts_ns = r.start_ns;
        m.device_type = 1;
        m.device_id = r.device;
        m.bytes_delta = r.value;
        t.memory.push_back(m);
        ++q.events_imported;
        continue;
      }
      default:
        ++q.unknown_categories;
        continue;
    }
    t.events.push_back(e);
    ++q.events_imported;
  }
  if (unknown_names > 0) {
    q.malformed_events += unknown_names;
    q.notes.push_back("pid " + std::to_string(pid) + ": " + std::to_string(unknown_names) +
                      " events reference names missing from the string table");
  }
  if (!open_starts.empty())
    q.notes.push_back("pid " + std::to_string(pid) + ": " + std::to_string(open_starts.size()) +
                      " start/end ranges never ended");
  const int64_t dropped = std::max<int64_t>(0, jint(f.status, "dropped", 0));
  const int64_t lost = f.lost_records();
  q.dropped_records += dropped + lost;
  if (dropped > 0)
    q.notes.push_back("pid " + std::to_string(pid) + ": the agent dropped " + std::to_string(dropped) +
                      " records (buffers full)");
  if (f.truncated || f.damaged_regions > 0) {
    std::string n = "pid " + std::to_string(pid) + ": capture file " + f.path.filename().string();
    if (f.damaged_regions > 0)
      n += " has " + std::to_string(f.damaged_regions) + " damaged region(s) (" + std::to_string(f.damaged_bytes) +
           " bytes, bad chunk marker, length or checksum), skipped up to the next valid chunk marker";
    if (f.truncated)
      n += std::string(f.damaged_regions > 0 ? " and" : "") + " ends with a truncated chunk (" +
           std::to_string(f.truncated_bytes) + " bytes)";
    n += "; " + std::to_string(lost) + " records lost";
    if (f.status_written >= 0 && f.lost_since_status == 0)
      n += " (counted: the agent's last status says " + std::to_string(f.status_written) + " records written before it, " +
           std::to_string(f.records_before_status) + " were readable)";
    else if (f.lost_is_upper_bound)
      n += " at most (estimated: every damaged byte counted as 64-byte event records)";
    else
      n += " (from the damaged chunks' headers)";
    q.notes.push_back(n);
  }
  if (bad_times > 0)
    q.notes.push_back("pid " + std::to_string(pid) + ": " + std::to_string(bad_times) +
                      " records with negative timestamps (impossible on CLOCK_MONOTONIC) were dropped as malformed");
  if (bad_memory > 0)
    q.notes.push_back("pid " + std::to_string(pid) + ": " + std::to_string(bad_memory) +
                      " memory records larger than 2^50 bytes were dropped as malformed");
  auto complete = f.status.find("complete");
  if (complete == f.status.end() || !complete->is_boolean() || !complete->get<bool>())
    q.notes.push_back("pid " + std::to_string(pid) +
                      ": the process ended without a final flush (crash, kill or os._exit); events of its last "
                      "flush interval (" + std::to_string(jint(f.meta, "flush_interval_ms", 50)) +
                      " ms) may be missing");
  const int64_t open_at_exit = jint(f.status, "open_ranges_at_exit", 0);
  if (open_at_exit > 0)
    q.notes.push_back("pid " + std::to_string(pid) + ": " + std::to_string(open_at_exit) +
                      " NVTX ranges were still open at exit and are not in the trace");
  // The agent's bounds on hostile NVTX use (src/agent/core): its name table and the handles it validates.
  if (const int64_t n = jint(f.status, "names_bucketed", 0); n > 0)
    q.notes.push_back("pid " + std::to_string(pid) + ": the agent's name table was full (too many distinct range "
                      "names); " + std::to_string(n) + " events carry a shared \"[other names ...]\" name");
  if (const int64_t n = jint(f.status, "nvtx_bad_handles", 0); n > 0)
    q.notes.push_back("pid " + std::to_string(pid) + ": " + std::to_string(n) +
                      " NVTX calls passed a string or domain handle the agent never returned; they were recorded "
                      "without that name or domain");
  if (const int64_t n = jint(f.status, "nvtx_handles_refused", 0); n > 0)
    q.notes.push_back("pid " + std::to_string(pid) + ": " + std::to_string(n) +
                      " NVTX string or domain registrations were past the agent's limit and got no handle");
  // Exceptions the agent caught inside the program (it never lets one reach it): counted, summed over files.
  const int64_t internal_errors = std::max<int64_t>(0, jint(f.status, "internal_errors", 0));
  q.agent_internal_errors = std::max<int64_t>(0, q.agent_internal_errors) + internal_errors;
  if (internal_errors > 0)
    q.notes.push_back("pid " + std::to_string(pid) + ": the agent caught " + std::to_string(internal_errors) +
                      " internal error" + (internal_errors == 1 ? "" : "s") +
                      " inside the program; what it was recording at that moment may be missing");
  for (const auto& d : f.devices) {
    DeviceInfo di;
    di.id = static_cast<int32_t>(jint(d, "id", -1));
    if (t.device(di.id)) continue;
    di.name = jstr(d, "name");
    di.vendor = jstr(d, "vendor");
    di.compute_major = static_cast<int32_t>(jint(d, "compute_major", -1));
    di.compute_minor = static_cast<int32_t>(jint(d, "compute_minor", -1));
    di.num_sms = static_cast<int32_t>(jint(d, "num_sms", -1));
    di.max_threads_per_sm = static_cast<int32_t>(jint(d, "max_threads_per_sm", -1));
    di.max_threads_per_block = static_cast<int32_t>(jint(d, "max_threads_per_block", -1));
    di.regs_per_sm = static_cast<int32_t>(jint(d, "regs_per_sm", -1));
    di.shared_mem_per_sm = jint(d, "shared_mem_per_sm", -1);
    di.total_memory_bytes = jint(d, "total_memory_bytes", -1);
    t.devices.push_back(di);
  }
}

// Merges `src` into `dst` without overwriting existing keys (objects are merged recursively).
void merge_missing(nlohmann::json& dst, const nlohmann::json& src) {
  if (!dst.is_object() || !src.is_object()) return;
  for (auto it = src.begin(); it != src.end(); ++it) {
    auto d = dst.find(it.key());
    if (d == dst.end()) dst[it.key()] = it.value();
    else if (d->is_object() && it->is_object()) merge_missing(*d, *it);
  }
}

}  // namespace

std::string strip_api_version(const std::string& name) {
  const size_t v = name.rfind("_v");
  if (v == std::string::npos || v + 2 >= name.size()) return name;
  for (size_t i = v + 2; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return name;
  return name.substr(0, v);
}

StatusOr<CaptureFileInfo> read_capture_info(const std::filesystem::path& file) {
  LoadOptions options;
  auto f = parse_file(file, options, /*meta_only=*/true);
  if (!f.ok()) return f.status();
  CaptureFileInfo info;
  info.path = file;
  info.pid = jint(f->meta, "pid", f->header.pid);
  info.ppid = jint(f->meta, "ppid", -1);
  info.rank = static_cast<int32_t>(jint(f->meta, "rank", -1));
  info.local_rank = static_cast<int32_t>(jint(f->meta, "local_rank", -1));
  info.world_size = static_cast<int32_t>(jint(f->meta, "world_size", -1));
  auto fc = f->meta.find("fork_child");
  info.fork_child = fc != f->meta.end() && fc->is_boolean() && fc->get<bool>();
  info.process_name = jstr(f->meta, "process_name");
  info.cmdline = jstr(f->meta, "cmdline");
  return info;
}

namespace {

// The trace of one process's (or one rank's) capture files, parsed. `facts_beside`: each file's facts-PID.json is
// looked for in its folder (not for a capture read from memory).
Trace join_captures(const std::vector<ParsedFile>& parsed, bool facts_beside) {
  Trace t;
  t.meta.format = "native";
  t.meta.steps_from_capture = true;
  t.meta.producer = "profile-train agent";
  std::vector<int64_t> step_counts(parsed.size(), 0);
  int64_t max_minor = 0;
  for (size_t i = 0; i < parsed.size(); ++i) {
    add_file(t, parsed[i], step_counts[i]);
    max_minor = std::max<int64_t>(max_minor, parsed[i].header.minor);
  }
  t.meta.format_version = std::to_string(fmt::kMajor) + "." + std::to_string(max_minor);
  // The main process: the one with step ranges (the training loop); else the first non-forked one.
  size_t main = 0;
  bool found = false;
  for (size_t i = 0; i < parsed.size(); ++i)
    if (step_counts[i] > (found ? step_counts[main] : 0)) {
      main = i;
      found = true;
    }
  if (!found)
    for (size_t i = 0; i < parsed.size(); ++i) {
      auto fc = parsed[i].meta.find("fork_child");
      if (fc == parsed[i].meta.end() || !fc->is_boolean() || !fc->get<bool>()) {
        main = i;
        break;
      }
    }
  const ParsedFile& mf = parsed[main];
  t.meta.main_pid = jint(mf.meta, "pid", mf.header.pid);
  t.meta.rank = static_cast<int32_t>(jint(mf.meta, "rank", -1));
  t.meta.world_size = static_cast<int32_t>(jint(mf.meta, "world_size", -1));
  const std::string agent_version = jstr(mf.meta, "agent_version");
  if (!agent_version.empty()) t.meta.producer += " " + agent_version;

  // GPU capture status: enabled in any process counts; otherwise the main process's reason.
  bool any_enabled = false;
  std::string reason;
  for (size_t i = 0; i < parsed.size(); ++i) {
    auto c = parsed[i].status.find("cupti");
    if (c == parsed[i].status.end() || !c->is_object()) continue;
    const std::string state = jstr(*c, "state");
    if (state == "enabled") {
      any_enabled = true;
      const int64_t v = jint(*c, "cupti_api_version", -1);
      if (v >= 0) t.meta.versions["cupti_api_version"] = std::to_string(v);
    } else if (i == main || reason.empty()) {
      const std::string r = jstr(*c, "reason");
      reason = "CUPTI " + state + (r.empty() ? "" : ": " + r);
    }
  }
  if (parsed[main].status.find("cupti") == parsed[main].status.end() && reason.empty())
    reason = "the capture recorded no CUPTI status";
  t.meta.gpu_capture_attempted = any_enabled;
  t.meta.gpu_traced = any_enabled ? TraceMeta::Traced::kYes : TraceMeta::Traced::kNo;
  t.meta.traced = any_enabled ? "profile-train agent: CUPTI activity on" : "profile-train agent: " + reason;
  t.meta.gpu_capture_status = any_enabled ? "" : ("GPU activity was not recorded: " + reason);

  // Facts from the Python shim: facts-<pid>.json next to each capture file on disk; the main process wins.
  std::vector<size_t> order;
  if (facts_beside) {
    order.push_back(main);
    for (size_t i = 0; i < parsed.size(); ++i)
      if (i != main) order.push_back(i);
  }
  for (size_t i : order) {
    const int64_t pid = jint(parsed[i].meta, "pid", parsed[i].header.pid);
    const auto facts_path = parsed[i].path.parent_path() / ("facts-" + std::to_string(pid) + ".json");
    std::ifstream in(facts_path);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (j.is_object()) {
      merge_missing(t.facts, j);
      t.meta.source_files.push_back(facts_path.string());
    } else {
      t.quality.notes.push_back(facts_path.filename().string() + ": not valid JSON; facts ignored");
    }
  }
  // A launcher other than torchrun leaves RANK/WORLD_SIZE unset at start-up; the shim's facts then carry
  // what torch.distributed said once the process group was up.
  if (t.facts.contains("distributed") && t.facts["distributed"].is_object()) {
    const auto& d = t.facts["distributed"];
    if (t.meta.rank < 0 && d.contains("rank") && d["rank"].is_number_integer())
      t.meta.rank = d["rank"].get<int32_t>();
    if (t.meta.world_size <= 0 && d.contains("world_size") && d["world_size"].is_number_integer())
      t.meta.world_size = d["world_size"].get<int32_t>();
    if (t.meta.distributed_backend.empty() && d.contains("backend") && d["backend"].is_string())
      t.meta.distributed_backend = d["backend"].get<std::string>();
  }
  if (t.facts.contains("versions") && t.facts["versions"].is_object())
    for (auto it = t.facts["versions"].begin(); it != t.facts["versions"].end(); ++it)
      if (it->is_string()) t.meta.versions[it.key()] = it->get<std::string>();
  bool has_gpu = false;
  for (const auto& e : t.events) has_gpu |= e.is_gpu;
  t.quality.missing_device_properties = has_gpu && t.devices.empty();
  t.finalize();
  return t;
}

// One capture through the registry's byte source (decompressed, within the size and time limits, its progress
// counted by the source): read whole, walked, joined with its facts file when it is a file on disk.
StatusOr<Trace> load_capture_stream(ByteSource& source) {
  std::string data;
  std::string buf(size_t{1} << 20, '\0');
  for (;;) {
    auto n = source.read(buf.data(), buf.size());
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    data.append(buf.data(), *n);
  }
  const std::filesystem::path file = source.file();
  auto f = parse_capture(data, file.empty() ? std::filesystem::path(source.name()) : file, false);
  if (!f.ok()) return f.status();
  std::vector<ParsedFile> parsed;
  parsed.push_back(std::move(*f));
  return join_captures(parsed, !file.empty());
}

}  // namespace

StatusOr<Trace> load_captures(const std::vector<std::filesystem::path>& files, const LoadOptions& options) {
  if (files.empty()) return InvalidArgument("no capture files given");
  std::vector<ParsedFile> parsed;
  for (const auto& p : files) {
    auto f = parse_file(p, options, false);
    if (!f.ok()) return f.status();
    parsed.push_back(std::move(*f));
  }
  return join_captures(parsed, true);
}

}  // namespace native

Importer make_native_importer() {
  Importer imp;
  imp.name = "native";
  imp.sniff = [](std::string_view head) {
    return head.size() >= sizeof(agent::format::kMagic) &&
           std::memcmp(head.data(), agent::format::kMagic, sizeof agent::format::kMagic) == 0;
  };
  imp.load_stream = [](ByteSource& source, const LoadOptions&) { return native::load_capture_stream(source); };
  return imp;
}

}  // namespace profile_train::trace
