// Multi-task sessions' metrics over real gRPC: the per-task
// series published over the tasks seen, and Prometheus' F and first tasks.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tests/server/multitask_e2e_fixture.h"

namespace f2obo {
namespace {

using namespace multitask_e2e;  // NOLINT: the fixture and its helpers

TEST_F(MultitaskE2e, PublishesMetricsOverTheTasksSeen) {
  const std::string id = Create("mt-metrics", MultitaskSpec("mt_f2obo", 1));
  for (int64_t t = 1; t <= 3; ++t) ASSERT_TRUE(client_->Step(TaskRequest(id, t)).ok());
  v1::WatchMetricsRequest watch;
  watch.set_session_id(id);
  auto ctx = client_->NewContext();
  auto reader = client_->stub().WatchMetrics(ctx.get(), watch);
  std::vector<int> seen;
  for (int64_t t = 1; t <= 3; ++t) {
    v1::StepMetrics m;
    ASSERT_TRUE(reader->Read(&m));
    ASSERT_EQ(m.t(), t);
    ASSERT_TRUE(m.has_exact()) << m.exact_skipped_reason();
    for (const TaskData& task : TaskStep(t).tasks) {
      if (std::find(seen.begin(), seen.end(), task.task) == seen.end()) seen.push_back(task.task);
    }
    EXPECT_EQ(m.exact().multitask().tasks_evaluated(), static_cast<int>(seen.size()));
    EXPECT_GT(m.exact().multitask().true_gradient_norm(), 0.0);
    EXPECT_TRUE(m.exact().multitask().converged());
    EXPECT_EQ(m.exact().running().evaluated_steps(), t);
  }
  ctx->TryCancel();
}

// The value of the series `selector` (a name with its labels) on /metrics,
// or nullopt when it is not exported.
std::optional<double> Scraped(const std::string& text, const std::string& selector) {
  const std::string quoted = std::regex_replace(selector, std::regex(R"([{}])"), R"(\$&)");
  std::smatch m;
  if (!std::regex_search(text, m, std::regex("\n" + quoted + " ([^\n]+)\n"))) {
    return std::nullopt;
  }
  return std::stod(m[1]);
}

TEST_F(MultitaskE2e, ExportsPrometheusSeriesOfFAndOfTheFirstTasksOnly) {
  const std::string id = Create("mt-prom", MultitaskSpec("rsvrb", 1));
  const std::vector<std::vector<int>> schedule = {{0, 5}, {3, 1}, {2, 39}, {5, 0}};
  std::mt19937_64 rng(77);
  for (size_t k = 0; k < schedule.size(); ++k) {
    v1::StepRequest req;
    req.set_session_id(id);
    req.set_t(static_cast<int64_t>(k) + 1);
    for (const TaskData& task :
         testing::LogisticTasksStep(schedule[k], kFeatures, kClasses, 12, rng).tasks) {
      ToProto(task, req.add_tasks());
    }
    ASSERT_TRUE(client_->Step(req).ok());
  }
  // The server-wide observer sees a step's metrics before WatchMetrics
  // delivers them: once the last step is read, /metrics has it.
  v1::WatchMetricsRequest watch;
  watch.set_session_id(id);
  auto ctx = client_->NewContext();
  auto reader = client_->stub().WatchMetrics(ctx.get(), watch);
  v1::StepMetrics last;
  while (last.t() < static_cast<int64_t>(schedule.size())) ASSERT_TRUE(reader->Read(&last));
  ctx->TryCancel();
  ASSERT_TRUE(last.has_exact()) << last.exact_skipped_reason();
  const std::string text = testing::HttpGet(server_->metrics_port(), "/metrics");
  const std::string s = "{session_id=\"mt-prom\"}";
  const absl::StatusOr<v1::SessionInfo> info = client_->GetSession(id);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(Scraped(text, "f2obo_multitask_session_regret" + s),
            info->metrics().multitask().blreg());
  EXPECT_GT(info->metrics().multitask().blreg(), 0.0);
  EXPECT_EQ(Scraped(text, "f2obo_multitask_session_gradient_norm" + s),
            last.exact().multitask().true_gradient_norm());
  EXPECT_EQ(Scraped(text, "f2obo_multitask_session_regret_term" + s),
            last.exact().multitask().regret_term());
  EXPECT_EQ(Scraped(text, "f2obo_multitask_session_tasks_touched" + s), 6);
  EXPECT_EQ(Scraped(text, "f2obo_multitask_session_tasks_evaluated" + s), 6);
  EXPECT_EQ(Scraped(text, "f2obo_multitask_session_exact_seconds" + s),
            last.exact().multitask().seconds());
  EXPECT_GT(last.exact().multitask().seconds(), 0.0);
  EXPECT_EQ(Scraped(text, "f2obo_session_step" + s), 4);
  EXPECT_EQ(Scraped(text, "f2obo_session_blreg" + s), std::nullopt) << "the bilevel class's";
  // Per task: tasks 0-3 (all seen here), never 5 or 39.
  ASSERT_EQ(info->metrics().multitask().task_regret_size(), 4);
  // (A task's regret term is 0 where its gradient pushes x against the box.)
  double task_regret_sum = 0;
  for (int task = 0; task < 4; ++task) {
    const std::string labels = "{session_id=\"mt-prom\",task=\"" + std::to_string(task) + "\"}";
    EXPECT_EQ(Scraped(text, "f2obo_multitask_task_regret" + labels),
              info->metrics().multitask().task_regret(task))
        << task;
    task_regret_sum += info->metrics().multitask().task_regret(task);
    EXPECT_NE(Scraped(text, "f2obo_multitask_task_regret_term" + labels), std::nullopt);
    EXPECT_NE(Scraped(text, "f2obo_multitask_task_objective" + labels), std::nullopt);
  }
  EXPECT_GT(task_regret_sum, 0.0);
  EXPECT_EQ(text.find("task=\"5\""), std::string::npos);
  EXPECT_EQ(text.find("task=\"39\""), std::string::npos);

  // Deleting the session drops every one of its series.
  ASSERT_TRUE(client_->DeleteSession(id).ok());
  EXPECT_EQ(testing::HttpGet(server_->metrics_port(), "/metrics").find("mt-prom"),
            std::string::npos);
}

}  // namespace
}  // namespace f2obo
