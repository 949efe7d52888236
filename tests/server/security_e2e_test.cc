// Authentication (bearer tokens with roles) and TLS / mutual TLS, over real
// gRPC on loopback with certificates generated here by openssl.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "client/client.h"
#include "f2obo/v1/rpc_policy.h"
#include "google/protobuf/descriptor.h"
#include "tests/server/e2e_support.h"
#include "tests/server/server_process.h"

namespace f2obo {
namespace {

using testing::AllFamilyCases;
using testing::FamilyCase;
using testing::MakeTempDir;
using testing::RequestFor;
using testing::ServerProcess;
using testing::SpecFor;

constexpr char kRead[] = "read-token-0123456789abcdef";
constexpr char kWrite[] = "write-token-0123456789abcdef";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

enum class Role { kRead, kWrite };

// Every RPC of f2obo.v1.F2obo and the role it needs.
// EveryServiceRpcIsListedAndCalled fails when the service gains an RPC that
// is not listed here (and called by CallEverything), so no RPC escapes the
// checks below.
const std::map<std::string, Role>& Rpcs() {
  static const auto* rpcs = new std::map<std::string, Role>{
      {"CreateSession", Role::kWrite},
      {"GetSession", Role::kRead},
      {"ListSessions", Role::kRead},
      {"DeleteSession", Role::kWrite},
      {"Step", Role::kWrite},
      {"Steps", Role::kWrite},
      {"OracleSteps", Role::kWrite},
      {"GetDecision", Role::kRead},
      {"WatchMetrics", Role::kRead},
      {"ExportSession", Role::kWrite},
      {"ImportSession", Role::kWrite},
      {"ExportSessionStream", Role::kWrite},
      {"ImportSessionStream", Role::kWrite},
      {"CreateGroup", Role::kWrite},
      {"GetGroup", Role::kRead},
      {"StepGroup", Role::kWrite},
      {"StepsGroup", Role::kWrite},
      {"DeleteGroup", Role::kWrite},
      {"CheckpointSession", Role::kWrite},
      {"RollbackSession", Role::kWrite},
      {"ForkSession", Role::kWrite},
      {"ImportGroup", Role::kWrite},
      {"GetServerInfo", Role::kRead},
      {"SetFence", Role::kWrite},
      {"LiftFence", Role::kWrite},
      {"DropFencedSessions", Role::kWrite},
  };
  return *rpcs;
}

// The method names of the service, from the generated descriptor.
std::set<std::string> ServiceMethods() {
  const google::protobuf::ServiceDescriptor* service = v1::F2oboService();
  std::set<std::string> out;
  if (service == nullptr) return out;
  for (int i = 0; i < service->method_count(); ++i) out.insert(service->method(i)->name());
  return out;
}

template <typename Map>
std::set<std::string> Keys(const Map& m) {
  std::set<std::string> out;
  for (const auto& [k, v] : m) out.insert(k);
  return out;
}

constexpr char kSession[] = "guarded";
constexpr char kGroup[] = "guardedg";
constexpr char kFork[] = "guarded.fork";

v1::CreateGroupRequest GuardedGroup() {
  v1::CreateGroupRequest req;
  req.set_group_id(kGroup);
  *req.mutable_spec() = SpecFor(AllFamilyCases()[0], "f2obo", 1);
  v1::GroupMember* m = req.add_members();
  m->set_name("m");
  m->set_algorithm("f2obo");
  return req;
}

// Calls every RPC once and returns the status codes by method.  With a
// write token every call but ImportSession, ImportSessionStream and
// ImportGroup (empty) succeeds.
std::map<std::string, grpc::StatusCode> CallEverything(client::Client& c) {
  std::map<std::string, grpc::StatusCode> out;
  auto code = [](const absl::Status& s) { return static_cast<grpc::StatusCode>(s.code()); };
  const FamilyCase f = AllFamilyCases()[0];
  v1::CreateSessionRequest create;
  create.set_session_id(kSession);
  *create.mutable_spec() = SpecFor(f, "f2obo", 1);
  out["CreateSession"] = code(c.CreateSession(create).status());
  out["Step"] = code(c.Step(RequestFor(f, kSession, 1)).status());
  out["GetSession"] = code(c.GetSession(kSession).status());
  out["ListSessions"] = code(c.ListSessions().status());
  out["GetDecision"] = code(c.GetDecision(kSession).status());
  {
    auto ctx = c.NewContext();
    auto stream = c.stub().Steps(ctx.get());
    stream->WritesDone();
    out["Steps"] = stream->Finish().error_code();
  }
  {
    auto ctx = c.NewContext();
    auto stream = c.stub().OracleSteps(ctx.get());
    stream->WritesDone();
    out["OracleSteps"] = stream->Finish().error_code();
  }
  {
    auto ctx = c.NewContext();
    v1::WatchMetricsRequest req;
    req.set_session_id(kSession);
    req.set_after_t(1000000);
    ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(300));
    auto reader = c.stub().WatchMetrics(ctx.get(), req);
    v1::StepMetrics m;
    reader->Read(&m);
    out["WatchMetrics"] = reader->Finish().error_code();
  }
  {
    auto ctx = c.NewContext();
    v1::ExportSessionRequest req;
    req.set_session_id(kSession);
    v1::SessionExport ex;
    out["ExportSession"] = c.stub().ExportSession(ctx.get(), req, &ex).error_code();
  }
  {
    auto ctx = c.NewContext();
    v1::ImportSessionRequest req;
    v1::SessionInfo info;
    out["ImportSession"] = c.stub().ImportSession(ctx.get(), req, &info).error_code();
  }
  {
    auto ctx = c.NewContext();
    v1::ExportSessionStreamRequest req;
    req.set_session_id(kSession);
    auto reader = c.stub().ExportSessionStream(ctx.get(), req);
    v1::SessionChunk chunk;
    while (reader->Read(&chunk)) {
    }
    out["ExportSessionStream"] = reader->Finish().error_code();
  }
  {
    auto ctx = c.NewContext();
    v1::SessionInfo info;
    auto writer = c.stub().ImportSessionStream(ctx.get(), &info);
    writer->WritesDone();  // empty: refused for its content
    out["ImportSessionStream"] = writer->Finish().error_code();
  }
  out["CheckpointSession"] = code(c.CheckpointSession(kSession).status());
  out["RollbackSession"] = code(c.RollbackSession(kSession, 0).status());
  {
    v1::ForkSessionRequest req;
    req.set_session_id(kSession);
    req.set_new_session_id(kFork);
    out["ForkSession"] = code(c.ForkSession(req).status());
  }
  out["CreateGroup"] = code(c.CreateGroup(GuardedGroup()).status());
  out["GetGroup"] = code(c.GetGroup(kGroup).status());
  {
    const v1::StepRequest single = RequestFor(f, "", 1);
    v1::GroupStepRequest req;
    req.set_group_id(kGroup);
    req.set_t(1);
    *req.mutable_upper() = single.upper();
    *req.mutable_inner() = single.inner();
    out["StepGroup"] = code(c.StepGroup(req).status());
  }
  {
    auto ctx = c.NewContext();
    auto stream = c.stub().StepsGroup(ctx.get());
    stream->WritesDone();
    out["StepsGroup"] = stream->Finish().error_code();
  }
  out["DeleteSession"] = code(c.DeleteSession(kSession));
  c.DeleteSession(kFork).IgnoreError();  // (its code is DeleteSession's)
  out["DeleteGroup"] = code(c.DeleteGroup(kGroup).status());
  {
    auto ctx = c.NewContext();
    v1::ImportGroupRequest req;  // empty: refused for its content
    v1::GroupInfo info;
    out["ImportGroup"] = c.stub().ImportGroup(ctx.get(), req, &info).error_code();
  }
  {
    auto ctx = c.NewContext();
    v1::ServerInfo info;
    out["GetServerInfo"] =
        c.stub().GetServerInfo(ctx.get(), v1::GetServerInfoRequest(), &info).error_code();
  }
  // A fence on a key holding nothing: set, drop its (no) copies, lift.
  {
    auto ctx = c.NewContext();
    v1::SetFenceRequest req;
    req.set_routing_key("fencedkey");
    req.set_target("elsewhere");
    v1::Fence fence;
    out["SetFence"] = c.stub().SetFence(ctx.get(), req, &fence).error_code();
  }
  {
    auto ctx = c.NewContext();
    v1::DropFencedSessionsRequest req;
    req.set_routing_key("fencedkey");
    v1::DropFencedSessionsResponse r;
    out["DropFencedSessions"] = c.stub().DropFencedSessions(ctx.get(), req, &r).error_code();
  }
  {
    auto ctx = c.NewContext();
    v1::LiftFenceRequest req;
    req.set_routing_key("fencedkey");
    v1::LiftFenceResponse r;
    out["LiftFence"] = c.stub().LiftFence(ctx.get(), req, &r).error_code();
  }
  return out;
}

class AuthE2e : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string dir = MakeTempDir();
    token_file_ = dir + "/tokens";
    std::ofstream(token_file_) << "# role token\nread " << kRead << "\nwrite " << kWrite << "\n";
    server_ =
        std::make_unique<ServerProcess>(std::vector<std::string>{"--token_file=" + token_file_});
    ASSERT_TRUE(server_->started()) << server_->Stderr();
  }
  client::Client ClientWith(const std::string& token) {
    client::ClientOptions o{server_->target()};
    o.token = token;
    o.max_attempts = 1;
    return client::Client(o);
  }
  std::string token_file_;
  std::unique_ptr<ServerProcess> server_;
};

TEST(AuthCoverage, EveryServiceRpcIsListedAndCalled) {
  const std::set<std::string> methods = ServiceMethods();
  ASSERT_FALSE(methods.empty()) << "service f2obo.v1.F2obo not found in the generated code";
  // A failure here: give the new RPC its role in Rpcs() and a call in
  // CallEverything().
  EXPECT_EQ(Keys(Rpcs()), methods);
}

TEST_F(AuthE2e, EveryRpcWithoutATokenOrWithAWrongOneIsUnauthenticated) {
  for (const std::string& token : {std::string(), std::string("not-a-real-token-at-all")}) {
    client::Client c = ClientWith(token);
    const auto codes = CallEverything(c);
    EXPECT_EQ(Keys(codes), ServiceMethods()) << "CallEverything misses an RPC";
    for (const auto& [method, code] : codes) {
      EXPECT_EQ(code, grpc::StatusCode::UNAUTHENTICATED) << method << " token '" << token << "'";
    }
  }
  // Nothing was created by the refused calls.
  client::Client writer = ClientWith(kWrite);
  EXPECT_EQ(writer.ListSessions()->sessions_size(), 0);
}

// The operations guide's list of who may call what says exactly what the
// server does: its list of the RPCs a read token may call is the read role
// of Rpcs(), and it says that the health service and reflection answer
// without a token, which they do.
TEST_F(AuthE2e, TheDocsTokenListIsWhatTheServerDoes) {
  std::ifstream in(F2OBO_SECURITY_DOC_PATH);
  std::stringstream text;
  text << in.rdbuf();
  std::string readme = text.str();
  for (char& ch : readme) {
    if (ch == '\n') ch = ' ';
  }
  const std::string start = "read tokens may call ";
  const size_t from = readme.find(start);
  ASSERT_NE(from, std::string::npos) << F2OBO_SECURITY_DOC_PATH << " has no '" << start << "'";
  const size_t to = readme.find(';', from);
  std::set<std::string> listed;
  std::string word;
  for (char ch : readme.substr(from + start.size(), to - from - start.size()) + " ") {
    if (std::isalnum(static_cast<unsigned char>(ch))) {
      word += ch;
    } else if (!word.empty()) {
      if (word != "and") listed.insert(word);
      word.clear();
    }
  }
  std::set<std::string> reads;
  for (const auto& [method, role] : Rpcs()) {
    if (role == Role::kRead) reads.insert(method);
  }
  EXPECT_EQ(listed, reads);
  EXPECT_THAT(readme, ::testing::HasSubstr("The gRPC health service and server reflection answer "
                                           "without a token"));
  client::Client anonymous = ClientWith("");
  const absl::StatusOr<bool> healthy = anonymous.Healthy("");
  ASSERT_TRUE(healthy.ok()) << healthy.status();
  EXPECT_TRUE(*healthy);
}

TEST_F(AuthE2e, AReadTokenReadsButMayNotWrite) {
  client::Client writer = ClientWith(kWrite);
  const FamilyCase f = AllFamilyCases()[0];
  v1::CreateSessionRequest create;
  create.set_session_id(kSession);
  *create.mutable_spec() = SpecFor(f, "f2obo", 1);
  ASSERT_TRUE(writer.CreateSession(create).ok());
  ASSERT_TRUE(writer.CreateGroup(GuardedGroup()).ok());
  client::Client reader = ClientWith(kRead);
  const auto codes = CallEverything(reader);
  EXPECT_EQ(Keys(codes), ServiceMethods()) << "CallEverything misses an RPC";
  for (const auto& [method, role] : Rpcs()) {
    const auto it = codes.find(method);
    ASSERT_NE(it, codes.end()) << method << " was not called";
    if (role == Role::kWrite) {
      EXPECT_EQ(it->second, grpc::StatusCode::PERMISSION_DENIED) << method;
    } else if (method == "WatchMetrics") {
      EXPECT_EQ(it->second, grpc::StatusCode::DEADLINE_EXCEEDED) << method;  // allowed, idle
    } else {
      EXPECT_EQ(it->second, grpc::StatusCode::OK) << method;
    }
  }
  // The refused writes changed nothing.
  EXPECT_EQ(writer.GetSession(kSession)->next_t(), 1);
  EXPECT_EQ(writer.GetGroup(kGroup)->members(0).next_t(), 1);
  EXPECT_EQ(writer.ListSessions()->sessions_size(), 2);
}

TEST_F(AuthE2e, AWriteTokenMayDoEverything) {
  client::Client c = ClientWith(kWrite);
  const auto codes = CallEverything(c);
  EXPECT_EQ(Keys(codes), ServiceMethods()) << "CallEverything misses an RPC";
  for (const auto& [method, code] : codes) {
    if (method == "WatchMetrics") {
      EXPECT_EQ(code, grpc::StatusCode::DEADLINE_EXCEEDED) << method;  // allowed, idle
    } else if (method == "ImportSession" || method == "ImportGroup" ||
               method == "ImportSessionStream") {
      // An empty import is refused for its content, not for the caller.
      EXPECT_EQ(code, grpc::StatusCode::INVALID_ARGUMENT) << method;
    } else {
      EXPECT_EQ(code, grpc::StatusCode::OK) << method;
    }
  }
  EXPECT_EQ(c.ListSessions()->sessions_size(), 0);  // both deletions went through
}

// Writes `text` as a token file and starts a server on it.
std::unique_ptr<ServerProcess> ServerWithTokens(const std::string& text) {
  const std::string path = MakeTempDir() + "/tokens";
  std::ofstream(path) << text;
  return std::make_unique<ServerProcess>(std::vector<std::string>{"--token_file=" + path});
}

TEST(AuthStartup, ATokenGivenTwiceIsAStartUpErrorNamingTheLine) {
  // Same token, two roles: which one would win is not for the order of a
  // file to decide.
  const std::string two_roles = std::string("# tokens\nread ") + kRead + "\nwrite " + kWrite +
                                "\n\nwrite " + kRead + "  # again\n";
  std::unique_ptr<ServerProcess> server = ServerWithTokens(two_roles);
  EXPECT_FALSE(server->started());
  EXPECT_THAT(server->Stderr(),
              ::testing::ContainsRegex("/tokens:5: duplicate token \\(already given on line 2\\)"));
  // Same token, same role.
  server = ServerWithTokens(std::string("write ") + kWrite + "\nwrite " + kWrite + "\n");
  EXPECT_FALSE(server->started());
  EXPECT_THAT(server->Stderr(),
              ::testing::ContainsRegex("/tokens:2: duplicate token \\(already given on line 1\\)"));
  // Distinct tokens start.
  server = ServerWithTokens(std::string("read ") + kRead + "\nwrite " + kWrite + "\n");
  EXPECT_TRUE(server->started()) << server->Stderr();
}

// Its tokens grant access to every session: a token file its group or
// others may read (or write) is said at start, naming the file and its mode.
TEST(AuthStartup, ATokenFileOthersCanReadIsWarnedAboutWithItsMode) {
  const std::string path = MakeTempDir() + "/tokens";
  std::ofstream(path) << "read " << kRead << "\nwrite " << kWrite << "\n";
  const auto start_with_mode = [&](mode_t mode) {
    EXPECT_EQ(chmod(path.c_str(), mode), 0);
    auto server = std::make_unique<ServerProcess>(std::vector<std::string>{"--token_file=" + path});
    EXPECT_TRUE(server->started()) << server->Stderr();
    return server->Stderr();
  };
  EXPECT_THAT(start_with_mode(0644),
              ::testing::HasSubstr("WARNING: --token_file " + path +
                                   " has mode 0644: readable by its group or others"));
  EXPECT_THAT(start_with_mode(0604), ::testing::HasSubstr("has mode 0604: readable by"));
  EXPECT_THAT(start_with_mode(0620),
              ::testing::HasSubstr("has mode 0620: writable by its group or others"));
  const std::string owner_only = start_with_mode(0600);
  EXPECT_THAT(owner_only, ::testing::Not(::testing::HasSubstr("WARNING: --token_file")));
  EXPECT_THAT(owner_only, ::testing::HasSubstr("session(s) restored from"));
}

TEST(AuthStartup, WithoutATokenFileTheServerSaysItIsOpen) {
  ServerProcess server;
  ASSERT_TRUE(server.started());
  EXPECT_THAT(server.Stderr(), ::testing::HasSubstr("WARNING: no --token_file"));
}

// A CA, a server certificate for 127.0.0.1 / localhost, a client certificate.
struct Pki {
  std::string dir;
  bool ok = false;
  Pki() : dir(MakeTempDir()) {
    const std::string d = dir;
    const std::string script =
        "cd '" + d +
        "' && "
        "openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
        "-subj /CN=f2obo-test-ca >/dev/null 2>&1 && "
        "openssl req -newkey rsa:2048 -nodes -keyout server.key -out server.csr "
        "-subj /CN=localhost >/dev/null 2>&1 && "
        "printf 'subjectAltName=DNS:localhost,IP:127.0.0.1' > san.ext && "
        "openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-out server.pem -days 2 -extfile san.ext >/dev/null 2>&1 && "
        "openssl req -newkey rsa:2048 -nodes -keyout client.key -out client.csr "
        "-subj /CN=f2obo-client >/dev/null 2>&1 && "
        "openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial "
        "-out client.pem -days 2 >/dev/null 2>&1";
    ok = std::system(script.c_str()) == 0;
  }
  std::string path(const char* name) const { return dir + "/" + name; }
};

client::Client TlsClient(const ServerProcess& s, const Pki& pki, bool with_cert) {
  client::ClientOptions o{"localhost:" + std::to_string(s.grpc_port())};
  o.root_certs = Slurp(pki.path("ca.pem"));
  if (with_cert) {
    o.cert_chain = Slurp(pki.path("client.pem"));
    o.private_key = Slurp(pki.path("client.key"));
  }
  o.max_attempts = 1;
  o.rpc_timeout_seconds = 5;
  return client::Client(o);
}

TEST(TlsE2e, ServesTlsAndRefusesPlaintextClients) {
  Pki pki;
  ASSERT_TRUE(pki.ok) << "openssl failed";
  ServerProcess server(
      {"--tls_cert_file=" + pki.path("server.pem"), "--tls_key_file=" + pki.path("server.key")});
  ASSERT_TRUE(server.started()) << server.Stderr();
  client::Client tls = TlsClient(server, pki, /*with_cert=*/false);
  EXPECT_TRUE(tls.ListSessions().ok()) << tls.ListSessions().status();
  client::ClientOptions plain_options{server.target()};
  plain_options.max_attempts = 1;
  plain_options.rpc_timeout_seconds = 5;
  client::Client plain(plain_options);
  EXPECT_EQ(plain.ListSessions().status().code(), absl::StatusCode::kUnavailable);
}

TEST(TlsE2e, MutualTlsRequiresAClientCertificateSignedByTheCa) {
  Pki pki;
  ASSERT_TRUE(pki.ok) << "openssl failed";
  ServerProcess server({"--tls_cert_file=" + pki.path("server.pem"),
                        "--tls_key_file=" + pki.path("server.key"),
                        "--tls_client_ca_file=" + pki.path("ca.pem")});
  ASSERT_TRUE(server.started()) << server.Stderr();
  client::Client with_cert = TlsClient(server, pki, /*with_cert=*/true);
  EXPECT_TRUE(with_cert.ListSessions().ok()) << with_cert.ListSessions().status();
  client::Client without = TlsClient(server, pki, /*with_cert=*/false);
  EXPECT_EQ(without.ListSessions().status().code(), absl::StatusCode::kUnavailable);
}

TEST(TlsStartup, RefusesAKeyWithoutACertificate) {
  ServerProcess server({"--tls_key_file=/nonexistent.key"});
  EXPECT_FALSE(server.started());
  EXPECT_THAT(server.Stderr(),
              ::testing::HasSubstr("--tls_cert_file and --tls_key_file go together"));
}

}  // namespace
}  // namespace f2obo
