#include "server/presentation/class_presentation.h"

#include <cstdio>
#include <cstdlib>

namespace f2obo::server::presentation {

// One per class, each defined in its <class>_presentation.cc.
const ClassPresentation& BilevelPresentation();
const ClassPresentation& SimplePresentation();
const ClassPresentation& MultitaskPresentation();

const std::vector<const ClassPresentation*>& Presentations() {
  static const auto* all = new std::vector<const ClassPresentation*>{
      &BilevelPresentation(), &SimplePresentation(), &MultitaskPresentation()};
  return *all;
}

const ClassPresentation& PresentationOf(const v1::RoundReport& r) {
  for (const ClassPresentation* p : Presentations()) {
    if (p->owns(r)) return *p;
  }
  return BilevelPresentation();
}

const ClassPresentation* PresentationOf(const v1::SessionInfo& info) {
  for (const ClassPresentation* p : Presentations()) {
    if (info.spec().problem_class() == ProblemClassName(p->id)) return p;
  }
  return nullptr;
}

metrics::GaugeFamily* SessionGauge(metrics::Registry* r, const std::string& name,
                                   const std::string& help,
                                   const std::vector<std::string>& labels) {
  std::vector<std::string> names = {"session_id"};
  names.insert(names.end(), labels.begin(), labels.end());
  absl::StatusOr<metrics::GaugeFamily*> g = r->AddGauge(name, help, names);
  if (!g.ok()) {
    std::fprintf(stderr, "f2obo-server: metric registration: %s\n",
                 std::string(g.status().message()).c_str());
    std::abort();
  }
  return *g;
}

const v1::RunningMetrics* RunningOf(const v1::StepMetrics& m) {
  if (m.has_exact()) return &m.exact().running();
  if (m.has_running()) return &m.running();
  return nullptr;
}

EstimateSeries::EstimateSeries(metrics::Registry* r, const std::string& sum,
                               const std::string& what)
    : estimate_(SessionGauge(
          r, sum + "_estimate",
          "Horvitz-Thompson estimate of " + what +
              " over every due step: the sum of r_t / p_t over the steps evaluated, each "
              "sampled with probability p_t (f2obo_session_exact_probability); equals " +
              sum + " while every due step is evaluated.")),
      standard_error_(SessionGauge(r, sum + "_standard_error",
                                   "Standard error of " + sum +
                                       "_estimate: sqrt of the sum of (1 - p_t) / p_t^2 r_t^2 "
                                       "over the steps evaluated (0 while p_t = 1).")) {}

void EstimateSeries::Update(const std::string& id, const v1::StepMetrics& m) {
  const v1::RunningMetrics* running = RunningOf(m);
  if (running == nullptr) return;
  estimate_->WithLabels({id}).Set(running->estimate());
  standard_error_->WithLabels({id}).Set(running->estimate_standard_error());
}

void EstimateSeries::Remove(const std::string& id) {
  estimate_->Remove({id});
  standard_error_->Remove({id});
}

}  // namespace f2obo::server::presentation
