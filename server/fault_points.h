// Fault injection for tests, one mechanism (issue 24 item 4): named points
// on the write paths where a test may block, fail or kill the server.
//
// The production server registers no handler, so a point costs one atomic
// load; the code that acts on a point (reading F2OBO_TEST_CRASH_AT and
// F2OBO_TEST_FAIL_AT, killing the process) is compiled only into test
// builds: in-process tests set a handler (SetFaultHandlerForTesting), and
// the fault-injection server build f2obo-server-faults (tests/server/
// faults_from_env.cc) installs one from its environment.  The points:
//   step_after_find          id: session   Step found it, before its lock
//   before_publish           id: session   an install is durable, not findable
//   create_group_before_commit, import_group_before_commit
//   create_group_after_commit,  import_group_after_commit   id: group
//   group_step_prepared      id: member    its round of a group step is ready
//   group_step_before_commit id: group     every member ready, nothing stored
//   group_step_after_commit  id: group     stored, not yet applied in memory
//                                          nor acknowledged
//   store_write              id: session   the store's writer took its write
//                                          (or group), before the transaction
//   side_files_released      id: session   a write that released side files
//                                          (or group) is durable, the files not
//                                          yet removed (server/store/side_files.cc)
//   checkpoint_delta_written id: session  a checkpoint in parts that extends
//                                          the previous one is written, inside
//                                          its transaction (store/checkpoints.cc)
//   put_parts_written        id: session  a new session's record in parts
//                                          (create, import, fork) is written,
//                                          inside its transaction, not committed
//                                          (store/sqlite_session_store.cc)
//   delete_group_written     id: group    a group's (or a dropped routing
//                                          key's) sessions and group record
//                                          are deleted, inside the transaction,
//                                          not committed
//                                          (store/sqlite_session_store.cc)
//   drop_key_after_commit    id: key      DropFencedSessions' deletion is
//                                          durable, not yet applied in memory
//                                          (server/groups.cc)
//   export_chunk_sent        id: session  ExportSessionStream wrote a chunk
//                                          (server/service.cc)
//
// Thread-safety: thread-safe; a handler is called from the threads that
// reach its points, without any of the server's locks held.
#ifndef F2OBO_SERVER_FAULT_POINTS_H_
#define F2OBO_SERVER_FAULT_POINTS_H_

#include <functional>
#include <string_view>

#include "absl/status/status.h"

namespace f2obo::server {

// What a test does at a point: OK continues; an error is returned by the
// operation as its own failure (the points say what it then leaves
// unchanged); a handler may also block or end the process.
using FaultHandler = std::function<absl::Status(std::string_view point, std::string_view id)>;

// OK unless a test build's handler says otherwise.
absl::Status FaultPoint(std::string_view point, std::string_view id);

// Tests only: replaces the handler (an empty one: none).  A handler being
// called meanwhile finishes with the old one.
void SetFaultHandlerForTesting(FaultHandler handler);

}  // namespace f2obo::server

#endif  // F2OBO_SERVER_FAULT_POINTS_H_
