// How each problem class's published metrics are presented: its
// per-session Prometheus series and its fields of the dashboard's JSON
// (server/dashboard/api.h).  One entry per class (class_presentation.cc),
// each in its own file (<class>_presentation.cc), as each class's wire is in
// proto/f2obo/v1/<class>_wire.cc: ServiceMetrics and the dashboard keep what
// every class shares (step index, prequential loss, server-wide figures,
// the generic session fields) and hand the rest to the class's entry.  A new
// class adds its file and one line in class_presentation.cc.
#ifndef F2OBO_SERVER_PRESENTATION_CLASS_PRESENTATION_H_
#define F2OBO_SERVER_PRESENTATION_CLASS_PRESENTATION_H_

#include <memory>
#include <string>
#include <vector>

#include "core/problem_class.h"
#include "f2obo/v1/f2obo.pb.h"
#include "server/metrics/registry.h"
#include "server/presentation/json_writer.h"

namespace f2obo::server::presentation {

// One class's per-session series (label session_id, and more labels only
// from a bounded set).  Thread-safety: ServiceMetrics calls these under its
// series lock, only for live sessions.
class ClassSeries {
 public:
  virtual ~ClassSeries() = default;
  // Sets session `id`'s series from one published step of this class.
  virtual void Update(const std::string& id, const v1::StepMetrics& m) = 0;
  // Drops session `id`'s series (the session was deleted).
  virtual void Remove(const std::string& id) = 0;
};

struct ClassPresentation {
  ProblemClass id;
  // Whether a published step is of this class, by its report's class part
  // (RoundReport.problem_class).
  bool (*owns)(const v1::RoundReport& r);
  // Whether every solve behind exact metrics `e` met its tolerance
  // (f2obo_exact_metrics_unconverged_total counts the others).
  bool (*exact_converged)(const v1::ExactMetrics& e);
  // Registers the class's series in `r` (fixed names: a failure is a
  // programming error and aborts).
  std::unique_ptr<ClassSeries> (*new_series)(metrics::Registry* r);
  // The class's fields of one /api/metrics step and of one /api/sessions
  // entry, written into the object `w` has open.
  void (*step_json)(const v1::StepMetrics& m, JsonWriter& w);
  void (*session_json)(const v1::SessionInfo& info, JsonWriter& w);
};

// Every class's entry (the bilevel class's first).
const std::vector<const ClassPresentation*>& Presentations();
// The entry of the class of a published step: the one that owns its
// report, else (a report without a class part, which no server writes) the
// bilevel class's.
const ClassPresentation& PresentationOf(const v1::RoundReport& r);
// The entry of a session's class; nullptr for a class without one (never
// another class's: tests/server/class_entries_test.cc requires one for
// every class).
const ClassPresentation* PresentationOf(const v1::SessionInfo& info);

// For the class files: a gauge family labelled session_id (then `labels`),
// aborting on a registration failure.
metrics::GaugeFamily* SessionGauge(metrics::Registry* r, const std::string& name,
                                   const std::string& help,
                                   const std::vector<std::string>& labels = {});

// The running sums a published step carries: exact.running, or on a due
// step without exact metrics `running` (its coverage and estimate); null on
// a step whose metrics were not due.
const v1::RunningMetrics* RunningOf(const v1::StepMetrics& m);

// For the class files: the Horvitz-Thompson estimate of the class's regret
// sum over every due step and its standard error (RunningMetrics.estimate,
// .estimate_standard_error; core/metrics/sampling.h) as the gauges
// `<sum>_estimate` and `<sum>_standard_error` beside the sum's own gauge
// `<sum>`, so that a sum over few evaluated steps cannot pass for
// convergence.
class EstimateSeries {
 public:
  // `sum`: the sum's gauge name; `what`: the sum, for the help text.
  EstimateSeries(metrics::Registry* r, const std::string& sum, const std::string& what);
  void Update(const std::string& id, const v1::StepMetrics& m);
  void Remove(const std::string& id);

 private:
  metrics::GaugeFamily* const estimate_;
  metrics::GaugeFamily* const standard_error_;
};

}  // namespace f2obo::server::presentation

#endif  // F2OBO_SERVER_PRESENTATION_CLASS_PRESENTATION_H_
