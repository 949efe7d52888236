#include "tests/server/dashboard/webdriver.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <google/protobuf/util/json_util.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <regex>
#include <thread>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace f2obo::testing {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;
using Clock = std::chrono::steady_clock;

// WebDriver commands such as a navigation wait for the page to load.
constexpr double kCommandTimeoutSeconds = 120;

int MillisLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

struct HttpReply {
  int status = 0;
  std::string body;
};

// One request on its own connection to 127.0.0.1:port.
absl::StatusOr<HttpReply> Http(int port, const std::string& method, const std::string& path,
                               const std::string& body) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return absl::UnavailableError(absl::StrCat("cannot connect to chromedriver on port ", port));
  }
  const std::string request = absl::StrCat(
      method, " ", path, " HTTP/1.1\r\nHost: 127.0.0.1:", port,
      "\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ", body.size(),
      "\r\nConnection: close\r\n\r\n", body);
  size_t sent = 0;
  while (sent < request.size()) {
    // MSG_NOSIGNAL: a driver that went away is an error here, not SIGPIPE.
    const ssize_t n = send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      close(fd);
      return absl::UnavailableError("writing to chromedriver failed");
    }
    sent += static_cast<size_t>(n);
  }
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int>(kCommandTimeoutSeconds * 1000));
  // chromedriver keeps the connection open after its reply despite
  // "Connection: close", so the body ends at its Content-Length.
  std::string raw;
  size_t head_end = std::string::npos;
  size_t length = 0;
  while (head_end == std::string::npos || raw.size() < head_end + 4 + length) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, MillisLeft(deadline)) <= 0) {
      close(fd);
      return absl::DeadlineExceededError(absl::StrCat(method, " ", path, ": no reply in time"));
    }
    char buf[65536];
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) break;
    raw.append(buf, static_cast<size_t>(n));
    if (head_end == std::string::npos && (head_end = raw.find("\r\n\r\n")) != std::string::npos) {
      static const std::regex kLength(R"((^|\r\n)content-length:\s*(\d+))", std::regex::icase);
      std::smatch m;
      const std::string head = raw.substr(0, head_end);
      if (std::regex_search(head, m, kLength)) length = std::stoul(m[2]);
    }
  }
  close(fd);
  HttpReply reply;
  if (head_end == std::string::npos || raw.size() < 12 ||
      !absl::SimpleAtoi(raw.substr(9, 3), &reply.status)) {
    return absl::InternalError(absl::StrCat(method, " ", path, ": malformed HTTP reply"));
  }
  reply.body = raw.substr(head_end + 4);
  return reply;
}

absl::StatusOr<Value> ValueOf(const std::string& method, const std::string& path,
                              const HttpReply& reply) {
  Struct parsed;
  if (!google::protobuf::util::JsonStringToMessage(reply.body, &parsed).ok()) {
    return absl::InternalError(absl::StrCat(
        method, " ", path, ": reply is not a JSON object: ", reply.body.substr(0, 300)));
  }
  Value value = parsed.fields().count("value") ? parsed.fields().at("value") : Value();
  if (reply.status != 200) {
    std::string message = reply.body.substr(0, 500);
    if (value.has_struct_value() && value.struct_value().fields().count("message")) {
      message = value.struct_value().fields().at("message").string_value();
    }
    return absl::InternalError(
        absl::StrCat(method, " ", path, ": HTTP ", reply.status, ": ", message));
  }
  return value;
}

std::string ToJson(const Struct& s) {
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(s, &out);
  return out;
}

Value StringValue(const std::string& s) {
  Value v;
  v.set_string_value(s);
  return v;
}

}  // namespace

ChromeDriver::ChromeDriver(const std::string& chromedriver_path, double timeout_seconds) {
  // Chromium leaves directories in $TMPDIR; give it one of its own.
  const char* base = std::getenv("TEST_TMPDIR");
  std::string templ = std::string(base != nullptr ? base : "/tmp") + "/f2obo-chromedriver-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    status_ = absl::InternalError("mkdtemp() failed");
    return;
  }
  tmp_dir_ = templ;
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) {
    status_ = absl::InternalError("pipe() failed");
    return;
  }
  pid_ = fork();
  if (pid_ == 0) {
    prctl(PR_SET_PDEATHSIG, SIGTERM);  // never outlive a crashed test
    setenv("TMPDIR", tmp_dir_.c_str(), 1);
    dup2(out[1], STDOUT_FILENO);
    execl(chromedriver_path.c_str(), chromedriver_path.c_str(), "--port=0",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  // "ChromeDriver was started successfully on port 34471."
  static const std::regex kStarted(R"(started successfully on port (\d+))");
  const Clock::time_point deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int>(timeout_seconds * 1000));
  std::string text;
  std::smatch m;
  while (!std::regex_search(text, m, kStarted)) {
    pollfd p{out[0], POLLIN, 0};
    char buf[512];
    ssize_t n = 0;
    if (poll(&p, 1, MillisLeft(deadline)) <= 0 || (n = read(out[0], buf, sizeof(buf))) <= 0) {
      status_ = absl::UnavailableError(
          absl::StrCat(chromedriver_path,
                       " did not announce its port (installed? scripts/deps.sh --test "
                       "installs chromium-driver); it printed: ",
                       text));
      close(out[0]);
      return;
    }
    text.append(buf, static_cast<size_t>(n));
  }
  port_ = std::stoi(m[1]);
  // Kept open (not read): closing it would kill chromedriver with SIGPIPE
  // should it print anything more.
  stdout_fd_ = out[0];
}

ChromeDriver::~ChromeDriver() {
  if (pid_ > 0) {
    // A signal would leave its browsers running (orphaned); /shutdown quits
    // them all, also one whose session reply never arrived, then exits.
    if (port_ > 0) (void)Http(port_, "GET", "/shutdown", "");
    const Clock::time_point deadline = Clock::now() + std::chrono::seconds(10);
    while (waitpid(pid_, nullptr, WNOHANG) == 0) {
      if (Clock::now() > deadline) {
        kill(pid_, SIGTERM);
        waitpid(pid_, nullptr, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  if (stdout_fd_ >= 0) close(stdout_fd_);
  std::error_code ignored;
  if (!tmp_dir_.empty()) std::filesystem::remove_all(tmp_dir_, ignored);
}

absl::StatusOr<BrowserSession> BrowserSession::Start(int driver_port,
                                                     const std::string& chromium_path,
                                                     const std::vector<std::string>& args) {
  Struct request;
  Struct* always = (*(*request.mutable_fields())["capabilities"]
                         .mutable_struct_value()
                         ->mutable_fields())["alwaysMatch"]
                       .mutable_struct_value();
  (*always->mutable_fields())["browserName"] = StringValue("chrome");
  Struct* chrome = (*always->mutable_fields())["goog:chromeOptions"].mutable_struct_value();
  (*chrome->mutable_fields())["binary"] = StringValue(chromium_path);
  google::protobuf::ListValue* list = (*chrome->mutable_fields())["args"].mutable_list_value();
  for (const std::string& a : args) *list->add_values() = StringValue(a);
  absl::StatusOr<HttpReply> reply = Http(driver_port, "POST", "/session", ToJson(request));
  if (!reply.ok()) return reply.status();
  absl::StatusOr<Value> value = ValueOf("POST", "/session", *reply);
  if (!value.ok()) return value.status();
  const auto& fields = value->struct_value().fields();
  if (!fields.count("sessionId") || fields.at("sessionId").string_value().empty()) {
    return absl::InternalError("POST /session: no sessionId in " + reply->body.substr(0, 300));
  }
  return BrowserSession(driver_port, fields.at("sessionId").string_value());
}

BrowserSession::BrowserSession(BrowserSession&& other) noexcept
    : port_(other.port_), id_(std::exchange(other.id_, "")) {}

BrowserSession::~BrowserSession() {
  if (!id_.empty()) (void)Http(port_, "DELETE", "/session/" + id_, "");
}

absl::StatusOr<Value> BrowserSession::Command(const std::string& method, const std::string& path,
                                              const Struct& body) {
  const std::string full = "/session/" + id_ + path;
  absl::StatusOr<HttpReply> reply = Http(port_, method, full, method == "GET" ? "" : ToJson(body));
  if (!reply.ok()) return reply.status();
  return ValueOf(method, full, *reply);
}

absl::Status BrowserSession::Navigate(const std::string& url) {
  Struct body;
  (*body.mutable_fields())["url"] = StringValue(url);
  return Command("POST", "/url", body).status();
}

absl::StatusOr<Value> BrowserSession::Execute(const std::string& script) {
  Struct body;
  (*body.mutable_fields())["script"] = StringValue(script);
  (*body.mutable_fields())["args"].mutable_list_value();
  return Command("POST", "/execute/sync", body);
}

absl::StatusOr<std::string> BrowserSession::Screenshot() {
  absl::StatusOr<Value> value = Command("GET", "/screenshot", Struct());
  if (!value.ok()) return value.status();
  std::string png;
  if (!absl::Base64Unescape(value->string_value(), &png)) {
    return absl::InternalError("GET /screenshot: the value is not base64");
  }
  return png;
}

}  // namespace f2obo::testing
