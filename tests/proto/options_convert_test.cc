// Every option is declared once (core/options.def) and
// reaches the wire from that declaration.  These tests fail when the proto's
// AlgorithmOptions and the declaration disagree (a field without an option,
// an option without a field, a type mismatch), and check that every option
// survives wire -> core -> wire and the CLI's text form.
#include "f2obo/v1/options_convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "google/protobuf/descriptor.h"

namespace f2obo {
namespace {

using google::protobuf::FieldDescriptor;
using ::testing::HasSubstr;

FieldDescriptor::CppType WireTypeOf(OptionType t) {
  switch (t) {
    case OptionType::kDouble:
      return FieldDescriptor::CPPTYPE_DOUBLE;
    case OptionType::kInt:
      return FieldDescriptor::CPPTYPE_INT32;
    case OptionType::kBool:
      return FieldDescriptor::CPPTYPE_BOOL;
    case OptionType::kChoice:
      break;
  }
  return FieldDescriptor::CPPTYPE_STRING;
}

TEST(OptionCoverage, EveryProtoOptionIsDeclaredWithItsType) {
  const google::protobuf::Descriptor* d = v1::AlgorithmOptions::descriptor();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    const OptionInfo* info = FindOption(f->name());
    ASSERT_NE(info, nullptr) << "proto field " << f->name()
                             << " has no declaration in core/options.def";
    EXPECT_EQ(f->cpp_type(), WireTypeOf(info->type)) << f->name();
    EXPECT_TRUE(f->has_presence()) << f->name() << " must be optional (absent = default)";
  }
}

TEST(OptionCoverage, EveryDeclaredOptionHasAProtoField) {
  for (const OptionInfo& info : OptionTable()) {
    EXPECT_NE(v1::AlgorithmOptions::descriptor()->FindFieldByName(info.name), nullptr)
        << info.name << " is declared in core/options.def but not in the proto";
  }
}

// A value different from the default that the option's rule accepts.
std::string OtherValueText(const OptionInfo& info) {
  switch (info.type) {
    case OptionType::kBool:
      return info.default_value != 0.0 ? "false" : "true";
    case OptionType::kChoice:
      return info.choices[info.default_value == 0.0 ? 1 : 0];
    case OptionType::kInt:
      return std::to_string(static_cast<int>(info.default_value) + 1);
    case OptionType::kDouble:
      break;
  }
  return std::isinf(info.default_value) ? "10" : info.default_value == 0 ? "0.5" : "0.015625";
}

TEST(OptionCoverage, EveryOptionRoundTripsThroughTheWireAndTheCliText) {
  for (const OptionInfo& info : OptionTable()) {
    v1::AlgorithmOptions wire;
    const std::string text = OtherValueText(info);
    ASSERT_TRUE(SetOptionFromText(info.name, text, &wire).ok()) << info.name;
    AlgorithmOptions core;
    ASSERT_TRUE(ApplyOptions(wire, &core).ok()) << info.name;
    EXPECT_EQ(OptionValueText(info, core),
              OptionValueText(info,
                              [&] {
                                AlgorithmOptions parsed;
                                if (info.type == OptionType::kChoice) {
                                  EXPECT_TRUE(SetOptionChoice(info, text, &parsed).ok());
                                } else if (info.type == OptionType::kBool) {
                                  EXPECT_TRUE(
                                      SetOptionNumber(info, text == "true" ? 1 : 0, &parsed).ok());
                                } else {
                                  EXPECT_TRUE(SetOptionNumber(info, std::stod(text), &parsed).ok());
                                }
                                return parsed;
                              }()))
        << info.name;
    EXPECT_NE(OptionValueText(info, core), OptionValueText(info, AlgorithmOptions{}))
        << info.name << ": the value did not arrive";
    OptionSet only;
    only.Add(info.id);
    v1::AlgorithmOptions back;
    FillOptions(core, only, &back);
    EXPECT_EQ(back.SerializeAsString(), wire.SerializeAsString()) << info.name;
  }
}

TEST(OptionCoverage, AbsentFieldsKeepTheDefaultsAndInfinityStaysAbsent) {
  AlgorithmOptions core;
  core.gamma = 0.5;
  ASSERT_TRUE(ApplyOptions(v1::AlgorithmOptions{}, &core).ok());
  EXPECT_EQ(core.gamma, 0.5);
  v1::AlgorithmOptions wire;
  FillOptions(AlgorithmOptions{}, OptionSet{Opt::lambda_max, Opt::gamma}, &wire);
  EXPECT_FALSE(wire.has_lambda_max()) << "no cap is sent as an absent field";
  EXPECT_TRUE(wire.has_gamma());
  EXPECT_FALSE(wire.has_tau()) << "only the options asked for";
}

TEST(OptionCoverage, BadWireValuesAreRefusedNamingTheOption) {
  v1::AlgorithmOptions wire;
  wire.set_beta_scaling("sideways");
  AlgorithmOptions core;
  EXPECT_THAT(std::string(ApplyOptions(wire, &core).message()),
              HasSubstr("options.beta_scaling: 'sideways' is not one of scaled | fixed"));
  EXPECT_THAT(std::string(SetOptionFromText("gamma", "fast", &wire).message()),
              HasSubstr("option 'gamma': cannot parse 'fast'"));
  EXPECT_THAT(std::string(SetOptionFromText("no_such", "1", &wire).message()),
              HasSubstr("unknown option 'no_such'"));
}

}  // namespace
}  // namespace f2obo
