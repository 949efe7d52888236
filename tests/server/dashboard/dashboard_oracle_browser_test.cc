// An oracle session's page in headless Chromium against a real f2obo-server:
// the session has no exact metrics (its f and g are the client's), so the
// page shows what it does have (the prequential loss as the list's
// headline, the round's own figures, one chart per named hyperparameter
// with its history, the decision's entries under their names) and never
// a BLReg of 0 or "exact metrics on 0 of 0 due steps".
#include <gmock/gmock.h>
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "tests/server/dashboard/webdriver.h"
#include "tests/server/e2e_support.h"
#include "tests/server/oracle_client.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using google::protobuf::Value;
using testing::BrowserSession;
using testing::ChromeDriver;
using testing::FamilyAnswerer;
using testing::FamilyCase;
using testing::OracleClient;
using testing::ServerProcess;

constexpr auto kWait = std::chrono::seconds(90);

bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + kWait;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return done();
}

class Page {
 public:
  explicit Page(BrowserSession& b) : b_(b) {}
  double Number(const std::string& script) {
    absl::StatusOr<Value> v = b_.Execute(script);
    return v.ok() && v->has_number_value() ? v->number_value() : -1;
  }
  std::string Text(const std::string& script) {
    absl::StatusOr<Value> v = b_.Execute(script);
    return v.ok() && v->has_string_value() ? v->string_value() : "<none>";
  }
  // data-points of the session's line in chart `metric` (-1: no line).
  double Points(const std::string& metric, const std::string& session) {
    return Number("const l = document.querySelector('svg[data-metric=\"" + metric +
                  "\"] path.line[data-session=\"" + session + "\"]');" +
                  "return l ? +l.dataset.points : -1;");
  }
  double Charts(const std::string& metric) {
    return Number("return document.querySelectorAll('svg[data-metric=\"" + metric +
                  "\"]').length;");
  }

 private:
  BrowserSession& b_;
};

TEST(DashboardBrowser, OracleSessionsShowTheirHyperparametersAndNoBLReg) {
  ServerProcess server;
  ASSERT_TRUE(server.started()) << server.banner();
  auto stub =
      v1::F2obo::NewStub(grpc::CreateChannel(server.target(), grpc::InsecureChannelCredentials()));
  const FamilyCase ridge = testing::AllFamilyCases()[1];
  ASSERT_EQ(ridge.name, "ridge_hpo");
  // The built-in twin only gives the dimensions the oracle session takes.
  v1::SessionSpec spec = testing::SpecFor(ridge, "f2obo", 7);
  spec.mutable_metrics()->set_exact_every(0);
  spec.mutable_options()->set_alpha(0.1);
  spec.mutable_options()->set_beta(0.5);
  testing::KeepReadOptions(&spec);
  v1::SessionInfo built_in;
  {
    grpc::ClientContext ctx;
    v1::CreateSessionRequest req;
    req.set_session_id("twin");
    *req.mutable_spec() = spec;
    ASSERT_TRUE(stub->CreateSession(&ctx, req, &built_in).ok());
  }
  ASSERT_GE(built_in.x_dim(), 2);
  spec.mutable_family()->Clear();
  spec.mutable_family()->set_name("oracle");
  spec.mutable_family()->set_x_dim(built_in.x_dim());
  spec.mutable_family()->set_y_dim(built_in.bilevel().y_dim());
  spec.mutable_metrics()->clear_exact_every();
  // Named as a Tuner names its hyperparameter dict.
  v1::XGroup* first = spec.add_x_groups();
  first->set_name("lr_scale");
  first->set_size(1);
  v1::XGroup* rest = spec.add_x_groups();
  rest->set_name("weight_decay");
  rest->set_size(built_in.x_dim() - 1);
  {
    grpc::ClientContext ctx;
    v1::CreateSessionRequest req;
    req.set_session_id("orc");
    *req.mutable_spec() = spec;
    v1::SessionInfo info;
    const grpc::Status s = stub->CreateSession(&ctx, req, &info);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  constexpr int kSteps = 8;
  FamilyAnswerer answerer(ridge);
  OracleClient client(stub.get());
  for (int t = 1; t <= kSteps; ++t) {
    const testing::OracleOutcome out = client.Step("orc", t, &answerer);
    ASSERT_TRUE(out.reply.has_value()) << out.status.error_message();
  }

  ChromeDriver driver(F2OBO_CHROMEDRIVER_PATH, 60);
  ASSERT_TRUE(driver.status().ok()) << driver.status();
  absl::StatusOr<BrowserSession> browser =
      BrowserSession::Start(driver.port(), F2OBO_CHROMIUM_PATH,
                            {"--headless", "--no-sandbox", "--disable-gpu",
                             "--disable-background-networking", "--window-size=1400,1100"});
  ASSERT_TRUE(browser.ok()) << browser.status();
  Page page(*browser);
  ASSERT_TRUE(
      browser
          ->Navigate("http://127.0.0.1:" + std::to_string(server.metrics_port()) + "/#session=orc")
          .ok());
  // One chart per named hyperparameter, a point per step.
  EXPECT_TRUE(WaitFor([&] { return page.Points("hp:lr_scale", "orc") == kSteps; }))
      << "hp:lr_scale points: " << page.Points("hp:lr_scale", "orc");
  EXPECT_EQ(page.Points("hp:weight_decay", "orc"), kSteps);
  // The round's own figures.
  for (const char* chart : {"upper_loss_before", "lambda", "hypergradient_norm", "residual_y",
                            "residual_z", "gamma", "inner_iterations", "latency_ms"}) {
    EXPECT_EQ(page.Points(chart, "orc"), kSteps) << chart;
  }
  // No exact metric is drawn, not even as zeros.
  for (const char* chart : {"blreg", "estimate", "regret_term", "value", "drift_sum"}) {
    EXPECT_EQ(page.Charts(chart), 0) << chart;
  }
  const std::string subtitle = page.Text("return document.getElementById('subtitle').textContent;");
  EXPECT_THAT(subtitle,
              ::testing::HasSubstr("no exact metrics: f and g are computed by the client"));
  EXPECT_THAT(subtitle, ::testing::Not(::testing::HasSubstr("due step")));
  // The list's headline is the newest prequential loss, not BLReg.
  const std::string row = "const r = document.querySelector('tr[data-id=\"orc\"]');";
  EXPECT_TRUE(WaitFor([&] {
    return page.Text(row + "return r ? r.querySelector('td.headline').textContent : '';")
               .rfind("f ", 0) == 0;
  })) << page.Text(row + "return r ? r.querySelector('td.headline').textContent : '';");
  // The built-in twin (exact_every = 0 too) says why it has none.
  EXPECT_THAT(page.Text("const r = document.querySelector('tr[data-id=\"twin\"]');"
                        "return r.querySelector('td.headline').title;"),
              ::testing::HasSubstr("exact_every = 0"));
  // The decision's entries under their names.
  const std::string values = page.Text(
      "const d = document.querySelector('.decision-row[data-session=\"orc\"] "
      ".decision-values'); return d ? d.textContent : '';");
  EXPECT_THAT(values, ::testing::HasSubstr("lr_scale"));
  EXPECT_THAT(values, ::testing::HasSubstr("weight_decay[0]"));
  EXPECT_TRUE(client.Close().ok());
}

}  // namespace
}  // namespace f2obo
