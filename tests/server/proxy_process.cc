#include "tests/server/proxy_process.h"

#include <arpa/inet.h>
#include <grpcpp/grpcpp.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "f2obo/v1/f2obo.grpc.pb.h"
#include "tests/server/server_process.h"

namespace f2obo::testing {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Runs argv to completion; its stdout, or "" with `ok` false.
std::string Capture(const std::vector<std::string>& args, bool* ok) {
  std::string command;
  for (const std::string& a : args) command += "'" + a + "' ";
  FILE* p = popen(command.c_str(), "r");
  std::string out;
  if (p == nullptr) {
    *ok = false;
    return out;
  }
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  *ok = pclose(p) == 0;
  return out;
}

}  // namespace

// Whether something accepts TCP connections on 127.0.0.1:`port`.
static bool AcceptsConnections(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const bool ok = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

ProxyProcess::ProxyProcess(std::vector<std::pair<std::string, std::string>> replicas,
                           bool shared_store)
    : replicas_(std::move(replicas)), shared_store_(shared_store), prefix_(MakeTempDir()) {}

ProxyProcess::~ProxyProcess() {
  if (pid_ > 0) {
    kill(pid_, SIGQUIT);  // graceful: the master waits for its workers
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid_, SIGKILL);
        waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  std::error_code ignored;
  std::filesystem::remove_all(prefix_, ignored);
}

std::string ProxyProcess::ErrorLog() const { return ReadFile(prefix_ + "/error.log"); }

std::string ProxyProcess::Reload(std::vector<std::pair<std::string, std::string>> replicas) {
  replicas_ = std::move(replicas);
  if (std::string error = WriteConfig(); !error.empty()) return error;
  if (pid_ <= 0 || kill(pid_, SIGHUP) != 0) return "nginx is not running";
  return "";
}

std::string ProxyProcess::WriteConfig() {
  std::vector<std::string> gen = {"/usr/bin/python3",
                                  F2OBO_SOURCE_DIR "/deploy/proxy/gen_proxy_config.py", "nginx",
                                  "--listen=" + target(), "--prefix=" + prefix_};
  // As root, nginx would run its workers as "nobody", who cannot enter the
  // private temporary prefix.
  if (geteuid() == 0) gen.push_back("--user=root");
  if (shared_store_) gen.push_back("--shared_store");
  for (const auto& [name, address] : replicas_) gen.push_back("--replica=" + name + "=" + address);
  bool ok = false;
  config_ = Capture(gen, &ok);
  if (!ok) return "gen_proxy_config.py failed";
  std::ofstream(prefix_ + "/nginx.conf") << config_;
  return "";
}

std::string ProxyProcess::Start() {
  port_ = FreeLoopbackPort();
  if (std::string error = WriteConfig(); !error.empty()) return error;
  const std::string conf = prefix_ + "/nginx.conf";
  pid_ = fork();
  if (pid_ == 0) {
    const std::string err = prefix_ + "/error.log";
    execl(F2OBO_NGINX_PATH, F2OBO_NGINX_PATH, "-p", prefix_.c_str(), "-c", conf.c_str(), "-e",
          err.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Ready when a call through the proxy is answered by a replica: a
  // GetSession of an unknown id gets the replica's NOT_FOUND.  The channel
  // is made once nginx accepts connections: a gRPC channel refused before
  // that backs off and took ~10 s to notice (every start paid it).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!AcceptsConnections(port_)) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return "nginx exited: " + ErrorLog();
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return "nginx not listening within 20 s: " + ErrorLog();
    }
    std::this_thread::sleep_for(
        std::chrono::milliseconds(5));  // poll interval, not a wait for an event
  }
  auto stub = v1::F2obo::NewStub(grpc::CreateChannel(target(), grpc::InsecureChannelCredentials()));
  while (std::chrono::steady_clock::now() < deadline) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return "nginx exited: " + ErrorLog();
    }
    grpc::ClientContext ctx;
    ctx.set_wait_for_ready(true);
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
    v1::GetSessionRequest req;
    req.set_session_id("proxy-readiness-probe");
    v1::SessionInfo info;
    if (stub->GetSession(&ctx, req, &info).error_code() == grpc::StatusCode::NOT_FOUND) return "";
    std::this_thread::sleep_for(
        std::chrono::milliseconds(20));  // poll interval, not a wait for an event
  }
  return "nginx not ready within 20 s: " + ErrorLog();
}

}  // namespace f2obo::testing
