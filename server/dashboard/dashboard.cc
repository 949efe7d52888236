#include "server/dashboard/dashboard.h"

#include "server/dashboard/api.h"
#include "server/dashboard/page.h"

namespace f2obo::dashboard {

void RegisterDashboard(metrics::HttpExporter* http, const server::SessionManager* sessions,
                       const server::GroupManager* groups) {
  http->Handle("/", [](const HttpRequest& r) {
    if (r.method != "GET" && r.method != "HEAD") {
      return HttpResponse{405, "text/plain; charset=utf-8", "only GET and HEAD are served\n"};
    }
    return HttpResponse{200, "text/html; charset=utf-8", kDashboardPage};
  });
  http->Handle("/api/sessions", [sessions, groups](const HttpRequest& r) {
    return ServeSessions(*sessions, groups, r);
  });
  http->Handle("/api/metrics",
               [sessions](const HttpRequest& r) { return ServeMetrics(*sessions, r); });
  http->Handle("/api/decision",
               [sessions](const HttpRequest& r) { return ServeDecision(*sessions, r); });
}

}  // namespace f2obo::dashboard
