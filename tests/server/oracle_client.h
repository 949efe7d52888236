// A test's OracleSteps client (proto: OracleClientMessage): it answers the
// server's queries with a core family on the step's data, as a user's
// model would, so that an oracle session can be compared with the built-in
// session of that family (bilevel, multi-task or simple bilevel).  Answers
// can be tampered with (bad clients).
#ifndef F2OBO_TESTS_SERVER_ORACLE_CLIENT_H_
#define F2OBO_TESTS_SERVER_ORACLE_CLIENT_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/batch.h"
#include "core/family.h"
#include "core/multitask/multitask_family.h"
#include "core/simple/simple_family.h"
#include "f2obo/v1/f2obo.grpc.pb.h"
#include "tests/server/e2e_support.h"

namespace f2obo::testing {

// Answers a step's queries with some family on that step's data.
class Answerer {
 public:
  virtual ~Answerer() = default;
  // The step whose data the next answers use.
  virtual void SetStep(int64_t t) = 0;
  // Writes the step's rows (or tasks) into `open`.
  virtual void Open(v1::OracleStepOpen* open) const = 0;
  // Answers every query of `r`; `points` holds the points sent so far.
  v1::OracleAnswers Answer(const v1::OracleRequest& r, std::map<uint64_t, Vector>* points);
  virtual int x_dim() const = 0;
  virtual int y_dim() const = 0;

 protected:
  // The value of query `q` at (x, y) (y null: the simple class) on `rows`
  // of the batch it names; writes gx / gy when non-null.
  virtual double Evaluate(const v1::OracleQuery& q, const Vector& x, const Vector* y,
                          const RowSet& rows, Vector* gx, Vector* gy) = 0;
};

// The bilevel family of case `f` on RequestFor(f, ., t)'s batches, decoded
// as the server decodes them.
class FamilyAnswerer final : public Answerer {
 public:
  explicit FamilyAnswerer(const FamilyCase& f);
  void SetStep(int64_t t) override;
  void Open(v1::OracleStepOpen* open) const override;

 protected:
  double Evaluate(const v1::OracleQuery& q, const Vector& x, const Vector* y, const RowSet& rows,
                  Vector* gx, Vector* gy) override;
  int x_dim() const override { return family_->x_dim(); }
  int y_dim() const override { return family_->y_dim(); }

 private:
  FamilyCase case_;
  std::unique_ptr<Family> family_;
  StepData data_;
};

// A multi-task family (`config`, built-in) on `steps(t)`'s per-task data.
class TaskAnswerer final : public Answerer {
 public:
  TaskAnswerer(const FamilyConfig& config, std::function<StepData(int64_t)> steps);
  void SetStep(int64_t t) override;
  void Open(v1::OracleStepOpen* open) const override;

 protected:
  double Evaluate(const v1::OracleQuery& q, const Vector& x, const Vector* y, const RowSet& rows,
                  Vector* gx, Vector* gy) override;
  int x_dim() const override { return family_->x_dim(); }
  int y_dim() const override { return family_->y_dim(); }

 private:
  std::unique_ptr<MultitaskFamily> family_;
  std::function<StepData(int64_t)> steps_;
  StepData data_;
};

// A simple bilevel family (`config`, built-in) on `steps(t)`'s batches.
class SimpleAnswerer final : public Answerer {
 public:
  SimpleAnswerer(const FamilyConfig& config, std::function<StepData(int64_t)> steps);
  void SetStep(int64_t t) override;
  void Open(v1::OracleStepOpen* open) const override;

 protected:
  double Evaluate(const v1::OracleQuery& q, const Vector& x, const Vector* y, const RowSet& rows,
                  Vector* gx, Vector* gy) override;
  int x_dim() const override { return family_->x_dim(); }
  int y_dim() const override { return 0; }

 private:
  std::unique_ptr<SimpleFamily> family_;
  std::function<StepData(int64_t)> steps_;
  StepData data_;
};

struct OracleOutcome {
  std::optional<v1::StepReply> reply;           // `done`
  std::optional<v1::OracleError> error;         // `error`
  grpc::Status status;                          // the stream's status, when it ended
  int requests = 0;                             // requests received
  int64_t request_bytes = 0;                    // their serialized sizes
  int64_t answer_bytes = 0;                     // and the answers'
  int y_points_sent = 0;                        // points of y's size sent as values
  int recipes = 0;                              // points named by recipe
  std::optional<v1::OracleServerMessage> done;  // the whole `done` message
};

// What to do with the answers to request `index` (0-based) of a step:
// send them (maybe changed), or not (return false: stay silent).
using Tamper = std::function<bool(int index, v1::OracleAnswers* answers)>;

class OracleClient {
 public:
  // `routing_key`: sent as the x-f2obo-session header (a proxy in front
  // routes the stream by it; the stub's channel must not add it too).
  // `recipes`: speak the recipe protocol (OracleStepOpen.recipes): build
  // points from recipes, answer fused gradients, keep what the server says.
  OracleClient(v1::F2obo::Stub* stub, double timeout_seconds = 60.0,
               const std::string& routing_key = "", bool recipes = false);
  // Runs step t of `session` answering with `answerer`; the stream stays
  // open after `done` and ends otherwise (reply unset, status set).
  // `open_hook` may change the open message before it is sent.
  OracleOutcome Step(const std::string& session, int64_t t, Answerer* answerer,
                     const Tamper& tamper = nullptr,
                     const std::function<void(v1::OracleStepOpen*)>& open_hook = nullptr);
  grpc::ClientContext* context() { return &ctx_; }
  // The points the client holds (the server's view of them must agree).
  const std::map<uint64_t, Vector>& points() const { return points_; }
  // Ends the stream cleanly; its status.
  grpc::Status Close();

 private:
  grpc::ClientContext ctx_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::OracleClientMessage, v1::OracleServerMessage>>
      stream_;
  std::map<uint64_t, Vector> points_;
  bool ended_ = false;
  const bool recipes_;
};

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_ORACLE_CLIENT_H_
