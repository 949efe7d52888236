#include "server/request_bounds.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"

namespace f2obo::server {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

absl::Status TooLong(const std::string& field, size_t bytes) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", bytes, " bytes, beyond the bound of ",
                                                 kMaxStringBytes,
                                                 " bytes for identifiers and names"));
}

absl::Status Check(const Message& m, const std::string& prefix) {
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);  // set fields only: numbers and bytes are skipped cheaply
  std::string scratch;
  for (const FieldDescriptor* f : fields) {
    const bool string = f->type() == FieldDescriptor::TYPE_STRING;
    const bool message = f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE;
    if (!string && !message) continue;
    const std::string name = prefix + f->name();
    if (!f->is_repeated()) {
      if (string) {
        const std::string& v = r->GetStringReference(m, f, &scratch);
        if (v.size() > kMaxStringBytes) return TooLong(name, v.size());
      } else if (absl::Status s = Check(r->GetMessage(m, f), name + "."); !s.ok()) {
        return s;
      }
      continue;
    }
    const int n = r->FieldSize(m, f);
    for (int i = 0; i < n; ++i) {
      const std::string item = absl::StrCat(name, "[", i, "]");
      if (string) {
        const std::string& v = r->GetRepeatedStringReference(m, f, i, &scratch);
        if (v.size() > kMaxStringBytes) return TooLong(item, v.size());
      } else if (absl::Status s = Check(r->GetRepeatedMessage(m, f, i), item + "."); !s.ok()) {
        return s;
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckStringBounds(const Message& request) { return Check(request, ""); }

}  // namespace f2obo::server
