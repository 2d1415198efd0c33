// ImporterRegistry and load_trace: open, detect compression by magic bytes, decompress as a stream, sniff
// the head, dispatch to the importer that claims it. Every error message starts with the file path.
#include <chrono>
#include <exception>
#include <fstream>
#include <new>
#include <thread>

#include "io/byte_sources.h"
#include "importers/importers_internal.h"
#include "nsys/nsys_importer.h"
#include "profile_train/trace/importer.h"

namespace profile_train::trace {
namespace {

constexpr size_t kSniffBytes = 4096;

std::string printable_prefix(std::string_view head) {
  std::string out;
  for (char c : head.substr(0, 16)) {
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    }
  }
  return out;
}

bool all_whitespace(std::string_view s) {
  for (char c : s)
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return false;
  return true;
}

// The shared path of load_trace / load_trace_bytes. `raw` yields the file's bytes as stored; a gzip file is
// decoded with `decoder` (*used_isal says whether that was ISA-L).
StatusOr<Trace> load_from(const std::vector<Importer>& importers, ByteSource& raw,
                          std::function<uint64_t()> raw_position, uint64_t raw_total, const std::filesystem::path* path,
                          const LoadOptions& options, detail::GzipDecoder decoder, bool* used_isal) {
  const std::string& name = raw.name();
  detail::GuardSource raw_peek(raw, UINT64_MAX, nullptr, nullptr, 0);
  auto magic = raw_peek.peek(2);
  if (!magic.ok()) return magic.status();
  if (magic->empty()) return BadInput(name + ": empty file");

  std::unique_ptr<detail::GzipSource> gz;
  ByteSource* decoded = &raw_peek;
  const bool is_gzip = magic->size() == 2 && static_cast<unsigned char>((*magic)[0]) == 0x1f &&
                       static_cast<unsigned char>((*magic)[1]) == 0x8b;
  if (is_gzip) {
    gz = std::make_unique<detail::GzipSource>(raw_peek, decoder);
    decoded = gz.get();
    *used_isal = gz->decoder() == detail::GzipDecoder::kIsal;
  } else if (raw_total > options.max_uncompressed_bytes) {
    return ResourceExhausted(name + ": file is " + std::to_string(raw_total) + " bytes, more than the limit of " +
                             std::to_string(options.max_uncompressed_bytes));
  }
  // A big file is read (and inflated) on another core while this one parses: same bytes, same errors. Not a
  // plain file the JSON importer parses in parts: each part's thread reads for itself, a reader thread more would
  // take a core from them.
  std::unique_ptr<detail::ReadAheadSource> ahead;
  const bool in_parts = !is_gzip && parallel_parse_parts(options, raw_total) >= 2;
  if (raw_total >= options.read_ahead_min_bytes && !in_parts && std::thread::hardware_concurrency() >= 2) {
    ahead = std::make_unique<detail::ReadAheadSource>(*decoded, std::move(raw_position));
    decoded = ahead.get();
    raw_position = [a = ahead.get()] { return a->raw_position(); };
  }
  detail::GuardSource stream(*decoded, options.max_uncompressed_bytes, options.progress, std::move(raw_position),
                             raw_total);
  if (options.max_load_seconds > 0) stream.set_time_limit(options.max_load_seconds);
  auto head = stream.peek(kSniffBytes);
  if (!head.ok()) return head.status();
  if (head->empty()) return BadInput(name + ": empty file (nothing after decompression)");
  if (head->size() < kSniffBytes && all_whitespace(*head)) return BadInput(name + ": empty file (only whitespace)");

  for (const Importer& imp : importers) {
    if (!imp.sniff || !imp.sniff(*head)) continue;
    StatusOr<Trace> result = Internal(name + ": importer '" + imp.name + "' has no loader");
    if (imp.load_stream) {
      result = imp.load_stream(stream, options);
    } else if (imp.load && path != nullptr) {
      result = imp.load(*path, options);
    } else if (imp.load) {
      result = Unsupported(name + ": the '" + imp.name + "' reader needs a file path");
    }
    if (result.ok() && result->meta.source_files.empty()) result->meta.source_files.push_back(name);
    return result;
  }
  return BadInput(name + ": not JSON and not a known trace format (starts with \"" + printable_prefix(*head) +
                  "\")");
}

// A gzip file that failed to load with ISA-L is loaded again with zlib, whose outcome (the error, its
// wording, or even a successful load) is then the answer: the two decoders report corrupt data in
// different words and at different points of the output, and what a user sees must not depend on the
// build. Errors are rare, so this costs nothing on good files. Under --max-load-seconds the second load gets
// what is left of the time, and if that runs out the first answer stands: the limit holds for both loads.
template <typename Load>
StatusOr<Trace> load_with_fallback(const LoadOptions& options, Load&& load) {
  const auto start = std::chrono::steady_clock::now();
  bool used_isal = false;
  StatusOr<Trace> result = load(detail::GzipSource::default_decoder(), options, &used_isal);
  if (result.ok() || !used_isal) return result;
  const bool limited = options.max_load_seconds > 0;
  if (limited && result.status().code() == StatusCode::kResourceExhausted) return result;
  LoadOptions retry = options;
  if (limited) {
    retry.max_load_seconds -= std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (retry.max_load_seconds <= 0) return result;
  }
  StatusOr<Trace> again = load(detail::GzipDecoder::kZlib, retry, &used_isal);
  if (limited && !again.ok() && again.status().code() == StatusCode::kResourceExhausted) return result;
  return again;
}

// f() returns a StatusOr (one trace, or the traces of a set); an exception becomes its status.
template <typename F>
auto guarded(const std::string& name, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return ResourceExhausted(name + ": out of memory while loading");
  } catch (const std::exception& e) {
    return Internal(name + ": unexpected error while loading: " + e.what());
  }
}

}  // namespace

ImporterRegistry ImporterRegistry::builtins() {
  ImporterRegistry r;
  r.add(make_native_importer()).add(make_nsys_importer()).add(make_kineto_json_importer());
  return r;
}

ImporterRegistry& ImporterRegistry::add(Importer importer) {
  for (auto& existing : importers_) {
    if (existing.name == importer.name) {
      existing = std::move(importer);
      return *this;
    }
  }
  importers_.push_back(std::move(importer));
  return *this;
}

const ImporterRegistry& builtin_importers() {
  static const ImporterRegistry* r = new ImporterRegistry(ImporterRegistry::builtins());  // never destroyed
  return *r;
}

StatusOr<Trace> ImporterRegistry::load(const std::filesystem::path& path, const LoadOptions& options) const {
  const std::string name = path.string();
  if (nsys::is_report_path(path)) {  // nsys's own container: converted by nsys itself
    return guarded(name, [&]() -> StatusOr<Trace> {
      auto all = nsys::load_report(path, options);
      if (!all.ok()) return all.status();
      return std::move(all->front());
    });
  }
  return guarded(name, [&]() -> StatusOr<Trace> {
    return load_with_fallback(options, [&](detail::GzipDecoder decoder, const LoadOptions& opt,
                                           bool* used_isal) -> StatusOr<Trace> {
      auto file = detail::FileSource::open(name);
      if (!file.ok()) return file.status();
      detail::FileSource* f = file->get();
      return load_from(importers_, *f, [f] { return f->consumed(); }, f->size(), &path, opt, decoder, used_isal);
    });
  });
}

StatusOr<std::vector<Trace>> ImporterRegistry::load_set(const std::filesystem::path& path,
                                                        const LoadOptions& options) const {
  const std::string name = path.string();
  if (nsys::is_report_path(path))
    return guarded(name, [&] { return nsys::load_report(path, options); });
  std::string head;
  std::error_code ec;
  if (std::filesystem::is_regular_file(path, ec)) {
    // Only a regular file is sniffed here: opening a FIFO would wait for a writer, and reading one would take
    // bytes the loader below never sees (the importers with a set loader read databases, never streams).
    head.resize(kSniffBytes);
    std::ifstream in(path, std::ios::binary);
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(std::max<std::streamsize>(0, in.gcount())));
  }
  for (const Importer& imp : importers_)
    if (imp.load_set && imp.sniff && imp.sniff(head)) return guarded(name, [&] { return imp.load_set(path, options); });
  auto one = load(path, options);
  if (!one.ok()) return one.status();
  std::vector<Trace> out;
  out.push_back(std::move(*one));
  return out;
}

StatusOr<Trace> ImporterRegistry::load_bytes(std::string_view bytes, const std::string& name,
                                             const LoadOptions& options) const {
  return guarded(name, [&]() -> StatusOr<Trace> {
    return load_with_fallback(options, [&](detail::GzipDecoder decoder, const LoadOptions& opt,
                                           bool* used_isal) -> StatusOr<Trace> {
      detail::MemorySource mem(bytes, name);
      return load_from(importers_, mem, [&mem] { return mem.consumed(); }, bytes.size(), nullptr, opt, decoder,
                       used_isal);
    });
  });
}

StatusOr<Trace> load_trace(const std::filesystem::path& path, const LoadOptions& options) {
  return builtin_importers().load(path, options);
}

StatusOr<std::vector<Trace>> load_trace_set(const std::filesystem::path& path, const LoadOptions& options) {
  return builtin_importers().load_set(path, options);
}

StatusOr<Trace> load_trace_bytes(std::string_view bytes, const std::string& name, const LoadOptions& options) {
  return builtin_importers().load_bytes(bytes, name, options);
}

}  // namespace profile_train::trace
