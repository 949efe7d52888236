// Records the PostgreSQL store's tests write: a session's state bytes at
// step index t, its spec and a step's reply, each told apart by its
// arguments.
#ifndef F2OBO_TESTS_SERVER_STORE_POSTGRES_PG_TEST_RECORDS_H_
#define F2OBO_TESTS_SERVER_STORE_POSTGRES_PG_TEST_RECORDS_H_

#include <cstdint>
#include <string>

#include "core/state.h"
#include "f2obo/v1/f2obo.pb.h"

namespace f2obo::testing {

inline std::string StateBytes(int64_t t, double seed) {
  SessionState s;
  s.t = t;
  s.x = Vector::Constant(16, seed + static_cast<double>(t));
  s.vectors = {Vector::Constant(3, -seed)};
  s.scalars = {0.5 * static_cast<double>(t)};
  return SerializeCheckpoint(Checkpoint{"quadratic", "f2obo", s, RunningMetrics{}});
}

inline v1::SessionSpec SpecFor(const std::string& id) {
  v1::SessionSpec spec;
  spec.set_algorithm("f2obo");
  spec.mutable_family()->set_name("quadratic");
  spec.add_x0(static_cast<double>(id.size()));
  return spec;
}

inline v1::StepReply ReplyFor(const std::string& id, int64_t t) {
  v1::StepReply r;
  r.set_session_id(id);
  r.set_t(t);
  r.add_x(static_cast<double>(t) / 3.0);
  return r;
}

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_STORE_POSTGRES_PG_TEST_RECORDS_H_
