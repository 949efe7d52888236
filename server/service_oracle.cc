// OracleSteps: steps of oracle-family sessions, whose f and g the client
// computes (proto: OracleClientMessage; server/oracle_stream.h).
#include "absl/strings/str_cat.h"
#include "core/bilevel/families/oracle_family.h"
#include "f2obo/v1/decode_traits.h"
#include "server/oracle_stream.h"
#include "server/service.h"

namespace f2obo::server {

absl::StatusOr<v1::StepReply> F2oboService::OracleStep(grpc::ServerContext* ctx,
                                                       OracleStream* stream,
                                                       const v1::OracleStepOpen& open,
                                                       OracleWatchdog* watchdog,
                                                       OraclePoints* points) {
  absl::StatusOr<v1::SessionInfo> info = sessions_->Get(open.session_id());
  if (!info.ok()) return info.status();
  const v1::FamilySpec& family = info->spec().family();
  if (family.name() != OracleFamily::kName) {
    return absl::FailedPreconditionError(
        absl::StrCat("session '", open.session_id(), "' is of family '", family.name(),
                     "', whose f and g the server computes: step it with Step or Steps "
                     "(OracleSteps serves family 'oracle')"));
  }
  // The rows of each batch: what the server may name (sf2obo's draws).
  const std::pair<int32_t, const char*> rows[2] = {{open.upper_rows(), "open.upper_rows"},
                                                   {open.inner_rows(), "open.inner_rows"}};
  for (const auto& [n, field] : rows) {
    if (n < 1 || n > sessions_->limits().max_batch_rows) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", n, ", must be in [1, ",
                                                     sessions_->limits().max_batch_rows,
                                                     "] (--max_batch_rows)"));
    }
  }
  absl::StatusOr<std::shared_ptr<const std::atomic<bool>>> stop =
      sessions_->SessionStop(open.session_id());
  if (!stop.ok()) return stop.status();
  StreamOracle::Shape shape{info->x_dim(), info->y_dim(), open.t()};
  auto oracle = std::make_shared<StreamOracle>(
      ctx, stream, watchdog, sessions_->round_stops(), *std::move(stop),
      sessions_->limits().round_budget_seconds, shape, points);
  auto data = std::make_shared<StepData>();
  data->upper.oracle = data->inner.oracle = oracle;
  data->upper.oracle_rows = open.upper_rows();
  data->inner.oracle_rows = open.inner_rows();
  absl::StatusOr<v1::StepReply> reply = sessions_->ApplyDecoded(
      open.session_id(), open.t(), std::shared_ptr<const StepData>(std::move(data)), ctx);
  oracle->Detach();
  return reply;
}

grpc::Status F2oboService::OracleSteps(grpc::ServerContext* ctx, OracleStream* stream) {
  const grpc::Status allowed = OpenStream("OracleSteps", "OracleStepsOpen", ctx);
  if (!allowed.ok()) return allowed;
  OracleWatchdog watchdog(ctx, stream);
  OraclePoints points;
  v1::OracleClientMessage in;
  for (;;) {
    v1::ClearDecodeFailure();
    if (!stream->Read(&in)) break;
    // The round and its reply are one unit for a graceful shutdown.
    const InFlight round(this);
    if (!round.admitted()) return Refuse("OracleSteps");
    v1::OracleServerMessage out;
    const grpc::Status status = Serve("OracleSteps", ctx, &in, [&]() -> absl::Status {
      if (!in.has_open()) {
        return absl::InvalidArgumentError(
            "answers: no request is waiting for them (a step begins with open)");
      }
      absl::StatusOr<v1::StepReply> reply = OracleStep(ctx, stream, in.open(), &watchdog, &points);
      if (!reply.ok()) return reply.status();
      *out.mutable_done() = *std::move(reply);
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
    if (!stream->Write(out)) break;
    if (ctx->IsCancelled()) break;
  }
  return StreamEnd("OracleSteps");
}

}  // namespace f2obo::server
