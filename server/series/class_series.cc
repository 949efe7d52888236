#include "server/series/class_series.h"

#include <cstdio>
#include <cstdlib>

#include "server/series/series_factories.h"

namespace f2obo::server::series {

metrics::GaugeFamily* SessionGauge(metrics::Registry* r, const std::string& name,
                                   const std::string& help) {
  absl::StatusOr<metrics::GaugeFamily*> g = r->AddGauge(name, help, {"session_id"});
  if (!g.ok()) {
    std::fprintf(stderr, "f2obo-server: metric registration: %s\n",
                 std::string(g.status().message()).c_str());
    std::abort();
  }
  return *g;
}

std::vector<std::unique_ptr<ClassSeries>> NewClassSeries(metrics::Registry* r) {
  auto hypergradient = std::make_shared<HypergradientGauges>(r);
  std::vector<std::unique_ptr<ClassSeries>> out;
  out.push_back(NewBilevelSeries(hypergradient));
  out.push_back(NewSimpleSeries(r));
  out.push_back(NewMultitaskSeries(r, hypergradient));
  return out;
}

}  // namespace f2obo::server::series
