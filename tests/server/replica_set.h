// N f2obo-server replicas, each a real process on its own data directory
// and loopback port, for the scale-out tests behind a proxy (scaleout,
// rebalance, proxy_restart, the shared store's failover): the ring a proxy
// routes over, kill -9 and a restart on the same port and directory, a
// replica lost for good (its directory deleted) and a new one added, and
// which replicas hold a session or a group (asked directly, not through the
// proxy).
#ifndef F2OBO_TESTS_SERVER_REPLICA_SET_H_
#define F2OBO_TESTS_SERVER_REPLICA_SET_H_

#include <signal.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/client.h"
#include "tests/server/server_process.h"

namespace f2obo::testing {

class ReplicaSet {
 public:
  using Ring = std::vector<std::pair<std::string, std::string>>;  // (name, address)

  // Starts replicas r0 .. r{n-1}; with `named` each is started with
  // --replica_name=r<i> (the name a rebalance reports); `flags` are given
  // to every replica (e.g. --store=postgresql://...: replicas sharing one
  // store).
  explicit ReplicaSet(int n, bool named = false, std::vector<std::string> flags = {})
      : named_(named), flags_(std::move(flags)) {
    for (int r = 0; r < n; ++r) Add();
  }
  // Stops every replica (kill -9) and removes their directories.
  ~ReplicaSet() {
    std::error_code ignored;
    for (int r = 0; r < size(); ++r) {
      replicas_[r].reset();
      std::filesystem::remove_all(dirs_[r], ignored);
      std::filesystem::remove(dirs_[r] + "-stderr.log", ignored);
    }
  }
  ReplicaSet(const ReplicaSet&) = delete;
  ReplicaSet& operator=(const ReplicaSet&) = delete;

  // Starts a new replica r<size()> on a fresh directory and port; returns
  // its index (check operator[](r).started()).
  int Add() {
    const int r = size();
    dirs_.push_back(MakeTempDir());
    replicas_.push_back(nullptr);
    lost_.push_back(false);
    Start(r, "0");
    ports_.push_back(replicas_[r]->started() ? std::to_string(replicas_[r]->grpc_port()) : "0");
    return r;
  }
  // Replica r is lost for good, as with its machine: kill -9, its data
  // directory deleted; it is never started again (StartAgain refuses).
  // Returns its exit status (128 + SIGKILL).
  int Lose(int r) {
    const int status = Kill(r);
    std::error_code ignored;
    std::filesystem::remove_all(dirs_[r], ignored);
    lost_[r] = true;
    return status;
  }
  bool lost(int r) const { return lost_[r]; }

  int size() const { return static_cast<int>(replicas_.size()); }
  ServerProcess& operator[](int r) { return *replicas_[r]; }
  // "" when every replica started, else the first one's banner that did not.
  std::string NotStarted() const {
    for (const auto& p : replicas_) {
      if (!p->started()) return p->banner();
    }
    return "";
  }

  // The first `n` replicas (all by default) as a proxy's ring.
  Ring RingOf(int n = -1) const {
    Ring ring;
    for (int r = 0; r < (n < 0 ? size() : n); ++r) {
      ring.emplace_back(absl::StrFormat("r%d", r), replicas_[r]->target());
    }
    return ring;
  }
  // The replicas not lost (running or not), as a proxy's ring.
  Ring LiveRing() const {
    Ring ring;
    for (int r = 0; r < size(); ++r) {
      if (!lost_[r]) ring.emplace_back(absl::StrFormat("r%d", r), replicas_[r]->target());
    }
    return ring;
  }
  // --replicas=r0=addr,... for the CLI's rebalance.
  std::string ReplicasFlag() const {
    std::vector<std::string> items;
    for (const auto& [name, address] : RingOf()) items.push_back(name + "=" + address);
    return "--replicas=" + absl::StrJoin(items, ",");
  }

  // kill -9 of replica r; returns its exit status (128 + SIGKILL).
  int Kill(int r) { return replicas_[r]->Stop(SIGKILL); }
  // Starts replica r again on its port and data directory; true once it serves.
  bool StartAgain(int r) {
    if (lost_[r]) return false;
    Start(r, ports_[r]);
    return replicas_[r]->started();
  }
  bool Restart(int r) {
    Kill(r);
    return StartAgain(r);
  }

  // A client of replica r alone: one attempt, a "moved" refusal returned
  // as is (what the placement checks look at).
  client::Client Direct(int r) const {
    client::ClientOptions opt{replicas_[r]->target()};
    opt.max_attempts = 1;
    opt.moved_retry_seconds = 0;
    return client::Client(opt);
  }
  // The live replicas that hold `key` (a session id or a group id).
  std::vector<int> Holders(const std::string& key) const {
    std::vector<int> out;
    for (int r = 0; r < size(); ++r) {
      if (replicas_[r]->pid() < 0) continue;
      if (Direct(r).GetSession(key).ok() || Direct(r).GetGroup(key).ok()) out.push_back(r);
    }
    return out;
  }
  // The one replica holding `key`: -1 if none, -2 if several do.
  int Holder(const std::string& key) const {
    const std::vector<int> h = Holders(key);
    return h.empty() ? -1 : h.size() == 1 ? h[0] : -2;
  }

 private:
  void Start(int r, const std::string& port) {
    std::vector<std::string> flags = {"--listen=127.0.0.1:" + port};
    if (named_) flags.push_back(absl::StrFormat("--replica_name=r%d", r));
    flags.insert(flags.end(), flags_.begin(), flags_.end());
    replicas_[r] = std::make_unique<ServerProcess>(flags, dirs_[r]);
  }

  bool named_;
  std::vector<std::string> flags_;
  std::vector<bool> lost_;
  std::vector<std::string> dirs_;
  std::vector<std::string> ports_;
  std::vector<std::unique_ptr<ServerProcess>> replicas_;
};

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_REPLICA_SET_H_
