// AGM-BiO: J. Cao, R. Jiang, E. Yazdandoost Hamedani, A. Mokhtari, "An
// accelerated gradient method for convex smooth simple bilevel
// optimization", Algorithm 1, on a stream.  f and g are the means over the
// window of the last W upper and inner rows (options.window_rows;
// stream_windows.h).  Each step appends its rows, then runs one outer
// iteration k = t - 1 from (x_k, z_k, A_k):
//   a_k = gamma (k+1) / (4 L_f)                                   (line 4)
//   y_k = (A_k x_k + a_k z_k) / (A_k + a_k)                       (line 5)
//   g_k = g(w_{k+1}), w the accelerated projected-gradient run on g below
//   X_k = Z ∩ {z : g(y_k) + <grad g(y_k), z - y_k> <= g_k}        (eq. 7)
//   z_{k+1} = P_{X_k}(z_k - a_k grad f(y_k))                      (line 6)
//   x_{k+1} = (A_k x_k + a_k z_{k+1}) / (A_k + a_k)               (line 7)
//   A_{k+1} = A_k + a_k                                           (line 8)
// and serves x_{k+1}.  Theorem 4.4 (g with a Hölderian error bound of
// order r > 1, gamma = 1/(2 (L_g/L_f) T^((2r-2)/(2r-1)) + 2)) bounds
// |f(x_T) - f*| by O(T^(-2/(2r-1))) and g(x_T) - g* by O(T^(-2r/(2r-1)));
// for the paper's linear inverse problem r = 2: T^-2/3 and T^-4/3.
//
// g_k, exactly: the paper asks for g_k >= g* with g_k - g* <= 2 L_g
// ||x_0 - x*||^2/(k+1)^2 (its eq. 8) and suggests the values of an
// accelerated projected-gradient run on g.  The run here is FISTA with
// projection (Beck & Teboulle 2009) from w_0 = v_1 = x_0, theta_1 = 1,
// step 1/L_g, advanced by ONE iteration per step, before the cut is built:
//   w_{j} = P_Z(v_j - grad g(v_j)/L_g),
//   theta_{j+1} = (1 + sqrt(1 + 4 theta_j^2))/2,
//   v_{j+1} = w_j + ((theta_j - 1)/theta_{j+1}) (w_j - w_{j-1}),
// with j = k + 1 at outer iteration k, and g_k = g(w_{k+1}) on the current
// window: g_k >= min_Z g since w is in Z (so X_k always contains argmin_Z g
// of the window), and FISTA's bound 2 L_g ||x_0 - x*||^2/(k+2)^2 is within
// eq. 8's.
// Choices where the source leaves room:
//  * L_f, L_g: options.smoothness_f / smoothness_g when > 0, else the
//    family's SmoothnessF / SmoothnessG on the window (lambda_max of the
//    Gram matrix by power iteration, simple_families.h), recomputed every
//    step (the window moves).  A bound of 0 (no rows yet, or all-zero rows)
//    falls back to the other constant, or 1 if both are 0.
//  * gamma: options.agm_gamma when > 0, else the paper's experiment
//    (Theorem 4.4 with r = 2, App. D.2) 1/(2 (L_g/L_f) K^(2/3) + 2), K =
//    options.agm_horizon when set (the paper's 1000), with the current L_f,
//    L_g.  Steps beyond a set K keep going with the same formula (there is
//    no last iterate on a stream).
//  * A stream of unknown length (agm_horizon = 0, the default, with gamma
//    from the formula): the doubling trick.  Epoch e runs outer iterations
//    [K_0 (2^e - 1), K_0 (2^(e+1) - 1)) with horizon K_e = K_0 2^e, K_0 =
//    1000, and each epoch is a fresh Algorithm 1 (lines 1-2) from the point
//    reached: at its first step x_0 = z_0 = x, A_0 = 0, k counts from 0
//    again, and the run on g restarts at x too (w_0 = v_1 = x, theta_1 =
//    1), so that eq. 8's bound holds with the epoch's own x_0.  The
//    guarantees are the paper's for each epoch on its own: Theorem 4.4
//    bounds the epoch's last iterate by its horizon K_e, from a start no
//    worse than the previous epoch's end; the first epoch is the paper's
//    experiment step for step.  Why restart rather than let gamma shrink
//    within one run: Theorem 4.4 (and Lemma 4.3 before it) takes a_k =
//    gamma (k+1)/(4 L_f) with ONE gamma for k = 0..T; a gamma changed
//    mid-run is outside its proof, a restarted run is inside it.  The
//    epoch is a function of t alone, so the state holds nothing new.  A
//    gamma set by the user has no horizon to double: one epoch, as before.
//  * An empty X_k (ConstraintSet::ProjectOntoCut says FAILED_PRECONDITION;
//    possible only by rounding, since g_k >= min_Z g): z_{k+1} = P_Z(z_k -
//    a_k grad f(y_k)), the cut dropped for that step (the session goes on).
//    A step before any inner row has arrived also has no cut.
//  * A cut whose terms overflow (rows near the input bound, 1e150, on an
//    unbounded Z, where no row bound applies: g reaches ~1e300) is formed
//    divided by ||grad g(y_k)||_inf, the same halfspace.  If it still has
//    no finite form the step goes on without it, as for an empty X_k:
//    g_k = +inf makes X_k = Z (exact), and a g(y_k) or gradient that
//    overflowed leaves no linearization to cut with.  So rows the session
//    accepted never make its later steps fail at the cut.
//  * The run on g and the cut use the window as it is at the step, so on a
//    drifting stream both follow the drift; the paper's guarantees are for
//    a fixed data set (a window at least as large as the data).
// aux layout: [0] z_k (d), [1] w_{k} (d), [2] v_{k+1} (d), [3] {A_k,
// theta_{k+1}} (2), [4, ...) the windows (stream_windows.h: 3 parts and the
// windows' segments).
#include "core/simple/algorithms/agm_bio.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "core/simple/algorithms/aux_checks.h"
#include "core/simple/algorithms/ir_common.h"
#include "core/simple/algorithms/stream_windows.h"

namespace f2obo {
namespace {

enum Aux { kZ = 0, kW, kV, kScalars, kWindows };
constexpr int kAuxMin = kWindows + StreamWindows::kFixed;

// The first epoch's horizon under agm_horizon = 0: the paper's K (App. D.2).
constexpr int64_t kFirstHorizon = 1000;

// The epoch holding outer iteration k (>= 0) when the horizon doubles from
// kFirstHorizon: its first iteration and its horizon.
struct Epoch {
  int64_t start, horizon;
};
Epoch EpochOf(int64_t k) {
  Epoch e{0, kFirstHorizon};
  while (k - e.start >= e.horizon) {
    e.start += e.horizon;
    e.horizon *= 2;
  }
  return e;
}

class AgmBio final : public SimpleAlgorithm {
 public:
  explicit AgmBio(const SimpleAlgorithmContext& ctx)
      : o_(ctx.options),
        z_(ctx.constraint),
        d_(ctx.x_dim),
        windows_(ctx.options.window_rows),
        y_(d_),
        grad_f_(d_),
        grad_g_(d_),
        w_next_(d_) {}

  absl::Status Round(const StepData& data, SimpleFamily& family, SimpleVars* s,
                     SimpleReport* report) override {
    StateParts& aux = s->aux;
    int64_t k = s->t - 1;
    double horizon = static_cast<double>(o_.agm_horizon);
    if (o_.agm_gamma == 0.0 && o_.agm_horizon == 0) {
      const Epoch epoch = EpochOf(k);
      if (k == epoch.start && k > 0) Restart(s->x, &aux);
      k -= epoch.start;
      horizon = static_cast<double>(epoch.horizon);
    }
    if (absl::Status st = windows_.Append(&aux, kWindows, data); !st.ok()) return st;
    report->inner_loss_before = GOnView(family, s->x, BatchView::All(data.inner), nullptr);
    const BatchView upper = windows_.upper();
    const BatchView inner = windows_.inner();
    const bool has_inner = inner.rows.n > 0;

    double l_f = o_.smoothness_f;
    report->smoothness_source = SmoothnessSource::kNone;
    if (!(l_f > 0.0) && (!family.upper_reads_rows() || upper.rows.n > 0)) {
      l_f = family.SmoothnessF(upper);
      report->smoothness_source = SmoothnessSource::kPowerIteration;
    }
    double l_g = o_.smoothness_g;
    if (!(l_g > 0.0) && has_inner) {
      l_g = family.SmoothnessG(inner);
      report->smoothness_source = SmoothnessSource::kPowerIteration;
    }
    if (!(l_f > 0.0)) l_f = l_g > 0.0 ? l_g : 1.0;
    if (!(l_g > 0.0)) l_g = l_f;
    const double gamma = o_.agm_gamma > 0.0
                             ? o_.agm_gamma
                             : 1.0 / (2.0 * (l_g / l_f) * std::pow(horizon, 2.0 / 3.0) + 2.0);
    const double a = gamma * (static_cast<double>(k) + 1.0) / (4.0 * l_f);
    double& big_a = aux[kScalars][0];
    const double keep = big_a / (big_a + a), move = a / (big_a + a);
    y_ = keep * s->x + move * aux[kZ];

    // The cut <grad g(y_k), z> <= g_k - g(y_k) + <grad g(y_k), y_k>.
    double level = 0.0, rhs = 0.0;
    bool has_cut = has_inner;
    if (has_inner) {
      level = AdvanceRunOnG(family, inner, l_g, &aux, &report->oracle_seconds);
      const double g_y = family.G(y_, inner, &grad_g_);
      rhs = level - g_y + grad_g_.dot(y_);
      if (!std::isfinite(rhs)) has_cut = ScaleCut(level, g_y, &rhs);
    }
    FOnView(family, y_, upper, &grad_f_);
    Vector& z = aux[kZ];
    z -= a * grad_f_;
    w_next_ = z;  // the point to project, kept for the fallback
    const auto start = std::chrono::steady_clock::now();
    absl::Status cut = has_cut ? z_.ProjectOntoCut(grad_g_, rhs, &z)
                               : absl::FailedPreconditionError("no cut at this step");
    if (cut.code() == absl::StatusCode::kFailedPrecondition) {
      z = w_next_;
      z_.Project(&z);
    } else if (!cut.ok()) {
      return cut;
    }
    report->oracle_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    s->x = keep * s->x + move * z;
    big_a += a;
    s->decision = s->x;

    report->alpha = a;
    report->sigma = 0.0;
    report->fw_gap_estimate = 0.0;
    report->g_level = level;
    report->l_f = l_f;
    report->l_g = l_g;
    report->window_upper_rows = upper.rows.n;
    report->window_inner_rows = inner.rows.n;
    report->full_pass = true;
    return absl::OkStatus();
  }

  StateParts InitialAux(const VecIn& x0) const override {
    StateParts aux = {x0, x0, x0, (Vector(2) << 0.0, 1.0).finished()};
    windows_.AppendInitial(&aux);
    return aux;
  }

  absl::Status ValidateAux(const StateParts& aux) const override {
    if (absl::Status st = CheckAuxCountAtLeast(aux, kAuxMin, "agm_bio"); !st.ok()) return st;
    const char* what[] = {"z_k", "the run on g's iterate w", "the run on g's point v"};
    for (int i = kZ; i <= kV; ++i) {
      if (absl::Status st = CheckAuxSize(aux, i, d_, what[i]); !st.ok()) return st;
    }
    if (absl::Status st = CheckAuxSize(aux, kScalars, 2, "A_k and theta"); !st.ok()) return st;
    const double big_a = aux[kScalars][0], theta = aux[kScalars][1];
    if (!(std::isfinite(big_a) && big_a >= 0.0 && std::isfinite(theta) && theta >= 1.0)) {
      return absl::InvalidArgumentError(absl::StrCat("aux[", kScalars, "]: A_k = ", big_a,
                                                     " must be >= 0 and theta = ", theta,
                                                     " >= 1, both finite"));
    }
    return windows_.Validate(aux, kWindows);
  }
  absl::Status ValidateAuxRows(const StateParts& aux, const SimpleFamily& family) const override {
    return windows_.ValidateRows(aux, kWindows, family);
  }
  absl::Status UpgradeAux(StateParts* aux) const override {
    return windows_.Upgrade(aux, kWindows);
  }

 private:
  // A fresh Algorithm 1 from x (the windows kept): z_0 = x, A_0 = 0 and the
  // run on g from w_0 = v_1 = x, theta_1 = 1, as InitialAux(x) has them.
  static void Restart(const Vector& x, StateParts* aux) {
    (*aux)[kZ] = x;
    (*aux)[kW] = x;
    (*aux)[kV] = x;
    (*aux)[kScalars] << 0.0, 1.0;
  }

  // The cut's terms overflowed (rows near the input bound on an unbounded
  // Z: g ~ 1e300): the same halfspace divided by s = ||grad g(y_k)||_inf,
  // <grad/s, z> <= g_k/s - g(y_k)/s + <grad/s, y_k>, in grad_g_ and *rhs.
  // False when no finite form exists (see the header comment): g_k = +inf
  // (X_k = Z), or g(y_k) or its gradient not finite.
  bool ScaleCut(double level, double g_y, double* rhs) {
    if (!(std::isfinite(level) && std::isfinite(g_y) && grad_g_.allFinite())) return false;
    const double s = grad_g_.lpNorm<Eigen::Infinity>();
    if (!(s > 1.0)) return false;
    grad_g_ /= s;
    *rhs = level / s - g_y / s + grad_g_.dot(y_);
    return std::isfinite(*rhs);
  }

  // One FISTA iteration on g over the window (see the header comment);
  // returns g_k = g(w_{k+1}).
  double AdvanceRunOnG(SimpleFamily& family, const BatchView& inner, double l_g, StateParts* aux,
                       double* oracle_seconds) {
    Vector& w = (*aux)[kW];
    Vector& v = (*aux)[kV];
    double& theta = (*aux)[kScalars][1];
    family.G(v, inner, &grad_g_);
    w_next_ = v - grad_g_ / l_g;
    const auto start = std::chrono::steady_clock::now();
    z_.Project(&w_next_);
    *oracle_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double theta_next = 0.5 * (1.0 + std::sqrt(1.0 + 4.0 * theta * theta));
    v = w_next_ + ((theta - 1.0) / theta_next) * (w_next_ - w);
    w = w_next_;
    theta = theta_next;
    return family.G(w, inner, nullptr);
  }

  const AlgorithmOptions o_;
  const ConstraintSet z_;
  const int d_;
  StreamWindows windows_;
  Vector y_, grad_f_, grad_g_, w_next_;  // scratch, sized once
};

absl::StatusOr<std::unique_ptr<SimpleAlgorithm>> Create(const SimpleAlgorithmContext& ctx) {
  return std::unique_ptr<SimpleAlgorithm>(new AgmBio(ctx));
}

// App. D.2: a_k = gamma (k+1)/(4 L_f), gamma = 1/(2 (L_g/L_f) K^(2/3) + 2),
// K = 1000, L_f and L_g of the problem.
void Experiment(AlgorithmOptions* o) {
  o->agm_gamma = 0.0;
  o->agm_horizon = 1000;
  o->smoothness_f = 0.0;
  o->smoothness_g = 0.0;
}

}  // namespace

const SimpleAlgorithmEntry& AgmBioAlgorithm() {
  static const SimpleAlgorithmEntry entry{
      {"agm_bio", ProblemClass::kSimpleBilevel,
       "AGM-BiO (Cao et al., Alg. 1): accelerated steps on f projected onto Z cut by g's "
       "linearization at level g_k from a FISTA run on g, on a window of the last W rows",
       OptionSet{Opt::window_rows, Opt::agm_gamma, Opt::agm_horizon, Opt::smoothness_f,
                 Opt::smoothness_g},
       nullptr, nullptr, &Experiment, /*first_order=*/true, /*keeps_rows=*/true},
      &Create};
  return entry;
}

}  // namespace f2obo
