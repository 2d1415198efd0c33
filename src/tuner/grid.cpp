// The grid strategy: every combination of the space, for comparison with the guided search.
#include "strategy_util.h"

namespace profile_train::tuner::detail {
namespace {

class GridStrategy : public Strategy {
 public:
  void search(Tuner& t) override {
    const KnobSpace& space = t.space();
    std::vector<size_t> pos(space.size(), 0);
    bool first = true;
    while (true) {
      Config c;
      for (size_t k = 0; k < space.size(); ++k) c[space[k].def->name] = space[k].values[pos[k]];
      if (t.known_to_oom(c)) {
        t.note("grid: skip " + describe_config(c, space) + " (a smaller batch ran out of memory)");
      } else {
        const int i = t.evaluate(c, first ? "baseline (grid)" : "grid", first ? t.options().baseline_repeats : 0);
        if (i < 0) return;  // budget spent / interrupted
        if (t.baseline() < 0 && t.trial(i).ok()) t.set_baseline(i);
        if (t.trial(i).ok() && (t.best() < 0 || t.trial(i).mean > t.trial(t.best()).mean)) t.set_best(i);
      }
      first = false;
      // Mixed-radix increment, the last knob fastest.
      size_t k = space.size();
      while (k > 0) {
        --k;
        if (++pos[k] < space[k].values.size()) break;
        pos[k] = 0;
        if (k == 0) return;
      }
      if (space.empty()) return;
    }
  }
};

}  // namespace

std::unique_ptr<Strategy> make_grid_strategy() { return std::make_unique<GridStrategy>(); }

}  // namespace profile_train::tuner::detail
