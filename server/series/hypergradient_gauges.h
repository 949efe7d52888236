// The f2obo_session_* figures of the classes with a hypergradient: the
// bilevel class and the multi-task class fill the same report and exact
// metrics fields with the same meaning (the proto's RoundReport and
// ExactMetrics), so both export them under the same names.
#ifndef F2OBO_SERVER_SERIES_HYPERGRADIENT_GAUGES_H_
#define F2OBO_SERVER_SERIES_HYPERGRADIENT_GAUGES_H_

#include "server/series/class_series.h"

namespace f2obo::server::series {

class HypergradientGauges {
 public:
  explicit HypergradientGauges(metrics::Registry* r);
  void Update(const Labels& id, const v1::StepMetrics& m);
  void Remove(const Labels& id);
  // Inner and CG solves (per task for multi-task sessions) all converged.
  static bool Converged(const v1::ExactMetrics& e);

 private:
  metrics::GaugeFamily* blreg_;
  metrics::GaugeFamily* regret_term_;
  metrics::GaugeFamily* hypergradient_error_;
  metrics::GaugeFamily* variation_;
  metrics::GaugeFamily* drift_;
  metrics::GaugeFamily* lambda_;
  metrics::GaugeFamily* inner_iterations_;
  metrics::GaugeFamily* value_;
};

}  // namespace f2obo::server::series

#endif  // F2OBO_SERVER_SERIES_HYPERGRADIENT_GAUGES_H_
