// The session store in a PostgreSQL database (--store=postgresql://...),
// which several servers share: the store contract of session_store.h, each
// call one transaction, with the compare-and-set it describes.
//
// Connections: a small pool (kConnections, pg_pool.h) of libpq connections to the
// URI, each lent to one call at a time; PostgreSQL's group commit shares
// one WAL flush among concurrent calls' commits.  A connection found broken is replaced on the
// next call (a multi-host URI with target_session_attrs=read-write finds
// the new primary after a failover); while no connection can be made,
// calls fail UNAVAILABLE (retry), and nothing is acknowledged that is not
// committed.
//
// Commit unknown: when the connection breaks during COMMIT, the outcome is
// not guessed: a new connection reads the row back (the session's step
// index, a step's reply) and the call succeeds only if the write is
// stored; if that cannot be read either, UNAVAILABLE (the write may or may
// not be stored; the caller's retry meets the compare-and-set).
//
// Durability: kSync commits with synchronous_commit as configured in the
// database (on: flushed, and on a synchronous standby when one is named);
// kNone's steps commit with synchronous_commit = off (a crash of the
// database may lose the latest steps, never a part of one).
//
// Schema (pg_schema.h): tables f2obo_* with a version row (f2obo_schema); Open creates
// them in an empty database, migrates an older version in place (one
// transaction, under the lock that serializes servers opening it), and
// refuses a database whose version is newer than kSchemaVersion before
// writing anything.  Every replica sharing a database must then run a
// server of the new version: an older one still running writes without
// the write version below.
//
// Write versions: every write of a session's row (a step, a rollback, a
// checkpoint, its creation) stamps it with a new value of one sequence
// (f2obo_sessions.gen), never reused, not even by a new session of the same
// id.  The store remembers the stamp of each session as this server last
// read (LoadSession) or wrote it, i.e. of the copy it holds, and every
// write compares it as well as the step index: a copy at the right t but
// with other contents (another server rolled the session back and stepped
// it again to the same t) is refused ABORTED like one at another t, and
// reloaded.  A session this server never read or wrote is compared by its
// step index alone.
//
// Creation is insert-only: PutSession and PutGroupWithSessions of an id
// already stored (another server created or imported it, perhaps at the
// same moment) are ALREADY_EXISTS, nothing overwritten.
//
// Round trips: a step of one session (its parts up to kArrayBytes, no
// checkpoint due) is one statement (a plain SQL statement with one
// data-modifying CTE per table, prepared once per connection), committed
// on its own (no BEGIN/COMMIT), and steps of several sessions queued at one
// moment are sent together on one connection in pipeline mode as one
// transaction (pg_batcher.h: one round trip, one commit and one wake-up of
// the database's backend for all of them; each keeps its own
// compare-and-set, and a failed batch is run again step by step); larger
// steps, group steps and the other writes are transactions of several
// statements.
//
// What it gives up against the embedded store: a checkpoint in parts is
// stored as every part of it (copied inside the database from its base
// checkpoint, so only the changed parts cross the network); no side files
// (PostgreSQL keeps large values out of line itself, TOAST); LimitSize
// counts the database's size as PostgreSQL reports it, read at most once a
// second.
//
// Thread-safety: thread-safe.
#ifndef F2OBO_SERVER_STORE_POSTGRES_POSTGRES_SESSION_STORE_H_
#define F2OBO_SERVER_STORE_POSTGRES_POSTGRES_SESSION_STORE_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "server/store/group_reader.h"
#include "server/store/postgres/pg_pool.h"
#include "server/store/postgres/pg_schema.h"
#include "server/store/postgres/pg_size_cap.h"
#include "server/store/postgres/pg_transactions.h"
#include "server/store/session_store.h"

namespace f2obo::server {
class PostgresSessionStore : public SessionStore, public StoredGroupReader {
 public:
  // The schema version this server writes (pg_schema.h).
  static constexpr int kSchemaVersion = pg::Schema::kVersion;
  // Enough for 8 streams' steps in flight at once (PostgreSQL commits
  // concurrent transactions with one WAL flush).
  static constexpr int kConnections = 8;
  // A step's changed parts are sent as arrays in its one statement up to
  // this many bytes; beyond, a statement per part (no array near
  // PostgreSQL's 1 GB value limit).
  static constexpr size_t kArrayBytes = size_t{1} << 20;

  // Connects to `uri` and creates the schema if the database has none.
  // UNAVAILABLE if the database cannot be reached (the message is libpq's:
  // host, port, user, never the password); FAILED_PRECONDITION if it holds
  // a newer schema (nothing written).
  static absl::StatusOr<std::unique_ptr<PostgresSessionStore>> Open(const std::string& uri,
                                                                    Durability durability);
  ~PostgresSessionStore() override;

  absl::StatusOr<LoadedStore> LoadAll() override;
  absl::StatusOr<LoadedStore> LoadGroupsAndFences() override;
  absl::StatusOr<StoredSession> LoadSession(const std::string& id) override;
  absl::StatusOr<std::vector<SessionSummary>> ListSessions() override;
  absl::StatusOr<int64_t> StoredStepIndex(const std::string& id) override;
  absl::StatusOr<bool> CopyIsCurrent(const std::string& id, int64_t t) override;
  absl::StatusOr<StoredGroup> LoadGroup(const std::string& id) override;
  absl::StatusOr<std::string> GroupOf(const std::string& session_id) override;
  bool shared() const override { return true; }
  absl::Status PutSession(SessionRecord record, Deadline deadline = kNoDeadline) override;
  using SessionStore::PutSession;
  absl::Status DeleteSession(const std::string& id, Deadline deadline = kNoDeadline) override;
  absl::Status PutGroup(const std::string& id, const std::vector<std::string>& members) override;
  absl::Status PutGroupWithSessions(const std::string& id,
                                    const std::vector<SessionRecord>& members,
                                    Deadline deadline = kNoDeadline) override;
  absl::Status DeleteGroup(const std::string& id, const std::vector<std::string>& members,
                           Deadline deadline = kNoDeadline) override;
  absl::Status CommitStep(const std::string& id, int64_t t, std::string state,
                          const v1::StepReply& reply, int keep_replies, int keep_checkpoints = 0,
                          Deadline deadline = kNoDeadline) override;
  absl::Status CommitStep(const std::string& id, int64_t t, StepState state,
                          const v1::StepReply& reply, int keep_replies, int keep_checkpoints = 0,
                          Deadline deadline = kNoDeadline) override;
  absl::Status CommitSteps(std::vector<SessionStep> steps, int keep_replies,
                           Deadline deadline = kNoDeadline) override;
  bool NeedsCompleteState(const std::string& id) const override;
  absl::Status PutCheckpoint(const std::string& id, int64_t t, std::string state,
                             int keep) override;
  absl::Status PutCheckpoint(const std::string& id, int64_t t, CheckpointParts parts,
                             int keep) override;
  absl::StatusOr<std::string> LoadCheckpoint(const std::string& id, int64_t t) override;
  absl::StatusOr<Checkpoint> LoadCheckpointState(const std::string& id, int64_t t) override;
  absl::Status RollbackSession(const std::string& id, int64_t t, std::string state,
                               const std::vector<v1::StepReply>& replies,
                               int64_t from_t = kAnyT) override;
  absl::Status PutFence(const std::string& key, const std::string& target) override;
  absl::Status LimitSize(int64_t max_bytes) override;
  int64_t max_record_bytes() const override { return 1000000000; }
  Durability durability() const override { return durability_; }

  // Connections made after the first ones (a broken one replaced).
  int64_t reconnects() const override { return pool_.reconnects(); }
  // Commits whose outcome was unknown (the connection broke during
  // COMMIT) and was read back.
  int64_t commits_read_back() const override { return transactions_.read_backs(); }
  // Batches of one-statement steps committed together (pg_batcher.h): how
  // many were sent, the steps in them, the steps waiting for one now.
  int64_t step_batches() const { return transactions_.batcher().batches(); }
  int64_t batched_steps() const { return transactions_.batcher().statements(); }
  int64_t steps_queued() const { return transactions_.batcher().queued(); }

 private:
  using Body = pg::Transactions::Body;
  using ReadBack = pg::Transactions::ReadBack;

  PostgresSessionStore(std::string uri, Durability durability);
  // A transaction on a pooled connection (pg::Transactions::Run).
  absl::Status Transact(absl::string_view what, Deadline deadline, bool sync, const Body& body,
                        const ReadBack& read_back, bool grows = true);
  // Whether a step is written as one statement (CommitStep's fast path).
  static bool OneStatement(const StepState* parts, int keep_checkpoints);
  // kStepSql's statement for a step (its one statement, its parts in
  // arrays when OneStatement), and what its rows say: the new write version
  // into *written, or why the compare-and-set missed (Missed).
  static pg::Statement StepStatement(const std::string& id, int64_t t, std::optional<int64_t> gen,
                                     const StepState* parts, const std::string* whole,
                                     const std::string& reply, int keep_replies, bool sync);
  static absl::Status StepMoved(pg::Conn& c, const pg::Result& r, const std::string& id, int64_t t,
                                std::optional<int64_t> gen, int64_t* written);
  // A step as one statement, committed in a batch with other sessions'
  // steps (pg::Transactions::RunBatched); `read_back` as Transact's.
  absl::Status BatchedStep(const std::string& what, Deadline deadline, const std::string& id,
                           int64_t t, std::optional<int64_t> gen, const pg::Statement& statement,
                           const ReadBack& read_back, int64_t* written);
  // A step's statements (CommitStep, CommitSteps), compare-and-set from
  // t - 1 and from write version `gen` (none: not compared); the new write
  // version into *written.
  absl::Status StepRows(pg::Conn& c, const std::string& id, int64_t t, std::optional<int64_t> gen,
                        const StepState* parts, const std::string* whole, const std::string& reply,
                        int keep_replies, int keep_checkpoints, bool sync, int64_t* written);
  // Insert-only: ALREADY_EXISTS if session r.id is stored.  Its write
  // version into *written.
  absl::Status InsertSession(pg::Conn& c, const SessionRecord& r, int64_t* written);
  absl::Status DeleteSessionRows(pg::Conn& c, const std::string& id);
  absl::Status ReplaceReplies(pg::Conn& c, const std::string& id,
                              const std::vector<v1::StepReply>& replies);
  absl::Status InsertCheckpointParts(pg::Conn& c, const std::string& id, int64_t t,
                                     const std::string& head, const CheckpointParts& parts);
  // A whole checkpoint (id, t) stored, replacing one at t.
  absl::Status PutCheckpointRow(pg::Conn& c, const std::string& id, int64_t t,
                                const std::string& state);
  absl::Status TrimCheckpoints(pg::Conn& c, const std::string& id, int keep);
  // Why a step's compare-and-set from (`from`, `gen`) matched no row: the
  // session is not stored (NOT_FOUND) or is at another step index or write
  // version (ABORTED: another server wrote it; the caller reloads it and
  // answers from what is stored).
  static absl::Status Missed(pg::Conn& c, const std::string& id, int64_t from,
                             std::optional<int64_t> gen);
  // PutCheckpoint's compare-and-set: session `id` stored at next step
  // index `t` and write version `gen` gets a new write version (*written;
  // its row locked), else NOT_FOUND or ABORTED.
  static absl::Status SessionAt(pg::Conn& c, const std::string& id, int64_t t,
                                std::optional<int64_t> gen, int64_t* written);
  // Read back of a checkpoint write: whether checkpoint (id, t) is stored;
  // *written = kStaleGen.
  static absl::StatusOr<bool> CheckpointStored(pg::Conn& c, const std::string& id, int64_t t,
                                               int64_t* written);
  // Read back: whether session `id` is stored at next step index `t` with
  // reply `reply` (a step) / at all; *gen (if given): its write version
  // when stored exactly so, else kStaleGen.
  static absl::StatusOr<bool> StoredAt(pg::Conn& c, const std::string& id, int64_t t,
                                       const std::string* reply, int64_t* gen = nullptr);
  // LoadAll, or without the sessions (LoadGroupsAndFences).
  absl::StatusOr<LoadedStore> Load(bool with_sessions);
  // Session `id` read on `c` (in the caller's transaction) into *out, its
  // write version into *gen:
  // NOT_FOUND if it is not stored, DATA_LOSS saying which record is
  // damaged, another error if the database failed.
  absl::Status ReadSession(pg::Conn& c, const std::string& id, StoredSession* out, int64_t* gen);
  // Checkpoint (id, t), decoded; a whole one with `whole` set: its stored
  // bytes into *whole instead (verified, not decoded).
  absl::StatusOr<Checkpoint> ReadCheckpoint(const std::string& id, int64_t t, std::string* whole);
  // After a step write (or a rollback) of `ids`: a failure in the
  // database marks them (NeedsCompleteState), a success clears them.
  void NoteStepOutcome(const std::vector<std::string>& ids, const absl::Status& s);
  // The write version of session `id`'s copy this server holds, as it last
  // read or wrote it (none: never, or deleted since).
  std::optional<int64_t> KnownGen(const std::string& id) const;
  // Records it (kStaleGen: the copy is known not to be the stored one,
  // so its next write is refused and it is reloaded), or forgets it.
  void NoteGen(const std::string& id, int64_t gen);
  void ForgetGen(const std::string& id);
  static constexpr int64_t kStaleGen = -2;  // written versions are >= 0

  const Durability durability_;
  pg::Pool pool_;
  mutable absl::Mutex mu_;
  std::set<std::string> needs_complete_ ABSL_GUARDED_BY(mu_);
  std::unordered_map<std::string, int64_t> gens_ ABSL_GUARDED_BY(mu_);
  pg::SizeCap size_cap_;
  pg::Transactions transactions_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STORE_POSTGRES_POSTGRES_SESSION_STORE_H_
