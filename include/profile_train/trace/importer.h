// Loading traces into the model. Importers are registered, not hard-wired: each one sniffs the first bytes
// of a (decompressed) file and claims it. Owner: trace component.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "profile_train/common/status.h"
#include "profile_train/trace/model.h"

namespace profile_train::trace {

struct LoadOptions {
  // Called now and then with (bytes consumed, total bytes or 0 if unknown). Must be cheap.
  std::function<void(uint64_t, uint64_t)> progress;
  uint64_t max_uncompressed_bytes = uint64_t{64} << 30;  // refuse larger inputs (ResourceExhausted)
  int max_json_depth = 64;                                // deeper nesting is bad input
  // One JSON event or top-level member, whitespace included, may not exceed this (bad input): the reader
  // buffers one such value at a time, so this bounds its memory whatever the input inflates to.
  uint64_t max_json_value_bytes = uint64_t{256} << 20;
  // Give up (ResourceExhausted) when loading one file takes longer than this; 0 = no limit. Checked as
  // the decompressed bytes stream in (about every 16 MiB).
  double max_load_seconds = 0;
  // A file at least this big as stored is read (and inflated) on a second thread while the importer parses:
  // the same bytes and errors, sooner on two cores. UINT64_MAX: never; 0: always (tests).
  uint64_t read_ahead_min_bytes = uint64_t{4} << 20;
  // A trace that can be re-read from any point (a plain file or bytes in memory, not gzip) and is at least this
  // big is parsed by several threads, each from a point in its events on, and their parts joined into the same
  // model one thread builds (a part that cannot be joined exactly is parsed again by its neighbour).
  // UINT64_MAX: never; 0: always (tests).
  uint64_t parallel_parse_min_bytes = uint64_t{64} << 20;
  // How many parts: 0 = one per core (at most 8, each at least parallel_parse_min_bytes); tests set it.
  int parallel_parse_parts = 0;
};

// The free functions load with builtin_importers() (ImporterRegistry, below).
// Loads one trace file of any supported format (Kineto JSON .json/.json.gz, native capture files, Nsight
// Systems SQLite exports and .nsys-rep reports). An export of several processes gives its rank 0 here.
// Errors: BadInput / NotFound / Unsupported / ResourceExhausted with a message that names the file.
StatusOr<Trace> load_trace(const std::filesystem::path& path, const LoadOptions& options = {});

// Every trace one file holds: one per process that ran GPU work for an Nsight Systems export of a multi-process
// job (torchrun under nsys; meta.rank / world_size set, ranks in the order of the processes' first GPUs), one
// for every other file. Same errors as load_trace.
StatusOr<std::vector<Trace>> load_trace_set(const std::filesystem::path& path, const LoadOptions& options = {});

// Same as load_trace, for bytes already in memory (plain or gzip). `name` stands in for the file path in
// messages and meta.source_files. Used by the fuzz target and by tests.
StatusOr<Trace> load_trace_bytes(std::string_view bytes, const std::string& name,
                                 const LoadOptions& options = {});

// A forward-only stream of decompressed bytes. load_trace hands one to importers that declare `load_stream`,
// so they never see compression, size limits or progress reporting. Not thread-safe.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `n` bytes into `buf`. Returns the count, 0 only at the end of the stream, or an error whose
  // message starts with the source name (truncated gzip, read error, size limit).
  virtual StatusOr<size_t> read(char* buf, size_t n) = 0;
  // The file path (or stand-in name) used at the start of every error message.
  virtual const std::string& name() const = 0;
  // The stream's length in bytes when known before reading it (a plain file, memory); 0 when not (gzip, pipes).
  virtual uint64_t known_size() const { return 0; }
  // A second, independent reader of the same stream from byte `offset` on, under the same limits, for a loader
  // that parses parts of a big input on several threads; null when the stream cannot be re-read from a point
  // (gzip, pipes). May be called from another thread than the one reading this source.
  virtual std::unique_ptr<ByteSource> reopen_at(uint64_t offset) const {
    (void)offset;
    return nullptr;
  }
  // The file on disk the bytes come from, through any decompression (a native capture's facts file lies beside
  // it); empty for bytes in memory.
  virtual std::filesystem::path file() const { return {}; }
};

// An importer: how to recognise a format and load it.
struct Importer {
  std::string name;  // "kineto_json", "native"
  // Returns true if `head` (first bytes of the decompressed stream) looks like this importer's format.
  std::function<bool(std::string_view head)> sniff;
  // Path-based loader (the importer opens and decompresses the file itself). Used when load_stream is empty.
  std::function<StatusOr<Trace>(const std::filesystem::path&, const LoadOptions&)> load;
  // Stream-based loader (preferred): reads the already-decompressed stream from its first byte.
  std::function<StatusOr<Trace>(ByteSource&, const LoadOptions&)> load_stream;
  // Optional: every trace of a file that can hold several (load_trace_set). Claimed by `sniff` on the file's
  // first bytes as stored (no decompression).
  std::function<StatusOr<std::vector<Trace>>(const std::filesystem::path&, const LoadOptions&)> load_set;
};
// The importers a load chooses from, in the order they are asked (the first whose sniff claims the head loads
// it): open the file, detect compression by magic bytes, decompress as a stream within the limits, sniff, hand
// the stream to the importer. An instance: a test or a plugin builds its own (builtins() plus its importers);
// load_trace and the other free functions use the built-in one. Immutable once built, so loads may run on
// several threads.
class ImporterRegistry {
 public:
  // The built-in importers: the native capture and the Nsight Systems export first (they claim their files by
  // a magic header), then Kineto JSON (a '{' or '[').
  static ImporterRegistry builtins();
  ImporterRegistry() = default;
  // Adds `importer` after the others; one with the same name is replaced in place.
  ImporterRegistry& add(Importer importer);
  const std::vector<Importer>& importers() const { return importers_; }

  StatusOr<Trace> load(const std::filesystem::path& path, const LoadOptions& options = {}) const;
  StatusOr<std::vector<Trace>> load_set(const std::filesystem::path& path, const LoadOptions& options = {}) const;
  StatusOr<Trace> load_bytes(std::string_view bytes, const std::string& name, const LoadOptions& options = {}) const;

 private:
  std::vector<Importer> importers_;
};

// The registry of the built-in importers, built once.
const ImporterRegistry& builtin_importers();

}  // namespace profile_train::trace
