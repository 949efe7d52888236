// `stream`: replays a dataset as a drifting stream into a session over the
// network (the twin of f2obo-replay).  Starts at the session's next_t and,
// since DriftingStream::Make(t) depends only on (seed, t), resuming after an
// interruption (or reconnecting after UNAVAILABLE) sends exactly the batches
// an uninterrupted run would have sent.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/cli.h"
#include "client/cli/reconnects.h"
#include "client/cli/stream_progress.h"
#include "client/data/drift_stream.h"
#include "client/session_routing.h"
#include "core/problem_registry.h"
#include "core/simple/simple_registries.h"
#include "f2obo/v1/convert.h"

namespace f2obo::cli {
namespace {

// How the dataset becomes steps: whole (tasks = 0), or split into `tasks`
// tasks of which `per_step` are sampled per step (multi-task sessions).
struct TaskSplit {
  int tasks = 0;
  int per_step = 1;
  // False for a family whose f reads no rows (simple bilevel
  // linear_inverse): the step's upper batch is sent empty.
  bool upper_rows = true;
};

absl::StatusOr<StepData> StepOf(const data::DriftingStream& stream, int64_t t,
                                const TaskSplit& split) {
  if (split.tasks > 0) return stream.MakeTasks(t, split.tasks, split.per_step);
  absl::StatusOr<StepData> step = stream.Make(t);
  if (step.ok() && !split.upper_rows) step->upper = Batch();
  return step;
}

// Whether the session's family reads upper rows (false only for simple
// bilevel families whose f is fixed).
bool ReadsUpperRows(const v1::SessionSpec& spec) {
  absl::StatusOr<SessionConfig> config = ToSessionConfig(spec, UnreadOptions::kDrop);
  if (!config.ok() || config->problem_class != ProblemClass::kSimpleBilevel) return true;
  absl::StatusOr<std::unique_ptr<SimpleFamily>> family = CreateSimpleFamily(config->family);
  return !family.ok() || (*family)->upper_reads_rows();
}

// Whether the family of `spec` classifies rows.  A regression family's
// rows are drawn uniformly: its targets are values, not classes, even when
// they are integers (a CSV of counts or scores), so the dataset's labels are
// dropped and with them class-imbalance sampling; --label_noise, which
// replaces labels by classes, is refused.
absl::StatusOr<bool> FitDataToFamily(const v1::SessionSpec& spec, data::Dataset* ds) {
  absl::StatusOr<SessionConfig> config = ToSessionConfig(spec, UnreadOptions::kDrop);
  if (!config.ok()) return config.status();
  absl::StatusOr<bool> classifies = FamilyIsClassification(*config);
  if (!classifies.ok() || *classifies) return classifies;
  if (!absl::GetFlag(FLAGS_label_noise).empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--label_noise: family ", spec.family().name(),
                     " is a regression family: its rows have no classes to corrupt"));
  }
  ds->labels.clear();
  ds->classes = 0;
  return false;
}

// The split for a session or group whose spec is `spec`: its m (0 for a
// single-task one), which --tasks must match if given.
absl::StatusOr<TaskSplit> SplitFor(const v1::SessionSpec& spec, int rows) {
  TaskSplit split;
  split.tasks = spec.family().tasks();
  split.per_step = absl::GetFlag(FLAGS_tasks_per_step);
  split.upper_rows = ReadsUpperRows(spec);
  if (const std::optional<int> m = absl::GetFlag(FLAGS_tasks); m && *m != split.tasks) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tasks: ", *m, ", but the session was created with ", split.tasks, " tasks"));
  }
  if (split.tasks > 0 && !(split.per_step >= 1 && split.per_step <= split.tasks)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--tasks_per_step: must be in [1, ", split.tasks, "]"));
  }
  if (split.tasks > rows) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--tasks: ", split.tasks, " tasks need at least as many rows; the dataset has ", rows));
  }
  return split;
}

// Step t's request of a session (v1::StepRequest) or a group
// (v1::GroupStepRequest): the same fields but the id's.
template <typename Request>
absl::StatusOr<Request> MakeRequest(const data::DriftingStream& stream, const std::string& id,
                                    int64_t t, const TaskSplit& split) {
  absl::StatusOr<StepData> step = StepOf(stream, t, split);
  if (!step.ok()) return step.status();
  Request req;
  if constexpr (std::is_same_v<Request, v1::GroupStepRequest>) {
    req.set_group_id(id);
  } else {
    req.set_session_id(id);
  }
  req.set_t(t);
  if (split.tasks > 0) {
    for (const TaskData& task : step->tasks) ToProto(task, req.add_tasks());
    return req;
  }
  ToProto(step->upper, req.mutable_upper());
  ToProto(step->inner, req.mutable_inner());
  return req;
}

// What a stream of steps differs in between a session and a group: the RPC,
// how a reply can fail although the RPC did not, where to resume.
struct SessionSteps {
  using Request = v1::StepRequest;
  using Reply = v1::StepReply;
  using Progress = cli::Progress;
  static auto Open(client::Client& c, grpc::ClientContext* ctx) { return c.stub().Steps(ctx); }
  static absl::StatusOr<Reply> Unary(client::Client& c, const Request& req) { return c.Step(req); }
  static absl::Status Failure(const Reply&) { return absl::OkStatus(); }
  // The session's next_t, waiting up to --timeout for the server to be back.
  static absl::StatusOr<int64_t> NextT(client::Client& c, const std::string& id) {
    v1::GetSessionRequest get;
    get.set_session_id(id);
    v1::SessionInfo info;
    auto ctx = c.NewContext();
    ctx->set_wait_for_ready(true);
    absl::Status s = client::FromGrpc(c.stub().GetSession(ctx.get(), get, &info));
    if (!s.ok()) return s;
    return info.next_t();
  }
};

// The smallest next_t over the group's members.
absl::StatusOr<int64_t> GroupNextT(client::Client& c, const std::string& id) {
  absl::StatusOr<v1::GroupInfo> info = c.GetGroup(id);
  if (!info.ok()) return info.status();
  if (info->members_size() == 0) {
    return absl::FailedPreconditionError(absl::StrCat("group '", id, "' has no members"));
  }
  int64_t next = info->members(0).next_t();
  for (const v1::SessionInfo& m : info->members()) next = std::min(next, m.next_t());
  return next;
}

struct GroupSteps {
  using Request = v1::GroupStepRequest;
  using Reply = v1::GroupStepReply;
  using Progress = GroupProgress;
  static auto Open(client::Client& c, grpc::ClientContext* ctx) { return c.stub().StepsGroup(ctx); }
  static absl::StatusOr<Reply> Unary(client::Client& c, const Request& req) {
    return c.StepGroup(req);
  }
  static absl::Status Failure(const Reply& r) { return MemberFailure(r); }
  static absl::StatusOr<int64_t> NextT(client::Client& c, const std::string& id) {
    return GroupNextT(c, id);
  }
};

// Steps [t, last] over the Steps (StepsGroup) RPC; on a broken stream,
// reconnects (with backoff) and resumes from the server's next_t.
template <typename Kind>
absl::Status StreamSteps(client::Client& c, const data::DriftingStream& stream,
                         const TaskSplit& split, const std::string& id, int64_t t, int64_t last,
                         typename Kind::Progress& progress) {
  using Request = typename Kind::Request;
  Reconnects reconnects;
  while (t <= last) {
    grpc::ClientContext ctx;             // no deadline: a stream lasts as long as it must
    client::PrepareStreamContext(&ctx);  // the first Write carries x-f2obo-session
    absl::StatusOr<Request> req = MakeRequest<Request>(stream, id, t, split);
    if (!req.ok()) return req.status();
    auto rpc = Kind::Open(c, &ctx);
    typename Kind::Reply reply;
    bool broken = false;
    while (t <= last) {
      if (!rpc->Write(*req)) {
        broken = true;
        break;
      }
      // Build the next batch while the server works on this one.
      if (t < last) req = MakeRequest<Request>(stream, id, t + 1, split);
      if (!req.ok()) {  // the sampler gave up: stop, step t is in flight
        rpc->WritesDone();
        if (rpc->Read(&reply) && reply.t() == t) progress.Update(reply);
        ctx.TryCancel();
        rpc->Finish();
        return req.status();
      }
      if (!rpc->Read(&reply)) {
        broken = true;
        break;
      }
      absl::Status failed = Kind::Failure(reply);
      if (reply.t() != t) {
        failed = absl::InternalError(absl::StrCat("reply for t = ", reply.t(), ", expected ", t));
      }
      if (!failed.ok()) {
        ctx.TryCancel();
        rpc->Finish();
        return failed;
      }
      progress.Update(reply);
      ++t;
      reconnects.Progressed();
    }
    if (!broken) {
      rpc->WritesDone();
      return client::FromGrpc(rpc->Finish());
    }
    absl::Status s = client::FromGrpc(rpc->Finish());
    if (s.ok()) s = absl::UnavailableError("the server ended the stream early");
    progress.Break();
    if (!reconnects.Retry(s)) return s;
    // Resume from the server's count: steps it applied are never sent again.
    absl::StatusOr<int64_t> next = Kind::NextT(c, id);
    if (next.ok()) {
      t = *next;
    } else if (next.status().code() != absl::StatusCode::kUnavailable &&
               next.status().code() != absl::StatusCode::kDeadlineExceeded) {
      return next.status();
    }
  }
  return absl::OkStatus();
}

// Steps [first, last] one unary call each (--mode=unary), or streamed; then
// the summary line.  `what` names the target in messages ("session s",
// "group g").
template <typename Kind>
int SendSteps(client::Client& c, const data::DriftingStream& stream, const TaskSplit& split,
              const std::string& id, const std::string& what, const std::string& mode,
              int64_t first, int64_t last, typename Kind::Progress& progress) {
  absl::Status status;
  if (mode == "unary") {
    for (int64_t t = first; t <= last && status.ok(); ++t) {
      absl::StatusOr<typename Kind::Request> req =
          MakeRequest<typename Kind::Request>(stream, id, t, split);
      if (!req.ok()) {
        status = req.status();
        break;
      }
      absl::StatusOr<typename Kind::Reply> reply = Kind::Unary(c, *req);
      status = reply.ok() ? Kind::Failure(*reply) : reply.status();
      if (status.ok()) progress.Update(*reply);
    }
  } else {
    status = StreamSteps<Kind>(c, stream, split, id, first, last, progress);
  }
  if (!status.ok()) {
    progress.Break();
    return RpcError(absl::StrCat("stream ", what), status);
  }
  std::printf("streamed %lld steps to %s in %.2f s (%.1f steps/s); next_t = %lld\n",
              static_cast<long long>(progress.done()), what.c_str(), progress.Seconds(),
              progress.done() / std::max(1e-9, progress.Seconds()),
              static_cast<long long>(last + 1));
  return kExitOk;
}

// `stream --group`: the data and drift flags exactly as for a session.
int RunGroupStream(data::Dataset& ds, const data::DriftOptions& drift, const std::string& mode,
                   std::optional<int> steps) {
  const std::string id = absl::GetFlag(FLAGS_group);
  client::Client c(ClientOptionsFromFlags());
  absl::StatusOr<int64_t> first = GroupNextT(c, id);
  if (!first.ok()) return RpcError("stream", first.status());
  absl::StatusOr<v1::GroupInfo> group = c.GetGroup(id);
  if (!group.ok()) return RpcError("stream", group.status());
  if (absl::StatusOr<bool> fit = FitDataToFamily(group->members(0).spec(), &ds); !fit.ok()) {
    return UsageError(std::string(fit.status().message()));
  }
  absl::StatusOr<TaskSplit> split = SplitFor(group->members(0).spec(), ds.rows());
  if (!split.ok()) return UsageError(std::string(split.status().message()));
  const std::optional<int64_t> until = absl::GetFlag(FLAGS_until);
  const int64_t last = until ? *until : *first + steps.value_or(400) - 1;
  if (absl::GetFlag(FLAGS_verbose)) {
    std::printf(
        "streaming %s (%d rows x %d features, %d classes) to group %s, steps "
        "%lld..%lld\n",
        absl::GetFlag(FLAGS_data).c_str(), ds.rows(), ds.features(), ds.classes, id.c_str(),
        static_cast<long long>(*first), static_cast<long long>(last));
  }
  if (last < *first) {
    std::printf("group %s is at next_t = %lld: nothing to send\n", id.c_str(),
                static_cast<long long>(*first));
    return kExitOk;
  }
  const data::DriftingStream stream(ds, drift);
  GroupProgress progress(*first, last, absl::GetFlag(FLAGS_print_every), id);
  return SendSteps<GroupSteps>(c, stream, *split, id, absl::StrCat("group ", id), mode, *first,
                               last, progress);
}

}  // namespace

int RunStream() {
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode != "stream" && mode != "unary") {
    return UsageError(absl::StrCat("--mode: '", mode, "' is not 'stream' or 'unary'"));
  }
  const std::optional<int> steps = absl::GetFlag(FLAGS_steps);
  if (steps && *steps < 0) return UsageError("--steps: must be >= 0");
  data::DriftOptions drift;
  drift.rows_per_step = absl::GetFlag(FLAGS_rows_per_step);
  drift.upper_fraction = absl::GetFlag(FLAGS_upper_fraction);
  drift.phase_steps = absl::GetFlag(FLAGS_phase_steps);
  drift.noise_in_upper = absl::GetFlag(FLAGS_noise_in_upper);
  drift.seed = absl::GetFlag(FLAGS_seed).value_or(1);
  if (drift.rows_per_step < 2) return UsageError("--rows_per_step: must be >= 2");
  if (!(drift.upper_fraction > 0 && drift.upper_fraction < 1)) {
    return UsageError("--upper_fraction: must lie in (0, 1)");
  }
  if (drift.phase_steps < 1) return UsageError("--phase_steps: must be >= 1");
  auto rhos = data::ParseRhos(absl::GetFlag(FLAGS_imbalance));
  if (!rhos.ok()) return UsageError(absl::StrCat("--imbalance: ", rhos.status().message()));
  auto noise = data::ParseNoise(absl::GetFlag(FLAGS_label_noise));
  if (!noise.ok()) return UsageError(absl::StrCat("--label_noise: ", noise.status().message()));
  drift.imbalance_rhos = *rhos;
  drift.label_noise = *noise;

  std::string id = absl::GetFlag(FLAGS_session);
  const bool create = absl::GetFlag(FLAGS_create);
  const bool group = !absl::GetFlag(FLAGS_group).empty();
  if (group && (!id.empty() || create)) {
    return UsageError("--group streams into an existing group: not with --session or --create");
  }
  if (id.empty() && !create && !group) {
    return UsageError("--session is required (or --create, or --group)");
  }
  absl::StatusOr<data::Dataset> ds = data::ReadDataset(absl::GetFlag(FLAGS_data));
  if (!ds.ok()) return UsageError(absl::StrCat("--data: ", ds.status().message()));
  if (ds->rows() == 0) return UsageError("--data: the dataset has no rows");
  if (group) return RunGroupStream(*ds, drift, mode, steps);

  client::Client c(ClientOptionsFromFlags());
  if (create) {
    absl::StatusOr<v1::CreateSessionRequest> req = CreateRequestFromFlags(
        ds->features(), ds->classes > 0 ? std::optional<int>(ds->classes) : std::nullopt);
    if (!req.ok()) return UsageError(std::string(req.status().message()));
    if (req->session_id().empty()) req->set_session_id(id);
    // Fit the data to the family and try its first step before the session
    // exists, so a stream that could not start leaves nothing behind.
    absl::StatusOr<bool> classifies = FitDataToFamily(req->spec(), &*ds);
    if (!classifies.ok()) return UsageError(std::string(classifies.status().message()));
    if (!*classifies && !absl::GetFlag(FLAGS_classes))
      req->mutable_spec()->mutable_family()->clear_classes();
    absl::StatusOr<TaskSplit> split = SplitFor(req->spec(), ds->rows());
    if (!split.ok()) return UsageError(std::string(split.status().message()));
    if (absl::StatusOr<StepData> step = StepOf(data::DriftingStream(*ds, drift), 1, *split);
        !step.ok()) {
      return UsageError(std::string(step.status().message()));
    }
    absl::StatusOr<v1::SessionInfo> info = c.CreateSession(*req);
    if (!info.ok()) return RpcError("create", info.status());
    id = info->session_id();
    std::printf("created session %s\n", id.c_str());
  }
  absl::StatusOr<v1::SessionInfo> info = c.GetSession(id);
  if (!info.ok()) return RpcError("stream", info.status());
  if (absl::StatusOr<bool> fit = FitDataToFamily(info->spec(), &*ds); !fit.ok()) {
    return UsageError(std::string(fit.status().message()));
  }
  absl::StatusOr<TaskSplit> split = SplitFor(info->spec(), ds->rows());
  if (!split.ok()) return UsageError(std::string(split.status().message()));
  const int64_t first = info->next_t();
  const std::optional<int64_t> until = absl::GetFlag(FLAGS_until);
  const int64_t last = until ? *until : first + steps.value_or(400) - 1;
  if (absl::GetFlag(FLAGS_verbose)) {
    std::printf("streaming %s (%d rows x %d features, %d classes) to %s, steps %lld..%lld\n",
                absl::GetFlag(FLAGS_data).c_str(), ds->rows(), ds->features(), ds->classes,
                id.c_str(), static_cast<long long>(first), static_cast<long long>(last));
  }
  if (last < first) {
    std::printf("session %s is at next_t = %lld: nothing to send\n", id.c_str(),
                static_cast<long long>(first));
    return kExitOk;
  }
  const data::DriftingStream stream(*ds, drift);
  Progress progress(first, last, absl::GetFlag(FLAGS_print_every));
  return SendSteps<SessionSteps>(c, stream, *split, id, id, mode, first, last, progress);
}

}  // namespace f2obo::cli
