// Session management subcommands: create, sessions, decision, delete, health.
#include <algorithm>
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/cli.h"
#include "google/protobuf/text_format.h"

namespace f2obo::cli {

namespace {

std::string SpecText(const v1::SessionSpec& spec) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(spec, &text);
  return text;
}

std::string SessionIdFlag(int* exit_code) {
  const std::string id = absl::GetFlag(FLAGS_session);
  if (id.empty()) *exit_code = UsageError("--session is required");
  return id;
}

}  // namespace

int RunCreate() {
  absl::StatusOr<v1::CreateSessionRequest> req = CreateRequestFromSpecFlags();
  if (!req.ok()) return UsageError(std::string(req.status().message()));
  if (absl::GetFlag(FLAGS_dry_run)) {
    std::string text;
    google::protobuf::TextFormat::PrintToString(*req, &text);
    std::printf("%s", text.c_str());
    return kExitOk;
  }
  client::Client c(ClientOptionsFromFlags());
  absl::StatusOr<v1::SessionInfo> info = c.CreateSession(*req);
  if (!info.ok()) return RpcError("create", info.status());
  std::printf("%s\n", info->session_id().c_str());
  if (absl::GetFlag(FLAGS_verbose)) {
    const std::optional<double> lambda = v1::LambdaOf(*info);
    std::printf("x_dim: %d\ny_dim: %d\nnext_t: %lld\nlambda: %s\n%s", info->x_dim(),
                v1::YDimOf(*info), static_cast<long long>(info->next_t()),
                lambda.has_value() ? Num(*lambda).c_str() : "-", SpecText(info->spec()).c_str());
  }
  return kExitOk;
}

int RunSessions() {
  client::Client c(ClientOptionsFromFlags());
  absl::StatusOr<v1::ListSessionsResponse> list = c.ListSessions();
  if (!list.ok()) return RpcError("sessions", list.status());
  std::vector<std::vector<std::string>> rows = {
      {"ID", "ALGORITHM", "FAMILY", "NEXT_T", "BLREG", "LAMBDA", "ROWS_READ"}};
  for (const v1::SessionInfo& s : list->sessions()) {
    // BLReg and lambda are the penalty-based bilevel classes' figures: a
    // simple bilevel session has neither ("-", not a 0 that reads as a value).
    const std::optional<double> blreg = v1::BlregOf(s.metrics());
    const std::optional<double> lambda = v1::LambdaOf(s);
    rows.push_back({s.session_id(), s.spec().algorithm(), s.spec().family().name(),
                    absl::StrCat(s.next_t()),
                    blreg.has_value() && s.metrics().evaluated_steps() > 0 ? Num(*blreg, 4) : "-",
                    lambda.has_value() ? Num(*lambda, 4) : "-", absl::StrCat(s.rows_processed())});
  }
  PrintTable(rows);
  return kExitOk;
}

int RunDecision() {
  int code = kExitOk;
  const std::string id = SessionIdFlag(&code);
  if (code != kExitOk) return code;
  if (absl::GetFlag(FLAGS_show) < 0) return UsageError("--show: must be >= 0");
  client::Client c(ClientOptionsFromFlags());
  absl::StatusOr<v1::Decision> d = c.GetDecision(id);
  if (!d.ok()) return RpcError("decision", d.status());
  const bool all = absl::GetFlag(FLAGS_all);
  const int n = all ? d->x_size() : std::min(d->x_size(), absl::GetFlag(FLAGS_show));
  std::string x;
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&x, i > 0 ? " " : "", all ? Exact(d->x(i)) : Num(d->x(i)));
  }
  std::printf("session: %s\nt: %lld\nlambda: %s\nx_dim: %d\nx: %s%s\n", d->session_id().c_str(),
              static_cast<long long>(d->t()), Exact(d->lambda()).c_str(), d->x_size(), x.c_str(),
              n < d->x_size() ? " ..." : "");
  return kExitOk;
}

int RunDelete() {
  const std::string session = absl::GetFlag(FLAGS_session);
  const std::string group = absl::GetFlag(FLAGS_group);
  if (session.empty() == group.empty()) {
    return UsageError("delete: give exactly one of --session and --group");
  }
  client::Client c(ClientOptionsFromFlags());
  if (!group.empty()) {
    absl::StatusOr<v1::DeleteGroupResponse> r = c.DeleteGroup(group);
    if (!r.ok()) return RpcError("delete", r.status());
    std::printf("deleted group %s (%d sessions)\n", group.c_str(), r->session_ids_size());
    for (const std::string& id : r->session_ids()) std::printf("deleted %s\n", id.c_str());
    return kExitOk;
  }
  if (absl::Status s = c.DeleteSession(session); !s.ok()) return RpcError("delete", s);
  std::printf("deleted %s\n", session.c_str());
  return kExitOk;
}

int RunHealth() {
  client::Client c(ClientOptionsFromFlags());
  absl::StatusOr<bool> serving = c.Healthy();
  if (!serving.ok()) return RpcError("health", serving.status());
  std::printf("%s\n", *serving ? "SERVING" : "NOT_SERVING");
  return *serving ? kExitOk : kExitRpc;
}

}  // namespace f2obo::cli
