// Native capture files, chunk layer: see native_chunks.h.
#include "native/native_chunks.h"

#include <algorithm>
#include <cstring>
#include <fstream>

namespace profile_train::trace::native {
namespace {

StatusOr<std::string> read_bytes(const std::filesystem::path& p, uint64_t limit, bool head_only) {
  std::error_code ec;
  if (!std::filesystem::exists(p, ec)) return NotFound(p.string() + ": no such file");
  std::ifstream in(p, std::ios::binary);
  if (!in) return IoError(p.string() + ": cannot open");
  const uint64_t size = std::filesystem::file_size(p, ec);
  if (!ec && size > limit) return ResourceExhausted(p.string() + ": file larger than the configured limit");
  std::string data;
  if (head_only) {
    data.resize(64 * 1024);
    in.read(data.data(), static_cast<std::streamsize>(data.size()));
    data.resize(static_cast<size_t>(in.gcount()));
  } else {
    std::ostringstream ss;
    ss << in.rdbuf();
    data = std::move(ss).str();
  }
  return data;
}

Status check_header(const std::filesystem::path& p, const std::string& data, fmt::FileHeader* h) {
  if (data.size() < sizeof(fmt::FileHeader) || std::memcmp(data.data(), fmt::kMagic, sizeof fmt::kMagic) != 0)
    return BadInput(p.string() + ": not a profile-train native capture (bad magic)");
  std::memcpy(h, data.data(), sizeof *h);
  if (h->major != fmt::kMajor)
    return Unsupported(p.string() + ": native capture format version " + std::to_string(h->major) + "." +
                       std::to_string(h->minor) + " is not supported (this reader reads " +
                       std::to_string(fmt::kMajor) + ".x); use a matching profile-train");
  if (h->header_bytes < sizeof(fmt::FileHeader) || h->header_bytes > data.size())
    return BadInput(p.string() + ": corrupt native capture header");
  return Status::Ok();
}

// True if a complete, checksummed chunk starts at `off`; adds the bytes hashed to `hashed`.
bool valid_chunk_at(const std::string& data, size_t off, uint64_t& hashed) {
  if (data.size() - off < sizeof(fmt::ChunkHeader)) return false;
  fmt::ChunkHeader ch;
  std::memcpy(&ch, data.data() + off, sizeof ch);
  if (ch.magic != fmt::kChunkMagic || ch.payload_bytes > fmt::kMaxChunkPayload) return false;
  if (data.size() - off - sizeof ch < ch.payload_bytes) return false;
  hashed += ch.payload_bytes;
  return fmt::fnv1a32(data.data() + off + sizeof ch, ch.payload_bytes) == ch.checksum;
}

// The next offset after `from`, on the 8-byte grid of chunk starts (`grid`), where a valid chunk begins;
// npos if none. Checksums of candidate chunks are capped at `budget` bytes in total, so a file crafted
// full of fake markers costs linear time, not quadratic.
size_t next_valid_chunk(const std::string& data, size_t from, size_t grid, uint64_t& budget) {
  size_t off = grid + fmt::pad8(from > grid ? from - grid : 0);
  for (; off + sizeof(fmt::ChunkHeader) <= data.size(); off += 8) {
    uint32_t magic;
    std::memcpy(&magic, data.data() + off, sizeof magic);
    if (magic != fmt::kChunkMagic) continue;
    uint64_t hashed = 0;
    const bool ok = valid_chunk_at(data, off, hashed);
    if (hashed > budget) return std::string::npos;
    budget -= hashed;
    if (ok) return off;
  }
  return std::string::npos;
}

// Walks the chunks. `meta_only` stops after the first META chunk. A damaged chunk (bad marker, length or
// checksum) is skipped up to the next valid chunk marker, so one flipped bit costs one chunk, not the file.
void parse_chunks(const std::string& data, ParsedFile& f, bool meta_only) {
  const size_t grid = f.header.header_bytes;
  uint64_t resync_budget = 4 * static_cast<uint64_t>(data.size()) + fmt::kMaxChunkPayload;
  size_t off = grid;
  while (off < data.size()) {
    uint64_t hashed = 0;
    if (!valid_chunk_at(data, off, hashed)) {
      const size_t next = next_valid_chunk(data, off + 8, grid, resync_budget);
      const uint64_t span = (next == std::string::npos ? data.size() : next) - off;
      fmt::ChunkHeader ch{};
      const bool whole_header = data.size() - off >= sizeof ch;
      if (whole_header) std::memcpy(&ch, data.data() + off, sizeof ch);
      const bool header_ok =
          whole_header && ch.magic == fmt::kChunkMagic && ch.payload_bytes <= fmt::kMaxChunkPayload;
      const uint64_t claimed = fmt::pad8(sizeof ch + ch.payload_bytes);
      // The header is believed when its length leads exactly to where reading resumes (a damaged payload)
      // or past the end of the file (a cut last chunk); otherwise every damaged byte may have held records.
      if (header_ok && (claimed == span || (next == std::string::npos && claimed >= span))) {
        if (ch.type == static_cast<uint16_t>(fmt::ChunkType::kEvents))
          f.lost_since_status += static_cast<int64_t>(ch.payload_bytes / sizeof(fmt::Record));
      } else {
        f.lost_since_status += static_cast<int64_t>(span / sizeof(fmt::Record));
        if (span >= sizeof(fmt::Record)) f.lost_is_upper_bound = true;
      }
      if (next == std::string::npos && (!whole_header || (header_ok && claimed > span))) {
        f.truncated = true;
        f.truncated_bytes = span;
      } else {
        ++f.damaged_regions;
        f.damaged_bytes += span;
      }
      if (next == std::string::npos) break;
      off = next;
      continue;
    }
    fmt::ChunkHeader ch;
    std::memcpy(&ch, data.data() + off, sizeof ch);
    const char* payload = data.data() + off + sizeof ch;
    switch (static_cast<fmt::ChunkType>(ch.type)) {
      case fmt::ChunkType::kMeta:
      case fmt::ChunkType::kStatus:
      case fmt::ChunkType::kDevice: {
        auto j = nlohmann::json::parse(payload, payload + ch.payload_bytes, nullptr, false);
        if (!j.is_object()) break;
        if (ch.type == static_cast<uint16_t>(fmt::ChunkType::kMeta)) {
          f.meta = std::move(j);
        } else if (ch.type == static_cast<uint16_t>(fmt::ChunkType::kStatus)) {
          f.status = std::move(j);
          const int64_t written = jint(f.status, "written", -1);
          if (written >= 0) {  // covers all damage so far: the estimates up to here are replaced by a count
            f.status_written = written;
            f.records_before_status = f.records.size();
            f.lost_since_status = 0;
            f.lost_is_upper_bound = false;
          }
        } else {
          f.devices.push_back(std::move(j));
        }
        break;
      }
      case fmt::ChunkType::kStrings: {
        size_t p = 0;
        while (p + 8 <= ch.payload_bytes) {
          uint32_t hdr[2];
          std::memcpy(hdr, payload + p, sizeof hdr);
          p += 8;
          if (hdr[1] > ch.payload_bytes - p) break;
          f.strings[hdr[0]] = std::string(payload + p, hdr[1]);
          p += hdr[1] + (4 - hdr[1] % 4) % 4;
        }
        break;
      }
      case fmt::ChunkType::kEvents: {
        const size_t n = ch.payload_bytes / sizeof(fmt::Record);
        const size_t old = f.records.size();
        f.records.resize(old + n);
        std::memcpy(f.records.data() + old, payload, n * sizeof(fmt::Record));
        break;
      }
      default:
        break;  // unknown chunk types of a later minor version are skipped
    }
    off = std::min(data.size(), off + sizeof ch + fmt::pad8(ch.payload_bytes));
    if (meta_only && ch.type == static_cast<uint16_t>(fmt::ChunkType::kMeta)) return;
  }
}

}  // namespace

StatusOr<ParsedFile> parse_capture(const std::string& data, const std::filesystem::path& p, bool meta_only) {
  ParsedFile f;
  f.path = p;
  PT_RETURN_IF_ERROR(check_header(p, data, &f.header));
  parse_chunks(data, f, meta_only);
  return f;
}

StatusOr<ParsedFile> parse_file(const std::filesystem::path& p, const LoadOptions& options, bool meta_only) {
  auto data = read_bytes(p, options.max_uncompressed_bytes, meta_only);
  if (!data.ok()) return data.status();
  auto f = parse_capture(*data, p, meta_only);
  if (f.ok() && options.progress) options.progress(data->size(), data->size());
  return f;
}

}  // namespace profile_train::trace::native
