#include "f2obo/v1/convert.h"

#include <limits>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/algorithm_registry.h"

namespace f2obo {
namespace {

template <typename T>
void SetIf(bool has, T value, T* field) {
  if (has) *field = value;
}

absl::StatusOr<ConstraintSet> ToConstraint(const v1::ConstraintSpec& c) {
  ConstraintSet s;
  switch (c.kind_case()) {
    case v1::ConstraintSpec::KIND_NOT_SET:
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
  }
  return absl::InvalidArgumentError("spec.constraint: unknown kind");
}

absl::Status ApplyOptions(const v1::AlgorithmOptions& p, AlgorithmOptions* o) {
  SetIf(p.has_lambda1(), p.lambda1(), &o->lambda1);
  SetIf(p.has_tau(), p.tau(), &o->tau);
  SetIf(p.has_lambda_max(), p.lambda_max(), &o->lambda_max);
  SetIf(p.has_alpha(), p.alpha(), &o->alpha);
  SetIf(p.has_alpha_auto(), p.alpha_auto(), &o->alpha_auto);
  SetIf(p.has_beta(), p.beta(), &o->beta);
  SetIf(p.has_beta_auto(), p.beta_auto(), &o->beta_auto);
  SetIf(p.has_gamma(), p.gamma(), &o->gamma);
  SetIf(p.has_inner_steps(), p.inner_steps(), &o->inner_steps);
  SetIf(p.has_delta_y(), p.delta_y(), &o->delta_y);
  SetIf(p.has_delta_z(), p.delta_z(), &o->delta_z);
  SetIf(p.has_max_inner_iterations(), p.max_inner_iterations(), &o->max_inner_iterations);
  SetIf(p.has_alpha_decay(), p.alpha_decay(), &o->alpha_decay);
  SetIf(p.has_beta_decay(), p.beta_decay(), &o->beta_decay);
  SetIf(p.has_batch_growth(), p.batch_growth(), &o->batch_growth);
  SetIf(p.has_hyper_batch_growth(), p.hyper_batch_growth(), &o->hyper_batch_growth);
  SetIf(p.has_batch_scale(), p.batch_scale(), &o->batch_scale);
  SetIf(p.has_inner_schedule_scale(), p.inner_schedule_scale(), &o->inner_schedule_scale);
  SetIf(p.has_max_scheduled_inner_steps(), p.max_scheduled_inner_steps(),
        &o->max_scheduled_inner_steps);
  SetIf(p.has_linear_system_steps(), p.linear_system_steps(), &o->linear_system_steps);
  SetIf(p.has_linear_system_step(), p.linear_system_step(), &o->linear_system_step);
  SetIf(p.has_window(), p.window(), &o->window);
  SetIf(p.has_momentum(), p.momentum(), &o->momentum);
  SetIf(p.has_sample_rows(), p.sample_rows(), &o->sample_rows);
  SetIf(p.has_delta(), p.delta(), &o->delta);
  SetIf(p.has_max_explicit_dim(), p.max_explicit_dim(), &o->max_explicit_dim);
  SetIf(p.has_jacobian_clip(), p.jacobian_clip(), &o->jacobian_clip);
  SetIf(p.has_hessian_floor(), p.hessian_floor(), &o->hessian_floor);
  SetIf(p.has_pz_directions(), p.pz_directions(), &o->pz_directions);
  SetIf(p.has_pz_smoothing(), p.pz_smoothing(), &o->pz_smoothing);
  if (p.has_beta_scaling()) {
    if (p.beta_scaling() == "scaled") {
      o->beta_scaling = BetaScaling::kScaled;
    } else if (p.beta_scaling() == "fixed") {
      o->beta_scaling = BetaScaling::kFixed;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.beta_scaling: '", p.beta_scaling(), "' is not 'scaled' or 'fixed'"));
    }
  }
  if (p.has_inner_schedule()) {
    if (p.inner_schedule() == "fixed") {
      o->inner_schedule = InnerSchedule::kFixed;
    } else if (p.inner_schedule() == "theory") {
      o->inner_schedule = InnerSchedule::kTheory;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "options.inner_schedule: '", p.inner_schedule(), "' is not 'fixed' or 'theory'"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RowMatrix> ToDense(const v1::DenseMatrix& m, const std::string& field) {
  if (m.rows() < 0 || m.cols() < 0 ||
      static_cast<int64_t>(m.rows()) * m.cols() != m.values_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", m.values_size(), " values for a ", m.rows(), " x ",
                     m.cols(), " matrix"));
  }
  if (absl::Status s = CheckInputNumbers(m.values().data(), m.values_size(),
                                         field + ".values", m.cols());
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

}  // namespace

absl::StatusOr<SessionConfig> ToSessionConfig(const v1::SessionSpec& spec) {
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
  c.algorithm = spec.algorithm().empty() ? "f2obo" : spec.algorithm();
  c.options = DefaultAlgorithmOptions(c.algorithm);
  if (absl::Status s = ApplyOptions(spec.options(), &c.options); !s.ok()) return s;
  absl::StatusOr<ConstraintSet> set = ToConstraint(spec.constraint());
  if (!set.ok()) return set.status();
  c.constraint = *std::move(set);
  c.x0 = ToVector(spec.x0());
  c.y0 = ToVector(spec.y0());
  c.z0 = ToVector(spec.z0());
  c.seed = spec.seed();
  return c;
}

v1::SessionSpec ToSessionSpec(const SessionConfig& c, int exact_every) {
  v1::SessionSpec s;
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
  s.set_algorithm(c.algorithm);
  const AlgorithmOptions& o = c.options;
  v1::AlgorithmOptions* p = s.mutable_options();
  p->set_lambda1(o.lambda1);
  p->set_tau(o.tau);
  if (o.lambda_max < std::numeric_limits<double>::infinity()) p->set_lambda_max(o.lambda_max);
  p->set_alpha(o.alpha);
  p->set_alpha_auto(o.alpha_auto);
  p->set_beta(o.beta);
  p->set_beta_auto(o.beta_auto);
  p->set_beta_scaling(o.beta_scaling == BetaScaling::kScaled ? "scaled" : "fixed");
  p->set_gamma(o.gamma);
  p->set_inner_steps(o.inner_steps);
  p->set_delta_y(o.delta_y);
  p->set_delta_z(o.delta_z);
  p->set_max_inner_iterations(o.max_inner_iterations);
  p->set_alpha_decay(o.alpha_decay);
  p->set_beta_decay(o.beta_decay);
  p->set_batch_growth(o.batch_growth);
  p->set_hyper_batch_growth(o.hyper_batch_growth);
  p->set_batch_scale(o.batch_scale);
  p->set_inner_schedule(o.inner_schedule == InnerSchedule::kFixed ? "fixed" : "theory");
  p->set_inner_schedule_scale(o.inner_schedule_scale);
  p->set_max_scheduled_inner_steps(o.max_scheduled_inner_steps);
  p->set_linear_system_steps(o.linear_system_steps);
  p->set_linear_system_step(o.linear_system_step);
  p->set_window(o.window);
  p->set_momentum(o.momentum);
  p->set_sample_rows(o.sample_rows);
  p->set_delta(o.delta);
  p->set_max_explicit_dim(o.max_explicit_dim);
  p->set_jacobian_clip(o.jacobian_clip);
  p->set_hessian_floor(o.hessian_floor);
  p->set_pz_directions(o.pz_directions);
  p->set_pz_smoothing(o.pz_smoothing);
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
  }
  ToRepeated(c.x0, s.mutable_x0());
  ToRepeated(c.y0, s.mutable_y0());
  ToRepeated(c.z0, s.mutable_z0());
  s.set_seed(c.seed);
  s.mutable_metrics()->set_exact_every(exact_every);
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
      absl::StatusOr<CsrMatrix> m = MakeCsr(
          c.rows(), c.cols(), std::vector<int64_t>(c.indptr().begin(), c.indptr().end()),
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

void ToProto(const StepReport& r, v1::RoundReport* out) {
  out->set_lambda(r.lambda);
  out->set_alpha(r.alpha);
  out->set_beta(r.beta);
  out->set_step_sizes_auto(r.step_sizes_auto);
  out->set_l_g1(r.l_g1);
  out->set_l_f1(r.l_f1);
  out->set_z_iterations(r.z_iterations);
  out->set_y_iterations(r.y_iterations);
  out->set_cap_hit(r.cap_hit);
  out->set_residual_z(r.residual_z);
  out->set_residual_y(r.residual_y);
  out->set_hypergradient_norm(r.hypergradient.norm());
  out->set_batch_size(r.batch_size);
  out->set_hyper_batch_size(r.hyper_batch_size);
  out->set_rows_processed(r.rows_processed);
  out->set_upper_loss_before(r.upper_loss_before);
  if (r.accuracy_before.has_value()) out->set_accuracy_before(*r.accuracy_before);
  out->set_round_seconds(r.round_seconds);
}

void ToProto(const RunningMetrics& r, v1::RunningMetrics* out) {
  out->set_evaluated_steps(r.evaluated_steps);
  out->set_blreg(r.blreg);
  out->set_variation_sum(r.variation);
  out->set_drift_sum(r.drift);
  out->set_drift_steps(r.drift_steps);
  out->set_unconverged_steps(r.unconverged_steps);
  out->set_unconverged_drift_steps(r.unconverged_drift_steps);
}

void ToProto(const ExactMetrics& m, const RunningMetrics& running, v1::ExactMetrics* out) {
  out->set_t(m.t);
  out->set_regret_term(m.regret_term);
  out->set_hypergradient_error(m.hypergradient_error);
  out->set_value(m.value);
  out->set_true_gradient_norm(m.true_gradient_norm);
  out->set_inner_residual(m.inner_residual);
  if (m.variation.has_value()) out->set_variation(*m.variation);
  if (m.drift.has_value()) out->set_drift(*m.drift);
  ToProto(running, out->mutable_running());
  out->set_inner_converged(m.inner_converged);
  out->set_inner_relative_residual(m.inner_relative_residual);
  out->set_cg_converged(m.cg_converged);
  out->set_cg_relative_residual(m.cg_relative_residual);
  if (m.previous_inner_converged.has_value()) {
    out->set_previous_inner_converged(*m.previous_inner_converged);
  }
}

}  // namespace f2obo
