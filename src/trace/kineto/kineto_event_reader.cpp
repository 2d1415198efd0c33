// Reads one traceEvents element straight from the read buffer into a RawEvent (string_views, number text):
// the fields Kineto writes in every generation, each type-checked; a value of the wrong type is skipped and
// counted, never fatal.
#include <charconv>

#include "kineto/kineto_parser.h"

namespace profile_train::trace::kineto {

void KinetoParser::field_string(std::string_view* out, bool* has, int hd) {
  if (r_.peek() == '"') {
    *out = r_.read_string();
    *has = true;
  } else {
    r_.skip_value(hd);
    raw_.malformed = true;
  }
}

void KinetoParser::field_number(NumberText* out, bool* has, int hd) {
  const char c = r_.peek();
  if (c == '-' || JsonReader::is_digit(c)) {
    *out = r_.read_number();
    *has = true;
  } else {
    r_.skip_value(hd);
    raw_.malformed = true;
  }
}

void KinetoParser::field_id(IdField* f, int hd) {
  const char c = r_.peek();
  if (c == '"') {
    f->str = r_.read_string();
    f->is_str = true;
    f->present = true;
  } else if (c == '-' || JsonReader::is_digit(c)) {
    if (detail::number_to_i64(r_.read_number(), &f->num)) f->present = true;
    else raw_.malformed = true;
  } else {
    r_.skip_value(hd);
    raw_.malformed = true;
  }
}

void KinetoParser::arg_int(int64_t* out, int hd, bool* has) {
  const char c = r_.peek();
  if (c == '-' || JsonReader::is_digit(c)) {
    if (detail::number_to_i64(r_.read_number(), out)) {
      if (has != nullptr) *has = true;
    } else {
      ++raw_.arg_issues;
    }
  } else if (c == '"') {
    // ROCm writes some ids as strings ("stream": "0x0"); accept decimal or hex text, ignore other text.
    const std::string_view s = trim(r_.read_string());
    int64_t v = 0;
    bool ok = false;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
      auto [ptr, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), v, 16);
      ok = ec == std::errc() && ptr == s.data() + s.size();
    } else {
      ok = parse_decimal(s, &v);
    }
    if (ok) {
      *out = v;
      if (has != nullptr) *has = true;
    }
  } else {
    r_.skip_value(hd);
    if (c != 'n') ++raw_.arg_issues;  // null is a legitimate "unknown"
  }
}

void KinetoParser::arg_double(double* out, int hd) {
  const char c = r_.peek();
  if (c == '-' || JsonReader::is_digit(c)) {
    if (!detail::number_to_double(r_.read_number(), out)) ++raw_.arg_issues;
  } else {
    r_.skip_value(hd);
    if (c != 'n') ++raw_.arg_issues;
  }
}

void KinetoParser::arg_string(std::string_view* out, bool* has, int hd) {
  if (r_.peek() == '"') {
    *out = r_.read_string();
    *has = true;
  } else {
    r_.skip_value(hd);
    ++raw_.arg_issues;
  }
}

void KinetoParser::arg_coll_text(StringId* out, int hd) {
  const char c = r_.peek();
  if (c == '"') {
    *out = trace_.strings.intern(utf8_safe(r_.read_string(), &utf8_scratch_));
    raw_.has_coll = true;
  } else if (c == '-' || JsonReader::is_digit(c)) {
    int64_t v = 0;
    if (detail::number_to_i64(r_.read_number(), &v)) {
      *out = trace_.strings.intern(std::to_string(v));
      raw_.has_coll = true;
    } else {
      ++raw_.arg_issues;
    }
  } else {
    r_.skip_value(hd);
    if (c != 'n') ++raw_.arg_issues;
  }
}

void KinetoParser::arg_coll_int(int64_t* out, int hd) {
  bool has = false;
  arg_int(out, hd, &has);
  if (has) raw_.has_coll = true;
}

uint32_t KinetoParser::intern_collective(const trace::CollectiveArgs& a) {
  auto [it, added] = coll_index_.try_emplace(a, static_cast<uint32_t>(trace_.collectives.size()));
  if (added) trace_.collectives.push_back(a);
  return it->second;
}

void KinetoParser::arg_dim3(int64_t* dims, int* n, int hd) {
  if (r_.peek() != '[') {
    const char c = r_.peek();
    r_.skip_value(hd);
    if (c != '"' && c != 'n') ++raw_.arg_issues;  // Triton cpu_ops write "grid": "grid(100,)"
    return;
  }
  check_depth(hd + 1);
  r_.expect('[');
  if (r_.try_close(']')) return;
  int k = 0;
  do {
    const char c = r_.peek();
    if (k < 3 && (c == '-' || JsonReader::is_digit(c))) {
      int64_t v = 0;
      if (detail::number_to_i64(r_.read_number(), &v) && v >= 0) {
        dims[k++] = v;
      } else {
        ++raw_.arg_issues;
      }
    } else {
      r_.skip_value(hd + 1);
    }
  } while (r_.next_or_close(']'));
  *n = k;
}

// Inputs text is built piece by piece (a number, a dtype, a separator, a bracket) and cut before the piece
// that would take it past kMaxInputsText with its "..." marker: the cut never splits a UTF-8 sequence.
void KinetoParser::append_inputs(std::string* out, std::string_view piece) {
  if (inputs_cut_) return;
  if (out->size() + piece.size() + 3 > kMaxInputsText) {
    inputs_cut_ = true;
    out->append("...");
    return;
  }
  out->append(piece);
}

// One list of "Input Dims" (integers and nested lists: a TensorList input is a list of shapes) or of
// "Input type" (strings). At '['; `hd` is the depth of the container holding it.
void KinetoParser::render_inputs_list(std::string* out, bool dims, int hd) {
  check_depth(hd + 1);
  r_.expect('[');
  append_inputs(out, "[");
  if (!r_.try_close(']')) {
    bool first = true;
    do {
      if (!first) append_inputs(out, ", ");
      first = false;
      const char c = r_.peek();
      if (dims && c == '[') {
        render_inputs_list(out, dims, hd + 1);
      } else if (dims && (c == '-' || JsonReader::is_digit(c))) {
        const NumberText n = r_.read_number();
        append_inputs(out, n.integral && n.text.size() <= 20 ? n.text : std::string_view("?"));
      } else if (!dims && c == '"') {
        append_inputs(out, utf8_safe(r_.read_string(), &utf8_scratch_));
      } else {
        r_.skip_value(hd + 1);
        append_inputs(out, "?");
      }
    } while (r_.next_or_close(']'));
  }
  append_inputs(out, "]");
}

// Traces repeat a few signatures many times: a list whose text was rendered before is looked up by that
// text (byte-identical, so valid) instead of being read again. Texts up to kCachedInputsText bytes, at
// most kCachedInputs of each kind, are remembered.
void KinetoParser::arg_inputs(StringId* out, bool* has, bool dims, int hd, int cache_at) {
  if (r_.peek() != '[') {
    const char c = r_.peek();
    r_.skip_value(hd);
    if (c != 'n') ++raw_.arg_issues;
    return;
  }
  constexpr size_t kCachedInputsText = 2048, kCachedInputs = size_t{1} << 16;
  auto& cache = inputs_cache_[cache_at >= 0 ? cache_at : dims ? 0 : 1];
  int nesting = 0;
  const std::string_view text = r_.peek_list_text(kCachedInputsText, &nesting);
  if (!text.empty() && hd + nesting <= r_.max_depth()) {
    if (auto it = cache.find(text); it != cache.end()) {
      r_.skip_text(text);
      *out = it->second;
      *has = true;
      return;
    }
  }
  inputs_text_.clear();
  inputs_cut_ = false;
  render_inputs_list(&inputs_text_, dims, hd);
  *out = trace_.strings.intern(inputs_text_);
  *has = true;
  if (!text.empty() && cache.size() < kCachedInputs) cache.emplace(std::string(text), *out);
}

uint32_t KinetoParser::intern_inputs(const RawEvent& e) {
  const OpInputs in{e.has_input_dims ? e.input_dims : StringId{0}, e.has_input_types ? e.input_types : StringId{0},
                    e.has_concrete_inputs ? e.concrete_inputs : StringId{0}};
  auto [it, added] = inputs_index_.try_emplace(InputsKey{in.dims, in.types, in.concrete}, static_cast<uint32_t>(trace_.op_inputs.size()));
  if (added) trace_.op_inputs.push_back(in);
  return it->second;
}

int64_t KinetoParser::resolve_id(const IdField& f) {
  if (!f.present) return 0;
  if (!f.is_str) return note_numeric_id(f.num);
  std::string_view s = trim(f.str);
  int64_t v = 0;
  if (parse_decimal(s, &v)) return note_numeric_id(v);
  if (starts_with(s, "stream ") && parse_decimal(trim(s.substr(7)), &v)) return note_numeric_id(v);  // 2021 GPU tids
  // Other strings ("Spans", "Traces", "PyTorch Profiler"): stable synthetic ids far from real ones.
  auto it = synthetic_ids_.find(s);
  if (it != synthetic_ids_.end()) return it->second;
  const int64_t id = kSyntheticIdBase - static_cast<int64_t>(synthetic_ids_.size());
  synthetic_ids_.emplace(std::string(s), id);
  return id;
}

void KinetoParser::parse_args(int hd) {
  if (r_.peek() != '{') {
    const char c = r_.peek();
    r_.skip_value(hd);
    if (c != 'n') ++raw_.arg_issues;
    return;
  }
  check_depth(hd + 1);
  r_.expect('{');
  if (r_.try_close('}')) return;
  const int vd = hd + 1;  // depth holding the arg values
  do {
    const std::string_view k = r_.read_string();
    r_.expect(':');
    switch (k.size()) {
      case 3:
        if (key_is(k, "Seq")) arg_coll_int(&raw_.coll.seq, vd);
        else r_.skip_value(vd);
        break;
      case 4:
        if (key_is(k, "grid")) arg_dim3(raw_.grid, &raw_.grid_n, vd);
        else if (key_is(k, "name")) arg_string(&raw_.meta_name, &raw_.has_meta_name, vd);
        else if (key_is(k, "Addr")) arg_int(&raw_.mem_addr, vd);
        else r_.skip_value(vd);
        break;
      case 5:
        if (key_is(k, "bytes")) arg_int(&raw_.bytes, vd);
        else if (key_is(k, "Bytes")) arg_int(&raw_.mem_bytes, vd, &raw_.has_mem_bytes);
        else if (key_is(k, "block")) arg_dim3(raw_.block, &raw_.block_n, vd);
        else if (key_is(k, "dtype")) arg_coll_text(&raw_.coll.dtype, vd);
        else r_.skip_value(vd);
        break;
      case 6:
        if (key_is(k, "device")) arg_int(&raw_.device, vd, &raw_.has_device);
        else if (key_is(k, "stream")) arg_int(&raw_.stream, vd, &raw_.has_stream);
        else r_.skip_value(vd);
        break;
      case 9:
        if (key_is(k, "Device Id")) arg_int(&raw_.mem_device_id, vd);
        else r_.skip_value(vd);
        break;
      case 10:
        if (key_is(k, "Input Dims")) arg_inputs(&raw_.input_dims, &raw_.has_input_dims, true, vd);
        else if (key_is(k, "Input type")) arg_inputs(&raw_.input_types, &raw_.has_input_types, false, vd);
        else if (key_is(k, "Group size")) {
          int64_t g = -1;
          arg_coll_int(&g, vd);
          if (g >= 0 && g <= INT32_MAX) raw_.coll.group_size = static_cast<int32_t>(g);
        } else r_.skip_value(vd);
        break;
      case 11:
        if (key_is(k, "External id") || key_is(k, "external id")) arg_int(&raw_.external_id, vd);
        else if (key_is(k, "correlation")) arg_int(&raw_.correlation, vd);
        else if (key_is(k, "Device Type")) arg_int(&raw_.mem_device_type, vd);
        else r_.skip_value(vd);
        break;
      case 13:
        if (key_is(k, "shared memory")) arg_int(&raw_.shmem, vd);
        else if (key_is(k, "blocks per SM")) arg_double(&raw_.blocks_per_sm, vd);
        else if (key_is(k, "In msg nelems")) arg_coll_int(&raw_.coll.in_nelems, vd);
        else if (key_is(k, "In split size")) arg_coll_text(&raw_.coll.in_split, vd);
        else r_.skip_value(vd);
        break;
      case 14:
        if (key_is(k, "cuda_sync_kind")) arg_string(&raw_.sync_kind, &raw_.has_sync_kind, vd);
        else if (key_is(k, "Total Reserved")) arg_int(&raw_.total_reserved, vd);
        else if (key_is(k, "Out msg nelems")) arg_coll_int(&raw_.coll.out_nelems, vd);
        else if (key_is(k, "Out split size")) arg_coll_text(&raw_.coll.out_split, vd);
        else r_.skip_value(vd);
        break;
      case 15:
        if (key_is(k, "Total Allocated")) arg_int(&raw_.total_allocated, vd);
        else if (key_is(k, "Collective name")) {
          raw_.collective = true;
          arg_coll_text(&raw_.coll.name, vd);
        } else if (key_is(k, "Concrete Inputs")) arg_inputs(&raw_.concrete_inputs, &raw_.has_concrete_inputs, false, vd, 2);
        else r_.skip_value(vd);
        break;
      case 16:
        if (key_is(k, "Process Group ID")) arg_coll_text(&raw_.coll.pg_name, vd);
        else r_.skip_value(vd);
        break;
      case 18:
        if (key_is(k, "Process Group Name")) arg_coll_text(&raw_.coll.pg_name, vd);
        else r_.skip_value(vd);
        break;
      case 19:
        if (key_is(k, "Process Group Ranks")) arg_coll_text(&raw_.coll.pg_ranks, vd);
        else r_.skip_value(vd);
        break;
      case 20:
        if (key_is(k, "registers per thread")) arg_int(&raw_.regs, vd);
        else r_.skip_value(vd);
        break;
      case 25:
        if (key_is(k, "est. achieved occupancy %")) arg_double(&raw_.occupancy, vd);
        else if (key_is(k, "Process Group Description")) arg_coll_text(&raw_.coll.pg_desc, vd);
        else r_.skip_value(vd);
        break;
      default:
        r_.skip_value(vd);
    }
  } while (r_.next_or_close('}'));
}

void KinetoParser::parse_event(int hd) {
  raw_ = RawEvent{};
  if (r_.peek() != '{') {
    r_.skip_value(hd);
    raw_.malformed = true;
    raw_.not_object = true;
    return;
  }
  check_depth(hd + 1);
  r_.expect('{');
  if (r_.try_close('}')) {
    raw_.malformed = true;
    return;
  }
  const int vd = hd + 1;
  do {
    const std::string_view k = r_.read_string();
    r_.expect(':');
    switch (k.size()) {
      case 2:
        if (key_is(k, "ph")) field_string(&raw_.ph, &raw_.has_ph, vd);
        else if (key_is(k, "ts")) field_number(&raw_.ts, &raw_.has_ts, vd);
        else r_.skip_value(vd);
        break;
      case 3:
        if (key_is(k, "cat")) field_string(&raw_.cat, &raw_.has_cat, vd);
        else if (key_is(k, "pid")) field_id(&raw_.pid, vd);
        else if (key_is(k, "tid")) field_id(&raw_.tid, vd);
        else if (key_is(k, "dur")) field_number(&raw_.dur, &raw_.has_dur, vd);
        else r_.skip_value(vd);
        break;
      case 4:
        if (key_is(k, "name")) field_string(&raw_.name, &raw_.has_name, vd);
        else if (key_is(k, "args")) parse_args(vd);
        else r_.skip_value(vd);
        break;
      default:
        r_.skip_value(vd);
    }
  } while (r_.next_or_close('}'));
}

bool KinetoParser::parse_event_array(int holding_depth) {
  // At '[' (already checked). `holding_depth` is the depth of the container holding the array.
  bool empty = false;
  r_.element([&] {
    check_depth(holding_depth + 1);
    r_.expect('[');
    empty = r_.try_close(']');
  });
  const bool first = !saw_events_;  // false in a part: it starts in parse_tail, which marks the events seen
  saw_events_ = true;
  if (empty) return true;
  events_hd_ = holding_depth + 1;
  top_object_ = holding_depth == 1;
  if (first) start_parts();  // the first part cuts the stream, once
  return parse_elements();
}

// From the start of an element to the array's ']', or to the start of the next part (returns false).
bool KinetoParser::parse_elements() {
  const int hd = events_hd_;
  bool more = true;
  while (more) {
    if (self_ != nullptr && self_->cancel.load(std::memory_order_relaxed)) throw Cancelled{};
    if (next_ != nullptr && at_boundary()) {
      stopped_ = true;
      return false;
    }
    r_.element([&] {
      parse_event(hd);
      more = r_.next_or_close(']');
    });
    commit_event();
  }
  return true;
}

}  // namespace profile_train::trace::kineto
