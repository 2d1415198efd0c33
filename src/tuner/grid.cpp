// The grid strategy: every combination of the space, for comparison with the guided search.
#include "strategy_util.h"

namespace profile_train::tuner::detail {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)
namespace {

class GridStrategy : public Strategy {
 public:
  void search(Tuner& t) override {
    const int b =
        t.evaluate_batch({{baseline_config(t.space()), "baseline (grid)", t.options().baseline_repeats}}).front();
    if (b < 0) return;
    if (t.trial(b).ok()) {
      t.set_baseline(b);  // drops the values that cannot act on this machine
      t.set_best(b);
    }
    const KnobSpace space = t.space();  // a copy: a later baseline must not change what is enumerated
    std::vector<size_t> pos(space.size(), 0);
    while (!space.empty()) {
      Config c;
      for (size_t k = 0; k < space.size(); ++k) c[space[k].def->name] = space[k].values[pos[k]];
      if (t.known_to_oom(c)) {
        t.note("grid: skip " + describe_config(c, space) + " (a smaller batch ran out of memory)");
      } else {
        // Each run right after a run of the baseline (ABAB); the ranking is by the paired ratio to it. A
        // parallel runner measures the next grid points (and their baseline runs) together first.
        if (t.parallelism() > 1 && t.find(c) < 0) t.evaluate_batch(grid_lookahead(t, pos, false));
        const int i = t.evaluate(c, "grid", 0, t.baseline());
        if (i < 0) return;  // budget spent / interrupted
        if (t.baseline() < 0 && t.trial(i).ok()) t.set_baseline(i);
        if (t.trial(i).ok() && (t.best() < 0 || rank(t, i) > rank(t, t.best()))) {
          if (t.quality_blocks(i)) {
            t.note("grid: trial #" + std::to_string(t.trial(i).index) + " ranks first but changes the loss (" +
                   t.trial(i).loss.status + "); not the best (--allow-quality-change allows it)");
          } else {
            t.set_best(i);
          }
        }
      }
      // Mixed-radix increment, the last knob fastest.
      size_t k = space.size();
      while (k > 0) {
        --k;
        if (++pos[k] < space[k].values.size()) break;
        pos[k] = 0;
        if (k == 0) return;
      }
    }
  }

 private:
  static double rank(const Tuner& t, int i) { return t.baseline() >= 0 ? t.ratio(i, t.baseline()) : t.trial(i).mean; }
};

}  // namespace

std::unique_ptr<Strategy> make_grid_strategy() { return std::make_unique<GridStrategy>(); }

}  // namespace profile_train::tuner::detail
