#include "core/bilevel/hypergradients/svrb_estimators.h"

#include "absl/strings/str_cat.h"
#include "core/options.h"

namespace f2obo {
namespace {

// d <- cur + keep (d - prev), SVRB's exact arithmetic.
void Storm(const Vector& cur, const Vector& prev, double keep, Vector* d) {
  *d -= prev;
  *d *= keep;
  *d += cur;
}

// d <- scale cur + keep (d - scale prev).
void ScaledStorm(const Vector& cur, const Vector& prev, double keep, double scale, Vector* d) {
  d->noalias() -= scale * prev;
  *d *= keep;
  d->noalias() += scale * cur;
}

// Projects v onto the ball of radius r (none when r is infinite).
void ProjectOntoBall(double r, Vector* v) {
  if (const double n = v->norm(); n > r) *v *= r / n;
}

}  // namespace

int64_t SvrbOracle::Evaluate(BilevelFamily& family, const VecIn& x, const VecIn& y,
                             const BatchView& xi, const BatchView& zeta, SvrbDerivatives* out) {
  family.F(x, y, xi, &out->gx_f, &out->gy_f);
  family.G(x, y, zeta, nullptr, &out->gy_g);
  for (int j = 0; j < d2_; ++j) {
    e_[j] = 1.0;
    family.HvpXYG(x, y, zeta, e_, &col_x_);
    out->jxy.col(j) = col_x_;
    family.HvpYYG(x, y, zeta, e_, &col_y_);
    out->hyy.col(j) = col_y_;
    e_[j] = 0.0;
  }
  return xi.rows.n + static_cast<int64_t>(1 + 2 * d2_) * zeta.rows.n;
}

void SvrbStart(const SvrbDerivatives& cur, SvrbEstimators* e) {
  e->u = cur.gx_f;
  e->w = cur.gy_f;
  e->v = cur.gy_g;
  e->j = cur.jxy;
  e->h = cur.hyy;
}

void SvrbStorm(const SvrbDerivatives& cur, const SvrbDerivatives& prev, double keep, double scale,
               SvrbEstimators* e) {
  if (scale == 1.0) {
    Storm(cur.gx_f, prev.gx_f, keep, &e->u);
    Storm(cur.gy_f, prev.gy_f, keep, &e->w);
    Storm(cur.gy_g, prev.gy_g, keep, &e->v);
    e->j -= prev.jxy;
    e->j *= keep;
    e->j += cur.jxy;
    e->h -= prev.hyy;
    e->h *= keep;
    e->h += cur.hyy;
    return;
  }
  ScaledStorm(cur.gx_f, prev.gx_f, keep, scale, &e->u);
  ScaledStorm(cur.gy_f, prev.gy_f, keep, scale, &e->w);
  ScaledStorm(cur.gy_g, prev.gy_g, keep, scale, &e->v);
  e->j.noalias() -= scale * prev.jxy;
  e->j *= keep;
  e->j.noalias() += scale * cur.jxy;
  e->h.noalias() -= scale * prev.hyy;
  e->h *= keep;
  e->h.noalias() += scale * cur.hyy;
}

absl::Status SvrbProjectAndCombine(double fx_clip, double fy_clip, double jacobian_clip,
                                   double hessian_floor, const char* who, SvrbEstimators* e,
                                   SvrbCombineWorkspace* ws, Vector* h) {
  ProjectOntoBall(fx_clip, &e->u);
  ProjectOntoBall(fy_clip, &e->w);
  if (ws->proj.ClipSingularValues(e->j, jacobian_clip) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": the grad2_xy g estimate is not finite (step sizes too large?)"));
  }
  if (ws->proj.RaiseEigenvalues(e->h, hessian_floor) < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(who, ": the grad2_yy g estimate is not finite (step sizes too large?)"));
  }
  ws->proj.Solve(e->w, &ws->hinv_w);
  ws->jh.noalias() = e->j * ws->hinv_w;
  *h = e->u - ws->jh;
  return absl::OkStatus();
}

absl::Status CheckExplicitDims(const char* algorithm, int max_explicit_dim, int x_dim, int y_dim,
                               const char* per, const char* instead) {
  if (x_dim <= max_explicit_dim && y_dim <= max_explicit_dim) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "options.max_explicit_dim: ", algorithm,
      " builds explicit grad2_xy g (x_dim x y_dim) and grad2_yy g (y_dim x y_dim) matrices",
      *per ? " per touched task" : "", "; this problem has x_dim = ", x_dim, ", y_dim = ", y_dim,
      ", above max_explicit_dim = ", max_explicit_dim, " (raise it up to ",
      GetOptionInfo(Opt::max_explicit_dim).rule.hi, " at O(d^2) memory", per,
      " and O(d^3) time per step, or use ", instead, ")"));
}

}  // namespace f2obo
