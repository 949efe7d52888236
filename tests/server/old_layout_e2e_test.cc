// An older server's sessions, before RoundReport, ExactMetrics and
// RunningMetrics had their problem_class oneof, on a real server over
// loopback: an export of that layout imports, and a store file holding
// replies of that layout loads, and each answers a retried step with the
// reply as it was given then, now in the new layout.  The old replies are
// this server's own, written in the old layout with a copy of the old
// messages (tests/proto/f2obo/v1/old_layout.h).
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "client/client.h"
#include "google/protobuf/util/message_differencer.h"
#include "server/store/store_factory.h"
#include "tests/proto/f2obo/v1/old_layout.h"
#include "tests/server/e2e_client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using google::protobuf::util::MessageDifferencer;
using testing::ServerProcess;

constexpr int kSteps = 3;

testing::FamilyCase Quadratic() {
  for (const testing::FamilyCase& f : testing::AllFamilyCases()) {
    if (f.name == "quadratic") return f;
  }
  ADD_FAILURE() << "no quadratic family case";
  return {};
}

// Waits until step t's metrics of session `id` are published (so that the
// next step's reply carries exact metrics).
void AwaitMetrics(client::Client& c, const std::string& id, int64_t t) {
  std::unique_ptr<grpc::ClientContext> ctx = c.NewContext();
  v1::WatchMetricsRequest req;
  req.set_session_id(id);
  req.set_until_t(t);
  auto reader = c.stub().WatchMetrics(ctx.get(), req);
  v1::StepMetrics m;
  while (reader->Read(&m)) {
  }
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(m.t(), t);
}

// Creates session `id` (exact metrics at every step) and applies kSteps
// steps, each after the previous one's metrics are out (so that later
// replies carry exact metrics); returns the replies.
std::vector<v1::StepReply> CreateAndStep(client::Client& c, const std::string& id) {
  const testing::FamilyCase f = Quadratic();
  v1::CreateSessionRequest create;
  create.set_session_id(id);
  *create.mutable_spec() = testing::SpecFor(f, "f2obo", 5);
  create.mutable_spec()->mutable_metrics()->set_exact_every(1);
  std::vector<v1::StepReply> replies;
  EXPECT_TRUE(c.CreateSession(create).ok());
  for (int t = 1; t <= kSteps; ++t) {
    if (t > 1) AwaitMetrics(c, id, t - 1);
    absl::StatusOr<v1::StepReply> r = c.Step(testing::RequestFor(f, id, t));
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) replies.push_back(*r);
  }
  return replies;
}

// The replies of `ex` in the old layout, as an older server exported them.
void ToOldLayout(v1::SessionExport* ex) {
  for (v1::StepReply& r : *ex->mutable_replies()) {
    std::string failures;
    v1::StepReply old = test::ReadOldLayout(r, &failures);
    ASSERT_EQ(failures, "");
    ASSERT_NE(old.SerializeAsString(), r.SerializeAsString());  // really the old layout
    r = old;
  }
}

// A retry of step kSteps of `id` on `c` is answered with `want`, marked
// replayed, in the new layout.
void ExpectReplayed(client::Client& c, const std::string& id, v1::StepReply want) {
  absl::StatusOr<v1::StepReply> got = c.Step(testing::RequestFor(Quadratic(), id, kSteps));
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_TRUE(got->replayed());
  EXPECT_TRUE(got->report().has_bilevel());
  EXPECT_TRUE(got->latest_exact().has_bilevel());
  EXPECT_TRUE(got->latest_exact().running().has_bilevel());
  EXPECT_GT(got->latest_exact().running().bilevel().blreg(), 0.0);
  want.set_session_id(id);
  want.set_replayed(true);
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(*got, want)) << diff;
}

TEST(OldLayoutE2e, AnExportOfTheOldLayoutImportsAndAnswersRetriesInTheNewOne) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  const std::vector<v1::StepReply> replies = CreateAndStep(c, "src");
  ASSERT_EQ(replies.size(), static_cast<size_t>(kSteps));
  v1::SessionExport ex = testing::ExportSession(c, "src");
  ASSERT_EQ(ex.replies_size(), kSteps);
  ToOldLayout(&ex);
  const grpc::Status imported = testing::ImportSession(c, "imported", ex);
  ASSERT_TRUE(imported.ok()) << imported.error_message();
  ExpectReplayed(c, "imported", replies.back());
  // Exported again, its replies are of the new layout.
  const v1::SessionExport again = testing::ExportSession(c, "imported");
  ASSERT_EQ(again.replies_size(), kSteps);
  for (const v1::StepReply& r : again.replies()) {
    EXPECT_TRUE(r.report().has_bilevel());
    EXPECT_TRUE(r.report().GetReflection()->GetUnknownFields(r.report()).empty());
  }
}

TEST(OldLayoutE2e, AStoreWithRepliesOfTheOldLayoutLoadsAndAnswersRetriesInTheNewOne) {
  auto first = std::make_unique<ServerProcess>();
  ASSERT_TRUE(first->started()) << first->banner();
  const std::string dir = first->data_dir();
  std::vector<v1::StepReply> replies;
  v1::SessionExport ex;
  {
    client::Client c({first->target()});
    replies = CreateAndStep(c, "kept");
    ex = testing::ExportSession(c, "kept");
  }
  ASSERT_EQ(replies.size(), static_cast<size_t>(kSteps));
  first->Stop(SIGKILL);
  // The session as an older server stored it: the same state, its reply
  // rows in the old layout.
  ToOldLayout(&ex);
  {
    server::StoreConfig config;
    config.data_dir = dir;
    absl::StatusOr<std::unique_ptr<server::SessionStore>> store = server::OpenSessionStore(config);
    ASSERT_TRUE(store.ok()) << store.status();
    const absl::Status put =
        (*store)->PutSession("kept", ex.spec(), ex.state(), kSteps + 1,
                             std::vector<v1::StepReply>(ex.replies().begin(), ex.replies().end()));
    ASSERT_TRUE(put.ok()) << put;
  }
  ServerProcess second({}, dir);
  ASSERT_TRUE(second.started()) << second.banner();
  client::Client c({second.target()});
  ExpectReplayed(c, "kept", replies.back());
}

}  // namespace
}  // namespace f2obo
