#include "server/store/postgres/pg_batcher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace f2obo::server::pg {

Batcher::Done Batcher::Run(const std::string& key, const Statement& statement, const Finish& finish,
                           Deadline deadline, bool grows) {
  Item item{&key, &statement, &finish, deadline, grows, false, false, Done{}};
  absl::MutexLock lock(&mu_);
  queue_.push_back(&item);
  // Woken only when its batch is done, or when it is first in the queue
  // and a batch may start (more statements queued than batches in flight):
  // one leader at a time, no herd of waiters.
  const auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (item.done) return true;
    if (queue_.empty() || queue_.front() != &item) return false;
    return in_flight_<in_flight_max_&& static_cast<int64_t>(queue_.size())> in_flight_;
  };
  while (!item.done) {
    if (deadline == Deadline::max()) {
      mu_.Await(absl::Condition(&ready));
    } else if (!mu_.AwaitWithDeadline(absl::Condition(&ready), absl::FromChrono(deadline)) &&
               !item.taken) {
      // Still queued at its deadline: withdrawn, nothing sent.
      queue_.erase(std::find(queue_.begin(), queue_.end(), &item));
      return Done{Outcome::kDone,
                  absl::DeadlineExceededError(
                      "deadline passed waiting for the PostgreSQL store (not written)")};
    }
    if (item.done || item.taken || !ready()) continue;
    // This caller leads a batch of what is queued now, from the front.
    std::vector<Item*> batch;
    size_t bytes = 0;
    while (!queue_.empty() && batch.size() < kMaxStatements &&
           (batch.empty() || bytes + queue_.front()->statement->bytes() <= kMaxBytes)) {
      Item* next = queue_.front();
      queue_.pop_front();
      next->taken = true;
      bytes += next->statement->bytes();
      batch.push_back(next);
    }
    ++in_flight_;
    ++batches_;
    statements_ += static_cast<int64_t>(batch.size());
    mu_.Unlock();
    RunBatch(batch);
    mu_.Lock();
    --in_flight_;
    for (Item* done : batch) done->done = true;
  }
  return item.result;
}

void Batcher::RunBatch(std::vector<Item*>& batch) {
  std::stable_sort(batch.begin(), batch.end(),
                   [](const Item* a, const Item* b) { return *a->key < *b->key; });
  const auto all = [&](Outcome outcome, const absl::Status& s) {
    for (Item* item : batch) item->result = Done{outcome, s};
  };
  Deadline latest = Deadline::min();
  bool grows = false;
  for (const Item* item : batch) {
    latest = std::max(latest, item->deadline);
    grows = grows || item->grows;
  }
  absl::StatusOr<std::unique_ptr<Conn>> acquired = pool_->Acquire(latest);
  if (!acquired.ok()) {  // nothing sent: each tries alone (and is told why)
    all(Outcome::kAlone, acquired.status());
    return;
  }
  std::unique_ptr<Conn> c = *std::move(acquired);
  const std::string what = absl::StrCat("storing a batch of ", batch.size(), " steps");
  absl::Status s = grows ? cap_->Check(*c) : absl::OkStatus();
  if (!s.ok()) {
    all(Outcome::kAlone, s);
  } else if (batch.size() == 1) {
    // Alone already: its own outcome (as Transactions' one statement).
    absl::StatusOr<Result> r = c->Run(what, *batch[0]->statement);
    if (r.ok()) {
      all(Outcome::kDone, (*batch[0]->finish)(*c, *r));
    } else {
      all(c->broken() ? Outcome::kUnknown : Outcome::kDone, r.status());
    }
  } else {
    std::vector<const Statement*> statements;
    for (const Item* item : batch) statements.push_back(item->statement);
    absl::StatusOr<std::vector<Result>> rs = c->RunPipeline(what, statements);
    if (!rs.ok()) {
      all(c->broken() ? Outcome::kUnknown : Outcome::kAlone, rs.status());
    } else {
      for (size_t i = 0; i < batch.size(); ++i) {
        batch[i]->result = Done{Outcome::kDone, (*batch[i]->finish)(*c, (*rs)[i])};
      }
    }
  }
  pool_->Release(std::move(c));
}

int64_t Batcher::batches() const {
  absl::MutexLock lock(&mu_);
  return batches_;
}

int64_t Batcher::statements() const {
  absl::MutexLock lock(&mu_);
  return statements_;
}

int64_t Batcher::queued() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(queue_.size());
}

}  // namespace f2obo::server::pg
