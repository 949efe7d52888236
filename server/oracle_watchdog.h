// Bounds the Reads of an OracleSteps stream (server/oracle_stream.h).
//
// Waiting is bounded: while a Read is outstanding a watchdog thread looks
// every few ms at the call (deadline, cancellation), the server's shutdown,
// a Delete of the session and the per-round budget (a CallRoundControl of
// its own); when one says
// stop, it writes an `error` message with the reason and cancels the call,
// which ends the Read.  So a silent client holds its session no longer than
// the round budget or its deadline, and never holds a shutdown.
//
#ifndef F2OBO_SERVER_ORACLE_WATCHDOG_H_
#define F2OBO_SERVER_ORACLE_WATCHDOG_H_

#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "f2obo/v1/f2obo.grpc.pb.h"
#include "server/call_round_control.h"

namespace f2obo::server {

using OracleStream = grpc::ServerReaderWriter<v1::OracleServerMessage, v1::OracleClientMessage>;

// Bounds an oracle stream's Reads (see above).  One per stream.
class OracleWatchdog {
 public:
  OracleWatchdog(grpc::ServerContext* ctx, OracleStream* stream);
  ~OracleWatchdog();  // stops and joins its thread
  OracleWatchdog(const OracleWatchdog&) = delete;
  OracleWatchdog& operator=(const OracleWatchdog&) = delete;

  // A Read is about to block; `control` says when it must stop (owned by
  // the caller, alive until Disarm).
  void Arm(CallRoundControl* control);
  // The Read returned: OK, or the status the watchdog stopped it with.
  absl::Status Disarm();

 private:
  void Run();

  grpc::ServerContext* const ctx_;
  OracleStream* const stream_;
  // Waits (Await) re-check their conditions whenever mu_ is released, so
  // no change below needs a signal.
  absl::Mutex mu_;
  // Stops the armed Read: tells the client why, then cancels the call
  // unless the client ends it within kGrace.  Releases mu_ while it writes;
  // holds it again on return.
  void Fire() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  CallRoundControl* armed_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Status fired_ ABSL_GUARDED_BY(mu_);
  bool writing_ ABSL_GUARDED_BY(mu_) = false;  // the error is being written
  bool quit_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_ORACLE_WATCHDOG_H_
