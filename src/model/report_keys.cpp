// report_keys(): a third walk of report_fields.h, over the members' types instead of their values.
#include "profile_train/model/report_keys.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "report_fields.h"

namespace profile_train::model {
namespace {

using namespace detail;

class KeyCollector {
 public:
  KeyCollector(std::vector<ReportKey>& out, std::string prefix, bool always)
      : out_(out), prefix_(std::move(prefix)), always_(always) {}

  template <class T>
  void operator()(const char* key, const T& member) { add(join(key), member, false, always_); }
  template <class T>
  void absent_if_unset(const char* key, const std::optional<T>&) { add(join(key), T{}, false, false); }
  // The group's keys sit in the enclosing object and come all together or not at all.
  template <class T>
  void inline_group(const std::optional<T>&) {
    KeyCollector inner(out_, prefix_, false);
    T group{};
    fields(inner, group);
  }

  template <ReportStruct T>
  void walk() {
    T s{};
    fields(*this, s);
  }

 private:
  std::string join(const char* key) const { return prefix_.empty() ? key : prefix_ + "." + key; }

  void push(const std::string& path, KeyType type, bool nullable, bool always, bool free_form = false) {
    out_.push_back({path, type, nullable, always, free_form});
  }

  void add(const std::string& path, const std::string&, bool nullable, bool always) {
    push(path, KeyType::kString, nullable, always);
  }
  void add(const std::string& path, double, bool nullable, bool always) { push(path, KeyType::kNumber, nullable, always); }
  void add(const std::string& path, int64_t, bool nullable, bool always) {
    push(path, KeyType::kInteger, nullable, always);
  }
  void add(const std::string& path, bool, bool nullable, bool always) { push(path, KeyType::kBoolean, nullable, always); }
  // Enums are written by name.
  void add(const std::string& path, Bottleneck, bool nullable, bool always) {
    push(path, KeyType::kString, nullable, always);
  }
  void add(const std::string& path, Role, bool nullable, bool always) { push(path, KeyType::kString, nullable, always); }
  void add(const std::string& path, const nlohmann::json&, bool nullable, bool always) {
    push(path, KeyType::kObject, nullable, always, /*free_form=*/true);
  }
  template <class Names>
  void add_named(const std::string& path, const Names& names, bool nullable, bool always) {
    push(path, KeyType::kObject, nullable, always);
    for (std::string_view name : names) push(path + "." + std::string(name), KeyType::kNumber, true, true);
  }
  void add(const std::string& path, const RoleValues&, bool nullable, bool always) {
    add_named(path, kBreakdownRoleNames, nullable, always);
  }
  void add(const std::string& path, const PhaseValues&, bool nullable, bool always) {
    add_named(path, kPhaseNames, nullable, always);
  }
  template <class T>
  void add(const std::string& path, const std::optional<T>&, bool, bool always) {
    add(path, T{}, true, always);
  }
  template <class T>
  void add(const std::string& path, const std::vector<T>&, bool nullable, bool always) {
    push(path, KeyType::kArray, nullable, always);
    add(path + "[]", T{}, false, true);
  }
  template <ReportStruct T>
  void add(const std::string& path, const T&, bool nullable, bool always) {
    push(path, KeyType::kObject, nullable, always);
    KeyCollector inner(out_, path, true);
    inner.walk<T>();
  }

  std::vector<ReportKey>& out_;
  std::string prefix_;
  bool always_;
};

}  // namespace

const std::vector<ReportKey>& report_keys() {
  static const std::vector<ReportKey> kKeys = [] {
    std::vector<ReportKey> keys;
    KeyCollector(keys, "", true).walk<Report>();
    return keys;
  }();
  return kKeys;
}

}  // namespace profile_train::model
