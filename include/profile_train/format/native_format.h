// The native capture format: what the injected agent writes and `src/trace/native/native.cpp` reads.
// Normative description: src/agent/FORMAT.md. This header is the single definition of the on-disk layout;
// it has no vendor types and no dependencies beyond <cstdint>, so both the agent and the reader include it.
// It lives in format/ (the contracts, below every room); the namespace keeps the name its users spell.
//
// Layout (all integers little-endian, the only byte order the agent runs on):
//   FileHeader (32 bytes)
//   ChunkHeader + payload (padded to 8 bytes), repeated until end of file.
// A file cut anywhere loses at most the chunk being written: the reader stops at the first chunk whose header
// or payload is incomplete or whose checksum does not match, and counts what it lost.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace profile_train::agent::format {

inline constexpr char kMagic[8] = {'P', 'T', 'N', 'A', 'T', 'I', 'V', 'E'};
inline constexpr uint16_t kMajor = 1;
inline constexpr uint16_t kMinor = 0;
inline constexpr uint32_t kChunkMagic = 0x4B4E4843u;  // "CHNK"
// Refuse chunk payloads larger than this (bad input, not a capture of ours).
inline constexpr uint32_t kMaxChunkPayload = 64u << 20;

struct FileHeader {
  char magic[8];
  uint16_t major;
  uint16_t minor;
  uint32_t header_bytes;  // sizeof(FileHeader); lets a later minor version grow the header
  int64_t pid;
  int64_t created_unix_ns;
};
static_assert(sizeof(FileHeader) == 32);

enum class ChunkType : uint16_t {
  kMeta = 1,     // JSON object: pid, ppid, process name, cmdline, rank, clock, ... (first chunk)
  kStrings = 2,  // string table entries: {uint32 id, uint32 len, len bytes, zero pad to 4}
  kEvents = 3,   // array of Record (64 bytes each)
  kStatus = 4,   // JSON object: capture status (nvtx / cupti), drops; the last one in the file wins
  kDevice = 5,   // JSON object: one GPU's properties (CUPTI device record)
};

struct ChunkHeader {
  uint32_t magic;          // kChunkMagic
  uint16_t type;           // ChunkType
  uint16_t flags;          // 0
  uint32_t payload_bytes;  // not counting the padding to 8 bytes
  uint32_t checksum;       // fnv1a32() of the payload bytes (below)
};
static_assert(sizeof(ChunkHeader) == 16);

enum class RecordKind : uint8_t {
  kRange = 1,       // push/pop range, closed: start_ns..end_ns on tid; x0 = domain string id; x1 = depth
  kMark = 2,        // instant: start_ns on tid; x0 = domain
  kRangeStart = 3,  // start/end range begins: start_ns, tid, corr = range id, x0 = domain
  kRangeEnd = 4,    // start/end range ends: end_ns, tid, corr = range id
  kThreadName = 5,  // tid is named `name`
  kKernel = 6,      // GPU kernel: device, tid = stream, corr, value = grid blocks, x0 = block threads,
                    //   x1 = registers per thread, x2 = shared memory bytes (static + dynamic)
  kMemcpy = 7,      // a = CopyKind, b = src MemoryKind, c = dst MemoryKind, value = bytes, x1 = 1 if async,
                    //   x0 = src device, x2 = dst device (P2P only, else UINT32_MAX)
  kMemset = 8,      // value = bytes, c = MemoryKind
  kSync = 9,        // a = SyncKind; tid = stream (UINT32_MAX: none)
  kRuntime = 10,    // CUDA runtime API call on CPU thread tid; name = callback name as CUPTI reports it
  kDriver = 11,     // CUDA driver API call
  kMemory = 12,     // allocation (value > 0) / release (value < 0) at start_ns; a = MemoryKind
};

// Small enums as stored in Record.a/b/c. Values match trace::CopyKind / MemoryKind / SyncKind.
enum class CopyKind : uint8_t { kUnknown = 0, kHtoD, kDtoH, kDtoD, kHtoH, kPtoP };
enum class MemKind : uint8_t { kUnknown = 0, kPageable, kPinned, kDevice, kManaged };
enum class SyncKind : uint8_t { kUnknown = 0, kEventSync, kStreamWaitEvent, kStreamSync, kContextSync };

// One event. 64 bytes, trivially copyable; times are CLOCK_MONOTONIC nanoseconds (see FORMAT.md, "clock").
struct Record {
  uint8_t kind = 0;  // RecordKind
  uint8_t a = 0, b = 0, c = 0;
  uint32_t name = 0;     // string id; 0 = none
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t tid = 0;      // CPU: OS thread id (gettid); GPU: stream id
  int64_t corr = -1;     // correlation id (CUPTI) or range id (start/end ranges); -1 = none
  int64_t value = 0;     // bytes / grid blocks, by kind
  uint32_t x0 = 0, x1 = 0;
  int32_t device = -1;   // GPU device index; -1 = CPU / unknown
  uint32_t x2 = 0;
};
static_assert(sizeof(Record) == 64);

// Chunk checksum: FNV-1a style over 64-bit little-endian words (the tail byte-wise), folded to 32 bits.
// Word-wise so the writer thread spends ~1 ns per 8 bytes instead of per byte.
inline uint32_t fnv1a32(const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t h = 14695981039346656037ull;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h ^= w;
    h *= 1099511628211ull;
  }
  for (; i < n; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return static_cast<uint32_t>(h ^ (h >> 32));
}

inline constexpr size_t pad8(size_t n) { return (n + 7) & ~size_t{7}; }

}  // namespace profile_train::agent::format
