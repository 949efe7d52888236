#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/multitask/mt_f2obo.h"
#include "core/multitask/multitask_algorithm.h"
#include "core/multitask/rsvrb.h"

namespace f2obo {

const std::vector<const MultitaskAlgorithmEntry*>& MultitaskAlgorithms() {
  static const auto* entries =
      new std::vector<const MultitaskAlgorithmEntry*>{&RsvrbAlgorithm(), &MtF2oboAlgorithm()};
  return *entries;
}

const MultitaskAlgorithmEntry* FindMultitaskAlgorithm(absl::string_view name) {
  for (const MultitaskAlgorithmEntry* e : MultitaskAlgorithms()) {
    if (name == e->info.name) return e;
  }
  return nullptr;
}

double TaskProbability(const TaskData& task, int tasks_in_step, int m) {
  if (task.probability > 0.0) return task.probability;
  return static_cast<double>(tasks_in_step) / static_cast<double>(m);
}

absl::Status CheckLastUpdateSteps(const SessionState& s, const TaskTable& table, int b) {
  for (int slot = 0; slot < table.touched(s); ++slot) {
    const double last = table.Var(s, slot, b)[0];
    if (!(last >= 1 && last <= static_cast<double>(s.t - 1) && last == std::floor(last))) {
      return absl::InvalidArgumentError(absl::StrCat(
          table.Where(slot, b, 0), ": ", last, " is not the step of task ", table.task_at(s, slot),
          "'s last update, a whole number in [1, t - 1 = ", s.t - 1, "]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace f2obo
