// server/ids.h: the one check of session ids and group names.
#include "server/ids.h"

#include <gtest/gtest.h>

#include <string>

namespace f2obo::server {
namespace {

TEST(Ids, ASessionIdIsOneTo64OfLettersDigitsDotUnderscoreDash) {
  EXPECT_TRUE(IsSessionId("a"));
  EXPECT_TRUE(IsSessionId("grp.member_1-x"));
  EXPECT_TRUE(IsSessionId(std::string(64, 'z')));
  EXPECT_FALSE(IsSessionId(""));
  EXPECT_FALSE(IsSessionId(std::string(65, 'z')));
  for (const char* bad : {"a b", "a/b", "a:b", "caf\xc3\xa9", "a\nb", "a*"}) {
    EXPECT_FALSE(IsSessionId(bad)) << bad;
  }
}

TEST(Ids, AGroupNameIsOneTo32WithoutADotSoMembersRouteWithTheirGroup) {
  EXPECT_TRUE(IsGroupName("cmp_1-a"));
  EXPECT_TRUE(IsGroupName(std::string(32, 'g')));
  EXPECT_FALSE(IsGroupName(""));
  EXPECT_FALSE(IsGroupName(std::string(33, 'g')));
  EXPECT_FALSE(IsGroupName("grp.member"));  // '.' joins group and member
  EXPECT_FALSE(IsGroupName("g\xc3\xa9"));
  // Every group member's id "<group>.<member>" is a session id.
  EXPECT_TRUE(IsSessionId(std::string(32, 'g') + "." + std::string(31, 'm')));
}

}  // namespace
}  // namespace f2obo::server
