#include "core/simple/algorithms/ir_common.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "core/simple/algorithms/aux_checks.h"

namespace f2obo {

double FOnView(SimpleFamily& family, const VecIn& x, const BatchView& view, Vector* grad) {
  if (family.upper_reads_rows() && view.rows.n == 0) {
    if (grad != nullptr) grad->setZero(x.size());
    return 0.0;
  }
  return family.F(x, view, grad);
}

double GOnView(SimpleFamily& family, const VecIn& x, const BatchView& view, Vector* grad) {
  if (view.rows.n == 0) {
    if (grad != nullptr) grad->setZero(x.size());
    return 0.0;
  }
  return family.G(x, view, grad);
}

double RegSchedule::Sigma(int64_t i) const {
  return scale * std::pow(static_cast<double>(std::max(i, floor)) + 1.0, -decay);
}

double RegSchedule::Drop(int64_t i) const {
  if (i <= floor) return 0.0;  // sigma is flat up to the floor (Alg. 2's q)
  const double di = static_cast<double>(i);
  // sigma_{i-1} - sigma_i = scale (i+1)^-p [((i+1)/i)^p - 1]
  //                       = scale (i+1)^-p expm1(p log1p(1/i)).
  return scale * std::pow(di + 1.0, -decay) * std::expm1(decay * std::log1p(1.0 / di));
}

void UpdateAverage(const RegSchedule& sigma, int64_t k, const VecIn& x_next, Vector* mean,
                   double* weight, Vector* decision) {
  const int64_t i = k + 1;
  const double di = static_cast<double>(i);
  const double w = (di + 1.0) * di * sigma.Drop(i);
  if (w > 0.0) {
    *weight += w;
    mean->noalias() += (w / *weight) * (x_next - *mean);
  }
  // Leading term (k+2)(k+1) sigma_{k+1} on x_{k+1}.
  const double lead = (di + 1.0) * di * sigma.Sigma(i);
  const double total = lead + *weight;
  *decision = (lead / total) * x_next + (*weight / total) * *mean;
}

double ConditionalGradientStep(const ConstraintSet& z, double sigma, double alpha,
                               const Vector& d_f, const Vector& d_g, Vector* c, Vector* s,
                               Vector* x, double* oracle_seconds) {
  *c = sigma * d_f + d_g;
  const auto start = std::chrono::steady_clock::now();
  z.Lmo(*c, s);
  *oracle_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const double gap = c->dot(*x - *s);
  *x += alpha * (*s - *x);
  return gap;
}

namespace {

// StepAndAverage's pass over d.  Restrict-qualified parameters (the
// vectors are distinct: AveragedStep's contract) let the compiler
// vectorize it; as locals GCC ignored them and the loop ran scalar (~12%
// of an IR-SCG step at d = 100,000).  next_mean null: the mean stays.
void MoveAndAverage(Eigen::Index d, double alpha, double to_x, double on_x, double on_mean,
                    const double* __restrict s, const double* __restrict mean, double* __restrict x,
                    double* __restrict prev, double* __restrict next_mean,
                    double* __restrict decision) {
  if (next_mean != nullptr) {
    for (Eigen::Index j = 0; j < d; ++j) {
      const double xo = x[j];
      prev[j] = xo;
      const double xn = xo + alpha * (s[j] - xo);
      x[j] = xn;
      const double m = mean[j] + to_x * (xn - mean[j]);
      next_mean[j] = m;
      decision[j] = on_mean * m + on_x * xn;  // Eigen's order (see the test)
    }
  } else {
    for (Eigen::Index j = 0; j < d; ++j) {
      const double xo = x[j];
      prev[j] = xo;
      const double xn = xo + alpha * (s[j] - xo);
      x[j] = xn;
      decision[j] = on_mean * mean[j] + on_x * xn;
    }
  }
}

}  // namespace

double AverageIncrement(const RegSchedule& schedule, int64_t k) {
  const double di = static_cast<double>(k + 1);
  return (di + 1.0) * di * schedule.Drop(k + 1);
}

double StepAndAverage(const ConstraintSet& z, const RegSchedule& schedule, int64_t k, double alpha,
                      const Vector& d_f, const Vector& d_g, Vector* c, Vector* s,
                      const AveragedStep& out, double* oracle_seconds) {
  const double sigma = schedule.Sigma(k);
  *c = sigma * d_f + d_g;
  const auto start = std::chrono::steady_clock::now();
  z.Lmo(*c, s);
  *oracle_seconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  Vector& x = *out.x;
  const double gap = c->dot(x - *s);
  // UpdateAverage's scalars.
  const double di = static_cast<double>(k + 1);
  const double w = AverageIncrement(schedule, k);
  double& weight = *out.weight;
  double to_x = 0.0;
  if (w > 0.0) {
    weight += w;
    to_x = w / weight;
  }
  const double lead = (di + 1.0) * di * schedule.Sigma(k + 1);
  const double total = lead + weight;
  const double on_x = lead / total, on_mean = weight / total;
  const Eigen::Index d = x.size();
  out.prev->resize(d);
  out.decision->resize(d);
  if (w > 0.0) out.mean_after->resize(d);
  MoveAndAverage(d, alpha, to_x, on_x, on_mean, s->data(), out.mean_before->data(), x.data(),
                 out.prev->data(), w > 0.0 ? out.mean_after->data() : nullptr,
                 out.decision->data());
  return gap;
}

absl::Status RequireLmo(const ConstraintSet& z, const char* algorithm) {
  if (z.HasLmo()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "constraint: ", algorithm,
      " is a Frank-Wolfe method and needs a compact set with a linear minimization oracle "
      "(l1 ball, l2 ball, simplex, or a box with finite bounds); this set has none"));
}

absl::Status CheckAverageWeight(const StateParts& aux, int i) {
  if (absl::Status s = CheckAuxSize(aux, i, 1, "the averaging weight W"); !s.ok()) return s;
  const double w = aux[i][0];
  if (!(std::isfinite(w) && w >= 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("aux[", i, "]: the averaging weight W = ", w, " is not a finite number >= 0"));
  }
  return absl::OkStatus();
}

}  // namespace f2obo
