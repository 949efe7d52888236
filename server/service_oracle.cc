// OracleSteps: steps of oracle-family sessions (core/oracle.h), whose f
// and g the client computes (proto: OracleClientMessage;
// server/oracle_stream.h).
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/oracle.h"
#include "core/session.h"
#include "f2obo/v1/class_fields.h"
#include "server/oracle_stream.h"
#include "server/service.h"

namespace f2obo::server {

absl::Status F2oboService::OracleStep(grpc::ServerContext* ctx, OracleStream* stream,
                                      const v1::OracleStepOpen& open, OracleWatchdog* watchdog,
                                      OraclePoints* points, v1::OracleServerMessage* out) {
  absl::StatusOr<v1::SessionInfo> info = sessions_->Get(open.session_id());
  if (!info.ok()) return info.status();
  const std::string& family = info->spec().family().name();
  if (!IsOracleFamily(family)) {
    return absl::FailedPreconditionError(
        absl::StrCat("session '", open.session_id(), "' is of family '", family,
                     "', whose f and g the server computes: step it with Step or Steps "
                     "(OracleSteps serves the oracle families: ",
                     absl::StrJoin(kOracleFamilies, ", "), ")"));
  }
  // The rows of each batch: what the server may name (sf2obo's draws).
  const auto check_rows = [&](int32_t n, const std::string& field) -> absl::Status {
    if (n < 1 || n > sessions_->limits().max_batch_rows) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", n, ", must be in [1, ",
                                                     sessions_->limits().max_batch_rows,
                                                     "] (--max_batch_rows)"));
    }
    return absl::OkStatus();
  };
  const bool per_task = family == "multitask_oracle";
  if (per_task) {
    if (open.tasks().empty()) {
      return absl::InvalidArgumentError(
          "open.tasks: a multitask_oracle step lists its tasks (at least one) with their rows");
    }
    if (open.upper_rows() != 0 || open.inner_rows() != 0) {
      return absl::InvalidArgumentError(
          "open.upper_rows, open.inner_rows: a multitask_oracle step gives each task's rows in "
          "open.tasks; leave them 0");
    }
    if (open.tasks_size() > sessions_->limits().max_tasks) {
      return absl::ResourceExhaustedError(
          absl::StrCat("open.tasks: ", open.tasks_size(),
                       " tasks in one step exceed max_tasks = ", sessions_->limits().max_tasks));
    }
    for (int k = 0; k < open.tasks_size(); ++k) {
      const std::string field = absl::StrCat("open.tasks[", k, "]");
      if (absl::Status s = check_rows(open.tasks(k).upper_rows(), field + ".upper_rows"); !s.ok()) {
        return s;
      }
      if (absl::Status s = check_rows(open.tasks(k).inner_rows(), field + ".inner_rows"); !s.ok()) {
        return s;
      }
    }
  } else {
    if (!open.tasks().empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "open.tasks: session '", open.session_id(), "' of family '", family,
          "' has no tasks (only multitask_oracle sessions do); give upper_rows and inner_rows"));
    }
    if (absl::Status s = check_rows(open.upper_rows(), "open.upper_rows"); !s.ok()) return s;
    if (absl::Status s = check_rows(open.inner_rows(), "open.inner_rows"); !s.ok()) return s;
  }
  absl::StatusOr<std::shared_ptr<const std::atomic<bool>>> stop =
      sessions_->SessionStop(open.session_id());
  if (!stop.ok()) return stop.status();
  StreamOracle::Shape shape{info->x_dim(), v1::YDimOf(*info), open.t()};
  shape.max_message_bytes = max_message_bytes_;
  // Recipes for the bilevel family's y (the multi-task and simple classes
  // keep the values protocol: their rounds' points are no such chain).
  shape.recipes = open.recipes() && family == "oracle";
  shape.float32 = open.float32();
  // The oracle sees the session's stop flag without owning its entry: the
  // session's family keeps the step's oracle after the step (to tell a
  // new step's apart, core/oracle.h OracleCalls), and an owning pointer
  // would be a cycle that keeps a deleted session alive.  `stop` owns it
  // until the step is over, and the oracle reads it only during the step.
  const std::shared_ptr<const std::atomic<bool>> stop_flag(std::shared_ptr<void>(), stop->get());
  auto oracle =
      std::make_shared<StreamOracle>(ctx, stream, watchdog, sessions_->round_stops(), stop_flag,
                                     sessions_->limits().round_budget_seconds, shape, points);
  // Batches that hold only their row counts and the oracle answering for
  // them (and, per task, the task its queries name).
  const auto batch = [&](int32_t rows, int task) {
    Batch b;
    b.oracle = oracle;
    b.oracle_rows = rows;
    b.oracle_task = task;
    return b;
  };
  auto data = std::make_shared<StepData>();
  if (per_task) {
    data->tasks.reserve(open.tasks_size());
    for (const v1::OracleTask& task : open.tasks()) {
      TaskData td;
      td.task = task.task();
      td.probability = task.probability();
      td.data.upper = batch(task.upper_rows(), task.task());
      td.data.inner = batch(task.inner_rows(), task.task());
      data->tasks.push_back(std::move(td));
    }
  } else {
    data->upper = batch(open.upper_rows(), -1);
    data->inner = batch(open.inner_rows(), -1);
  }
  const std::shared_ptr<const StepData> step(std::move(data));
  std::vector<Vector> inner;
  absl::StatusOr<v1::StepReply> reply = sessions_->ApplyDecoded(
      open.session_id(), open.t(), step, ctx,
      [&](const Session& s) { inner = s.problem().InnerVariables(s.state(), *step); });
  oracle->Detach();
  if (!reply.ok()) {
    points->EndStep();
    return reply.status();
  }
  *out->mutable_done() = *std::move(reply);
  // The new y as the client's points: most were asked at in the round's
  // last request (F2OBO's hypergradient is taken at y_{t+1}), so an id
  // costs 8 bytes instead of y_dim doubles.
  for (const Vector& y : inner) {
    points->NameDone(absl::Span<const double>(y.data(), static_cast<size_t>(y.size())),
                     shape.recipes, out->add_y());
  }
  points->EndStep();
  return absl::OkStatus();
}

grpc::Status F2oboService::OracleSteps(grpc::ServerContext* ctx, OracleStream* stream) {
  // What the stream's steps share: the watchdog that bounds their waits
  // for the client (started with the first step), and the points the
  // client holds.
  std::optional<OracleWatchdog> watchdog;
  OraclePoints points;
  return ServeStream(
      "OracleSteps", "OracleStepsOpen", ctx, stream,
      [&](const v1::OracleClientMessage& in, v1::OracleServerMessage* out) -> absl::Status {
        if (!in.has_open()) {
          return absl::InvalidArgumentError(
              "answers: no request is waiting for them (a step begins with open)");
        }
        if (!watchdog.has_value()) watchdog.emplace(ctx, stream);
        return OracleStep(ctx, stream, in.open(), &*watchdog, &points, out);
      },
      /*stop_when_cancelled=*/true, /*return_free_memory=*/true);
}

}  // namespace f2obo::server
