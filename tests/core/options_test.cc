#include "core/options.h"

#include <functional>
#include <limits>

#include <gtest/gtest.h>

namespace f2obo {
namespace {

struct Case {
  const char* algorithm;
  const char* field;
  std::function<void(AlgorithmOptions*)> spoil;
};

TEST(AlgorithmOptions, EachInvalidOptionNamesItsField) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Case cases[] = {
      {"f2obo", "options.lambda1", [](AlgorithmOptions* o) { o->lambda1 = 0; }},
      {"f2obo", "options.tau", [](AlgorithmOptions* o) { o->tau = -1; }},
      {"f2obo", "options.lambda_max", [](AlgorithmOptions* o) { o->lambda_max = 1; }},
      {"f2obo", "options.alpha", [&](AlgorithmOptions* o) { o->alpha = nan; }},
      {"f2obo", "options.beta", [](AlgorithmOptions* o) { o->beta = -0.1; }},
      {"f2obo", "options.gamma", [](AlgorithmOptions* o) { o->gamma = 0; }},
      {"f2obo", "options.inner_steps", [](AlgorithmOptions* o) { o->inner_steps = 0; }},
      {"af2obo", "options.delta_y", [](AlgorithmOptions* o) { o->delta_y = 0; }},
      {"af2obo", "options.delta_z", [&](AlgorithmOptions* o) { o->delta_z = nan; }},
      {"af2obo", "options.max_inner_iterations",
       [](AlgorithmOptions* o) { o->max_inner_iterations = 0; }},
      {"sf2obo", "options.alpha_decay", [](AlgorithmOptions* o) { o->alpha_decay = -1; }},
      {"sf2obo", "options.beta_decay", [&](AlgorithmOptions* o) { o->beta_decay = nan; }},
      {"sf2obo", "options.batch_growth", [](AlgorithmOptions* o) { o->batch_growth = -2; }},
      {"sf2obo", "options.hyper_batch_growth",
       [](AlgorithmOptions* o) { o->hyper_batch_growth = -2; }},
      {"sf2obo", "options.batch_scale", [](AlgorithmOptions* o) { o->batch_scale = 0; }},
      {"sf2obo", "options.inner_schedule_scale",
       [](AlgorithmOptions* o) { o->inner_schedule_scale = 0; }},
      {"sf2obo", "options.max_scheduled_inner_steps",
       [](AlgorithmOptions* o) { o->max_scheduled_inner_steps = 0; }},
  };
  for (const Case& c : cases) {
    AlgorithmOptions o;
    ASSERT_TRUE(o.Validate(c.algorithm).ok());
    c.spoil(&o);
    const absl::Status s = o.Validate(c.algorithm);
    ASSERT_FALSE(s.ok()) << c.field;
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(std::string(s.message()).rfind(std::string(c.field) + ":", 0), 0u)
        << s.message();
  }
}

TEST(AlgorithmOptions, AutoStepSizesNeedNoValue) {
  AlgorithmOptions o;
  o.alpha = 0;
  o.beta = 0;
  o.alpha_auto = o.beta_auto = true;
  EXPECT_TRUE(o.Validate("f2obo").ok());
}

TEST(AlgorithmOptions, FieldsOfOtherAlgorithmsAreNotChecked) {
  AlgorithmOptions o;
  o.delta_y = -1;  // AF2OBO only
  o.batch_scale = 0;  // SF2OBO only
  EXPECT_TRUE(o.Validate("f2obo").ok());
}

}  // namespace
}  // namespace f2obo
