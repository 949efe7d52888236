// A test's OracleSteps client (proto: OracleClientMessage): it answers the
// server's queries with a core family on the step's data, as a user's
// model would, so that an oracle session can be compared with the built-in
// session of that family.  Answers can be tampered with (bad clients).
#ifndef F2OBO_TESTS_SERVER_ORACLE_CLIENT_H_
#define F2OBO_TESTS_SERVER_ORACLE_CLIENT_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/family.h"
#include "f2obo/v1/f2obo.grpc.pb.h"
#include "tests/server/e2e_support.h"

namespace f2obo::testing {

// The family of case `f` answering queries on RequestFor(f, ., t)'s
// batches, decoded as the server decodes them.
class FamilyAnswerer {
 public:
  explicit FamilyAnswerer(const FamilyCase& f);
  void SetStep(int64_t t);
  int upper_rows() const { return data_.upper.rows(); }
  int inner_rows() const { return data_.inner.rows(); }
  // Answers every query of `r`; `points` holds the points sent so far.
  v1::OracleAnswers Answer(const v1::OracleRequest& r, std::map<uint64_t, Vector>* points);

 private:
  FamilyCase case_;
  std::unique_ptr<Family> family_;
  StepData data_;
};

struct OracleOutcome {
  std::optional<v1::StepReply> reply;    // `done`
  std::optional<v1::OracleError> error;  // `error`
  grpc::Status status;                   // the stream's status, when it ended
  int requests = 0;                      // requests received
};

// What to do with the answers to request `index` (0-based) of a step:
// send them (maybe changed), or not (return false: stay silent).
using Tamper = std::function<bool(int index, v1::OracleAnswers* answers)>;

class OracleClient {
 public:
  OracleClient(v1::F2obo::Stub* stub, double timeout_seconds = 60.0);
  // Runs step t of `session` answering with `answerer`; the stream stays
  // open after `done` and ends otherwise (reply unset, status set).
  OracleOutcome Step(const std::string& session, int64_t t, FamilyAnswerer* answerer,
                     const Tamper& tamper = nullptr);
  grpc::ClientContext* context() { return &ctx_; }
  // Ends the stream cleanly; its status.
  grpc::Status Close();

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::OracleClientMessage, v1::OracleServerMessage>>
      stream_;
  std::map<uint64_t, Vector> points_;
  bool ended_ = false;
};

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_ORACLE_CLIENT_H_
