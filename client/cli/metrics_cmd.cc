// `metrics`: WatchMetrics of one session as CSV, one row per step in step
// order.  Without --follow it stops at the session's last applied step
// (GetSession's next_t - 1, or --until), also when the server holds no
// message for the last steps (WatchMetricsRequest.until_t: they were
// before a restart), and then says so on stderr; with --follow it keeps
// writing rows as steps are applied until the session is deleted (or
// --until).
#include <cstdio>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "client/cli/cli.h"

namespace f2obo::cli {
namespace {

constexpr char kHeader[] =
    "t,lambda,z_iterations,y_iterations,cap_hit,residual_z,residual_y,upper_loss_before,"
    "accuracy_before,round_seconds,regret_term,blreg,hypergradient_error,value,variation,"
    "drift,exact_skipped_reason,inner_loss_before,inner_gap,fw_gap,outer_gap,simple_f,"
    "simple_g,g_star_converged,exact_probability,evaluated_steps,skipped_steps,estimate,"
    "estimate_standard_error";

std::string G(double v) { return absl::StrFormat("%.10g", v); }

std::string CsvQuote(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  return absl::StrCat("\"", absl::StrReplaceAll(s, {{"\"", "\"\""}}), "\"");
}

// Coverage and the Horvitz-Thompson estimate (RunningMetrics): the
// session's running sums after this step, carried by the exact metrics when
// computed and by the step itself on a due step without them; empty on a
// step whose exact metrics were not due.
std::string CoverageColumns(const v1::StepMetrics& m) {
  const v1::RunningMetrics* running = m.has_exact()     ? &m.exact().running()
                                      : m.has_running() ? &m.running()
                                                        : nullptr;
  if (running == nullptr) return ",,,,";
  return absl::StrCat(G(m.exact_probability()), ",", running->evaluated_steps(), ",",
                      running->skipped_steps(), ",", G(running->estimate()), ",",
                      G(running->estimate_standard_error()));
}

std::string SimpleColumns(const v1::StepMetrics& m) {
  const v1::RoundReport& r = m.report();
  if (!r.has_simple()) return ",,,,,,";
  std::string cols = absl::StrCat(G(r.simple().inner_loss_before()), ",");
  if (!m.has_exact() || !m.exact().has_simple()) return absl::StrCat(cols, ",,,,,");
  const v1::SimpleExactMetrics& e = m.exact().simple();
  absl::StrAppend(&cols, G(e.inner_gap()), ",", e.has_fw_gap() ? G(e.fw_gap()) : "", ",",
                  e.has_outer_gap() ? G(e.outer_gap()) : "", ",", G(e.f()), ",", G(e.g()), ",",
                  e.g_star_converged() ? 1 : 0);
  return cols;
}

// The round's columns the bilevel and multi-task classes share; a simple
// bilevel round has none of them.
std::string RoundColumns(const v1::RoundReport& r) {
  if (r.has_bilevel()) {
    const v1::BilevelRoundReport& b = r.bilevel();
    return absl::StrCat(G(b.lambda()), ",", b.z_iterations(), ",", b.y_iterations(), ",",
                        b.cap_hit() ? 1 : 0, ",", G(b.residual_z()), ",", G(b.residual_y()));
  }
  if (r.has_multitask()) {
    const v1::MultitaskRoundReport& mt = r.multitask();
    return absl::StrCat(G(mt.lambda()), ",", mt.z_iterations(), ",", mt.y_iterations(), ",0,",
                        G(mt.residual_z()), ",", G(mt.residual_y()));
  }
  return ",,,,,";
}

// The exact metrics' columns the bilevel and multi-task classes share (a
// multi-task step has no variation nor drift).
std::string ExactColumns(const v1::StepMetrics& m) {
  if (!m.has_exact()) return ",,,,,";
  const v1::ExactMetrics& e = m.exact();
  if (e.has_bilevel()) {
    const v1::BilevelExactMetrics& b = e.bilevel();
    return absl::StrCat(G(b.regret_term()), ",", G(e.running().bilevel().blreg()), ",",
                        G(b.hypergradient_error()), ",", G(b.value()), ",",
                        b.has_variation() ? G(b.variation()) : "", ",",
                        b.has_drift() ? G(b.drift()) : "");
  }
  if (e.has_multitask()) {
    const v1::MultitaskExactMetrics& mt = e.multitask();
    return absl::StrCat(G(mt.regret_term()), ",", G(e.running().multitask().blreg()), ",",
                        G(mt.hypergradient_error()), ",", G(mt.value()), ",,");
  }
  return ",,,,,";
}

std::string Row(const v1::StepMetrics& m) {
  const v1::RoundReport& r = m.report();
  std::string row = absl::StrCat(m.t(), ",", RoundColumns(r), ",", G(r.upper_loss_before()), ",",
                                 r.has_accuracy_before() ? G(r.accuracy_before()) : "", ",",
                                 G(r.round_seconds()), ",", ExactColumns(m), ",");
  // Simple bilevel sessions' columns are empty for the other classes.
  absl::StrAppend(&row, CsvQuote(m.exact_skipped_reason()), ",", SimpleColumns(m), ",",
                  CoverageColumns(m));
  return row;
}

}  // namespace

int RunMetrics() {
  const std::string id = absl::GetFlag(FLAGS_session);
  if (id.empty()) return UsageError("--session is required");
  const int64_t after = absl::GetFlag(FLAGS_after);
  if (after < 0) return UsageError("--after: must be >= 0");
  const bool follow = absl::GetFlag(FLAGS_follow);
  client::Client c(ClientOptionsFromFlags());

  // The last step to wait for; -1: none (follow until the stream ends).
  int64_t last = -1;
  if (const std::optional<int64_t> until = absl::GetFlag(FLAGS_until)) {
    last = *until;
  } else if (!follow) {
    absl::StatusOr<v1::SessionInfo> info = c.GetSession(id);
    if (!info.ok()) return RpcError("metrics", info.status());
    last = info->next_t() - 1;
  }

  const std::string path = absl::GetFlag(FLAGS_out);
  FILE* out = path.empty() ? stdout : std::fopen(path.c_str(), "w");
  if (out == nullptr) return UsageError(absl::StrCat("--out: cannot write '", path, "'"));
  std::fprintf(out, "%s\n", kHeader);
  int64_t rows = 0;
  absl::Status status;
  if (last < 0 || last > after) {
    grpc::ClientContext ctx;  // no deadline: steps may still be in flight
    v1::WatchMetricsRequest req;
    req.set_session_id(id);
    req.set_after_t(after);
    if (last >= 0) req.set_until_t(last);  // the server ends the stream there
    auto reader = c.stub().WatchMetrics(&ctx, req);
    v1::StepMetrics m;
    bool reached = false;
    int64_t newest = after;
    while (reader->Read(&m)) {
      newest = m.t();
      std::fprintf(out, "%s\n", Row(m).c_str());
      ++rows;
      if (follow) std::fflush(out);
      if (last >= 0 && m.t() >= last) {
        reached = true;
        ctx.TryCancel();
        break;
      }
    }
    status = client::FromGrpc(reader->Finish());
    if (reached) status = absl::OkStatus();
    if (status.ok() && last >= 0 && newest < last) {
      std::fprintf(stderr,
                   "metrics: the server holds no metrics of steps %lld to %lld of session '%s' "
                   "(they are kept in memory, the newest ~1000 steps since the server last "
                   "loaded the session: a restart or an import loses them)\n",
                   static_cast<long long>(newest + 1), static_cast<long long>(last), id.c_str());
    }
    // With --follow, the stream ends normally when the session is deleted.
    if (follow && status.code() == absl::StatusCode::kNotFound &&
        absl::StrContains(status.message(), "was deleted")) {
      status = absl::OkStatus();
    }
  }
  const bool write_ok = std::fflush(out) == 0 && (out == stdout || std::fclose(out) == 0);
  if (!status.ok()) return RpcError("metrics", status);
  if (!write_ok) return UsageError(absl::StrCat("--out: error writing '", path, "'"));
  if (!path.empty()) {
    std::printf("wrote %lld rows to %s\n", static_cast<long long>(rows), path.c_str());
  }
  return kExitOk;
}

}  // namespace f2obo::cli
