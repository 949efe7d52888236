// The built-in live dashboard, served on the metrics HTTP port next to
// /metrics: one self-contained page (HTML, CSS, JS drawing SVG; embedded in
// the binary, nothing loaded from elsewhere) at "/" and the read-only JSON
// API it polls under "/api/" (documented in server/dashboard/api.h).
#ifndef F2OBO_SERVER_DASHBOARD_DASHBOARD_H_
#define F2OBO_SERVER_DASHBOARD_DASHBOARD_H_

#include "server/groups.h"
#include "server/metrics/http_exporter.h"
#include "server/session_manager.h"

namespace f2obo::dashboard {

// Registers "/", "/api/sessions", "/api/metrics" and "/api/decision" on
// `http`.  `sessions` and `groups` (may be null: no groups shown) must
// outlive the exporter's serving.
void RegisterDashboard(metrics::HttpExporter* http, const server::SessionManager* sessions,
                       const server::GroupManager* groups);

}  // namespace f2obo::dashboard

#endif  // F2OBO_SERVER_DASHBOARD_DASHBOARD_H_
