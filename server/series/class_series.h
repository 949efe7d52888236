// One problem class's per-session Prometheus series (label session_id).
// Each class has its file here and one line in class_series.cc, as each has
// its wire in proto/f2obo/v1/<class>_wire.cc: ServiceMetrics keeps the
// series every class shares (step, prequential loss, server-wide figures)
// and hands each metrics message to the series of its class.
//
// Thread-safety: ServiceMetrics calls these under its series lock.
#ifndef F2OBO_SERVER_SERIES_CLASS_SERIES_H_
#define F2OBO_SERVER_SERIES_CLASS_SERIES_H_

#include <memory>
#include <string>
#include <vector>

#include "f2obo/v1/f2obo.pb.h"
#include "server/metrics/registry.h"

namespace f2obo::server::series {

using Labels = std::vector<std::string>;

class ClassSeries {
 public:
  virtual ~ClassSeries() = default;
  // Whether `m` is of this series' class (by its report's class part).
  virtual bool Handles(const v1::StepMetrics& m) const = 0;
  // Whether every solve behind exact metrics `e` of this class met its
  // tolerance (f2obo_exact_metrics_unconverged_total counts the others).
  virtual bool ExactConverged(const v1::ExactMetrics& e) const = 0;
  // Sets session `id`'s series from one step's metrics.
  virtual void Update(const Labels& id, const v1::StepMetrics& m) = 0;
  // Drops session `id`'s series (the session was deleted).
  virtual void Remove(const Labels& id) = 0;
};

// The series of every class, registered in `r` (names fixed; a failure to
// register is a programming error and aborts).
std::vector<std::unique_ptr<ClassSeries>> NewClassSeries(metrics::Registry* r);

// Registration helper for the class files: aborts on a failure.
metrics::GaugeFamily* SessionGauge(metrics::Registry* r, const std::string& name,
                                   const std::string& help);

}  // namespace f2obo::server::series

#endif  // F2OBO_SERVER_SERIES_CLASS_SERIES_H_
