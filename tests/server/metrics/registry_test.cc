#include "server/metrics/registry.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/text_format.h"

namespace f2obo::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(RegistryTest, RendersEveryTypeExactly) {
  Registry registry;
  CounterFamily* requests =
      registry.AddCounter("f2obo_requests_total", "Requests handled.", {"method", "code"}).value();
  GaugeFamily* sessions = registry.AddGauge("f2obo_sessions", "Open sessions.", {}).value();
  HistogramFamily* latency =
      registry.AddHistogram("f2obo_step_seconds", "Step latency.", {"algorithm"}, {0.005, 1, 2.5})
          .value();
  requests->WithLabels({"Step", "OK"}).Increment(3);
  requests->WithLabels({"Create", "OK"}).Increment();
  requests->WithLabels({"Step", "INVALID_ARGUMENT"}).Increment(0.5);
  sessions->WithLabels({}).Set(2);
  latency->WithLabels({"sf2obo"}).Observe(10);
  latency->WithLabels({"f2obo"}).Observe(0.25);
  latency->WithLabels({"f2obo"}).Observe(2);

  EXPECT_EQ(registry.Render(),
            "# HELP f2obo_requests_total Requests handled.\n"
            "# TYPE f2obo_requests_total counter\n"
            "f2obo_requests_total{method=\"Create\",code=\"OK\"} 1\n"
            "f2obo_requests_total{method=\"Step\",code=\"INVALID_ARGUMENT\"} 0.5\n"
            "f2obo_requests_total{method=\"Step\",code=\"OK\"} 3\n"
            "# HELP f2obo_sessions Open sessions.\n"
            "# TYPE f2obo_sessions gauge\n"
            "f2obo_sessions 2\n"
            "# HELP f2obo_step_seconds Step latency.\n"
            "# TYPE f2obo_step_seconds histogram\n"
            "f2obo_step_seconds_bucket{algorithm=\"f2obo\",le=\"0.005\"} 0\n"
            "f2obo_step_seconds_bucket{algorithm=\"f2obo\",le=\"1\"} 1\n"
            "f2obo_step_seconds_bucket{algorithm=\"f2obo\",le=\"2.5\"} 2\n"
            "f2obo_step_seconds_bucket{algorithm=\"f2obo\",le=\"+Inf\"} 2\n"
            "f2obo_step_seconds_sum{algorithm=\"f2obo\"} 2.25\n"
            "f2obo_step_seconds_count{algorithm=\"f2obo\"} 2\n"
            "f2obo_step_seconds_bucket{algorithm=\"sf2obo\",le=\"0.005\"} 0\n"
            "f2obo_step_seconds_bucket{algorithm=\"sf2obo\",le=\"1\"} 0\n"
            "f2obo_step_seconds_bucket{algorithm=\"sf2obo\",le=\"2.5\"} 0\n"
            "f2obo_step_seconds_bucket{algorithm=\"sf2obo\",le=\"+Inf\"} 1\n"
            "f2obo_step_seconds_sum{algorithm=\"sf2obo\"} 10\n"
            "f2obo_step_seconds_count{algorithm=\"sf2obo\"} 1\n");
}

TEST(RegistryTest, LabelFreeFamilyRendersZeroAndEmptyFamilyNothing) {
  Registry registry;
  ASSERT_TRUE(registry.AddCounter("a_total", "A.", {}).ok());
  ASSERT_TRUE(registry.AddGauge("b", "B.", {"session"}).ok());
  EXPECT_EQ(registry.Render(), "# HELP a_total A.\n# TYPE a_total counter\na_total 0\n");
}

TEST(RegistryTest, EscapesHelpAndLabelValues) {
  Registry registry;
  GaugeFamily* g = registry.AddGauge("g", "Line one\nback\\slash \"quotes\" stay.", {"v"}).value();
  g->WithLabels({"a\"b\\c\nd"}).Set(1);
  EXPECT_EQ(registry.Render(),
            "# HELP g Line one\\nback\\\\slash \"quotes\" stay.\n"
            "# TYPE g gauge\n"
            "g{v=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(RegistryTest, InvalidUtf8LabelValuesAreReplaced) {
  Registry registry;
  GaugeFamily* g = registry.AddGauge("g", "G.", {"v"}).value();
  g->WithLabels({"ok\xff\xc0\xaf\xed\xa0\x80\xc3\xa9"}).Set(1);
  // Each stray byte becomes U+FFFD; the valid "é" is kept.
  EXPECT_THAT(registry.Render(),
              HasSubstr("g{v=\"ok\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"
                        "\xEF\xBF\xBD\xEF\xBF\xBD\xc3\xa9\"} 1\n"));
}

TEST(RegistryTest, FormatsValuesForRoundTrip) {
  EXPECT_EQ(FormatValue(0.005), "0.005");
  EXPECT_EQ(FormatValue(1), "1");
  EXPECT_EQ(FormatValue(2.5), "2.5");
  EXPECT_EQ(FormatValue(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(FormatValue(1e21), "1e+21");
  EXPECT_EQ(FormatValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(FormatValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(FormatValue(std::nan("")), "NaN");
  const double tricky = 1.0 / 3.0;
  EXPECT_EQ(std::strtod(FormatValue(tricky).c_str(), nullptr), tricky);
}

TEST(RegistryTest, RejectsInvalidNamesNamingThem) {
  Registry registry;
  const auto expect_invalid = [](const absl::Status& s, const std::string& needle) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(needle));
  };
  expect_invalid(registry.AddGauge("9lives", "H.", {}).status(), "\"9lives\"");
  expect_invalid(registry.AddGauge("has-dash", "H.", {}).status(), "\"has-dash\"");
  expect_invalid(registry.AddGauge("", "H.", {}).status(), "\"\"");
  expect_invalid(registry.AddCounter("requests", "H.", {}).status(), "\"requests\"");
  expect_invalid(registry.AddGauge("open_total", "H.", {}).status(), "\"open_total\"");
  expect_invalid(registry.AddGauge("x_count", "H.", {}).status(), "\"x_count\"");
  EXPECT_TRUE(registry.AddCounter("x_bucket_total", "H.", {}).ok());
  expect_invalid(registry.AddGauge("g", "H.", {"__name"}).status(), "\"__name\"");
  expect_invalid(registry.AddGauge("g", "H.", {"1st"}).status(), "\"1st\"");
  expect_invalid(registry.AddGauge("g", "H.", {"a:b"}).status(), "\"a:b\"");
  expect_invalid(registry.AddGauge("g", "H.", {"le"}).status(), "\"le\"");
  expect_invalid(registry.AddGauge("g", "H.", {"a", "a"}).status(), "duplicate label name \"a\"");
  expect_invalid(registry.AddGauge("g", "", {}).status(), "\"g\"");
  // Nothing above registered "g", so it is still free; colons are legal.
  EXPECT_TRUE(registry.AddGauge("g", "H.", {"_ok", "Ok2"}).ok());
  EXPECT_TRUE(registry.AddGauge("job:up", "H.", {}).ok());
}

TEST(RegistryTest, RejectsDuplicateAndCollidingFamilies) {
  Registry registry;
  ASSERT_TRUE(registry.AddHistogram("lat", "H.", {}, {1}).ok());
  absl::Status dup = registry.AddGauge("lat", "H.", {}).status();
  EXPECT_EQ(dup.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(dup.message()), HasSubstr("\"lat\""));
  // A histogram "lat_sum" would render "lat_sum", which "lat" already does.
  absl::Status clash = registry.AddHistogram("lat_sum", "H.", {}, {1}).status();
  EXPECT_EQ(clash.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(clash.message()), HasSubstr("\"lat_sum\""));
}

TEST(RegistryTest, HistogramBucketsAreCumulativeWithInf) {
  Registry registry;
  HistogramFamily* family = registry.AddHistogram("h", "H.", {}, {0.005, 1, 2.5, HUGE_VAL}).value();
  EXPECT_THAT(family->config().bounds, ElementsAre(0.005, 1, 2.5));  // +Inf dropped
  Histogram& h = family->WithLabels({});
  for (double v : {0.001, 0.005, 0.5, 1.0, 2.0, 3.0, 100.0}) h.Observe(v);
  // le is inclusive: 0.005 lands in the first bucket, 1.0 in the second.
  EXPECT_THAT(h.CumulativeCounts(), ElementsAre(2, 4, 5, 7));
  EXPECT_EQ(h.Count(), 7u);
  EXPECT_DOUBLE_EQ(h.Sum(), 106.506);
  h.Observe(std::nan(""));
  EXPECT_THAT(h.CumulativeCounts(), ElementsAre(2, 4, 5, 8));
  EXPECT_TRUE(std::isnan(h.Sum()));
  EXPECT_THAT(registry.Render(), HasSubstr("h_bucket{le=\"+Inf\"} 8\nh_sum NaN\nh_count 8\n"));
}

TEST(RegistryTest, RejectsBadBucketBounds) {
  Registry registry;
  for (const std::vector<double>& bounds : std::vector<std::vector<double>>{
           {1, 1}, {2, 1}, {std::nan("")}, {-HUGE_VAL, 1}, {HUGE_VAL, HUGE_VAL}}) {
    absl::Status s = registry.AddHistogram("h", "H.", {}, bounds).status();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr("\"h\""));
  }
  HistogramFamily* only_inf = registry.AddHistogram("h", "H.", {}, {}).value();
  only_inf->WithLabels({}).Observe(-5);
  EXPECT_EQ(registry.Render(),
            "# HELP h H.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum -5\nh_count 1\n");
}

TEST(RegistryTest, CounterAndGaugeUpdates) {
  Registry registry;
  Counter& c = registry.AddCounter("c_total", "C.", {}).value()->WithLabels({});
  c.Increment();
  c.Increment(2.5);
  c.Increment(-1);  // ignored: counters never go down
  c.Increment(std::nan(""));
  EXPECT_EQ(c.Value(), 3.5);
  Gauge& g = registry.AddGauge("g", "G.", {}).value()->WithLabels({});
  g.Set(10);
  g.Add(-2.5);
  EXPECT_EQ(g.Value(), 7.5);
}

TEST(RegistryTest, WithLabelsReturnsStableSeriesAndChecksArity) {
  Registry registry;
  CounterFamily* family = registry.AddCounter("c_total", "C.", {"a", "b"}).value();
  Counter& first = family->WithLabels({"x", "y"});
  family->WithLabels({"p", "q"});  // inserting others must not move "first"
  EXPECT_EQ(&family->WithLabels({"x", "y"}), &first);
  absl::StatusOr<Counter*> wrong = family->TryWithLabels({"x"});
  EXPECT_EQ(wrong.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(wrong.status().message()), HasSubstr("\"c_total\""));
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(family->WithLabels({"x"}), "c_total");
}

TEST(RegistryTest, RemoveAndClearDropSeries) {
  Registry registry;
  GaugeFamily* family = registry.AddGauge("g", "G.", {"session"}).value();
  family->WithLabels({"s1"}).Set(1);
  family->WithLabels({"s2"}).Set(2);
  EXPECT_TRUE(family->Remove({"s1"}));
  EXPECT_FALSE(family->Remove({"s1"}));
  EXPECT_EQ(registry.Render(), "# HELP g G.\n# TYPE g gauge\ng{session=\"s2\"} 2\n");
  // A removed series comes back fresh if it is asked for again.
  EXPECT_EQ(family->WithLabels({"s1"}).Value(), 0);
  family->Clear();
  EXPECT_EQ(family->size(), 0u);
  EXPECT_EQ(registry.Render(), "");
}

TEST(RegistryTest, ConcurrentUpdatesSumExactly) {
  Registry registry;
  CounterFamily* counters = registry.AddCounter("c_total", "C.", {"k"}).value();
  GaugeFamily* gauges = registry.AddGauge("g", "G.", {}).value();
  HistogramFamily* histograms = registry.AddHistogram("h", "H.", {}, {0.5}).value();
  constexpr int kThreads = 8;
  constexpr int kPerThread = 100000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      // Every thread also races to create the shared series.
      Counter& shared = counters->WithLabels({"shared"});
      Gauge& gauge = gauges->WithLabels({});
      Histogram& histogram = histograms->WithLabels({});
      for (int i = 0; i < kPerThread; ++i) {
        shared.Increment();
        gauge.Add(t % 2 == 0 ? 1 : -1);
        histogram.Observe(i % 2 == 0 ? 0 : 1);
        if (i % 1000 == 0) registry.Render();  // readers alongside writers
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(counters->WithLabels({"shared"}).Value(), double{kThreads} * kPerThread);
  EXPECT_EQ(gauges->WithLabels({}).Value(), 0);
  const Histogram& h = histograms->WithLabels({});
  EXPECT_EQ(h.Count(), uint64_t{kThreads} * kPerThread);
  EXPECT_THAT(h.CumulativeCounts(),
              ElementsAre(uint64_t{kThreads} * kPerThread / 2, uint64_t{kThreads} * kPerThread));
  EXPECT_EQ(h.Sum(), double{kThreads} * kPerThread / 2);
}

// Runs `promtool check metrics` on `text`; returns its exit status and
// fills `output` with what it printed.
int RunPromtool(const std::string& promtool, const std::string& text, std::string* output) {
  char path[] = "/tmp/promtool_output_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return -1;
  close(fd);
  const std::string command = promtool + " check metrics >" + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "w");
  if (pipe == nullptr) return -1;
  fwrite(text.data(), 1, text.size(), pipe);
  const int status = pclose(pipe);
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  *output = ss.str();
  unlink(path);
  return status;
}

TEST(RegistryTest, OutputPassesPromtool) {
  const std::string promtool = PROMTOOL_PATH;
  if (promtool.empty() || absl::EndsWith(promtool, "NOTFOUND") ||
      access(promtool.c_str(), X_OK) != 0) {
    GTEST_SKIP() << "promtool not found (Debian package \"prometheus\"); PROMTOOL_PATH=\""
                 << promtool << "\"";
  }
  Registry registry;
  CounterFamily* requests =
      registry.AddCounter("f2obo_requests_total", "Requests handled.", {"method", "code"}).value();
  requests->WithLabels({"Step", "OK"}).Increment(41);
  requests->WithLabels({"we\"ird\\\nvalue \xff", "OK"}).Increment(1e21);
  GaugeFamily* gauge =
      registry.AddGauge("f2obo_session_loss", "Loss with a\nnewline and \\.", {"session"}).value();
  gauge->WithLabels({"s1"}).Set(-0.125);
  gauge->WithLabels({"s2"}).Set(std::nan(""));
  gauge->WithLabels({"s3"}).Set(-HUGE_VAL);
  registry.AddGauge("f2obo_sessions", "Open sessions.", {}).value()->WithLabels({}).Set(3);
  HistogramFamily* latency = registry
                                 .AddHistogram("f2obo_step_seconds", "Step latency.", {"algorithm"},
                                               {0.0005, 0.005, 0.1, 1, 2.5, 10})
                                 .value();
  for (double v : {0.0001, 0.003, 0.2, 7.0, 50.0}) latency->WithLabels({"f2obo"}).Observe(v);
  latency->WithLabels({"sf2obo"});
  registry.AddHistogram("f2obo_batch_bytes", "Batch size.", {}, {}).value();

  std::string output;
  const std::string text = registry.Render();
  EXPECT_EQ(RunPromtool(promtool, text, &output), 0) << output << "\n--- input:\n" << text;
  // And the check is real: a lint problem makes it fail.
  EXPECT_NE(RunPromtool(promtool, "# TYPE x gauge\nx{le=\"1\"} 1\n", &output), 0);
}

}  // namespace
}  // namespace f2obo::metrics
