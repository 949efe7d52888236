// Cooperative stopping of a round.  Whoever runs a round (the server) may
// need it to stop early: the client's deadline passed or it cancelled, the
// server is shutting down, the session is being deleted, or the round used
// up the server's per-round budget.  The round's loops ask at every inner
// iteration; a stopped round returns the status it was given, and
// Session::Prepare discards its scratch state, so a stopped round changes
// nothing (core/session.h).
#ifndef F2OBO_CORE_ROUND_CONTROL_H_
#define F2OBO_CORE_ROUND_CONTROL_H_

#include "absl/status/status.h"

namespace f2obo {

class RoundControl {
 public:
  virtual ~RoundControl() = default;
  // OK to go on, else why the round must stop (e.g. CANCELLED,
  // DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED naming the budget); once not OK it
  // stays so.  Called from the round's thread once per inner iteration, so
  // it must be cheap (an implementation may look at clocks only every few
  // calls).
  virtual absl::Status Check() = 0;
};

// OK when `control` is null (a round nobody stops: tests, benchmarks).
inline absl::Status ContinueRound(RoundControl* control) {
  return control == nullptr ? absl::OkStatus() : control->Check();
}

// What an algorithm with loops holds: the control of the round it is
// running (set by its Problem around each Round, null otherwise).
class StoppableRound {
 public:
  void set_round_control(RoundControl* control) { control_ = control; }

 protected:
  RoundControl* round_control() const { return control_; }
  absl::Status ContinueRound() const { return f2obo::ContinueRound(control_); }

 private:
  RoundControl* control_ = nullptr;
};

// Sets an algorithm's round control for one scope (the Problem's Round).
class ScopedRoundControl {
 public:
  ScopedRoundControl(StoppableRound* algorithm, RoundControl* control) : algorithm_(algorithm) {
    algorithm_->set_round_control(control);
  }
  ~ScopedRoundControl() { algorithm_->set_round_control(nullptr); }
  ScopedRoundControl(const ScopedRoundControl&) = delete;
  ScopedRoundControl& operator=(const ScopedRoundControl&) = delete;

 private:
  StoppableRound* algorithm_;
};

}  // namespace f2obo

#endif  // F2OBO_CORE_ROUND_CONTROL_H_
