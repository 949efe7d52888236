// The dashboard's JSON API: read-only views of sessions, their published
// per-step metrics and their decisions, polled by the page (page/app.js).
//
//   GET /api/sessions
//       {"sessions": [{"id", "group"?, "problem_class", "algorithm", "family", "next_t",
//                      "evaluated_steps", "skipped_steps",
//                      "estimate", "estimate_standard_error",
//                      "x_dim", "inner_iterations", "cap_hits",
//                      "rows_processed", "exact_every", and the fields of
//                      the session's class (server/presentation/): bilevel
//                      "lambda", "y_dim", "blreg", "variation_sum",
//                      "drift_sum", "unconverged_steps"; simple bilevel
//                      "inner_gap_sum", "outer_gap_sum",
//                      "unconverged_steps"; multi-task "lambda", "y_dim",
//                      "blreg", "unconverged_steps", "tasks",
//                      "tasks_touched", "task_regret" (tasks 0-3)}, ...],
//        "groups": [{"id", "members": [session id, ...]}, ...]}
//       "group" is set on members of a side-by-side group.
//   GET /api/metrics?session=<id>[&after=<t>]
//       {"session_id", "steps": [...]}: the buffered per-step metrics (the
//       server keeps the last 1024 per session) with t > after (default 0),
//       oldest first.  Each step: t, lambda, z_iterations, y_iterations
//       (bilevel) or inner_loss_before (simple bilevel),
//       round_seconds, upper_loss_before, rows_processed, accuracy_before?,
//       cap_hit? (bilevel); when exact metrics were computed for it also regret_term,
//       blreg, hypergradient_error, value, variation?, drift?,
//       variation_sum, drift_sum and converged (false when a solve stopped
//       short: that step's terms are left out of the sums, and
//       unconverged_steps counts it); exact_skipped (a reason) when they
//       were due but not computed.  Every step whose exact metrics were due
//       also carries exact_probability (p_t, the probability it was sampled
//       with) and the session's coverage and estimate after it:
//       evaluated_steps, skipped_steps, estimate and estimate_se (the
//       Horvitz-Thompson estimate of BLReg -- simple bilevel: of
//       inner_gap_sum -- over every due step and its standard error;
//       f2obo.v1 RunningMetrics).  Simple bilevel steps carry instead f,
//       g, inner_gap, inner_gap_sum, fw_gap?, outer_gap? and converged
//       (the g* solve met its tolerance).  Multi-task steps carry lambda,
//       z_iterations, y_iterations, tasks, tasks_touched and, with exact
//       metrics (of F over the tasks seen), regret_term, blreg,
//       hypergradient_error, value, gradient_norm, tasks_evaluated,
//       exact_seconds, converged and task_metrics ([{task, value,
//       regret_term, converged}] for the tasks 0-3 seen).  The class's
//       fields are written by its presentation (server/presentation/).
//   GET /api/decision?session=<id>[&max=<n>]
//       {"session_id", "t", "lambda", "x_dim", "x": [the first n entries of
//       x_t, default 1000]}
//
// The exporter routes exact paths, so the session id travels in the query
// string (URL-encoded; it must match [A-Za-z0-9._-]{1,64}).  Numbers that
// are not finite are null.  Errors are JSON as well, {"error": "..."}, with
// 400 (bad parameter), 404 (no such session) or 405 (method other than GET
// or HEAD).
//
// Thread-safety: the handlers are thread-safe (the session and group
// managers and the metrics buffers are).
#ifndef F2OBO_SERVER_DASHBOARD_API_H_
#define F2OBO_SERVER_DASHBOARD_API_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "f2obo/v1/f2obo.pb.h"
#include "server/groups.h"
#include "server/metrics/http_exporter.h"
#include "server/presentation/json_writer.h"
#include "server/session_manager.h"

namespace f2obo::dashboard {

using HttpRequest = metrics::HttpExporter::Request;
using HttpResponse = metrics::HttpExporter::Response;
using JsonWriter = server::presentation::JsonWriter;

// `groups` may be null (no groups listed).
HttpResponse ServeSessions(const server::SessionManager& sessions,
                           const server::GroupManager* groups, const HttpRequest& request);
HttpResponse ServeMetrics(const server::SessionManager& sessions, const HttpRequest& request);
HttpResponse ServeDecision(const server::SessionManager& sessions, const HttpRequest& request);

// Parses "a=1&b=x%2Fy" into {a: "1", b: "x/y"} ('+' is a space, a key
// without '=' has an empty value, a repeated key keeps its last value).  A
// malformed percent escape is an InvalidArgument error.
absl::StatusOr<std::map<std::string, std::string>> ParseQuery(absl::string_view query);

// One published step as a JSON object (the "steps" entries above).
void WriteStep(const v1::StepMetrics& m, JsonWriter& w);

}  // namespace f2obo::dashboard

#endif  // F2OBO_SERVER_DASHBOARD_API_H_
