// A minimal streaming JSON writer (no dependency): the presentation layer
// writes each class's JSON with it, the dashboard's API its pages.
//
//   JsonWriter w;
//   w.BeginObject().Key("t").Int(3).Key("x").BeginArray().Number(0.5).EndArray()
//    .EndObject();
//   std::string text = w.str();  // {"t":3,"x":[0.5]}
//
// Commas are placed automatically.  Non-finite numbers become null (JSON has
// no NaN or Infinity).  Strings are escaped per RFC 8259; bytes >= 0x80 are
// passed through (the caller's strings are UTF-8).  Nesting is the caller's
// responsibility: Begin/End must pair up and Key must precede every object
// member.
//
// Thread-safety: none; one writer per response.
#ifndef F2OBO_SERVER_PRESENTATION_JSON_WRITER_H_
#define F2OBO_SERVER_PRESENTATION_JSON_WRITER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace f2obo::server::presentation {

class JsonWriter {
 public:
  JsonWriter& BeginObject();
  JsonWriter& EndObject();
  JsonWriter& BeginArray();
  JsonWriter& EndArray();
  JsonWriter& Key(absl::string_view key);
  JsonWriter& String(absl::string_view value);
  JsonWriter& Number(double value);  // shortest round-trip form; null if not finite
  JsonWriter& Int(int64_t value);
  JsonWriter& Bool(bool value);
  JsonWriter& Null();

  const std::string& str() const { return out_; }

 private:
  void BeforeValue();  // a comma unless first in its container or after a key
  void AppendEscaped(absl::string_view s);

  std::string out_;
  std::vector<bool> first_;  // per open container: nothing written in it yet
  bool after_key_ = false;
};

}  // namespace f2obo::server::presentation

#endif  // F2OBO_SERVER_PRESENTATION_JSON_WRITER_H_
