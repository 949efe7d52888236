#include "core/multitask/task_table.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace f2obo {

void TaskTable::Init(SessionState* s, std::vector<Vector> globals) const {
  s->aux.clear();
  s->aux.reserve(1 + globals.size());
  s->aux.emplace_back(0);
  for (Vector& g : globals) s->aux.push_back(std::move(g));
}

int TaskTable::Find(const SessionState& s, int task) const {
  const Vector& index = s.aux[0];
  const double* begin = index.data();
  const double* end = begin + index.size();
  const double* it = std::lower_bound(begin, end, static_cast<double>(task));
  if (it == end || *it != static_cast<double>(task)) return -1;
  return static_cast<int>(it - begin);
}

int TaskTable::Insert(SessionState* s, int task, const std::vector<Vector>& block) const {
  Vector& index = s->aux[0];
  const int n = static_cast<int>(index.size());
  const double* begin = index.data();
  const int slot =
      static_cast<int>(std::lower_bound(begin, begin + n, static_cast<double>(task)) - begin);
  Vector grown(n + 1);
  grown.head(slot) = index.head(slot);
  grown[slot] = task;
  grown.tail(n - slot) = index.tail(n - slot);
  index.swap(grown);
  s->aux.insert(s->aux.begin() + static_cast<std::ptrdiff_t>(Index(slot, 0)), block.begin(),
                block.end());
  return slot;
}

absl::Status TaskTable::Validate(const SessionState& s, int tasks) const {
  const size_t fixed = 1 + globals_.size();
  if (s.aux.size() < fixed || (s.aux.size() - fixed) % block_.size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state.aux: ", s.aux.size(), " vectors; a multi-task state of this algorithm holds 1 + ",
        globals_.size(), " + ", block_.size(),
        " per touched task (a state written by another algorithm?)"));
  }
  const Vector& index = s.aux[0];
  const size_t touched = (s.aux.size() - fixed) / block_.size();
  if (static_cast<size_t>(index.size()) != touched) {
    return absl::InvalidArgumentError(absl::StrCat("state.aux[0]: lists ", index.size(),
                                                   " touched tasks, the state holds ", touched));
  }
  for (Eigen::Index k = 0; k < index.size(); ++k) {
    const double v = index[k];
    if (!(v >= 0 && v < tasks && v == std::floor(v)) || (k > 0 && !(v > index[k - 1]))) {
      return absl::InvalidArgumentError(
          absl::StrCat("state.aux[0][", k, "]: ", v, " is not a task index in [0, ", tasks,
                       ") above the one before it (touched tasks are listed in increasing order)"));
    }
  }
  for (size_t g = 0; g < globals_.size(); ++g) {
    if (s.aux[1 + g].size() != globals_[g]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "state.aux[", 1 + g, "]: has ", s.aux[1 + g].size(), " entries, expected ", globals_[g]));
    }
  }
  for (size_t i = fixed; i < s.aux.size(); ++i) {
    const int expected = block_[(i - fixed) % block_.size()];
    if (s.aux[i].size() != expected) {
      return absl::InvalidArgumentError(absl::StrCat("state.aux[", i, "]: has ", s.aux[i].size(),
                                                     " entries, expected ", expected));
    }
  }
  return absl::OkStatus();
}

}  // namespace f2obo
