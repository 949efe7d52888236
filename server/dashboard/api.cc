#include "server/dashboard/api.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/hyperparameters.h"
#include "server/ids.h"
#include "server/presentation/class_presentation.h"

namespace f2obo::dashboard {
namespace {

constexpr char kJsonType[] = "application/json; charset=utf-8";
constexpr int kDefaultDecisionEntries = 1000;
constexpr int kMaxDecisionEntries = 1000000;

HttpResponse Json(JsonWriter& w) { return HttpResponse{200, kJsonType, w.str()}; }

HttpResponse Error(int status, absl::string_view message) {
  JsonWriter w;
  w.BeginObject().Key("error").String(message).EndObject();
  return HttpResponse{status, kJsonType, w.str()};
}

HttpResponse ErrorFor(const absl::Status& s) {
  const int status = s.code() == absl::StatusCode::kNotFound          ? 404
                     : s.code() == absl::StatusCode::kInvalidArgument ? 400
                                                                      : 500;
  return Error(status, s.message());
}

bool ReadOnly(const HttpRequest& r) { return r.method == "GET" || r.method == "HEAD"; }

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

absl::StatusOr<std::string> UrlDecode(absl::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') {
      out += ' ';
    } else if (s[i] != '%') {
      out += s[i];
    } else {
      const int hi = i + 2 < s.size() ? HexValue(s[i + 1]) : -1;
      const int lo = hi >= 0 ? HexValue(s[i + 2]) : -1;
      if (lo < 0) return absl::InvalidArgumentError("malformed percent escape in the query string");
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return out;
}

// The session manager's id rule, checked here so that a bad id gets a 400
// and never reaches an error message unescaped.
// A read-only request naming a valid session: its id and all parameters,
// or the error response to send instead.
struct SessionRequest {
  std::string id;
  std::map<std::string, std::string> params;
  std::optional<HttpResponse> error;
};

SessionRequest ParseSessionRequest(const HttpRequest& r) {
  SessionRequest out;
  if (!ReadOnly(r)) {
    out.error = Error(405, "only GET and HEAD are served");
    return out;
  }
  absl::StatusOr<std::map<std::string, std::string>> params = ParseQuery(r.query_string);
  if (!params.ok()) {
    out.error = ErrorFor(params.status());
    return out;
  }
  out.params = *std::move(params);
  const auto it = out.params.find("session");
  if (it == out.params.end() || !server::IsSessionId(it->second)) {
    out.error =
        Error(400, absl::StrCat("session: must be given and match ", server::kSessionIdPattern));
    return out;
  }
  out.id = it->second;
  return out;
}

// Group id -> member ids.  The group manager has no list call, but a
// member's id is "<group>.<name>" and group ids contain no '.', so every
// group is found by asking for the prefix of its members' ids.
std::map<std::string, std::vector<std::string>> GroupsOf(const std::vector<v1::SessionInfo>& list,
                                                         const server::GroupManager& groups) {
  std::map<std::string, std::vector<std::string>> out;
  std::set<std::string> asked;
  for (const v1::SessionInfo& info : list) {
    const std::string& id = info.session_id();
    const size_t dot = id.find('.');
    if (dot == std::string::npos || !asked.insert(id.substr(0, dot)).second) continue;
    absl::StatusOr<v1::GroupInfo> g = groups.Get(id.substr(0, dot));
    if (!g.ok()) continue;  // a session that merely has a '.' in its id
    std::vector<std::string>& members = out[g->group_id()];
    for (const v1::SessionInfo& m : g->members()) members.push_back(m.session_id());
  }
  return out;
}

// The names x's entries are shown under (server/hyperparameters.h):
// [{name, size}, ...] covering x in order.
void WriteXGroups(const v1::SessionInfo& info, JsonWriter& w) {
  SessionConfig named;
  for (const v1::XGroup& g : info.spec().x_groups()) named.x_groups.push_back({g.name(), g.size()});
  w.Key("x_groups").BeginArray();
  for (const SessionConfig::XGroup& g : server::ShownXGroups(named, info.x_dim())) {
    w.BeginObject().Key("name").String(g.name).Key("size").Int(g.size).EndObject();
  }
  w.EndArray();
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseQuery(absl::string_view query) {
  std::map<std::string, std::string> out;
  size_t start = 0;
  while (start <= query.size()) {
    size_t end = query.find('&', start);
    if (end == absl::string_view::npos) end = query.size();
    const absl::string_view part = query.substr(start, end - start);
    if (!part.empty()) {
      const size_t eq = part.find('=');
      absl::StatusOr<std::string> key = UrlDecode(part.substr(0, eq));
      if (!key.ok()) return key.status();
      absl::StatusOr<std::string> value =
          eq == absl::string_view::npos ? std::string() : UrlDecode(part.substr(eq + 1));
      if (!value.ok()) return value.status();
      out[*key] = *std::move(value);
    }
    start = end + 1;
  }
  return out;
}

void WriteStep(const v1::StepMetrics& m, JsonWriter& w) {
  const v1::RoundReport& r = m.report();
  w.BeginObject().Key("t").Int(m.t());
  w.Key("round_seconds")
      .Number(r.round_seconds())
      .Key("upper_loss_before")
      .Number(r.upper_loss_before())
      .Key("rows_processed")
      .Int(r.rows_processed());
  if (r.has_accuracy_before()) w.Key("accuracy_before").Number(r.accuracy_before());
  server::presentation::PresentationOf(r).step_json(m, w);
  if (!m.hyperparameters().empty()) {
    // [name, value] pairs in x's order.
    w.Key("hyperparameters").BeginArray();
    for (const v1::Hyperparameter& h : m.hyperparameters()) {
      w.BeginArray().String(h.name()).Number(h.value()).EndArray();
    }
    w.EndArray();
  }
  if (!m.exact_skipped_reason().empty()) w.Key("exact_skipped").String(m.exact_skipped_reason());
  // Coverage and estimate, on every due step (skipped ones too).
  if (m.exact_probability() > 0.0) w.Key("exact_probability").Number(m.exact_probability());
  if (const v1::RunningMetrics* running = server::presentation::RunningOf(m)) {
    w.Key("evaluated_steps")
        .Int(running->evaluated_steps())
        .Key("skipped_steps")
        .Int(running->skipped_steps())
        .Key("estimate")
        .Number(running->estimate())
        .Key("estimate_se")
        .Number(running->estimate_standard_error());
  }
  w.EndObject();
}

HttpResponse ServeSessions(const server::SessionManager& sessions,
                           const server::GroupManager* groups, const HttpRequest& r) {
  if (!ReadOnly(r)) return Error(405, "only GET and HEAD are served");
  const std::vector<v1::SessionInfo> list = sessions.List();
  const std::map<std::string, std::vector<std::string>> by_group =
      groups != nullptr ? GroupsOf(list, *groups)
                        : std::map<std::string, std::vector<std::string>>{};
  std::map<std::string, std::string> group_of;
  for (const auto& [group, members] : by_group) {
    for (const std::string& m : members) group_of[m] = group;
  }
  JsonWriter w;
  w.BeginObject().Key("sessions").BeginArray();
  for (const v1::SessionInfo& info : list) {
    w.BeginObject().Key("id").String(info.session_id());
    if (const auto g = group_of.find(info.session_id()); g != group_of.end()) {
      w.Key("group").String(g->second);
    }
    w.Key("problem_class")
        .String(info.spec().problem_class())
        .Key("algorithm")
        .String(info.spec().algorithm())
        .Key("family")
        .String(info.spec().family().name())
        .Key("next_t")
        .Int(info.next_t())
        .Key("evaluated_steps")
        .Int(info.metrics().evaluated_steps())
        .Key("skipped_steps")
        .Int(info.metrics().skipped_steps())
        .Key("estimate")
        .Number(info.metrics().estimate())
        .Key("estimate_standard_error")
        .Number(info.metrics().estimate_standard_error())
        .Key("x_dim")
        .Int(info.x_dim())
        .Key("inner_iterations")
        .Int(info.inner_iterations())
        .Key("cap_hits")
        .Int(info.cap_hits())
        .Key("rows_processed")
        .Int(info.rows_processed())
        .Key("exact_every")
        .Int(info.spec().metrics().exact_every());
    WriteXGroups(info, w);
    // The newest published step's prequential loss: the headline of a
    // session without exact metrics (an oracle session's).  Metrics lag
    // their steps a little: the newest of the last few.
    if (absl::StatusOr<std::shared_ptr<server::SessionMetrics>> m =
            sessions.Metrics(info.session_id());
        m.ok()) {
      const std::vector<v1::StepMetrics> last =
          (*m)->Snapshot(std::max<int64_t>(0, info.next_t() - 10));
      if (!last.empty())
        w.Key("upper_loss_before").Number(last.back().report().upper_loss_before());
    }
    if (const auto* p = server::presentation::PresentationOf(info)) p->session_json(info, w);
    w.EndObject();
  }
  w.EndArray().Key("groups").BeginArray();
  for (const auto& [group, members] : by_group) {
    w.BeginObject().Key("id").String(group).Key("members").BeginArray();
    for (const std::string& m : members) w.String(m);
    w.EndArray().EndObject();
  }
  w.EndArray().EndObject();
  return Json(w);
}

HttpResponse ServeMetrics(const server::SessionManager& sessions, const HttpRequest& r) {
  SessionRequest q = ParseSessionRequest(r);
  if (q.error) return *q.error;
  int64_t after = 0;
  if (const auto it = q.params.find("after");
      it != q.params.end() && !absl::SimpleAtoi(it->second, &after)) {
    return Error(400, "after: must be an integer step index");
  }
  absl::StatusOr<std::shared_ptr<server::SessionMetrics>> m = sessions.Metrics(q.id);
  if (!m.ok()) return ErrorFor(m.status());
  JsonWriter w;
  w.BeginObject().Key("session_id").String(q.id).Key("steps").BeginArray();
  for (const v1::StepMetrics& step : (*m)->Snapshot(after)) WriteStep(step, w);
  w.EndArray().EndObject();
  return Json(w);
}

HttpResponse ServeDecision(const server::SessionManager& sessions, const HttpRequest& r) {
  SessionRequest q = ParseSessionRequest(r);
  if (q.error) return *q.error;
  int max_entries = kDefaultDecisionEntries;
  if (const auto it = q.params.find("max");
      it != q.params.end() && (!absl::SimpleAtoi(it->second, &max_entries) || max_entries < 0 ||
                               max_entries > kMaxDecisionEntries)) {
    return Error(400, absl::StrCat("max: must be an integer in 0..", kMaxDecisionEntries));
  }
  absl::StatusOr<v1::Decision> d = sessions.GetDecision(q.id);
  if (!d.ok()) return ErrorFor(d.status());
  JsonWriter w;
  w.BeginObject()
      .Key("session_id")
      .String(q.id)
      .Key("t")
      .Int(d->t())
      .Key("lambda")
      .Number(d->lambda())
      .Key("x_dim")
      .Int(d->x_size())
      .Key("x")
      .BeginArray();
  for (int i = 0; i < d->x_size() && i < max_entries; ++i) w.Number(d->x(i));
  w.EndArray().EndObject();
  return Json(w);
}

}  // namespace f2obo::dashboard
