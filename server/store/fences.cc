// Fences of routing keys being moved to another replica (scale-out; the
// proto's SetFence).  A fence is one row (key, target, checksum), written
// in its own transaction and durable before PutFence returns: once a move
// has been told the fence holds, no crash can bring back a copy that
// accepts steps.
#include <sqlite3.h>

#include "absl/strings/str_cat.h"
#include "server/store/record_sum.h"
#include "server/store/sqlite_session_store.h"
#include "server/store/sqlite_stmt.h"
#include "server/store/store_write.h"

namespace f2obo::server {

using store_detail::RecordSum;
using store_detail::Stmt;

absl::Status SqliteSessionStore::PutFence(const std::string& key, const std::string& target) {
  return Submit(Queued(store_detail::FenceWrite{key, target}), /*wait=*/true);
}

absl::Status SqliteSessionStore::LoadFences(LoadedStore& out) {
  Stmt fences(db_, "SELECT key, target, target_sum FROM fences ORDER BY key");
  if (!fences.ok()) return fences.Error("listing fences");
  int rc;
  while ((rc = fences.Step()) == SQLITE_ROW) {
    StoredFence f{fences.Column(0), fences.Column(1)};
    // A damaged record still fences its key (target unknown): lifting it
    // on a guess could leave two copies accepting steps.
    if (fences.IsNull(2) || fences.ColumnInt(2) != RecordSum("fence", f.key, 0, f.target)) {
      // The checksum covers key and target: if the key is what changed,
      // the real key's fence is gone and only a rerun of the move restores
      // it, which the message must say rather than pass for a lost target.
      out.damaged.push_back(absl::StrCat(
          "fence of key '", f.key,
          "': checksum mismatch (corrupt record: the key or the target); kept as a fence with "
          "an unknown target.  If the key itself is damaged, the fence of the real key is "
          "lost: rerun f2obo-cli rebalance before clients step this replica's sessions"));
      f.target.clear();
    }
    out.fences.push_back(std::move(f));
  }
  if (rc != SQLITE_DONE) return fences.Error("listing fences");
  return absl::OkStatus();
}

}  // namespace f2obo::server
