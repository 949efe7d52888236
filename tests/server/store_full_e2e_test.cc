// A full store, through the real server: the store is capped with
// --max_store_bytes (SQLite's max_page_count, which fails a write exactly
// as a full disk does, SQLITE_FULL) and filled with sessions.  Then every
// RPC that needs room answers RESOURCE_EXHAUSTED and changes nothing; a
// deletion still goes through and makes room.  (Before, a full disk gave
// UNAVAILABLE on Step but INTERNAL on CreateSession.)
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "tests/server/e2e_client.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using testing::ServerProcess;

// A quadratic session with x of `x_dim` entries (each reply carries x) and
// y, z of `y_dim` (the stored state).
v1::CreateSessionRequest Quadratic(const std::string& id, int x_dim, int y_dim) {
  v1::CreateSessionRequest r;
  r.set_session_id(id);
  v1::SessionSpec* spec = r.mutable_spec();
  spec->mutable_family()->set_name("quadratic");
  spec->mutable_family()->set_x_dim(x_dim);
  spec->mutable_family()->set_y_dim(y_dim);
  spec->mutable_metrics()->set_exact_every(0);
  return r;
}

void FillQuadraticStep(int x_dim, int y_dim, v1::Batch* upper, v1::Batch* inner) {
  v1::DenseMatrix* m = inner->mutable_m();
  m->set_rows(y_dim);
  m->set_cols(x_dim);
  m->mutable_values()->Resize(y_dim * x_dim, 0.01);
  inner->mutable_c()->Resize(y_dim, 0.5);
  upper->mutable_d()->Resize(y_dim, -0.5);
}

v1::StepRequest Step(const std::string& id, int64_t t, int x_dim, int y_dim) {
  v1::StepRequest r;
  r.set_session_id(id);
  r.set_t(t);
  FillQuadraticStep(x_dim, y_dim, r.mutable_upper(), r.mutable_inner());
  return r;
}

void ExpectFull(const absl::Status& s, const std::string& what) {
  SCOPED_TRACE(what);
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("the store has no room for it"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("database or disk is full"));
}

TEST(StoreFullE2e, EveryRpcThatNeedsRoomAnswersResourceExhaustedAndADeletionMakesRoom) {
  constexpr int kX = 2000;  // 16 KB of x in every reply
  ServerProcess server({"--max_store_bytes=1048576"});
  ASSERT_TRUE(server.started()) << server.Stderr();
  client::ClientOptions options{server.target()};
  options.max_attempts = 1;
  client::Client c(options);
  ASSERT_TRUE(c.CreateSession(Quadratic("a", kX, 4)).ok());
  v1::CreateGroupRequest group;
  group.set_group_id("g");
  *group.mutable_spec() = Quadratic("", kX, 4).spec();
  for (const char* name : {"one", "two"}) {
    group.add_members()->set_name(name);
    group.mutable_members()->rbegin()->set_algorithm("f2obo");
  }
  ASSERT_TRUE(c.CreateGroup(group).ok());
  grpc::Status exported;
  const v1::SessionExport ex = testing::ExportSession(c, "a", &exported);
  ASSERT_TRUE(exported.ok()) << exported.error_message();

  // Fill the store: large sessions until one does not fit, then small ones.
  absl::Status refused;
  int fillers = 0;
  for (int y_dim : {15000, 100}) {
    for (int i = 0; i < 1000; ++i) {
      refused = c.CreateSession(Quadratic("fill" + std::to_string(fillers), 1, y_dim)).status();
      if (!refused.ok()) break;
      ++fillers;
    }
    ExpectFull(refused, "CreateSession of filler " + std::to_string(fillers));
  }
  ASSERT_GE(fillers, 2);
  EXPECT_EQ(c.GetSession("fill" + std::to_string(fillers)).status().code(),
            absl::StatusCode::kNotFound);

  // Full: each writing RPC is refused and changes nothing.
  ExpectFull(c.Step(Step("a", 1, kX, 4)).status(), "Step");
  EXPECT_EQ(c.GetSession("a")->next_t(), 1);
  const grpc::Status imported = testing::ImportSession(c, "b", ex);
  ExpectFull(
      absl::Status(static_cast<absl::StatusCode>(imported.error_code()), imported.error_message()),
      "ImportSession");
  EXPECT_EQ(c.GetSession("b").status().code(), absl::StatusCode::kNotFound);
  v1::CreateGroupRequest other = group;
  other.set_group_id("h");
  ExpectFull(c.CreateGroup(other).status(), "CreateGroup");
  EXPECT_EQ(c.GetGroup("h").status().code(), absl::StatusCode::kNotFound);
  v1::GroupStepRequest group_step;
  group_step.set_group_id("g");
  group_step.set_t(1);
  FillQuadraticStep(kX, 4, group_step.mutable_upper(), group_step.mutable_inner());
  // All members or none: the group step fails whole.
  ExpectFull(c.StepGroup(group_step).status(), "StepGroup");

  // Deleting frees pages without needing new ones: it goes through, and
  // what was refused now fits.
  ASSERT_TRUE(c.DeleteSession("fill0").ok());
  EXPECT_TRUE(c.Step(Step("a", 1, kX, 4)).ok());
  const auto retried = c.StepGroup(group_step);
  ASSERT_TRUE(retried.ok());
  for (const v1::MemberStepResult& m : retried->members()) EXPECT_EQ(m.code(), 0) << m.message();
  EXPECT_TRUE(testing::ImportSession(c, "b", ex).ok());
  EXPECT_TRUE(c.DeleteGroup("g").ok());
}

}  // namespace
}  // namespace f2obo
