// `stream`: replays a dataset as a drifting stream into a session over the
// network (the twin of f2obo-replay).  Starts at the session's next_t and,
// since DriftingStream::Make(t) depends only on (seed, t), resuming after an
// interruption (or reconnecting after UNAVAILABLE) sends exactly the batches
// an uninterrupted run would have sent.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/cli.h"
#include "client/cli/reconnects.h"
#include "client/data/drift_stream.h"
#include "client/session_routing.h"
#include "core/problem_registry.h"
#include "core/simple/simple_registries.h"
#include "f2obo/v1/convert.h"

ABSL_FLAG(std::string, data,
          "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz,"
          "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz",
          "Dataset: an IDX pair 'images,labels' (gzip ok), a .csv (label in the last column) "
          "or a LibSVM file (.svm, .libsvm, .txt)");
ABSL_FLAG(double, upper_fraction, 0.5, "Share of each step's rows in the upper batch");
ABSL_FLAG(std::string, imbalance, "0.6,0.7,0.8,0.9",
          "Class-imbalance phases: rho per phase, class i kept w.p. rho^i ('' = balanced)");
ABSL_FLAG(int, phase_steps, 100, "Steps per imbalance phase");
ABSL_FLAG(std::string, label_noise, "",
          "Label noise schedule 'step:prob,...': from each step on, inner labels are "
          "replaced w.p. prob by a random class");
ABSL_FLAG(bool, noise_in_upper, false, "Also corrupt the upper (validation) labels");
ABSL_FLAG(std::string, mode, "stream",
          "stream: the bidirectional Steps RPC (reconnects and resumes on UNAVAILABLE); "
          "unary: one Step RPC per step, retried on transient errors");
ABSL_FLAG(int, print_every, 20,
          "When stdout is not a terminal, print a progress line every N steps");
ABSL_FLAG(int, tasks_per_step, 1,
          "Multi-task sessions (--tasks=m, or a session created with it): tasks sampled "
          "uniformly per step, each with --rows_per_step rows of its own (RSVRB's i_t; the "
          "server weights them by m / tasks_per_step)");
ABSL_FLAG(bool, create, false,
          "Create the session first from the spec flags (as `create`; features and classes "
          "from the dataset; id from --id or --session)");

namespace f2obo::cli {
namespace {

using Clock = std::chrono::steady_clock;
// Off a terminal, a progress line at least this often even between every
// --print_every steps, so slow steps never look like a hang.
constexpr std::chrono::seconds kQuietLimit(5);

// Progress: one updating line on a terminal, else a line every N steps.
class Progress {
 public:
  Progress(int64_t first, int64_t last)
      : first_(first),
        last_(last),
        tty_(isatty(fileno(stdout)) == 1),
        every_(std::max(1, absl::GetFlag(FLAGS_print_every))),
        start_(Clock::now()) {}

  void Update(const v1::StepReply& r) {
    ++done_;
    window_.push_back(r.report());
    if (static_cast<int>(window_.size()) > every_) window_.pop_front();
    lambda_ = r.report().lambda();
    simple_ = r.report().has_simple();
    if (r.has_latest_exact()) {
      const v1::ExactMetrics& e = r.latest_exact();
      blreg_ = Num(e.running().blreg(), 4);
      if (e.has_simple()) {
        inner_gap_ = Num(e.simple().inner_gap(), 3);
        outer_gap_ = e.simple().has_outer_gap() ? Num(e.simple().outer_gap(), 3) : "-";
      }
    }
    const bool final = r.t() >= last_;
    if (tty_) {
      const auto now = Clock::now();
      if (!final && now - last_print_ < std::chrono::milliseconds(100)) return;
      last_print_ = now;
      std::printf("\r\033[K%s", Line(r.t()).c_str());
      if (final) std::printf("\n");
    } else if ((r.t() - first_ + 1) % every_ == 0 || r.t() == first_ || final ||
               Clock::now() - last_print_ >= kQuietLimit) {
      last_print_ = Clock::now();
      std::printf("%s\n", Line(r.t()).c_str());
    }
    std::fflush(stdout);
  }
  // Ends an unfinished terminal line (before an error or reconnect message).
  void Break() {
    if (tty_ && done_ > 0) std::printf("\n");
  }
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  int64_t done() const { return done_; }

 private:
  std::string Line(int64_t t) const {
    double loss = 0, acc = 0;
    int with_acc = 0;
    for (const v1::RoundReport& r : window_) {
      loss += r.upper_loss_before();
      if (r.has_accuracy_before()) acc += r.accuracy_before(), ++with_acc;
    }
    const double n = std::max<size_t>(1, window_.size());
    if (simple_) {
      // Simple bilevel sessions: the optimality gaps of the decision.
      return absl::StrFormat(
          "step %d (%d/%d)  %.1f steps/s  preq.loss %.4f  preq.acc %s  inner gap %s  outer gap %s",
          t, done_, last_ - first_ + 1, done_ / std::max(1e-9, Seconds()), loss / n,
          with_acc > 0 ? absl::StrFormat("%.3f", acc / with_acc) : "-", inner_gap_, outer_gap_);
    }
    return absl::StrFormat(
        "step %d (%d/%d)  %.1f steps/s  preq.loss %.4f  preq.acc %s  lambda %s  BLReg %s", t, done_,
        last_ - first_ + 1, done_ / std::max(1e-9, Seconds()), loss / n,
        with_acc > 0 ? absl::StrFormat("%.3f", acc / with_acc) : "-", Num(lambda_, 4), blreg_);
  }

  const int64_t first_, last_;
  const bool tty_;
  const int every_;
  const Clock::time_point start_;
  Clock::time_point last_print_;
  int64_t done_ = 0;
  std::deque<v1::RoundReport> window_;  // the last --print_every rounds
  double lambda_ = 0;
  std::string blreg_ = "-";
  bool simple_ = false;
  std::string inner_gap_ = "-", outer_gap_ = "-";
};

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
  absl::StatusOr<SessionConfig> config = ToSessionConfig(spec);
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
  absl::StatusOr<SessionConfig> config = ToSessionConfig(spec);
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

absl::StatusOr<v1::StepRequest> MakeRequest(const data::DriftingStream& stream,
                                            const std::string& id, int64_t t,
                                            const TaskSplit& split) {
  absl::StatusOr<StepData> step = StepOf(stream, t, split);
  if (!step.ok()) return step.status();
  v1::StepRequest req;
  req.set_session_id(id);
  req.set_t(t);
  if (split.tasks > 0) {
    for (const TaskData& task : step->tasks) ToProto(task, req.add_tasks());
    return req;
  }
  ToProto(step->upper, req.mutable_upper());
  ToProto(step->inner, req.mutable_inner());
  return req;
}

// Steps [t, last] over the Steps RPC; on a broken stream, reconnects (with
// backoff) and resumes from the server's next_t.
absl::Status StreamSteps(client::Client& c, const data::DriftingStream& stream,
                         const TaskSplit& split, const std::string& id, int64_t t, int64_t last,
                         Progress& progress) {
  Reconnects reconnects;
  while (t <= last) {
    grpc::ClientContext ctx;             // no deadline: a stream lasts as long as it must
    client::PrepareStreamContext(&ctx);  // the first Write carries x-f2obo-session
    absl::StatusOr<v1::StepRequest> req = MakeRequest(stream, id, t, split);
    if (!req.ok()) return req.status();
    auto rpc = c.stub().Steps(&ctx);
    v1::StepReply reply;
    bool broken = false;
    while (t <= last) {
      if (!rpc->Write(*req)) {
        broken = true;
        break;
      }
      // Build the next batch while the server works on this one.
      if (t < last) req = MakeRequest(stream, id, t + 1, split);
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
      if (reply.t() != t) {
        ctx.TryCancel();
        rpc->Finish();
        return absl::InternalError(absl::StrCat("reply for t = ", reply.t(), ", expected ", t));
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
    // Resume from the server's count (waiting up to --timeout for it to come
    // back): steps it applied are never sent again.
    v1::GetSessionRequest get;
    get.set_session_id(id);
    v1::SessionInfo info;
    auto get_ctx = c.NewContext();
    get_ctx->set_wait_for_ready(true);
    s = client::FromGrpc(c.stub().GetSession(get_ctx.get(), get, &info));
    if (s.ok()) {
      t = info.next_t();
    } else if (s.code() != absl::StatusCode::kUnavailable &&
               s.code() != absl::StatusCode::kDeadlineExceeded) {
      return s;
    }
  }
  return absl::OkStatus();
}

// ------------------------------------------------------------- groups

absl::StatusOr<v1::GroupStepRequest> MakeGroupRequest(const data::DriftingStream& stream,
                                                      const std::string& id, int64_t t,
                                                      const TaskSplit& split) {
  absl::StatusOr<StepData> step = StepOf(stream, t, split);
  if (!step.ok()) return step.status();
  v1::GroupStepRequest req;
  req.set_group_id(id);
  req.set_t(t);
  if (split.tasks > 0) {
    for (const TaskData& task : step->tasks) ToProto(task, req.add_tasks());
    return req;
  }
  ToProto(step->upper, req.mutable_upper());
  ToProto(step->inner, req.mutable_inner());
  return req;
}

// Progress of a group stream: the same cadence as Progress, one entry per
// member (prequential loss and accuracy over the last --print_every steps,
// and the member's latest BLReg).
class GroupProgress {
 public:
  GroupProgress(int64_t first, int64_t last, const std::string& group)
      : first_(first),
        last_(last),
        prefix_(group + "."),
        tty_(isatty(fileno(stdout)) == 1),
        every_(std::max(1, absl::GetFlag(FLAGS_print_every))),
        start_(Clock::now()) {}

  // A member's failure, as a status naming it; OK when every member applied.
  static absl::Status MemberFailure(const v1::GroupStepReply& r) {
    for (const v1::MemberStepResult& m : r.members()) {
      if (m.code() != 0) {
        return absl::Status(
            static_cast<absl::StatusCode>(m.code()),
            absl::StrCat("member ", m.session_id(), " at t = ", r.t(), ": ", m.message()));
      }
    }
    return absl::OkStatus();
  }

  void Update(const v1::GroupStepReply& r) {
    ++done_;
    if (members_.size() != static_cast<size_t>(r.members_size())) {
      members_.assign(r.members_size(), Member{});
    }
    for (int i = 0; i < r.members_size(); ++i) {
      const v1::MemberStepResult& m = r.members(i);
      Member& s = members_[i];
      s.name = m.session_id().rfind(prefix_, 0) == 0 ? m.session_id().substr(prefix_.size())
                                                     : m.session_id();
      s.window.push_back(m.reply().report());
      if (static_cast<int>(s.window.size()) > every_) s.window.pop_front();
      if (m.reply().has_latest_exact())
        s.blreg = Num(m.reply().latest_exact().running().blreg(), 4);
    }
    const bool final = r.t() >= last_;
    if (tty_) {
      const auto now = Clock::now();
      if (!final && now - last_print_ < std::chrono::milliseconds(100)) return;
      last_print_ = now;
      std::printf("\r\033[K%s", Line(r.t()).c_str());
      if (final) std::printf("\n");
    } else if ((r.t() - first_ + 1) % every_ == 0 || r.t() == first_ || final ||
               Clock::now() - last_print_ >= kQuietLimit) {
      last_print_ = Clock::now();
      std::printf("%s\n", Line(r.t()).c_str());
    }
    std::fflush(stdout);
  }
  void Break() {
    if (tty_ && done_ > 0) std::printf("\n");
  }
  double Seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  int64_t done() const { return done_; }

 private:
  struct Member {
    std::string name;
    std::deque<v1::RoundReport> window;
    std::string blreg = "-";
  };

  std::string Line(int64_t t) const {
    std::string line = absl::StrFormat("step %d (%d/%d)  %.1f steps/s", t, done_,
                                       last_ - first_ + 1, done_ / std::max(1e-9, Seconds()));
    for (const Member& m : members_) {
      double loss = 0, acc = 0;
      int with_acc = 0;
      for (const v1::RoundReport& r : m.window) {
        loss += r.upper_loss_before();
        if (r.has_accuracy_before()) acc += r.accuracy_before(), ++with_acc;
      }
      const double n = std::max<size_t>(1, m.window.size());
      absl::StrAppendFormat(&line, "  | %s loss %.4f acc %s BLReg %s", m.name, loss / n,
                            with_acc > 0 ? absl::StrFormat("%.3f", acc / with_acc) : "-", m.blreg);
    }
    return line;
  }

  const int64_t first_, last_;
  const std::string prefix_;
  const bool tty_;
  const int every_;
  const Clock::time_point start_;
  Clock::time_point last_print_;
  int64_t done_ = 0;
  std::vector<Member> members_;
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

// Group steps [t, last] over StepsGroup, reconnecting like StreamSteps.
absl::Status StreamGroupSteps(client::Client& c, const data::DriftingStream& stream,
                              const TaskSplit& split, const std::string& id, int64_t t,
                              int64_t last, GroupProgress& progress) {
  Reconnects reconnects;
  while (t <= last) {
    grpc::ClientContext ctx;
    client::PrepareStreamContext(&ctx);  // the first Write carries x-f2obo-session
    absl::StatusOr<v1::GroupStepRequest> req = MakeGroupRequest(stream, id, t, split);
    if (!req.ok()) return req.status();
    auto rpc = c.stub().StepsGroup(&ctx);
    v1::GroupStepReply reply;
    bool broken = false;
    while (t <= last) {
      if (!rpc->Write(*req)) {
        broken = true;
        break;
      }
      if (t < last) req = MakeGroupRequest(stream, id, t + 1, split);
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
      absl::Status member = GroupProgress::MemberFailure(reply);
      if (reply.t() != t) {
        member = absl::InternalError(absl::StrCat("reply for t = ", reply.t(), ", expected ", t));
      }
      if (!member.ok()) {
        ctx.TryCancel();
        rpc->Finish();
        return member;
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
    absl::StatusOr<int64_t> next = GroupNextT(c, id);
    if (next.ok()) {
      t = *next;
    } else if (next.status().code() != absl::StatusCode::kUnavailable &&
               next.status().code() != absl::StatusCode::kDeadlineExceeded) {
      return next.status();
    }
  }
  return absl::OkStatus();
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
  GroupProgress progress(*first, last, id);
  absl::Status status;
  if (mode == "unary") {
    for (int64_t t = *first; t <= last && status.ok(); ++t) {
      absl::StatusOr<v1::GroupStepRequest> req = MakeGroupRequest(stream, id, t, *split);
      if (!req.ok()) {
        status = req.status();
        break;
      }
      absl::StatusOr<v1::GroupStepReply> reply = c.StepGroup(*req);
      status = reply.ok() ? GroupProgress::MemberFailure(*reply) : reply.status();
      if (status.ok()) progress.Update(*reply);
    }
  } else {
    status = StreamGroupSteps(c, stream, *split, id, *first, last, progress);
  }
  if (!status.ok()) {
    progress.Break();
    return RpcError(absl::StrCat("stream group ", id), status);
  }
  std::printf("streamed %lld steps to group %s in %.2f s (%.1f steps/s); next_t = %lld\n",
              static_cast<long long>(progress.done()), id.c_str(), progress.Seconds(),
              progress.done() / std::max(1e-9, progress.Seconds()),
              static_cast<long long>(last + 1));
  return kExitOk;
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
  Progress progress(first, last);
  absl::Status status;
  if (mode == "unary") {
    for (int64_t t = first; t <= last && status.ok(); ++t) {
      absl::StatusOr<v1::StepRequest> req = MakeRequest(stream, id, t, *split);
      if (!req.ok()) {
        status = req.status();
        break;
      }
      absl::StatusOr<v1::StepReply> reply = c.Step(*req);
      if (reply.ok()) progress.Update(*reply);
      status = reply.status();
    }
  } else {
    status = StreamSteps(c, stream, *split, id, first, last, progress);
  }
  if (!status.ok()) {
    progress.Break();
    return RpcError(absl::StrCat("stream ", id), status);
  }
  std::printf("streamed %lld steps to %s in %.2f s (%.1f steps/s); next_t = %lld\n",
              static_cast<long long>(progress.done()), id.c_str(), progress.Seconds(),
              progress.done() / std::max(1e-9, progress.Seconds()),
              static_cast<long long>(last + 1));
  return kExitOk;
}

}  // namespace f2obo::cli
