// Side-by-side groups: `create-group` (one family and data, several
// algorithms) and `group` (the members' progress).  `stream --group` is in
// stream_cmd.cc.
//
// A member is given as --member=name:algorithm[:key=value,...]; the keys
// are AlgorithmOptions field names (proto/f2obo/v1/spec.proto), set by
// name (f2obo/v1/options_convert.h) so every option of every algorithm is
// reachable.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/cli/cli.h"
#include "core/session.h"
#include "f2obo/v1/convert.h"
#include "f2obo/v1/options_convert.h"

namespace f2obo::cli {

std::vector<std::string>& MemberFlagValues() {
  static auto* values = new std::vector<std::string>();
  return *values;
}

namespace {

// Sets one AlgorithmOptions field from "key=value".
absl::Status SetOption(absl::string_view kv, v1::AlgorithmOptions* o) {
  const size_t eq = kv.find('=');
  if (eq == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat("'", kv, "' is not key=value"));
  }
  return SetOptionFromText(absl::StripAsciiWhitespace(kv.substr(0, eq)), kv.substr(eq + 1), o);
}

// Parses "name:algorithm[:key=value,...]".
absl::StatusOr<v1::GroupMember> ParseMember(const std::string& text) {
  const std::vector<absl::string_view> parts = absl::StrSplit(text, absl::MaxSplits(':', 2));
  if (parts.size() < 2 || parts[0].empty() || parts[1].empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--member: '", text, "' is not name:algorithm[:key=value,...]"));
  }
  v1::GroupMember m;
  m.set_name(std::string(parts[0]));
  m.set_algorithm(std::string(parts[1]));
  if (parts.size() == 3) {
    for (absl::string_view kv : absl::StrSplit(parts[2], ',', absl::SkipEmpty())) {
      if (absl::Status s = SetOption(kv, m.mutable_options()); !s.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("--member=", text, ": ", s.message()));
      }
    }
  }
  return m;
}

}  // namespace

int RunCreateGroup() {
  std::string id = absl::GetFlag(FLAGS_group);
  if (id.empty()) id = absl::GetFlag(FLAGS_id);
  if (id.empty()) return UsageError("--group (or --id) is required: the group's id");
  if (MemberFlagValues().empty()) {
    return UsageError("at least one --member=name:algorithm[:key=value,...] is required");
  }
  // The shared part: family, constraint, seed, metrics policy and the
  // option flags every member starts from.
  // (A shared option flag reaches the members whose algorithm reads it,
  // checked below as the server does.)
  absl::StatusOr<v1::CreateSessionRequest> base = CreateRequestFromSpecFlags(UnreadOptions::kDrop);
  if (!base.ok()) return UsageError(std::string(base.status().message()));
  v1::CreateGroupRequest req;
  req.set_group_id(id);
  *req.mutable_spec() = base->spec();
  for (const std::string& text : MemberFlagValues()) {
    absl::StatusOr<v1::GroupMember> m = ParseMember(text);
    if (!m.ok()) return UsageError(std::string(m.status().message()));
    *req.add_members() = *std::move(m);
  }
  // Validate each member's spec with the core code the server runs, so a
  // bad option is a usage error naming the member and the field.
  absl::StatusOr<std::vector<v1::SessionSpec>> specs = GroupMemberSpecs(req.spec(), req.members());
  if (!specs.ok()) return UsageError(std::string(specs.status().message()));
  for (int i = 0; i < req.members_size(); ++i) {
    absl::StatusOr<SessionConfig> config = ToSessionConfig((*specs)[i]);
    absl::Status valid = config.ok() ? ValidateSessionConfig(*config) : config.status();
    if (!valid.ok()) {
      return UsageError(absl::StrCat("member '", req.members(i).name(), "': ", valid.message()));
    }
  }
  client::Client c(ClientOptionsFromFlags());
  absl::StatusOr<v1::GroupInfo> info = c.CreateGroup(req);
  if (!info.ok()) return RpcError("create-group", info.status());
  std::printf("%s\n", info->group_id().c_str());
  for (const v1::SessionInfo& m : info->members()) {
    std::printf("  %s  %s\n", m.session_id().c_str(), m.spec().algorithm().c_str());
  }
  return kExitOk;
}

int RunGroup() {
  const std::string id = absl::GetFlag(FLAGS_group);
  if (id.empty()) return UsageError("--group is required");
  client::Client c(ClientOptionsFromFlags());
  absl::StatusOr<v1::GroupInfo> info = c.GetGroup(id);
  if (!info.ok()) return RpcError("group", info.status());
  std::vector<std::vector<std::string>> rows = {{"MEMBER", "ALGORITHM", "NEXT_T", "BLREG",
                                                 "EXACT_STEPS", "LAMBDA", "INNER_ITERS",
                                                 "ROWS_READ"}};
  for (const v1::SessionInfo& s : info->members()) {
    const std::optional<double> blreg = v1::BlregOf(s.metrics());
    const std::optional<double> lambda = v1::LambdaOf(s);
    rows.push_back({s.session_id(), s.spec().algorithm(), absl::StrCat(s.next_t()),
                    blreg.has_value() && s.metrics().evaluated_steps() > 0 ? Num(*blreg, 4) : "-",
                    absl::StrCat(s.metrics().evaluated_steps()),
                    lambda.has_value() ? Num(*lambda, 4) : "-", absl::StrCat(s.inner_iterations()),
                    absl::StrCat(s.rows_processed())});
  }
  std::printf("group %s: %d members\n", info->group_id().c_str(), info->members_size());
  PrintTable(rows);
  return kExitOk;
}

}  // namespace f2obo::cli
