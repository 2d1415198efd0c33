// A big trace parsed by several threads (owner: trace component). The events array is cut at points that
// look like the start of an event ("}" "," "{" with only whitespace between); each thread parses from its point
// to the next one, and the parts are joined into the model one thread would have built. A cut is used only
// when it is certain: the part before it must have arrived, parsing, exactly at an event that starts there
// (a point inside a string or a nested object is never where an event starts, so that parser passes it and the
// part after it is dropped); a part that failed or cannot be joined exactly (see joinable_prefix) is parsed
// again, on the caller's thread, by the part before it, which goes on from where it stopped. So the model, and
// every error and its byte offset, are those of one parser reading the whole stream.
//
// Joining keeps first-seen order: the strings, op inputs and made-up ids of a later part are added after those of
// the parts before it, and its events after theirs (finalize's stable sort then orders them as before).
#include <algorithm>
#include <cstring>
#include <functional>
#include <new>
#include <set>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "importers/importers_internal.h"
#include "kineto/kineto_parser.h"
#include "profile_train/common/huge_pages.h"

namespace profile_train::trace::kineto {
namespace {

constexpr size_t kScanBytes = size_t{1} << 20;  // a part looks this far for its first event
constexpr size_t kMaxParts = 8;
constexpr size_t kMaxUnknownCats = 64, kMaxCpuPids = 256;  // the caps of commit_event's tallies

// The first '{' after "}" whitespace "," whitespace in `s`, or npos. With `newline`, only where the whitespace
// holds a line break: a JSON string holds none, so in a pretty-printed trace (Kineto's) that point is never
// inside a name.
size_t find_event_start(std::string_view s, bool newline) {
  for (size_t i = s.find('}'); i != std::string_view::npos; i = s.find('}', i + 1)) {
    bool broke = false;
    size_t j = i + 1;
    for (; j < s.size() && JsonReader::is_ws(s[j]); ++j) broke = broke || s[j] == '\n';
    if (j >= s.size() || s[j] != ',') continue;
    for (++j; j < s.size() && JsonReader::is_ws(s[j]); ++j) broke = broke || s[j] == '\n';
    if (j < s.size() && s[j] == '{' && (broke || !newline)) return j;
  }
  return std::string_view::npos;
}

// Merges sorted `b` into sorted `a` (b emptied), from the back: no buffer besides a's room for b, and on equal
// elements a's come first (a stable merge).
// `fix(element)` is applied to each element of b as it is placed (`less` must not read what it changes).
template <typename T, typename Less, typename Fix>
void merge_into(std::vector<T>& a, std::vector<T>& b, Less less, Fix fix) {
  size_t i = a.size(), j = b.size(), k = a.size() + b.size();
  reserve_huge(a, k);
  a.resize(k);
  while (j > 0) {
    if (i > 0 && less(b[j - 1], a[i - 1])) {
      a[--k] = a[--i];
    } else {
      T& x = a[--k];
      x = b[--j];
      fix(x);
    }
  }
  std::vector<T>().swap(b);
}

// Adds a later part's made-up ids (string pid -> id) to `ids` in the order that part made them, as one parser
// would have met them, and returns the part's ids that change (old -> new).
std::unordered_map<int64_t, int64_t> join_made_ids(std::map<std::string, int64_t, std::less<>>& ids,
                                                  const std::map<std::string, int64_t, std::less<>>& part) {
  std::vector<std::pair<int64_t, std::string_view>> made(part.size());
  for (const auto& [s, id] : part) made[static_cast<size_t>(kSyntheticIdBase - id)] = {id, s};
  std::unordered_map<int64_t, int64_t> renumber;
  for (const auto& [id, s] : made) {
    auto it = ids.find(s);
    if (it == ids.end()) it = ids.emplace(std::string(s), kSyntheticIdBase - static_cast<int64_t>(ids.size())).first;
    if (it->second != id) renumber[id] = it->second;
  }
  return renumber;
}

// A guess at the room a vector will need: where the address space is short it just grows as it fills.
void reserve_events(std::vector<Event>& v, size_t n) {
  try {
    reserve_huge(v, n);
  } catch (const std::exception&) {  // bad_alloc, length_error
  }
}

// Replays `head`, then reads on from `rest`.
class ReplaySource final : public ByteSource {
 public:
  ReplaySource(std::string head, std::unique_ptr<ByteSource> rest) : head_(std::move(head)), rest_(std::move(rest)) {}
  StatusOr<size_t> read(char* buf, size_t n) override {
    if (pos_ < head_.size()) {
      const size_t k = std::min(n, head_.size() - pos_);
      std::memcpy(buf, head_.data() + pos_, k);
      pos_ += k;
      return k;
    }
    return rest_->read(buf, n);
  }
  const std::string& name() const override { return rest_->name(); }

 private:
  std::string head_;
  size_t pos_ = 0;
  std::unique_ptr<ByteSource> rest_;
};

}  // namespace

struct KinetoParser::Parts {
  struct Part {
    PartControl control;
    std::unique_ptr<ByteSource> source;  // the stream from control.scan_at on (then owned by `replay`)
    std::unique_ptr<ByteSource> replay;
    std::unique_ptr<KinetoParser> parser;
    bool ok = false;  // its parse ended without error: at the next part's start or at the end of the stream
    std::thread thread;
  };
  std::vector<std::unique_ptr<Part>> list;  // the parts after this parser's, in stream order
  std::function<std::unique_ptr<KinetoParser>(ByteSource&, uint64_t)> make;  // a parser of a part from its start

  ~Parts() {
    for (auto& p : list) p->control.cancel.store(true);
    for (auto& p : list)
      if (p->thread.joinable()) p->thread.join();
  }
};

// Here, where Parts is complete.
KinetoParser::KinetoParser(ByteSource& src, const LoadOptions& opt, size_t chunk, uint64_t base)
    : src_(src), opt_(opt), chunk_(chunk), r_(src, opt.max_json_depth, chunk, opt.max_json_value_bytes, base) {}
KinetoParser::~KinetoParser() = default;

// One part's thread: finds its first event, publishes where it starts and parses from there to the next
// part's start (or the end of the stream).
void KinetoParser::run_part(Parts& parts, size_t i) {
  Parts::Part& p = *parts.list[i];
  PartControl* next = i + 1 < parts.list.size() ? &parts.list[i + 1]->control : nullptr;
  auto give_up = [&] {
    if (p.control.start.load() == PartControl::kPending) {
      p.control.start.store(PartControl::kAbsent);
      p.control.start.notify_all();
    }
    if (next != nullptr) next->cancel.store(true);
  };
  try {
    // Read a little, then more, until a point is found: a later start leaves the part before it less time.
    std::string head;
    size_t at = std::string::npos;
    for (size_t want = size_t{64} << 10; at == std::string::npos && head.size() < kScanBytes; want *= 4) {
      const size_t old = head.size();
      head.resize(std::min(want, kScanBytes));
      size_t got = old;
      while (got < head.size()) {
        auto n = p.source->read(head.data() + got, head.size() - got);
        if (!n.ok() || *n == 0) break;
        got += *n;
      }
      const bool end = got < head.size();
      head.resize(got);
      at = find_event_start(head, true);
      if (at == std::string::npos && end) break;
    }
    if (at == std::string::npos) at = find_event_start(head, false);  // a trace on one line
    if (at == std::string::npos || p.control.cancel.load()) return give_up();
    const uint64_t start = p.control.scan_at + at;
    p.replay = std::make_unique<ReplaySource>(head.substr(at), std::move(p.source));
    p.parser = parts.make(*p.replay, start);
    KinetoParser& parser = *p.parser;
    parser.self_ = &p.control;
    parser.next_ = next;
    p.control.start.store(start, std::memory_order_release);
    p.control.start.notify_all();
    const Status st = parser.guarded([&] { parser.parse_tail(); });
    p.ok = st.ok();
    if (!p.ok || !parser.stopped_) give_up();  // the next part is of no use
    if (p.ok) parser.sort_part();
  } catch (const Cancelled&) {
    give_up();
  } catch (...) {  // out of memory, ...: this part is parsed again by the one before it
    give_up();
  }
}

}  // namespace profile_train::trace::kineto

namespace profile_train::trace {

size_t parallel_parse_parts(const LoadOptions& options, uint64_t size) {
  if (options.parallel_parse_min_bytes == UINT64_MAX || size == 0 || size < options.parallel_parse_min_bytes) return 1;
  if (options.parallel_parse_parts > 0) return static_cast<size_t>(options.parallel_parse_parts);
  size_t n = std::min<size_t>(std::thread::hardware_concurrency(), kineto::kMaxParts);
  if (options.parallel_parse_min_bytes > 0) n = std::min<uint64_t>(n, size / options.parallel_parse_min_bytes);
  return n;
}

}  // namespace profile_train::trace

namespace profile_train::trace::kineto {

void KinetoParser::start_parts() {
  const uint64_t size = src_.known_size();
  const size_t n = parallel_parse_parts(opt_, size);
  const uint64_t here = r_.offset();
  if (n < 2 || here >= size) return;
  parts_ = std::make_unique<Parts>();
  for (size_t i = 1; i < n; ++i) {
    auto p = std::make_unique<Parts::Part>();
    p->control.scan_at = here + (size - here) / n * i;
    p->source = src_.reopen_at(p->control.scan_at);
    if (!p->source) break;
    parts_->list.push_back(std::move(p));
  }
  if (parts_->list.empty()) {
    parts_.reset();
    return;
  }
  auto& list = parts_->list;
  next_ = &list[0]->control;
  // Room for the events of a part (a guess: Kineto writes 300-800 bytes per event; an address range only until
  // written), so that its vector is not copied as it grows, nor this one when the others are merged into it.
  const size_t part_events = static_cast<size_t>((size - here) / n / 400);
  reserve_events(trace_.events, trace_.events.size() + part_events * n);
  parts_->make = [&opt = opt_, chunk = chunk_, hd = events_hd_, top = top_object_, part_events](ByteSource& src,
                                                                                               uint64_t base) {
    auto p = std::make_unique<KinetoParser>(src, opt, chunk, base);
    p->events_hd_ = hd;
    p->top_object_ = top;
    reserve_events(p->trace_.events, part_events);
    return p;
  };
  for (size_t i = 0; i < list.size(); ++i) {
    try {
      list[i]->thread = std::thread([parts = parts_.get(), i] { run_part(*parts, i); });
    } catch (const std::system_error&) {  // no thread: this part and the ones after it are not parsed
      for (size_t j = i; j < list.size(); ++j) {
        list[j]->control.start.store(PartControl::kAbsent);
        list[j]->control.start.notify_all();
      }
      break;
    }
  }
}

void KinetoParser::sort_part() {
  sort_events(trace_.events);
  sort_memory(trace_.memory);
  sorted_ = true;
}

bool KinetoParser::at_boundary() {
  uint64_t b = next_->start.load(std::memory_order_acquire);
  if (b == PartControl::kPending) {
    if (r_.element_offset() < next_->scan_at) return false;
    next_->start.wait(PartControl::kPending);  // its start is at or after here: wait for it (it reads a little)
    b = next_->start.load(std::memory_order_acquire);
  }
  if (b == PartControl::kAbsent) {
    next_ = nullptr;
    return false;
  }
  const uint64_t at = r_.element_offset();
  if (at < b) return false;
  if (at == b) return true;
  next_->cancel.store(true);  // this parser passed the point inside an element: the part from there is wrong
  next_ = nullptr;
  return false;
}

// How many of the parts after the first (chain[1..]) can be joined exactly: made-up ids are renumbered only
// when no numeric id of the part lies in their range, and the capped tallies (unknown categories, CPU pids)
// only while their union stays under the cap (beyond it, which entries a single parser keeps depends on order).
size_t KinetoParser::joinable_prefix(const std::vector<KinetoParser*>& chain) const {
  std::map<std::string, int64_t, std::less<>> ids = synthetic_ids_;
  std::set<std::string, std::less<>> cats;
  for (const auto& [c, n] : unknown_cats_) cats.insert(c);
  std::set<int64_t> pids;
  for (const auto& pc : cpu_pid_counts_) pids.insert(pc.first);
  for (size_t j = 1; j < chain.size(); ++j) {
    const KinetoParser& b = *chain[j];
    const std::unordered_map<int64_t, int64_t> renumber = join_made_ids(ids, b.synthetic_ids_);
    if (!renumber.empty() && b.numeric_in_synthetic_range_) return j - 1;
    for (const auto& [c, n] : b.unknown_cats_) cats.insert(c);
    for (const auto& pc : b.cpu_pid_counts_) {
      auto it = renumber.find(pc.first);
      pids.insert(it != renumber.end() ? it->second : pc.first);
    }
    if (cats.size() > kMaxUnknownCats || pids.size() > kMaxCpuPids) return j - 1;
  }
  return chain.size() - 1;
}

void KinetoParser::absorb(KinetoParser& b) {
  Trace& t = trace_;
  Trace& bt = b.trace_;
  std::vector<StringId> str(bt.strings.size());
  for (size_t i = 0; i < str.size(); ++i) str[i] = t.strings.intern(bt.strings.get(static_cast<StringId>(i)));
  const std::unordered_map<int64_t, int64_t> renumber = join_made_ids(synthetic_ids_, b.synthetic_ids_);
  auto id_of = [&](int64_t v) {
    if (renumber.empty() || v > kSyntheticIdBase) return v;
    auto it = renumber.find(v);
    return it != renumber.end() ? it->second : v;
  };
  std::vector<uint32_t> inputs(bt.op_inputs.size(), 0);
  for (size_t j = 1; j < inputs.size(); ++j) {
    const OpInputs& o = bt.op_inputs[j];
    const OpInputs in{str[o.dims], str[o.types], str[o.concrete]};
    auto [it, added] = inputs_index_.try_emplace(InputsKey{in.dims, in.types, in.concrete},
                                                 static_cast<uint32_t>(t.op_inputs.size()));
    if (added) t.op_inputs.push_back(in);
    inputs[j] = it->second;
  }
  std::vector<uint32_t> colls(bt.collectives.size(), 0);
  for (size_t j = 1; j < colls.size(); ++j) {
    trace::CollectiveArgs a = bt.collectives[j];
    for (StringId* id : {&a.name, &a.dtype, &a.pg_name, &a.pg_desc, &a.pg_ranks, &a.in_split, &a.out_split}) *id = str[*id];
    colls[j] = intern_collective(a);
  }
  // Both parts are sorted (sort_part): merged, ties to this part's first, that is finalize's stable order. The
  // part's ids are made this part's as its events are placed (the order reads only times).
  merge_into(t.events, bt.events, event_before, [&](Event& ev) {
    ev.name = str[ev.name];
    ev.inputs = inputs[ev.inputs];
    ev.coll = colls[ev.coll];
    ev.pid = id_of(ev.pid);
    ev.tid = id_of(ev.tid);
  });
  merge_into(t.memory, bt.memory, memory_before, [&](MemorySample& m) {
    m.pid = id_of(m.pid);
    m.tid = id_of(m.tid);
  });
#define PT_ADD_COUNTER(name, problem, label) t.quality.name += bt.quality.name;
  PT_DATA_QUALITY_COUNTERS(PT_ADD_COUNTER)
#undef PT_ADD_COUNTER
  for (auto& note : bt.quality.notes) t.quality.notes.push_back(std::move(note));
  for (auto& [pid, name] : bt.meta.process_names) t.meta.process_names[id_of(pid)] = std::move(name);
  for (auto& [key, name] : bt.meta.thread_names) t.meta.thread_names[{id_of(key.first), id_of(key.second)}] = std::move(name);
  for (auto& [key, v] : bt.meta.versions) t.meta.versions[key] = std::move(v);
  if (b.saw_schema_) t.meta.format_version = std::move(bt.meta.format_version);
  if (b.saw_distributed_) {
    t.meta.rank = bt.meta.rank;
    t.meta.world_size = bt.meta.world_size;
    t.meta.distributed_backend = std::move(bt.meta.distributed_backend);
  }
  if (b.saw_device_props_) {
    saw_device_props_ = true;
    empty_device_props_ = b.empty_device_props_;
    devices_ = std::move(b.devices_);
  }
  if (b.has_base_time_) {
    has_base_time_ = true;
    base_time_ns_ = b.base_time_ns_;
  }
  if (step_pid_ == INT64_MIN && b.step_pid_ != INT64_MIN) step_pid_ = id_of(b.step_pid_);
  for (const auto& [pid, count] : b.cpu_pid_counts_) {
    const int64_t p = id_of(pid);
    auto it = std::find_if(cpu_pid_counts_.begin(), cpu_pid_counts_.end(), [&](const auto& pc) { return pc.first == p; });
    if (it != cpu_pid_counts_.end()) it->second += count;
    else cpu_pid_counts_.emplace_back(p, count);
  }
  for (const auto& [cat, count] : b.unknown_cats_) unknown_cats_[cat] += count;
  gpu_events_ += b.gpu_events_;
  arg_issue_events_ += b.arg_issue_events_;
  trace_spans_ += b.trace_spans_;
  other_instants_ += b.other_instants_;
  counters_ += b.counters_;
  begin_end_ += b.begin_end_;
  unknown_phase_ += b.unknown_phase_;
  profiler_ranges_ += b.profiler_ranges_;
  not_objects_ += b.not_objects_;
  saw_pytorch_span_ = saw_pytorch_span_ || b.saw_pytorch_span_;
}

Status KinetoParser::join_parts() {
  if (!parts_) return Status();
  auto& list = parts_->list;
  if (!stopped_) list[0]->control.cancel.store(true);  // this parser went to the end (or failed): no part is used
  else sort_part();  // while the others parse on
  for (auto& p : list)
    if (p->thread.joinable()) p->thread.join();
  if (!stopped_) return Status();
  std::vector<KinetoParser*> chain{this};
  for (auto& p : list) {
    if (!chain.back()->stopped_ || !p->ok || !p->parser) break;
    chain.push_back(p->parser.get());
  }
  for (;;) {
    KinetoParser* last = chain.back();
    if (last->stopped_) {  // the part after it could not be used: it parses on to the end, on this thread
      last->next_ = nullptr;
      last->self_ = nullptr;
      const Status st = last->guarded([&] { last->parse_tail(); });
      if (!st.ok()) return st;
    }
    const size_t ok = joinable_prefix(chain);
    if (ok + 1 == chain.size()) break;
    chain.resize(ok + 1);
  }
  for (KinetoParser* p : chain)
    if (!p->sorted_) p->sort_part();
  for (size_t i = 1; i < chain.size(); ++i) absorb(*chain[i]);
  trace_.meta.parsed_in_parts = static_cast<int32_t>(chain.size());
  return Status();
}

}  // namespace profile_train::trace::kineto
