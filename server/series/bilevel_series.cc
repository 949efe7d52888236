// The bilevel class (x, y, z, lambda): its figures are the hypergradient
// ones (hypergradient_gauges.h).
#include "server/series/series_factories.h"

namespace f2obo::server::series {
namespace {

class BilevelSeries final : public ClassSeries {
 public:
  explicit BilevelSeries(std::shared_ptr<HypergradientGauges> gauges)
      : gauges_(std::move(gauges)) {}
  bool Handles(const v1::StepMetrics& m) const override {
    return !m.report().has_simple() && !m.report().has_multitask();
  }
  bool ExactConverged(const v1::ExactMetrics& e) const override {
    return HypergradientGauges::Converged(e);
  }
  void Update(const Labels& id, const v1::StepMetrics& m) override { gauges_->Update(id, m); }
  void Remove(const Labels& id) override { gauges_->Remove(id); }

 private:
  std::shared_ptr<HypergradientGauges> gauges_;
};

}  // namespace

std::unique_ptr<ClassSeries> NewBilevelSeries(std::shared_ptr<HypergradientGauges> gauges) {
  return std::make_unique<BilevelSeries>(std::move(gauges));
}

}  // namespace f2obo::server::series
