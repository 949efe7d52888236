// The store's writer thread (session_store.h): the queue of writes, group
// commit, and kNone's gathering of writes, split from sqlite_session_store.cc.
#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "server/fault_points.h"
#include "server/store/sqlite_session_store.h"
#include "server/store/store_write.h"

namespace f2obo::server {

using store_detail::CheckpointRead;
using store_detail::CheckpointWrite;
using store_detail::DeleteGroupWrite;
using store_detail::DeleteSessionWrite;
using store_detail::FenceWrite;
using store_detail::GroupStepWrite;
using store_detail::IndexedBytes;
using store_detail::KeyOf;
using store_detail::PutGroupWrite;
using store_detail::PutSessionWrite;
using store_detail::RollbackWrite;
using store_detail::StepWrite;
using store_detail::WriteOp;

std::string_view store_detail::KeyOf(const WriteOp& op) {
  struct Key {
    std::string_view operator()(const GroupStepWrite&) const { return ""; }
    std::string_view operator()(const FenceWrite& w) const { return w.key; }
    std::string_view operator()(const PutSessionWrite& w) const { return w.id; }
    std::string_view operator()(const StepWrite& w) const { return w.id; }
    std::string_view operator()(const PutGroupWrite& w) const { return w.id; }
    std::string_view operator()(const DeleteSessionWrite& w) const { return w.id; }
    std::string_view operator()(const DeleteGroupWrite& w) const { return w.id; }
    std::string_view operator()(const CheckpointWrite& w) const { return w.id; }
    std::string_view operator()(const RollbackWrite& w) const { return w.id; }
    std::string_view operator()(const CheckpointRead& w) const { return w.id; }
  };
  return std::visit(Key{}, op);
}

std::shared_ptr<SqliteSessionStore::Write> SqliteSessionStore::Queued(WriteOp op) {
  return std::make_shared<Write>(std::move(op));
}

namespace {

size_t Bytes(const IndexedBytes& rows) {
  size_t bytes = 0;
  for (const auto& r : rows) bytes += r.second.size();
  return bytes;
}

// A write's payload bytes (the queue bound): what it holds in memory.
struct Payload {
  size_t operator()(const PutSessionWrite& w) const {
    return w.spec.size() + w.state.size() + Bytes(w.replies) +
           (w.part_source != nullptr ? w.part_source->aux.payload_bytes() : 0);
  }
  size_t operator()(const StepWrite& w) const {
    return w.state.size() + w.reply.size() + w.full_state.size() + Bytes(w.aux_rows) +
           Bytes(w.checkpoint_parts.rows);
  }
  size_t operator()(const GroupStepWrite& w) const {
    size_t bytes = 0;
    for (const StepWrite& step : w.steps) bytes += (*this)(step);
    return bytes;
  }
  size_t operator()(const PutGroupWrite& w) const {
    size_t bytes = w.members.size();
    for (const PutSessionWrite& session : w.sessions) bytes += (*this)(session);
    return bytes;
  }
  size_t operator()(const DeleteSessionWrite&) const { return 0; }
  size_t operator()(const DeleteGroupWrite& w) const {
    size_t bytes = 0;  // as one record, one id a line
    for (const std::string& m : w.members) bytes += m.size() + (bytes > 0 ? 1 : 0);
    return bytes;
  }
  size_t operator()(const CheckpointWrite& w) const { return w.state.size() + Bytes(w.parts.rows); }
  size_t operator()(const RollbackWrite& w) const { return w.state.size() + Bytes(w.replies); }
  size_t operator()(const FenceWrite& w) const { return w.target.size(); }
  size_t operator()(const CheckpointRead&) const { return 0; }
};

}  // namespace

size_t SqliteSessionStore::PayloadBytes(const Write& w) { return std::visit(Payload{}, w.op); }

absl::Status SqliteSessionStore::Submit(std::shared_ptr<Write> w, bool wait,
                                        std::chrono::system_clock::time_point deadline) {
  // Large records to their side files first, on this thread: the writer's
  // transaction then only names them (side_files.cc).
  absl::Status s = SpillLarge(*w);
  if (s.ok()) s = SyncSideFiles(*w);
  if (s.ok()) {
    w->bytes = PayloadBytes(*w);
    s = Enqueue(w, wait, deadline);
  }
  // The writer settles the files of the writes nobody waits for.
  if (wait || !s.ok()) {
    w->status = s;
    SettleSideFiles(*w);
  }
  return s;
}

absl::Status SqliteSessionStore::Enqueue(const std::shared_ptr<Write>& w, bool wait,
                                         std::chrono::system_clock::time_point deadline) {
  absl::MutexLock lock(&mu_);
  // Bounded queue: a writer that falls behind (kNone does not wait for its
  // writes) holds back new ones instead of growing memory.  The writer takes
  // the whole queue at once, so room comes with its next batch; an empty
  // queue admits a write of any size.
  while (!stopping_ && !queue_.empty() && queued_bytes_ + w->bytes > max_queued_bytes_) {
    room_cv_.Wait(&mu_);
  }
  if (stopping_) return absl::UnavailableError("store: shutting down");
  w->waited = wait;
  const bool was_empty = queue_.empty();
  queue_.push_back(w);
  queued_bytes_ += w->bytes;
  queued_waited_ += wait ? 1 : 0;
  max_queued_bytes_seen_ = std::max(max_queued_bytes_seen_, queued_bytes_);
  // Wake the writer when it has something new to decide on: a first write
  // (it sleeps on an empty queue), one a caller waits for, or a queue over
  // its gathering threshold (see WriterLoop).  Not for every write gathered.
  if (was_empty || wait || 2 * queued_bytes_ >= max_queued_bytes_) writer_cv_.Signal();
  if (!wait) return absl::OkStatus();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    const absl::Time until = absl::FromChrono(deadline);
    while (!w->done && !w->done_cv.WaitWithDeadline(&mu_, until)) {
    }
    if (!w->done) {
      // The caller's deadline passed.  Still queued (the writer takes the
      // whole queue at once, under mu_): withdrawn, so a write answered
      // DEADLINE_EXCEEDED is never applied.  Already taken: waited for.
      const auto it = std::find(queue_.begin(), queue_.end(), w);
      if (it != queue_.end()) {
        queue_.erase(it);
        queued_bytes_ -= w->bytes;
        --queued_waited_;
        room_cv_.SignalAll();
        return absl::DeadlineExceededError(
            "the deadline passed while the write waited for the store (busy with earlier "
            "writes); not written");
      }
    }
  }
  while (!w->done) w->done_cv.Wait(&mu_);
  return w->status;
}

void SqliteSessionStore::MarkSupersededStates(const std::deque<std::shared_ptr<Write>>& batch) {
  // Walk backwards, remembering for each key the run of steps that follows
  // the write (up to the key's next write of another kind): whether there
  // is one, the replies its last step trims (those keyed at or below
  // trimmed_to) and the aux parts its steps write.
  struct Run {
    bool steps = false;
    int64_t trimmed_to = 0;
    std::unordered_set<int64_t> parts;
  };
  std::unordered_map<std::string_view, Run> runs;
  for (auto it = batch.rbegin(); it != batch.rend(); ++it) {
    WriteOp& op = (*it)->op;
    const std::string_view key = KeyOf(op);
    StepWrite* step = std::get_if<StepWrite>(&op);
    Run& run = runs[key];
    if (step == nullptr) {
      // Group writes name a group id (a group's steps: none), not their
      // members': a member's step before a group write is never superseded
      // (its next write is not a step of the same id), which is always safe.
      run = Run{};
      continue;
    }
    step->state_superseded = run.steps;
    step->reply_superseded = run.steps && step->t <= run.trimmed_to;
    step->aux_superseded.assign(step->aux_rows.size(), false);
    if (run.steps) {
      for (size_t i = 0; i < step->aux_rows.size(); ++i) {
        step->aux_superseded[i] = run.parts.count(step->aux_rows[i].first) > 0;
      }
    } else {
      run.steps = true;
      run.trimmed_to = step->t - step->keep_replies;  // SaveReply keeps (t - keep, t]
    }
    for (const auto& row : step->aux_rows) run.parts.insert(row.first);
  }
}

void SqliteSessionStore::NoteStepOutcome(const Write& w) {
  // A group's steps: their outcome is the whole write's (one transaction).
  if (const auto* group = std::get_if<GroupStepWrite>(&w.op)) {
    for (const StepWrite& step : group->steps) NoteStepOutcome(step, w.status);
  } else if (const auto* step = std::get_if<StepWrite>(&w.op)) {
    NoteStepOutcome(*step, w.status);
  }
}

void SqliteSessionStore::NoteStepOutcome(const StepWrite& w, const absl::Status& status) {
  const bool failed = !status.ok();
  if (!failed && !w.complete_parts) return;
  absl::MutexLock lock(&mu_);
  if (failed) {
    needs_complete_.insert(w.id);  // its changes are not stored
  } else {
    needs_complete_.erase(w.id);
  }
}

void SqliteSessionStore::HoldWriterForTesting(bool hold) {
  absl::MutexLock lock(&mu_);
  writer_held_ = hold;
  if (!hold) writer_cv_.Signal();
}

void SqliteSessionStore::WriterLoop() {
  for (;;) {
    std::deque<std::shared_ptr<Write>> batch;
    {
      absl::MutexLock lock(&mu_);
      while (!stopping_ && (queue_.empty() || writer_held_)) writer_cv_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, and drained
      if (durability_ == Durability::kNone) {
        // Nobody waits for these writes: gather more, so that a session's
        // consecutive steps share one transaction and one state write.
        const absl::Time until = absl::Now() + absl::Microseconds(kNoneBatchWindowMicros);
        while (!stopping_ && queued_waited_ == 0 && 2 * queued_bytes_ < max_queued_bytes_ &&
               !writer_cv_.WaitWithDeadline(&mu_, until)) {
        }
      }
      batch.swap(queue_);
      queued_bytes_ = 0;
      queued_waited_ = 0;
    }
    // Tests make the writer slow here (a large write holding it).
    for (const auto& w : batch) {
      FaultPoint("store_write", KeyOf(w->op)).IgnoreError();
    }
    MarkSupersededStates(batch);
    room_cv_.SignalAll();  // room for writers held back by the bound
    // Group commit: one transaction (one fsync) for everything pending.
    bool batch_ok = ExecCached("BEGIN IMMEDIATE").ok();
    for (const auto& w : batch) {
      if (!batch_ok) break;
      w->status = Apply(*w);
      w->dead_files = TakeReleasedFiles();
      batch_ok = w->status.ok();
    }
    if (batch_ok) batch_ok = ExecCached("COMMIT").ok();
    if (batch_ok) {
      for (const auto& w : batch) {
        if (const StepWrite* step = std::get_if<StepWrite>(&w->op)) {
          superseded_states_ += step->state_superseded ? 1 : 0;
          superseded_replies_ += step->reply_superseded ? 1 : 0;
          superseded_parts_ +=
              std::count(step->aux_superseded.begin(), step->aux_superseded.end(), true);
        }
        NoteStepOutcome(*w);
      }
    }
    if (!batch_ok) {
      // Something failed: undo, then give each write its own transaction so
      // one bad write cannot fail its neighbours (each whole: a step's state
      // may not rely on a later step that fails).
      ExecCached("ROLLBACK").IgnoreError();
      TakeReleasedFiles();  // (released by nothing durable)
      for (const auto& w : batch) {
        if (StepWrite* step = std::get_if<StepWrite>(&w->op)) {
          step->state_superseded = false;
          step->reply_superseded = false;
          step->aux_superseded.clear();
        }
      }
      for (const auto& w : batch) {
        absl::Status s = ExecCached("BEGIN IMMEDIATE");
        if (s.ok()) s = Apply(*w);
        w->dead_files = TakeReleasedFiles();
        if (s.ok()) s = ExecCached("COMMIT");
        if (!s.ok()) ExecCached("ROLLBACK").IgnoreError();
        w->status = s;
        NoteStepOutcome(*w);
      }
    }
    // The side files of writes nobody waits for (a waiting caller settles
    // its own, off this thread).
    for (const auto& w : batch) {
      if (!w->waited) SettleSideFiles(*w);
    }
    // A write nobody waits for (kNone's steps) cannot report its failure to
    // a caller: say it on stderr instead of losing durability silently
    // (1st, 2nd, 4th, 8th, ... failure, so a full disk cannot flood the log).
    for (const auto& w : batch) {
      if (w->waited || w->status.ok()) continue;
      int64_t n;
      {
        absl::MutexLock lock(&mu_);
        n = ++unwaited_failures_;
      }
      if ((n & (n - 1)) == 0) {
        std::fprintf(stderr,
                     "f2obo-server: store: a step of session '%s' was not saved (%s); %lld "
                     "unsaved so far: a restart resumes from older steps\n",
                     std::string(KeyOf(w->op)).c_str(), std::string(w->status.message()).c_str(),
                     static_cast<long long>(n));
      }
    }
    absl::MutexLock lock(&mu_);
    for (const auto& w : batch) {
      w->done = true;
      w->done_cv.Signal();  // its one caller, if it waits
    }
  }
}

}  // namespace f2obo::server
