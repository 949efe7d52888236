#include "f2obo/v1/convert.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/problem_registry.h"
#include "f2obo/v1/class_wire.h"
#include "f2obo/v1/options_convert.h"

namespace f2obo {
namespace {

template <typename T>
void SetIf(bool has, T value, T* field) {
  if (has) *field = value;
}

// A spec without a constraint gets its family's default (one home:
// core/problem_registry.h), whichever client sent it.
absl::StatusOr<ConstraintSet> ToConstraint(const v1::ConstraintSpec& c, absl::string_view family) {
  ConstraintSet s;
  switch (c.kind_case()) {
    case v1::ConstraintSpec::KIND_NOT_SET:
      return DefaultConstraint(family);
    case v1::ConstraintSpec::kUnconstrained:
      return s;
    case v1::ConstraintSpec::kBox:
      s.kind = ConstraintSet::Kind::kBox;
      s.lo = ToVector(c.box().lo());
      s.hi = ToVector(c.box().hi());
      return s;
    case v1::ConstraintSpec::kBall:
      s.kind = ConstraintSet::Kind::kBall;
      s.radius = c.ball().radius();
      s.center = ToVector(c.ball().center());
      return s;
    case v1::ConstraintSpec::kL1Ball:
      s.kind = ConstraintSet::Kind::kL1Ball;
      s.radius = c.l1_ball().radius();
      s.center = ToVector(c.l1_ball().center());
      return s;
    case v1::ConstraintSpec::kSimplex:
      s.kind = ConstraintSet::Kind::kSimplex;
      s.radius = c.simplex().has_total() ? c.simplex().total() : 1.0;
      return s;
  }
  return absl::InvalidArgumentError("spec.constraint: unknown kind");
}

absl::StatusOr<RowMatrix> ToDense(const v1::DenseMatrix& m, const std::string& field) {
  if (m.rows() < 0 || m.cols() < 0 ||
      static_cast<int64_t>(m.rows()) * m.cols() != m.values_size()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", m.values_size(), " values for a ",
                                                   m.rows(), " x ", m.cols(), " matrix"));
  }
  if (absl::Status s =
          CheckInputNumbers(m.values().data(), m.values_size(), field + ".values", m.cols());
      !s.ok()) {
    return s;
  }
  return Eigen::Map<const RowMatrix>(m.values().data(), m.rows(), m.cols());
}

// A repeated double field of a batch, every number checked.
absl::StatusOr<Vector> ToCheckedVector(const google::protobuf::RepeatedField<double>& v,
                                       const std::string& field) {
  if (absl::Status s = CheckInputNumbers(v.data(), v.size(), field); !s.ok()) return s;
  return ToVector(v);
}

void FromDense(const RowMatrix& m, v1::DenseMatrix* out) {
  out->set_rows(static_cast<int32_t>(m.rows()));
  out->set_cols(static_cast<int32_t>(m.cols()));
  out->mutable_values()->Assign(m.data(), m.data() + m.size());
}

// SessionSpec.x_groups: at most kMaxXGroups, names of 1-64 printable ASCII
// characters (they become Prometheus label values and dashboard text),
// unique, sizes >= 1.  That they cover x exactly is checked where x's
// dimension is known (CheckXGroups).
absl::Status ToXGroups(const google::protobuf::RepeatedPtrField<v1::XGroup>& groups,
                       std::vector<SessionConfig::XGroup>* out) {
  if (groups.size() > kMaxXGroups) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.x_groups: ", groups.size(), " groups, at most ", kMaxXGroups));
  }
  std::set<std::string> seen;
  for (int i = 0; i < groups.size(); ++i) {
    const v1::XGroup& g = groups[i];
    const std::string field = absl::StrCat("spec.x_groups[", i, "]");
    const bool printable = std::all_of(g.name().begin(), g.name().end(),
                                       [](char ch) { return ch >= 0x20 && ch < 0x7f; });
    if (g.name().empty() || g.name().size() > 64 || !printable) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".name: must be 1-64 printable ASCII characters"));
    }
    if (!seen.insert(g.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(field, ".name: '", g.name(), "' names an earlier group too"));
    }
    if (g.size() < 1) {
      return absl::InvalidArgumentError(absl::StrCat(field, ".size: ", g.size(), ", must be >= 1"));
    }
    out->push_back({g.name(), g.size()});
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckXGroups(const SessionConfig& c, int x_dim) {
  int64_t total = 0;
  for (const SessionConfig::XGroup& g : c.x_groups) total += g.size;
  if (!c.x_groups.empty() && total != x_dim) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.x_groups: the sizes sum to ", total, ", x has ", x_dim, " entries"));
  }
  return absl::OkStatus();
}

absl::StatusOr<SessionConfig> ToSessionConfig(const v1::SessionSpec& spec, UnreadOptions unread) {
  SessionConfig c;
  const v1::FamilySpec& f = spec.family();
  c.family.name = f.name();
  c.family.features = f.features();
  c.family.classes = f.classes();
  c.family.x_dim = f.x_dim();
  c.family.y_dim = f.y_dim();
  SetIf(f.has_mu(), f.mu(), &c.family.mu);
  SetIf(f.has_mu0(), f.mu0(), &c.family.mu0);
  c.family.bump_upper = f.bump_upper();
  SetIf(f.has_bump_scale(), f.bump_scale(), &c.family.bump_scale);
  c.family.tasks = f.tasks();
  SetIf(f.has_max_temperature(), f.max_temperature(), &c.family.max_temperature);
  // The class: as given, or the family's (each family is in one class).
  absl::StatusOr<ProblemClass> cls = !spec.problem_class().empty()
                                         ? ParseProblemClass(spec.problem_class())
                                         : ClassOfFamily(f.name());
  if (!cls.ok()) return cls.status();
  c.problem_class = *cls;
  c.algorithm = spec.algorithm().empty() ? std::string(DefaultAlgorithm(c.problem_class, f.name()))
                                         : spec.algorithm();
  if (unread == UnreadOptions::kRefuse) {
    if (absl::Status s = CheckOptionsRead(c.problem_class, f.name(), c.algorithm,
                                          spec.algorithm().empty(), SetOptions(spec.options()));
        !s.ok()) {
      return s;
    }
  }
  c.options = DefaultAlgorithmOptions(c.algorithm);
  if (absl::Status s = ApplyOptions(spec.options(), &c.options); !s.ok()) return s;
  // A spec a server wrote names every option its algorithm read then; one
  // without lambda_schedule was written before the option existed, when
  // F2OBO and AF2OBO ran the paper's schedule (lambda_t = lambda_1 t^tau,
  // Alg. 1 line 11).  Such a session resumes as it ran; `follow` is the
  // default only for sessions created since.
  if (unread == UnreadOptions::kDrop && !spec.options().has_lambda_schedule()) {
    c.options.lambda_schedule = LambdaSchedule::kPaper;
  }
  // Likewise inner_step_growth: AF2OBO's loops took the smoothness step
  // throughout before it existed.
  if (unread == UnreadOptions::kDrop && !spec.options().has_inner_step_growth()) {
    c.options.inner_step_growth = 1.0;
  }
  absl::StatusOr<ConstraintSet> set = ToConstraint(spec.constraint(), f.name());
  if (!set.ok()) return set.status();
  c.constraint = *std::move(set);
  c.x0 = ToVector(spec.x0());
  c.y0 = ToVector(spec.y0());
  c.z0 = ToVector(spec.z0());
  c.seed = spec.seed();
  if (spec.client_metadata().size() > kMaxClientMetadataBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("spec.client_metadata: ", spec.client_metadata().size(),
                     " bytes exceed the limit of ", kMaxClientMetadataBytes));
  }
  c.client_metadata = spec.client_metadata();
  if (absl::Status s = ToXGroups(spec.x_groups(), &c.x_groups); !s.ok()) return s;
  return c;
}

absl::StatusOr<std::string> AlgorithmOf(const v1::SessionSpec& spec) {
  if (!spec.algorithm().empty()) return spec.algorithm();
  absl::StatusOr<ProblemClass> cls = !spec.problem_class().empty()
                                         ? ParseProblemClass(spec.problem_class())
                                         : ClassOfFamily(spec.family().name());
  if (!cls.ok()) return cls.status();
  return std::string(DefaultAlgorithm(*cls, spec.family().name()));
}

absl::StatusOr<std::vector<v1::SessionSpec>> GroupMemberSpecs(
    const v1::SessionSpec& shared,
    const google::protobuf::RepeatedPtrField<v1::GroupMember>& members) {
  const OptionSet shared_set = SetOptions(shared.options());
  OptionSet read_by_some;
  std::vector<std::string> algorithms;
  std::vector<v1::SessionSpec> specs;
  for (const v1::GroupMember& m : members) {
    v1::SessionSpec spec = shared;
    if (!m.algorithm().empty()) spec.set_algorithm(m.algorithm());
    absl::StatusOr<std::string> algorithm = AlgorithmOf(spec);
    if (!algorithm.ok()) return algorithm.status();
    algorithms.push_back(absl::StrCat(m.name(), ": ", *algorithm));
    // An unknown algorithm keeps every shared option: its create says why
    // it is refused.
    const AlgorithmInfo* info = FindAlgorithm(*algorithm);
    OptionSet unread;
    for (const OptionInfo& o : OptionTable()) {
      if (!shared_set.Has(o.id)) continue;
      if (info == nullptr || info->reads.Has(o.id)) {
        read_by_some.Add(o.id);
      } else {
        unread.Add(o.id);
      }
    }
    ClearOptions(unread, spec.mutable_options());
    spec.mutable_options()->MergeFrom(m.options());
    specs.push_back(std::move(spec));
  }
  for (const OptionInfo& o : OptionTable()) {
    if (shared_set.Has(o.id) && !read_by_some.Has(o.id)) {
      return absl::InvalidArgumentError(
          absl::StrCat("spec.options.", o.name, ": read by no member's algorithm (",
                       absl::StrJoin(algorithms, ", "),
                       "); set it on a member whose algorithm reads it, or leave it unset"));
    }
  }
  return specs;
}

v1::SessionSpec ToSessionSpec(const SessionConfig& c, int exact_every) {
  v1::SessionSpec s;
  s.set_problem_class(std::string(ProblemClassName(c.problem_class)));
  v1::FamilySpec* f = s.mutable_family();
  f->set_name(c.family.name);
  f->set_features(c.family.features);
  f->set_classes(c.family.classes);
  f->set_x_dim(c.family.x_dim);
  f->set_y_dim(c.family.y_dim);
  f->set_mu(c.family.mu);
  f->set_mu0(c.family.mu0);
  f->set_bump_upper(c.family.bump_upper);
  f->set_bump_scale(c.family.bump_scale);
  if (c.problem_class == ProblemClass::kMultitaskBilevel) {
    f->set_tasks(c.family.tasks);
    f->set_max_temperature(c.family.max_temperature);
  }
  s.set_algorithm(c.algorithm);
  // The options the algorithm reads (an unknown algorithm: all of them).
  const AlgorithmInfo* info = FindAlgorithm(c.algorithm);
  OptionSet reads = info != nullptr ? info->reads : OptionSet{};
  if (info == nullptr) {
    for (const OptionInfo& o : OptionTable()) reads.Add(o.id);
  }
  FillOptions(c.options, reads, s.mutable_options());
  switch (c.constraint.kind) {
    case ConstraintSet::Kind::kNone:
      s.mutable_constraint()->set_unconstrained(true);
      break;
    case ConstraintSet::Kind::kBox:
      ToRepeated(c.constraint.lo, s.mutable_constraint()->mutable_box()->mutable_lo());
      ToRepeated(c.constraint.hi, s.mutable_constraint()->mutable_box()->mutable_hi());
      break;
    case ConstraintSet::Kind::kBall:
      s.mutable_constraint()->mutable_ball()->set_radius(c.constraint.radius);
      ToRepeated(c.constraint.center, s.mutable_constraint()->mutable_ball()->mutable_center());
      break;
    case ConstraintSet::Kind::kL1Ball:
      s.mutable_constraint()->mutable_l1_ball()->set_radius(c.constraint.radius);
      ToRepeated(c.constraint.center, s.mutable_constraint()->mutable_l1_ball()->mutable_center());
      break;
    case ConstraintSet::Kind::kSimplex:
      s.mutable_constraint()->mutable_simplex()->set_total(c.constraint.radius);
      break;
  }
  ToRepeated(c.x0, s.mutable_x0());
  ToRepeated(c.y0, s.mutable_y0());
  ToRepeated(c.z0, s.mutable_z0());
  s.set_seed(c.seed);
  s.mutable_metrics()->set_exact_every(exact_every);
  s.set_client_metadata(c.client_metadata);
  for (const SessionConfig::XGroup& g : c.x_groups) {
    v1::XGroup* out = s.add_x_groups();
    out->set_name(g.name);
    out->set_size(g.size);
  }
  return s;
}

// Every number of every field is checked here, whether or not the
// session's family reads it (the proto's conventions): dense and m values
// in ToDense, csr values in MakeCsr, the vectors in ToCheckedVector.
absl::StatusOr<Batch> ToBatch(const v1::Batch& p, const std::string& what) {
  Batch b;
  switch (p.features_case()) {
    case v1::Batch::kDense: {
      absl::StatusOr<RowMatrix> m = ToDense(p.dense(), what + ".dense");
      if (!m.ok()) return m.status();
      b.dense = *std::move(m);
      break;
    }
    case v1::Batch::kCsr: {
      const v1::CsrMatrix& c = p.csr();
      absl::StatusOr<CsrMatrix> m =
          MakeCsr(c.rows(), c.cols(), std::vector<int64_t>(c.indptr().begin(), c.indptr().end()),
                  std::vector<int32_t>(c.indices().begin(), c.indices().end()),
                  std::vector<double>(c.values().begin(), c.values().end()));
      if (!m.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(what, ".", m.status().message()));
      }
      b.sparse_features = true;
      b.csr = *std::move(m);
      break;
    }
    case v1::Batch::FEATURES_NOT_SET:
      break;
  }
  b.labels.assign(p.labels().begin(), p.labels().end());
  for (auto [field, in, out] :
       {std::make_tuple(".targets", &p.targets(), &b.targets),
        std::make_tuple(".class_weights", &p.class_weights(), &b.class_weights),
        std::make_tuple(".c", &p.c(), &b.c), std::make_tuple(".d", &p.d(), &b.d)}) {
    absl::StatusOr<Vector> v = ToCheckedVector(*in, what + field);
    if (!v.ok()) return v.status();
    *out = *std::move(v);
  }
  if (p.has_m()) {
    absl::StatusOr<RowMatrix> m = ToDense(p.m(), what + ".m");
    if (!m.ok()) return m.status();
    b.M = *m;
  }
  return b;
}

void ToProto(const Batch& b, v1::Batch* out) {
  out->Clear();
  if (b.sparse_features) {
    v1::CsrMatrix* c = out->mutable_csr();
    c->set_rows(static_cast<int32_t>(b.csr.rows()));
    c->set_cols(static_cast<int32_t>(b.csr.cols()));
    const int* outer = b.csr.outerIndexPtr();
    for (Eigen::Index r = 0; r <= b.csr.rows(); ++r) c->add_indptr(outer[r] - outer[0]);
    c->mutable_indices()->Assign(b.csr.innerIndexPtr() + outer[0],
                                 b.csr.innerIndexPtr() + outer[b.csr.rows()]);
    c->mutable_values()->Assign(b.csr.valuePtr() + outer[0],
                                b.csr.valuePtr() + outer[b.csr.rows()]);
  } else if (b.dense.size() > 0 || b.dense.rows() > 0) {
    FromDense(b.dense, out->mutable_dense());
  }
  out->mutable_labels()->Assign(b.labels.begin(), b.labels.end());
  ToRepeated(b.targets, out->mutable_targets());
  ToRepeated(b.class_weights, out->mutable_class_weights());
  if (b.M.size() > 0) FromDense(RowMatrix(b.M), out->mutable_m());
  ToRepeated(b.c, out->mutable_c());
  ToRepeated(b.d, out->mutable_d());
}

absl::StatusOr<TaskData> ToTask(const v1::TaskBatch& task, const std::string& what) {
  TaskData t;
  t.task = task.task();
  t.probability = task.probability();
  absl::StatusOr<Batch> upper = ToBatch(task.upper(), what + ".upper");
  if (!upper.ok()) return upper.status();
  absl::StatusOr<Batch> inner = ToBatch(task.inner(), what + ".inner");
  if (!inner.ok()) return inner.status();
  t.data.upper = *std::move(upper);
  t.data.inner = *std::move(inner);
  return t;
}

void ToProto(const TaskData& task, v1::TaskBatch* out) {
  out->set_task(task.task);
  out->set_probability(task.probability);
  ToProto(task.data.upper, out->mutable_upper());
  ToProto(task.data.inner, out->mutable_inner());
}

void ToProto(const StepReport& r, v1::RoundReport* out) {
  out->set_rows_processed(r.rows_processed);
  out->set_upper_loss_before(r.upper_loss_before);
  if (r.accuracy_before.has_value()) out->set_accuracy_before(*r.accuracy_before);
  out->set_round_seconds(r.round_seconds);
  // A class without a wire entry has no class fields on the wire (never
  // another class's); class_entries_test requires an entry for every class.
  if (const ClassWire* w = WireOf(static_cast<ProblemClass>(r.detail.index()))) w->report(r, out);
}

void ToProto(ProblemClass c, const RunningMetrics& running, v1::RunningMetrics* out) {
  out->set_evaluated_steps(running.evaluated_steps);
  if (const ClassWire* w = WireOf(c)) w->running(running, out);
}

void ToProto(const ClassMetrics& m, const RunningMetrics& running, v1::ExactMetrics* out) {
  const ProblemClass c = static_cast<ProblemClass>(m.index());
  if (const ClassWire* w = WireOf(c)) w->metrics(m, out);
  ToProto(c, running, out->mutable_running());
}

v1::SessionInfo SessionInfoOf(const std::string& id, const Session& session,
                              const SessionState& state, const RunningMetrics& metrics,
                              int exact_every) {
  v1::SessionInfo info;
  info.set_session_id(id);
  *info.mutable_spec() = ToSessionSpec(session.config(), exact_every);
  info.set_next_t(state.t);
  info.set_x_dim(static_cast<int32_t>(state.x.size()));
  info.set_inner_iterations(state.inner_iterations);
  info.set_cap_hits(state.cap_hits);
  info.set_rows_processed(state.rows_processed);
  ToProto(session.problem_class(), metrics, info.mutable_metrics());
  if (const ClassWire* w = WireOf(session.problem_class())) {
    w->info(session.problem(), state, &info);
  }
  return info;
}

v1::Decision DecisionOf(const std::string& id, const Session& session, const SessionState& state) {
  v1::Decision d;
  d.set_session_id(id);
  d.set_t(state.t);
  ToRepeated(session.problem().Decision(state), d.mutable_x());
  if (const ClassWire* w = WireOf(session.problem_class())) {
    w->decision(session.problem(), state, &d);
  }
  return d;
}

}  // namespace f2obo
