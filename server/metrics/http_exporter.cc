#include "server/metrics/http_exporter.h"

#include <arpa/inet.h>
#include <civetweb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "server/metrics/registry.h"
#include "server/metrics/text_format.h"

namespace f2obo::metrics {
namespace {

constexpr int kMaxThreads = 64;
// A client that stalls mid-request would otherwise hold a worker forever.
constexpr char kRequestTimeoutMs[] = "10000";

// A listen address, checked.
struct ListenAddress {
  std::string listening_ports;  // civetweb's option value
  int family = AF_INET;         // AF_INET or AF_INET6
  std::string wake_ip;          // where Stop() can reach the listener
};

// Checks "<IPv4>:<port>" / "[<IPv6>]:<port>"; civetweb's listening_ports
// syntax for these is the same.  Parsing it here, strictly, keeps
// civetweb's extensions out: a bare port or "+port" would bind every
// interface, "," several addresses, an "s"/"r" suffix TLS or redirects.
absl::StatusOr<ListenAddress> ParseListenAddress(const std::string& address) {
  const auto bad = [&](const char* why) {
    return absl::InvalidArgumentError(absl::StrCat(
        "invalid listen address \"", address, "\" (want <IPv4>:<port> or [<IPv6>]:<port>): ", why));
  };
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return bad("no port");
  const std::string host = address.substr(0, colon);
  const std::string port = address.substr(colon + 1);
  int port_number = 0;
  bool digits = !port.empty() && port.size() <= 5;
  for (char c : port) digits = digits && absl::ascii_isdigit(static_cast<unsigned char>(c));
  if (!digits || !absl::SimpleAtoi(port, &port_number) || port_number > 65535) {
    return bad("port must be a number in 0..65535");
  }
  ListenAddress parsed;
  parsed.listening_ports = address;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    in6_addr ip6;
    parsed.family = AF_INET6;
    parsed.wake_ip = host.substr(1, host.size() - 2);
    if (inet_pton(AF_INET6, parsed.wake_ip.c_str(), &ip6) != 1) {
      return bad("not a numeric IPv6 address");
    }
    if (!mg_check_feature(MG_FEATURES_IPV6)) return bad("civetweb was built without IPv6");
    if (IN6_IS_ADDR_UNSPECIFIED(&ip6)) parsed.wake_ip = "::1";
  } else {
    in_addr ip4;
    parsed.wake_ip = host;
    if (inet_pton(AF_INET, host.c_str(), &ip4) != 1) return bad("not a numeric IPv4 address");
    if (ip4.s_addr == htonl(INADDR_ANY)) parsed.wake_ip = "127.0.0.1";
  }
  return parsed;
}

// Opens and at once closes a TCP connection to ip:port; failures are fine.
void Poke(int family, const std::string& ip, int port) {
  sockaddr_storage storage = {};
  socklen_t len = 0;
  if (family == AF_INET6) {
    auto* a = reinterpret_cast<sockaddr_in6*>(&storage);
    a->sin6_family = AF_INET6;
    a->sin6_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET6, ip.c_str(), &a->sin6_addr);
    len = sizeof(*a);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&storage);
    a->sin_family = AF_INET;
    a->sin_port = htons(static_cast<uint16_t>(port));
    inet_pton(AF_INET, ip.c_str(), &a->sin_addr);
    len = sizeof(*a);
  }
  const int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  // Refused or not, the attempt is all that is needed.
  (void)connect(fd, reinterpret_cast<const sockaddr*>(&storage), len);
  close(fd);
}

// Writes the whole response.  The header block is built here rather than
// with mg_response_header_send, which formats its Date header with the
// non-reentrant gmtime() (Debian builds civetweb without REENTRANT_TIME) and
// so races when two workers answer at once.
void SendResponse(mg_connection* conn, const mg_request_info& info,
                  const HttpExporter::Response& response, bool with_body) {
  const time_t now = time(nullptr);
  tm utc = {};
  gmtime_r(&now, &utc);
  char date[64];
  strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &utc);
  const bool http10 = info.http_version != nullptr && strcmp(info.http_version, "1.0") == 0;
  // Metrics and dashboards are snapshots; a cached copy is a wrong one.
  // keep-alive is off, so every response closes its connection.
  const std::string head = absl::StrCat(
      http10 ? "HTTP/1.0 " : "HTTP/1.1 ", response.status, " ",
      mg_get_response_code_text(conn, response.status), "\r\n",
      "Content-Type: ", response.content_type, "\r\n", "Content-Length: ", response.body.size(),
      "\r\n", "Cache-Control: no-store\r\n", "Date: ", date, "\r\n", "Connection: close\r\n\r\n");
  mg_write(conn, head.data(), head.size());
  if (with_body && !response.body.empty()) {
    mg_write(conn, response.body.data(), response.body.size());
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpExporter>> HttpExporter::Start(const std::string& listen_address,
                                                                  int num_threads) {
  absl::StatusOr<ListenAddress> address = ParseListenAddress(listen_address);
  if (!address.ok()) return address.status();
  if (num_threads < 1 || num_threads > kMaxThreads) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_threads must be in 1..", kMaxThreads, ", got ", num_threads));
  }
  // mg_init_library is not thread-safe and must precede mg_start; a
  // function-local static makes the first Start() do it exactly once.  The
  // library is never de-initialised: exporters may come and go.  Its result
  // (the subset of the requested features, none here) carries no error.
  [[maybe_unused]] static const unsigned initialized = mg_init_library(0);

  const std::string threads = absl::StrCat(num_threads);
  // No document_root: civetweb then serves no files, only our handler.
  const char* options[] = {"listening_ports",
                           address->listening_ports.c_str(),
                           "num_threads",
                           threads.c_str(),
                           "request_timeout_ms",
                           kRequestTimeoutMs,
                           "enable_keep_alive",
                           "no",
                           nullptr};
  mg_callbacks callbacks = {};
  auto exporter = std::unique_ptr<HttpExporter>(new HttpExporter());
  exporter->family_ = address->family;
  exporter->wake_ip_ = address->wake_ip;
  mg_init_data init = {};
  init.callbacks = &callbacks;
  init.user_data = exporter.get();
  init.configuration_options = options;
  unsigned error_code = 0;
  char error_text[256] = "";
  mg_error_data error = {&error_code, error_text, sizeof(error_text)};
  exporter->ctx_ = mg_start2(&init, &error);
  if (exporter->ctx_ == nullptr) {
    const std::string reason = error_text[0] != '\0' ? std::string(error_text)
                                                     : absl::StrCat("civetweb error ", error_code);
    return absl::UnavailableError(
        absl::StrCat("cannot serve HTTP on ", listen_address, ": ", reason));
  }
  // "**" matches every path; Dispatch looks the path up in handlers_, so
  // handlers can be added later without touching civetweb.
  mg_set_request_handler(exporter->ctx_, "**", &HttpExporter::Dispatch, exporter.get());

  mg_server_port bound[4] = {};
  const int n = mg_get_server_ports(exporter->ctx_, 4, bound);
  if (n < 1 || bound[0].port <= 0) {
    return absl::InternalError(
        absl::StrCat("civetweb started on ", listen_address, " but reports no port"));
  }
  exporter->port_ = bound[0].port;
  return exporter;
}

HttpExporter::~HttpExporter() { Stop(); }

void HttpExporter::Stop() {
  if (ctx_ == nullptr) return;
  // civetweb 1.15's accept loop polls its listening socket in 2 s quanta and
  // only sees mg_stop's flag between them, so every shutdown would take up
  // to 2 s.  Connections to our own listener end the poll early; they are
  // repeated because only one that arrives after the flag is set helps
  // (an earlier one is accepted and just sees EOF).
  absl::Notification stopped;
  std::thread waker([&] {
    constexpr int kMaxPokes = 300;  // ~3 s, beyond civetweb's own quantum
    for (int i = 0; i < kMaxPokes && !stopped.HasBeenNotified(); ++i) {
      Poke(family_, wake_ip_, port_);
      stopped.WaitForNotificationWithTimeout(absl::Milliseconds(10));
    }
  });
  mg_stop(ctx_);  // Joins civetweb's threads, so no handler runs after this.
  stopped.Notify();
  waker.join();
  ctx_ = nullptr;
}

void HttpExporter::Handle(const std::string& path, Handler handler) {
  auto shared = std::make_shared<const Handler>(std::move(handler));
  absl::MutexLock lock(&mu_);
  handlers_[path] = std::move(shared);
}

int HttpExporter::Dispatch(mg_connection* conn, void* self) {
  return static_cast<HttpExporter*>(self)->Serve(conn);
}

int HttpExporter::Serve(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  Request request;
  if (info->request_method != nullptr) request.method = info->request_method;
  if (info->local_uri != nullptr) request.path = info->local_uri;
  if (info->query_string != nullptr) request.query_string = info->query_string;

  std::shared_ptr<const Handler> handler;
  {
    absl::MutexLock lock(&mu_);
    auto it = handlers_.find(request.path);
    if (it != handlers_.end()) handler = it->second;
  }
  // The handler runs outside mu_ so a slow one (a large Render) does not
  // hold up Handle() or other paths.
  Response response;
  if (handler == nullptr) {
    response = Response{404, "text/plain; charset=utf-8", "404 Not Found\n"};
  } else {
    response = (*handler)(request);
    // Both end up verbatim in the header block.
    if (response.status < 100 || response.status > 599 ||
        response.content_type.find_first_of("\r\n") != std::string::npos) {
      response = Response{500, "text/plain; charset=utf-8",
                          "handler returned an invalid status or content type\n"};
    }
  }
  SendResponse(conn, *info, response, request.method != "HEAD");
  return response.status;  // 1..999 tells civetweb the request was handled.
}

HttpExporter::Handler MetricsHandler(const Registry* registry) {
  return [registry](const HttpExporter::Request&) {
    return HttpExporter::Response{200, kTextFormatContentType, registry->Render()};
  };
}

}  // namespace f2obo::metrics
