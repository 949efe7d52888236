// ToBatch checks every number of every field of a wire batch, whatever the
// family reads.  The fields are found by walking v1::Batch's descriptor, so
// a double field added to the proto is tested (and must be checked) without
// being listed here.
#include "f2obo/v1/convert.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/batch.h"

namespace f2obo {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The path to one double field, from v1::Batch down.
using Path = std::vector<const FieldDescriptor*>;

void CollectDoubleFields(const Descriptor* d, Path prefix, std::vector<Path>* out) {
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    Path path = prefix;
    path.push_back(f);
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
      out->push_back(path);
    } else if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      CollectDoubleFields(f->message_type(), path, out);
    }
  }
}

// Makes `m` a well-formed 1 x 1 container for the one value the test adds,
// so that only that value can be wrong.
bool MakeWellFormed(Message* m) {
  const std::string type = m->GetDescriptor()->full_name();
  if (type == "f2obo.v1.DenseMatrix") {
    auto* d = static_cast<v1::DenseMatrix*>(m);
    d->set_rows(1);
    d->set_cols(1);
    return true;
  }
  if (type == "f2obo.v1.CsrMatrix") {
    auto* c = static_cast<v1::CsrMatrix*>(m);
    c->set_rows(1);
    c->set_cols(1);
    c->add_indptr(0);
    c->add_indptr(1);
    c->add_indices(0);
    return true;
  }
  return false;
}

// A batch whose only number is `value`, in the field at `path`; the
// expected field name in ToBatch's messages goes to `name`.
v1::Batch BatchWith(const Path& path, double value, std::string* name) {
  v1::Batch batch;
  Message* m = &batch;
  *name = "upper";
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    m = m->GetReflection()->MutableMessage(m, path[i]);
    EXPECT_TRUE(MakeWellFormed(m)) << "no well-formed " << m->GetDescriptor()->full_name()
                                   << ": teach MakeWellFormed how to build one";
    *name += "." + path[i]->name();
  }
  const FieldDescriptor* leaf = path.back();
  EXPECT_TRUE(leaf->is_repeated()) << leaf->full_name();
  m->GetReflection()->AddDouble(m, leaf, value);
  *name += "." + leaf->name();
  return batch;
}

TEST(ToBatch, RefusesEveryNonInputNumberInEveryDoubleFieldNamingFieldAndIndex) {
  std::vector<Path> paths;
  CollectDoubleFields(v1::Batch::descriptor(), {}, &paths);
  ASSERT_GE(paths.size(), 6u);  // dense, csr, targets, class_weights, m, c, d
  const double beyond = std::nextafter(kMaxInputMagnitude, 1e300);
  for (const Path& path : paths) {
    std::string name;
    SCOPED_TRACE(path.back()->full_name());
    for (double bad :
         {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity(),
          -std::numeric_limits<double>::infinity(), beyond, -beyond}) {
      const v1::Batch batch = BatchWith(path, bad, &name);
      const absl::StatusOr<Batch> decoded = ToBatch(batch, "upper");
      ASSERT_FALSE(decoded.ok()) << name << " = " << bad << " accepted";
      EXPECT_EQ(decoded.status().code(), absl::StatusCode::kInvalidArgument);
      EXPECT_THAT(std::string(decoded.status().message()), StartsWith(name + "[0]: "));
      EXPECT_THAT(std::string(decoded.status().message()),
                  HasSubstr(std::isfinite(bad) ? "is beyond the input bound" : "not finite"));
    }
    for (double fine : {kMaxInputMagnitude, -kMaxInputMagnitude, 0.0, 1e-300}) {
      const absl::StatusOr<Batch> decoded = ToBatch(BatchWith(path, fine, &name), "upper");
      EXPECT_TRUE(decoded.ok()) << name << " = " << fine << ": " << decoded.status();
    }
  }
}

TEST(CheckInputNumbers, NamesTheFirstOffenderAndItsRowAndColumn) {
  const std::vector<double> v = {1.0, 2.0, 3.0, -4e150, std::nan(""), 6.0};
  const absl::Status s = CheckInputNumbers(v.data(), 6, "inner.m.values", 2);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "inner.m.values[3]: -4e+150 is beyond the input bound |v| <= 1e+150 (row 1, "
            "column 1)");
  EXPECT_EQ(CheckInputNumbers(v.data() + 4, 2, "c").message(), "c[0]: not finite");
  EXPECT_TRUE(CheckInputNumbers(v.data(), 3, "c").ok());
  EXPECT_TRUE(CheckInputNumbers(nullptr, 0, "c").ok());
}

// A set option the algorithm does not read is refused by
// default and dropped for a spec a server wrote; the oracle family's
// default is named as such.
TEST(ToSessionConfig, ASetOptionTheAlgorithmDoesNotReadIsRefusedOrDropped) {
  v1::SessionSpec spec;
  spec.mutable_family()->set_name("simple_oracle");
  spec.mutable_family()->set_x_dim(3);
  spec.mutable_options()->set_window_rows(10);
  absl::StatusOr<SessionConfig> refused = ToSessionConfig(spec);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().message(),
            "options.window_rows: not read by algorithm 'ir_scg' (the simple_bilevel class "
            "default for family 'simple_oracle'); name an algorithm that reads it (ir_fscg, "
            "agm_bio) or leave it unset");
  absl::StatusOr<SessionConfig> dropped = ToSessionConfig(spec, UnreadOptions::kDrop);
  ASSERT_TRUE(dropped.ok()) << dropped.status();
  EXPECT_EQ(dropped->algorithm, "ir_scg");
  // Read: used.
  spec.clear_options();
  spec.mutable_options()->set_reg_decay(0.3);
  absl::StatusOr<SessionConfig> read = ToSessionConfig(spec);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->options.reg_decay, 0.3);
  // An unknown algorithm is CheckAlgorithm's to name, not this check's.
  spec.set_algorithm("nope");
  spec.mutable_options()->set_window_rows(10);
  EXPECT_TRUE(ToSessionConfig(spec).ok());
}

// lambda_schedule was added with `follow` as its default: a spec a server
// wrote before (stored, exported) lacks it and resumes with the schedule it
// ran, the paper's; a user's spec without it gets the default, and a spec
// that names it keeps it either way.
TEST(ToSessionConfig, AServerWrittenSpecWithoutLambdaScheduleKeepsThePapersSchedule) {
  v1::SessionSpec spec;
  spec.mutable_family()->set_name("quadratic");
  spec.mutable_family()->set_x_dim(2);
  spec.mutable_family()->set_y_dim(3);
  spec.set_algorithm("f2obo");
  absl::StatusOr<SessionConfig> created = ToSessionConfig(spec);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->options.lambda_schedule, LambdaSchedule::kFollow);
  absl::StatusOr<SessionConfig> stored = ToSessionConfig(spec, UnreadOptions::kDrop);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->options.lambda_schedule, LambdaSchedule::kPaper);
  // Written by this server: filled in, so it resumes as created.
  v1::SessionSpec filled = ToSessionSpec(*created, 0);
  ASSERT_TRUE(filled.options().has_lambda_schedule());
  absl::StatusOr<SessionConfig> reloaded = ToSessionConfig(filled, UnreadOptions::kDrop);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ(reloaded->options.lambda_schedule, LambdaSchedule::kFollow);
}

// inner_step_growth likewise (AF2OBO's secant steps, default 1.05): a
// spec a server wrote before lacks it and resumes with the smoothness step
// throughout (1).
TEST(ToSessionConfig, AServerWrittenSpecWithoutInnerStepGrowthKeepsTheSmoothnessStep) {
  v1::SessionSpec spec;
  spec.mutable_family()->set_name("quadratic");
  spec.mutable_family()->set_x_dim(2);
  spec.mutable_family()->set_y_dim(3);
  spec.set_algorithm("af2obo");
  absl::StatusOr<SessionConfig> created = ToSessionConfig(spec);
  ASSERT_TRUE(created.ok()) << created.status();
  EXPECT_EQ(created->options.inner_step_growth, 1.05);
  absl::StatusOr<SessionConfig> stored = ToSessionConfig(spec, UnreadOptions::kDrop);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(stored->options.inner_step_growth, 1.0);
  v1::SessionSpec filled = ToSessionSpec(*created, 0);
  ASSERT_TRUE(filled.options().has_inner_step_growth());
  absl::StatusOr<SessionConfig> reloaded = ToSessionConfig(filled, UnreadOptions::kDrop);
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ(reloaded->options.inner_step_growth, 1.05);
}

// A group's shared options go to the members that read them; the member's
// own win; an empty member algorithm is the shared spec's.
TEST(GroupMemberSpecs, SharedOptionsReachTheMembersThatReadThem) {
  v1::SessionSpec shared;
  shared.mutable_family()->set_name("quadratic");
  shared.set_algorithm("af2obo");
  shared.mutable_options()->set_beta(0.1);
  shared.mutable_options()->set_window(4);
  google::protobuf::RepeatedPtrField<v1::GroupMember> members;
  v1::GroupMember* a = members.Add();
  a->set_name("a");  // af2obo, the shared spec's
  v1::GroupMember* b = members.Add();
  b->set_name("b");
  b->set_algorithm("sobow");
  b->mutable_options()->set_window(7);
  absl::StatusOr<std::vector<v1::SessionSpec>> specs = GroupMemberSpecs(shared, members);
  ASSERT_TRUE(specs.ok()) << specs.status();
  ASSERT_EQ(specs->size(), 2u);
  EXPECT_EQ((*specs)[0].algorithm(), "af2obo");
  EXPECT_EQ((*specs)[0].options().beta(), 0.1);
  EXPECT_FALSE((*specs)[0].options().has_window());
  EXPECT_EQ((*specs)[1].algorithm(), "sobow");
  EXPECT_FALSE((*specs)[1].options().has_beta());
  EXPECT_EQ((*specs)[1].options().window(), 7);
  shared.mutable_options()->set_pz_directions(3);
  specs = GroupMemberSpecs(shared, members);
  ASSERT_FALSE(specs.ok());
  EXPECT_THAT(std::string(specs.status().message()),
              HasSubstr("spec.options.pz_directions: read by no member's algorithm (a: af2obo, "
                        "b: sobow)"));
}

}  // namespace
}  // namespace f2obo
