#include "core/multitask/task_table.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"

namespace f2obo {
namespace {

// aux[0] of this layout ({kMark, touched}) and of the one with a part per
// vector ({kPartPerVectorMark, touched}).
constexpr double kMark = -2.0;
constexpr double kPartPerVectorMark = -1.0;

bool Marked(const SessionState& s, double mark) {
  return !s.aux.empty() && s.aux[0].size() == 2 && s.aux[0][0] == mark;
}

}  // namespace

TaskTable::TaskTable(std::vector<int> globals, std::vector<int> block, int tasks)
    : globals_(std::move(globals)),
      block_(std::move(block)),
      offset_(block_.size() + 1, 0),
      tasks_(tasks),
      pages_((tasks + kPageTasks - 1) / kPageTasks) {
  for (size_t b = 0; b < block_.size(); ++b) offset_[b + 1] = offset_[b] + block_[b];
}

void TaskTable::Init(SessionState* s, std::vector<Vector> globals) const {
  s->aux.clear();
  s->aux.push_back((Vector(2) << kMark, 0.0).finished());
  for (Vector& g : globals) s->aux.push_back(std::move(g));
  s->aux.resize(1 + globals_.size() + pages_);  // empty pages: no allocation
}

int TaskTable::task_at(const SessionState& s, int slot) const {
  for (size_t p = 0; p < pages_; ++p) {
    const Vector& page = s.aux[PageIndex(static_cast<int>(p))];
    for (Eigen::Index i = 0; i < page.size(); ++i) {
      if (page[i] == slot + 1) return static_cast<int>(p * kPageTasks + i);
    }
  }
  return -1;
}

int TaskTable::Insert(SessionState* s, int task, const std::vector<Vector>& block) const {
  const int slot = touched(*s);
  Vector& page = s->aux[PageIndex(task / kPageTasks)];
  if (page.size() == 0) page = Vector::Zero(kPageTasks);
  page[task % kPageTasks] = slot + 1;
  s->aux[0][1] = slot + 1;
  Vector joined(block_entries());
  for (size_t b = 0; b < block_.size(); ++b) joined.segment(offset_[b], block_[b]) = block[b];
  s->aux.push_back(std::move(joined));
  return slot;
}

void TaskTable::Load(const SessionState& s, int slot, std::vector<Vector>* block) const {
  const Vector& joined = s.aux[Index(slot)];
  block->resize(block_.size());
  for (size_t b = 0; b < block_.size(); ++b) (*block)[b] = joined.segment(offset_[b], block_[b]);
}

void TaskTable::Store(SessionState* s, int slot, const std::vector<Vector>& block) const {
  Vector& joined = s->aux[Index(slot)];
  for (size_t b = 0; b < block_.size(); ++b) joined.segment(offset_[b], block_[b]) = block[b];
}

std::string TaskTable::Where(int slot, int b, int entry) const {
  return absl::StrCat("state.aux[", Index(slot), "][", offset_[b] + entry, "]");
}

absl::Status TaskTable::Validate(const SessionState& s) const {
  return ValidateLayout(s, kMark, {block_entries()});
}

absl::Status TaskTable::ValidateLayout(const SessionState& s, double mark,
                                       const std::vector<int>& per_slot) const {
  const size_t fixed = 1 + globals_.size() + pages_;
  if (s.aux.size() < fixed || (s.aux.size() - fixed) % per_slot.size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state.aux: ", s.aux.size(), " vectors; a multi-task state of this algorithm and ", tasks_,
        " tasks holds 1 + ", globals_.size(), " + ", pages_, " index pages + ", per_slot.size(),
        " per touched task (a state written by another algorithm?)"));
  }
  const Vector& head = s.aux[0];
  const size_t touched = (s.aux.size() - fixed) / per_slot.size();
  if (head.size() != 2 || head[0] != mark || head[1] != static_cast<double>(touched)) {
    return absl::InvalidArgumentError(absl::StrCat("state.aux[0]: expected {", mark, ", ", touched,
                                                   "} (the layout's mark and the ", touched,
                                                   " touched tasks the state holds)"));
  }
  for (size_t g = 0; g < globals_.size(); ++g) {
    if (s.aux[1 + g].size() != globals_[g]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "state.aux[", 1 + g, "]: has ", s.aux[1 + g].size(), " entries, expected ", globals_[g]));
    }
  }
  // Every slot named by exactly one task of [0, m).
  std::vector<bool> named(touched, false);
  size_t names = 0;
  for (size_t p = 0; p < pages_; ++p) {
    const size_t at = PageIndex(static_cast<int>(p));
    const Vector& page = s.aux[at];
    if (page.size() == 0) continue;
    if (page.size() != kPageTasks) {
      return absl::InvalidArgumentError(absl::StrCat("state.aux[", at, "]: an index page has ",
                                                     page.size(), " entries, expected 0 or ",
                                                     kPageTasks));
    }
    for (int i = 0; i < kPageTasks; ++i) {
      const double v = page[i];
      if (v == 0.0) continue;
      const size_t task = p * kPageTasks + i;
      if (!(v >= 1 && v <= static_cast<double>(touched) && v == std::floor(v)) ||
          task >= static_cast<size_t>(tasks_) || named[static_cast<size_t>(v) - 1]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "state.aux[", at, "][", i, "]: ", v, " is not 0 or 1 + the slot of task ", task,
            " (a slot in [0, ", touched, ") named once, for a task below ", tasks_, ")"));
      }
      named[static_cast<size_t>(v) - 1] = true;
      ++names;
    }
  }
  if (names != touched) {
    return absl::InvalidArgumentError(absl::StrCat("state.aux: the index pages name ", names,
                                                   " touched tasks, the state holds ", touched));
  }
  for (size_t i = fixed; i < s.aux.size(); ++i) {
    const int expected = per_slot[(i - fixed) % per_slot.size()];
    if (s.aux[i].size() != expected) {
      return absl::InvalidArgumentError(absl::StrCat("state.aux[", i, "]: has ", s.aux[i].size(),
                                                     " entries, expected ", expected));
    }
  }
  return absl::OkStatus();
}

Vector TaskTable::Joined(const StateParts& parts, size_t first) const {
  Vector joined(block_entries());
  for (size_t b = 0; b < block_.size(); ++b) {
    joined.segment(offset_[b], block_[b]) = parts[first + b];
  }
  return joined;
}

bool TaskTable::IsLegacy(const SessionState& s) {
  return !s.aux.empty() && !Marked(s, kMark) && !Marked(s, kPartPerVectorMark);
}

bool TaskTable::IsPartPerVector(const SessionState& s) { return Marked(s, kPartPerVectorMark); }

absl::Status TaskTable::MigratePartPerVector(SessionState* s) const {
  if (absl::Status st = ValidateLayout(*s, kPartPerVectorMark, block_); !st.ok()) return st;
  const StateParts& old = s->aux;
  const size_t fixed = 1 + globals_.size() + pages_;
  const size_t touched = (old.size() - fixed) / block_.size();
  StateParts aux;
  aux.push_back((Vector(2) << kMark, static_cast<double>(touched)).finished());
  for (size_t i = 1; i < fixed; ++i) aux.push_back(old[i]);
  for (size_t k = 0; k < touched; ++k) aux.push_back(Joined(old, fixed + k * block_.size()));
  s->aux = std::move(aux);
  return absl::OkStatus();
}

absl::Status TaskTable::MigrateLegacy(SessionState* s) const {
  // Legacy: aux[0] the touched tasks in increasing order, then the
  // globals, then each touched task's block in that order.
  const size_t fixed = 1 + globals_.size();
  if (s->aux.size() < fixed || (s->aux.size() - fixed) % block_.size() != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "state.aux: ", s->aux.size(), " vectors; a multi-task state of this algorithm holds 1 + ",
        globals_.size(), " + ", block_.size(),
        " per touched task (a state written by another algorithm?)"));
  }
  const Vector index = s->aux[0];
  const size_t touched = (s->aux.size() - fixed) / block_.size();
  if (static_cast<size_t>(index.size()) != touched) {
    return absl::InvalidArgumentError(absl::StrCat("state.aux[0]: lists ", index.size(),
                                                   " touched tasks, the state holds ", touched));
  }
  for (Eigen::Index k = 0; k < index.size(); ++k) {
    const double v = index[k];
    if (!(v >= 0 && v < tasks_ && v == std::floor(v)) || (k > 0 && !(v > index[k - 1]))) {
      return absl::InvalidArgumentError(
          absl::StrCat("state.aux[0][", k, "]: ", v, " is not a task index in [0, ", tasks_,
                       ") above the one before it (touched tasks are listed in increasing order)"));
    }
  }
  for (size_t i = fixed; i < s->aux.size(); ++i) {
    const int expected = block_[(i - fixed) % block_.size()];
    if (s->aux[i].size() != expected) {
      return absl::InvalidArgumentError(absl::StrCat("state.aux[", i, "]: has ", s->aux[i].size(),
                                                     " entries, expected ", expected));
    }
  }
  const StateParts& old = s->aux;
  StateParts aux;
  aux.push_back((Vector(2) << kMark, static_cast<double>(touched)).finished());
  for (size_t g = 0; g < globals_.size(); ++g) aux.push_back(old[1 + g]);
  aux.resize(1 + globals_.size() + pages_);
  for (Eigen::Index k = 0; k < index.size(); ++k) {
    const int task = static_cast<int>(index[k]);
    Vector& page = aux[PageIndex(task / kPageTasks)];
    if (page.size() == 0) page = Vector::Zero(kPageTasks);
    page[task % kPageTasks] = static_cast<double>(k + 1);
  }
  for (size_t k = 0; k < touched; ++k) aux.push_back(Joined(old, fixed + k * block_.size()));
  s->aux = std::move(aux);
  return absl::OkStatus();
}

}  // namespace f2obo
