#include "server/metrics/http_exporter.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/metrics/registry.h"
#include "server/metrics/text_format.h"

namespace f2obo::metrics {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

struct HttpResult {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// A minimal HTTP/1.0 client: one request per connection, read to EOF.
// Timeouts bound a broken server instead of hanging the test.
absl::StatusOr<HttpResult> Fetch(int port, const std::string& target,
                                 const std::string& method = "GET") {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  timeval timeout = {10, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return absl::UnavailableError(absl::StrCat("connect: ", strerror(err)));
  }
  const std::string request =
      absl::StrCat(method, " ", target, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  if (send(fd, request.data(), request.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(request.size())) {
    close(fd);
    return absl::InternalError("short send");
  }
  std::string raw;
  char buf[4096];
  ssize_t n;
  while ((n = recv(fd, buf, sizeof(buf), 0)) > 0) raw.append(buf, static_cast<size_t>(n));
  const int err = errno;
  close(fd);
  if (n < 0) return absl::InternalError(absl::StrCat("recv: ", strerror(err)));

  const size_t end = raw.find("\r\n\r\n");
  if (end == std::string::npos) return absl::InternalError("no header end in: " + raw);
  HttpResult result;
  result.body = raw.substr(end + 4);
  std::vector<std::string> lines = absl::StrSplit(raw.substr(0, end), "\r\n");
  std::vector<std::string> status_line = absl::StrSplit(lines[0], ' ');
  if (status_line.size() < 2 || !absl::SimpleAtoi(status_line[1], &result.status)) {
    return absl::InternalError("bad status line: " + lines[0]);
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == std::string::npos) continue;
    result.headers[absl::AsciiStrToLower(lines[i].substr(0, colon))] =
        std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
  }
  return result;
}

std::unique_ptr<HttpExporter> StartLoopback() {
  absl::StatusOr<std::unique_ptr<HttpExporter>> exporter = HttpExporter::Start("127.0.0.1:0", 2);
  EXPECT_TRUE(exporter.ok()) << exporter.status();
  return exporter.ok() ? std::move(*exporter) : nullptr;
}

TEST(HttpExporterTest, ServesMetrics) {
  Registry registry;
  registry.AddCounter("f2obo_requests_total", "Requests.", {"method"})
      .value()
      ->WithLabels({"Step"})
      .Increment(7);
  registry.AddHistogram("f2obo_step_seconds", "Latency.", {}, {0.1, 1}).value();
  std::unique_ptr<HttpExporter> exporter = StartLoopback();
  ASSERT_NE(exporter, nullptr);
  EXPECT_GT(exporter->port(), 0);
  exporter->Handle("/metrics", MetricsHandler(&registry));

  absl::StatusOr<HttpResult> r = Fetch(exporter->port(), "/metrics");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->headers["content-type"], "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(r->headers["content-type"], kTextFormatContentType);
  EXPECT_EQ(r->headers["content-length"], absl::StrCat(r->body.size()));
  EXPECT_EQ(r->body, registry.Render());
  EXPECT_THAT(r->body, HasSubstr("f2obo_requests_total{method=\"Step\"} 7\n"));
}

TEST(HttpExporterTest, UnknownPathsAre404) {
  std::unique_ptr<HttpExporter> exporter = StartLoopback();
  ASSERT_NE(exporter, nullptr);
  exporter->Handle("/metrics", [](const HttpExporter::Request&) {
    return HttpExporter::Response{200, "text/plain", "m"};
  });
  for (const char* target : {"/nope", "/", "/metrics/extra", "/metric", "/../metrics/x"}) {
    absl::StatusOr<HttpResult> r = Fetch(exporter->port(), target);
    ASSERT_TRUE(r.ok()) << target << ": " << r.status();
    EXPECT_EQ(r->status, 404) << target;
  }
}

TEST(HttpExporterTest, PassesRequestAndHonoursHandlerResponse) {
  std::unique_ptr<HttpExporter> exporter = StartLoopback();
  ASSERT_NE(exporter, nullptr);
  exporter->Handle("/echo", [](const HttpExporter::Request& request) {
    return HttpExporter::Response{
        201, "application/json",
        absl::StrCat(request.method, "|", request.path, "|", request.query_string)};
  });
  absl::StatusOr<HttpResult> r = Fetch(exporter->port(), "/echo?session=a%20b&x=1");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->headers["content-type"], "application/json");
  EXPECT_EQ(r->body, "GET|/echo|session=a%20b&x=1");

  r = Fetch(exporter->port(), "/echo", "HEAD");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 201);
  EXPECT_EQ(r->headers["content-length"], "11");  // "HEAD|/echo|"
  EXPECT_THAT(r->body, IsEmpty());

  // Handlers can be replaced while serving.
  exporter->Handle("/echo", [](const HttpExporter::Request&) {
    return HttpExporter::Response{200, "text/plain", "replaced"};
  });
  r = Fetch(exporter->port(), "/echo");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->body, "replaced");
}

// Listening TCP sockets on `port` per /proc/net/tcp{,6}: hex local
// addresses as the kernel prints them.
std::vector<std::string> ListeningAddresses(const std::string& table, int port) {
  std::vector<std::string> addresses;
  std::ifstream in(table);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
    if (f.size() < 4 || f[3] != "0A") continue;  // 0A = TCP_LISTEN
    const std::vector<std::string> local = absl::StrSplit(f[1], ':');
    int local_port = 0;
    if (local.size() == 2 && absl::SimpleHexAtoi(local[1], &local_port) && local_port == port) {
      addresses.push_back(local[0]);
    }
  }
  return addresses;
}

TEST(HttpExporterTest, BindsOnlyTheGivenLoopbackAddress) {
  std::unique_ptr<HttpExporter> exporter = StartLoopback();
  ASSERT_NE(exporter, nullptr);
  // 127.0.0.1 in the kernel's byte order, and nothing on any other address
  // or on IPv6.
  EXPECT_THAT(ListeningAddresses("/proc/net/tcp", exporter->port()),
              ::testing::ElementsAre("0100007F"));
  EXPECT_THAT(ListeningAddresses("/proc/net/tcp6", exporter->port()), IsEmpty());
}

TEST(HttpExporterTest, BindsIpv6LoopbackWhenAvailable) {
  absl::StatusOr<std::unique_ptr<HttpExporter>> exporter = HttpExporter::Start("[::1]:0", 1);
  if (!exporter.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << exporter.status();
  EXPECT_THAT(ListeningAddresses("/proc/net/tcp6", (*exporter)->port()),
              ::testing::ElementsAre("00000000000000000000000001000000"));
  EXPECT_THAT(ListeningAddresses("/proc/net/tcp", (*exporter)->port()), IsEmpty());
}

TEST(HttpExporterTest, RejectsMalformedAddressesAndThreadCounts) {
  for (const char* address :
       {"9464", "+9464", "localhost:9464", "127.0.0.1", "127.0.0.1:", "127.0.0.1:65536",
        "127.0.0.1:80s", "127.0.0.1:1,127.0.0.1:2", "127.1:80", "[::1:0", "[]:0"}) {
    absl::StatusOr<std::unique_ptr<HttpExporter>> e = HttpExporter::Start(address, 1);
    EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument) << address;
    EXPECT_THAT(std::string(e.status().message()), HasSubstr(address));
  }
  EXPECT_EQ(HttpExporter::Start("127.0.0.1:0", 0).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HttpExporterTest, TakenPortIsUnavailable) {
  std::unique_ptr<HttpExporter> first = StartLoopback();
  ASSERT_NE(first, nullptr);
  const std::string address = absl::StrCat("127.0.0.1:", first->port());
  absl::StatusOr<std::unique_ptr<HttpExporter>> second = HttpExporter::Start(address, 1);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  EXPECT_THAT(std::string(second.status().message()), HasSubstr(address));
}

TEST(HttpExporterTest, StopClosesTheListener) {
  std::unique_ptr<HttpExporter> exporter = StartLoopback();
  ASSERT_NE(exporter, nullptr);
  const int port = exporter->port();
  exporter->Stop();
  exporter->Stop();  // idempotent
  absl::StatusOr<HttpResult> r = Fetch(port, "/metrics");
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
}

TEST(HttpExporterTest, ServesConcurrentScrapesWhileMetricsChange) {
  Registry registry;
  Counter& counter = registry.AddCounter("c_total", "C.", {}).value()->WithLabels({});
  std::unique_ptr<HttpExporter> exporter = StartLoopback();
  ASSERT_NE(exporter, nullptr);
  exporter->Handle("/metrics", MetricsHandler(&registry));
  std::vector<std::thread> threads;
  std::vector<int> ok(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        counter.Increment();
        absl::StatusOr<HttpResult> r = Fetch(exporter->port(), "/metrics");
        if (r.ok() && r->status == 200 && r->body.rfind("# HELP c_total C.\n", 0) == 0) ++ok[t];
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_THAT(ok, ::testing::Each(25));
  EXPECT_EQ(counter.Value(), 100);
}

}  // namespace
}  // namespace f2obo::metrics
