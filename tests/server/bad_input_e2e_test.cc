// Every bad request gets its precise status and changes nothing.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllFamilyCases;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;

struct BadCase {
  const char* name;
  std::function<void(v1::StepRequest*)> spoil;
  absl::StatusCode code;
  const char* needle;
};

std::vector<BadCase> BadStepCases() {
  return {
      {"unknown session", [](v1::StepRequest* r) { r->set_session_id("nobody"); },
       absl::StatusCode::kNotFound, "session 'nobody' not found"},
      {"wrong dimension",
       [](v1::StepRequest* r) {
         r->mutable_upper()->mutable_dense()->set_cols(5);
         r->mutable_upper()->mutable_dense()->mutable_values()->Truncate(5 *
                                                                         r->upper().dense().rows());
       },
       absl::StatusCode::kInvalidArgument, "upper batch: rows have 5 features"},
      {"NaN", [](v1::StepRequest* r) { r->mutable_inner()->mutable_dense()->set_values(7, NAN); },
       absl::StatusCode::kInvalidArgument, "inner.dense.values[7]: not finite (row 1, column 1)"},
      {"empty batch", [](v1::StepRequest* r) { r->mutable_upper()->Clear(); },
       absl::StatusCode::kInvalidArgument, "upper batch: empty batch"},
      {"label out of range", [](v1::StepRequest* r) { r->mutable_inner()->set_labels(2, 3); },
       absl::StatusCode::kInvalidArgument, "label[2] = 3 outside [0, 3)"},
      {"values do not fill the shape",
       [](v1::StepRequest* r) { r->mutable_inner()->mutable_dense()->add_values(1.0); },
       absl::StatusCode::kInvalidArgument, "inner.dense: 121 values for a 20 x 6 matrix"},
      {"oversized batch",
       [](v1::StepRequest* r) {
         auto* d = r->mutable_inner()->mutable_dense();
         d->set_rows(60);
         d->mutable_values()->Resize(60 * 6, 0.5);
       },
       absl::StatusCode::kResourceExhausted, "inner: 60 rows exceed max_batch_rows = 50"},
      {"malformed csr",
       [](v1::StepRequest* r) {
         v1::CsrMatrix* c = r->mutable_upper()->mutable_csr();
         c->set_rows(1);
         c->set_cols(6);
         c->add_indptr(0);
         c->add_indptr(2);
         c->add_indices(3);
         c->add_indices(1);
         c->add_values(1);
         c->add_values(1);
       },
       absl::StatusCode::kInvalidArgument, "upper.csr.indices: row 0 columns not strictly"},
  };
}

class BadInputE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<ServerProcess>(
        std::vector<std::string>{"--max_batch_rows=50", "--max_sessions=3"});
    ASSERT_TRUE(server_->started()) << server_->banner();
    client_ = std::make_unique<client::Client>(client::ClientOptions{server_->target()});
  }
  std::unique_ptr<ServerProcess> server_;
  std::unique_ptr<client::Client> client_;
};

TEST_F(BadInputE2e, EveryBadStepGetsItsStatusAndLeavesTheSessionUnchanged) {
  const FamilyCase f = AllFamilyCases()[2];  // logistic_hpo, 6 features, 3 classes
  v1::CreateSessionRequest create;
  create.set_session_id("victim");
  *create.mutable_spec() = SpecFor(f, "af2obo", 1);
  ASSERT_TRUE(client_->CreateSession(create).ok());
  ASSERT_TRUE(client_->Step(RequestFor(f, "victim", 1)).ok());
  const auto before = client_->GetDecision("victim");
  ASSERT_TRUE(before.ok());

  const std::vector<BadCase> cases = BadStepCases();
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    v1::StepRequest req = RequestFor(f, "victim", 2);
    c.spoil(&req);
    const auto r = client_->Step(req);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(c.needle));
    const auto after = client_->GetDecision("victim");
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(after->t(), 2);
    EXPECT_THAT(after->x(), ::testing::ElementsAreArray(before->x()));
    EXPECT_THAT(after->y(), ::testing::ElementsAreArray(before->y()));
  }
  // And the session still accepts the real step 2.
  EXPECT_TRUE(client_->Step(RequestFor(f, "victim", 2)).ok());
}

// The stream ends with the first bad request's status; every step
// acknowledged before it stays applied, the bad one changes nothing.
TEST_F(BadInputE2e, ABadRequestOnTheStepsStreamEndsItWithItsStatusAndChangesNothing) {
  const FamilyCase f = AllFamilyCases()[2];
  v1::CreateSessionRequest create;
  create.set_session_id("streamed");
  *create.mutable_spec() = SpecFor(f, "sf2obo", 1);
  ASSERT_TRUE(client_->CreateSession(create).ok());
  int64_t next_t = 1;
  for (const BadCase& c : BadStepCases()) {
    SCOPED_TRACE(c.name);
    const auto before = client_->GetDecision("streamed");
    ASSERT_TRUE(before.ok());
    ASSERT_EQ(before->t(), next_t);
    auto ctx = client_->NewContext();
    auto stream = client_->stub().Steps(ctx.get());
    v1::StepReply reply;
    // One good step, acknowledged, then the bad one.
    ASSERT_TRUE(stream->Write(RequestFor(f, "streamed", next_t)));
    ASSERT_TRUE(stream->Read(&reply));
    EXPECT_EQ(reply.t(), next_t);
    const auto acknowledged = client_->GetDecision("streamed");
    ASSERT_TRUE(acknowledged.ok());
    ++next_t;
    v1::StepRequest bad = RequestFor(f, "streamed", next_t);
    c.spoil(&bad);
    stream->Write(bad);  // may fail if the server already closed the stream
    stream->WritesDone();
    EXPECT_FALSE(stream->Read(&reply)) << "a reply to a bad request";
    const grpc::Status status = stream->Finish();
    EXPECT_EQ(static_cast<int>(status.error_code()), static_cast<int>(c.code))
        << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(c.needle));
    const auto after = client_->GetDecision("streamed");
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(after->t(), next_t);
    EXPECT_THAT(after->x(), ::testing::ElementsAreArray(acknowledged->x()));
    EXPECT_THAT(after->y(), ::testing::ElementsAreArray(acknowledged->y()));
  }
}

TEST_F(BadInputE2e, InvalidSessionRequestsNameTheFieldAndCreateNothing) {
  const FamilyCase f = AllFamilyCases()[2];
  v1::CreateSessionRequest bad;
  *bad.mutable_spec() = SpecFor(f, "f2obo", 1);
  bad.mutable_spec()->mutable_options()->set_gamma(-1);
  auto r = client_->CreateSession(bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("options.gamma"));

  *bad.mutable_spec() = SpecFor(f, "nope", 1);
  r = client_->CreateSession(bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("unknown algorithm 'nope'"));

  *bad.mutable_spec() = SpecFor(f, "f2obo", 1);
  bad.mutable_spec()->mutable_options()->set_beta_scaling("cubic");
  r = client_->CreateSession(bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("options.beta_scaling"));

  *bad.mutable_spec() = SpecFor(f, "f2obo", 1);
  bad.set_session_id("has space");
  r = client_->CreateSession(bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("session_id"));
  const auto list = client_->ListSessions();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->sessions_size(), 0);

  EXPECT_EQ(client_->GetSession("ghost").status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->DeleteSession("ghost").code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(client_->GetDecision("ghost").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(BadInputE2e, SessionLimitAndDuplicateIdsAreRefused) {
  const FamilyCase f = AllFamilyCases()[0];
  v1::CreateSessionRequest create;
  *create.mutable_spec() = SpecFor(f, "f2obo", 1);
  create.set_session_id("a");
  ASSERT_TRUE(client_->CreateSession(create).ok());
  EXPECT_EQ(client_->CreateSession(create).status().code(), absl::StatusCode::kAlreadyExists);
  create.clear_session_id();
  ASSERT_TRUE(client_->CreateSession(create).ok());
  ASSERT_TRUE(client_->CreateSession(create).ok());
  const auto over = client_->CreateSession(create);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(over.status().message()), HasSubstr("max_sessions = 3"));
}

// Every option counting iterations of a round (core/
// options.def's IterationCount) is held to the server's
// --max_inner_iterations, linear_system_steps and pz_directions included
// (linear_system_steps had no upper bound at all); at the cap it is
// accepted.
TEST(IterationCapE2e, EveryIterationCountIsHeldToTheServersCap) {
  ServerProcess server({"--max_inner_iterations=50"});
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  const struct {
    const char* algorithm;
    void (*set)(v1::AlgorithmOptions*, int);
    const char* name;
  } kCounts[] = {
      {"sobow", [](v1::AlgorithmOptions* o, int v) { o->set_linear_system_steps(v); },
       "linear_system_steps"},
      {"pzobo", [](v1::AlgorithmOptions* o, int v) { o->set_pz_directions(v); }, "pz_directions"},
      {"f2obo", [](v1::AlgorithmOptions* o, int v) { o->set_inner_steps(v); }, "inner_steps"},
      {"af2obo", [](v1::AlgorithmOptions* o, int v) { o->set_max_inner_iterations(v); },
       "max_inner_iterations"},
  };
  for (const auto& count : kCounts) {
    v1::CreateSessionRequest create;
    create.set_session_id(std::string("cap-") + count.algorithm);
    *create.mutable_spec() = SpecFor(AllFamilyCases()[0], count.algorithm, 1);
    count.set(create.mutable_spec()->mutable_options(), 51);
    const absl::StatusOr<v1::SessionInfo> refused = c.CreateSession(create);
    ASSERT_FALSE(refused.ok()) << count.name << " = 51 was accepted";
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << count.name;
    EXPECT_THAT(std::string(refused.status().message()),
                HasSubstr(std::string("options.") + count.name +
                          " = 51: above the server limit max_inner_iterations = 50"));
    count.set(create.mutable_spec()->mutable_options(), 50);
    const absl::StatusOr<v1::SessionInfo> accepted = c.CreateSession(create);
    EXPECT_TRUE(accepted.ok()) << count.name << ": " << accepted.status();
  }
}

}  // namespace
}  // namespace f2obo
