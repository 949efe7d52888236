// The embedded store's side of a session's state in parts: a step's
// head and changed aux parts (CommitStep with a StepState), the rows of
// table state_parts, and the rule that after a failed step write only a
// complete state is stored.  LoadAll joins the parts (sqlite_store_load.cc).
#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "core/aux_part_bytes.h"
#include "server/store/record_sum.h"
#include "server/store/sqlite_session_store.h"
#include "server/store/sqlite_stmt.h"
#include "server/store/store_write.h"

namespace f2obo::server {

using store_detail::BindRecord;
using store_detail::CheckpointPartSum;
using store_detail::GroupStepWrite;
using store_detail::PutSessionWrite;
using store_detail::RecordSum;
using store_detail::StepWrite;
using store_detail::Stmt;

StepWrite SqliteSessionStore::MakeStepWrite(SessionStep step, int keep_replies) {
  StepWrite w;
  w.id = std::move(step.id);
  w.t = step.t;
  w.from_t = step.t - 1;
  w.state = std::move(step.state.head);
  w.aux_count = step.state.aux_count;
  w.aux_rows = std::move(step.state.aux_rows);
  w.full_state = std::move(step.state.full);
  w.trim_parts = step.state.trim;
  w.complete_parts = step.state.complete;
  w.reply = step.reply.SerializeAsString();
  w.keep_replies = keep_replies;
  w.keep_checkpoints = step.keep_checkpoints;
  if (step.state.checkpoint_in_parts && step.keep_checkpoints > 0) {
    // Its head is the step's (w.state).
    w.checkpoint_parts.count = step.state.checkpoint.count;
    w.checkpoint_parts.base = step.state.checkpoint.base;
    w.checkpoint_parts.rows = std::move(step.state.checkpoint.rows);
  }
  return w;
}

absl::Status SqliteSessionStore::CommitStep(const std::string& id, int64_t t, StepState state,
                                            const v1::StepReply& reply, int keep_replies,
                                            int keep_checkpoints, Deadline deadline) {
  return Submit(
      Queued(MakeStepWrite({id, t, std::move(state), reply, keep_checkpoints}, keep_replies)),
      /*wait=*/durability_ == Durability::kSync, deadline);
}

absl::Status SqliteSessionStore::CommitSteps(std::vector<SessionStep> steps, int keep_replies,
                                             Deadline deadline) {
  // One Write is applied inside one transaction (WriterLoop), also when a
  // failure in its batch makes the writer retry the writes one by one.
  GroupStepWrite group;
  for (SessionStep& step : steps)
    group.steps.push_back(MakeStepWrite(std::move(step), keep_replies));
  return Submit(Queued(std::move(group)), /*wait=*/durability_ == Durability::kSync, deadline);
}

bool SqliteSessionStore::NeedsCompleteState(const std::string& id) const {
  absl::MutexLock lock(&mu_);
  return needs_complete_.count(id) > 0;
}

absl::Status SqliteSessionStore::SaveParts(const StepWrite& w) {
  static const SideFile kInRow;
  for (size_t i = 0; i < w.aux_rows.size(); ++i) {
    const auto& [index, bytes] = w.aux_rows[i];
    const SideFile& file = i < w.aux_files.size() ? w.aux_files[i] : kInRow;
    if (i < w.aux_superseded.size() && w.aux_superseded[i]) {
      // A later step of this transaction writes the part: this row would
      // be replaced; its side file, if any, is named by no row.
      if (!file.name.empty()) released_.push_back(file.name);
      continue;
    }
    if (bytes.empty() && file.name.empty()) {
      Stmt d(*writer_sql_, "DELETE FROM state_parts WHERE id = ? AND idx = ?");
      if (absl::Status s = d.Text(1, w.id).Int(2, index).Run("dropping a state part"); !s.ok()) {
        return s;
      }
      continue;
    }
    Stmt p(*writer_sql_,
           "INSERT OR REPLACE INTO state_parts (id, idx, part, part_sum, file) "
           "VALUES (?, ?, ?, ?, ?)");
    p.Text(1, w.id).Int(2, index);
    BindRecord(p, 3, 4, 5, bytes, file, "part", w.id, index);
    if (absl::Status s = p.Run("saving a state part"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::SaveSourceParts(const PutSessionWrite& w) {
  // Each part bound where it is (the snapshot is immutable and the write
  // holds it), into its state row and, for the first checkpoint (a chain's
  // start: no row for an empty part), its checkpoint row.
  static const std::string* const kEmpty = new std::string();
  const StateParts& aux = w.part_source->aux;
  auto file = w.part_files.begin();
  auto checkpoint_file = w.checkpoint_part_files.begin();
  std::string scratch;
  for (size_t i = 0; i < aux.size(); ++i) {
    if (aux[i].size() == 0) continue;
    const int64_t index = static_cast<int64_t>(i);
    const absl::string_view bytes = AuxPartBytes(aux[i], &scratch);
    const bool in_file = file != w.part_files.end() && file->first == index;
    Stmt p(*writer_sql_,
           "INSERT INTO state_parts (id, idx, part, part_sum, file) VALUES (?, ?, ?, ?, ?)");
    p.Text(1, w.id).Int(2, index);
    if (in_file) {
      p.Blob(3, *kEmpty).Int(4, file->second.sum).Text(5, file->second.name);
      ++file;
    } else {
      p.BlobView(3, bytes).Int(4, RecordSum("part", w.id, index, bytes)).Null(5);
    }
    if (absl::Status s = p.Run("saving a state part"); !s.ok()) return s;
    if (!w.checkpoint) continue;
    Stmt c(*writer_sql_,
           "INSERT INTO checkpoint_parts (id, t, idx, part, part_sum, file) "
           "VALUES (?, ?, ?, ?, ?, ?)");
    c.Text(1, w.id).Int(2, w.t).Int(3, index);
    if (checkpoint_file != w.checkpoint_part_files.end() && checkpoint_file->first == index) {
      c.Blob(4, *kEmpty).Int(5, checkpoint_file->second.sum).Text(6, checkpoint_file->second.name);
      ++checkpoint_file;
    } else {
      c.BlobView(4, bytes).Int(5, CheckpointPartSum(w.id, w.t, index, bytes)).Null(6);
    }
    if (absl::Status s = c.Run("saving a checkpoint part"); !s.ok()) return s;
  }
  return absl::OkStatus();
}

absl::Status SqliteSessionStore::DropParts(const std::string& id, int64_t from) {
  Stmt d(*writer_sql_, "DELETE FROM state_parts WHERE id = ? AND idx >= ?");
  return d.Text(1, id).Int(2, from).Run("dropping state parts");
}

}  // namespace f2obo::server
