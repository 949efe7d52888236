// A small embedded HTTP server (civetweb) for /metrics and the dashboard.
//
//   absl::StatusOr<std::unique_ptr<HttpExporter>> http =
//       HttpExporter::Start("127.0.0.1:9464", /*num_threads=*/2);
//   (*http)->Handle("/metrics", MetricsHandler(&registry));
//
// It binds only the address it is given -- "127.0.0.1:9464" serves
// loopback alone, "0.0.0.0:9464" every IPv4 interface -- and serves only
// registered paths: no files, no directory listings, 404 for the rest.
//
// Thread-safety: Handle() and port() may be called from any thread, also
// while requests are being served.  Handlers run on civetweb's worker
// threads, several at a time, so they must be thread-safe themselves.
// Stop() and the destructor must not race with each other or be called
// from inside a handler.
#ifndef F2OBO_SERVER_METRICS_HTTP_EXPORTER_H_
#define F2OBO_SERVER_METRICS_HTTP_EXPORTER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

struct mg_context;
struct mg_connection;

namespace f2obo::metrics {

class Registry;

class HttpExporter {
 public:
  struct Request {
    std::string method;        // "GET", "HEAD", ...
    std::string path;          // URL-decoded, without the query string
    std::string query_string;  // after '?', still URL-encoded; "" if none
  };
  struct Response {
    int status = 200;
    std::string content_type = "text/plain; charset=utf-8";
    std::string body;
  };
  using Handler = std::function<Response(const Request&)>;

  // Starts serving on `listen_address`, "<IPv4>:<port>" or "[<IPv6>]:<port>"
  // with a numeric address (no host names, which could resolve to more
  // than was meant).  Port 0 picks a free port; see port().  `num_threads`
  // worker threads (1..64) serve requests.  Errors: InvalidArgument for a
  // malformed address or thread count, Unavailable if civetweb cannot
  // start (e.g. the port is taken), with civetweb's reason.
  static absl::StatusOr<std::unique_ptr<HttpExporter>> Start(const std::string& listen_address,
                                                             int num_threads);

  ~HttpExporter();  // Stop()s.
  HttpExporter(const HttpExporter&) = delete;
  HttpExporter& operator=(const HttpExporter&) = delete;

  // Serves requests whose path is exactly `path` with `handler`, replacing
  // any handler for it.  Takes effect for requests that arrive afterwards.
  // A HEAD request gets the handler's headers without its body.
  void Handle(const std::string& path, Handler handler);

  // The port actually bound (the chosen one when started with port 0).
  int port() const { return port_; }

  // Stops accepting connections and waits for running handlers to return.
  // Idempotent.
  void Stop();

 private:
  HttpExporter() = default;

  // civetweb's entry point for every request (registered for "**").
  static int Dispatch(mg_connection* conn, void* self);
  int Serve(mg_connection* conn);

  mg_context* ctx_ = nullptr;
  int port_ = 0;
  int family_ = 0;       // of the listening socket
  std::string wake_ip_;  // an address that reaches the listener (see Stop)
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const Handler>> handlers_ ABSL_GUARDED_BY(mu_);
};

// A handler that renders `registry` (which must outlive it) in the
// Prometheus text format, with the content type scrapers expect.
HttpExporter::Handler MetricsHandler(const Registry* registry);

}  // namespace f2obo::metrics

#endif  // F2OBO_SERVER_METRICS_HTTP_EXPORTER_H_
