// The session store tests' shared fixture: three sessions written through
// the store, reloading, raw SQL on the file and byte flips (a bad sector or
// a stray write), and a test fixture owning a temporary directory.
#ifndef F2OBO_TESTS_SERVER_STORE_STORE_FIXTURE_H_
#define F2OBO_TESTS_SERVER_STORE_STORE_FIXTURE_H_

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "server/store/sqlite_session_store.h"
#include "tests/server/server_process.h"

namespace f2obo::server {

// A state whose bytes depend on (t, seed), `n` numbers long.
std::string StateBytes(int64_t t, double seed, int n = 64);
v1::SessionSpec SpecFor(const std::string& id);
v1::StepReply ReplyFor(const std::string& id, int64_t t);

// What a session should load as.
struct Expected {
  std::string spec;
  std::string state;
  std::vector<std::string> replies;  // serialized, oldest first
};

inline constexpr int kSteps = 6, kKeep = 3;

// Three sessions, a, b and c, each created then stepped kSteps times, and
// a group of all three.
std::map<std::string, Expected> WriteThree(const std::string& dir,
                                           Durability durability = Durability::kSync);
LoadedStore Reload(const std::string& dir);
// Every loaded session is bit-exact what was written; returns their ids.
std::vector<std::string> CheckLoadedExactly(const LoadedStore& loaded,
                                            const std::map<std::string, Expected>& expected);
std::string DbPath(const std::string& dir);
void Sql(const std::string& db_path, const std::string& sql);
// Inverts the bits of byte `offset` of `column` in the row `where` selects,
// with raw SQLite (as a bad sector or a stray write would).
void FlipByte(const std::string& db_path, const std::string& table, const std::string& column,
              const std::string& where, size_t offset);

class StoreTest : public ::testing::Test {
 protected:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  const std::string dir_ = testing::MakeTempDir();
};

}  // namespace f2obo::server

#endif  // F2OBO_TESTS_SERVER_STORE_STORE_FIXTURE_H_
