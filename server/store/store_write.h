// The writes queued for the embedded store's writer thread (internal to
// server/store).  One struct per kind of write, each carrying exactly what
// that write needs, held in a std::variant (WriteOp) and applied by a
// visitor (SqliteSessionStore::Apply); what every queued write shares (its
// outcome, its caller's wait, its size and its side files) is the envelope
// SqliteSessionStore::Write.  Step indexes are next step indexes (a state
// at t has applied steps 1 .. t - 1), as in the tables.
#ifndef F2OBO_SERVER_STORE_STORE_WRITE_H_
#define F2OBO_SERVER_STORE_STORE_WRITE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "server/store/record_sum.h"
#include "server/store/sqlite_session_store.h"
#include "server/store/sqlite_stmt.h"

namespace f2obo::server {
namespace store_detail {

// (index, bytes) pairs, increasing: aux parts by index, replies by step.
using IndexedBytes = std::vector<std::pair<int64_t, std::string>>;

// A checkpoint's parts as written (CheckpointParts, checkpoints.cc): part
// i of the checkpoint is the newest row of index i from its chain's start
// up to it.
struct CheckpointPartsRecord {
  int64_t count = -1;  // the state's aux parts; < 0: the checkpoint is whole
  int64_t base = 0;    // the checkpoint it extends (0: it starts a chain)
  IndexedBytes rows;   // the parts changed since `base` (empty bytes: now empty)
  // Side files of large rows (side_files.cc): one per row, or none.
  std::vector<SideFile> row_files;
};

// PutSession: a new session (create, import, fork, transfer), replacing
// every record (state, parts, replies, checkpoints) of one of the same id.
struct PutSessionWrite {
  std::string id;
  std::string spec;  // SessionSpec bytes
  // The whole encoding, or with part_source its head; empty when in a side
  // file (state_file).
  std::string state;
  SideFile state_file;
  int64_t t = 0;             // the state's next step index
  IndexedBytes replies;      // (step, StepReply bytes), oldest first: the reply cache
  bool checkpoint = false;   // the state is also the session's first checkpoint
  SideFile checkpoint_file;  // its record in a side file: a hard link to state_file
  // In parts: the snapshot whose aux parts are written where they are, one
  // row each (immutable, shared, never copied); null: `state` is whole.
  std::shared_ptr<const SessionState> part_source;
  // The parts in side files, (index, file), increasing, and their first
  // checkpoint's hard links.
  std::vector<std::pair<int64_t, SideFile>> part_files;
  std::vector<std::pair<int64_t, SideFile>> checkpoint_part_files;

  // The state's aux parts; -1: the state is whole.
  int64_t aux_count() const {
    return part_source == nullptr ? -1 : static_cast<int64_t>(part_source->aux.size());
  }
};

// CommitStep: a session's state after one step, and its reply.
struct StepWrite {
  std::string id;
  int64_t t = 0;  // the state's next step index after the step
  // The stored index the step applies to (t - 1): a compare-and-set for a
  // shared store; this store, its sessions' only writer, does not compare.
  int64_t from_t = 0;
  // The whole encoding (aux_count < 0) or the head; empty when in a side
  // file (state_file).
  std::string state;
  SideFile state_file;
  int64_t aux_count = -1;           // the state's aux parts; < 0: `state` is whole
  IndexedBytes aux_rows;            // the changed parts; empty bytes: the part is now empty
  std::vector<SideFile> aux_files;  // side files: one per aux_rows entry, or none
  bool trim_parts = true;           // parts at or beyond aux_count are removed
  bool complete_parts = false;      // aux_rows holds every non-empty part
  std::string reply;                // StepReply bytes
  int keep_replies = 0;             // the newest this many replies are kept
  // > 0: the state is also stored as a checkpoint, and the newest this
  // many kept.  Its record: `state` when whole; in parts, full_state (the
  // whole encoding) or, with checkpoint_parts.count >= 0, the head `state`
  // and checkpoint_parts.  In a side file: checkpoint_file.
  int keep_checkpoints = 0;
  std::string full_state;
  CheckpointPartsRecord checkpoint_parts;
  SideFile checkpoint_file;
  // The same session's next write in this batch is a step too, whose state
  // replaces this one in the same transaction: only the reply (and a due
  // checkpoint) is written.  Set by the writer for the batched transaction
  // only, never when writes are retried one by one.
  bool state_superseded = false;
  // Set likewise: the same session's last step in this batch's run of
  // steps trims the reply cache to the replies after this step's (it keeps
  // keep_replies), so this reply is not written: the transaction ends with
  // the rows it would end with had it been written and trimmed.
  bool reply_superseded = false;
  // Set likewise, one per aux_rows entry (or empty: none): a later step of
  // the same run writes the same part, whose row replaces this one in the
  // same transaction; not written.
  std::vector<bool> aux_superseded;
};

// CommitSteps: a group's steps, all stored or none.
struct GroupStepWrite {
  std::vector<StepWrite> steps;
};

// PutGroup, PutGroupWithSessions: the sessions (possibly none), then the
// group of them, in one transaction.
struct PutGroupWrite {
  std::string id;
  std::string members;  // the member ids, one a line (the stored record)
  std::vector<PutSessionWrite> sessions;
};

// DeleteSession: the session with its parts, replies and checkpoints.
struct DeleteSessionWrite {
  std::string id;
};

// DeleteGroup: each member as DeleteSessionWrite, then the group.
struct DeleteGroupWrite {
  std::string id;
  std::vector<std::string> members;
};

// PutCheckpoint: a checkpoint of the session as it is, replacing one at the
// same t.
struct CheckpointWrite {
  std::string id;
  int64_t t = 0;
  // The whole encoding, or with parts.count >= 0 the head; empty when in a
  // side file (file).
  std::string state;
  SideFile file;
  CheckpointPartsRecord parts;
  int keep = 1;  // the newest this many are kept
};

// RollbackSession: the session's state becomes its checkpoint at t (whole),
// its reply cache `replies`, and its checkpoints after t are removed.
struct RollbackWrite {
  std::string id;
  int64_t t = 0;
  int64_t from_t = SessionStore::kAnyT;  // compare-and-set (not compared here)
  std::string state;                     // empty when in a side file (state_file)
  SideFile state_file;
  IndexedBytes replies;  // (step, StepReply bytes), oldest first
};

// PutFence: routing key `key` fenced towards replica `target` ("" lifts it).
struct FenceWrite {
  std::string key;
  std::string target;
};

// LoadCheckpoint's read, queued like a write so that it sees every write
// queued before it and never a transaction in progress.  Its own failure is
// in `loaded`, not the envelope's status, so it cannot fail the writes
// batched with it.  Filled by the writer, read by the caller.
struct CheckpointRead {
  std::string id;
  int64_t t = 0;
  absl::StatusOr<std::string> loaded;  // the whole encoding, checksum-verified
  bool in_parts = false;               // in parts: read by the caller (nothing here)
  // In a side file: the file, opened by the writer (a later write may
  // release it) and read by the caller.
  int fd = -1;
  SideFile file;
};

// (WriteOp, the variant of them all, is declared with the store's class.)

// The id a write is known by (fault points, messages, and the writer's
// test of whether a step's state is superseded): its session's, its
// group's ("" for a group's steps) or its fence's key.
std::string_view KeyOf(const WriteOp& op);

// Binds a record to its row's columns `blob`, `sum` and `file`: its bytes
// and their checksum (as record `kind` of `id` at `key`), or, when it is in
// side file `f`, an empty blob, the file's checksum and its name.
inline void BindRecord(Stmt& s, int blob, int sum, int file, const std::string& bytes,
                       const SideFile& f, const char* kind, const std::string& id, int64_t key) {
  if (f.name.empty()) {
    s.Blob(blob, bytes).Int(sum, RecordSum(kind, id, key, bytes)).Null(file);
  } else {
    static const std::string* const kEmpty = new std::string();  // bound, not copied
    s.Blob(blob, *kEmpty).Int(sum, f.sum).Text(file, f.name);
  }
}

// The checksum of a checkpoint's part (table checkpoint_parts): bound to
// its session, its index and the checkpoint that wrote it.
inline int64_t CheckpointPartSum(const std::string& id, int64_t t, int64_t index,
                                 absl::string_view bytes) {
  return RecordSum("checkpoint part", absl::StrCat(id, "/", index), t, bytes);
}

}  // namespace store_detail

// A write queued for the writer thread: one typed write and the
// bookkeeping every queued write shares.
struct SqliteSessionStore::Write {
  explicit Write(store_detail::WriteOp o) : op(std::move(o)) {}
  store_detail::WriteOp op;
  size_t bytes = 0;     // payload size, for the queue bound
  bool waited = false;  // a caller waits for `status`
  bool done = false;
  absl::CondVar done_cv;  // its caller (Submit): `done` set (under the store's mu_)
  absl::Status status;
  // Side files made for this write, removed if it fails; and those its
  // transaction released, removed once it is durable (the writer sets them
  // before `done`).
  std::vector<std::string> new_files;
  std::vector<std::string> dead_files;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STORE_STORE_WRITE_H_
