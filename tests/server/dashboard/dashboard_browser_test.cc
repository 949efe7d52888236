// The dashboard page in headless Chromium (driven by chromedriver) against a
// real f2obo-server on loopback while a group streams steps into it: the
// charts fill with the published steps and keep advancing as more arrive,
// without a reload; the page fetches nothing but the server's own API.
// Screenshots (PNG) are left in this test's build directory.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "client/client.h"
#include "f2obo/v1/convert.h"
#include "tests/core/multitask/multitask_streams.h"
#include "tests/server/dashboard/webdriver.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using google::protobuf::Value;
using testing::AllFamilyCases;
using testing::BrowserSession;
using testing::ChromeDriver;
using testing::FamilyCase;
using testing::ServerProcess;

// Generous: the machine may be busy; each wait ends as soon as it holds.
constexpr auto kWait = std::chrono::seconds(90);
const char* const kMembers[] = {"f2obo", "af2obo", "sf2obo"};
// Every chart the page draws for a regression family (accuracy is left out),
// with one per entry of ridge_hpo's x of 5 (shown as x[i], unnamed).
const char* const kCharts[] = {"blreg",
                               "estimate",
                               "regret_term",
                               "hypergradient_error",
                               "variation_sum",
                               "drift_sum",
                               "lambda",
                               "inner_iterations",
                               "value",
                               "latency_ms",
                               "upper_loss_before",
                               "hypergradient_norm",
                               "residual_y",
                               "residual_z",
                               "gamma",
                               "hp:x[0]",
                               "hp:x[1]",
                               "hp:x[2]",
                               "hp:x[3]",
                               "hp:x[4]"};

// Polls `done` until it holds or the deadline passes; the pause only
// spaces the polls out.
bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return done();
}

// Sends group steps first..last over an open StepsGroup stream.
void StreamSteps(grpc::ClientReaderWriter<v1::GroupStepRequest, v1::GroupStepReply>& stream,
                 const FamilyCase& f, int first, int last) {
  for (int t = first; t <= last; ++t) {
    const v1::StepRequest single = testing::RequestFor(f, "", t);
    v1::GroupStepRequest req;
    req.set_group_id("live");
    req.set_t(t);
    *req.mutable_upper() = single.upper();
    *req.mutable_inner() = single.inner();
    v1::GroupStepReply reply;
    ASSERT_TRUE(stream.Write(req));
    ASSERT_TRUE(stream.Read(&reply));
    ASSERT_EQ(reply.members_size(), 3);
    for (const v1::MemberStepResult& m : reply.members()) ASSERT_EQ(m.code(), 0) << m.message();
  }
}

class Page {
 public:
  explicit Page(BrowserSession& b) : b_(b) {}

  // A number the script returns; -1 when the script fails or returns none.
  double Number(const std::string& script) {
    absl::StatusOr<Value> v = b_.Execute(script);
    return v.ok() && v->has_number_value() ? v->number_value() : -1;
  }
  // data-points of the line of `session` in chart `metric` (-1: no line).
  double Points(const std::string& metric, const std::string& session) {
    return Number(Line(metric, session) + "return l ? +l.dataset.points : -1;");
  }
  // Vertices actually drawn in that line (its path's M and L commands).
  double Vertices(const std::string& metric, const std::string& session) {
    return Number(Line(metric, session) +
                  "return l ? (l.getAttribute('d').match(/[ML]/g) || []).length : -1;");
  }
  // Breaks in that line (data-gaps) and its path's M commands (one a run).
  double Gaps(const std::string& metric, const std::string& session) {
    return Number(Line(metric, session) + "return l ? +l.dataset.gaps : -1;");
  }
  double Runs(const std::string& metric, const std::string& session) {
    return Number(Line(metric, session) +
                  "return l ? (l.getAttribute('d').match(/M/g) || []).length : -1;");
  }
  double LastT(const std::string& metric, const std::string& session) {
    return Number(Line(metric, session) + "return l ? +l.dataset.lastT : -1;");
  }
  void SaveScreenshot(const std::string& name) {
    absl::StatusOr<std::string> png = b_.Screenshot();
    ASSERT_TRUE(png.ok()) << png.status();
    ASSERT_GT(png->size(), 10000u);  // a rendered page, not a blank one
    ASSERT_EQ(png->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
    const std::string path = std::string(F2OBO_DASHBOARD_SCREENSHOT_DIR) + "/" + name;
    std::ofstream(path, std::ios::binary) << *png;
    std::printf("screenshot: %s\n", path.c_str());
  }

 private:
  static std::string Line(const std::string& metric, const std::string& session) {
    return "const l = document.querySelector('svg[data-metric=\"" + metric +
           "\"] path.line[data-session=\"" + session + "\"]');";
  }
  BrowserSession& b_;
};

TEST(DashboardBrowser, ChartsFillAndAdvanceWhileAGroupStreams) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[1];  // ridge_hpo: exact metrics on every step
  ASSERT_EQ(f.name, "ridge_hpo");
  v1::CreateGroupRequest create;
  create.set_group_id("live");
  *create.mutable_spec() = testing::SpecFor(f, "f2obo", 7);
  for (const char* a : kMembers) {
    v1::GroupMember* m = create.add_members();
    m->set_name(a);
    m->set_algorithm(a);
  }
  ASSERT_TRUE(c.CreateGroup(create).ok());
  auto stream_ctx = c.NewContext();
  auto stream = c.stub().StepsGroup(stream_ctx.get());
  StreamSteps(*stream, f, 1, 15);

  ChromeDriver driver(F2OBO_CHROMEDRIVER_PATH, 60);
  ASSERT_TRUE(driver.status().ok()) << driver.status();
  absl::StatusOr<BrowserSession> browser =
      BrowserSession::Start(driver.port(), F2OBO_CHROMIUM_PATH,
                            {"--headless", "--no-sandbox", "--disable-gpu",
                             "--disable-background-networking", "--window-size=1400,1100"});
  ASSERT_TRUE(browser.ok()) << browser.status();
  Page page(*browser);
  const std::string origin = "http://127.0.0.1:" + std::to_string(server.metrics_port());
  ASSERT_TRUE(browser->Navigate(origin + "/#session=live.f2obo").ok());
  // Survives only as long as the page is not reloaded.
  ASSERT_EQ(page.Number("window.f2oboTestMark = 7; return 7;"), 7);

  // Every step published so far shows, in every chart.
  EXPECT_TRUE(WaitFor([&] { return page.Points("blreg", "live.f2obo") == 15; }))
      << "blreg points: " << page.Points("blreg", "live.f2obo");
  for (const char* chart : kCharts) {
    EXPECT_EQ(page.Points(chart, "live.f2obo"), 15) << chart;
    EXPECT_EQ(page.Vertices(chart, "live.f2obo"), 15) << chart;
    EXPECT_EQ(page.LastT(chart, "live.f2obo"), 15) << chart;
  }
  EXPECT_EQ(page.Number("return document.querySelectorAll('svg[data-metric]').length;"),
            static_cast<double>(std::size(kCharts)));  // ridge_hpo: no accuracy chart
  // The decision shown is x_16 (the one the next step will use).
  EXPECT_EQ(page.Number("const d = document.querySelector('.decision-row'); "
                        "return d ? +d.dataset.t : -1;"),
            16);
  page.SaveScreenshot("dashboard_session.png");

  // More steps arrive while the page is open: the lines advance.
  StreamSteps(*stream, f, 16, 30);
  EXPECT_TRUE(WaitFor([&] { return page.LastT("blreg", "live.f2obo") == 30; }))
      << "blreg last t: " << page.LastT("blreg", "live.f2obo");
  for (const char* chart : kCharts) {
    EXPECT_TRUE(WaitFor([&] { return page.Points(chart, "live.f2obo") == 30; })) << chart;
    EXPECT_EQ(page.Vertices(chart, "live.f2obo"), 30) << chart;
  }
  EXPECT_EQ(page.Number("return window.f2oboTestMark;"), 7) << "the page was reloaded";

  // Comparing the group: every member's line on every chart.
  ASSERT_EQ(page.Number("location.hash = '#group=live'; return 1;"), 1);
  for (const char* chart : kCharts) {
    for (const char* m : kMembers) {
      const std::string id = std::string("live.") + m;
      EXPECT_TRUE(WaitFor([&] { return page.Points(chart, id) == 30; })) << chart << " " << id;
    }
    EXPECT_EQ(page.Number(std::string("return +document.querySelector('svg[data-metric=\"") +
                          chart + "\"]').dataset.series;"),
              3)
        << chart;
  }
  EXPECT_EQ(page.Number("return document.querySelectorAll('.decision-row').length;"), 3);
  EXPECT_EQ(page.Number("return window.f2oboTestMark;"), 7) << "the page was reloaded";

  // Nothing was fetched from anywhere but this server's API.
  const std::string foreign =
      "performance.getEntriesByType('resource').filter(e => "
      "!e.name.startsWith('" +
      origin + "/api/'))";
  absl::StatusOr<Value> names =
      browser->Execute("return " + foreign + ".map(e => e.name).join(' ');");
  ASSERT_TRUE(names.ok()) << names.status();
  EXPECT_EQ(names->string_value(), "");
  EXPECT_GT(page.Number("return performance.getEntriesByType('resource').length;"), 0);
  page.SaveScreenshot("dashboard_compare.png");

  stream->WritesDone();
  v1::GroupStepReply ignored;
  EXPECT_FALSE(stream->Read(&ignored));
  EXPECT_TRUE(stream->Finish().ok());
}

// A multi-task session's page: the shared charts (regret, hypergradient
// error, F) and the class's own (grad F norm, tasks touched, cost of the
// exact metrics, per-task regret terms of tasks 0-3) fill with its steps.
TEST(DashboardBrowser, MultitaskSessionsGetTheirCharts) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  v1::CreateSessionRequest create;
  create.set_session_id("mt");
  v1::SessionSpec& spec = *create.mutable_spec();
  spec.set_problem_class("multitask_bilevel");
  spec.mutable_family()->set_name("multitask_logistic_hpo");
  spec.mutable_family()->set_features(3);
  spec.mutable_family()->set_classes(2);
  spec.mutable_family()->set_tasks(20);
  spec.set_algorithm("rsvrb");
  spec.mutable_constraint()->mutable_box()->add_lo(0.0);  // logistic_hpo needs a box
  spec.mutable_constraint()->mutable_box()->add_hi(0.1);
  spec.mutable_metrics()->set_exact_every(1);
  const absl::StatusOr<v1::SessionInfo> created = c.CreateSession(create);
  ASSERT_TRUE(created.ok()) << created.status();
  constexpr int kSteps = 8;
  std::mt19937_64 rng(3);
  for (int t = 1; t <= kSteps; ++t) {
    v1::StepRequest req;
    req.set_session_id("mt");
    req.set_t(t);
    // Task 0 every step, then one of the others.
    for (const TaskData& task : testing::LogisticTasksStep({0, 1 + t % 19}, 3, 2, 12, rng).tasks) {
      ToProto(task, req.add_tasks());
    }
    ASSERT_TRUE(c.Step(req).ok());
  }

  ChromeDriver driver(F2OBO_CHROMEDRIVER_PATH, 60);
  ASSERT_TRUE(driver.status().ok()) << driver.status();
  absl::StatusOr<BrowserSession> browser =
      BrowserSession::Start(driver.port(), F2OBO_CHROMIUM_PATH,
                            {"--headless", "--no-sandbox", "--disable-gpu",
                             "--disable-background-networking", "--window-size=1400,1100"});
  ASSERT_TRUE(browser.ok()) << browser.status();
  Page page(*browser);
  const std::string origin = "http://127.0.0.1:" + std::to_string(server.metrics_port());
  ASSERT_TRUE(browser->Navigate(origin + "/#session=mt").ok());
  EXPECT_TRUE(WaitFor([&] { return page.Points("gradient_norm", "mt") == kSteps; }))
      << "gradient_norm points: " << page.Points("gradient_norm", "mt");
  for (const char* chart :
       {"gradient_norm", "tasks_touched", "exact_seconds", "task0_regret_term", "blreg",
        "regret_term", "hypergradient_error", "value", "lambda", "upper_loss_before"}) {
    EXPECT_EQ(page.Points(chart, "mt"), kSteps) << chart;
  }
  // Exact metrics cover every task seen so far: task 2 from step 1 on, task
  // 3 from step 2 on (1 + t % 19), task 1 never.
  EXPECT_EQ(page.Points("task2_regret_term", "mt"), kSteps);
  EXPECT_EQ(page.Points("task3_regret_term", "mt"), kSteps - 1);
  EXPECT_EQ(page.Number("return document.querySelectorAll("
                        "'svg[data-metric=\"task1_regret_term\"]').length;"),
            0);
  // The other classes' charts are left out.
  for (const char* chart : {"inner_gap", "variation_sum", "drift_sum"}) {
    EXPECT_EQ(page.Number(std::string("return document.querySelectorAll('svg[data-metric=\"") +
                          chart + "\"]').length;"),
              0)
        << chart;
  }
  page.SaveScreenshot("dashboard_multitask.png");
}

// A step whose exact metrics were skipped breaks the
// lines of the exact metrics (no straight line across it), BLReg's chart
// says its coverage, and the estimate over every due step has a point on
// every step.  The server samples half the due steps
// (--exact_sample_probability=0.5), so skipped steps occur without load.
TEST(DashboardBrowser, SkippedStepsAreGapsAndBLRegShowsItsCoverage) {
  ServerProcess server({"--exact_sample_probability=0.5"});
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  const FamilyCase f = AllFamilyCases()[1];  // ridge_hpo: exact metrics due on every step
  v1::CreateSessionRequest create;
  create.set_session_id("gappy");
  *create.mutable_spec() = testing::SpecFor(f, "f2obo", 5);
  ASSERT_TRUE(c.CreateSession(create).ok());
  constexpr int kSteps = 30;
  for (int t = 1; t <= kSteps; ++t) ASSERT_TRUE(c.Step(testing::RequestFor(f, "gappy", t)).ok());
  // Which steps were evaluated, as WatchMetrics tells.
  std::vector<bool> evaluated;
  {
    grpc::ClientContext ctx;
    v1::WatchMetricsRequest req;
    req.set_session_id("gappy");
    req.set_until_t(kSteps);
    auto reader = c.stub().WatchMetrics(&ctx, req);
    v1::StepMetrics m;
    while (reader->Read(&m)) evaluated.push_back(m.has_exact());
    ASSERT_TRUE(reader->Finish().ok());
  }
  ASSERT_EQ(evaluated.size(), static_cast<size_t>(kSteps));
  // The breaks a line must have: runs of skipped steps with evaluated
  // steps on both sides; and the runs of evaluated steps between them.
  int points = 0, gaps = 0, runs = 0;
  for (int i = 0; i < kSteps; ++i) {
    if (!evaluated[i]) continue;
    ++points;
    if (i == 0 || !evaluated[i - 1]) ++runs;
    if (i > 0 && !evaluated[i - 1] && points > 1) ++gaps;
  }
  ASSERT_GT(gaps, 0) << "no skipped step between evaluated ones (probability ~2^-20)";

  ChromeDriver driver(F2OBO_CHROMEDRIVER_PATH, 60);
  ASSERT_TRUE(driver.status().ok()) << driver.status();
  absl::StatusOr<BrowserSession> browser =
      BrowserSession::Start(driver.port(), F2OBO_CHROMIUM_PATH,
                            {"--headless", "--no-sandbox", "--disable-gpu",
                             "--disable-background-networking", "--window-size=1400,1100"});
  ASSERT_TRUE(browser.ok()) << browser.status();
  Page page(*browser);
  ASSERT_TRUE(browser
                  ->Navigate("http://127.0.0.1:" + std::to_string(server.metrics_port()) +
                             "/#session=gappy")
                  .ok());
  EXPECT_TRUE(WaitFor([&] { return page.Points("estimate", "gappy") == kSteps; }))
      << "estimate points: " << page.Points("estimate", "gappy");
  for (const char* chart : {"blreg", "regret_term", "hypergradient_error", "value"}) {
    EXPECT_EQ(page.Points(chart, "gappy"), points) << chart;
    EXPECT_EQ(page.Gaps(chart, "gappy"), gaps) << chart;
    EXPECT_EQ(page.Runs(chart, "gappy"), runs) << chart;
  }
  // Metrics of every step have no gaps, and the estimate none either.
  for (const char* chart : {"estimate", "lambda", "latency_ms"}) {
    EXPECT_EQ(page.Gaps(chart, "gappy"), 0) << chart;
    EXPECT_EQ(page.Runs(chart, "gappy"), 1) << chart;
  }
  // BLReg's coverage beside it: "exact on <points> of <kSteps>".
  const std::string card = "const k = document.querySelector('.chart[data-metric=\"blreg\"]');";
  EXPECT_EQ(page.Number(card + "return +k.dataset.evaluated;"), points);
  EXPECT_EQ(page.Number(card + "return +k.dataset.due;"), kSteps);
  EXPECT_EQ(page.Number(card + "return k.querySelector('.latest').textContent.includes('exact on " +
                        std::to_string(points) + " of " + std::to_string(kSteps) + "') ? 1 : 0;"),
            1);
  // The estimate's standard error is drawn as a band.
  EXPECT_EQ(page.Number("return document.querySelectorAll("
                        "'svg[data-metric=\"estimate\"] polygon.band').length;"),
            1);
  page.SaveScreenshot("dashboard_gaps.png");
}

// The session list shows a simple bilevel session's own
// headline (its mean inner gap), not a lambda and a BLReg it does not have.
TEST(DashboardBrowser, SimpleBilevelSessionsListTheirOwnHeadline) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  client::Client c({server.target()});
  const FamilyCase ridge = AllFamilyCases()[1];  // dense rows with targets
  v1::CreateSessionRequest create;
  create.set_session_id("ls");
  v1::SessionSpec& spec = *create.mutable_spec();
  spec.mutable_family()->set_name("least_squares");
  spec.mutable_family()->set_features(ridge.family.features());
  spec.set_algorithm("ir_scg");
  spec.mutable_constraint()->mutable_l1_ball()->set_radius(3.0);
  spec.mutable_metrics()->set_exact_every(1);
  ASSERT_TRUE(c.CreateSession(create).ok());
  constexpr int kSteps = 6;
  for (int t = 1; t <= kSteps; ++t) ASSERT_TRUE(c.Step(testing::RequestFor(ridge, "ls", t)).ok());

  ChromeDriver driver(F2OBO_CHROMEDRIVER_PATH, 60);
  ASSERT_TRUE(driver.status().ok()) << driver.status();
  absl::StatusOr<BrowserSession> browser =
      BrowserSession::Start(driver.port(), F2OBO_CHROMIUM_PATH,
                            {"--headless", "--no-sandbox", "--disable-gpu",
                             "--disable-background-networking", "--window-size=1400,1100"});
  ASSERT_TRUE(browser.ok()) << browser.status();
  Page page(*browser);
  ASSERT_TRUE(
      browser->Navigate("http://127.0.0.1:" + std::to_string(server.metrics_port()) + "/").ok());
  const std::string row = "const r = document.querySelector('tr[data-id=\"ls\"]');";
  EXPECT_TRUE(WaitFor([&] {
    return page.Number(row +
                       "return r && r.querySelector('td.headline').textContent"
                       ".startsWith('gap ') ? 1 : 0;") == 1;
  })) << "no inner gap in the session list";
  EXPECT_EQ(page.Number(row + "return r.querySelector('td.lambda').textContent === "
                              "'\\u2014' ? 1 : 0;"),
            1);
  EXPECT_GE(page.Number(row + "return +r.querySelector('td.headline').textContent.slice(4);"), 0.0);
}

// The flag's two positions, over plain HTTP (no browser needed).
TEST(DashboardServer, ServedByDefaultAndNotWithDashboardFalse) {
  ServerProcess on;
  ASSERT_TRUE(on.started()) << on.banner();
  EXPECT_THAT(testing::HttpGet(on.metrics_port(), "/"), ::testing::StartsWith("HTTP/1.0 200"));
  EXPECT_THAT(testing::HttpGet(on.metrics_port(), "/"), ::testing::HasSubstr("<!doctype html>"));
  EXPECT_THAT(testing::HttpGet(on.metrics_port(), "/api/sessions"),
              ::testing::HasSubstr("{\"sessions\":[],\"groups\":[]}"));

  ServerProcess off({"--dashboard=false"});
  ASSERT_TRUE(off.started()) << off.banner();
  for (const char* path : {"/", "/api/sessions", "/api/metrics?session=a", "/api/decision"}) {
    EXPECT_THAT(testing::HttpGet(off.metrics_port(), path), ::testing::StartsWith("HTTP/1.0 404"))
        << path;
  }
  EXPECT_THAT(testing::HttpGet(off.metrics_port(), "/metrics"),
              ::testing::StartsWith("HTTP/1.0 200"));
}

}  // namespace
}  // namespace f2obo
