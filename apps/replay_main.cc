// f2obo-replay: streams a dataset as a drifting stream through one session
// in-process and prints per-step metrics.  The same session, batches and
// numbers as over the service, without a server; useful for demos, for
// choosing hyperparameters offline and for reproducing the paper's setups.
#include <cstdio>
#include <memory>
#include <string>
#include <variant>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_format.h"
#include "client/data/drift_stream.h"
#include "core/bilevel/bilevel_state.h"
#include "core/problem_registry.h"
#include "core/session.h"

ABSL_FLAG(std::string, data,
          "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz,"
          "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz",
          "Dataset: an IDX pair 'images,labels' (gzip ok), a .csv or a LibSVM file");
ABSL_FLAG(std::string, family, "logistic_hpo", "logistic_hpo | loss_tuning | ridge_hpo");
ABSL_FLAG(std::string, algorithm, "sf2obo", "f2obo | f2obo_sl | af2obo | sf2obo");
ABSL_FLAG(int, steps, 400, "Number of time steps to stream");
ABSL_FLAG(int, rows_per_step, 512, "Rows per step (split into upper and inner batches)");
ABSL_FLAG(double, upper_fraction, 0.5, "Share of each step's rows in the upper batch");
ABSL_FLAG(std::string, imbalance, "0.6,0.7,0.8,0.9",
          "Class-imbalance phases: rho per phase, class i kept w.p. rho^i ('' = none)");
ABSL_FLAG(int, phase_steps, 100, "Steps per imbalance phase");
ABSL_FLAG(std::string, label_noise, "", "Label noise schedule 'step:prob,...'");
ABSL_FLAG(int, metrics_every, 20, "Compute exact metrics every N steps (0 = never)");
ABSL_FLAG(int, print_every, 20, "Print a line every N steps");
ABSL_FLAG(double, gamma, 0.01, "Upper step size");
ABSL_FLAG(bool, auto_step_sizes, true, "alpha = 1/L_g1, beta_t = 1/(2 lambda_t L_g1 + L_f1)");
ABSL_FLAG(double, box_hi, 0.1, "Upper bound of the box X (logistic_hpo / ridge_hpo)");
ABSL_FLAG(double, mu0, 1e-3, "Ridge term keeping g strongly convex in y");
ABSL_FLAG(uint64_t, seed, 1, "Seed of the stream and of the session");

namespace f2obo {
namespace {

int Run() {
  const std::string family = absl::GetFlag(FLAGS_family);
  absl::StatusOr<data::Dataset> ds = data::ReadDataset(absl::GetFlag(FLAGS_data));
  if (!ds.ok()) {
    std::fprintf(stderr, "f2obo-replay: %s\n", std::string(ds.status().message()).c_str());
    return 2;
  }
  data::DriftOptions drift;
  drift.rows_per_step = absl::GetFlag(FLAGS_rows_per_step);
  drift.upper_fraction = absl::GetFlag(FLAGS_upper_fraction);
  drift.phase_steps = absl::GetFlag(FLAGS_phase_steps);
  drift.seed = absl::GetFlag(FLAGS_seed);
  auto rhos = data::ParseRhos(absl::GetFlag(FLAGS_imbalance));
  auto noise = data::ParseNoise(absl::GetFlag(FLAGS_label_noise));
  if (!rhos.ok() || !noise.ok()) {
    std::fprintf(stderr, "f2obo-replay: %s\n",
                 std::string((rhos.ok() ? noise.status() : rhos.status()).message()).c_str());
    return 2;
  }
  drift.imbalance_rhos = *rhos;
  drift.label_noise = *noise;
  const data::DriftingStream stream(*ds, drift);

  SessionConfig config;
  config.family.name = family;
  config.family.features = ds->features();
  config.family.classes = ds->classes;
  config.family.mu0 = absl::GetFlag(FLAGS_mu0);
  config.algorithm = absl::GetFlag(FLAGS_algorithm);
  config.options = DefaultAlgorithmOptions(config.algorithm);
  config.options.gamma = absl::GetFlag(FLAGS_gamma);
  config.options.alpha_auto = config.options.beta_auto = absl::GetFlag(FLAGS_auto_step_sizes);
  if (family != "loss_tuning")
    config.constraint = ConstraintSet::Box(0.0, absl::GetFlag(FLAGS_box_hi));
  config.seed = absl::GetFlag(FLAGS_seed);
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Create(config);
  if (!session.ok()) {
    std::fprintf(stderr, "f2obo-replay: %s\n", std::string(session.status().message()).c_str());
    return 2;
  }
  Session& s = **session;
  absl::StatusOr<std::unique_ptr<MetricsEvaluator>> evaluator = s.problem().NewMetricsEvaluator();
  if (!evaluator.ok()) {
    std::fprintf(stderr, "f2obo-replay: %s\n", std::string(evaluator.status().message()).c_str());
    return 2;
  }
  std::printf("f2obo-replay: %s on %s, %d rows x %d features, %d classes, %d steps\n",
              config.algorithm.c_str(), family.c_str(), ds->rows(), ds->features(), ds->classes,
              absl::GetFlag(FLAGS_steps));
  std::printf("%6s %8s %8s %9s %6s %10s %10s %10s %9s\n", "t", "preq.f", "preq.acc", "lambda",
              "inner", "regret_t", "BLReg", "hgrad.err", "round.ms");
  const int every = absl::GetFlag(FLAGS_metrics_every);
  const int print_every = std::max(1, absl::GetFlag(FLAGS_print_every));
  StepData previous;
  for (int t = 1; t <= absl::GetFlag(FLAGS_steps); ++t) {
    absl::StatusOr<StepData> drawn = stream.Make(t);
    if (!drawn.ok()) {
      std::fprintf(stderr, "f2obo-replay: %s\n", std::string(drawn.status().message()).c_str());
      return 2;
    }
    const StepData step = *std::move(drawn);
    const std::shared_ptr<const SessionState> before = s.snapshot();
    absl::StatusOr<StepReport> r = s.Step(step);
    if (!r.ok()) {
      std::fprintf(stderr, "f2obo-replay: %s\n", std::string(r.status().message()).c_str());
      return 1;
    }
    std::string metrics = absl::StrFormat("%10s %10s %10s", "-", "-", "-");
    if (every > 0 && t % every == 0) {
      absl::StatusOr<ClassMetrics> m =
          (*evaluator)->Evaluate(*before, *r, step, t > 1 ? &previous : nullptr);
      if (m.ok()) {
        s.AddMetrics(*m);
        const ExactMetrics& e = std::get<ExactMetrics>(*m);
        metrics = absl::StrFormat("%10.3e %10.3e %10.3e", e.regret_term, s.metrics().sums[kBlreg],
                                  e.hypergradient_error);
      }
    }
    if (t % print_every == 0 || t == 1) {
      std::printf("%6d %8.4f %8.3f %9.2f %6lld %s %9.2f\n", t, r->upper_loss_before,
                  r->accuracy_before.value_or(0.0), std::get<BilevelReport>(r->detail).lambda,
                  static_cast<long long>(r->inner_iterations), metrics.c_str(),
                  1e3 * r->round_seconds);
      std::fflush(stdout);
    }
    previous = step;
  }
  const Vector& x = s.state().x;
  std::printf("final x (first %d of %d): ", static_cast<int>(std::min<Eigen::Index>(x.size(), 10)),
              static_cast<int>(x.size()));
  for (Eigen::Index i = 0; i < std::min<Eigen::Index>(x.size(), 10); ++i)
    std::printf("%.4g ", x[i]);
  std::printf("\ninner iterations %lld, rows processed %lld, cap hits %lld\n",
              static_cast<long long>(s.state().inner_iterations),
              static_cast<long long>(s.state().rows_processed),
              static_cast<long long>(s.state().cap_hits));
  return 0;
}

}  // namespace
}  // namespace f2obo

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "Replays a dataset as a drifting stream through one online bilevel session.");
  absl::ParseCommandLine(argc, argv);
  return f2obo::Run();
}
