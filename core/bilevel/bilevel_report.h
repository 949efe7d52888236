// What one bilevel round did (the class-specific half of a StepReport):
// written by the bilevel algorithms, sent as the bilevel fields of the
// wire's RoundReport.
#ifndef F2OBO_CORE_BILEVEL_BILEVEL_REPORT_H_
#define F2OBO_CORE_BILEVEL_BILEVEL_REPORT_H_

#include <cstdint>

#include "core/bilevel/bilevel_family.h"
#include "core/types.h"

namespace f2obo {

struct BilevelReport {
  double lambda = 0.0;  // lambda_t used by the round
  double alpha = 0.0;   // z-step size used (alpha_t for SF2OBO)
  double beta = 0.0;    // y-step size used (beta_t)
  double gamma = 0.0;   // upper step size gamma_t used
  bool step_sizes_auto = false;
  double l_g1 = 0.0;  // smoothness estimates behind auto step sizes
  double l_f1 = 0.0;
  SmoothnessSource smoothness_source = SmoothnessSource::kNone;
  int z_iterations = 0;      // inner gradient steps on z this round
  int y_iterations = 0;      // inner gradient steps on y this round
  bool cap_hit = false;      // an adaptive loop stopped at max_inner_iterations
  double residual_z = 0.0;   // ||grad_y g_t(x_t, z_{t+1})||
  double residual_y = 0.0;   // ||grad_y L_t(x_t, y_{t+1}, lambda_t)||
  double grad_y_f = 0.0;     // ||grad_y f_t(x_t, y_{t+1})||
  Vector hypergradient;      // h_t, the round's estimate of grad F_t(x_t)
  int batch_size = 0;        // SF2OBO: B_t rows per inner draw (0: full)
  int hyper_batch_size = 0;  // SF2OBO: Bhat_t rows for h_t (0: full)
  int64_t rows_processed = 0;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_BILEVEL_BILEVEL_REPORT_H_
