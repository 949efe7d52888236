// The store's side of a session's state in parts (issue 23): a step's
// head and changed aux parts (CommitStep with a StepState), the rows of
// table state_parts, and the rule that after a failed step write only a
// complete state is stored.  LoadAll joins the parts (session_store.cc).
#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "server/store/record_sum.h"
#include "server/store/session_store.h"
#include "server/store/sqlite_stmt.h"
#include "server/store/store_write.h"

namespace f2obo::server {

using store_detail::RecordSum;
using store_detail::Stmt;

absl::Status SessionStore::CommitStep(const std::string& id, int64_t t, StepState state,
                                      const v1::StepReply& reply, int keep_replies,
                                      int keep_checkpoints,
                                      std::chrono::system_clock::time_point deadline) {
  auto w = std::make_shared<Write>();
  w->kind = Write::kStep;
  w->id = id;
  w->t = t;
  w->state = std::move(state.head);
  w->aux_count = state.aux_count;
  w->aux_rows = std::move(state.aux_rows);
  w->full_state = std::move(state.full);
  w->trim_parts = state.trim;
  w->complete_parts = state.complete;
  w->reply = reply.SerializeAsString();
  w->keep = keep_replies;
  w->keep_checkpoints = keep_checkpoints;
  return Submit(std::move(w), /*wait=*/durability_ == Durability::kSync, deadline);
}

bool SessionStore::NeedsCompleteState(const std::string& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return needs_complete_.count(id) > 0;
}

absl::Status SessionStore::SaveParts(const Write& w) {
  for (const auto& [index, bytes] : w.aux_rows) {
    if (bytes.empty()) {
      Stmt d(db_, "DELETE FROM state_parts WHERE id = ? AND idx = ?");
      if (absl::Status s = d.Text(1, w.id).Int(2, index).Run("dropping a state part"); !s.ok()) {
        return s;
      }
      continue;
    }
    Stmt p(db_, "INSERT OR REPLACE INTO state_parts (id, idx, part, part_sum) VALUES (?, ?, ?, ?)");
    if (absl::Status s = p.Text(1, w.id)
                             .Int(2, index)
                             .Blob(3, bytes)
                             .Int(4, RecordSum("part", w.id, index, bytes))
                             .Run("saving a state part");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status SessionStore::DropParts(const std::string& id, int64_t from) {
  Stmt d(db_, "DELETE FROM state_parts WHERE id = ? AND idx >= ?");
  return d.Text(1, id).Int(2, from).Run("dropping state parts");
}

}  // namespace f2obo::server
