// Just enough of the W3C WebDriver protocol to drive headless Chromium
// from a test: chromedriver as a child process on loopback, one browser
// session, navigate, run a script, take a screenshot.  JSON goes through
// protobuf's Struct (Debian's libprotobuf has the parser), so no other
// dependency is needed.
#ifndef F2OBO_TESTS_SERVER_DASHBOARD_WEBDRIVER_H_
#define F2OBO_TESTS_SERVER_DASHBOARD_WEBDRIVER_H_

#include <google/protobuf/struct.pb.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace f2obo::testing {

// chromedriver --port=0, which announces the port it picked on stdout.
class ChromeDriver {
 public:
  // Waits up to `timeout_seconds` for the announcement; see status().
  ChromeDriver(const std::string& chromedriver_path, double timeout_seconds);
  ~ChromeDriver();  // quits every browser it started, then waits for it to exit
  ChromeDriver(const ChromeDriver&) = delete;
  ChromeDriver& operator=(const ChromeDriver&) = delete;

  const absl::Status& status() const { return status_; }
  int port() const { return port_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  int stdout_fd_ = -1;
  std::string tmp_dir_;  // its (and its browsers') TMPDIR, removed at the end
  absl::Status status_;
};

class BrowserSession {
 public:
  // A new headless Chromium (`chromium_path`) with `args` added to the
  // launch flags, driven through the chromedriver on `driver_port`.
  static absl::StatusOr<BrowserSession> Start(int driver_port, const std::string& chromium_path,
                                              const std::vector<std::string>& args);
  BrowserSession(BrowserSession&& other) noexcept;
  BrowserSession& operator=(BrowserSession&&) = delete;
  ~BrowserSession();  // closes the browser

  absl::Status Navigate(const std::string& url);
  // Runs `script` (a function body; `return` gives the result) in the page.
  absl::StatusOr<google::protobuf::Value> Execute(const std::string& script);
  // The visible viewport as PNG bytes.
  absl::StatusOr<std::string> Screenshot();

 private:
  BrowserSession(int port, std::string id) : port_(port), id_(std::move(id)) {}
  // The "value" of the reply to `method` on /session/<id><path>.
  absl::StatusOr<google::protobuf::Value> Command(const std::string& method,
                                                  const std::string& path,
                                                  const google::protobuf::Struct& body);

  int port_ = 0;
  std::string id_;  // "" once moved from or closed
};

}  // namespace f2obo::testing

#endif  // F2OBO_TESTS_SERVER_DASHBOARD_WEBDRIVER_H_
