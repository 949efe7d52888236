// Hyperparameters of the first-order online bilevel algorithms (SPEC
// section 3).  One flat struct serves every algorithm, Ceres-style: each
// algorithm reads the groups it needs, and Validate(algorithm) checks exactly
// those, naming the offending field.  Defaults are the paper's experimental
// settings (Appendix A) unless stated.
#ifndef F2OBO_CORE_OPTIONS_H_
#define F2OBO_CORE_OPTIONS_H_

#include <limits>
#include <string_view>

#include "absl/status/status.h"

namespace f2obo {

// How F2OBO / AF2OBO scale the y-step with lambda_t.
enum class BetaScaling {
  kScaled,  // beta_t = beta / lambda_t  (theory: beta_t <= 1/(2 lambda_t L_g1))
  kFixed,   // beta_t = beta
};

// SF2OBO's inner iteration count K_t.
enum class InnerSchedule {
  kFixed,   // K_t = inner_steps
  kTheory,  // K_t = ceil(c_K max(t^(b - tau), t^a) log(t + 1))  (Theorem 5.1)
};

struct AlgorithmOptions {
  // lambda_{t+1} = (1 + 1/t)^tau lambda_t, i.e. lambda_t = lambda1 t^tau,
  // capped at lambda_max (a cap departs from the theory; infinite = none).
  double lambda1 = 5.0;
  double tau = 1.0;
  double lambda_max = std::numeric_limits<double>::infinity();

  // Inner step sizes.  "auto": alpha = 1/L_g1 and
  // beta_t = 1/(2 lambda_t L_g1 + L_f1) from a per-step smoothness estimate.
  double alpha = 0.1;
  bool alpha_auto = false;
  double beta = 0.1;
  bool beta_auto = false;
  BetaScaling beta_scaling = BetaScaling::kScaled;

  double gamma = 0.001;  // upper step size (projected gradient on x)
  int inner_steps = 5;   // K (F2OBO, SF2OBO with a fixed schedule)

  // AF2OBO (Alg. 2): loop until ||grad_y g(z)|| <= delta_z and
  // ||grad_y L(y)|| <= delta_y; each loop stops at max_inner_iterations and
  // the round reports the cap hit.
  double delta_y = 0.5;
  double delta_z = 0.1;
  int max_inner_iterations = 10000;

  // SF2OBO (Alg. 3): alpha_t = alpha / t^a, beta_t = beta / (lambda1 t^b),
  // B_t = ceil(batch_scale t^B2), Bhat_t = ceil(batch_scale t^B1), each capped
  // at the batch's rows.  Defaults: Corollary 5.2 (a = 0, b = 1/6, B1 = B2 =
  // 2/3; it also takes tau = 1/6, set by the sf2obo registry defaults).
  double alpha_decay = 0.0;         // a
  double beta_decay = 1.0 / 6.0;    // b
  double batch_growth = 2.0 / 3.0;  // B2 (inner-loop mini-batches)
  double hyper_batch_growth = 2.0 / 3.0;  // B1 (hypergradient draws)
  double batch_scale = 1.0;
  InnerSchedule inner_schedule = InnerSchedule::kFixed;
  double inner_schedule_scale = 1.0;  // c_K
  int max_scheduled_inner_steps = 1000;

  // Second-order baselines (SPEC section 3 "Baselines";
  // core/algorithms/{obbo,sobow,aobo,fsobo,sobbo,sogd}.cc).  They ignore
  // the lambda fields and beta; they read alpha (the inner GD step on y, or
  // auto = 1/L_g1), gamma, inner_steps (K: obbo, sobow, sobbo) and:
  //   AID linear system grad2_yy g v = grad_y f, solved by
  //   linear_system_steps (M) steps of v <- v - eta (grad2_yy g v - grad_y f)
  //   with eta = linear_system_step, warm-started from the previous round's v
  //   (sobow, aobo, fsobo, sogd; fsobo fixes M = 1, sogd takes one step).
  int linear_system_steps = 5;       // M (paper Appendix A: 5 for AOBO, SOBOW)
  double linear_system_step = 0.1;   // eta (paper Appendix A: SOGD beta = 0.1)
  // The x-step uses the uniform mean of the last min(t, window) hypergradient
  // estimates (obbo, sobow, sobbo; registry defaults: sobow 10, sobbo 50).
  int window = 1;                    // w, at most kMaxWindow
  static constexpr int kMaxWindow = 1000;  // bounds the checkpointed state
  // SOGD: m_t = momentum m_{t-1} + (1 - momentum) h_t (paper Appendix A: 0.9).
  double momentum = 0.9;
  // Rows per mini-batch draw (sobbo, sogd), capped at the batch's rows.
  int sample_rows = 64;
  // AOBO: the y-loop runs until ||grad_y g_t(x_t, y)|| <= delta, at most
  // max_inner_iterations steps (paper Appendix A: delta = 0.1).
  double delta = 0.1;

  // SVRB (core/algorithms/svrb.cc) reads alpha (the y-step on the STORM
  // estimate of grad_y g, or auto), gamma, sample_rows (B rows per draw),
  // momentum (1 - a, the STORM weight on the previous estimate; default 0.9,
  // a = 0.1) and the fields below.  It builds explicit d1 x d2 and d2 x d2
  // derivative matrices, so sessions with x_dim or y_dim above
  // max_explicit_dim are refused when they are created.
  int max_explicit_dim = 256;    // at most kMaxExplicitDim
  static constexpr int kMaxExplicitDim = 2048;  // bounds memory and checkpoints
  double jacobian_clip = 100.0;  // C: singular values of the grad2_xy g estimate capped at C
  double hessian_floor = 1e-3;   // lambda: eigenvalues of the grad2_yy g estimate raised to lambda
  // PZOBO / PZOBO-S (core/algorithms/pzobo.cc) read alpha (inner GD step, or
  // auto), inner_steps (N GD steps per path), gamma, sample_rows (pzobo_s:
  // B rows per draw) and: Q Gaussian directions and the smoothing mu of the
  // perturbed paths x_t + mu u_j.
  int pz_directions = 10;        // Q, at most kMaxDirections
  static constexpr int kMaxDirections = 10000;  // bounds the round's cost
  double pz_smoothing = 0.01;    // mu

  // Checks the fields `algorithm` uses; the error names the field.
  absl::Status Validate(std::string_view algorithm) const;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_OPTIONS_H_
