// The option table (core/options.def) and the registry entries' own checks:
// every rule refuses what it should, naming the field; each algorithm
// checks exactly the options it reads; the guards against schedules that
// diverge by construction.
#include "core/options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "core/problem_registry.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A value the option's rule refuses (every rule refuses NaN; booleans and
// choices have no rule).
double Refused(const OptionInfo& /*info*/) { return std::nan(""); }

TEST(OptionTable, ListsEveryOptionOnceInDeclarationOrder) {
  const std::vector<OptionInfo>& table = OptionTable();
  ASSERT_EQ(static_cast<int>(table.size()), kOptionCount);
  for (size_t i = 0; i < table.size(); ++i) {
    EXPECT_EQ(static_cast<size_t>(table[i].id), i);
    EXPECT_EQ(FindOption(table[i].name), &table[i]);
    EXPECT_NE(std::string(table[i].help), "") << table[i].name;
  }
  EXPECT_EQ(FindOption("no_such_option"), nullptr);
}

TEST(OptionTable, DefaultsSatisfyTheirOwnRules) {
  const AlgorithmOptions defaults;
  for (const OptionInfo& info : OptionTable()) {
    EXPECT_TRUE(info.rule.Accepts(info.get(defaults))) << info.name;
    EXPECT_EQ(info.get(defaults), info.default_value) << info.name;
  }
}

TEST(OptionTable, SettersRoundTripAndRefuseValuesOfTheWrongKind) {
  AlgorithmOptions o;
  ASSERT_TRUE(SetOptionNumber(*FindOption("gamma"), 0.25, &o).ok());
  EXPECT_EQ(o.gamma, 0.25);
  ASSERT_TRUE(SetOptionNumber(*FindOption("inner_steps"), 7, &o).ok());
  EXPECT_EQ(o.inner_steps, 7);
  EXPECT_THAT(std::string(SetOptionNumber(*FindOption("inner_steps"), 2.5, &o).message()),
              StartsWith("options.inner_steps: 2.5 is not a 32-bit integer"));
  EXPECT_FALSE(SetOptionNumber(*FindOption("inner_steps"), 1e10, &o).ok());
  EXPECT_FALSE(SetOptionNumber(*FindOption("alpha_auto"), 2, &o).ok());
  ASSERT_TRUE(SetOptionChoice(*FindOption("beta_scaling"), "fixed", &o).ok());
  EXPECT_EQ(o.beta_scaling, BetaScaling::kFixed);
  EXPECT_EQ(OptionValueText(*FindOption("beta_scaling"), o), "fixed");
  EXPECT_THAT(std::string(SetOptionChoice(*FindOption("beta_scaling"), "wild", &o).message()),
              StartsWith("options.beta_scaling: 'wild' is not one of scaled | fixed"));
  EXPECT_FALSE(SetOptionNumber(*FindOption("beta_scaling"), 1, &o).ok());
  EXPECT_FALSE(SetOptionChoice(*FindOption("gamma"), "fast", &o).ok());
}

TEST(OptionRule, BoundsAreClosedOrOpenAsDeclared) {
  EXPECT_FALSE(Positive().Accepts(0.0));
  EXPECT_TRUE(Positive().Accepts(1e-300));
  EXPECT_TRUE(Positive().Accepts(kMaxOptionMagnitude));
  EXPECT_FALSE(Positive().Accepts(2 * kMaxOptionMagnitude));
  EXPECT_FALSE(Positive().Accepts(kInfinity));
  EXPECT_TRUE(PositiveOrInfinite().Accepts(kInfinity));
  EXPECT_FALSE(PositiveOrInfinite().Accepts(-kInfinity));
  EXPECT_TRUE(InRangeOpenHigh(0.0, 1.0).Accepts(0.0));
  EXPECT_FALSE(InRangeOpenHigh(0.0, 1.0).Accepts(1.0));
  EXPECT_FALSE(InRange(0.0, 4.0).Accepts(std::nan("")));
  EXPECT_TRUE(AnyValue().Accepts(std::nan("")));
}

// For every algorithm of every class, every option it reads, spoiled to a
// value its rule refuses, is refused naming the field; an option it does
// not read is not checked.  Iterates the registries, so a new algorithm or
// option is covered without editing this file.
TEST(AlgorithmOptions, EveryReadOptionIsValidatedAndOnlyThose) {
  for (const ProblemClassEntry& c : ProblemClasses()) {
    for (const AlgorithmInfo* info : c.algorithms()) {
      const AlgorithmOptions defaults = DefaultOptions(*info);
      ASSERT_TRUE(ValidateAlgorithmOptions(*info, defaults).ok()) << info->name;
      for (const OptionInfo& opt : OptionTable()) {
        if (opt.rule.any) continue;  // booleans and choices
        AlgorithmOptions o = defaults;
        opt.set(&o, Refused(opt));
        const absl::Status s = ValidateAlgorithmOptions(*info, o);
        if (info->reads.Has(opt.id)) {
          EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << info->name << " " << opt.name;
          EXPECT_THAT(std::string(s.message()), StartsWith(std::string("options.") + opt.name))
              << info->name;
        } else {
          EXPECT_TRUE(s.ok()) << info->name << " does not read " << opt.name << ": " << s;
        }
      }
    }
  }
}

TEST(AlgorithmOptions, EveryOptionIsReadBySomeAlgorithm) {
  for (const OptionInfo& opt : OptionTable()) {
    bool read = false;
    for (const ProblemClassEntry& c : ProblemClasses()) {
      for (const AlgorithmInfo* info : c.algorithms()) read = read || info->reads.Has(opt.id);
    }
    EXPECT_TRUE(read) << opt.name << " is read by no algorithm";
  }
}

TEST(AlgorithmOptions, AutoStepSizesNeedNoValue) {
  AlgorithmOptions o = DefaultAlgorithmOptions("f2obo");
  // 0, the default, is "automatic": valid, and auto.
  EXPECT_EQ(o.alpha, 0.0);
  EXPECT_EQ(o.beta, 0.0);
  EXPECT_TRUE(AlphaIsAuto(o) && BetaIsAuto(o));
  EXPECT_TRUE(ValidateOptionsFor("f2obo", o).ok());
  // alpha_auto / beta_auto waive the value's rule.
  o.alpha = -1;
  o.beta = -1;
  o.alpha_auto = o.beta_auto = true;
  EXPECT_TRUE(ValidateOptionsFor("f2obo", o).ok());
  o.beta_auto = false;
  EXPECT_FALSE(ValidateOptionsFor("f2obo", o).ok());
  o.beta = 0.1;
  EXPECT_FALSE(BetaIsAuto(o));
  EXPECT_TRUE(ValidateOptionsFor("f2obo", o).ok());
}

void ExpectRefused(const std::string& algorithm, const AlgorithmOptions& o,
                   const std::string& prefix, const std::string& reason) {
  const absl::Status s = ValidateOptionsFor(algorithm, o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << algorithm;
  EXPECT_THAT(std::string(s.message()), StartsWith(prefix)) << algorithm;
  EXPECT_THAT(std::string(s.message()), HasSubstr(reason)) << algorithm;
}

// Schedules that diverge by construction are refused.
TEST(AlgorithmOptions, Sf2oboRefusesTauAboveBWithoutACap) {
  AlgorithmOptions o = DefaultAlgorithmOptions("sf2obo");
  EXPECT_TRUE(ValidateOptionsFor("sf2obo", o).ok());  // Corollary 5.2: tau = b = 1/6
  o.tau = 1.0;                                        // Appendix A's tau, default b
  ExpectRefused("sf2obo", o, "options.tau: 1 > beta_decay", "grow without bound");
  o.beta_decay = 1.0;
  EXPECT_TRUE(ValidateOptionsFor("sf2obo", o).ok());
  o.beta_decay = 1.0 / 6.0;
  o.lambda_max = 100.0;
  EXPECT_TRUE(ValidateOptionsFor("sf2obo", o).ok()) << "a cap stops the growth";
}

TEST(AlgorithmOptions, FixedBetaWithGrowingLambdaAndNoCapIsRefused) {
  for (const char* a : {"f2obo", "f2obo_sl", "af2obo"}) {
    AlgorithmOptions o = DefaultAlgorithmOptions(a);
    o.beta = 0.1;  // a fixed beta (the default 0 is automatic)
    o.beta_scaling = BetaScaling::kFixed;
    ExpectRefused(a, o, "options.beta_scaling: fixed", "grow without bound");
    o.lambda_max = 50.0;
    EXPECT_TRUE(ValidateOptionsFor(a, o).ok()) << a;
    o.lambda_max = kInfinity;
    o.tau = 0.0;
    EXPECT_TRUE(ValidateOptionsFor(a, o).ok()) << a;
    o.tau = 1.0;
    o.beta_auto = true;  // auto beta_t = 1/(2 lambda_t L_g1 + L_f1) shrinks with lambda
    EXPECT_TRUE(ValidateOptionsFor(a, o).ok()) << a;
  }
}

TEST(AlgorithmOptions, OptionsWhoseFirstStepCannotBeFiniteAreRefused) {
  AlgorithmOptions o = DefaultAlgorithmOptions("f2obo");
  o.tau = 1e308;
  ExpectRefused("f2obo", o, "options.tau", "in [0, 4]");
  o = DefaultAlgorithmOptions("f2obo");
  o.lambda1 = 1e308;
  ExpectRefused("f2obo", o, "options.lambda1", "at most 1e+150");
  o = DefaultAlgorithmOptions("sogd");
  o.alpha = 1e308;
  ExpectRefused("sogd", o, "options.alpha", "at most 1e+150");
  o = DefaultAlgorithmOptions("f2obo");
  o.lambda_max = 1.0;  // below lambda1 = 5
  ExpectRefused("f2obo", o, "options.lambda_max", "must be >= lambda1");
}

TEST(AlgorithmOptions, SingleLoopAlgorithmsKeepTheirLoopCounts) {
  AlgorithmOptions o = DefaultAlgorithmOptions("f2obo_sl");
  EXPECT_EQ(o.inner_steps, 1);
  EXPECT_DOUBLE_EQ(o.tau, 1.0 / 3.0);
  o.inner_steps = 2;
  ExpectRefused("f2obo_sl", o, "options.inner_steps", "single-loop");
  o = DefaultAlgorithmOptions("fsobo");
  o.linear_system_steps = 3;
  ExpectRefused("fsobo", o, "options.linear_system_steps", "single-loop");
}

TEST(AlgorithmOptions, UnknownAlgorithmsAreRefusedByName) {
  EXPECT_THAT(std::string(ValidateOptionsFor("sgd", AlgorithmOptions{}).message()),
              HasSubstr("algorithm: unknown algorithm 'sgd'"));
}

}  // namespace
}  // namespace f2obo
