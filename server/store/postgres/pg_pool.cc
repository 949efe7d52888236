#include "server/store/postgres/pg_pool.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace f2obo::server::pg {

void Pool::Add(std::unique_ptr<Conn> c) {
  absl::MutexLock lock(&mu_);
  idle_.push_back(std::move(c));
}

absl::StatusOr<std::unique_ptr<Conn>> Pool::Acquire(Deadline deadline) {
  std::unique_ptr<Conn> c;
  {
    absl::MutexLock lock(&mu_);
    const auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return !idle_.empty() || lent_ < size_;
    };
    if (deadline == Deadline::max()) {
      mu_.Await(absl::Condition(&room));
    } else if (!mu_.AwaitWithDeadline(absl::Condition(&room), absl::FromChrono(deadline))) {
      return absl::DeadlineExceededError(
          "deadline passed waiting for the PostgreSQL store (not written)");
    }
    ++lent_;
    if (!idle_.empty()) {
      c = std::move(idle_.back());
      idle_.pop_back();
    }
  }
  if (c != nullptr && !c->broken()) return c;
  // None yet, or one that broke: a new connection (through a multi-host
  // URI, to whichever server is the primary now).
  absl::StatusOr<std::unique_ptr<Conn>> made = Conn::Connect(uri_);
  absl::MutexLock lock(&mu_);
  if (!made.ok()) {
    --lent_;
    return absl::UnavailableError(absl::StrCat(made.status().message(), " (not written: retry)"));
  }
  if (c != nullptr) ++broken_;
  if (broken_ > 0) {  // this one replaces a broken one
    --broken_;
    reconnects_.fetch_add(1);
  }
  return made;
}

void Pool::Release(std::unique_ptr<Conn> c) {
  absl::MutexLock lock(&mu_);
  --lent_;
  if (c == nullptr) return;
  if (c->broken()) {
    ++broken_;
  } else {
    idle_.push_back(std::move(c));
  }
}

}  // namespace f2obo::server::pg
