// Rebalancing sessions over replicas behind a routing proxy (f2obo-cli
// rebalance): every routing key held by a replica the proxy no longer
// routes it to moves to the replica it does, with the fence protocol of
// the proto's SetFence:
//   fence on the source (durable) -> export -> import on the target
//   (ImportGroup for a group: all members as a unit) -> drop the source's
//   copies (the fence stays as a tombstone until --lift_tombstones).
//
// Why a crash anywhere leaves exactly one copy that accepts steps, and why
// rerunning completes or undoes an interrupted move:
//  * Before the fence is durable, only the source's copy exists.
//  * From the fence on, the source refuses every change to the key, so its
//    copy is frozen; an export taken after SetFence returned is final.
//  * The target's copy comes to exist only through the import, which is
//    one store transaction: ImportSessionStream per session (streamed in
//    chunks, whatever its size; nothing exists on the target until its
//    last chunk is in and checked; ImportSession with a replica older than
//    the streamed calls), and ImportGroup
//    for a group's members and its record together (SessionManager::
//    ImportAll), so a crash mid-import leaves none of the group on the
//    target, never members without their group (lone sessions that would
//    accept direct steps, then be replaced when the rerun re-imports).
//    Until that transaction commits, the members are not findable there.
//  * So the states a crash can leave are: fence only (the frozen source is
//    the only copy: a rerun imports it, or lifts the fence if the proxy
//    now maps the key back to the source: an undo); fence + target copy
//    (the target's is the only one accepting steps: a rerun drops the
//    source's, or, if the proxy maps the key back to the source, drops the
//    source's and moves the target's back, lifting the source's tombstone
//    just before that import); tombstone only (done).  In none do two
//    copies accept steps, and the frozen copy equals the imported one, so
//    no acknowledged step is lost.  Telling the last two apart needs the
//    target's answer: a rerun stops with an error, and lifts nothing, while
//    a replica does not answer (every replica is listed at the start).
// Where a key goes is asked of the proxy (GetServerInfo with routing_key),
// never computed here, so the answer is the proxy's own hash.
#ifndef F2OBO_CLIENT_REBALANCE_H_
#define F2OBO_CLIENT_REBALANCE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "client/client.h"

namespace f2obo::client {

struct RebalanceOptions {
  // The proxy whose routing the replicas should match: the one clients
  // use, or one with the new ring started beside it before the switch.
  std::string proxy;
  // Every replica: (name as its --replica_name, direct address).
  std::vector<std::pair<std::string, std::string>> replicas;
  ClientOptions base;  // token, TLS, timeouts; the target is replaced
  // Tests of crash points: stop every move after this phase ("fence" or
  // "import"); "" runs them to the end.
  std::string stop_after;
  // Remove the tombstone fences of keys moved away (after the proxy that
  // clients use routes them to their new owner).
  bool lift_tombstones = false;
};

struct RebalanceReport {
  int moved = 0;                 // keys whose sessions moved (or finished moving)
  int undone = 0;                // interrupted moves undone (the key maps back to its source)
  int lifted = 0;                // tombstones removed
  std::vector<std::string> log;  // one line per action
};

absl::StatusOr<RebalanceReport> Rebalance(const RebalanceOptions& options);

}  // namespace f2obo::client

#endif  // F2OBO_CLIENT_REBALANCE_H_
