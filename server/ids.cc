#include "server/ids.h"

namespace f2obo::server {
namespace {

// ASCII only: std::isalnum would follow the locale.
bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool Matches(std::string_view s, size_t max_size, bool dot) {
  if (s.empty() || s.size() > max_size) return false;
  for (const char c : s) {
    if (!(IsAsciiAlnum(c) || c == '_' || c == '-' || (dot && c == '.'))) return false;
  }
  return true;
}

}  // namespace

bool IsSessionId(std::string_view id) { return Matches(id, 64, /*dot=*/true); }

bool IsGroupName(std::string_view name) { return Matches(name, 32, /*dot=*/false); }

}  // namespace f2obo::server
