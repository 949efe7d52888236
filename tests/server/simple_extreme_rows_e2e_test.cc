// Rows a session accepted never make its later ordinary steps impossible:
// every simple bilevel algorithm that keeps rows in a window (found through
// the registry) on every kind of constraint set, over the real server,
// fed rows at the input bound (1e150).  Over an unbounded set (none, the
// orthant) no row bound applies and they are accepted; a window then holds
// them for 64 rows, and every ordinary step meanwhile must be applied (an
// agm_bio session on R^d was stuck at "cutting plane: a or b is not
// finite" until a rollback).  Over a bounded set they may be refused on
// arrival; the ordinary steps after them must be applied all the same.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "client/client.h"
#include "core/problem_registry.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::ServerProcess;

constexpr int kFeatures = 10;

struct Kind {
  const char* name;
  void (*set)(v1::ConstraintSpec*);
  bool bounded;
};

const Kind kKinds[] = {
    {"none", [](v1::ConstraintSpec* c) { c->set_unconstrained(true); }, false},
    {"box",
     [](v1::ConstraintSpec* c) {
       c->mutable_box()->add_lo(-2.0);
       c->mutable_box()->add_hi(2.0);
     },
     true},
    {"orthant",
     [](v1::ConstraintSpec* c) {
       c->mutable_box()->add_lo(0.0);
       c->mutable_box()->add_hi(std::numeric_limits<double>::infinity());
     },
     false},
    {"ball", [](v1::ConstraintSpec* c) { c->mutable_ball()->set_radius(2.0); }, true},
    {"l1_ball", [](v1::ConstraintSpec* c) { c->mutable_l1_ball()->set_radius(2.0); }, true},
    {"simplex", [](v1::ConstraintSpec* c) { c->mutable_simplex()->set_total(1.0); }, true},
};

void Ordinary(std::mt19937_64& rng, v1::Batch* batch) {
  std::normal_distribution<double> n(0.0, 1.0);
  v1::DenseMatrix* m = batch->mutable_dense();
  m->set_rows(4);
  m->set_cols(kFeatures);
  for (int i = 0; i < 4 * kFeatures; ++i) m->add_values(n(rng));
  for (int i = 0; i < 4; ++i) batch->add_targets(n(rng));
}

// Step k of a run of extreme rows: one entry of each row at +-1e150 on a
// coordinate that moves with k (shape 0), or every entry and the target at
// 1e150 (shape 1), in the inner or the upper batch.
v1::StepRequest Extreme(const std::string& id, int64_t t, int shape, bool upper, int k,
                        std::mt19937_64& rng) {
  v1::StepRequest req;
  req.set_session_id(id);
  req.set_t(t);
  Ordinary(rng, req.mutable_upper());
  Ordinary(rng, req.mutable_inner());
  v1::Batch* b = upper ? req.mutable_upper() : req.mutable_inner();
  for (int r = 0; r < 4; ++r) {
    const double sign = (r + k) % 2 == 0 ? 1.0 : -1.0;
    if (shape == 0) {
      b->mutable_dense()->set_values(r * kFeatures + (r + k) % kFeatures, sign * 1e150);
    } else {
      for (int j = 0; j < kFeatures; ++j) b->mutable_dense()->set_values(r * kFeatures + j, 1e150);
      b->set_targets(r, sign * 1e150);
    }
  }
  return req;
}

TEST(SimpleExtremeRowsE2e, AcceptedRowsAtTheInputBoundNeverBlockLaterOrdinarySteps) {
  ServerProcess server({"--durability=none"});
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  std::vector<std::string> windowed;
  for (const std::string& a : AlgorithmNames(ProblemClass::kSimpleBilevel)) {
    if (FindAlgorithm(a)->keeps_rows) windowed.push_back(a);
  }
  ASSERT_GE(windowed.size(), 2u);
  int unbounded_sessions = 0;
  for (const std::string& a : windowed) {
    for (const Kind& kind : kKinds) {
      const std::string id = absl::StrCat(a, "-", kind.name);
      v1::CreateSessionRequest create;
      create.set_session_id(id);
      v1::SessionSpec* spec = create.mutable_spec();
      spec->mutable_family()->set_name("least_squares");
      spec->mutable_family()->set_features(kFeatures);
      spec->set_algorithm(a);
      spec->mutable_options()->set_window_rows(64);
      kind.set(spec->mutable_constraint());
      spec->set_seed(3);
      const absl::StatusOr<v1::SessionInfo> created = c.CreateSession(create);
      if (!created.ok()) {  // a set without the linear minimization oracle a method needs
        EXPECT_EQ(created.status().code(), absl::StatusCode::kInvalidArgument) << id;
        EXPECT_THAT(std::string(created.status().message()), ::testing::HasSubstr("constraint"))
            << id;
        continue;
      }
      unbounded_sessions += kind.bounded ? 0 : 1;
      std::mt19937_64 rng(17);
      int64_t t = 1;
      const auto ordinary = [&](int steps, const std::string& after) {
        for (int k = 0; k < steps; ++k, ++t) {
          v1::StepRequest req;
          req.set_session_id(id);
          req.set_t(t);
          Ordinary(rng, req.mutable_upper());
          Ordinary(rng, req.mutable_inner());
          const absl::StatusOr<v1::StepReply> r = c.Step(req);
          ASSERT_TRUE(r.ok()) << id << " step " << t << " after " << after << ": " << r.status();
        }
      };
      ordinary(4, "ordinary steps");
      if (HasFatalFailure()) return;
      for (const auto& [shape, upper] :
           {std::pair{0, false}, std::pair{1, false}, std::pair{0, true}}) {
        int accepted = 0;
        for (int k = 0; k < 5; ++k) {
          if (c.Step(Extreme(id, t, shape, upper, k, rng)).ok()) {
            ++accepted;
            ++t;
          }
        }
        if (!kind.bounded) {
          EXPECT_EQ(accepted, 5) << id << " shape " << shape;
        }
        ordinary(20, absl::StrCat(accepted, " accepted steps of extreme rows (shape ", shape,
                                  upper ? ", upper)" : ", inner)"));
        if (HasFatalFailure()) return;
      }
    }
  }
  EXPECT_GE(unbounded_sessions, 2);  // agm_bio on none and on the orthant
}

}  // namespace
}  // namespace f2obo
