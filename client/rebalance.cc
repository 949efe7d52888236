#include "client/rebalance.h"

#include <map>
#include <memory>
#include <set>

#include "absl/strings/str_cat.h"
#include "client/session_routing.h"
#include "client/session_transfer.h"

namespace f2obo::client {
namespace {

// One replica, reached directly: what it holds and its fences.
struct Replica {
  std::string name;
  std::unique_ptr<Client> client;
  std::map<std::string, std::vector<std::string>> keys;  // routing key -> session ids
  std::map<std::string, std::string> fences;             // routing key -> target
};

template <typename Request, typename Reply, typename Rpc>
absl::StatusOr<Reply> Call(Client& c, const Request& req, Rpc rpc) {
  Reply out;
  auto ctx = c.NewContext();
  const grpc::Status s = (c.stub().*rpc)(ctx.get(), req, &out);
  if (!s.ok()) return FromGrpc(s);
  return out;
}

absl::StatusOr<v1::ServerInfo> ServerInfo(Client& c, const std::string& routing_key = "") {
  v1::GetServerInfoRequest req;
  req.set_routing_key(routing_key);
  return Call<v1::GetServerInfoRequest, v1::ServerInfo>(c, req, &v1::F2obo::Stub::GetServerInfo);
}

absl::Status Load(Replica& r) {
  absl::StatusOr<v1::ServerInfo> info = ServerInfo(*r.client);
  if (!info.ok()) return info.status();
  if (info->replica_name() != r.name) {
    return absl::FailedPreconditionError(absl::StrCat("replica '", r.name, "' calls itself '",
                                                      info->replica_name(), "' (--replica_name)"));
  }
  for (const v1::Fence& f : info->fences()) r.fences[f.routing_key()] = f.target();
  absl::StatusOr<v1::ListSessionsResponse> list = r.client->ListSessions();
  if (!list.ok()) return list.status();
  for (const v1::SessionInfo& s : list->sessions()) {
    r.keys[SessionRoutingKey(s.session_id())].push_back(s.session_id());
  }
  return absl::OkStatus();
}

class Mover {
 public:
  Mover(const RebalanceOptions& o, std::map<std::string, Replica>& replicas, Client& proxy,
        RebalanceReport& report)
      : o_(o), replicas_(replicas), proxy_(proxy), report_(report) {}

  // The replica the proxy sends `key` to.
  absl::StatusOr<std::string> Owner(const std::string& key) {
    absl::StatusOr<v1::ServerInfo> info = ServerInfo(proxy_, key);
    if (!info.ok()) return info.status();
    if (replicas_.count(info->replica_name()) == 0) {
      return absl::FailedPreconditionError(absl::StrCat("the proxy routes key '", key,
                                                        "' to replica '", info->replica_name(),
                                                        "', which is not in --replicas"));
    }
    return info->replica_name();
  }

  absl::Status Settle(Replica& r, const std::string& key) {
    absl::StatusOr<std::string> owner = Owner(key);
    if (!owner.ok()) return owner.status();
    const bool held = r.keys.count(key) > 0;
    const auto fence = r.fences.find(key);
    if (*owner == r.name) {
      if (fence == r.fences.end()) return absl::OkStatus();
      // A move away from here that the ring no longer wants: undo it.
      const std::string target = fence->second;
      if (held) {
        const auto there = replicas_.find(target);
        if (there == replicas_.end()) {
          // A damaged fence record (target unknown) or a replica missing
          // from --replicas: whether a copy there took steps is unknown.
          return absl::FailedPreconditionError(absl::StrCat(
              "key '", key, "' on '", r.name, "' is fenced towards '", target,
              "', which is not in --replicas: add it, or check by hand that no other replica "
              "holds the key, then LiftFence"));
        }
        absl::StatusOr<bool> imported = Holds(there->second, key);
        if (!imported.ok()) {
          return absl::Status(
              imported.status().code(),
              absl::StrCat("key '", key, "': cannot tell whether '", target, "' holds it (",
                           imported.status().message(), "); rerun once it answers"));
        }
        if (*imported) {
          // It got as far as the import: the copy there is the one that
          // accepts steps (these are frozen, equal or older).  Drop these,
          // then move that one back (Copy lifts this tombstone first).
          if (absl::Status s = DropFenced(r, key); !s.ok()) return s;
          if (absl::Status s = Move(there->second, r, key); !s.ok()) return s;
          ++report_.undone;
          report_.log.push_back(
              absl::StrCat("undone: ", key, " moved back from ", target, " to ", r.name));
          return absl::OkStatus();
        }
      }
      if (absl::Status s = Lift(r, key); !s.ok()) return s;
      if (held) ++report_.undone;
      report_.log.push_back(absl::StrCat(held ? "undone: " : "lifted: ", key, " on ", r.name));
      return absl::OkStatus();
    }
    if (!held) {
      if (fence == r.fences.end() || !o_.lift_tombstones) return absl::OkStatus();
      if (absl::Status s = Lift(r, key); !s.ok()) return s;
      ++report_.lifted;
      report_.log.push_back(absl::StrCat("tombstone lifted: ", key, " on ", r.name));
      return absl::OkStatus();
    }
    return Move(r, replicas_.at(*owner), key);
  }

 private:
  // Whether r holds a copy of `key` (its sessions listed at the start, or
  // its group); an error when r cannot say (down, say): an undo must not
  // guess, or two copies could accept steps.
  absl::StatusOr<bool> Holds(Replica& r, const std::string& key) {
    if (r.keys.count(key) > 0) return true;
    for (const absl::Status& s :
         {r.client->GetGroup(key).status(), r.client->GetSession(key).status()}) {
      if (s.ok()) return true;
      // NOT_FOUND, or "moved" from a tombstone of the key: no copy.
      if (s.code() != absl::StatusCode::kNotFound && !IsMoved(s)) return s;
    }
    return false;
  }

  absl::Status Lift(Replica& r, const std::string& key) {
    v1::LiftFenceRequest req;
    req.set_routing_key(key);
    absl::StatusOr<v1::LiftFenceResponse> s = Call<v1::LiftFenceRequest, v1::LiftFenceResponse>(
        *r.client, req, &v1::F2obo::Stub::LiftFence);
    if (!s.ok() && s.status().code() != absl::StatusCode::kNotFound) return s.status();
    r.fences.erase(key);
    return absl::OkStatus();
  }

  absl::Status Move(Replica& from, Replica& to, const std::string& key) {
    const std::string what = absl::StrCat("key '", key, "' ", from.name, " -> ", to.name);
    v1::SetFenceRequest fence;
    fence.set_routing_key(key);
    fence.set_target(to.name);
    if (absl::StatusOr<v1::Fence> s =
            Call<v1::SetFenceRequest, v1::Fence>(*from.client, fence, &v1::F2obo::Stub::SetFence);
        !s.ok()) {
      return absl::Status(s.status().code(), absl::StrCat(what, ": fence: ", s.status().message()));
    }
    from.fences[key] = to.name;
    if (o_.stop_after == "fence") return Stopped(what, "fence");
    if (absl::Status s = Copy(from, to, key); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(what, ": ", s.message()));
    }
    if (o_.stop_after == "import") return Stopped(what, "import");
    if (absl::Status s = DropFenced(from, key); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(what, ": drop: ", s.message()));
    }
    ++report_.moved;
    report_.log.push_back(absl::StrCat("moved: ", what));
    return absl::OkStatus();
  }

  // Deletes r's (fenced, frozen) copies of `key`; the fence stays.
  absl::Status DropFenced(Replica& r, const std::string& key) {
    v1::DropFencedSessionsRequest drop;
    drop.set_routing_key(key);
    if (auto s = Call<v1::DropFencedSessionsRequest, v1::DropFencedSessionsResponse>(
            *r.client, drop, &v1::F2obo::Stub::DropFencedSessions);
        !s.ok()) {
      return s.status();
    }
    r.keys.erase(key);
    return absl::OkStatus();
  }

  absl::Status Stopped(const std::string& what, const char* phase) {
    report_.log.push_back(absl::StrCat("stopped after ", phase, ": ", what));
    return absl::AbortedError(
        absl::StrCat(what, ": stopped after the ", phase, " phase (--stop_after)"));
  }

  absl::StatusOr<v1::SessionExport> Export(Replica& r, const std::string& id) {
    v1::ExportSessionRequest req;
    req.set_session_id(id);
    return Call<v1::ExportSessionRequest, v1::SessionExport>(*r.client, req,
                                                             &v1::F2obo::Stub::ExportSession);
  }

  // The source's (frozen) copies onto the target, unless it has them.
  absl::Status Copy(Replica& from, Replica& to, const std::string& key) {
    if (to.fences.count(key) > 0) {
      // A tombstone: the key moved away from `to` once and now comes back
      // (its import would be refused while fenced).  `from` is fenced
      // already, so lifting it lets no copy step; calls routed to `to`
      // get NOT_FOUND instead of "moved" until the import below.
      if (to.keys.count(key) > 0) {
        return absl::FailedPreconditionError(absl::StrCat(
            "'", to.name, "' holds fenced copies of key '", key, "': rerun to undo that move"));
      }
      if (absl::Status s = Lift(to, key); !s.ok()) return s;
    }
    absl::StatusOr<v1::GroupInfo> group = from.client->GetGroup(key);
    if (group.ok()) {
      if (to.client->GetGroup(key).ok()) return absl::OkStatus();  // imported before a crash
      v1::ImportGroupRequest req;
      req.set_group_id(key);
      for (const v1::SessionInfo& m : group->members()) {
        // ImportGroup stores members and group record in one transaction,
        // so a member without its group comes only from a server older
        // than that.  Replaced only if it took no step there: the frozen
        // source's copy is then the same; otherwise replacing it would
        // lose the steps it acknowledged.
        if (absl::StatusOr<v1::SessionInfo> left = to.client->GetSession(m.session_id());
            left.ok()) {
          if (left->next_t() != m.next_t()) {
            return absl::FailedPreconditionError(absl::StrCat(
                "member '", m.session_id(), "' exists on the target without its group, at t = ",
                left->next_t(), " (the frozen source's is at ", m.next_t(),
                "): steps were applied to it there; reconcile by hand"));
          }
          if (absl::Status s = to.client->DeleteSession(m.session_id()); !s.ok()) return s;
        }
        absl::StatusOr<v1::SessionExport> ex = Export(from, m.session_id());
        if (!ex.ok()) return ex.status();
        *req.add_members() = *std::move(ex);
      }
      return Call<v1::ImportGroupRequest, v1::GroupInfo>(*to.client, req,
                                                         &v1::F2obo::Stub::ImportGroup)
          .status();
    }
    for (const std::string& id : from.keys.at(key)) {
      // Imported before a crash?  Asked first: a streamed import learns of
      // ALREADY_EXISTS only after sending the whole session.
      if (!to.client->GetSession(id).ok()) {
        const absl::Status s = CopySessionTo(from, to, id);
        if (s.ok()) continue;
        if (s.code() != absl::StatusCode::kAlreadyExists) return s;
      }
      // Imported before a crash: the copy must be the frozen one's.
      absl::StatusOr<v1::SessionInfo> a = from.client->GetSession(id);
      absl::StatusOr<v1::SessionInfo> b = to.client->GetSession(id);
      if (!a.ok() || !b.ok() || a->next_t() > b->next_t()) {
        return absl::FailedPreconditionError(
            absl::StrCat("session '", id, "' exists on the target behind the source's copy"));
      }
    }
    return absl::OkStatus();
  }

  // Session `id` of `from` created on `to`, streamed in chunks whatever
  // its size (client/session_transfer.h); through the unary calls when a
  // replica predates the streamed ones (UNIMPLEMENTED).
  absl::Status CopySessionTo(Replica& from, Replica& to, const std::string& id) {
    absl::Status s = CopySession(*from.client, *to.client, id).status();
    if (s.code() != absl::StatusCode::kUnimplemented) return s;
    absl::StatusOr<v1::SessionExport> ex = Export(from, id);
    if (!ex.ok()) return ex.status();
    v1::ImportSessionRequest req;
    *req.mutable_session() = *std::move(ex);
    return Call<v1::ImportSessionRequest, v1::SessionInfo>(*to.client, req,
                                                           &v1::F2obo::Stub::ImportSession)
        .status();
  }

  const RebalanceOptions& o_;
  std::map<std::string, Replica>& replicas_;
  Client& proxy_;
  RebalanceReport& report_;
};

}  // namespace

absl::StatusOr<RebalanceReport> Rebalance(const RebalanceOptions& o) {
  if (o.proxy.empty() || o.replicas.empty()) {
    return absl::InvalidArgumentError("rebalance needs the proxy and every replica");
  }
  std::map<std::string, Replica> replicas;
  for (const auto& [name, address] : o.replicas) {
    ClientOptions c = o.base;
    c.target = address;
    Replica& r = replicas[name];
    r.name = name;
    r.client = std::make_unique<Client>(c);
    if (absl::Status s = Load(r); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("replica '", name, "': ", s.message()));
    }
  }
  ClientOptions p = o.base;
  p.target = o.proxy;
  p.session_header = true;
  Client proxy(p);
  RebalanceReport report;
  Mover mover(o, replicas, proxy, report);
  for (auto& [name, r] : replicas) {
    std::set<std::string> keys;
    for (const auto& [key, ids] : r.keys) keys.insert(key);
    for (const auto& [key, target] : r.fences) keys.insert(key);
    for (const std::string& key : keys) {
      if (absl::Status s = mover.Settle(r, key); !s.ok()) return s;
    }
  }
  return report;
}

}  // namespace f2obo::client
