#include "f2obo/v1/options_convert.h"

#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"

namespace f2obo {
namespace {

using google::protobuf::FieldDescriptor;

const FieldDescriptor* FieldOf(absl::string_view name) {
  return v1::AlgorithmOptions::descriptor()->FindFieldByName(std::string(name));
}

}  // namespace

absl::Status ApplyOptions(const v1::AlgorithmOptions& p, AlgorithmOptions* o) {
  const google::protobuf::Reflection* r = p.GetReflection();
  for (const OptionInfo& info : OptionTable()) {
    const FieldDescriptor* f = FieldOf(info.name);
    if (f == nullptr || !r->HasField(p, f)) continue;
    absl::Status s;
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_DOUBLE:
        s = SetOptionNumber(info, r->GetDouble(p, f), o);
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        s = SetOptionNumber(info, r->GetInt32(p, f), o);
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        s = SetOptionNumber(info, r->GetBool(p, f) ? 1.0 : 0.0, o);
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        s = SetOptionChoice(info, r->GetString(p, f), o);
        break;
      default:
        s = absl::InternalError(absl::StrCat("options.", info.name, ": unsupported field type"));
    }
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

OptionSet SetOptions(const v1::AlgorithmOptions& p) {
  const google::protobuf::Reflection* r = p.GetReflection();
  OptionSet set;
  for (const OptionInfo& info : OptionTable()) {
    const FieldDescriptor* f = FieldOf(info.name);
    if (f != nullptr && r->HasField(p, f)) set.Add(info.id);
  }
  return set;
}

void ClearOptions(const OptionSet& which, v1::AlgorithmOptions* p) {
  const google::protobuf::Reflection* r = p->GetReflection();
  for (const OptionInfo& info : OptionTable()) {
    const FieldDescriptor* f = FieldOf(info.name);
    if (f != nullptr && which.Has(info.id)) r->ClearField(p, f);
  }
}

void FillOptions(const AlgorithmOptions& o, const OptionSet& which, v1::AlgorithmOptions* p) {
  const google::protobuf::Reflection* r = p->GetReflection();
  for (const OptionInfo& info : OptionTable()) {
    const FieldDescriptor* f = FieldOf(info.name);
    if (f == nullptr || !which.Has(info.id)) continue;
    const double v = info.get(o);
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_DOUBLE:
        if (!std::isinf(v)) r->SetDouble(p, f, v);
        break;
      case FieldDescriptor::CPPTYPE_INT32:
        r->SetInt32(p, f, static_cast<int32_t>(v));
        break;
      case FieldDescriptor::CPPTYPE_BOOL:
        r->SetBool(p, f, v != 0.0);
        break;
      case FieldDescriptor::CPPTYPE_STRING:
        r->SetString(p, f, OptionValueText(info, o));
        break;
      default:
        break;
    }
  }
}

absl::Status SetOptionFromText(absl::string_view name, absl::string_view text,
                               v1::AlgorithmOptions* p) {
  const FieldDescriptor* f = FieldOf(name);
  if (f == nullptr || f->is_repeated()) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown option '", name,
                     "' (an AlgorithmOptions field; `f2obo-cli algorithms` "
                     "lists them)"));
  }
  const std::string value(absl::StripAsciiWhitespace(text));
  const google::protobuf::Reflection* r = p->GetReflection();
  bool ok = true;
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      double v;
      ok = absl::SimpleAtod(value, &v);
      if (ok) r->SetDouble(p, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_INT32: {
      int32_t v;
      ok = absl::SimpleAtoi(value, &v);
      if (ok) r->SetInt32(p, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      bool v;
      ok = absl::SimpleAtob(value, &v);
      if (ok) r->SetBool(p, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_STRING:
      r->SetString(p, f, value);
      break;
    default:
      ok = false;
  }
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("option '", name, "': cannot parse '", value, "'"));
  }
  return absl::OkStatus();
}

}  // namespace f2obo
