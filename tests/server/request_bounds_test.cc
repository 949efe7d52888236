// server/request_bounds.h: every string of a request, at any depth, is
// held to kMaxStringBytes, and the refusal names the field's path.
#include "server/request_bounds.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::server {
namespace {

using ::testing::HasSubstr;

TEST(RequestBounds, AStringAtTheBoundPassesOneByteMoreIsRefusedByName) {
  v1::StepRequest req;
  req.set_session_id(std::string(kMaxStringBytes, 's'));
  req.mutable_upper()->mutable_dense()->set_rows(1);
  req.mutable_upper()->mutable_dense()->add_values(1.0);
  EXPECT_TRUE(CheckStringBounds(req).ok());
  req.set_session_id(std::string(kMaxStringBytes + 1, 's'));
  const absl::Status s = CheckStringBounds(req);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("session_id: 257 bytes, beyond the bound of 256 bytes"));
}

TEST(RequestBounds, ANestedRepeatedStringIsNamedByItsPathAndIndex) {
  v1::CreateGroupRequest req;
  req.set_group_id("g");
  req.add_members()->set_name("a");
  req.add_members()->set_name("b");
  req.mutable_spec()->add_x_groups()->set_name("lambda");
  EXPECT_TRUE(CheckStringBounds(req).ok());
  req.mutable_members(1)->set_algorithm(std::string(300, 'a'));
  EXPECT_THAT(std::string(CheckStringBounds(req).message()),
              HasSubstr("members[1].algorithm: 300 bytes"));
  req.mutable_members(1)->set_algorithm("f2obo");
  req.mutable_spec()->add_x_groups()->set_name(std::string(1000, 'x'));
  EXPECT_THAT(std::string(CheckStringBounds(req).message()),
              HasSubstr("spec.x_groups[1].name: 1000 bytes"));
}

TEST(RequestBounds, TheSameTypeIsCheckedAgainAfterItsVerdictIsKnown) {
  // The per-type verdict "may hold strings" is memoized: a second request
  // of the type, now with a long string, is still refused.
  v1::CreateGroupRequest ok;
  ok.add_members()->set_name("a");
  EXPECT_TRUE(CheckStringBounds(ok).ok());
  v1::CreateGroupRequest bad;
  bad.add_members()->set_name(std::string(kMaxStringBytes + 1, 'n'));
  EXPECT_THAT(std::string(CheckStringBounds(bad).message()), HasSubstr("members[0].name: 257"));
}

}  // namespace
}  // namespace f2obo::server
