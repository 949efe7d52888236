// IR-SCG: N. Giang-Tran, S. Shafiee, N. Ho-Nguyen, "Iteratively regularized
// stochastic conditional gradient methods for simple bilevel optimization",
// Algorithm 1.  Per step (paper iteration k = t - 1, from x_k), on the
// step's upper rows theta_k and inner rows xi_k:
//   k = 0:  d_f = grad f(x_0; theta_0),  d_g = grad g(x_0; xi_0)
//   k > 0:  d_f = grad f(x_k; theta_k) + (1 - a_k)(d_f - grad f(x_{k-1}; theta_k))
//           d_g = grad g(x_k; xi_k)    + (1 - a_k)(d_g - grad g(x_{k-1}; xi_k))
//           (STORM: both terms on the SAME rows)
//   sigma_k = varsigma (k+1)^-p,  alpha_k = 2/(k+2)            (Theorem 1)
//   s_k = LMO_Z(sigma_k d_f + d_g),  x_{k+1} = x_k + alpha_k (s_k - x_k)
//   z_{k+1} = the weighted average of Alg. 1's last line (ir_common.h),
//             served as the decision; Theorem 1 bounds F(z_k) - F_opt by
//             O(k^-(1/2 - p)) and G(z_k) - G_opt by O(k^-p).
// Cost per step: four gradient passes over the step's rows and O(d) vector
// work (the LMO of every supported set is O(d)); no window.
// Choices where the source leaves room:
//  * The STORM weight a_k is Alg. 1's alpha_k (the estimator and the iterate
//    share the step size); options.storm_weight = a in (0, 1] fixes it
//    instead (a = 1: plain stochastic gradients).
//  * The "one sample" of the paper is the step's rows (a mini-batch: f and g
//    are means over them, unbiased as SimpleFamily requires).  A step
//    without rows of a kind (f reading rows, or g) leaves that estimator as
//    it is; f without rows (linear_inverse) is deterministic and its STORM
//    estimate is its exact gradient.
//  * Defaults from App. D: varsigma = 10, p = 1/4 (Theorem 1 needs p in
//    (0, 1/2); the check refuses p >= 1/2).  App. D's second experiment
//    (nonconvex f, Theorem 2: p = 2/7, alpha_k = (k+1)^-6/7) is not offered.
//  * x_0 is the session's initial point (projected onto Z), not a vertex.
// aux layout: [0] d_f (d), [1] d_g (d), [2] x_{k-1} (d), [3] the mean m of
// the averaged iterates (d), [4] {W} their total weight (1).
#include "core/simple/algorithms/ir_scg.h"

#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/simple/algorithms/aux_checks.h"
#include "core/simple/algorithms/ir_common.h"

namespace f2obo {
namespace {

enum Aux { kDf = 0, kDg, kPrevX, kMean, kWeight, kAuxCount };

class IrScg final : public SimpleAlgorithm {
 public:
  explicit IrScg(const SimpleAlgorithmContext& ctx)
      : o_(ctx.options),
        z_(ctx.constraint),
        d_(ctx.x_dim),
        sigma_{ctx.options.reg_scale, ctx.options.reg_decay, 0},
        cur_(d_),
        prev_(d_),
        c_(d_),
        s_(d_) {}

  absl::Status Round(const StepData& data, SimpleFamily& family, SimpleVars* s,
                     SimpleReport* report) override {
    return Iterate(data, family, s, report, nullptr);
  }
  bool EvaluatesPrequential(const SimpleFamily& family) const override {
    return family.HasStormPass();
  }
  absl::Status RoundWithPrequential(const StepData& data, SimpleFamily& family, SimpleVars* s,
                                    SimpleReport* report, PrequentialLosses* before) override {
    return Iterate(data, family, s, report, before);
  }

  StateParts InitialAux(const VecIn& x0) const override {
    return {Vector::Zero(d_), Vector::Zero(d_), x0, x0, Vector::Zero(1)};
  }

  absl::Status ValidateAux(const StateParts& aux) const override {
    if (absl::Status st = CheckAuxCount(aux, kAuxCount, "ir_scg"); !st.ok()) return st;
    const char* what[] = {"the STORM estimate of grad f", "the STORM estimate of grad g",
                          "the previous iterate x_{t-1}", "the mean of the averaged iterates"};
    for (int i = kDf; i <= kMean; ++i) {
      if (absl::Status st = CheckAuxSize(aux, i, d_, what[i]); !st.ok()) return st;
    }
    return CheckAverageWeight(aux, kWeight);
  }

 private:
  // One iteration; `prequential` (with a StormPass only) receives f and g
  // at the decision from the same walks over the rows.
  absl::Status Iterate(const StepData& data, SimpleFamily& family, SimpleVars* s,
                       SimpleReport* report, PrequentialLosses* prequential) {
    StateParts& aux = s->aux;
    const int64_t k = s->t - 1;
    const double alpha = 2.0 / (static_cast<double>(k) + 2.0);
    const double keep = 1.0 - (o_.storm_weight > 0.0 ? o_.storm_weight : alpha);
    const BatchView upper = BatchView::All(data.upper);
    const BatchView inner = BatchView::All(data.inner);
    // The parts as the round found them (x_{k-1}, the estimates, the mean):
    // this copy shares them, so they stay readable while the round gives
    // aux new parts for what it writes (StateParts::Fresh: recycled
    // storage, no copy of the old contents).
    const StateParts before = aux;
    if (family.HasStormPass()) {
      // f's pass and g's together (one round trip for an oracle family).
      StormPassIn in[2];
      Vector* estimates[2];
      StormPassOut out[2];
      int passes = 0;
      int f_pass = -1, g_pass = -1;
      const auto add = [&](BatchRole role, const BatchView& view, int part) {
        StormPassIn& p = in[passes];
        p.x = &s->x;
        p.prev = k == 0 ? nullptr : &before[kPrevX];
        p.at = prequential != nullptr ? &s->decision : nullptr;
        p.keep = keep;
        p.role = role;
        p.view = &view;
        p.before = &before[part];
        p.value_x_read = role == BatchRole::kInner;  // the report's inner loss
        estimates[passes] = &aux.Fresh(part, d_, false);
        return passes++;
      };
      if (upper.rows.n > 0) f_pass = add(BatchRole::kUpper, upper, kDf);
      if (inner.rows.n > 0) g_pass = add(BatchRole::kInner, inner, kDg);
      family.StormPasses(absl::MakeConstSpan(in, static_cast<size_t>(passes)),
                         absl::MakeConstSpan(estimates, static_cast<size_t>(passes)),
                         absl::MakeSpan(out, static_cast<size_t>(passes)));
      // f (g) over no rows is 0 (FOnView).
      if (prequential != nullptr) {
        prequential->f = f_pass >= 0 ? out[f_pass].value_at : 0.0;
        prequential->g = g_pass >= 0 ? out[g_pass].value_at : 0.0;
      }
      report->inner_loss_before = g_pass >= 0 ? out[g_pass].value_x : 0.0;
    } else {
      if (!family.upper_reads_rows() || upper.rows.n > 0) {
        FOnView(family, s->x, upper, &cur_);
        if (k == 0) {
          aux[kDf] = cur_;
        } else {
          FOnView(family, before[kPrevX], upper, &prev_);
          Storm(cur_, prev_, keep, &aux[kDf]);
        }
      }
      report->inner_loss_before = GOnView(family, s->x, inner, &cur_);
      if (inner.rows.n > 0) {
        if (k == 0) {
          aux[kDg] = cur_;
        } else {
          GOnView(family, before[kPrevX], inner, &prev_);
          Storm(cur_, prev_, keep, &aux[kDg]);
        }
      }
    }

    const StateParts& now = aux;  // read without unsharing
    AveragedStep step;
    step.x = &s->x;
    step.prev = &aux.Fresh(kPrevX, d_, false);
    step.mean_before = &before[kMean];
    if (AverageIncrement(sigma_, k) > 0.0) step.mean_after = &aux.Fresh(kMean, d_, false);
    step.weight = &aux[kWeight][0];
    step.decision = &s->decision;
    report->fw_gap_estimate = StepAndAverage(z_, sigma_, k, alpha, now[kDf], now[kDg], &c_, &s_,
                                             step, &report->oracle_seconds);
    report->alpha = alpha;
    report->sigma = sigma_.Sigma(k);
    return absl::OkStatus();
  }

  // d <- cur + keep (d - prev)
  static void Storm(const Vector& cur, const Vector& prev, double keep, Vector* d) {
    *d -= prev;
    *d *= keep;
    *d += cur;
  }

  const AlgorithmOptions o_;
  const ConstraintSet z_;
  const int d_;
  const RegSchedule sigma_;
  Vector cur_, prev_, c_, s_;  // scratch, sized once
};

absl::StatusOr<std::unique_ptr<SimpleAlgorithm>> Create(const SimpleAlgorithmContext& ctx) {
  if (absl::Status st = RequireLmo(ctx.constraint, "ir_scg"); !st.ok()) return st;
  return std::unique_ptr<SimpleAlgorithm>(new IrScg(ctx));
}

absl::Status Check(const AlgorithmOptions& o) {
  // 0 is IR-FSCG's automatic varsigma = sqrt(L_g / L_f) (options.def): the
  // balance it strikes is horizon-free at p = 1/2 only, and IR-SCG's p is
  // below 1/2; its oracle family has no rows to estimate L_f, L_g from.
  if (!(o.reg_scale > 0.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("options.reg_scale: ", o.reg_scale,
                     " must be > 0 for ir_scg (0, automatic, is ir_fscg's; App. D: 10)"));
  }
  if (!(o.reg_decay < 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "options.reg_decay: ", o.reg_decay,
        " must be < 0.5 for ir_scg (Theorem 1 needs p in (0, 1/2); 1/4 balances the rates)"));
  }
  return absl::OkStatus();
}

// App. D, first experiment: sigma_t = 10 (t+1)^-1/4, alpha_t = 2/(t+2).
void Experiment(AlgorithmOptions* o) {
  o->reg_scale = 10.0;
  o->reg_decay = 0.25;
  o->storm_weight = 0.0;
}

}  // namespace

const SimpleAlgorithmEntry& IrScgAlgorithm() {
  static const SimpleAlgorithmEntry entry{
      {"ir_scg", ProblemClass::kSimpleBilevel,
       "IR-SCG (Giang-Tran et al., Alg. 1): STORM estimates on each step's rows, Frank-Wolfe "
       "step on sigma_t f + g, weighted average served",
       OptionSet{Opt::reg_scale, Opt::reg_decay, Opt::storm_weight}, nullptr, &Check, &Experiment,
       /*first_order=*/true},
      &Create};
  return entry;
}

}  // namespace f2obo
