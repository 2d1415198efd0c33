// The GPU peak table: data/gpu_specs.json embedded at build time, plus the entries of `--gpu-spec FILE`.
#include <cctype>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "profile_train/analysis/efficiency.h"

namespace profile_train::analysis {

namespace detail {
extern const char* const kEmbeddedGpuSpecs;
}

double GpuSpec::peak(std::string_view dtype, bool matrix, bool tf32_math) const {
  if (dtype == "fp64") return fp64;
  if (!matrix) return fp32;
  if (dtype == "fp32") return tf32_math && tf32 > 0 ? tf32 : fp32;
  if (dtype == "bf16") return bf16;
  if (dtype == "fp16") return fp16;
  if (dtype == "fp8") return fp8;
  return 0;
}

namespace {

// Lowercase, '-' and '_' as spaces, runs of spaces as one.
std::string normalize(std::string_view s) {
  std::string out;
  for (char c : s) {
    char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (l == '-' || l == '_') l = ' ';
    if (l == ' ' && (out.empty() || out.back() == ' ')) continue;
    out.push_back(l);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// `needle` occurs in `hay` on word boundaries (neither neighbour a letter or digit).
bool word_match(const std::string& hay, const std::string& needle) {
  if (needle.empty()) return false;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + 1)) {
    const bool left = at == 0 || !std::isalnum(static_cast<unsigned char>(hay[at - 1]));
    const size_t end = at + needle.size();
    const bool right = end == hay.size() || !std::isalnum(static_cast<unsigned char>(hay[end]));
    if (left && right) return true;
  }
  return false;
}

}  // namespace

StatusOr<std::vector<GpuSpec>> parse_gpu_specs(std::string_view json_text, std::string_view origin) {
  const std::string where(origin);
  nlohmann::json j = nlohmann::json::parse(json_text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return BadInput(where + ": not a JSON object");
  const auto gpus = j.find("gpus");
  if (gpus == j.end() || !gpus->is_array()) return BadInput(where + ": needs a \"gpus\" array");
  std::vector<GpuSpec> out;
  for (size_t i = 0; i < gpus->size(); ++i) {
    const auto& g = (*gpus)[i];
    const std::string at = where + ": gpus[" + std::to_string(i) + "]";
    if (!g.is_object() || !g.contains("name") || !g["name"].is_string())
      return BadInput(at + ": needs a \"name\" string");
    GpuSpec s;
    s.name = g["name"].get<std::string>();
    auto text = [&](const char* k, std::string* v) -> Status {
      if (!g.contains(k)) return Status::Ok();
      if (!g[k].is_string()) return BadInput(at + ": \"" + k + "\" must be a string");
      *v = g[k].get<std::string>();
      return Status::Ok();
    };
    auto number = [&](const nlohmann::json& o, const char* k, double* v) -> Status {
      if (!o.contains(k)) return Status::Ok();
      if (!o[k].is_number() || o[k].get<double>() < 0) return BadInput(at + ": \"" + k + "\" must be a number >= 0");
      *v = o[k].get<double>();
      return Status::Ok();
    };
    PT_RETURN_IF_ERROR(text("vendor", &s.vendor));
    PT_RETURN_IF_ERROR(text("compute_capability", &s.compute_capability));
    PT_RETURN_IF_ERROR(text("source", &s.source));
    PT_RETURN_IF_ERROR(number(g, "memory_gb", &s.memory_gb));
    PT_RETURN_IF_ERROR(number(g, "memory_tbps", &s.memory_tbps));
    if (g.contains("tflops")) {
      const auto& t = g["tflops"];
      if (!t.is_object()) return BadInput(at + ": \"tflops\" must be an object");
      PT_RETURN_IF_ERROR(number(t, "fp64", &s.fp64));
      PT_RETURN_IF_ERROR(number(t, "fp32", &s.fp32));
      PT_RETURN_IF_ERROR(number(t, "tf32", &s.tf32));
      PT_RETURN_IF_ERROR(number(t, "fp16", &s.fp16));
      PT_RETURN_IF_ERROR(number(t, "bf16", &s.bf16));
      PT_RETURN_IF_ERROR(number(t, "fp8", &s.fp8));
    }
    if (g.contains("link")) {
      // The peer interconnect collectives run over (per direction per GPU, what nccl-tests' busbw compares with).
      const auto& l = g["link"];
      if (!l.is_object() || !l.contains("name") || !l["name"].is_string())
        return BadInput(at + ": \"link\" must be an object with a \"name\" string");
      s.link_name = l["name"].get<std::string>();
      PT_RETURN_IF_ERROR(number(l, "gbps_per_direction", &s.link_gbps));
      if (l.contains("source")) {
        if (!l["source"].is_string()) return BadInput(at + ": \"link.source\" must be a string");
        s.link_source = l["source"].get<std::string>();
      }
    }
    if (g.contains("match")) {
      if (!g["match"].is_array()) return BadInput(at + ": \"match\" must be an array of strings");
      for (const auto& m : g["match"]) {
        if (!m.is_string()) return BadInput(at + ": \"match\" must be an array of strings");
        s.match.push_back(normalize(m.get<std::string>()));
      }
    }
    if (s.match.empty()) s.match.push_back(normalize(s.name));
    out.push_back(std::move(s));
  }
  return out;
}

const std::vector<GpuSpec>& builtin_gpu_specs() {
  static const std::vector<GpuSpec> specs = [] {
    auto parsed = parse_gpu_specs(detail::kEmbeddedGpuSpecs, "data/gpu_specs.json");
    return parsed.ok() ? std::move(parsed).value() : std::vector<GpuSpec>{};
  }();
  return specs;
}

StatusOr<std::vector<GpuSpec>> load_gpu_spec_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound("cannot read GPU spec file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  if (ss.str().size() > (size_t{16} << 20)) return BadInput(path + ": larger than 16 MiB");
  return parse_gpu_specs(ss.str(), path);
}

const GpuSpec* match_gpu_spec(std::string_view device_name, const std::vector<GpuSpec>& user) {
  const std::string name = normalize(device_name);
  if (name.empty()) return nullptr;
  const GpuSpec* best = nullptr;
  size_t best_len = 0;
  for (const auto* list : {&user, &builtin_gpu_specs()})
    for (const auto& s : *list)
      for (const auto& m : s.match)
        if (m.size() > best_len && word_match(name, m)) {  // user entries win ties: they come first
          best = &s;
          best_len = m.size();
        }
  return best;
}

}  // namespace profile_train::analysis
