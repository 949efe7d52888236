#include "server/presentation/class_presentation.h"

#include <cstdio>
#include <cstdlib>

namespace f2obo::server::presentation {

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

}  // namespace f2obo::server::presentation
