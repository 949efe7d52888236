#include "client/data/drift_stream.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "core/rng.h"

namespace f2obo::data {
namespace {

double Uniform01(Rng& rng) { return (rng.Next() >> 11) * 0x1.0p-53; }

}  // namespace

DriftingStream::DriftingStream(const Dataset& dataset, DriftOptions options)
    : data_(dataset), o_(std::move(options)) {}

double DriftingStream::KeepProbability(int64_t t, int label) const {
  if (o_.imbalance_rhos.empty()) return 1.0;
  const int64_t phase = std::min<int64_t>((t - 1) / std::max<int64_t>(1, o_.phase_steps),
                                          o_.imbalance_rhos.size() - 1);
  return std::pow(o_.imbalance_rhos[phase], label);
}

double DriftingStream::NoiseProbability(int64_t t) const {
  double p = 0.0;
  for (const auto& [step, prob] : o_.label_noise)
    if (t >= step) p = prob;
  return p;
}

absl::StatusOr<StepData> DriftingStream::Make(int64_t t) const {
  // A generator per step: seed and t fully determine the step's data.
  Rng rng(o_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(t));
  return Draw(rng, t, 0, 1, data_.rows());
}

absl::StatusOr<StepData> DriftingStream::MakeForTask(int64_t t, int task, int tasks) const {
  // A generator per (step, task): resuming or retrying regenerates it.
  Rng rng((o_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(t)) ^
          ((static_cast<uint64_t>(task) + 1) * 0xbf58476d1ce4e5b9ULL));
  const int pool = (data_.rows() - task + tasks - 1) / tasks;  // rows task, task + m, ...
  return Draw(rng, t, task, tasks, pool);
}

absl::StatusOr<StepData> DriftingStream::MakeTasks(int64_t t, int tasks, int per_step) const {
  Rng rng((o_.seed * 0x9e3779b97f4a7c15ULL + static_cast<uint64_t>(t)) ^ 0x94d049bb133111ebULL);
  std::vector<int> chosen;
  while (static_cast<int>(chosen.size()) < per_step) {
    const int i = static_cast<int>(rng.UniformBelow(tasks));
    if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) chosen.push_back(i);
  }
  StepData s;
  for (int i : chosen) {
    absl::StatusOr<StepData> data = MakeForTask(t, i, tasks);
    if (!data.ok()) return data.status();
    TaskData task;
    task.task = i;
    task.data = *std::move(data);
    s.tasks.push_back(std::move(task));
  }
  return s;
}

absl::Status DriftingStream::TooFewKept(int64_t t, int kept, int64_t draws, int first, int stride,
                                        int pool) const {
  double mean = 0.0;
  for (int k = 0; k < pool; ++k) mean += KeepProbability(t, data_.labels[first + stride * k]);
  mean /= std::max(1, pool);
  const int64_t phase = std::min<int64_t>((t - 1) / std::max<int64_t>(1, o_.phase_steps),
                                          o_.imbalance_rhos.size() - 1);
  return absl::FailedPreconditionError(absl::StrFormat(
      "step %d: the class-imbalance sampler kept %d of %d rows in %d draws: with rho = %g "
      "(class i kept w.p. rho^i) and %d classes a row is kept w.p. %.3g on average; if the "
      "last column is a regression target, use a regression family, else pass --imbalance='' "
      "(balanced) or rhos closer to 1",
      t, kept, o_.rows_per_step, draws, o_.imbalance_rhos[phase], data_.classes, mean));
}

absl::StatusOr<StepData> DriftingStream::Draw(Rng& rng, int64_t t, int first, int stride,
                                              int pool) const {
  const bool labelled = !data_.labels.empty();
  std::vector<int> rows;
  rows.reserve(o_.rows_per_step);
  const int64_t max_draws = kMaxDrawsPerRow * o_.rows_per_step;
  int64_t draws = 0;
  while (static_cast<int>(rows.size()) < o_.rows_per_step) {
    if (++draws > max_draws) {
      return TooFewKept(t, static_cast<int>(rows.size()), max_draws, first, stride, pool);
    }
    const int i = first + stride * static_cast<int>(rng.UniformBelow(pool));
    if (!labelled || Uniform01(rng) < KeepProbability(t, data_.labels[i])) rows.push_back(i);
  }
  const int n_up = std::clamp(static_cast<int>(std::lround(o_.upper_fraction * rows.size())), 1,
                              static_cast<int>(rows.size()) - 1);
  const std::vector<int> up(rows.begin(), rows.begin() + n_up);
  const std::vector<int> in(rows.begin() + n_up, rows.end());
  auto labels_of = [&](const std::vector<int>& r, bool noisy) {
    std::vector<int32_t> l;
    if (!labelled) return l;
    const double p = noisy ? NoiseProbability(t) : 0.0;
    for (int i : r) {
      int32_t label = data_.labels[i];
      if (p > 0.0 && Uniform01(rng) < p) {
        label = static_cast<int32_t>(rng.UniformBelow(data_.classes));
      }
      l.push_back(label);
    }
    return l;
  };
  StepData s;
  const std::vector<int32_t> up_labels = labels_of(up, o_.noise_in_upper);
  const std::vector<int32_t> in_labels = labels_of(in, true);
  s.upper = TakeRows(up, up_labels);
  s.inner = TakeRows(in, in_labels);
  return s;
}

Batch DriftingStream::TakeRows(const std::vector<int>& rows,
                               const std::vector<int32_t>& labels) const {
  Batch b;
  b.labels = labels;
  b.targets.resize(static_cast<Eigen::Index>(rows.size()));
  for (size_t k = 0; k < rows.size(); ++k) b.targets[k] = data_.targets[rows[k]];
  b.sparse_features = data_.sparse;
  if (!data_.sparse) {
    b.dense.resize(static_cast<Eigen::Index>(rows.size()), data_.dense.cols());
    for (size_t k = 0; k < rows.size(); ++k) b.dense.row(k) = data_.dense.row(rows[k]);
    return b;
  }
  b.csr.resize(static_cast<Eigen::Index>(rows.size()), data_.csr.cols());
  Eigen::Index nnz = 0;
  for (int r : rows) nnz += data_.csr.outerIndexPtr()[r + 1] - data_.csr.outerIndexPtr()[r];
  b.csr.resizeNonZeros(nnz);
  int at = 0;
  for (size_t k = 0; k < rows.size(); ++k) {
    b.csr.outerIndexPtr()[k] = at;
    for (int p = data_.csr.outerIndexPtr()[rows[k]]; p < data_.csr.outerIndexPtr()[rows[k] + 1];
         ++p, ++at) {
      b.csr.innerIndexPtr()[at] = data_.csr.innerIndexPtr()[p];
      b.csr.valuePtr()[at] = data_.csr.valuePtr()[p];
    }
  }
  b.csr.outerIndexPtr()[rows.size()] = at;
  return b;
}

absl::StatusOr<std::vector<double>> ParseRhos(const std::string& text) {
  std::vector<double> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    double v;
    if (!absl::SimpleAtod(part, &v) || !(v > 0.0 && v <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("imbalance: '", part, "' is not a rho in (0, 1]"));
    }
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<std::vector<std::pair<int64_t, double>>> ParseNoise(const std::string& text) {
  std::vector<std::pair<int64_t, double>> out;
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    const std::vector<absl::string_view> kv = absl::StrSplit(part, ':');
    int64_t step;
    double p;
    if (kv.size() != 2 || !absl::SimpleAtoi(kv[0], &step) || !absl::SimpleAtod(kv[1], &p) ||
        step < 1 || !(p >= 0.0 && p <= 1.0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("label noise: '", part, "' is not step:probability"));
    }
    out.emplace_back(step, p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace f2obo::data
