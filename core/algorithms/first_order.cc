#include "core/algorithms/first_order.h"

#include <algorithm>
#include <cmath>

namespace f2obo {

double NextLambda(const AlgorithmOptions& o, int64_t t, double lambda) {
  const double next = std::pow(1.0 + 1.0 / static_cast<double>(t), o.tau) * lambda;
  return std::min(next, o.lambda_max);
}

Smoothness SmoothnessIfAuto(const AlgorithmOptions& o, Family& family,
                            const VecIn& x, const VecIn& y, const StepData& data) {
  if (!o.alpha_auto && !o.beta_auto) return Smoothness{};
  return family.EstimateSmoothness(x, y, data);
}

StepSizes DeterministicStepSizes(const AlgorithmOptions& o, const Smoothness& sm,
                                 double lambda) {
  StepSizes s;
  s.alpha = o.alpha_auto ? 1.0 / sm.l_g1 : o.alpha;
  s.beta = o.beta_auto ? 1.0 / (2.0 * lambda * sm.l_g1 + sm.l_f1)
           : o.beta_scaling == BetaScaling::kScaled ? o.beta / lambda
                                                    : o.beta;
  return s;
}

void RecordStepSizes(const AlgorithmOptions& o, const Smoothness& sm, double lambda,
                     const StepSizes& steps, StepReport* report) {
  report->lambda = lambda;
  report->alpha = steps.alpha;
  report->beta = steps.beta;
  report->step_sizes_auto = o.alpha_auto || o.beta_auto;
  report->l_g1 = sm.l_g1;
  report->l_f1 = sm.l_f1;
}

int64_t Hypergradient(Family& family, const VecIn& x, const VecIn& y,
                      const VecIn& z, double lambda, const BatchView& upper,
                      const BatchView& inner, FirstOrderWorkspace* ws,
                      StepReport* report) {
  family.F(x, y, upper, &ws->gx_f, &ws->gy_f);
  family.G(x, y, inner, &ws->gx_g_y, &ws->gy_g);
  family.G(x, z, inner, &ws->gx_g_z, &ws->gz);
  report->hypergradient.noalias() = ws->gx_f + lambda * (ws->gx_g_y - ws->gx_g_z);
  ws->gy_f += lambda * ws->gy_g;  // grad_y L; gy_f is dead after this round
  report->residual_y = ws->gy_f.norm();
  report->residual_z = ws->gz.norm();
  return upper.rows.n + 2 * static_cast<int64_t>(inner.rows.n);
}

void ProjectedStep(const ConstraintSet& set, double gamma, const Vector& h,
                   Vector* x) {
  x->noalias() -= gamma * h;
  set.Project(x);
}

}  // namespace f2obo
