// Replies larger than one message (--max_message_bytes) over the real
// server: a decision of y with 10,000 entries (80 KB) and a step's reply of
// x with 9,000 (72 KB) against a 64 KiB limit are refused by the server
// naming their size, the limit and what to do (before, gRPC's transport
// failed them with a bare "Sent message larger than max"); a client whose
// own limit is the smaller says what to do too.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using ::testing::HasSubstr;
using testing::ServerProcess;

constexpr int kYDim = 10000;   // 80 KB of y
constexpr int kXDim = 9000;    // 72 KB of x
constexpr int kLimit = 65536;  // the least --max_message_bytes

absl::StatusOr<v1::SessionInfo> CreateQuadratic(client::Client& c, const std::string& id) {
  v1::CreateSessionRequest create;
  create.set_session_id(id);
  create.mutable_spec()->mutable_family()->set_name("quadratic");
  create.mutable_spec()->mutable_family()->set_x_dim(2);
  create.mutable_spec()->mutable_family()->set_y_dim(kYDim);
  create.mutable_spec()->set_algorithm("f2obo");
  return c.CreateSession(create);
}

// One CSR row with one entry: a small request for a session of a large x.
void OneSparseRow(v1::Batch* b) {
  v1::CsrMatrix* m = b->mutable_csr();
  m->set_rows(1);
  m->set_cols(kXDim);
  m->add_indptr(0);
  m->add_indptr(1);
  m->add_indices(7);
  m->add_values(1.0);
  b->add_targets(0.5);
}

TEST(MessageLimitE2e, RepliesBeyondTheLimitAreRefusedNamingTheirSizeAndWhatToDo) {
  ServerProcess server({absl::StrCat("--max_message_bytes=", kLimit)});
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  ASSERT_TRUE(CreateQuadratic(c, "q").ok());
  const absl::StatusOr<v1::Decision> d = c.GetDecision("q");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("GetDecision: the reply is 8"));
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("beyond this server's --max_message_bytes = 65536: raise "
                        "--max_message_bytes on the server and max_message_bytes on the client "
                        "to at least"));
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("ExportSessionStream"));

  // A step whose reply (x) is beyond the limit: applied, and said so.
  v1::CreateSessionRequest create;
  create.set_session_id("wide");
  create.mutable_spec()->mutable_family()->set_name("least_squares");
  create.mutable_spec()->mutable_family()->set_features(kXDim);
  create.mutable_spec()->set_algorithm("ir_scg");
  create.mutable_spec()->mutable_constraint()->mutable_l1_ball()->set_radius(2.0);
  ASSERT_TRUE(c.CreateSession(create).ok());
  v1::StepRequest step;
  step.set_session_id("wide");
  step.set_t(1);
  OneSparseRow(step.mutable_upper());
  OneSparseRow(step.mutable_inner());
  const absl::StatusOr<v1::StepReply> r = c.Step(step);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("Step: the reply is 7"));
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("the step WAS applied; raise --max_message_bytes"));
  EXPECT_THAT(std::string(r.status().message()),
              HasSubstr("send it again with the same t: it is answered from the reply cache"));
  EXPECT_EQ(c.GetSession("wide")->next_t(), 2);
  // The replies that fit are served as ever.
  EXPECT_TRUE(c.GetSession("q").ok());
  EXPECT_TRUE(c.ListSessions().ok());
}

TEST(MessageLimitE2e, AClientWhoseLimitIsTheSmallerSaysWhatToDo) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  client::ClientOptions options;
  options.target = server.target();
  options.max_message_bytes = kLimit;
  client::Client c(options);
  ASSERT_TRUE(CreateQuadratic(c, "q").ok());
  const absl::StatusOr<v1::Decision> d = c.GetDecision("q");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("larger than max"));
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("this client's max_message_bytes (ClientOptions::max_message_bytes) or "
                        "the server's --max_message_bytes: raise the smaller"));
}

}  // namespace
}  // namespace f2obo
