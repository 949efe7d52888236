// Session spec flags (create, stream --create, loadgen) and the
// CreateSessionRequest built from them.  Option flags left unset take the
// algorithm's defaults on the server (GetSession reports them filled in).
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/cli/cli.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"

ABSL_FLAG(std::string, id, "",
          "Id of the new session ([A-Za-z0-9._-]{1,64}); empty lets the server choose one");
ABSL_FLAG(std::string, family, "logistic_hpo",
          "Problem family: logistic_hpo | loss_tuning | ridge_hpo | quadratic");
ABSL_FLAG(std::optional<int>, features, std::nullopt,
          "d, features per row (sample families; default: from the dataset, 784 for loadgen)");
ABSL_FLAG(std::optional<int>, classes, std::nullopt,
          "C, number of classes (logistic_hpo, loss_tuning; default: from the dataset, 10 "
          "for loadgen)");
ABSL_FLAG(std::optional<int>, x_dim, std::nullopt, "quadratic only: d1, the dimension of x");
ABSL_FLAG(std::optional<int>, y_dim, std::nullopt, "quadratic only: d2, the dimension of y");
ABSL_FLAG(std::optional<double>, mu0, std::nullopt,
          "Ridge term mu_0 > 0 keeping g strongly convex in y (server default 1e-3)");
ABSL_FLAG(std::string, algorithm, "sf2obo",
          "Algorithm: f2obo | f2obo_sl | af2obo | sf2obo, or a baseline: obbo | sobow | aobo | "
          "fsobo | sobbo | sogd | svrb | pzobo | pzobo_s");
ABSL_FLAG(std::optional<double>, lambda1, std::nullopt, "lambda_1, the initial penalty");
ABSL_FLAG(std::optional<double>, tau, std::nullopt,
          "Penalty growth: lambda_{t+1} = (1 + 1/t)^tau lambda_t");
ABSL_FLAG(std::optional<double>, lambda_max, std::nullopt, "Cap on lambda_t (default: none)");
ABSL_FLAG(std::optional<double>, alpha, std::nullopt, "Inner z-step size alpha");
ABSL_FLAG(std::optional<bool>, alpha_auto, std::nullopt,
          "Estimate alpha = 1/L_g1 at every step");
ABSL_FLAG(std::optional<double>, beta, std::nullopt, "Inner y-step size beta");
ABSL_FLAG(std::optional<bool>, beta_auto, std::nullopt,
          "Estimate beta_t = 1/(2 lambda_t L_g1 + L_f1) at every step");
ABSL_FLAG(std::string, beta_scaling, "", "scaled (beta_t = beta / lambda_t) | fixed");
ABSL_FLAG(std::optional<double>, gamma, std::nullopt, "Upper step size gamma");
ABSL_FLAG(std::optional<int>, inner_steps, std::nullopt, "K, inner steps per round");
ABSL_FLAG(std::optional<double>, delta_y, std::nullopt, "af2obo: y-loop tolerance");
ABSL_FLAG(std::optional<double>, delta_z, std::nullopt, "af2obo: z-loop tolerance");
ABSL_FLAG(std::optional<int>, max_inner_iterations, std::nullopt,
          "af2obo: iteration cap of each inner loop");
ABSL_FLAG(std::optional<double>, alpha_decay, std::nullopt, "sf2obo: a in alpha_t = alpha / t^a");
ABSL_FLAG(std::optional<double>, beta_decay, std::nullopt,
          "sf2obo: b in beta_t = beta / (lambda1 t^b)");
ABSL_FLAG(std::optional<double>, batch_growth, std::nullopt,
          "sf2obo: B2 in B_t = ceil(batch_scale t^B2)");
ABSL_FLAG(std::optional<double>, hyper_batch_growth, std::nullopt,
          "sf2obo: B1 in Bhat_t = ceil(batch_scale t^B1)");
ABSL_FLAG(std::optional<double>, batch_scale, std::nullopt, "sf2obo: mini-batch scale");
ABSL_FLAG(std::string, inner_schedule, "", "sf2obo: fixed (K_t = K) | theory");
ABSL_FLAG(std::optional<double>, inner_schedule_scale, std::nullopt,
          "sf2obo: c_K of the theory schedule");
ABSL_FLAG(std::optional<int>, max_scheduled_inner_steps, std::nullopt,
          "sf2obo: cap on the theory schedule's K_t");
ABSL_FLAG(std::optional<int>, max_explicit_dim, std::nullopt,
          "svrb: largest x_dim and y_dim accepted (explicit matrices; server default 256, "
          "at most 2048)");
ABSL_FLAG(std::optional<double>, jacobian_clip, std::nullopt,
          "svrb: C, singular values of the grad2_xy g estimate clipped at C (default 100)");
ABSL_FLAG(std::optional<double>, hessian_floor, std::nullopt,
          "svrb: lambda, eigenvalues of the grad2_yy g estimate raised to lambda (default 1e-3)");
ABSL_FLAG(std::optional<int>, pz_directions, std::nullopt,
          "pzobo, pzobo_s: Q, Gaussian directions (perturbed inner paths) per step (default 10)");
ABSL_FLAG(std::optional<double>, pz_smoothing, std::nullopt,
          "pzobo, pzobo_s: mu, the perturbed paths run at x + mu u (default 0.01)");
ABSL_FLAG(std::string, box, "",
          "Feasible set X: 'lo,hi' (the box [lo, hi]^d) or 'none' (unconstrained); empty: "
          "[0, 0.1] for logistic_hpo, [0, 1] for ridge_hpo, unconstrained otherwise");
ABSL_FLAG(std::string, x0, "",
          "Initial decision x_1: comma-separated values, 'v*n' repeats v n times (e.g. "
          "loss_tuning with C = 10: --x0=1*10,0*10 starts at gamma = 1, Delta = 0); empty: "
          "the projection of 0 onto X");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the session's sampler and of the data stream");
ABSL_FLAG(std::optional<int>, exact_every, std::nullopt,
          "Exact (second-order) metrics every N-th step, 0 = off (server default: every step "
          "when y_dim <= 2000, else every 10th)");

namespace f2obo::cli {
namespace {

absl::Status SetX0(v1::SessionSpec* spec) {
  const std::string text = absl::GetFlag(FLAGS_x0);
  for (absl::string_view part : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    const std::vector<absl::string_view> vn = absl::StrSplit(part, absl::MaxSplits('*', 1));
    double v = 0;
    int n = 1;
    if (!absl::SimpleAtod(vn[0], &v) || (vn.size() == 2 && !absl::SimpleAtoi(vn[1], &n)) ||
        n < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("--x0: '", part, "' is not a number or 'value*count'"));
    }
    for (int i = 0; i < n; ++i) spec->add_x0(v);
  }
  return absl::OkStatus();
}

absl::Status SetConstraint(const std::string& family, v1::ConstraintSpec* c) {
  std::string box = absl::GetFlag(FLAGS_box);
  if (box.empty()) {
    if (family == "logistic_hpo") box = "0,0.1";
    if (family == "ridge_hpo") box = "0,1";
  }
  if (box.empty() || box == "none") {
    c->set_unconstrained(true);
    return absl::OkStatus();
  }
  const std::vector<std::string> parts = absl::StrSplit(box, ',');
  double lo = 0, hi = 0;
  if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &lo) || !absl::SimpleAtod(parts[1], &hi)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--box: '", box, "' is not 'lo,hi' or 'none'"));
  }
  c->mutable_box()->add_lo(lo);
  c->mutable_box()->add_hi(hi);
  return absl::OkStatus();
}

}  // namespace

const std::vector<std::string>& SpecFlagNames() {
  static const auto* names = new std::vector<std::string>{
      "id", "family", "features", "classes", "x_dim", "y_dim", "mu0", "algorithm", "lambda1",
      "tau", "lambda_max", "alpha", "alpha_auto", "beta", "beta_auto", "beta_scaling", "gamma",
      "inner_steps", "delta_y", "delta_z", "max_inner_iterations", "alpha_decay", "beta_decay",
      "batch_growth", "hyper_batch_growth", "batch_scale", "inner_schedule",
      "max_explicit_dim", "jacobian_clip", "hessian_floor", "pz_directions", "pz_smoothing",
      "inner_schedule_scale", "max_scheduled_inner_steps", "box", "x0", "seed", "exact_every"};
  return *names;
}

absl::StatusOr<v1::CreateSessionRequest> CreateRequestFromFlags(std::optional<int> features,
                                                                std::optional<int> classes) {
  v1::CreateSessionRequest req;
  req.set_session_id(absl::GetFlag(FLAGS_id));
  v1::SessionSpec* spec = req.mutable_spec();
  v1::FamilySpec* f = spec->mutable_family();
  f->set_name(absl::GetFlag(FLAGS_family));
  if (auto v = absl::GetFlag(FLAGS_features)) features = v;
  if (auto v = absl::GetFlag(FLAGS_classes)) classes = v;
  if (features) f->set_features(*features);
  if (classes) f->set_classes(*classes);
  if (auto v = absl::GetFlag(FLAGS_x_dim)) f->set_x_dim(*v);
  if (auto v = absl::GetFlag(FLAGS_y_dim)) f->set_y_dim(*v);
  if (auto v = absl::GetFlag(FLAGS_mu0)) f->set_mu0(*v);
  spec->set_algorithm(absl::GetFlag(FLAGS_algorithm));

  v1::AlgorithmOptions* o = spec->mutable_options();
#define F2OBO_CLI_OPTION(name) \
  if (auto v = absl::GetFlag(FLAGS_##name)) o->set_##name(*v)
  F2OBO_CLI_OPTION(lambda1);
  F2OBO_CLI_OPTION(tau);
  F2OBO_CLI_OPTION(lambda_max);
  F2OBO_CLI_OPTION(alpha);
  F2OBO_CLI_OPTION(alpha_auto);
  F2OBO_CLI_OPTION(beta);
  F2OBO_CLI_OPTION(beta_auto);
  F2OBO_CLI_OPTION(gamma);
  F2OBO_CLI_OPTION(inner_steps);
  F2OBO_CLI_OPTION(delta_y);
  F2OBO_CLI_OPTION(delta_z);
  F2OBO_CLI_OPTION(max_inner_iterations);
  F2OBO_CLI_OPTION(alpha_decay);
  F2OBO_CLI_OPTION(beta_decay);
  F2OBO_CLI_OPTION(batch_growth);
  F2OBO_CLI_OPTION(hyper_batch_growth);
  F2OBO_CLI_OPTION(batch_scale);
  F2OBO_CLI_OPTION(inner_schedule_scale);
  F2OBO_CLI_OPTION(max_scheduled_inner_steps);
  F2OBO_CLI_OPTION(max_explicit_dim);
  F2OBO_CLI_OPTION(jacobian_clip);
  F2OBO_CLI_OPTION(hessian_floor);
  F2OBO_CLI_OPTION(pz_directions);
  F2OBO_CLI_OPTION(pz_smoothing);
#undef F2OBO_CLI_OPTION
  if (const std::string s = absl::GetFlag(FLAGS_beta_scaling); !s.empty()) o->set_beta_scaling(s);
  if (const std::string s = absl::GetFlag(FLAGS_inner_schedule); !s.empty()) {
    o->set_inner_schedule(s);
  }
  if (absl::Status s = SetConstraint(f->name(), spec->mutable_constraint()); !s.ok()) return s;
  if (absl::Status s = SetX0(spec); !s.ok()) return s;
  spec->set_seed(absl::GetFlag(FLAGS_seed));
  if (auto v = absl::GetFlag(FLAGS_exact_every)) spec->mutable_metrics()->set_exact_every(*v);

  // Validate locally with the same core code the server runs, so a bad flag
  // is a usage error naming the field before anything is sent.
  absl::StatusOr<SessionConfig> config = ToSessionConfig(*spec);
  absl::Status valid = config.ok() ? ValidateSessionConfig(*config) : config.status();
  if (valid.ok() && spec->metrics().has_exact_every() && spec->metrics().exact_every() < 0) {
    valid = absl::InvalidArgumentError("metrics.exact_every: must be >= 0");
  }
  if (!valid.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("invalid session spec: ", valid.message()));
  }
  return req;
}

}  // namespace f2obo::cli
