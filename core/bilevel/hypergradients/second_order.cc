#include "core/bilevel/hypergradients/second_order.h"

#include <algorithm>

namespace f2obo {

double InnerStepSize(const AlgorithmOptions& o, BilevelFamily& family, const VecIn& x,
                     const VecIn& y, const StepData& data, BilevelReport* report) {
  double alpha = o.alpha;
  report->l_g1 = report->l_f1 = 0.0;
  if (AlphaIsAuto(o)) {
    const Smoothness sm = family.EstimateSmoothness(x, y, data);
    alpha = 1.0 / sm.l_g1;
    report->l_g1 = sm.l_g1;
    report->l_f1 = sm.l_f1;
    report->smoothness_source = sm.source;
  }
  report->lambda = 0.0;
  report->alpha = alpha;
  report->gamma = o.gamma;
  report->beta = 0.0;
  report->step_sizes_auto = AlphaIsAuto(o);
  return alpha;
}

int64_t ResidualY(BilevelFamily& family, const VecIn& x, const VecIn& y, const BatchView& inner,
                  SecondOrderWorkspace* ws, BilevelReport* report) {
  family.G(x, y, inner, nullptr, &ws->gy_g);
  report->residual_y = ws->gy_g.norm();
  return inner.rows.n;
}

absl::StatusOr<int64_t> AidHypergradient(BilevelFamily& family, const VecIn& x, const VecIn& y,
                                         const BatchView& upper, const BatchView& inner, int steps,
                                         double eta, Vector* v, SecondOrderWorkspace* ws,
                                         RoundControl* control) {
  family.F(x, y, upper, &ws->gx_f, &ws->gy_f);
  for (int m = 0; m < steps; ++m) {
    if (absl::Status st = ContinueRound(control); !st.ok()) return st;
    family.HvpYYG(x, y, inner, *v, &ws->hv_y);
    ws->hv_y -= ws->gy_f;  // residual of grad2_yy g v = grad_y f
    v->noalias() -= eta * ws->hv_y;
  }
  family.HvpXYG(x, y, inner, *v, &ws->hv_x);
  ws->h.noalias() = ws->gx_f - ws->hv_x;
  return upper.rows.n + static_cast<int64_t>(steps + 1) * inner.rows.n;
}

absl::StatusOr<int64_t> ItdHypergradient(BilevelFamily& family, const VecIn& x,
                                         const std::vector<Vector>& iterates, int k_steps,
                                         double alpha, const BatchView& upper,
                                         const BatchView& inner, SecondOrderWorkspace* ws,
                                         RoundControl* control) {
  family.F(x, iterates[k_steps], upper, &ws->gx_f, &ws->v);
  ws->h = ws->gx_f;
  int64_t rows = upper.rows.n;
  for (int k = k_steps - 1; k >= 0; --k) {
    if (absl::Status st = ContinueRound(control); !st.ok()) return st;
    family.HvpXYG(x, iterates[k], inner, ws->v, &ws->hv_x);
    ws->h.noalias() -= alpha * ws->hv_x;
    rows += inner.rows.n;
    if (k == 0) break;  // dy^0/dx = 0: the last v is not needed
    family.HvpYYG(x, iterates[k], inner, ws->v, &ws->hv_y);
    ws->v.noalias() -= alpha * ws->hv_y;
    rows += inner.rows.n;
  }
  return rows;
}

bool EnsureAux(const std::vector<int>& sizes, BilevelVars* state) {
  StateParts& aux = state->aux;
  // Parts after `sizes` (the upper step's, upper_step.h) are not the
  // caller's to check.
  bool fits = aux.size() >= sizes.size();
  for (size_t i = 0; fits && i < sizes.size(); ++i) fits = aux[i].size() == sizes[i];
  if (fits) return false;
  aux.clear();
  for (int size : sizes) aux.push_back(Vector::Zero(size));
  return true;
}

void HypergradientWindow::AppendLayout(std::vector<int>* sizes) const {
  sizes->insert(sizes->end(), width_, d1_);
  sizes->push_back(2);  // {filled, next}
}

void HypergradientWindow::PushAndAverage(const Vector& h, StateParts* aux, Vector* mean) const {
  Vector& book = (*aux)[first_ + width_];
  // Counts are small integers, exact in a double; clamp a corrupt slot (an
  // imported state can hold any finite double there).  The clamp happens in
  // double, before the conversion: converting a double outside int's range
  // is undefined behaviour (x86 yields INT_MIN, so 1e300 became 0, not w).
  auto count = [](double v, int hi) {
    return v >= 0.0 ? static_cast<int>(std::min(v, static_cast<double>(hi))) : 0;
  };
  int filled = count(book[0], width_);
  int next = count(book[1], width_ - 1);
  (*aux)[first_ + next] = h;
  filled = std::min(filled + 1, width_);
  next = (next + 1) % width_;
  book[0] = filled;
  book[1] = next;
  mean->setZero();
  for (int i = 0; i < filled; ++i) *mean += (*aux)[first_ + i];
  *mean /= static_cast<double>(filled);
}

}  // namespace f2obo
