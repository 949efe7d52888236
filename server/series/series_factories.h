// The classes' series factories, each defined in its class's file and
// listed once in class_series.cc.
#ifndef F2OBO_SERVER_SERIES_SERIES_FACTORIES_H_
#define F2OBO_SERVER_SERIES_SERIES_FACTORIES_H_

#include <memory>

#include "server/series/class_series.h"
#include "server/series/hypergradient_gauges.h"

namespace f2obo::server::series {

std::unique_ptr<ClassSeries> NewBilevelSeries(std::shared_ptr<HypergradientGauges> gauges);
std::unique_ptr<ClassSeries> NewSimpleSeries(metrics::Registry* r);
std::unique_ptr<ClassSeries> NewMultitaskSeries(metrics::Registry* r,
                                                std::shared_ptr<HypergradientGauges> gauges);

}  // namespace f2obo::server::series

#endif  // F2OBO_SERVER_SERIES_SERIES_FACTORIES_H_
