// What a store shared by several servers adds for groups: a server learns
// of a group another server created after it started by reading that one
// group (GroupManager, server/groups.h), not every group again.
//
// Thread-safety: implementations are thread-safe.
#ifndef F2OBO_SERVER_STORE_GROUP_READER_H_
#define F2OBO_SERVER_STORE_GROUP_READER_H_

#include <string>

#include "absl/status/statusor.h"
#include "server/store/session_store.h"

namespace f2obo::server {

class StoredGroupReader {
 public:
  virtual ~StoredGroupReader() = default;
  // Group `id` as stored: NOT_FOUND if it is not, DATA_LOSS if its record
  // is damaged.
  virtual absl::StatusOr<StoredGroup> LoadGroup(const std::string& id) = 0;
  // The stored group whose members include session `session_id` ("" if
  // none).
  virtual absl::StatusOr<std::string> GroupOf(const std::string& session_id) = 0;
};

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_STORE_GROUP_READER_H_
