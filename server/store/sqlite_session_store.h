// The embedded session store (session_store.h): an SQLite database in the
// server's --data_dir, the default store.
//
// Integrity: SQLite does not checksum its pages, so every stored blob
// (spec, state, each cached reply, each checkpoint, each group's member
// list, each fence) carries a 64-bit checksum of its bytes, its session or
// group id and its step index, written with it and verified by LoadAll() (a
// checkpoint: by LoadCheckpoint(), when it is used); a record failing it is
// reported and not loaded, the others load.  The file as a whole is
// checked at Open (PRAGMA quick_check): a damaged file is refused, so the
// server never starts empty over it, nor writes into it.  Schema versions
// are in PRAGMA user_version; Open migrates older files in place.
//
// Exclusive: Open takes a non-blocking flock on <dir>/LOCK for the store's
// lifetime, so a second server on the same directory fails to start.
//
// Large records (side_files.cc): a record of at least side_file_bytes
// (16 MiB by default) is written by the caller's thread to a file of its own
// under <dir>/records before its write is queued, and its row names the
// file; so one session's big write (a create, import, fork, rollback or
// step of a session of tens of millions of variables) or delete never holds
// the writer, and with it the other sessions' steps, for longer than a
// small write.  Still all or nothing: a file is named only by the
// transaction that commits its write; Open removes the files no row names.
//
// Writes (store_write.h): each call makes one typed write (a struct per
// kind of write), queued for a single writer thread (writer_thread.cc).
//  * kSync: CommitStep returns only once the write is durable (WAL,
//    synchronous=FULL).  The writer batches the writes pending from all
//    sessions into one transaction (group commit), so concurrent streams
//    share fsyncs instead of queueing for one each.
//  * kNone: the same writes, without fsync and without waiting for them
//    (benchmarks; a crash may lose recent steps).  The queue of writes not
//    yet applied is bounded (kMaxQueuedBytes): past it, CommitStep waits.
//
// Thread-safety: thread-safe.
#ifndef F2OBO_SERVER_STORE_SQLITE_SESSION_STORE_H_
#define F2OBO_SERVER_STORE_SQLITE_SESSION_STORE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "core/state.h"
#include "f2obo/v1/f2obo.pb.h"
#include "server/store/session_store.h"

struct sqlite3;

namespace f2obo::server {

namespace store_detail {
// A record in a side file (side_files.cc): its name under <dir>/records,
// and the RecordSum of its bytes (computed by the caller's thread).
struct SideFile {
  std::string name;  // empty: the record is in its row
  int64_t sum = 0;
};
class StmtCache;  // sqlite_stmt.h
// The typed writes (store_write.h).
struct CheckpointPartsRecord;
struct PutSessionWrite;
struct StepWrite;
struct GroupStepWrite;
struct PutGroupWrite;
struct DeleteSessionWrite;
struct DeleteGroupWrite;
struct CheckpointWrite;
struct RollbackWrite;
struct FenceWrite;
struct CheckpointRead;
using WriteOp =
    std::variant<PutSessionWrite, StepWrite, GroupStepWrite, PutGroupWrite, DeleteSessionWrite,
                 DeleteGroupWrite, CheckpointWrite, RollbackWrite, FenceWrite, CheckpointRead>;
}  // namespace store_detail

class SqliteSessionStore final : public SessionStore {
 public:
  // The schema version this code writes (PRAGMA user_version).
  //  0: no checksums (files written before version 1).
  //  1: a checksum column per blob.
  //  2: the checkpoints table.
  //  3: the fences table (scale-out moves, server/store/fences.cc).
  //  4: checksums from WordHash instead of FNV-1a (store/record_sum.h).
  //  5: a session's state in parts (column sessions.parts, table
  //     state_parts): a step writes the aux vectors it changed.
  //  6: large records in side files (column `file` of sessions,
  //     checkpoints and state_parts; server/store/side_files.cc).
  //  7: checkpoints in parts (columns checkpoints.parts and .since, table
  //     checkpoint_parts): a checkpoint writes the parts changed since the
  //     previous one (server/store/checkpoints.cc).
  static constexpr int kSchemaVersion = 7;
  // Under kNone, CommitStep does not wait for its write; it waits only when
  // this many bytes are already queued, so a slow disk bounds the memory.
  // (Under kSync every caller waits anyway.)
  static constexpr size_t kMaxQueuedBytes = size_t{64} << 20;
  // Under kNone, how long the writer gathers writes nobody waits for.
  static constexpr int kNoneBatchWindowMicros = 5000;
  // Records of at least this many bytes go to side files (side_files.cc):
  // one such record through SQLite holds the single writer ~0.1 s.
  static constexpr size_t kSideFileBytes = size_t{16} << 20;

  // Opens (creating if needed) <dir>/f2obo.sqlite3 and <dir>/records;
  // creates `dir`.  Fails (FailedPrecondition, naming the path) if another
  // process holds the directory, if the file is damaged, or if a newer
  // server wrote it.  Removes the side files no row names (a write a crash
  // cut short).
  static absl::StatusOr<std::unique_ptr<SqliteSessionStore>> Open(
      const std::string& dir, Durability durability, size_t max_queued_bytes = kMaxQueuedBytes,
      size_t side_file_bytes = kSideFileBytes);
  ~SqliteSessionStore() override;

  // SessionStore.  LoadAll: a session any of whose records (spec, state,
  // cached replies) is unreadable or fails its checksum, and a group whose
  // member list does, is listed in `damaged`, not loaded.  LoadCheckpoint of
  // a checkpoint in parts reads it on a connection of the caller's own, not
  // the writer's.  Compare-and-set indexes are not compared (the store is
  // its sessions' only writer).
  absl::StatusOr<LoadedStore> LoadAll() override;
  // On a read connection of its own.
  absl::StatusOr<StoredSession> LoadSession(const std::string& id) override;
  absl::StatusOr<std::vector<SessionSummary>> ListSessions() override;
  absl::StatusOr<int64_t> StoredStepIndex(const std::string& id) override;
  using SessionStore::PutSession;
  absl::Status PutSession(SessionRecord record, Deadline deadline = kNoDeadline) override;
  absl::Status DeleteSession(const std::string& id, Deadline deadline = kNoDeadline) override;
  absl::Status PutGroup(const std::string& id, const std::vector<std::string>& members) override;
  absl::Status PutGroupWithSessions(const std::string& id,
                                    const std::vector<SessionRecord>& members,
                                    Deadline deadline = kNoDeadline) override;
  absl::Status DeleteGroup(const std::string& id, const std::vector<std::string>& members,
                           Deadline deadline = kNoDeadline) override;
  // `deadline` (kSync): withdrawn while the write still waits in the queue
  // (the writer busy with earlier writes); once the writer has taken it
  // into a transaction it is waited for.
  absl::Status CommitStep(const std::string& id, int64_t t, std::string state,
                          const v1::StepReply& reply, int keep_replies, int keep_checkpoints = 0,
                          Deadline deadline = kNoDeadline) override;
  absl::Status CommitStep(const std::string& id, int64_t t, StepState state,
                          const v1::StepReply& reply, int keep_replies, int keep_checkpoints = 0,
                          Deadline deadline = kNoDeadline) override;
  absl::Status CommitSteps(std::vector<SessionStep> steps, int keep_replies,
                           Deadline deadline = kNoDeadline) override;
  bool NeedsCompleteState(const std::string& id) const override ABSL_LOCKS_EXCLUDED(mu_);
  // Checkpoints: server/store/checkpoints.cc.
  absl::Status PutCheckpoint(const std::string& id, int64_t t, std::string state,
                             int keep) override;
  absl::Status PutCheckpoint(const std::string& id, int64_t t, CheckpointParts parts,
                             int keep) override;
  absl::StatusOr<std::string> LoadCheckpoint(const std::string& id, int64_t t) override;
  absl::StatusOr<Checkpoint> LoadCheckpointState(const std::string& id, int64_t t) override;
  absl::Status RollbackSession(const std::string& id, int64_t t, std::string state,
                               const std::vector<v1::StepReply>& replies,
                               int64_t from_t = kAnyT) override;
  // Fences: server/store/fences.cc.
  absl::Status PutFence(const std::string& key, const std::string& target) override;
  // Caps the database file at about `max_bytes` (0: no cap) through
  // PRAGMA max_page_count: a write that would grow it further fails like a
  // full disk (RESOURCE_EXHAUSTED, store_errors.h), while deletions, which
  // free pages, still succeed.  Its write-ahead log is not counted; side
  // files are: one that would take the file and them past `max_bytes` is
  // refused the same way.
  absl::Status LimitSize(int64_t max_bytes) override;
  // SQLite's SQLITE_LIMIT_LENGTH (1,000,000,000 bytes by default).
  int64_t max_record_bytes() const override;
  Durability durability() const override { return durability_; }

  // Tests: every write (not LoadCheckpoint) from now on fails with SQLite
  // result code `rc`, as if SQLite had returned it (SQLITE_OK: no more
  // failures).
  void FailWritesForTesting(int rc) { fail_writes_rc_ = rc; }
  // Tests: lowers the maximum record size (the default is 1 GB).
  void LimitRecordBytesForTesting(int bytes);
  // Tests: while held, the writer takes nothing from its queue, so the
  // writes queued meanwhile are certain to share its next batch (kNone's
  // skips of superseded states, replies and parts); released, it takes them
  // all at once.  While held, a write waited for blocks its caller: every
  // kSync write, and under kNone every write but a step within the queue
  // bound (puts, rollbacks, deletes, groups, fences, checkpoints).
  void HoldWriterForTesting(bool hold) ABSL_LOCKS_EXCLUDED(mu_);

  // Writes that failed with no caller waiting for them (kNone's steps);
  // each is also reported on stderr (rate-limited).
  int64_t unwaited_failures() const ABSL_LOCKS_EXCLUDED(mu_);
  // The most bytes ever queued at once (tests: the kNone bound holds).
  size_t max_queued_bytes_seen() const ABSL_LOCKS_EXCLUDED(mu_);
  // Step writes whose state a later step of the same batch replaced (kNone).
  int64_t superseded_states() const { return superseded_states_.load(); }
  // Step replies and aux parts not written because a later step of the same
  // batch replaced them (kNone; StepWrite::reply_superseded, aux_superseded).
  int64_t superseded_replies() const { return superseded_replies_.load(); }
  int64_t superseded_parts() const { return superseded_parts_.load(); }
  const std::string& path() const { return path_; }

 private:
  struct Write;  // store_write.h
  using SideFile = store_detail::SideFile;
  using PutSessionWrite = store_detail::PutSessionWrite;
  using StepWrite = store_detail::StepWrite;
  using CheckpointPartsRecord = store_detail::CheckpointPartsRecord;
  SqliteSessionStore(sqlite3* db, int lock_fd, std::string path, Durability durability,
                     size_t max_queued_bytes, size_t side_file_bytes);
  absl::Status CheckFile(const std::string& dir);
  absl::Status Migrate();
  static PutSessionWrite MakePutWrite(SessionRecord record);
  static StepWrite MakeStepWrite(SessionStep step, int keep_replies);
  static std::shared_ptr<Write> Queued(store_detail::WriteOp op);
  // A write's payload bytes, its parts' included (the queue bound).
  static size_t PayloadBytes(const Write& w);
  void WriterLoop() ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status Submit(std::shared_ptr<Write> w, bool wait, Deadline deadline = kNoDeadline)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Submit's second half, once `w`'s large records are in side files:
  // queues it and, if `wait`, waits for it (or withdraws it at `deadline`).
  absl::Status Enqueue(const std::shared_ptr<Write>& w, bool wait, Deadline deadline)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The writer thread's side: Apply visits the write's op, one ApplyOp per
  // kind (sqlite_session_store.cc; checkpoints and rollback in
  // checkpoints.cc), all inside the batch's transaction.
  absl::Status Apply(Write& w);
  absl::Status ApplyOp(const PutSessionWrite& w);
  absl::Status ApplyOp(const StepWrite& w);
  absl::Status ApplyOp(const store_detail::GroupStepWrite& w);
  absl::Status ApplyOp(const store_detail::PutGroupWrite& w);
  absl::Status ApplyOp(const store_detail::DeleteSessionWrite& w);
  absl::Status ApplyOp(const store_detail::DeleteGroupWrite& w);
  absl::Status ApplyOp(const store_detail::CheckpointWrite& w);
  absl::Status ApplyOp(const store_detail::RollbackWrite& w);
  absl::Status ApplyOp(const store_detail::FenceWrite& w);
  // Checkpoint (w.id, w.t) into w.loaded, or, when it is in a side file,
  // that file opened into w.fd (read by the caller, off the writer thread).
  absl::Status ApplyOp(store_detail::CheckpointRead& w);
  // A step's reply row, and the trim of older ones.
  absl::Status SaveReply(const StepWrite& w);
  // Session `id`'s reply cache becomes `replies` ((step, StepReply bytes),
  // oldest first), each row keyed as SaveReply keys it, by the step after
  // it, so that the steps' trimming keeps exactly the newest keep_replies
  // from there on (a put, a rollback).
  absl::Status ReplaceReplies(const std::string& id,
                              const std::vector<std::pair<int64_t, std::string>>& replies);
  // A step's changed state parts; the parts of `id` at or beyond `from`
  // removed.
  absl::Status SaveParts(const StepWrite& w);
  absl::Status DropParts(const std::string& id, int64_t from);
  // A put's aux parts from its part_source, each its own row (and, with its
  // first checkpoint, that checkpoint's).
  absl::Status SaveSourceParts(const PutSessionWrite& w);
  // After a write was applied (or failed), whether its sessions' next step
  // must write their state complete.
  void NoteStepOutcome(const Write& w) ABSL_LOCKS_EXCLUDED(mu_);
  void NoteStepOutcome(const StepWrite& w, const absl::Status& status) ABSL_LOCKS_EXCLUDED(mu_);
  // LoadAll, LoadSession: session `id` read on `db` into *out: NOT_FOUND
  // if it is not stored, DATA_LOSS saying which record is damaged.
  absl::Status ReadSession(sqlite3* db, const std::string& id, StoredSession* out) const;
  // Session `id`'s state from its head and its `count` parts (on `db`),
  // every part checksum-verified (DATA_LOSS naming the part), each decoded
  // into the state as it is read.
  absl::StatusOr<Checkpoint> JoinParts(sqlite3* db, const std::string& id, const std::string& head,
                                       int64_t count) const;
  // Sets StepWrite::state_superseded, reply_superseded and aux_superseded
  // across `batch`.
  void MarkSupersededStates(const std::deque<std::shared_ptr<Write>>& batch);
  absl::Status DeleteSessionRows(const std::string& id);
  // Checkpoints (checkpoints.cc).  Inserts checkpoint (id, t) and drops all
  // but the newest `keep`: in parts (parts.count >= 0: `head` the head), or
  // whole (`head` the encoding); the head in side file `head_file` when
  // named.
  absl::Status InsertCheckpoint(const std::string& id, int64_t t, const std::string& head,
                                const SideFile& head_file, const CheckpointPartsRecord& parts,
                                int keep);
  // Drops session id's checkpoints after `after` (all: INT64_MIN), with
  // their parts.
  absl::Status DropCheckpoints(const std::string& id, int64_t after);
  // Keeps the newest `keep` checkpoints of `id`, and of the parts only
  // those a kept checkpoint resolves to (`written`: the t just written).
  absl::Status TrimCheckpoints(const std::string& id, int64_t written, int keep);
  // LoadCheckpoint of a checkpoint in parts, on a connection of its own.
  absl::StatusOr<Checkpoint> ReadCheckpointParts(const std::string& id, int64_t t) const
      ABSL_LOCKS_EXCLUDED(parts_check_mu_);
  // ReadCheckpointParts' structural check of the part rows on `db` (its
  // read transaction), once per process: "" if sound, else what SQLite
  // found.
  std::string CheckCheckpointParts(sqlite3* db) const ABSL_LOCKS_EXCLUDED(parts_check_mu_);
  // LoadCheckpoint's and LoadCheckpointState's read through the writer's
  // queue: the whole encoding, checksum-verified, or, for a checkpoint in
  // parts, *in_parts set (and nothing read: ReadCheckpointParts reads it).
  absl::StatusOr<std::string> LoadWholeCheckpoint(const std::string& id, int64_t t, bool* in_parts);
  // Reads every fence into `out` (fences.cc).
  absl::Status LoadFences(LoadedStore& out);
  absl::Status Exec(const char* sql);
  // Writer thread only: `sql` (no result rows) through writer_sql_.
  absl::Status ExecCached(const char* sql);

  // Side files (side_files.cc).  Open: <dir>/records, the triggers that
  // report a released file, the removal of orphans.
  absl::Status OpenSideFiles(const std::string& dir);
  // The caller's thread, before queueing `owner`: each record of its write
  // of at least side_file_bytes_ written to a side file and dropped from
  // memory, every file made listed in owner.new_files.  Spill: one kind of
  // write's records; SpillRecord: one record (`bytes`, as record `kind` of
  // `id` at `key`) into *file; SpillCheckpointRows: a checkpoint's parts;
  // SpillState: a session's state, also the checkpoint's record (a hard
  // link) when `checkpoint_file` is given.
  absl::Status SpillLarge(Write& owner);
  absl::Status Spill(PutSessionWrite& w, Write& owner);
  absl::Status Spill(StepWrite& w, Write& owner);
  absl::Status Spill(store_detail::CheckpointWrite& w, Write& owner);
  absl::Status Spill(store_detail::RollbackWrite& w, Write& owner);
  absl::Status SpillRecord(std::string& bytes, const char* kind, const std::string& id, int64_t key,
                           Write& owner, SideFile* file);
  absl::Status SpillCheckpointRows(const std::string& id, int64_t t, CheckpointPartsRecord& parts,
                                   Write& owner);
  absl::Status SpillState(const std::string& id, int64_t t, std::string& state,
                          SideFile& state_file, SideFile* checkpoint_file, Write& owner);
  absl::StatusOr<SideFile> WriteSideFile(absl::string_view bytes, int64_t sum, Write& owner);
  absl::StatusOr<SideFile> LinkSideFile(const std::string& name, int64_t sum, Write& owner);
  absl::Status SyncSideFiles(const Write& owner);
  // After a write's outcome: done, the files its transaction released are
  // removed; failed, the files made for it.
  void SettleSideFiles(const Write& w);
  void RemoveSideFiles(const std::vector<std::string>& names);
  // Writer thread: the files released since the last call.
  std::vector<std::string> TakeReleasedFiles();
  absl::StatusOr<std::string> ReadSideFile(const std::string& name) const;
  static absl::StatusOr<std::string> ReadSideFileFd(int fd, const std::string& name);

  sqlite3* db_;
  // The writer thread's prepared statements (its writes' and transactions'
  // SQL): prepared once, not per write.
  std::unique_ptr<store_detail::StmtCache> writer_sql_;
  const int lock_fd_;  // holds the flock on <dir>/LOCK
  const std::string path_;
  const Durability durability_;
  const size_t max_queued_bytes_;
  const size_t side_file_bytes_;
  int records_fd_ = -1;      // <dir>/records
  std::string name_prefix_;  // random per Open: new side files' names
  std::atomic<uint64_t> next_file_{0};
  std::atomic<int64_t> side_bytes_{0};       // the side files' size
  std::atomic<int64_t> max_store_bytes_{0};  // LimitSize
  // Writer thread only: side files released by the statements run since
  // the last TakeReleasedFiles (the triggers' callback appends).
  std::vector<std::string> released_;
  // Guards the queue and what the writer reports; never held across a
  // transaction (the writer takes a batch, then writes it unlocked).  A
  // Write's `done` and, until then, its place in queue_ are under it too.
  mutable absl::Mutex mu_;
  // Conditions on mu_, each with its own waiters, so that a commit wakes
  // the callers it finished and not every stream (each waits on its own
  // Write's done_cv: with one condition for all, a commit woke every
  // waiting stream, those whose writes wait for the next commit too), and
  // the writer is woken by new writes only.
  absl::CondVar writer_cv_;  // the writer: queue_ not empty, or stopping_
  absl::CondVar room_cv_;    // Submit: room under max_queued_bytes_
  std::deque<std::shared_ptr<Write>> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int queued_waited_ ABSL_GUARDED_BY(mu_) = 0;  // writes in queue_ a caller waits for
  size_t max_queued_bytes_seen_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t unwaited_failures_ ABSL_GUARDED_BY(mu_) = 0;
  std::set<std::string> needs_complete_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool writer_held_ ABSL_GUARDED_BY(mu_) = false;  // HoldWriterForTesting
  std::atomic<int> fail_writes_rc_{0};             // FailWritesForTesting
  // The checkpoints' part rows are left out of the check at start
  // (CheckFile) and checked at the first read of a checkpoint in parts:
  // unset until then, then "" (sound) or the problems found.
  mutable absl::Mutex parts_check_mu_;
  mutable std::optional<std::string> parts_check_ ABSL_GUARDED_BY(parts_check_mu_);
  std::atomic<int64_t> superseded_states_{0};
  std::atomic<int64_t> superseded_replies_{0};
  std::atomic<int64_t> superseded_parts_{0};
  std::thread writer_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STORE_SQLITE_SESSION_STORE_H_
