#include "server/server.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/security/server_credentials.h>
#include <grpcpp/server_builder.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "f2obo/v1/decode_traits.h"
#include "server/dashboard/dashboard.h"
#include "server/flag_rules.h"
#include "server/request_bounds.h"
#include "server/store/store_factory.h"

namespace f2obo::server {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path, const char* flag) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(flag, ": cannot read ", path));
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> Credentials(const ServerOptions& o) {
  if (o.tls_cert_file.empty() != o.tls_key_file.empty()) {
    return absl::InvalidArgumentError("--tls_cert_file and --tls_key_file go together");
  }
  if (o.tls_cert_file.empty()) {
    if (!o.tls_client_ca_file.empty()) {
      return absl::InvalidArgumentError("--tls_client_ca_file needs --tls_cert_file");
    }
    return grpc::InsecureServerCredentials();
  }
  absl::StatusOr<std::string> cert = ReadFile(o.tls_cert_file, "--tls_cert_file");
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = ReadFile(o.tls_key_file, "--tls_key_file");
  if (!key.ok()) return key.status();
  grpc::SslServerCredentialsOptions ssl(GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE);
  ssl.pem_key_cert_pairs.push_back({*key, *cert});
  if (!o.tls_client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = ReadFile(o.tls_client_ca_file, "--tls_client_ca_file");
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *ca;
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

}  // namespace

absl::Status CheckServerFlags(const ServerOptions& options) {
#define F2OBO_SERVER_FLAG(type, name, def, rule, help) \
  if (absl::Status s = rule.Check("--" #name, options.name); !s.ok()) return s;
#define F2OBO_LIMIT_FLAG(type, name, def, rule, help) \
  if (absl::Status s = rule.Check("--" #name, options.limits.name); !s.ok()) return s;
#include "server/server_flags.def"
#undef F2OBO_SERVER_FLAG
#undef F2OBO_LIMIT_FLAG
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& options) {
  if (absl::Status flags = CheckServerFlags(options); !flags.ok()) return flags;
  if (options.min_exact_probability > options.exact_sample_probability) {
    return absl::InvalidArgumentError(
        "--min_exact_probability: must not exceed --exact_sample_probability");
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials = Credentials(options);
  if (!credentials.ok()) return credentials.status();
  std::unique_ptr<Server> s(new Server());
  s->options_ = options;
  if (!options.token_file.empty()) {
    absl::StatusOr<std::unique_ptr<TokenAuthenticator>> auth =
        TokenAuthenticator::FromFile(options.token_file);
    if (!auth.ok()) return auth.status();
    s->auth_ = *std::move(auth);
  }
  {
    absl::StatusOr<std::unique_ptr<SessionStore>> store =
        OpenSessionStore({options.store, options.data_dir,
                          options.durability == "none" ? Durability::kNone : Durability::kSync,
                          options.max_store_bytes});
    if (!store.ok()) return store.status();
    s->store_ = *std::move(store);
  }
  s->service_metrics_ = std::make_unique<ServiceMetrics>(&s->registry_, options.per_session_labels);
  ServiceMetrics* sm = s->service_metrics_.get();
  // An undecodable request: INVALID_ARGUMENT with libprotobuf's reason, not
  // a log line per request; counted (reset in Shutdown).
  v1::CaptureDecodeLogs();
  v1::SetDecodeFailureObserver([sm] { sm->OnUndecodableRequest(); });
  // The configured maximum, for alerts on f2obo_sessions nearing it.
  if (auto limit = s->registry_.AddGauge("f2obo_sessions_limit",
                                         "Maximum number of sessions (--max_sessions).", {});
      limit.ok()) {
    (*limit)->WithLabels({}).Set(options.limits.max_sessions);
  }
  s->pipeline_ = std::make_unique<MetricsPipeline>(
      options.metrics_threads, options.max_pending_metrics,
      [sm](const v1::StepMetrics& m) { sm->OnStepMetrics(m); },
      ExactSampling{options.min_exact_probability, options.exact_sample_probability},
      static_cast<size_t>(options.metrics_buffer_bytes));
  Limits limits = options.limits;
  limits.max_message_bytes = options.max_message_bytes;
  s->sessions_ = std::make_unique<SessionManager>(limits, s->pipeline_.get(), s->store_.get());
  s->store_metrics_ =
      std::make_unique<StoreMetrics>(&s->registry_, s->sessions_.get(), s->store_.get());
  std::vector<StoredGroup> stored_groups;
  absl::StatusOr<std::vector<std::string>> problems = s->sessions_->Recover(&stored_groups);
  if (!problems.ok()) {
    return absl::Status(problems.status().code(),
                        absl::StrCat("recovering sessions: ", problems.status().message()));
  }
  s->recovery_problems_ = *std::move(problems);
  // The sessions held (a shared store's are loaded on demand: none yet;
  // its List() names every stored one, which this server does not hold).
  if (!s->store_ || !s->store_->shared()) {
    for (const v1::SessionInfo& info : s->sessions_->List()) {
      sm->OnSessionCreated(info.session_id());
    }
  }
  s->groups_ = std::make_unique<GroupManager>(s->sessions_.get(), s->store_.get());
  for (std::string& problem : s->groups_->Restore(stored_groups)) {
    s->recovery_problems_.push_back(std::move(problem));
  }
  s->service_ =
      std::make_unique<F2oboService>(s->sessions_.get(), s->groups_.get(), sm, s->auth_.get());
  s->service_->set_replica_name(options.replica_name);
  s->service_->set_shared_store(!options.store.empty());
  s->service_->set_max_message_bytes(options.max_message_bytes);

  // The health service is ours, on the sync API (server/health_service.h
  // says why gRPC's default one is not used).
  s->health_ = std::make_unique<HealthService>();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.listen, *credentials, &s->grpc_port_);
  builder.SetMaxReceiveMessageSize(options.max_message_bytes);
  builder.SetMaxSendMessageSize(options.max_message_bytes);
  // Sync-server threads poll their queues this often; it bounds how long
  // Shutdown() waits for idle threads to notice.
  builder.SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, 100);
  builder.RegisterService(s->service_.get());
  builder.RegisterService(s->health_.get());
  s->grpc_ = builder.BuildAndStart();
  if (s->grpc_ == nullptr || s->grpc_port_ == 0) {
    return absl::UnavailableError(absl::StrCat("--listen: cannot bind ", options.listen));
  }
  if (!options.metrics_listen.empty()) {
    absl::StatusOr<std::unique_ptr<metrics::HttpExporter>> exporter =
        metrics::HttpExporter::Start(options.metrics_listen, options.http_threads);
    if (!exporter.ok()) {
      s->Shutdown(0);
      return absl::Status(exporter.status().code(),
                          absl::StrCat("--metrics_listen: ", exporter.status().message()));
    }
    s->exporter_ = *std::move(exporter);
    s->process_memory_ =
        std::make_unique<ProcessMemoryGauges>(&s->registry_, &s->pipeline_->buffers());
    const metrics::HttpExporter::Handler render = metrics::MetricsHandler(&s->registry_);
    s->exporter_->Handle(
        "/metrics", [render, memory = s->process_memory_.get(), store = s->store_metrics_.get()](
                        const metrics::HttpExporter::Request& request) {
          memory->Refresh();
          store->Refresh();
          return render(request);
        });
    if (options.dashboard) {  // the live page at "/" and its JSON API under "/api/"
      dashboard::RegisterDashboard(s->exporter_.get(), s->sessions_.get(), s->groups_.get());
    }
  }
  return s;
}

void Server::Shutdown(double grace_seconds) {
  if (stopped_) return;
  stopped_ = true;
  if (grpc_ != nullptr) {
    health_->Shutdown();        // NOT_SERVING; health watches end
    service_->BeginShutdown();  // watches end, streams stop taking messages
    // Let in-flight rounds finish until shortly before the grace period
    // ends, then stop them (core/round_control.h: a stopped round changes
    // nothing and returns within one inner iteration), so that the server
    // is down within the grace however long a round was going to take.
    // gRPC would otherwise also wait the whole deadline for idle client
    // connections to go away, so the deadline given to it is short once
    // nothing is running; handlers still running are not killed by it
    // (sync API), only their calls are cancelled.
    const auto start = std::chrono::steady_clock::now();
    const auto grace = std::chrono::milliseconds(static_cast<int64_t>(grace_seconds * 1000));
    const auto margin =
        std::min<std::chrono::milliseconds>(grace / 4, std::chrono::milliseconds(500));
    if (!service_->WaitIdle(start + grace - margin)) {
      sessions_->StopRounds();
      service_->WaitIdle(start + grace);
    }
    grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
    grpc_->Wait();
  }
  v1::SetDecodeFailureObserver(nullptr);
  if (pipeline_ != nullptr) pipeline_->Stop();
  exporter_.reset();
  store_.reset();  // drains pending writes
}

Server::~Server() { Shutdown(0); }

}  // namespace f2obo::server
