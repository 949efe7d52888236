// Coverage of the exact metrics over real gRPC and HTTP:
// a real f2obo-server evaluating a random half of the due steps
// (--exact_sample_probability=0.5) publishes on every step the probability
// it was sampled with and, on the skipped ones, the running sums; the
// Prometheus exposition carries the session's evaluated and skipped steps
// and the Horvitz-Thompson estimate of BLReg with its standard error, and
// the dashboard's API the same, matching what WatchMetrics delivered.
#include <gmock/gmock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>

#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "client/client.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;
using testing::AllFamilyCases;
using testing::FamilyCase;
using ::testing::HasSubstr;
using testing::ServerProcess;

constexpr int kSteps = 40;

Struct Json(const std::string& http) {
  Struct s;
  const std::string body = http.substr(http.find("\r\n\r\n") + 4);
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(body, &s).ok()) << body;
  return s;
}

const Value& At(const Struct& s, const std::string& key) {
  static const Value kNone;
  const auto it = s.fields().find(key);
  EXPECT_NE(it, s.fields().end()) << key;
  return it == s.fields().end() ? kNone : it->second;
}

// The value of the sample `series` ("name{labels}") in an exposition; NaN
// when absent.
double Sample(const std::string& exposition, const std::string& series) {
  const size_t at = exposition.find("\n" + series + " ");
  if (at == std::string::npos) return std::nan("");
  return std::strtod(exposition.c_str() + at + series.size() + 2, nullptr);
}

TEST(ExactCoverageE2e, ASampledSessionPublishesItsCoverageAndAnHonestEstimate) {
  ServerProcess server({"--exact_sample_probability=0.5"});
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[1];  // ridge_hpo: exact metrics due on every step
  ASSERT_EQ(f.name, "ridge_hpo");
  v1::CreateSessionRequest create;
  create.set_session_id("cov");
  *create.mutable_spec() = testing::SpecFor(f, "f2obo", 3);
  ASSERT_TRUE(c.CreateSession(create).ok());
  for (int t = 1; t <= kSteps; ++t) ASSERT_TRUE(c.Step(testing::RequestFor(f, "cov", t)).ok());

  // Every step's published metrics, by watching (ends at until_t).
  int evaluated = 0, skipped = 0;
  double estimate = 0.0, variance = 0.0, blreg = 0.0;
  v1::RunningMetrics last;
  {
    grpc::ClientContext ctx;
    v1::WatchMetricsRequest req;
    req.set_session_id("cov");
    req.set_until_t(kSteps);
    auto reader = c.stub().WatchMetrics(&ctx, req);
    v1::StepMetrics m;
    int64_t t = 0;
    while (reader->Read(&m)) {
      ASSERT_EQ(m.t(), ++t);
      ASSERT_EQ(m.exact_probability(), 0.5) << "t = " << t;
      if (m.has_exact()) {
        ++evaluated;
        ASSERT_TRUE(m.exact().bilevel().inner_converged() && m.exact().bilevel().cg_converged());
        const double r = m.exact().bilevel().regret_term();
        blreg += r;
        estimate += r / 0.5;
        variance += 0.5 / 0.25 * r * r;
        last = m.exact().running();
      } else {
        ++skipped;
        EXPECT_THAT(m.exact_skipped_reason(), HasSubstr("not in the random sample"));
        ASSERT_TRUE(m.has_running()) << "t = " << t;
        last = m.running();
      }
      EXPECT_EQ(last.evaluated_steps(), evaluated) << "t = " << t;
      EXPECT_EQ(last.skipped_steps(), skipped) << "t = " << t;
    }
    ASSERT_TRUE(reader->Finish().ok());
    ASSERT_EQ(t, kSteps);
  }
  // Binomial(40, 1/2): both kinds occur (all one kind: probability 2^-39).
  ASSERT_GT(evaluated, 0);
  ASSERT_GT(skipped, 0);
  const double se = std::sqrt(variance);
  EXPECT_NEAR(last.bilevel().blreg(), blreg, 1e-9 * blreg);
  EXPECT_NEAR(last.estimate(), estimate, 1e-9 * estimate);
  EXPECT_NEAR(last.estimate_standard_error(), se, 1e-9 * se);
  absl::StatusOr<v1::SessionInfo> info = c.GetSession("cov");
  ASSERT_TRUE(info.ok()) << info.status();
  EXPECT_EQ(info->metrics().evaluated_steps(), evaluated);
  EXPECT_EQ(info->metrics().skipped_steps(), skipped);
  EXPECT_NEAR(info->metrics().estimate(), estimate, 1e-9 * estimate);

  // Prometheus: the coverage and the estimate, valid per promtool.
  const std::string http = testing::HttpGet(server.metrics_port(), "/metrics");
  const std::string id = "{session_id=\"cov\"}";
  EXPECT_EQ(Sample(http, "f2obo_session_exact_evaluated_steps" + id), evaluated) << http;
  EXPECT_EQ(Sample(http, "f2obo_session_exact_skipped_steps" + id), skipped);
  EXPECT_EQ(Sample(http, "f2obo_session_exact_probability" + id), 0.5);
  EXPECT_NEAR(Sample(http, "f2obo_session_blreg" + id), blreg, 1e-6 * blreg);
  EXPECT_NEAR(Sample(http, "f2obo_session_blreg_estimate" + id), estimate, 1e-6 * estimate);
  EXPECT_NEAR(Sample(http, "f2obo_session_blreg_standard_error" + id), se, 1e-6 * se);
  EXPECT_THAT(http, HasSubstr("# TYPE f2obo_session_blreg_estimate gauge"));
  const std::string body = http.substr(http.find("\r\n\r\n") + 4);
  FILE* promtool = popen(PROMTOOL_PATH " check metrics > /dev/null 2>&1", "w");
  ASSERT_NE(promtool, nullptr);
  fwrite(body.data(), 1, body.size(), promtool);
  EXPECT_EQ(pclose(promtool), 0) << body;

  // The dashboard's API: skipped steps are marked and carry no exact
  // metric (the page breaks its lines there) but carry the estimate.
  const Struct steps = Json(testing::HttpGet(server.metrics_port(), "/api/metrics?session=cov"));
  int marked = 0, with_blreg = 0;
  for (const Value& v : At(steps, "steps").list_value().values()) {
    const Struct& s = v.struct_value();
    EXPECT_EQ(At(s, "exact_probability").number_value(), 0.5);
    const bool gap = s.fields().count("exact_skipped") > 0;
    marked += gap ? 1 : 0;
    with_blreg += s.fields().count("blreg") > 0 ? 1 : 0;
    EXPECT_NE(gap, s.fields().count("regret_term") > 0);
    EXPECT_GT(s.fields().count("estimate"), 0u);
    EXPECT_GT(s.fields().count("estimate_se"), 0u);
  }
  EXPECT_EQ(marked, skipped);
  EXPECT_EQ(with_blreg, evaluated);
  const Struct sessions = Json(testing::HttpGet(server.metrics_port(), "/api/sessions"));
  ASSERT_EQ(At(sessions, "sessions").list_value().values_size(), 1);
  const Struct& cov = At(sessions, "sessions").list_value().values(0).struct_value();
  EXPECT_EQ(At(cov, "evaluated_steps").number_value(), evaluated);
  EXPECT_EQ(At(cov, "skipped_steps").number_value(), skipped);
  EXPECT_NEAR(At(cov, "estimate").number_value(), estimate, 1e-6 * estimate);
  EXPECT_NEAR(At(cov, "estimate_standard_error").number_value(), se, 1e-6 * se);

  // Deleted: its series go.
  ASSERT_TRUE(c.DeleteSession("cov").ok());
  EXPECT_THAT(testing::HttpGet(server.metrics_port(), "/metrics"),
              ::testing::Not(HasSubstr("f2obo_session_exact_skipped_steps{")));
}

TEST(ExactCoverageE2e, SamplingFlagsOutsideTheUnitIntervalAreRefused) {
  for (const char* flag : {"--min_exact_probability=0", "--exact_sample_probability=1.5",
                           "--min_exact_probability=nan"}) {
    ServerProcess server({flag});
    EXPECT_FALSE(server.started()) << flag;
    EXPECT_EQ(server.Stop(SIGKILL), 1) << flag;
    EXPECT_THAT(server.Stderr(), HasSubstr("probability: must be in (0, 1]")) << flag;
  }
}

}  // namespace
}  // namespace f2obo
