// The dashboard's JSON API handlers on an in-process session manager, the
// query-string parser, and the page and routes served over a real
// HttpExporter.  Replies are parsed as JSON (protobuf's Struct) before
// anything is asserted on them.
#include "server/dashboard/api.h"

#include <arpa/inet.h>
#include <gmock/gmock.h>
#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "server/dashboard/dashboard.h"
#include "server/dashboard/page.h"
#include "server/groups.h"
#include "server/metrics_pipeline.h"
#include "server/session_manager.h"
#include "tests/server/e2e_support.h"

namespace f2obo::dashboard {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;
using ::testing::HasSubstr;
using ::testing::Not;

HttpRequest Get(const std::string& path, const std::string& query = "") {
  return HttpRequest{"GET", path, query};
}

// The reply's body as JSON; fails the test if it is not a JSON object.
Struct Parse(const HttpResponse& r) {
  Struct s;
  EXPECT_EQ(r.content_type, "application/json; charset=utf-8");
  EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(r.body, &s).ok()) << r.body;
  return s;
}

const Value& At(const Struct& s, const std::string& key) {
  static const Value kMissing;
  const auto it = s.fields().find(key);
  return it == s.fields().end() ? kMissing : it->second;
}

// --------------------------------------------------------------- ParseQuery

TEST(ParseQuery, DecodesPercentEscapesAndPlus) {
  absl::StatusOr<std::map<std::string, std::string>> q =
      ParseQuery("session=a%2Eb_c&after=12&x=1+2%2B3&%73=%C3%A9&flag&&empty=");
  ASSERT_TRUE(q.ok()) << q.status();
  EXPECT_EQ(q->at("session"), "a.b_c");
  EXPECT_EQ(q->at("after"), "12");
  EXPECT_EQ(q->at("x"), "1 2+3");
  EXPECT_EQ(q->at("s"), "\xc3\xa9");
  EXPECT_EQ(q->at("flag"), "");
  EXPECT_EQ(q->at("empty"), "");
  EXPECT_EQ(q->size(), 6u);
}

TEST(ParseQuery, EmptyQueryAndRepeatedKeys) {
  EXPECT_TRUE(ParseQuery("")->empty());
  EXPECT_EQ(ParseQuery("a=1&a=2")->at("a"), "2");
  EXPECT_EQ(ParseQuery("a=b=c")->at("a"), "b=c");
}

TEST(ParseQuery, MalformedEscapesAreInvalidArgument) {
  for (const char* bad : {"a=%", "a=%4", "a=%zz", "a=%4g", "%=1", "a=1&b=%0"}) {
    absl::StatusOr<std::map<std::string, std::string>> q = ParseQuery(bad);
    EXPECT_EQ(q.status().code(), absl::StatusCode::kInvalidArgument) << bad;
  }
}

// ------------------------------------------------------------ the handlers

// A session manager with a ridge_hpo session "solo", a group "cmp" of two
// members, and "x.y", a plain session whose id merely contains a dot.
class DashboardApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const testing::FamilyCase f = testing::AllFamilyCases()[1];
    ASSERT_EQ(f.name, "ridge_hpo");
    for (const char* id : {"solo", "x.y"}) {
      v1::CreateSessionRequest create;
      create.set_session_id(id);
      *create.mutable_spec() = testing::SpecFor(f, "f2obo", 3);
      ASSERT_TRUE(sessions_.Create(create).ok());
    }
    v1::CreateGroupRequest group;
    group.set_group_id("cmp");
    *group.mutable_spec() = testing::SpecFor(f, "f2obo", 3);
    for (const char* a : {"f2obo", "sf2obo"}) {
      v1::GroupMember* m = group.add_members();
      m->set_name(a);
      m->set_algorithm(a);
    }
    ASSERT_TRUE(groups_.Create(group).ok());
    for (int t = 1; t <= 3; ++t) {
      ASSERT_TRUE(sessions_.Step(testing::RequestFor(f, "solo", t)).ok());
    }
    // Metrics are published off the request path: wait for step 3's.
    std::shared_ptr<server::SessionMetrics> m = *sessions_.Metrics("solo");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    ASSERT_TRUE(m->NextAfter(2, [&] { return std::chrono::steady_clock::now() > deadline; }));
  }

  server::MetricsPipeline pipeline_{1, 64, nullptr};
  server::SessionManager sessions_{server::Limits{}, &pipeline_, nullptr};
  server::GroupManager groups_{&sessions_, nullptr};
};

TEST_F(DashboardApiTest, SessionsListsEverySessionAndOnlyRealGroups) {
  const Struct s = Parse(ServeSessions(sessions_, &groups_, Get("/api/sessions")));
  std::map<std::string, Struct> by_id;
  for (const Value& v : At(s, "sessions").list_value().values()) {
    by_id[At(v.struct_value(), "id").string_value()] = v.struct_value();
  }
  ASSERT_EQ(by_id.size(), 4u);
  const Struct& solo = by_id["solo"];
  EXPECT_EQ(At(solo, "algorithm").string_value(), "f2obo");
  EXPECT_EQ(At(solo, "family").string_value(), "ridge_hpo");
  EXPECT_EQ(At(solo, "next_t").number_value(), 4);
  EXPECT_EQ(At(solo, "evaluated_steps").number_value(), 3);
  EXPECT_EQ(At(solo, "unconverged_steps").number_value(), 0);
  EXPECT_GT(At(solo, "blreg").number_value(), 0);
  EXPECT_FALSE(solo.fields().count("group"));
  EXPECT_FALSE(by_id["x.y"].fields().count("group"));  // no group "x"
  EXPECT_EQ(At(by_id["cmp.f2obo"], "group").string_value(), "cmp");
  EXPECT_EQ(At(by_id["cmp.sf2obo"], "group").string_value(), "cmp");

  const auto& groups = At(s, "groups").list_value().values();
  ASSERT_EQ(groups.size(), 1);
  EXPECT_EQ(At(groups[0].struct_value(), "id").string_value(), "cmp");
  const auto& members = At(groups[0].struct_value(), "members").list_value().values();
  ASSERT_EQ(members.size(), 2);
  EXPECT_EQ(members[0].string_value(), "cmp.f2obo");  // in member order
  EXPECT_EQ(members[1].string_value(), "cmp.sf2obo");

  // Without a group manager: the same sessions, no groups.
  const Struct plain = Parse(ServeSessions(sessions_, nullptr, Get("/api/sessions")));
  EXPECT_EQ(At(plain, "sessions").list_value().values_size(), 4);
  EXPECT_EQ(At(plain, "groups").list_value().values_size(), 0);
}

TEST_F(DashboardApiTest, MetricsReturnsTheStepsAfterTheGivenIndex) {
  const Struct all = Parse(ServeMetrics(sessions_, Get("/api/metrics", "session=solo")));
  EXPECT_EQ(At(all, "session_id").string_value(), "solo");
  const auto& steps = At(all, "steps").list_value().values();
  ASSERT_EQ(steps.size(), 3);
  double blreg = 0;
  for (int i = 0; i < 3; ++i) {
    const Struct& step = steps[i].struct_value();
    EXPECT_EQ(At(step, "t").number_value(), i + 1);
    for (const char* key :
         {"lambda", "z_iterations", "y_iterations", "round_seconds", "upper_loss_before",
          "regret_term", "blreg", "hypergradient_error", "value", "variation_sum", "drift_sum"}) {
      EXPECT_TRUE(At(step, key).has_number_value()) << key << " at t=" << i + 1;
    }
    // BLReg is the running sum of the regret terms, all converged here.
    EXPECT_TRUE(At(step, "converged").bool_value()) << "t=" << i + 1;
    blreg += At(step, "regret_term").number_value();
    EXPECT_NEAR(At(step, "blreg").number_value(), blreg, 1e-9 * (1 + blreg));
    EXPECT_FALSE(step.fields().count("accuracy_before"));  // regression family
  }
  EXPECT_FALSE(At(steps[0].struct_value(), "variation").has_number_value());  // no previous step
  EXPECT_TRUE(At(steps[1].struct_value(), "variation").has_number_value());

  const Struct later = Parse(ServeMetrics(sessions_, Get("/api/metrics", "session=solo&after=2")));
  ASSERT_EQ(At(later, "steps").list_value().values_size(), 1);
  EXPECT_EQ(At(At(later, "steps").list_value().values(0).struct_value(), "t").number_value(), 3);
  const Struct none = Parse(ServeMetrics(sessions_, Get("/api/metrics", "session=solo&after=3")));
  EXPECT_EQ(At(none, "steps").list_value().values_size(), 0);
  const Struct fresh = Parse(ServeMetrics(sessions_, Get("/api/metrics", "session=cmp.f2obo")));
  EXPECT_EQ(At(fresh, "steps").list_value().values_size(), 0);
}

TEST_F(DashboardApiTest, DecisionIsTheCurrentXCutToMax) {
  const v1::Decision truth = *sessions_.GetDecision("solo");
  ASSERT_GT(truth.x_size(), 1);
  const Struct d = Parse(ServeDecision(sessions_, Get("/api/decision", "session=solo")));
  EXPECT_EQ(At(d, "t").number_value(), 4);
  EXPECT_EQ(At(d, "x_dim").number_value(), truth.x_size());
  const auto& x = At(d, "x").list_value().values();
  ASSERT_EQ(x.size(), truth.x_size());
  for (int i = 0; i < x.size(); ++i) EXPECT_EQ(x[i].number_value(), truth.x(i)) << i;
  const Struct cut = Parse(ServeDecision(sessions_, Get("/api/decision", "session=solo&max=1")));
  EXPECT_EQ(At(cut, "x").list_value().values_size(), 1);
  EXPECT_EQ(At(cut, "x_dim").number_value(), truth.x_size());
}

TEST_F(DashboardApiTest, BadRequestsGetJsonErrorsWithTheRightStatus) {
  struct Case {
    HttpResponse (*serve)(const server::SessionManager&, const HttpRequest&);
    HttpRequest request;
    int status;
    const char* says;
  };
  const Case cases[] = {
      {ServeMetrics, Get("/api/metrics", ""), 400, "session"},
      {ServeMetrics, Get("/api/metrics", "session="), 400, "session"},
      {ServeMetrics, Get("/api/metrics", "session=a%2Fb"), 400, "session"},  // '/' not allowed
      {ServeMetrics, Get("/api/metrics", "session=" + std::string(65, 'a')), 400, "session"},
      {ServeMetrics, Get("/api/metrics", "session=solo&after=x"), 400, "after"},
      {ServeMetrics, Get("/api/metrics", "session=solo&after=%zz"), 400, "percent"},
      {ServeMetrics, Get("/api/metrics", "session=nope"), 404, "nope"},
      {ServeMetrics, HttpRequest{"POST", "/api/metrics", "session=solo"}, 405, "GET"},
      {ServeDecision, Get("/api/decision", "session=solo&max=-1"), 400, "max"},
      {ServeDecision, Get("/api/decision", "session=solo&max=1e3"), 400, "max"},
      {ServeDecision, Get("/api/decision", "session=solo&max=1000001"), 400, "max"},
      {ServeDecision, Get("/api/decision", "session=nope"), 404, "nope"},
      {ServeDecision, HttpRequest{"DELETE", "/api/decision", "session=solo"}, 405, "GET"},
  };
  for (const Case& c : cases) {
    const HttpResponse r = c.serve(sessions_, c.request);
    EXPECT_EQ(r.status, c.status) << c.request.query_string;
    EXPECT_THAT(At(Parse(r), "error").string_value(), HasSubstr(c.says)) << c.request.query_string;
  }
  const HttpResponse post = ServeSessions(sessions_, &groups_, {"POST", "/api/sessions", ""});
  EXPECT_EQ(post.status, 405);
  EXPECT_TRUE(At(Parse(post), "error").has_string_value());
}

// ---------------------------------------------------------------- WriteStep

// A skipped due step carries its sampling probability and
// the session's coverage and estimate (from StepMetrics.running), a
// computed one the same from exact.running; a step not due carries none.
TEST(WriteStep, DueStepsCarryTheirProbabilityCoverageAndEstimate) {
  v1::StepMetrics skipped;
  skipped.set_t(7);
  skipped.set_exact_skipped_reason("metrics worker behind: step not in the random sample");
  skipped.set_exact_probability(0.25);
  skipped.mutable_running()->set_evaluated_steps(3);
  skipped.mutable_running()->set_skipped_steps(4);
  skipped.mutable_running()->set_estimate(9.5);
  skipped.mutable_running()->set_estimate_standard_error(1.5);
  JsonWriter w;
  WriteStep(skipped, w);
  Struct s;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(w.str(), &s).ok()) << w.str();
  EXPECT_EQ(At(s, "exact_probability").number_value(), 0.25);
  EXPECT_EQ(At(s, "evaluated_steps").number_value(), 3);
  EXPECT_EQ(At(s, "skipped_steps").number_value(), 4);
  EXPECT_EQ(At(s, "estimate").number_value(), 9.5);
  EXPECT_EQ(At(s, "estimate_se").number_value(), 1.5);
  EXPECT_FALSE(s.fields().count("blreg"));

  v1::StepMetrics evaluated;
  evaluated.set_t(8);
  evaluated.set_exact_probability(1.0);
  evaluated.mutable_report()->mutable_bilevel();
  evaluated.mutable_exact()->mutable_running()->mutable_bilevel()->set_blreg(2.0);
  evaluated.mutable_exact()->mutable_running()->set_evaluated_steps(4);
  evaluated.mutable_exact()->mutable_running()->set_estimate(10.0);
  JsonWriter w2;
  WriteStep(evaluated, w2);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(w2.str(), &s).ok()) << w2.str();
  EXPECT_EQ(At(s, "evaluated_steps").number_value(), 4);
  EXPECT_EQ(At(s, "estimate").number_value(), 10.0);
  EXPECT_EQ(At(s, "blreg").number_value(), 2.0);

  v1::StepMetrics not_due;
  not_due.set_t(9);
  JsonWriter w3;
  WriteStep(not_due, w3);
  Struct n;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(w3.str(), &n).ok()) << w3.str();
  for (const char* key : {"exact_probability", "evaluated_steps", "estimate", "exact_skipped"}) {
    EXPECT_FALSE(n.fields().count(key)) << key;
  }
}

TEST(WriteStep, ExactFieldsOnlyWhenComputedAndNonFiniteAsNull) {
  v1::StepMetrics m;
  m.set_t(5);
  m.mutable_report()->mutable_bilevel()->set_lambda(2);
  m.mutable_report()->set_upper_loss_before(std::numeric_limits<double>::quiet_NaN());
  m.mutable_report()->set_accuracy_before(0.75);
  m.set_exact_skipped_reason("metrics worker behind");
  JsonWriter w;
  WriteStep(m, w);
  Struct s;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(w.str(), &s).ok()) << w.str();
  EXPECT_EQ(At(s, "t").number_value(), 5);
  EXPECT_EQ(At(s, "accuracy_before").number_value(), 0.75);
  EXPECT_TRUE(At(s, "upper_loss_before").has_null_value());
  EXPECT_EQ(At(s, "exact_skipped").string_value(), "metrics worker behind");
  for (const char* key : {"blreg", "regret_term", "value", "variation", "drift", "cap_hit"}) {
    EXPECT_FALSE(s.fields().count(key)) << key;
  }

  m.mutable_exact()->mutable_bilevel()->set_regret_term(std::numeric_limits<double>::infinity());
  m.mutable_exact()->mutable_running()->mutable_bilevel()->set_blreg(4.5);
  m.mutable_exact()->mutable_bilevel()->set_drift(0.25);
  m.mutable_report()->mutable_bilevel()->set_cap_hit(true);
  JsonWriter w2;
  WriteStep(m, w2);
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(w2.str(), &s).ok()) << w2.str();
  EXPECT_TRUE(At(s, "regret_term").has_null_value());
  EXPECT_EQ(At(s, "blreg").number_value(), 4.5);
  EXPECT_EQ(At(s, "drift").number_value(), 0.25);
  EXPECT_FALSE(s.fields().count("variation"));  // not set: not known for this step
  EXPECT_TRUE(At(s, "cap_hit").bool_value());

  // converged: every solve the step's metrics rest on, the previous step's
  // inner solve included when variation and drift were computed.
  const auto converged = [&](bool inner, bool cg, std::optional<bool> previous) {
    v1::BilevelExactMetrics* e = m.mutable_exact()->mutable_bilevel();
    e->set_inner_converged(inner);
    e->set_cg_converged(cg);
    if (previous.has_value()) {
      e->set_previous_inner_converged(*previous);
    } else {
      e->clear_previous_inner_converged();
    }
    JsonWriter out;
    WriteStep(m, out);
    Struct parsed;
    EXPECT_TRUE(google::protobuf::util::JsonStringToMessage(out.str(), &parsed).ok());
    return At(parsed, "converged").bool_value();
  };
  EXPECT_TRUE(converged(true, true, std::nullopt));
  EXPECT_TRUE(converged(true, true, true));
  EXPECT_FALSE(converged(true, true, false));
  EXPECT_FALSE(converged(false, true, true));
  EXPECT_FALSE(converged(true, false, std::nullopt));
}

TEST(WriteStep, EachClassWritesItsOwnFields) {
  v1::StepMetrics simple;
  simple.set_t(2);
  simple.mutable_report()->mutable_simple()->set_inner_loss_before(0.5);
  simple.mutable_exact()->mutable_simple()->set_inner_gap(0.25);
  simple.mutable_exact()->mutable_simple()->set_g_star_converged(true);
  JsonWriter ws;
  WriteStep(simple, ws);
  Struct s;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(ws.str(), &s).ok()) << ws.str();
  EXPECT_EQ(At(s, "inner_loss_before").number_value(), 0.5);
  EXPECT_EQ(At(s, "inner_gap").number_value(), 0.25);
  EXPECT_TRUE(At(s, "converged").bool_value());
  for (const char* key : {"lambda", "blreg", "regret_term", "gradient_norm", "tasks_touched"}) {
    EXPECT_FALSE(s.fields().count(key)) << key;
  }

  v1::StepMetrics mt;
  mt.set_t(3);
  mt.mutable_report()->mutable_multitask()->set_lambda(1.5);
  mt.mutable_report()->mutable_multitask()->set_tasks(2);
  mt.mutable_report()->mutable_multitask()->set_tasks_touched(700);
  v1::ExactMetrics* e = mt.mutable_exact();
  e->mutable_multitask()->set_regret_term(0.125);
  e->mutable_multitask()->set_true_gradient_norm(0.75);
  e->mutable_running()->mutable_multitask()->set_blreg(9);
  e->mutable_multitask()->set_tasks_evaluated(256);
  e->mutable_multitask()->set_seconds(0.5);
  v1::MultitaskTaskMetrics* tm = e->mutable_multitask()->add_tasks();
  tm->set_task(3);
  tm->set_regret_term(0.0625);
  JsonWriter wm;
  WriteStep(mt, wm);
  Struct m;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(wm.str(), &m).ok()) << wm.str();
  EXPECT_EQ(At(m, "lambda").number_value(), 1.5);
  EXPECT_EQ(At(m, "tasks").number_value(), 2);
  EXPECT_EQ(At(m, "tasks_touched").number_value(), 700);
  EXPECT_EQ(At(m, "regret_term").number_value(), 0.125);
  EXPECT_EQ(At(m, "blreg").number_value(), 9);
  EXPECT_EQ(At(m, "gradient_norm").number_value(), 0.75);
  EXPECT_EQ(At(m, "tasks_evaluated").number_value(), 256);
  EXPECT_EQ(At(m, "exact_seconds").number_value(), 0.5);
  EXPECT_FALSE(At(m, "converged").bool_value());  // the flag was left false
  const auto& tasks = At(m, "task_metrics").list_value().values();
  ASSERT_EQ(tasks.size(), 1);
  EXPECT_EQ(At(tasks[0].struct_value(), "task").number_value(), 3);
  EXPECT_EQ(At(tasks[0].struct_value(), "regret_term").number_value(), 0.0625);
  for (const char* key : {"inner_gap", "variation_sum", "drift_sum"}) {
    EXPECT_FALSE(m.fields().count(key)) << key;
  }
}

// ------------------------------------------------------ page and the routes

TEST(DashboardPage, IsOneSelfContainedDocumentWithTheScriptInlined) {
  const std::string page = kDashboardPage;
  EXPECT_THAT(page, HasSubstr("<!doctype html>"));
  EXPECT_THAT(page, HasSubstr("/api/sessions"));  // app.js is inlined ...
  EXPECT_THAT(page, HasSubstr("data-points"));
  EXPECT_THAT(page, Not(HasSubstr("<!-- app.js -->")));  // ... at its marker
  for (const char* external : {"http:", "https:", "src=", "@import", "url("}) {
    EXPECT_THAT(page, Not(HasSubstr(external))) << external;
  }
  // The one link is the empty favicon, inline.
  size_t links = 0;
  for (size_t at = page.find("href="); at != std::string::npos; at = page.find("href=", at + 1)) {
    EXPECT_EQ(page.substr(at, 11), "href=\"data:") << page.substr(at, 40);
    ++links;
  }
  EXPECT_EQ(links, 1u);
}

// GET (or another method) over HTTP/1.0; the raw response.
std::string Fetch(int port, const std::string& method, const std::string& target) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  timeval timeout = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string response;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
    const std::string req = method + " " + target + " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n";
    if (write(fd, req.data(), req.size()) == static_cast<ssize_t>(req.size())) {
      char buf[4096];
      ssize_t n;
      while ((n = read(fd, buf, sizeof(buf))) > 0) response.append(buf, n);
    }
  }
  close(fd);
  return response;
}

TEST_F(DashboardApiTest, RoutesServeThePageAndTheApiOverHttp) {
  absl::StatusOr<std::unique_ptr<metrics::HttpExporter>> http =
      metrics::HttpExporter::Start("127.0.0.1:0", 2);
  ASSERT_TRUE(http.ok()) << http.status();
  RegisterDashboard(http->get(), &sessions_, &groups_);
  const int port = (*http)->port();

  const std::string page = Fetch(port, "GET", "/");
  EXPECT_THAT(page, HasSubstr("200 OK"));
  EXPECT_THAT(page, HasSubstr("Content-Type: text/html; charset=utf-8"));
  EXPECT_THAT(page, HasSubstr(kDashboardPage));
  EXPECT_THAT(Fetch(port, "POST", "/"), HasSubstr("405"));
  EXPECT_THAT(Fetch(port, "GET", "/api/sessions"), HasSubstr("\"id\":\"cmp.sf2obo\""));
  EXPECT_THAT(Fetch(port, "GET", "/api/metrics?session=solo&after=2"), HasSubstr("\"t\":3"));
  EXPECT_THAT(Fetch(port, "GET", "/api/decision?session=solo&max=0"), HasSubstr("\"x\":[]"));
  EXPECT_THAT(Fetch(port, "GET", "/api/decision?session=nope"), HasSubstr("404"));
  EXPECT_THAT(Fetch(port, "GET", "/api/nothing"), HasSubstr("404"));
}

}  // namespace
}  // namespace f2obo::dashboard
