// `evaluate`: scores a session's current decision on held-out data with the
// family's own code (core/bilevel/families), so the numbers mean exactly what the
// server's f and accuracy mean.
//
// For the session (or every member of --group) it fetches the filled-in
// spec (GetSession) and the decision (x_t, y_t) (GetDecision), builds the
// family, and evaluates on each dataset:
//   loss              mean cross-entropy of the plain logits W^T a + b
//                     (logistic_hpo: f on the dataset; loss_tuning: f with
//                     unit class weights, so no re-weighting, no logit
//                     adjustment);
//   accuracy          BilevelFamily::Accuracy on all rows;
//   balanced_accuracy mean over the classes present of BilevelFamily::Accuracy on
//                     that class's rows (mean per-class recall).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/cli.h"
#include "client/data/dataset.h"
#include "core/bilevel/bilevel_family_registry.h"
#include "core/problem_class.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"

namespace f2obo::cli {
namespace {

// The first `n` rows of a labelled dataset as a batch.
Batch TakeFirst(const data::Dataset& ds, int n) {
  Batch b;
  b.sparse_features = ds.sparse;
  if (ds.sparse) {
    b.csr = ds.csr.topRows(n);
  } else {
    b.dense = ds.dense.topRows(n);
  }
  b.labels.assign(ds.labels.begin(), ds.labels.begin() + n);
  b.targets = ds.targets.head(n);
  return b;
}

struct Scores {
  double loss = 0, accuracy = 0, balanced_accuracy = 0;
};

absl::StatusOr<Scores> Score(BilevelFamily& family, const VecIn& x, const VecIn& y, StepData& data,
                             int classes) {
  Batch& b = data.upper;
  if (family.name() == "loss_tuning") b.class_weights = Vector::Ones(classes);
  if (absl::Status s = family.ValidateBatch(b, BatchRole::kUpper); !s.ok()) return s;
  family.Prepare(data);
  Scores out;
  const BatchView all = BatchView::All(b);
  out.loss = family.F(x, y, all, nullptr, nullptr);
  const std::optional<double> acc = family.Accuracy(x, y, all);
  if (!acc) return absl::InvalidArgumentError("the family has no accuracy");
  out.accuracy = *acc;
  std::vector<std::vector<int>> by_class(classes);
  for (int i = 0; i < b.rows(); ++i) by_class[b.labels[i]].push_back(i);
  int present = 0;
  for (const std::vector<int>& rows : by_class) {
    if (rows.empty()) continue;
    ++present;
    const BatchView view{&b, RowSet{rows.data(), static_cast<int>(rows.size())}};
    out.balanced_accuracy += family.Accuracy(x, y, view).value_or(0.0);
  }
  out.balanced_accuracy /= std::max(1, present);
  return out;
}

struct EvalSet {
  std::string name;
  StepData data;  // the rows in `upper` (the families read upper batches)
};

absl::StatusOr<EvalSet> Load(const std::string& name, const std::string& spec, int rows) {
  absl::StatusOr<data::Dataset> ds = data::ReadDataset(spec);
  if (!ds.ok()) return ds.status();
  if (ds->labels.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("'", spec, "' has no class labels"));
  }
  const int n = rows > 0 ? std::min(rows, ds->rows()) : ds->rows();
  EvalSet set;
  set.name = name;
  set.data.upper = TakeFirst(*ds, n);
  return set;
}

}  // namespace

int RunEvaluate() {
  const std::string session = absl::GetFlag(FLAGS_session);
  const std::string group = absl::GetFlag(FLAGS_group);
  if (session.empty() == group.empty()) return UsageError("give --session or --group");
  const int rows = absl::GetFlag(FLAGS_eval_rows);
  if (rows < 0) return UsageError("--eval_rows: must be >= 0");

  std::vector<EvalSet> sets;
  {
    absl::StatusOr<EvalSet> test = Load("test", absl::GetFlag(FLAGS_test_data), rows);
    if (!test.ok()) return UsageError(absl::StrCat("--test_data: ", test.status().message()));
    sets.push_back(*std::move(test));
  }
  if (const std::string train = absl::GetFlag(FLAGS_train_data); !train.empty()) {
    absl::StatusOr<EvalSet> set = Load("train", train, rows);
    if (!set.ok()) return UsageError(absl::StrCat("--train_data: ", set.status().message()));
    sets.push_back(*std::move(set));
  }

  client::Client c(ClientOptionsFromFlags());
  std::vector<v1::SessionInfo> sessions;
  if (!group.empty()) {
    absl::StatusOr<v1::GroupInfo> info = c.GetGroup(group);
    if (!info.ok()) return RpcError("evaluate", info.status());
    sessions.assign(info->members().begin(), info->members().end());
  } else {
    absl::StatusOr<v1::SessionInfo> info = c.GetSession(session);
    if (!info.ok()) return RpcError("evaluate", info.status());
    sessions.push_back(*std::move(info));
  }

  std::vector<std::string> header = {"session", "algorithm", "t"};
  for (const EvalSet& s : sets) {
    for (const char* m : {"loss", "accuracy", "balanced_accuracy"}) {
      header.push_back(absl::StrCat(s.name, "_", m));
    }
  }
  std::vector<std::vector<std::string>> table = {header};
  for (const v1::SessionInfo& info : sessions) {
    absl::StatusOr<SessionConfig> config = ToSessionConfig(info.spec(), UnreadOptions::kDrop);
    if (!config.ok()) return RpcError("evaluate: session spec", config.status());
    if (config->problem_class != ProblemClass::kBilevel) {
      return UsageError(absl::StrCat(
          "evaluate: session '", info.session_id(), "' is a ",
          ProblemClassName(config->problem_class), " session (family ", config->family.name,
          "); evaluate scores bilevel classification sessions (logistic_hpo, loss_tuning) on "
          "held-out data; see `f2obo-cli metrics` and `decision` for this one"));
    }
    absl::StatusOr<std::unique_ptr<BilevelFamily>> family = CreateBilevelFamily(config->family);
    if (!family.ok()) return RpcError("evaluate: family", family.status());
    if (!(*family)->is_classification()) {
      return UsageError(absl::StrCat("evaluate: family '", std::string((*family)->name()),
                                     "' is not a classification family"));
    }
    absl::StatusOr<v1::Decision> d = c.GetDecision(info.session_id());
    if (!d.ok()) return RpcError("evaluate", d.status());
    const Vector x = Eigen::Map<const Vector>(d->x().data(), d->x_size());
    const Vector y = Eigen::Map<const Vector>(d->y().data(), d->y_size());
    std::vector<std::string> row = {info.session_id(), info.spec().algorithm(),
                                    absl::StrCat(d->t())};
    for (EvalSet& s : sets) {
      absl::StatusOr<Scores> scores = Score(**family, x, y, s.data, config->family.classes);
      if (!scores.ok()) {
        return UsageError(absl::StrCat("evaluate ", s.name, " set: ", scores.status().message()));
      }
      for (double v : {scores->loss, scores->accuracy, scores->balanced_accuracy}) {
        row.push_back(Exact(v));
      }
    }
    table.push_back(row);
  }

  const std::string path = absl::GetFlag(FLAGS_out);
  if (path.empty()) {
    PrintTable(table);
    return kExitOk;
  }
  FILE* out = std::fopen(path.c_str(), "w");
  if (out == nullptr) return UsageError(absl::StrCat("--out: cannot write '", path, "'"));
  for (const auto& row : table) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) absl::StrAppend(&line, i > 0 ? "," : "", row[i]);
    std::fprintf(out, "%s\n", line.c_str());
  }
  if (std::fclose(out) != 0) return UsageError(absl::StrCat("--out: error writing '", path, "'"));
  std::printf("wrote %zu rows to %s\n", table.size() - 1, path.c_str());
  return kExitOk;
}

}  // namespace f2obo::cli
