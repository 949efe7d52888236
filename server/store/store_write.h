// One write queued for the store's writer thread (internal to server/store).
#ifndef F2OBO_SERVER_STORE_STORE_WRITE_H_
#define F2OBO_SERVER_STORE_STORE_WRITE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
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

struct SqliteSessionStore::Write {
  enum Kind {
    kPut,
    kDelete,
    kStep,
    kGroup,
    kDeleteGroup,
    kCheckpoint,
    kRollback,
    kLoadCheckpoint,
    kFence,
    kAll
  } kind;
  std::string id;
  std::string spec;   // kPut; kGroup, kDeleteGroup: member ids, one a line; kFence: target
  std::string state;  // kPut, kStep, kCheckpoint, kRollback
  int64_t t = 0;      // kPut, kStep, kCheckpoint, kRollback: the state's next step index
  std::string reply;  // kStep
  // kStep with the state in parts: `state` is the head; aux_count >= 0,
  // aux_rows the changed parts and full_state the whole encoding for a due
  // checkpoint.  aux_count < 0: `state` is the whole encoding.
  int64_t aux_count = -1;
  std::vector<std::pair<int64_t, std::string>> aux_rows;
  std::string full_state;
  bool trim_parts = true;
  bool complete_parts = false;  // aux_rows holds every non-empty part
  // kPut in parts (SessionRecord::parts): `state` is the head, aux_count
  // the parts' count, and every non-empty part of part_source->aux is
  // written where it is; those in side files are listed (index, file),
  // increasing, in part_files (and their checkpoint's hard links in
  // checkpoint_part_files).
  std::shared_ptr<const SessionState> part_source;
  std::vector<std::pair<int64_t, SideFile>> part_files;
  std::vector<std::pair<int64_t, SideFile>> checkpoint_part_files;
  std::vector<std::pair<int64_t, std::string>> replies;  // kPut, kRollback
  int keep = 0;                                          // kStep: replies kept
  // kAll: writes applied in order, all in one transaction.
  std::vector<std::shared_ptr<Write>> parts;
  // kStep, kCheckpoint: > 0 stores the state as a checkpoint and keeps the
  // newest this many; kPut: > 0 stores it as the first checkpoint.
  int keep_checkpoints = 0;
  // kStep, kCheckpoint: a checkpoint in parts (CheckpointParts) when
  // checkpoint_count >= 0: its head is `state` (kStep: the step's head; in
  // a side file: checkpoint_file), its parts checkpoint_rows (side files:
  // checkpoint_row_files, one per row or none).
  int64_t checkpoint_count = -1;
  int64_t checkpoint_base = 0;
  std::vector<std::pair<int64_t, std::string>> checkpoint_rows;
  std::vector<SideFile> checkpoint_row_files;
  // kLoadCheckpoint: what was read.  A read is queued like a write so that
  // it sees every write queued before it (kNone does not wait for steps)
  // and never a transaction in progress; its own failure is here, not in
  // `status`, so it cannot fail the writes batched with it.
  mutable absl::StatusOr<std::string> loaded;
  mutable bool loaded_in_parts = false;  // read by the caller (ReadCheckpointParts)
  // kStep: the same session's next write in this batch is a step too, whose
  // state replaces this one in the same transaction: only the reply (and a
  // due checkpoint) is written.  Set by the writer for the batched
  // transaction only, never when writes are retried one by one.
  bool state_superseded = false;
  // Records in side files (side_files.cc; the string fields then empty):
  SideFile state_file;              // the sessions row's state (kPut, kStep, kRollback)
  SideFile checkpoint_file;         // the checkpoint row's (kPut, kStep, kCheckpoint)
  std::vector<SideFile> aux_files;  // kStep: one per aux_rows entry, or none
  // Side files made for this write (the queued one: its parts' too), removed
  // if it fails; and those its transaction released, removed once it is
  // durable (the writer sets them before `done`).
  std::vector<std::string> new_files;
  std::vector<std::string> dead_files;
  // kLoadCheckpoint of a checkpoint in a side file: the file, opened by the
  // writer (a later write may release it), read by the caller.
  mutable int loaded_fd = -1;
  mutable SideFile loaded_file;
  size_t bytes = 0;     // payload size, for the queue bound
  bool waited = false;  // a caller waits for `status`
  bool done = false;
  absl::CondVar done_cv;  // its caller (Submit): `done` set (under the store's mu_)
  absl::Status status;
};

namespace store_detail {

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
}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STORE_STORE_WRITE_H_
