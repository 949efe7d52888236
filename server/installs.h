// How a session comes to exist on this server, and leaves it whole: create,
// import (unary or streamed in chunks), fork, several created or imported
// as a unit (CreateGroup; ImportGroup, a group moving between replicas),
// the sessions a store holds at start (Recover), and export (unary or in
// chunks), import's counterpart.  Every install claims its id in the
// session table, builds the session outside any lock, persists it, and
// only then publishes it: no RPC sees a session that is not durable yet,
// has no metrics channel, or is about to be refused.
//
// Thread-safety: thread-safe.
#ifndef F2OBO_SERVER_INSTALLS_H_
#define F2OBO_SERVER_INSTALLS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/session.h"
#include "f2obo/v1/f2obo.pb.h"
#include "f2obo/v1/transfer.pb.h"
#include "server/checkpoints.h"
#include "server/limits.h"
#include "server/metrics_pipeline.h"
#include "server/session_entry.h"
#include "server/session_table.h"
#include "server/store/session_store.h"

namespace f2obo::server {

class Installs {
 public:
  // `store` may be null (in-memory sessions).  All must outlive this.
  Installs(const Limits* limits, MetricsPipeline* pipeline, SessionStore* store,
           SessionTable* table, const Checkpoints* checkpoints)
      : limits_(*limits),
        pipeline_(pipeline),
        store_(store),
        table_(table),
        checkpoints_(checkpoints) {}

  // Loads every stored session (and the stored fences), each resuming at
  // its last acknowledged step.  Returns one message per session that could
  // not be loaded; the stored groups go to `groups` (may be null).
  // With a store shared by several servers (SessionStore::shared) only
  // the groups and fences are read: each session is loaded when first asked
  // for (LoadStored, the session table's loader).
  absl::StatusOr<std::vector<std::string>> Recover(std::vector<StoredGroup>* groups);
  // Session `id` as the store holds it, built as recovery builds each
  // stored session and ready to publish (its memory reserved whatever the
  // limits; the table evicts idle ones to stay in its budget): NOT_FOUND if
  // it is not stored, the store's error if it cannot be read.
  absl::StatusOr<std::shared_ptr<SessionEntry>> LoadStored(const std::string& id);

  // Create, Import, Fork and ImportChunks honour the call's `deadline`:
  // checked before the store write and passed to it, so that a write
  // withdrawn or never begun answers DEADLINE_EXCEEDED and changed
  // nothing.  A deadline that passes once the store's writer has begun the
  // write does not stop it (the client sees DEADLINE_EXCEEDED from its own
  // side; a retry tells: ALREADY_EXISTS).
  absl::StatusOr<v1::SessionInfo> Create(const v1::CreateSessionRequest& request,
                                         Deadline deadline);
  absl::StatusOr<v1::SessionInfo> Import(const v1::ImportSessionRequest& request,
                                         Deadline deadline);
  // A new session from a kept checkpoint (or the current state) of
  // another (the proto's ForkSession); on error nothing changed.
  absl::StatusOr<v1::SessionInfo> Fork(const v1::ForkSessionRequest& request, Deadline deadline);
  // Imports several sessions as a unit (ImportGroup): each is checked and
  // built like Import, all must be of one problem class and family
  // (INVALID_ARGUMENT otherwise), none is findable until `persist` has
  // written all their records (with whatever the caller adds) in one store
  // transaction, and if anything fails none exists.  `field` names the
  // requests in errors ("members" -> "members[1]: ...").
  using PersistAll = std::function<absl::Status(const std::vector<SessionRecord>&)>;
  absl::StatusOr<std::vector<v1::SessionInfo>> ImportAll(
      const std::vector<v1::ImportSessionRequest>& requests, const std::string& field,
      const PersistAll& persist);
  // Creates several sessions as a unit (CreateGroup), as ImportAll: each
  // is checked and built like Create (its session_id must be given), none
  // is findable until `persist` has written them all, and if anything fails
  // none exists.  `name(i)` names request i in errors.
  absl::StatusOr<std::vector<v1::SessionInfo>> CreateAll(
      const std::vector<v1::CreateSessionRequest>& requests,
      const std::function<std::string(size_t)>& name, const PersistAll& persist);

  // `max_bytes`: the largest export a message may carry (the server's
  // --max_message_bytes); a larger one is refused with RESOURCE_EXHAUSTED
  // naming ExportSessionStream, before it is encoded.
  absl::StatusOr<v1::SessionExport> Export(const std::string& id, int64_t max_bytes) const;
  // Sessions larger than a message (installs_transfer.cc; the proto's
  // ExportSessionStream and ImportSessionStream).  ExportChunks hands
  // session `id`'s export to `write` chunk by chunk, each of at most about
  // `chunk_bytes`, from a snapshot of its state taken when it starts; an
  // error from `write` (the client went away, the server is shutting
  // down) stops it and is returned.
  // ImportChunks builds a session from the messages `read` gives (true: a
  // message; false: the stream's end; an error: the stream broke, returned
  // as is) with Import's checks, and installs it only after the end chunk
  // passed them all; on any error nothing exists and nothing is stored.
  using ChunkSink = std::function<absl::Status(const v1::SessionChunk&)>;
  using ChunkSource = std::function<absl::StatusOr<bool>(v1::ImportSessionStreamRequest*)>;
  absl::Status ExportChunks(const std::string& id, int64_t chunk_bytes,
                            const ChunkSink& write) const;
  absl::StatusOr<v1::SessionInfo> ImportChunks(const ChunkSource& read, Deadline deadline);

 private:
  using Reservation = SessionTable::Reservation;

  // Installs a session the store holds (as recovery loads each), whatever
  // the limits (it exists already; it counts against the budget for new
  // ones).
  absl::Status InstallStored(StoredSession& stored);
  // InstallStored's entry, built and ready (Ready), not claimed nor
  // published.
  absl::StatusOr<std::shared_ptr<SessionEntry>> BuildStored(StoredSession& stored);
  // Makes `entry` (session set, id possibly empty) reachable: claims an
  // id (generated if asked), persists it (unless `persisted`), opens its
  // metrics, and only then publishes it in the table.
  absl::StatusOr<v1::SessionInfo> Install(std::shared_ptr<SessionEntry> entry, bool generate_id,
                                          bool persisted, Deadline deadline = Deadline::max());
  // What the store writes of a new session: its head and its state's
  // parts (SessionRecord::parts), with its first checkpoint if asked.
  SessionRecord RecordOf(const SessionEntry& e, bool checkpoint) const;
  // Opens a claimed entry's metrics and publishes it.  `stored`: the store
  // holds it as RecordOf wrote it (in parts, with its first checkpoint if
  // `checkpoint`).
  v1::SessionInfo PublishClaimed(std::shared_ptr<SessionEntry> entry,
                                 std::unique_ptr<MetricsEvaluator> evaluator, bool checkpoint,
                                 bool stored);
  // PublishClaimed without the publishing: the entry's metrics opened and
  // its view published (readers of the entry see it), its SessionInfo.
  v1::SessionInfo Ready(const std::shared_ptr<SessionEntry>& entry,
                        std::unique_ptr<MetricsEvaluator> evaluator, bool checkpoint, bool stored);
  // Create's checks and the entry it builds (not installed, id as given,
  // possibly empty); `reserved` receives its memory reservation.
  absl::StatusOr<std::shared_ptr<SessionEntry>> PrepareCreate(
      const v1::CreateSessionRequest& request, std::unique_ptr<Reservation>& reserved);
  // Import's checks and the entry it builds (not installed); `reserved`
  // receives its memory reservation.
  absl::StatusOr<std::shared_ptr<SessionEntry>> PrepareImport(
      const v1::ImportSessionRequest& request, std::unique_ptr<Reservation>& reserved);
  // PrepareImport's second half, shared with ImportChunks: the session
  // restored from `state` and checked with the spec and reply cache of
  // `ex` (its state field is not read), as entry `id` holding
  // `reserved_bytes`.  A spec naming no algorithm gets the state's, not
  // the class default (`config` is rebuilt with it).
  absl::StatusOr<std::shared_ptr<SessionEntry>> BuildImported(const std::string& id,
                                                              const v1::SessionExport& ex,
                                                              const SessionConfig& config,
                                                              Checkpoint state,
                                                              int64_t reserved_bytes);
  // CreateAll's and ImportAll's common part: claims every entry's id,
  // calls `persist` with their records, then publishes them all; on any
  // failure none is claimed or published (errors named by `name(i)`).
  absl::StatusOr<std::vector<v1::SessionInfo>> InstallAll(
      std::vector<std::shared_ptr<SessionEntry>> entries,
      std::vector<std::unique_ptr<Reservation>> reserved,
      const std::function<std::string(size_t)>& name, const PersistAll& persist);

  const Limits& limits_;
  MetricsPipeline* const pipeline_;
  SessionStore* const store_;
  SessionTable* const table_;
  const Checkpoints* const checkpoints_;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_INSTALLS_H_
