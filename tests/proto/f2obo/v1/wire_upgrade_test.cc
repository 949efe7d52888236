// Replies an older server stored or exported, before RoundReport,
// ExactMetrics and RunningMetrics had their problem_class oneof, read by
// this one (f2obo/v1/wire_upgrade.h).  The old bytes are written with a
// copy of the old messages (old_layout.proto), from replies of every class
// whose every field holds its own value, so that a field lost or put in
// the wrong place on the way fails the comparison.
#include "f2obo/v1/wire_upgrade.h"

#include <string>
#include <vector>

#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "tests/proto/f2obo/v1/old_layout.h"

namespace f2obo::v1 {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::UnknownFieldSet;
using google::protobuf::util::MessageDifferencer;

const UnknownFieldSet& Unknown(const Message& m) { return m.GetReflection()->GetUnknownFields(m); }

// Sets every scalar field of `m` (not its messages) to a value of its own:
// numbers next, next + 1, ... (doubles + 0.25), bools true, enums their
// last value; repeated numbers two entries.
void FillScalars(Message* m, int* next) {
  const google::protobuf::Reflection* r = m->GetReflection();
  for (int i = 0; i < m->GetDescriptor()->field_count(); ++i) {
    const FieldDescriptor* f = m->GetDescriptor()->field(i);
    const int v = (*next)++;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_DOUBLE:
        if (f->is_repeated()) {
          r->AddDouble(m, f, v + 0.25);
          r->AddDouble(m, f, v + 0.5);
        } else {
          r->SetDouble(m, f, v + 0.25);
        }
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        if (!f->is_repeated()) r->SetInt64(m, f, v);
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        if (!f->is_repeated()) r->SetInt32(m, f, v);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        if (!f->is_repeated()) r->SetBool(m, f, true);
        break;
      case FieldDescriptor::CPPTYPE_ENUM:
        if (!f->is_repeated()) {
          r->SetEnumValue(m, f, f->enum_type()->value(f->enum_type()->value_count() - 1)->number());
        }
        break;
      default:
        break;
    }
  }
}

// `m`'s part of class `part` ("bilevel", "simple", "multitask"), filled.
Message* FillPart(Message* m, const std::string& part, int* next) {
  const FieldDescriptor* f = m->GetDescriptor()->FindFieldByName(part);
  EXPECT_NE(f, nullptr) << m->GetDescriptor()->full_name() << "." << part;
  EXPECT_EQ(f->containing_oneof()->name(), "problem_class");
  Message* p = m->GetReflection()->MutableMessage(m, f);
  FillScalars(p, next);
  return p;
}

// A reply of class `part` with every field of its report, exact metrics and
// running sums set.
StepReply Filled(const std::string& part) {
  StepReply r;
  r.set_session_id("s");
  r.set_t(4);
  r.add_x(0.5);
  r.add_x(-1.25);
  int next = 1;
  FillScalars(r.mutable_report(), &next);
  FillPart(r.mutable_report(), part, &next);
  FillScalars(r.mutable_latest_exact(), &next);
  Message* exact = FillPart(r.mutable_latest_exact(), part, &next);
  if (part == "multitask") {
    FillScalars(static_cast<MultitaskExactMetrics*>(exact)->add_tasks(), &next);
  }
  FillScalars(r.mutable_latest_exact()->mutable_running(), &next);
  FillPart(r.mutable_latest_exact()->mutable_running(), part, &next);
  return r;
}

class OldLayout : public ::testing::TestWithParam<std::string> {};

TEST_P(OldLayout, AReplyAnOlderServerWroteReadsAsTheSameReply) {
  const StepReply want = Filled(GetParam());
  std::string failures;
  StepReply read = test::ReadOldLayout(want, &failures);
  ASSERT_EQ(failures, "");
  if (GetParam() != "simple") {
    // The old layout really differs: its top-level fields are unknown here.
    EXPECT_FALSE(Unknown(read.report()).empty());
    EXPECT_FALSE(Unknown(read.latest_exact()).empty());
    EXPECT_FALSE(Unknown(read.latest_exact().running()).empty());
    EXPECT_FALSE(MessageDifferencer::Equals(read, want));
  }
  UpgradeStepReply(&read);
  EXPECT_TRUE(Unknown(read.report()).empty());
  EXPECT_TRUE(Unknown(read.latest_exact()).empty());
  EXPECT_TRUE(Unknown(read.latest_exact().running()).empty());
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(read, want)) << diff;
}

TEST_P(OldLayout, AReplyOfTheNewLayoutIsLeftAsItIs) {
  const StepReply want = Filled(GetParam());
  StepReply got = want;
  UpgradeStepReply(&got);
  EXPECT_TRUE(MessageDifferencer::Equals(got, want));
  EXPECT_EQ(got.SerializeAsString(), want.SerializeAsString());
}

INSTANTIATE_TEST_SUITE_P(EveryClass, OldLayout,
                         ::testing::Values("bilevel", "simple", "multitask"));

TEST(OldLayout, TheBilevelFieldsAtTheTopLevelGoToTheBilevelParts) {
  test::old_layout::StepReply old;
  old.set_t(3);
  old.mutable_report()->set_lambda(2.5);
  old.mutable_report()->set_upper_loss_before(0.75);
  old.mutable_latest_exact()->set_regret_term(0.125);
  old.mutable_latest_exact()->mutable_running()->set_blreg(4.0);
  old.mutable_latest_exact()->mutable_running()->set_evaluated_steps(2);
  StepReply r;
  ASSERT_TRUE(r.ParseFromString(old.SerializeAsString()));
  UpgradeStepReply(&r);
  EXPECT_EQ(r.report().bilevel().lambda(), 2.5);
  EXPECT_EQ(r.report().upper_loss_before(), 0.75);
  EXPECT_EQ(r.latest_exact().bilevel().regret_term(), 0.125);
  EXPECT_EQ(r.latest_exact().running().bilevel().blreg(), 4.0);
  EXPECT_EQ(r.latest_exact().running().evaluated_steps(), 2);
}

// A bilevel report whose fields were all zero has no bytes for them: still
// the bilevel class's (the only class without a part in the old layout).
TEST(OldLayout, AnOldReportWithNoClassFieldIsTheBilevelClasss) {
  test::old_layout::StepReply old;
  old.set_t(1);
  old.mutable_report()->set_rows_processed(10);
  StepReply r;
  ASSERT_TRUE(r.ParseFromString(old.SerializeAsString()));
  UpgradeStepReply(&r);
  EXPECT_TRUE(r.report().has_bilevel());
  EXPECT_EQ(r.report().rows_processed(), 10);
}

// The old multi-task wire set inner_converged and cg_converged both to
// "every task's solves converged".
TEST(OldLayout, AnUnconvergedMultitaskStepStaysUnconverged) {
  for (const bool converged : {false, true}) {
    test::old_layout::StepReply old;
    old.mutable_latest_exact()->set_inner_converged(converged);
    old.mutable_latest_exact()->set_cg_converged(converged);
    old.mutable_latest_exact()->mutable_multitask()->set_unconverged_tasks(converged ? 0 : 2);
    StepReply r;
    ASSERT_TRUE(r.ParseFromString(old.SerializeAsString()));
    UpgradeStepReply(&r);
    EXPECT_TRUE(r.latest_exact().has_multitask());
    EXPECT_EQ(r.latest_exact().multitask().converged(), converged);
  }
}

TEST(OldLayout, UnknownFieldsOfOtherNumbersAreKept) {
  test::old_layout::StepReply old;
  old.mutable_report()->set_lambda(1.5);
  StepReply r;
  ASSERT_TRUE(r.ParseFromString(old.SerializeAsString()));
  r.mutable_report()->GetReflection()->MutableUnknownFields(r.mutable_report())->AddVarint(999, 7);
  UpgradeStepReply(&r);
  EXPECT_EQ(r.report().bilevel().lambda(), 1.5);
  ASSERT_EQ(Unknown(r.report()).field_count(), 1);
  EXPECT_EQ(Unknown(r.report()).field(0).number(), 999);
}

}  // namespace
}  // namespace f2obo::v1
