// Input that could brick a session or be served back broken, against the
// real server: every number of every field
// is an input number (finite, |v| <= 1e150) whether the family reads it or
// not, and an import's reply cache is checked like the server's own.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "client/client.h"
#include "grpcpp/create_channel.h"
#include "tests/server/e2e_client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllFamilyCases;
using ::testing::ElementsAreArray;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

class HostileInputE2e : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(server_.started()) << server_.banner(); }

  void Create(const std::string& id, const v1::SessionSpec& spec) {
    v1::CreateSessionRequest create;
    create.set_session_id(id);
    *create.mutable_spec() = spec;
    const auto info = client_.CreateSession(create);
    ASSERT_TRUE(info.ok()) << info.status();
  }

  // `bad` is refused with INVALID_ARGUMENT containing `needle`, the
  // session's decision is exactly what it was, and `good` (the same step
  // index) is then applied.
  void ExpectRefusedThenSteppable(const v1::StepRequest& bad, const v1::StepRequest& good,
                                  const std::string& needle) {
    const auto before = client_.GetDecision(bad.session_id());
    ASSERT_TRUE(before.ok());
    const auto r = client_.Step(bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(needle));
    const auto after = client_.GetDecision(bad.session_id());
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(after->t(), before->t());
    EXPECT_THAT(after->x(), ElementsAreArray(before->x()));
    EXPECT_THAT(after->y(), ElementsAreArray(before->y()));
    const auto applied = client_.Step(good);
    ASSERT_TRUE(applied.ok()) << applied.status();
    EXPECT_FALSE(applied->replayed());
  }

  v1::SessionExport Export(const std::string& id) {
    grpc::Status status;
    v1::SessionExport ex = testing::ExportSession(client_, id, &status);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return ex;
  }

  grpc::Status Import(const std::string& id, const v1::SessionExport& ex) {
    return testing::ImportSession(client_, id, ex);
  }

  ServerProcess server_;
  client::Client client_{client::ClientOptions{server_.target()}};
};

// A quadratic step with inner c = [1e300, 0] on a 2-entry y.  Were it
// accepted, it would leave y ~ 9e299, and every later valid step would be
// refused as non-finite, forever.
v1::StepRequest QuadraticStep(int64_t t, double c0) {
  v1::StepRequest r;
  r.set_session_id("quad");
  r.set_t(t);
  v1::DenseMatrix* m = r.mutable_inner()->mutable_m();
  m->set_rows(2);
  m->set_cols(1);
  m->add_values(0.5);
  m->add_values(-0.25);
  r.mutable_inner()->add_c(c0);
  r.mutable_inner()->add_c(0.0);
  r.mutable_upper()->add_d(1.0);
  r.mutable_upper()->add_d(-1.0);
  return r;
}

TEST_F(HostileInputE2e, QuadraticInnerCOf1e300IsRefusedAndTheSessionStaysSteppable) {
  v1::SessionSpec spec;
  spec.mutable_family()->set_name("quadratic");
  spec.mutable_family()->set_x_dim(1);
  spec.mutable_family()->set_y_dim(2);
  spec.set_algorithm("f2obo");
  ASSERT_NO_FATAL_FAILURE(Create("quad", spec));
  ASSERT_TRUE(client_.Step(QuadraticStep(1, 0.3)).ok());
  ExpectRefusedThenSteppable(QuadraticStep(2, 1e300), QuadraticStep(2, 0.3),
                             "inner.c[0]: 1e+300 is beyond the input bound |v| <= 1e+150");
  // Within the bound per number, but mu * |M| * |c| beyond it.
  v1::StepRequest product = QuadraticStep(3, 1e150);
  product.mutable_inner()->mutable_m()->set_values(0, 10.0);
  ExpectRefusedThenSteppable(product, QuadraticStep(3, 0.3),
                             "family.mu * max(1, max|M|) * max(1, max|c|)");
  for (int64_t t = 4; t <= 6; ++t) ASSERT_TRUE(client_.Step(QuadraticStep(t, 0.3)).ok());
}

// A loss_tuning step with class_weights = 1e308 on the upper batch.
TEST_F(HostileInputE2e, LossTuningClassWeightsOf1e308AreRefusedAndTheSessionStaysSteppable) {
  const FamilyCase f = AllFamilyCases()[4];  // loss_tuning, 6 features, 3 classes
  ASSERT_EQ(f.name, "loss_tuning");
  ASSERT_NO_FATAL_FAILURE(Create("tuned", SpecFor(f, "f2obo", 1)));
  ASSERT_TRUE(client_.Step(RequestFor(f, "tuned", 1)).ok());
  v1::StepRequest bad = RequestFor(f, "tuned", 2);
  for (int j = 0; j < 3; ++j) bad.mutable_upper()->add_class_weights(j == 0 ? 1e308 : 1.0);
  ExpectRefusedThenSteppable(bad, RequestFor(f, "tuned", 2),
                             "upper.class_weights[0]: 1e+308 is beyond the input bound");
  for (int64_t t = 3; t <= 5; ++t) ASSERT_TRUE(client_.Step(RequestFor(f, "tuned", t)).ok());
}

// Fields the family does not read are checked all the same (targets on
// loss_tuning, d, M, c, class_weights on logistic_hpo), each
// refused naming the field and the index.
TEST_F(HostileInputE2e, EveryNumberOfEveryBatchFieldIsCheckedWhetherTheFamilyReadsItOrNot) {
  struct Case {
    int family;  // index into AllFamilyCases()
    std::function<void(v1::StepRequest*)> spoil;
    const char* needle;
  };
  const auto add_m = [](v1::Batch* b, double v) {
    b->mutable_m()->set_rows(1);
    b->mutable_m()->set_cols(2);
    b->mutable_m()->add_values(0.0);
    b->mutable_m()->add_values(v);
  };
  const std::vector<Case> cases = {
      {4,
       [](v1::StepRequest* r) {
         for (int i = 0; i < r->upper().dense().rows(); ++i) r->mutable_upper()->add_targets(i);
         r->mutable_upper()->set_targets(3, kNaN);
       },
       "upper.targets[3]: not finite"},
      {2, [](v1::StepRequest* r) { r->mutable_upper()->add_d(kNaN); }, "upper.d[0]: not finite"},
      {2, [&](v1::StepRequest* r) { add_m(r->mutable_inner(), kInf); },
       "inner.m.values[1]: not finite (row 0, column 1)"},
      {2,
       [](v1::StepRequest* r) {
         r->mutable_inner()->add_c(1.0);
         r->mutable_inner()->add_c(-1e200);
       },
       "inner.c[1]: -1e+200 is beyond the input bound"},
      {2,
       [](v1::StepRequest* r) {
         for (double w : {1.0, kNaN, 1.0}) r->mutable_upper()->add_class_weights(w);
       },
       "upper.class_weights[1]: not finite"},
      {2, [](v1::StepRequest* r) { r->mutable_inner()->mutable_dense()->set_values(7, 2e150); },
       "inner.dense.values[7]: 2e+150 is beyond the input bound"},
      {3, [](v1::StepRequest* r) { r->mutable_upper()->mutable_csr()->set_values(0, -kInf); },
       "upper.csr.values[0]: not finite"},
      {1, [](v1::StepRequest* r) { r->mutable_upper()->add_class_weights(kNaN); },
       "upper.class_weights[0]: not finite"},
      {0,
       [](v1::StepRequest* r) {
         v1::DenseMatrix* d = r->mutable_upper()->mutable_dense();
         d->set_rows(1);
         d->set_cols(1);
         d->add_values(kNaN);
       },
       "upper.dense.values[0]: not finite (row 0, column 0)"},
  };
  const std::vector<FamilyCase> families = AllFamilyCases();
  std::vector<int64_t> next_t(families.size(), 0);
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    SCOPED_TRACE(c.needle);
    const FamilyCase& f = families[c.family];
    const std::string id = f.name;
    if (next_t[c.family] == 0) {
      ASSERT_NO_FATAL_FAILURE(Create(id, SpecFor(f, "f2obo", 3)));
      next_t[c.family] = 1;
    }
    v1::StepRequest bad = RequestFor(f, id, next_t[c.family]);
    c.spoil(&bad);
    ExpectRefusedThenSteppable(bad, RequestFor(f, id, next_t[c.family]), c.needle);
    ++next_t[c.family];
  }
}

// The spec's numbers are input numbers too; the bounds the proto documents
// as possibly infinite (no cap, no bound) stay allowed.
TEST_F(HostileInputE2e, EveryNumberOfTheSpecIsAnInputNumber) {
  const FamilyCase f = AllFamilyCases()[1];  // ridge_hpo, 5 features, box [0, 1]
  const auto refused = [&](const v1::SessionSpec& spec, const std::string& needle) {
    v1::CreateSessionRequest create;
    create.set_session_id("spec");
    *create.mutable_spec() = spec;
    const auto r = client_.CreateSession(create);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
    EXPECT_THAT(std::string(r.status().message()), HasSubstr(needle));
  };
  v1::SessionSpec spec = SpecFor(f, "f2obo", 1);
  for (double v : {0.0, 1e200, 0.0, 0.0, 0.0}) spec.add_y0(v);
  refused(spec, "spec.y0[1]: 1e+200 is beyond the input bound");
  spec = SpecFor(f, "f2obo", 1);
  spec.mutable_options()->set_lambda1(kNaN);
  refused(spec, "spec.options.lambda1: not finite");
  spec = SpecFor(f, "f2obo", 1);
  spec.mutable_family()->set_mu0(kInf);
  refused(spec, "spec.family.mu0: not finite");
  spec = SpecFor(f, "f2obo", 1);
  spec.mutable_constraint()->mutable_box()->set_lo(0, kNaN);
  refused(spec, "spec.constraint.box.lo[0]: not finite");
  EXPECT_EQ(client_.ListSessions()->sessions_size(), 0);

  spec = SpecFor(f, "f2obo", 1);
  spec.mutable_constraint()->mutable_box()->set_hi(0, kInf);
  spec.mutable_options()->set_lambda_max(kInf);
  v1::CreateSessionRequest create;
  create.set_session_id("unbounded");
  *create.mutable_spec() = spec;
  const auto ok = client_.CreateSession(create);
  EXPECT_TRUE(ok.ok()) << ok.status();
}

// An import with a NaN in a cached reply's x would be served back as a
// replayed reply.  So each entry is checked: x's size, every
// number, t in [1, next_t) and increasing.
TEST_F(HostileInputE2e, ImportChecksEveryReplyCacheEntryAndNamesTheField) {
  const FamilyCase f = AllFamilyCases()[2];  // logistic_hpo: x has 6 entries
  ASSERT_NO_FATAL_FAILURE(Create("source", SpecFor(f, "f2obo", 5)));
  for (int64_t t = 1; t <= 6; ++t) ASSERT_TRUE(client_.Step(RequestFor(f, "source", t)).ok());
  const v1::SessionExport ex = Export("source");
  ASSERT_EQ(ex.replies_size(), 6);

  struct Case {
    std::function<void(v1::SessionExport*)> spoil;
    const char* needle;
  };
  const std::vector<Case> cases = {
      {[](v1::SessionExport* e) { e->mutable_replies(3)->set_x(0, kNaN); },
       "session.replies[3].x[0]: not finite"},
      {[](v1::SessionExport* e) { e->mutable_replies(2)->add_x(0.5); },
       "session.replies[2].x: has 7 entries, expected x_dim = 6"},
      {[](v1::SessionExport* e) {
         e->mutable_replies(5)->mutable_report()->mutable_bilevel()->set_lambda(kInf);
       },
       "session.replies[5].report.bilevel.lambda: not finite"},
      {[](v1::SessionExport* e) {
         e->mutable_replies(1)->mutable_latest_exact()->mutable_bilevel()->set_regret_term(kNaN);
       },
       "session.replies[1].latest_exact.bilevel.regret_term: not finite"},
      {[](v1::SessionExport* e) { e->mutable_replies(0)->set_t(0); },
       "session.replies[0].t = 0: outside [1, 7)"},
      {[](v1::SessionExport* e) { e->mutable_replies(5)->set_t(7); },
       "session.replies[5].t = 7: outside [1, 7)"},
      {[](v1::SessionExport* e) { e->mutable_replies(4)->set_t(4); },
       "session.replies[4].t = 4: step indices must increase"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.needle);
    v1::SessionExport bad = ex;
    c.spoil(&bad);
    const grpc::Status s = Import("copy", bad);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr(c.needle));
    EXPECT_EQ(client_.GetSession("copy").status().code(), absl::StatusCode::kNotFound);
  }
  // The intact export imports, and its cache answers a retry exactly.
  ASSERT_TRUE(Import("copy", ex).ok());
  const auto replay = client_.Step(RequestFor(f, "copy", 4));
  ASSERT_TRUE(replay.ok());
  EXPECT_TRUE(replay->replayed());
  EXPECT_THAT(replay->x(), ElementsAreArray(ex.replies(3).x()));
}

// An f2obo export imported under another algorithm would be stepped on
// with that algorithm's state silently zeroed.
// The state records the algorithm that wrote it (core/state.h, Checkpoint).
TEST_F(HostileInputE2e, ImportRefusesAStateWhoseLayoutDoesNotMatchTheSpecsAlgorithm) {
  const FamilyCase f = AllFamilyCases()[2];
  ASSERT_NO_FATAL_FAILURE(Create("origin", SpecFor(f, "f2obo", 5)));
  for (int64_t t = 1; t <= 4; ++t) ASSERT_TRUE(client_.Step(RequestFor(f, "origin", t)).ok());
  const v1::SessionExport ex = Export("origin");
  for (const char* algorithm : {"af2obo", "sf2obo", "obbo", "svrb", "pzobo", "sobow"}) {
    SCOPED_TRACE(algorithm);
    v1::SessionExport other = ex;
    other.mutable_spec()->set_algorithm(algorithm);
    // A spec sf2obo accepts (beta_decay >= tau), so the state is what is refused.
    v1::AlgorithmOptions* o = other.mutable_spec()->mutable_options();
    if (std::string(algorithm) == "sf2obo") o->set_beta_decay(std::max(o->tau(), 1.0));
    const grpc::Status s = Import(std::string("as_") + algorithm, other);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_THAT(s.error_message(), HasSubstr("the state was written by 'f2obo'"));
    EXPECT_EQ(client_.GetSession(std::string("as_") + algorithm).status().code(),
              absl::StatusCode::kNotFound);
  }
}

// Every string of a request is bounded (256 bytes).  A
// 10,000-byte id was looked up and echoed back, or (SetFence's target)
// stored and echoed in every later UNAVAILABLE of its key, beyond gRPC's
// metadata limit: the client got RESOURCE_EXHAUSTED "received initial
// metadata size exceeds limit" and stopped instead of retrying.  Each is
// now INVALID_ARGUMENT naming the field and its length, before anything
// else, and the server goes on serving.
TEST_F(HostileInputE2e, IdentifiersBeyond256BytesAreRefusedInEveryRpcAndTheServerKeepsServing) {
  const std::string huge(10000, 'k');
  const std::string max(256, 'k');
  Create("ok", SpecFor(AllFamilyCases()[0], "f2obo", 1));
  auto stub =
      v1::F2obo::NewStub(grpc::CreateChannel(server_.target(), grpc::InsecureChannelCredentials()));
  const auto expect_refused = [&](const char* rpc, const grpc::Status& s,
                                  const std::string& field) {
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT)
        << rpc << ": " << s.error_message();
    EXPECT_THAT(s.error_message(),
                HasSubstr(field + ": 10000 bytes, beyond the bound of 256 bytes"))
        << rpc;
  };
  {
    grpc::ClientContext ctx;
    v1::GetSessionRequest req;
    req.set_session_id(huge);
    v1::SessionInfo out;
    expect_refused("GetSession", stub->GetSession(&ctx, req, &out), "session_id");
  }
  {
    grpc::ClientContext ctx;
    v1::StepRequest req = RequestFor(AllFamilyCases()[0], huge, 1);
    v1::StepReply out;
    expect_refused("Step", stub->Step(&ctx, req, &out), "session_id");
  }
  {
    grpc::ClientContext ctx;
    v1::DeleteSessionRequest req;
    req.set_session_id(huge);
    v1::DeleteSessionResponse out;
    expect_refused("DeleteSession", stub->DeleteSession(&ctx, req, &out), "session_id");
  }
  {
    grpc::ClientContext ctx;
    v1::ForkSessionRequest req;
    req.set_session_id("ok");
    req.set_new_session_id(huge);
    v1::SessionInfo out;
    expect_refused("ForkSession", stub->ForkSession(&ctx, req, &out), "new_session_id");
  }
  {
    grpc::ClientContext ctx;
    v1::CreateSessionRequest req;
    req.set_session_id("new");
    *req.mutable_spec() = SpecFor(AllFamilyCases()[0], "f2obo", 1);
    req.mutable_spec()->set_algorithm(huge);
    v1::SessionInfo out;
    expect_refused("CreateSession", stub->CreateSession(&ctx, req, &out), "spec.algorithm");
  }
  {
    grpc::ClientContext ctx;
    v1::CreateGroupRequest req;
    req.set_group_id("g");
    *req.mutable_spec() = SpecFor(AllFamilyCases()[0], "f2obo", 1);
    req.add_members()->set_name("a");
    req.add_members()->set_name(huge);
    v1::GroupInfo out;
    expect_refused("CreateGroup", stub->CreateGroup(&ctx, req, &out), "members[1].name");
  }
  {
    grpc::ClientContext ctx;
    v1::GetGroupRequest req;
    req.set_group_id(huge);
    v1::GroupInfo out;
    expect_refused("GetGroup", stub->GetGroup(&ctx, req, &out), "group_id");
  }
  {
    grpc::ClientContext ctx;
    v1::SetFenceRequest req;
    req.set_routing_key("ok");
    req.set_target(huge);
    v1::Fence out;
    expect_refused("SetFence", stub->SetFence(&ctx, req, &out), "target");
  }
  {
    grpc::ClientContext ctx;
    v1::LiftFenceRequest req;
    req.set_routing_key(huge);
    v1::LiftFenceResponse out;
    expect_refused("LiftFence", stub->LiftFence(&ctx, req, &out), "routing_key");
  }
  {
    // A stream: the bad message ends it with the same status.
    grpc::ClientContext ctx;
    auto stream = stub->Steps(&ctx);
    ASSERT_TRUE(stream->Write(RequestFor(AllFamilyCases()[0], huge, 1)));
    v1::StepReply out;
    EXPECT_FALSE(stream->Read(&out));
    expect_refused("Steps", stream->Finish(), "session_id");
  }
  // Nothing of the above changed anything: the key is not fenced, the
  // session is where it was and steps.
  {
    grpc::ClientContext ctx;
    v1::ServerInfo info;
    ASSERT_TRUE(stub->GetServerInfo(&ctx, v1::GetServerInfoRequest(), &info).ok());
    EXPECT_EQ(info.fences_size(), 0);
  }
  const absl::StatusOr<v1::ListSessionsResponse> list = client_.ListSessions();
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->sessions_size(), 1);
  const auto stepped = client_.Step(RequestFor(AllFamilyCases()[0], "ok", 1));
  ASSERT_TRUE(stepped.ok()) << stepped.status();
  // At the bound: an id of 256 bytes is looked up as any other.
  grpc::ClientContext ctx;
  v1::GetSessionRequest req;
  req.set_session_id(max);
  v1::SessionInfo out;
  EXPECT_EQ(stub->GetSession(&ctx, req, &out).error_code(), grpc::StatusCode::NOT_FOUND);
}

}  // namespace
}  // namespace f2obo
